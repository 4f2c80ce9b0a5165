"""sgcc.lab.reward and sgcc.lab.export on the popcount example: the real engine (gcc, assembler,
screen, sandboxed tests, paired timing) judges model-style answers. No timing assertion:
only that a correct answer took the timed path and got a positive finite speedup."""

from __future__ import annotations

import json
import math
import subprocess

import pytest

from sgcc import proc
from sgcc.asm.units import AsmFile
from sgcc.lab import reward
from sgcc.lab.export import export, rows_for
from tests.conftest import EXAMPLES

POPCOUNT = EXAMPLES / "programs" / "popcount"
FAST = {"timing_rounds": 3}
TRUTH = json.dumps({"problem": str(POPCOUNT), "name": "popcount", "function": "count_bits", "flags": ["-O3"]})


def _answer(asm: str) -> str:
    return f"<assembly>\n{asm}</assembly>\n"


def _score(solution: str, kind: str, **extra) -> float:
    return reward.compute_score("sgcc", solution, TRUTH, {"reward": kind, **FAST, **extra})


@pytest.fixture(scope="module")
def prob():
    return reward.problem(POPCOUNT, "count_bits", ["-O3"], timing_rounds=3, test_timeout=10.0, isa="flags")


def _fraction_by_running(tmp_path, unit_text: str) -> tuple[int, int]:
    """Tests passed by the program with count_bits replaced, built and run here directly."""
    base = proc.run(["gcc", "-O3", "-S", "-o", "-", str(POPCOUNT / "popcount.c")], check=True).stdout.decode()
    s, exe = tmp_path / "p.s", tmp_path / "p"
    s.write_text(AsmFile.parse(base).join({"count_bits": unit_text}))
    proc.run(["gcc", str(s), "-o", str(exe)], check=True)
    inputs = sorted((POPCOUNT / "tests").glob("*.in"))
    passed = 0
    for t in inputs:
        r = proc.run([str(exe)], stdin=t.read_bytes(), timeout=60)
        passed += r.returncode == 0 and r.stdout == t.with_suffix(".out").read_bytes()
    return passed, len(inputs)


def test_gccs_own_unit_passes_and_is_timed(prob):
    v = prob.evaluate(_answer(prob.unit_text))
    assert v.stage == "passed" and v.tests_passed == v.tests_total == 5
    assert v.speedup is not None and math.isfinite(v.speedup) and v.speedup > 0
    assert v.ci_low is not None and v.ci_low <= v.speedup <= v.ci_high
    assert reward.speedup_only(v) == v.speedup
    assert reward.correctness_guided(v, alpha=5) == pytest.approx(1 + 5 * v.speedup)


def test_replay_candidate_passes_through_compute_score():
    swar = (POPCOUNT / "candidates" / "count_bits.s").read_text()
    r = reward.compute_score("sgcc", _answer(swar), TRUTH, {"reward": "speedup_only", "return_dict": True, **FAST})
    assert r["passed"] == 1.0 and r["pass_fraction"] == 1.0 and r["compiled"] == 1.0
    assert math.isfinite(r["score"]) and r["score"] > 0 and r["score"] == r["speedup"]
    cg = _score(_answer(swar), "correctness_guided", alpha=2.0)
    assert cg > 1.0  # 1 + alpha * speedup with a positive speedup


def test_wrong_output_gets_the_fraction_of_tests_passed(tmp_path, prob):
    wrong = (POPCOUNT / "bad" / "wrong_output.s").read_text()
    passed, total = _fraction_by_running(tmp_path, wrong)
    assert passed < total
    assert _score(_answer(wrong), "correctness_guided") == pytest.approx(passed / total)
    assert _score(_answer(wrong), "speedup_only") == 0.0


def test_partly_wrong_answer_gets_partial_credit(tmp_path, prob):
    # gcc's own code, but it never counts more than 1000 numbers: right on the small tests.
    capped = prob.unit_text.replace("\t.cfi_startproc\n", "\t.cfi_startproc\n\tcmpl\t$1000, %esi\n\tjle\t.Lcap\n"
                                    "\tmovl\t$1000, %esi\n.Lcap:\n", 1)
    assert capped != prob.unit_text
    passed, total = _fraction_by_running(tmp_path, capped)
    assert 0 < passed < total
    v = prob.evaluate(_answer(capped))
    assert (v.stage, v.tests_passed, v.tests_total) == ("test", passed, total)
    assert _score(_answer(capped), "correctness_guided") == pytest.approx(passed / total)
    assert _score(_answer(capped), "speedup_only") == 0.0


