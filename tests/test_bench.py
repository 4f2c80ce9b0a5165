"""`sgcc bench DATASET`, run as a real subprocess on a small dataset with known outcomes.

The dataset (built in tmp from examples/programs, small tests only, so that the run is
short): ``popcount`` and ``bitrev`` with their good replay candidates; ``wrong`` (bitrev with
a candidate that assembles and links but crashes: compiled, not passed) and ``noasm`` (bitrev
with a candidate that does not assemble: neither). So: compiled 3 of 4, passed 2 of 4.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.lab import bench as benchmod
from sgcc.lab import studies

pytestmark = pytest.mark.slow  # a real bench over a dataset

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "examples" / "programs"


def _copy_problem(src_name: str, dest: Path, name: str, candidates: dict[str, str] | None = None) -> None:
    src = PROGRAMS / src_name
    d = dest / name
    (d / "tests").mkdir(parents=True)
    shutil.copyfile(src / f"{src_name}.c", d / f"{name}.c")
    for t in sorted((src / "tests").iterdir()):
        if not t.name.startswith("large"):  # small inputs: a short test
            shutil.copyfile(t, d / "tests" / t.name)
    if candidates is None:
        shutil.copytree(src / "candidates", d / "candidates")
    else:
        for rel, text in candidates.items():
            (d / "candidates" / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / "candidates" / rel).write_text(text)


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory, sgcc_exe):
    tmp = tmp_path_factory.mktemp("bench")
    data = tmp / "dataset"
    _copy_problem("popcount", data, "popcount")
    _copy_problem("bitrev", data, "bitrev")
    _copy_problem("bitrev", data, "wrong", {"reverse_all.s": (PROGRAMS / "bitrev" / "bad" / "segfault.s").read_text()})
    _copy_problem("bitrev", data, "noasm", {"reverse_all.s": "\t.text\n\t.globl reverse_all\n"
                                                             "\t.type reverse_all, @function\nreverse_all:\n"
                                                             "\tmovq %rdi, %nosuchreg\n\tret\n"
                                                             "\t.size reverse_all, .-reverse_all\n"})
    (data / "not-a-problem").mkdir()  # ignored: no NAME/NAME.c
    out_dir, curves, js = tmp / "shipped", tmp / "curves", tmp / "bench.json"
    env = dict(os.environ)
    r = subprocess.run([sgcc_exe, "bench", str(data), "--generators", "replay", "--timing-rounds", "3",
                        "--perturbation", "--perturbations", "2", "--aa", "--aa-max", "1", "--seed", "7",
                        "--curves", str(curves), "--json", str(js), "--output-dir", str(out_dir), "-j", "2"],
                       capture_output=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    return {"data": data, "out": out_dir, "curves": curves, "json": json.loads(js.read_text()),
            "stdout": r.stdout.decode(), "stderr": r.stderr.decode()}


def test_known_compile_and_pass_counts(bench_run):
    res = bench_run["json"]
    by = {p["name"]: p for p in res["problems"]}
    assert sorted(by) == ["bitrev", "noasm", "popcount", "wrong"]
    assert [(n, by[n]["compiled"], by[n]["passed"]) for n in sorted(by)] == [
        ("bitrev", True, True), ("noasm", False, False), ("popcount", True, True), ("wrong", True, False)]
    paper = res["paper"]
    assert (paper["problems"], paper["compiled"], paper["passed"]) == (4, 3, 2)
    assert paper["compile_pass"] == 75.0 and paper["test_pass"] == 50.0
    # Failed problems score 1.
    assert by["noasm"]["speedup"] == 1.0 and by["wrong"]["speedup"] == 1.0
    assert res["generators"]["replay"]["built"] == 4 and res["generators"]["replay"]["passed"] == 2
    assert "papers' row (4 problems): compile pass 75.0%  test pass 50.0%" in bench_run["stdout"]
    assert "sgcc's figures: shipped" in bench_run["stdout"]
    # Where the wrong candidate stopped, and the table says so (issue 28).
    assert by["wrong"]["stages"].get("test") == 1 and by["noasm"]["stages"].get("assemble") == 1
    assert by["noasm"]["outcome"] == "gcc's program: none of 1 built candidate(s) compiled (stopped at assemble)"
    assert by["wrong"]["outcome"].startswith("gcc's program: none of 1 compiled candidate(s) passed the tests (c001:")
    assert any(line.startswith("noasm ") and line.endswith(by["noasm"]["outcome"])
               for line in bench_run["stdout"].splitlines())
    # What changed: popcount's candidate replaces a bit loop by a SWAR sequence (no loop).
    assert by["wrong"]["changes"].get("control flow", 0) == 0  # never accepted, never classified
    if by["popcount"]["stages"].get("accepted"):
        assert by["popcount"]["changes"]["instruction selection"] >= 1
        assert "what accepted candidates changed" in bench_run["stdout"]
    for fn in by["popcount"]["shipped_changes"]:
        assert fn in by["popcount"]["honest"]["functions"]


def test_every_shipped_program_passes_its_tests(bench_run, real_gcc, tmp_path):
    for name in ("popcount", "bitrev", "wrong", "noasm"):
        shipped = bench_run["out"] / name
        assert shipped.is_file()
        d = bench_run["data"] / name
        ref = tmp_path / f"{name}-ref"
        proc.run([real_gcc, "-O0", "-o", str(ref), str(d / f"{name}.c"), "-lm"], timeout=120, check=True)
        for t in sorted((d / "tests").glob("*.in")):
            want = proc.run([str(ref)], stdin=t.read_bytes(), timeout=30)
            got = proc.run([str(shipped)], stdin=t.read_bytes(), timeout=30)
            assert got.returncode == 0 and got.stdout == want.stdout, (name, t.name)
    # A wrong candidate is never shipped.
    by = {p["name"]: p for p in bench_run["json"]["problems"]}
    assert by["wrong"]["honest"]["functions"] == [] and by["noasm"]["honest"]["functions"] == []


def test_perturbation_rows_and_variants_pass_tests(bench_run):
    pt = bench_run["json"]["perturbation"]
    assert pt["count"] == 2 and len(pt["problems"]) == 4
    for study in pt["problems"]:
        # Layout-only edits of gcc's program: each must still pass every test.
        assert study["valid"] == 2, study
        for v in study["variants"]:
            assert v["papers"] > 0 and "sgcc" in v
    assert pt["papers"]["test_pass"] == 100.0
    out = bench_run["stdout"]
    assert "random perturbation, best of 2 (papers' method" in out
    assert "random perturbation, best of 2 (sgcc's method" in out
    aa = bench_run["json"]["aa"]
    assert aa["pairs"] == 1 and len(aa["runs"]) == 1 and "A-vs-A noise floor" in out


def test_curves_table_and_pngs(bench_run):
    c = bench_run["json"]["curves"]
    assert [p["x"] for p in c["best_of"]] == [1, 2, 4, 8]
    # One candidate per problem: every N sees the same attempts; 2 of 4 problems correct.
    assert all(p["pass"] == 50.0 and p["attempts"] == 4 for p in c["best_of"])
    assert "best-of-N" in bench_run["stdout"]
    files = sorted(p.name for p in bench_run["curves"].iterdir())
    assert files == ["best_of-pass.png", "best_of-speedup.png", "rounds-pass.png", "rounds-speedup.png"]
    for f in bench_run["curves"].iterdir():
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_perturb_is_layout_only():
    """Perturbing changes layout directives and order, never gcc's instructions."""
    text = proc.run(["gcc", "-O3", "-S", "-o", "-", str(PROGRAMS / "bitrev" / "bitrev.c")], timeout=60,
                    check=True).stdout.decode()
    variant, desc = studies.perturb(text, random.Random(3))
    assert variant != text
    layout = (".skip", ".p2align", ".section", ".text")  # what a perturbation may add

    def content(t):
        return sorted(ln.strip() for ln in t.splitlines() if ln.strip() and not ln.strip().startswith(layout))

    assert content(variant) == content(text)
    assert any(ln.strip().startswith((".skip", ".p2align 5", ".p2align 6")) for ln in variant.splitlines())
    assert sorted(desc["order"]) == sorted(desc["pad"])


