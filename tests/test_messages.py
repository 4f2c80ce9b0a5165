"""What `sgcc optimize` says must be true and readable (issue 28): where an inlined function's
code went, which functions the budget left unsearched, what the budget's figures are, a line
per candidate while a round builds, and a bad word on the command line refused before any work.

Real gcc, real assembler, real sandboxed runs; the engine runs without the profile and with
few timing rounds where a test needs a whole run, so each takes seconds.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.asm.units import AsmFile
from sgcc.candidates.replay import ReplayGenerator
from sgcc.engine import Request, inlining, optimize
from sgcc.engine.baseline import build_baseline
from sgcc.engine.report import CandidateResult, Report
from sgcc.engine.search import cuts, weigh
from sgcc.progress import Progress
from sgcc.stages import Stage

#: ``work`` is called once, from main: gcc -O3 inlines it there and keeps a copy for other files.
PROGRAM = """#include <stdio.h>

long work(long n) {
    long s = 0;
    for (long i = 0; i < n; i++)
        s += (i * i) % 7;
    return s;
}

int main(void) {
    long n;
    if (scanf("%ld", &n) != 1) return 1;
    printf("%ld\\n", work(n));
    return 0;
}
"""


@pytest.fixture
def program_dir(tmp_path) -> Path:
    (tmp_path / "prog.c").write_text(PROGRAM)
    (tmp_path / "static.c").write_text(PROGRAM.replace("long work(", "static long work("))
    tests = tmp_path / "tests"
    tests.mkdir()
    for name, n in (("a", 1000), ("b", 20000)):
        (tests / f"{name}.in").write_text(f"{n}\n")
    return tmp_path


# -- where an inlined function's code went ----------------------------------------------------


def test_gccs_inlining_report_is_read_and_followed_to_the_units():
    text = ("p.c:14:5: optimized:  Inlining work/22 into main/23.\n"
            "p.c:9:12: optimized:  Inlining helper/20 into work/22.\n"
            "p.c:30:3: missed:   not inlinable: main/23 -> printf/25, function body not available\n")
    sites = inlining.parse(text)
    assert sites == {"work": [("main", "p.c:14")], "helper": [("work", "p.c:9")]}
    # helper went into work; work has no unit of its own (inlined everywhere): followed to main.
    assert inlining.destinations(sites, {"main"}) == {"work": [("main", "p.c:14")], "helper": [("main", "p.c:9")]}
    assert inlining.destinations(sites, {"main", "work"})["helper"] == [("work", "p.c:9")]
    assert inlining.describe("work", [("main", "/x/p.c:14")]) == "gcc inlined its calls into main (p.c:14)"


def test_a_function_inlined_into_main_is_said_to_be_there(program_dir, tmp_path):
    """`not searched: work: not executed by the tests` read as if the tests missed work: its
    code ran, inside main (issue 28)."""
    work = tmp_path / "work"
    work.mkdir()
    req = Request(source=program_dir / "prog.c", flags=["-O3"], tests=program_dir / "tests",
                  output=tmp_path / "out", generators=[ReplayGenerator(work)])
    program = build_baseline(req, work)
    assert {u.name for u in program.asm.units} == {"work", "main"}
    program.weights = {"main": 1.0, "work": 0.0}  # what the profile finds (its copy never runs)
    report = Report(source="prog.c", flags=["-O3"], isa="x86-64", min_gain=0.03)
    weigh(req, program, None, [], report)
    why = report.skipped_functions["work"]
    assert why.startswith("not executed by the tests: gcc inlined its calls into main (prog.c:13)"), why
    assert "where the tests run its code" in why and "main" not in report.skipped_functions
    assert f"sgcc: not searched: work: {why}" in report.summary()


def test_a_function_with_no_unit_is_said_to_be_inlined(program_dir, tmp_path):
    """A replay candidate for a static function gcc inlined everywhere: "no function named
    work" says where its code went. The same run prints a line per candidate it builds."""
    text = proc.run(["gcc", "-O3", "-S", "-o", "-", str(program_dir / "static.c")], check=True).stdout.decode()
    cands = tmp_path / "cands"
    cands.mkdir()
    main = AsmFile.parse(text).unit("main").text
    (cands / "main.s").write_text(main.replace("\tret\n", "\tnop\n\tret\n", 1))
    (cands / "work.s").write_text(main.replace("main", "work"))
    req = Request(source=program_dir / "static.c", flags=["-O3"], tests=program_dir / "tests",
                  output=tmp_path / "out", generators=[ReplayGenerator(cands)], seed=1, profile=False, mutants=0,
                  timing_rounds=2, min_sample=0.01, test_timeout=5.0)
    stream = io.StringIO()
    report = optimize(req, Progress(stream))
    (work,) = [c for c in report.candidates if c.function == "work"]
    assert work.stage == Stage.SCREEN
    assert work.reason == ("no function named work in static.c: gcc inlined its calls into main (static.c:13) and "
                           "kept no copy of its own; a candidate for main replaces that code")
    lines = stream.getvalue().splitlines()
    assert any(line.endswith("built and tested 1/1: c001 (main, replay) passed the tests") for line in lines), lines


