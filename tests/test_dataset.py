"""`sgcc dataset build`: real gcc, real sandboxed runs, real gcov, on tiny programs.

One module-scoped build covers the common case (kept, dropped and why, layout, recorded
outputs, coverage); the other tests build smaller source trees of their own. Timing uses
two rounds and short samples: these tests check what is kept and written, never how fast
anything is.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from sgcc.errors import SgccError
from sgcc.lab import dataset, dataset_checks, dataset_model

FAST = dict(rounds=2, min_sample=0.005, jobs=2, timeout=10.0, seed=1)


@pytest.fixture(scope="module", autouse=True)
def _private_timing_lock(tmp_path_factory):
    """A timing lock of their own: these tests measure nothing that matters (two rounds of
    tiny programs), so they need not queue for minutes behind a benchmark holding the
    machine-wide lock. Set in os.environ so the sgcc subprocesses see it too."""
    saved = os.environ.get("SGCC_TIMING_LOCK")
    os.environ["SGCC_TIMING_LOCK"] = str(tmp_path_factory.mktemp("lock") / "timing.lock")
    yield
    if saved is None:
        os.environ.pop("SGCC_TIMING_LOCK", None)
    else:
        os.environ["SGCC_TIMING_LOCK"] = saved

# Prints 2n+1 and, only for n > 1000, work(n): the small input never takes that branch.
GOOD = r"""
#include <stdio.h>
__attribute__((noinline)) long work(long n)
{
    long s = 0;
    for (long i = 0; i < n; i++)
        s += i % 7;
    return s;
}
int main(void)
{
    long n;
    if (scanf("%ld", &n) != 1) {
        puts("none");
        return 0;
    }
    printf("%ld\n", 2 * n + 1);
    if (n > 1000)
        printf("%ld\n", work(n));
    return 0;
}
"""

# The address of a local variable differs with the environment size (and with ASLR).
NONDET = r"""
#include <stdio.h>
int main(void) { int x = 0; printf("%lu\n", (unsigned long)&x); return 0; }
"""

# Dereferences NULL on input 1.
CRASH = r"""
#include <stdio.h>
int main(void) { int n = 0, *p = 0; scanf("%d", &n); if (n == 1) *p = 1; printf("%d\n", n); return 0; }
"""

# Strict-aliasing violation: -O0 reloads the float's bits, -O3 reuses the int it stored.
UB = r"""
#include <stdio.h>
__attribute__((noinline)) int both(int *i, float *f, int n) { *i = n; *f = 2.0f; return *i; }
int main(void) { int x = 0; printf("%d\n", both(&x, (float *)&x, 5)); return 0; }
"""

# No loop to speak of: -O3 gains nothing measurable here.
TRIVIAL = r"""
#include <stdio.h>
int main(void) { int n = 0; scanf("%d", &n); printf("%d\n", n + 1); return 0; }
"""


def make_src(root: Path) -> Path:
    """good and nondet in the flat layout, crash and ub in the directory layout."""
    src = root / "src"
    src.mkdir()
    (src / "good.c").write_text(GOOD)
    (src / "good.in").write_text("5\n")
    (src / "good-big.in").write_text("20000000\n")  # ~20 ms at -O3: clearly the heaviest
    (src / "nondet.c").write_text(NONDET)
    (src / "nondet.in").write_text("")
    (src / "crash" / "tests").mkdir(parents=True)
    (src / "crash" / "crash.c").write_text(CRASH)
    (src / "crash" / "tests" / "a.in").write_text("0\n")
    (src / "crash" / "tests" / "b.in").write_text("1\n")
    (src / "ub").mkdir()
    (src / "ub" / "ub.c").write_text(UB)
    (src / "ub" / "one.in").write_text("\n")
    return src


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("dataset")
    src = make_src(root)
    # good also gets candidates, in the directory layout: move it there.
    (src / "good").mkdir()
    for name, new in (("good.c", "good.c"), ("good.in", "main.in"), ("good-big.in", "big.in")):
        os.rename(src / name, src / "good" / new)
    (src / "good" / "candidates" / "work").mkdir(parents=True)
    (src / "good" / "candidates" / "work" / "a.s").write_text("\t.text\n")
    out = root / "out"
    data = dataset.build(src, out, **FAST)
    return src, out, data


def test_keeps_the_good_program_and_drops_the_others_with_reasons(built):
    _, _, data = built
    assert [p["name"] for p in data["problems"]] == ["good"]
    reasons = {d["name"]: (d["stage"], d["reason"]) for d in data["dropped"]}
    assert set(reasons) == {"nondet", "crash", "ub"}
    assert reasons["nondet"][0] == "determinism"
    assert reasons["crash"][0] == "run" and "SIGSEGV" in reasons["crash"][1] and "input b" in reasons["crash"][1]
    assert reasons["ub"][0] == "o3" and "-O0 and -O3" in reasons["ub"][1]
    assert data["totals"]["kept"] == 1 and data["totals"]["dropped"] == 3


def test_writes_the_examples_layout_with_recorded_outputs(built):
    src, out, _ = built
    problem = out / "good"
    assert (problem / "good.c").read_bytes() == (src / "good" / "good.c").read_bytes()
    assert sorted(p.name for p in (problem / "tests").iterdir()) == ["big.in", "big.out", "main.in", "main.out"]
    # Recorded from the program itself: 2n+1, plus work(n) = sum of i % 7 for i < n on the big input.
    assert (problem / "tests" / "main.out").read_text() == "11\n"
    n = 20_000_000
    expected_work = (n // 7) * 21 + sum(range(n % 7))
    assert (problem / "tests" / "big.out").read_text() == f"{2 * n + 1}\n{expected_work}\n"
    assert (problem / "candidates" / "work" / "a.s").read_text() == "\t.text\n"
    # Nothing of the dropped programs, and no temporary directories left beside OUT.
    assert sorted(p.name for p in out.iterdir()) == ["dataset.json", "good"]
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(".")] == []
    assert json.loads((out / "dataset.json").read_text())["format"] == dataset_model.FORMAT


def test_statistics_are_plausible(built):
    _, _, data = built
    good = data["problems"][0]
    cov = good["coverage"]
    assert 0 < cov["line_pct"] <= 100 and 0 < cov["lines_executed"] <= cov["lines_total"]
    # `scanf(...) != 1` is never true on these inputs: the `puts("none")` line is never run.
    assert cov["lines_executed"] < cov["lines_total"]  # the `puts("none")` line
    assert 0 < cov["branch_pct"] < 100
    assert good["heaviest"] == "big"
    s = good["speedup_o0_o3"]
    assert s["low"] <= s["estimate"] <= s["high"] and s["rounds"] == 2
    assert data["totals"]["coverage"]["lines_total"] == cov["lines_total"]


def test_sgcc_optimize_accepts_the_written_problem(built, sgcc_exe, tmp_path):
    """The layout is the one `sgcc optimize --tests` reads (the .out files are used as given)."""
    _, out, _ = built
    result = subprocess.run(
        [sgcc_exe, "optimize", str(out / "good" / "good.c"), "-O3", "--tests", str(out / "good" / "tests"),
         "--generators", "replay", "--candidates", str(out / "good" / "candidates"), "--no-cache", "-q",
         "-o", str(tmp_path / "prog")],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    run = subprocess.run([str(tmp_path / "prog")], input="5\n", capture_output=True, text=True, timeout=30)
    assert run.stdout == "11\n"


def test_keep_top_keeps_the_largest_gains(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "good.c").write_text(GOOD)
    (src / "good.in").write_text("200000\n")
    (src / "trivial.c").write_text(TRIVIAL)
    (src / "trivial.in").write_text("1\n")
    data = dataset.build(src, tmp_path / "out", keep_top=1, **FAST)
    assert len(data["problems"]) == 1 and len(data["not_selected"]) == 1
    kept, other = data["problems"][0], data["not_selected"][0]
    # The selection follows the recorded estimates, whichever program they favoured.
    assert kept["speedup_o0_o3"]["estimate"] >= other["speedup_o0_o3"]
    assert data["totals"]["not_selected"] == 1
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["dataset.json", kept["name"]]


def test_refuses_to_overwrite(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "t.c").write_text(TRIVIAL)
    (src / "t.in").write_text("1\n")
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("mine")
    for force in (False, True):
        with pytest.raises(SgccError, match="not an sgcc dataset"):
            dataset.build(src, precious, force=force, **FAST)
    assert (precious / "keep.txt").read_text() == "mine"

    out = tmp_path / "out"
    dataset.build(src, out, **FAST)
    with pytest.raises(SgccError, match="already exists") as info:
        dataset.build(src, out, **FAST)
    assert "--force" in info.value.hint
    (src / "t.in").write_text("41\n")
    dataset.build(src, out, force=True, **FAST)
    assert (out / "t" / "tests" / "main.out").read_text() == "42\n"


def test_hostile_inputs_are_dropped_with_clear_reasons(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "big.c").write_text(TRIVIAL)
    with open(src / "big.in", "wb") as fh:  # sparse: costs no disk space
        fh.truncate(dataset_model.MAX_INPUT + 1)
    secret = tmp_path / "secret.c"
    secret.write_text(TRIVIAL)
    (src / "linked.c").symlink_to(secret)
    (src / "linked.in").write_text("1\n")
    (src / "ok.c").write_text(TRIVIAL)
    (src / "ok.in").write_text("1\n")
    (src / "broken.c").write_text("int main(void) { return syntax error; }\n")
    (src / "broken.in").write_text("1\n")
    (src / "lonely.c").write_text(TRIVIAL)  # no inputs at all
    data = dataset.build(src, tmp_path / "out", **FAST)
    assert [p["name"] for p in data["problems"]] == ["ok"]
    reasons = {d["name"]: d["reason"] for d in data["dropped"]}
    assert "too large" in reasons["big"]
    assert "symlink" in reasons["linked"]
    assert "does not compile" in reasons["broken"] and "error" in reasons["broken"]
    assert str(tmp_path) not in reasons["broken"]  # private build paths are not reported
    assert "no input files" in reasons["lonely"]


def test_cli_prints_summary_and_json(tmp_path, sgcc_exe):
    src = make_src(tmp_path)
    out = tmp_path / "out"
    args = [sgcc_exe, "dataset", "build", str(src), "--out", str(out), "--rounds", "2", "--min-sample", "0.005", "-q"]
    result = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "1 problems kept, 3 dropped" in result.stdout
    assert "nondet" in result.stdout and "DROPPED (determinism)" in result.stdout
    assert "coverage: lines" in result.stdout

    again = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert again.returncode == 1 and "already exists" in again.stderr and "--force" in again.stderr

    result = subprocess.run(args + ["--force", "--json"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["totals"]["kept"] == 1 and data["problems"][0]["name"] == "good"


def test_parse_gcov_json_counts_only_the_named_source():
    doc = {"files": [
        {"file": "/x/p.c", "lines": [
            {"line_number": 3, "count": 2, "branches": [{"count": 2, "throw": False}, {"count": 0, "throw": False}]},
            {"line_number": 4, "count": 0, "branches": []},
            {"line_number": 3, "count": 0, "branches": []},  # a second function on line 3
        ]},
        {"file": "/usr/include/stdio.h", "lines": [{"line_number": 1, "count": 0, "branches": []}]},
    ]}
    cov = dataset_checks.parse_gcov_json(json.dumps(doc).encode(), "p.c")
    assert (cov.lines_executed, cov.lines_total, cov.branches_taken, cov.branches_total) == (1, 2, 1, 2)
    assert cov.line_pct == 50.0 and cov.branch_pct == 50.0