def test_discover_only_and_errors(tmp_path):
    _copy_problem("bitrev", tmp_path, "b1")
    _copy_problem("bitrev", tmp_path, "b2")
    assert [p.name for p in benchmod.discover(tmp_path)] == ["b1", "b2"]
    assert [p.name for p in benchmod.discover(tmp_path, only=["b2"])] == ["b2"]
    with pytest.raises(Exception, match="no problem named zz"):
        benchmod.discover(tmp_path, only=["zz"])
    assert benchmod.discover(tmp_path, candidates_dir="none")[0].replay == []


def test_attempts_use_llm_sample_and_round_else_offer_order():
    from sgcc.engine import CandidateResult

    def c(id, gen, fn, stage, speedup=None, **meta):
        r = CandidateResult(id=id, function=fn, generator=gen, meta=meta)
        r.stage, r.speedup = stage, speedup
        return r

    cands = [c("c1", "llm", "f", "time", 1.2, sample=2, round=0),
             c("c2", "llm", "f", "test", None, sample=1, round=1),
             c("-", "replay", "f", "skipped"),  # never built: not an attempt
             c("c3", "replay", "f", "assemble"),
             c("c4", "replay", "f", "accepted", 1.5),
             c("c5", "replay", "g", "time", None)]  # correct, not timed: speedup 1
    assert benchmod.attempts(cands) == [(2, 0, 1.2), (1, 1, None), (1, 0, None), (2, 0, 1.5), (1, 0, 1.0)]
    counts = benchmod.generator_counts(cands, {"c4"})
    assert counts["replay"] == {"offered": 4, "built": 3, "compiled": 2, "passed": 2, "accepted": 1, "shipped": 1}
    assert counts["llm"]["passed"] == 1 and counts["llm"]["compiled"] == 2


def test_baseline_links_libm_programs(tmp_path):
    # A problem calling sqrt links only with -lm after the object (the A-vs-A and
    # perturbation studies build gcc's program themselves, like the engine).
    from sgcc.verify.box.sandbox import Sandbox

    d = tmp_path / "roots"
    (d / "tests").mkdir(parents=True)
    (d / "roots.c").write_text('#include <math.h>\n#include <stdio.h>\n'
                               'int main(void) { volatile double n = 0;\n'
                               '  if (scanf("%lf", (double *)&n) != 1) return 1;\n'
                               '  printf("%.3f\\n", sqrt(n)); return 0; }\n')
    (d / "tests" / "a.in").write_text("2\n")
    problem = benchmod.discover(tmp_path)[0]
    with Sandbox(timeout=10) as sandbox:
        base = studies.Baseline(problem, benchmod.Options(), tmp_path / "work", sandbox)
        assert base.binary.is_file() and base.tests[0].expected_stdout == b"1.414\n"