# -- what the budget cut -----------------------------------------------------------------------


def _result(cid, function, stage, reason=""):
    res = CandidateResult(id=cid, function=function, generator="g")
    res.stop(stage, reason)
    return res


def test_a_function_whose_candidates_were_tested_is_searched_in_part():
    """`not searched: main` was printed right under main's tested candidates when the budget
    ran out before any of them was timed (issue 28)."""
    reached = "search budget reached"
    results = [_result("c001", "main", Stage.TIME, f"not timed: {reached}"),
               _result("c002", "main", Stage.TIME, f"not timed: {reached}"),
               _result("-", "main", Stage.SKIPPED, reached),
               _result("-", "cold", Stage.SKIPPED, reached)]
    cut = cuts(results, ["main", "cold", "other"], searched={"other": False})
    assert cut == {"not_built": 2, "built_not_timed": 2, "unsearched": ["cold", "other"], "cut_short": ["main"]}
    report = Report(source="p.c", flags=["-O3"], isa="x86-64", min_gain=0.03, candidates=results,
                    budget={"seconds": 60.0, "candidates": None, "cut": cut, "timed": 0, "search_seconds": 40.0,
                            "before_search_seconds": 5.0}, seconds=52.0)
    lines = report.summary().splitlines()
    assert ("sgcc: budget 60 s of wall time for the whole run: used 52 s in all (5.0 s before the search: "
            "baseline, tests, profile, generators; 40.0 s searching; 7.0 s after: re-measuring winners, shipping), "
            "2 candidate(s) built, 0 timed; cut 2 offered but not built, 2 built but not timed") in lines
    assert "sgcc: budget: not searched: cold, other (the budget ran out before any candidate of theirs was built)" \
        in lines
    assert any(line.startswith("sgcc: budget: searched in part: main (") for line in lines)
    assert not any("not searched: main" in line for line in lines)


# -- the command line ----------------------------------------------------------------------------


@pytest.mark.parametrize("words, says", [
    (["--budget", "1", "minute"], "sgcc: error: --budget 1 minute: the budget is one word, and 'minute' would go "
                                  "to gcc as an input file\nsgcc: hint: write it as one word, e.g. --budget 1m; "
                                  "a budget is seconds ('300s', '5m', '5min', '1h')"),
    (["--budget", "5", "s"], "e.g. --budget 5s;"),
    (["nosuch.c"], "sgcc: error: 'nosuch.c' would go to gcc as an input file, and no such file exists"),
    (["a" * 300], "would go to gcc as an input file, and no such file exists"),
    (["--budget", "1 fortnight"], "bad budget '1fortnight': use seconds ('300s', '5m', '5min', '1h')"),
    (["--budget", "nan s"], "budget 'nans' must be positive"),
])
def test_words_that_would_reach_gcc_as_missing_inputs_are_refused_at_once(program_dir, sgcc_exe, words, says):
    r = proc.run([sgcc_exe, "optimize", "prog.c", "-O3", "--tests", "tests", "-o", "out", *words],
                 cwd=program_dir, timeout=60, env={**os.environ, "SGCC_GENERATORS": "variants"})
    err = r.stderr.decode()
    assert r.returncode != 0 and says in err, err
    assert err.count("sgcc: error:") == 1 and "Traceback" not in err and "building the baseline" not in err
    assert not (program_dir / "out").exists()


def test_budget_units_people_write_are_understood():
    from sgcc.config import parse_budget

    assert parse_budget("1min") == parse_budget("1 minute") == parse_budget("60sec") == (60.0, None)
    assert parse_budget("2minutes,40") == (120.0, 40) and parse_budget("1.5hours") == (5400.0, None)
    assert parse_budget("3secs") == (3.0, None) and parse_budget("40") == (None, 40)


# -- why a program shipped what it shipped (the summary and the main job's table) -----------------


def _report(*results, generators=("replay",)):
    return Report(source="p.c", flags=["-O3"], isa="x86-64", min_gain=0.03, candidates=list(results),
                  generators=list(generators))


def _timed(cid, speedup, low, stage=Stage.TIME, reason=""):
    res = _result(cid, "f", stage, reason)
    res.speedup, res.ci_low, res.ci_high = speedup, low, speedup + 0.1
    return res