@pytest.mark.parametrize("text", [
    "I think the code is already optimal.",  # no assembly at all
    _answer("count_bits:\n\tfrobnicate %eax, %ebx\n\tret\n"),  # does not assemble
    "```c\nint x;\n```",  # the wrong language
])
def test_garbage_is_minus_one_and_zero(text):
    assert _score(text, "correctness_guided") == -1.0
    assert _score(text, "speedup_only") == 0.0


def test_hostile_answer_refused_by_the_screen(prob):
    hostile = _answer('\t.text\n\t.globl\tcount_bits\ncount_bits:\n\t.incbin "/etc/passwd"\n\tret\n')
    v = prob.evaluate(hostile)
    assert v.stage == "screen" and ".incbin" in v.reason
    assert _score(hostile, "correctness_guided") == -1.0
    assert _score(hostile, "speedup_only") == 0.0


def test_settings_from_environment_and_bad_ground_truth(monkeypatch):
    monkeypatch.setenv("SGCC_REWARD", "correctness_guided")
    assert reward.compute_score("sgcc", "no assembly here", TRUTH, FAST) == -1.0
    monkeypatch.setenv("SGCC_REWARD", "no_such_reward")
    with pytest.raises(reward.SgccError):
        reward.compute_score("sgcc", "x", TRUTH, FAST)
    monkeypatch.delenv("SGCC_REWARD")
    with pytest.raises(reward.SgccError):
        reward.compute_score("sgcc", "x", "not json", FAST)
    monkeypatch.setenv("SGCC_DATASET_ROOT", str(POPCOUNT.parent))
    gt = reward.parse_ground_truth({"problem": "/elsewhere/popcount", "name": "popcount", "function": "count_bits"})
    assert gt["problem"] == str(POPCOUNT.parent / "popcount")


@pytest.mark.slow
def test_export_rows_round_trip_into_compute_score(tmp_path):
    rows = rows_for(POPCOUNT)
    by_fn = {r["extra_info"]["function"]: r for r in rows}
    # the tests execute both functions; callgrind ranks the bit loop first
    assert set(by_fn) == {"count_bits", "main"} and rows[0]["extra_info"]["function"] == "count_bits"
    row = by_fn["count_bits"]
    assert row["reward_model"]["style"] == "rule" and row["ability"] and row["data_source"]
    (message,) = row["prompt"]
    source = (POPCOUNT / "popcount.c").read_text().strip()
    assert message["role"] == "user" and source in message["content"]
    assert reward.problem(POPCOUNT, "count_bits", ["-O3"], timing_rounds=3, test_timeout=10.0,
                          isa="flags").unit_text.strip() in message["content"]
    assert message["content"].rstrip().endswith("Optimized Assembly Code:")
    truth = row["reward_model"]["ground_truth"]
    swar = (POPCOUNT / "candidates" / "count_bits.s").read_text()
    assert reward.compute_score(row["data_source"], _answer(swar), truth, {**row["extra_info"], **FAST}) > 0
    assert reward.compute_score(row["data_source"], "nothing", truth,
                                {**row["extra_info"], "reward": "correctness_guided", **FAST}) == -1.0


def test_dataset_export_cli(tmp_path, sgcc_exe):
    # a dataset of two problems; one is broken (its tests do not match its output) and is skipped
    data = tmp_path / "data"
    for name in ("popcount", "broken"):
        (data / name / "tests").mkdir(parents=True)
    (data / "popcount" / "popcount.c").write_text((POPCOUNT / "popcount.c").read_text())
    for t in ("t1", "t2"):
        for ext in ("in", "out"):
            (data / "popcount" / "tests" / f"{t}.{ext}").write_bytes((POPCOUNT / "tests" / f"{t}.{ext}").read_bytes())
    (data / "broken" / "broken.c").write_text('#include <stdio.h>\nint main(void){puts("a");return 0;}\n')
    (data / "broken" / "tests" / "t.in").write_text("")
    (data / "broken" / "tests" / "t.out").write_text("b\n")
    out = tmp_path / "rows.jsonl"
    r = subprocess.run([sgcc_exe, "dataset", "export", str(data), "--out", str(out), "--functions", "all", "-q"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [json.loads(x["reward_model"]["ground_truth"])["function"] for x in rows] == ["count_bits", "main"]
    assert [x["extra_info"]["index"] for x in rows] == [0, 1]
    assert "skipped broken" in r.stderr and "wrote 2 row(s) from 1 problem(s)" in r.stdout
    truth = json.loads(rows[0]["reward_model"]["ground_truth"])
    assert truth["problem"] == str((data / "popcount").resolve()) and truth["flags"] == ["-O3"]


def test_export_library_counts(tmp_path):
    out = tmp_path / "x.jsonl"
    result = export(POPCOUNT, out, functions="all")
    assert result["rows"] == 2 and result["problems"] == 1 and not result["skipped"]
    assert len(out.read_text().splitlines()) == 2