@pytest.mark.parametrize("results, says", [
    ((), "gcc's program: no candidates to try (generators: replay)"),
    ((_result("-", "f", Stage.SKIPPED, "identical to gcc's unit"),),
     "gcc's program: no candidate built (1 refused or skipped before building: identical to gcc's unit)"),
    ((_result("c001", "f", Stage.ASSEMBLE, "bad register"),),
     "gcc's program: none of 1 built candidate(s) compiled (stopped at assemble)"),
    ((_result("c001", "f", Stage.TEST, "test a failed: wrong output"),),
     "gcc's program: none of 1 compiled candidate(s) passed the tests (c001: test a failed: wrong output)"),
    ((_timed("c001", 1.01, 0.98), _timed("c002", 1.02, 0.99)),
     "gcc's program: 2 candidate(s) passed the tests, none proven faster (best c002: 1.020x, lower bound 0.990 "
     "<= 1.030)"),
    ((_result("c001", "f", Stage.TIME, "not timed: search budget reached"),),
     "gcc's program: 1 candidate(s) passed the tests, and the budget ran out before any was timed (a larger --budget times them)"),
])
def test_the_outcome_says_why_gccs_program_shipped(results, says):
    """The main job's table showed `compiled False passed False` and never said why a passing
    program shipped nothing (issue 28)."""
    report = _report(*results)
    assert report.outcome() == says
    why = says.removeprefix("gcc's program: ").removesuffix(" (generators: replay)")
    assert f"sgcc: shipped the baseline: {why}" in report.summary().splitlines()


def test_the_outcome_of_a_winner_fresh_rounds_did_not_confirm():
    res = _timed("c001", 1.437, 1.2, reason="not confirmed on fresh rounds (1.010x, lower bound 0.990)")
    res.confirm = {"speedup": 1.01, "low": 0.99, "high": 1.03, "rounds": 20, "reps": 1}
    assert _report(res).outcome() == ("gcc's program: c001 was faster at first (1.437x) but not confirmed on "
                                      "fresh rounds (1.010x, lower bound 0.990)")


def test_the_main_jobs_table_says_why_and_cuts_nothing():
    from sgcc.lab.bench import render

    honest = {"speedup": 1.0, "ci_low": 1.0, "ci_high": 1.0, "functions": [], "generators": {}}
    long_fn = "count_palindromes_of_every_length"
    rows = [
        {"name": "inversions", "candidates": 0, "built": 0, "compiled": False, "passed": False, "speedup": 1.0,
         "honest": honest, "seconds": 6.0, "outcome": "gcc's program: no candidates to try (generators: replay)"},
        {"name": "palindromes", "candidates": 1, "built": 1, "compiled": True, "passed": True, "speedup": 1.5,
         "honest": {**honest, "speedup": 1.4, "functions": [long_fn], "generators": {long_fn: "replay"}},
         "seconds": 9.0, "outcome": f"shipped {long_fn} (replay)"},
        {"name": "wrong", "candidates": 1, "built": 1, "compiled": True, "passed": False, "speedup": 1.0,
         "honest": honest, "seconds": 3.0},  # a row of an older JSON file: no outcome
    ]
    result = {"problems": rows, "paper": {"problems": 3, "compile_pass": 66.7, "test_pass": 33.3, "p25": 1.0,
                                          "p50": 1.0, "p75": 1.2, "average": 1.17},
              "honest": {"shipped": 1, "problems": 3, "geomean": 1.1, "ci_low": 1.0, "ci_high": 1.4,
                         "significant": 1, "significant_share": 33.3}, "search_seconds": 9.0}
    lines = render(result).splitlines()
    assert lines[0].split() == ["problem", "cands", "compiled", "passed", "papers", "shipped", "95%", "CI", "secs",
                                "outcome"]
    by = {line.split()[0]: line for line in lines[1:4]}
    assert by["inversions"].split()[2:4] == ["-", "-"]  # nothing built: neither, and the outcome says why
    assert by["inversions"].endswith("gcc's program: no candidates to try (generators: replay)")
    assert by["palindromes"].endswith(f"shipped {long_fn} (replay)")  # never cut
    assert by["wrong"].split()[2:4] == ["yes", "no"] and by["wrong"].endswith("gcc's program")


def test_bench_refuses_an_unknown_model_before_any_problem(sgcc_exe, tmp_path):
    from tests.conftest import EXAMPLES

    r = proc.run([sgcc_exe, "bench", str(EXAMPLES / "programs"), "--only", "popcount", "--generators", "llm",
                  "--model", "no-such-model-name"], cwd=tmp_path, timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 1 and "sgcc: error: no model named 'no-such-model-name'" in err, err
    assert "sgcc bench: popcount" not in err and "Traceback" not in err
