"""What a newcomer meets, round 3 (issue 41): the budget's overrun and its cause said, a race
cut short judged on what it measured, programs of several files, the words of the summary
and the bench table, `sgcc -h`, and the shared cache and timing lock explained.

Real sgcc, real gcc, real sandboxed runs; the runs that time anything are marked slow.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.engine.budget import Budget, account
from sgcc.engine.report import CandidateResult, Report
from sgcc.lab import bench as benchmod
from sgcc.stages import Stage

ROOT = Path(__file__).resolve().parent.parent

MAIN = """#include <stdio.h>
long work(long n);
long cold(long n);
int main(void) {
    long n;
    if (scanf("%ld", &n) != 1) return 1;
    printf("%ld\\n", n < 0 ? cold(n) : work(n));
    return 0;
}
"""
WORK = "long work(long n) {\n    long s = 0;\n    for (long i = 0; i < n; i++)\n        s += (i * i) % 7;\n" \
       "    return s;\n}\n"
COLD = "long cold(long n) { return -n; }\n"


@pytest.fixture
def three_files(tmp_path) -> Path:
    """A program of three sources: main.c calls work (work.c, hot) and cold (cold.c, never run)."""
    for name, text in (("main.c", MAIN), ("work.c", WORK), ("cold.c", COLD)):
        (tmp_path / name).write_text(text)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "a.in").write_text("1000\n")
    (tmp_path / "tests" / "b.in").write_text("200000\n")
    return tmp_path


@pytest.fixture
def private_timing_lock(tmp_path, monkeypatch):
    """A timing lock of this test's own: what it asserts about waits and holders must not
    see another worker's timings (pytest-xdist workers share the run's lock, conftest.py)."""
    monkeypatch.setenv("SGCC_TIMING_LOCK", str(tmp_path / "timing.lock"))


@contextlib.contextmanager
def _lock_held_by_another_thread(seconds: float):
    """The timing lock (the tests' own file) held by a thread of this process, another
    holder to sgcc, until ``release`` is set or ``seconds`` pass; yields ``release``."""
    from sgcc.verify.timing.rounds import timing_lock

    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with timing_lock():
            held.set()
            release.wait(seconds)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    try:
        yield release
    finally:
        release.set()
        holder.join()


def _sgcc(sgcc_exe, *args, cwd=None, env=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sgcc_exe, *args], cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True,
                          text=True, timeout=timeout)


# -- sgcc -h ---------------------------------------------------------------------------------


def test_help_lists_each_command_whole(sgcc_exe):
    """`sgcc -h` cut command descriptions with "..."; each is its whole first sentence, wrapped."""
    for args in (["-h"], ["cache", "-h"], ["dataset", "-h"]):
        out = _sgcc(sgcc_exe, *args).stdout
        commands = out.split("Commands:\n", 1)[1]
        assert "..." not in commands, out
    flat = " ".join(_sgcc(sgcc_exe, "-h").stdout.split())
    assert "optimize Optimize one C program against its tests: prove each candidate correct and faster, or " \
           "drop it." in flat


# -- --budget 90 -----------------------------------------------------------------------------


def test_a_bare_budget_number_is_said_to_be_candidates(sgcc_exe, tmp_path):
    """`--budget 90` is 90 candidates and no time limit (an easy trap): warned, before any
    work; '90c' says candidates and is not warned about. (A source gcc refuses ends the run
    right after.)"""
    (tmp_path / "bad.c").write_text("int main(void) { return }\n")
    (tmp_path / "t").mkdir()
    common = ["optimize", "bad.c", "--tests", "t", "-o", "out", "-q"]
    r = _sgcc(sgcc_exe, *common, "--budget", "90", cwd=tmp_path)
    assert "sgcc: warning: --budget 90: '90' counts candidates built, not seconds; the run has no time limit; " \
           "write '90s' for seconds, or '90c' for candidates" in r.stderr
    assert r.stderr.index("sgcc: warning:") < r.stderr.index("sgcc: error: gcc cannot compile")
    for budget in ("90c", "90s", "2min,40c"):
        r = _sgcc(sgcc_exe, *common, "--budget", budget, cwd=tmp_path)
        assert "warning" not in r.stderr and "sgcc: error: gcc cannot compile" in r.stderr
    r = _sgcc(sgcc_exe, *common, cwd=tmp_path, env={"SGCC_BUDGET": "300s,40"})
    assert "sgcc: warning: budget (from environment) 300s,40: '40' counts candidates built, not seconds; " \
           "write '40s'" in r.stderr
    from sgcc.config import parse_budget

    assert parse_budget("90c") == parse_budget("90 candidates") == parse_budget("90cand") == (None, 90)
    assert parse_budget("90sec") == (90.0, None)


# -- several files ---------------------------------------------------------------------------


def test_one_file_of_a_program_gets_a_hint(sgcc_exe, three_files):
    r = _sgcc(sgcc_exe, "optimize", "work.c", "--tests", "tests", "-o", "out", "-q", cwd=three_files)
    assert r.returncode == 1 and "undefined reference to `main'" in r.stderr
    assert "sgcc: hint: work.c has no main: it is one file of a program; name every C source of the program " \
           "(sgcc optimize main.c work.c ... --tests DIR -o OUT)" in r.stderr
    r = _sgcc(sgcc_exe, "optimize", "main.c", "--tests", "tests", "-o", "out", "-q", cwd=three_files)
    assert r.returncode == 1 and "undefined reference to `work'" in r.stderr
    assert "sgcc: hint: the program has other files: name every C source of it" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_program_of_several_sources_is_optimized_whole(sgcc_exe, three_files, tmp_path):
    """`sgcc optimize main.c work.c cold.c` failed with gcc's "cannot specify -o with -c, -S
    or -E with multiple files". Each source is compiled, the hottest searched first, the one
    the tests never run left alone; OUT is the whole program and passes the tests."""
    cands = tmp_path / "cands"
    cands.mkdir()  # nothing to replay: the test is the program's plumbing, not a gain
    report = three_files / "r.json"
    r = _sgcc(sgcc_exe, "optimize", "main.c", "work.c", "cold.c", "-O2", "--tests", "tests", "-o", "out",
              "--generators", "replay", "--candidates", str(cands), "--report", str(report), "--no-cache",
              cwd=three_files)
    assert r.returncode == 0, r.stderr
    assert "sgcc: main.c work.c cold.c: a program of 3 sources, searched hottest first" in r.stderr
    assert "sgcc: ---- work.c (" in r.stderr and "sgcc: cold.c: gcc's code, not searched: the tests never run " \
                                                  "its functions" in r.stderr
    run = proc.run([str(three_files / "out")], stdin=b"200000\n", timeout=30)
    assert run.ok and run.stdout == f"{sum(i * i % 7 for i in range(200000))}\n".encode()
    import json

    data = json.loads(report.read_text())
    assert data["runs"][0]["source"] == "work.c" and data["weights"]["cold.c"] == 0.0


# -- the summary's words ---------------------------------------------------------------------


def _res(cid, stage, reason="", speedup=None, low=None):
    r = CandidateResult(id=cid, function="f", generator="flags")
    r.stop(stage, reason)
    if speedup is not None:
        r.speedup, r.ci_low, r.ci_high = speedup, low, speedup + 0.1
    return r


def test_the_papers_figures_are_named_and_never_read_as_a_gain():
    report = Report(source="p.c", flags=["-O3"], isa="x86-64", min_gain=0.03,
                    candidates=[_res("c001", Stage.TIME, "not significantly faster", 1.013, 0.98)])
    report.paper = {"compiled": True, "passed": True, "speedup": 1.013}
    line = [ln for ln in report.summary().splitlines() if "papers" in ln]
    assert line == ["sgcc: the SuperCoder papers' scoring (best-of-N on first measurements; not a gain: gcc's "
                    "program was shipped): compiled yes, passed yes, best first measurement 1.013x, clipped at 1"]
    refused = Report(source="p.c", flags=["-O3"], isa="x86-64", min_gain=0.03,
                     candidates=[_res("c001", Stage.CONTROL, "jumps outside gcc's code")],
                     paper={"compiled": False, "passed": False, "speedup": 1.0})
    assert "compiled no (refused by sgcc's static proof before linking), passed no" in refused.summary()


def test_a_survivor_of_a_race_the_budget_stopped_is_judged_on_its_rounds():
    from sgcc.engine.search import Search

    search = Search.__new__(Search)
    search.req, search.program = type("R", (), {"min_gain": 0.03})(), None
    res = _res("c002", Stage.TIME)
    est = type("E", (), {"low": 0.97, "speedup": 1.06, "rounds": 6})()
    search._judge(("f", None, res, None), est, False, None, {}, " on the 6 rounds the budget allowed")
    assert res.reason == "not significantly faster on the 6 rounds the budget allowed (lower bound 0.970 <= 1.030)"


def test_the_search_note_says_when_it_stopped_not_a_queue_count():
    budget = Budget(60.0, None, [], None, started=0.0, clock=lambda: 56.0)
    budget.begin_search()
    assert budget.spent_summary() == "the search stopped 56.0 s into the run, 56.0 s of them before it began"


def test_an_overrun_and_its_cause_are_said():
    """The run took 141 s of a 60 s budget, 74.9 s "re-measuring c001", and said nothing about
    why (issue 41): the overrun, the re-measurement and the lock wait are in the report."""
    started = 1000.0
    waits = [(started + 60.0, 70.0, "pid 7 in /p: sgcc optimize other.c, timing since 12:00:00")]
    b = {"seconds": 60.0, "candidates": None, "search_seconds": 45.0, "before_search_seconds": 15.0, "timed": 3,
         **account(141.0, 60.0, 60.0, waits, started)}
    assert b["over"] == {"seconds": 81.0, "after_search_seconds": 81.0, "search_seconds": 0.0,
                         "lock_wait_seconds": 70.0}
    assert b["lock_wait"]["after_search_seconds"] == 70.0
    c = _res("c001", Stage.ACCEPTED, "1.10x faster", 1.1, 1.05)
    c.confirm = {"speedup": 1.1}
    report = Report(source="p.c", flags=["-O3"], isa="x86-64", min_gain=0.03, candidates=[c], budget=b,
                    seconds=141.0)
    text = report.summary()
    assert "sgcc: budget: over by 81.0 s: 81.0 s after the search, re-measuring c001 (the first re-measurement " \
           "of a winner always runs); the run waited 70.0 s in all for the timing lock (see below)" in text
    assert "sgcc: timing lock: waited 70.0 s (1 wait(s), 70.0 s of them after the search) while other sgcc runs " \
           "timed (pid 7 in /p: sgcc optimize other.c, timing since 12:00:00)" in text
    assert account(50.0, 60.0, 45.0, [], started) == {}  # within the budget, no wait: nothing to say
    assert account(60.5, 60.0, 45.0, [], started) == {}  # 0.5 s over: not worth a line


@pytest.mark.usefixtures("private_timing_lock")
@pytest.mark.slow
def test_a_wait_for_the_timing_lock_is_announced_and_counted(sgcc_exe, tmp_path):
    """Another run holds the timing lock: the run says who, while it waits, and its summary
    and report count the wait (real lock, real sgcc, popcount's replay candidate; the
    overrun a wait causes is test_an_overrun_and_its_cause_are_said's: how long a loaded
    machine takes to reach the first timing varies too much to aim a budget at it)."""
    prog = ROOT / "examples" / "programs" / "popcount"
    with _lock_held_by_another_thread(60) as release:
        p = subprocess.Popen([sgcc_exe, "optimize", str(prog / "popcount.c"), "--tests", str(prog / "tests"),
                              "-o", str(tmp_path / "out"), "--candidates", str(prog / "candidates"),
                              "--generators", "replay", "--timing-rounds", "4", "--no-cache",
                              "--report", str(tmp_path / "r.json")], stderr=subprocess.PIPE, text=True)
        lines: list[str] = []
        assert p.stderr is not None
        for line in p.stderr:
            lines.append(line)
            if "waiting for the timing lock" in line:
                time.sleep(5)
                release.set()
        p.wait(120)
    err = "".join(lines)
    assert p.returncode == 0, err
    assert f"waiting for the timing lock: another sgcc run is timing (pid {os.getpid()} in " in err
    assert "took the timing lock after waiting" in err
    assert re.search(rf"sgcc: timing lock: waited [4-9]\.\d s \(1 wait\(s\), 0\.0 s of them after the search\) "
                     rf"while other sgcc runs timed \(pid {os.getpid()} in ", err), err
    import json

    wait = json.loads((tmp_path / "r.json").read_text())["budget"]["lock_wait"]
    assert wait["seconds"] >= 4.5 and wait["holders"][0].startswith(f"pid {os.getpid()} in ")


# -- the bench table -------------------------------------------------------------------------


def test_the_bench_table_says_refused_not_compiled_no():
    row = {"name": "nqueens", "candidates": 1, "built": 1, "refused": 1, "compiled": False, "passed": False,
           "speedup": 1.0, "seconds": 3.0, "outcome": "gcc's program: none of 1 built candidate(s) compiled",
           "honest": {"speedup": 1.0, "ci_low": 1.0, "ci_high": 1.0, "functions": []}}
    result = {"problems": [row], "paper": {"problems": 1, "compile_pass": 0.0, "test_pass": 0.0, "p25": 1.0,
                                           "p50": 1.0, "p75": 1.0, "average": 1.0},
              "honest": {"shipped": 0, "problems": 1, "geomean": 1.0, "ci_low": 1.0, "ci_high": 1.0,
                         "significant": 0, "significant_share": 0.0}, "search_seconds": 3.0}
    text = benchmod.render(result)
    line = next(ln for ln in text.splitlines() if ln.startswith("nqueens"))
    assert line.split()[2:5] == ["refused", "no", "1.000"]
    assert "'refused': candidates were built but sgcc's static proof refused each one before linking" in text


def test_bench_examples_says_what_it_runs_at_once(tmp_path):
    """bench/examples.py printed nothing for its first 128 s: its command comes first."""
    p = subprocess.Popen([sys.executable, str(ROOT / "bench" / "examples.py"), "--only", "no-such-problem"],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.stderr is not None
    first = p.stderr.readline()
    p.communicate(timeout=120)
    assert first.startswith("bench/examples.py: sgcc bench ") and "--generators replay" in first


# -- the shared cache and timing lock --------------------------------------------------------


@pytest.mark.usefixtures("private_timing_lock")
def test_stats_say_whose_counters_and_who_holds_the_timing_lock(sgcc_exe):
    from sgcc.verify.timing.rounds import timing_lock

    out = _sgcc(sgcc_exe, "stats").stdout
    assert re.search(r"^timing lock +\S+timing\.lock \(free\)$", out, re.M), out
    flat = " ".join(out.split())
    assert "These counters are the cache directory's: every compile and run through" in flat
    assert "give it a cache of its own (SGCC_CACHE_DIR=DIR)" in flat
    with timing_lock():
        out = _sgcc(sgcc_exe, "stats").stdout
    assert re.search(rf"^timing lock +\S+ \(held: pid {os.getpid()} in ", out, re.M), out


def test_parallel_builds_charge_their_wall_time_to_the_share():
    """Builds run `jobs` at a time; charging each one's seconds spent a function's share jobs
    times over, and on a loaded machine a 120 s run timed nothing with 37 s left (issue 41)."""
    from types import SimpleNamespace

    from sgcc.candidates import Candidate
    from sgcc.engine.search import Search

    def evaluate(program, cand, sandbox, tests):
        time.sleep(0.4)
        res = CandidateResult(id=cand.origin, function="f", generator="g", seconds=0.4)
        res.stop(Stage.TIME, "")
        return res, Path("/bin/true")

    report = Report(source="p.c", flags=["-O3"], isa="x86-64", min_gain=0.03)
    search = Search(SimpleNamespace(), SimpleNamespace(evaluate=evaluate), None, None, [], report, jobs=2)
    budget = Budget(None, None, [SimpleNamespace(name="f")], None)
    t0 = time.perf_counter()
    built = search._build([("f", Candidate("f", "g", f"x{i}", origin=f"c{i}")) for i in range(2)], budget, [], {}, {})
    wall = time.perf_counter() - t0
    assert len(built) == 2
    assert budget.spent_s["f"] <= wall + 0.05 < 0.75  # the two ran side by side: about 0.4 s, not 0.8 s


def test_built_candidates_are_raced_while_a_timing_fits():
    """The check before a race asked for a whole candidate's cost, its build included: with
    18 s left, 9 built candidates were never timed (lcs, --budget 120s, issue 41)."""
    from types import SimpleNamespace

    from sgcc.engine.search import Search

    clock = [0.0]
    budget = Budget(120.0, None, [SimpleNamespace(name="f")], None, started=0.0, clock=lambda: clock[0])
    budget.begin_search()
    budget.record_build(12.0)
    budget.record_timing(9.0)
    clock[0] = 102.0  # 18 s left: a timing (9 s) fits, a whole candidate (12 + 9 s) does not
    search = Search.__new__(Search)
    search.program, search.sample_seconds = None, 0.5  # a first rung: 2 x 6 x 0.5 x 1.25 = 7.5 s, fits
    search.req, search.searched, search.report = SimpleNamespace(timing_rounds=20), {"f": True}, Report(
        source="p.c", flags=[], isa="x86-64", min_gain=0.03)
    notes: list[str] = []
    search.note = notes.append

    class Raced(Exception):
        pass

    def lock_waiter():
        raise Raced  # the race is about to start: that is all this test asks

    search.pipeline = SimpleNamespace(lock_waiter=lock_waiter)
    group = [("f", SimpleNamespace(generator="g"), _res(f"c00{i}", Stage.TIME), None) for i in (1, 2)]
    with pytest.raises(Raced):
        search._race(group, budget, {})
    assert notes == ["racing 2 candidates for f (successive halving)"]


@pytest.mark.usefixtures("private_timing_lock")
def test_a_search_timing_does_not_wait_for_the_lock_past_the_budget():
    """A race that found the lock busy waited 42.6 s for it with the budget spent, then timed
    nothing and ended 46 s over (lcs, --budget 120s, another developer timing): the wait is
    bounded by the budget left, and the candidates are said not timed, with who held the lock."""
    from types import SimpleNamespace

    from sgcc.engine.pipeline import Pipeline
    from sgcc.engine.search import Search

    with _lock_held_by_another_thread(30):
        budget = Budget(100.0, None, [SimpleNamespace(name="f")], None, started=time.perf_counter() - 98.5)
        budget.begin_search()
        report = Report(source="p.c", flags=[], isa="x86-64", min_gain=0.03)
        req = SimpleNamespace(timing_rounds=20, min_sample=0.05, seed=1, min_gain=0.03)
        search = Search(req, Pipeline(req), SimpleNamespace(binary=Path("/bin/true")), SimpleNamespace(worlds=[0]),
                        [object()], report, jobs=1)
        group = [("f", SimpleNamespace(generator="g"), _res(f"c00{i}", Stage.TIME), Path("/bin/true"))
                 for i in (1, 2)]
        t0 = time.perf_counter()
        search._race(group, budget, {})
        waited = time.perf_counter() - t0
    assert waited < 5  # the 1.5 s the budget had left, not the 30 s the lock was held
    assert [r.reason for _, _, r, _ in group] == ["not timed: search budget reached"] * 2
    assert report.notes[0].startswith(f"2 candidate(s) for f not timed: the timing lock was held by another run "
                                      f"(pid {os.getpid()} in ") and report.notes[0].endswith("until the budget ran out")


def test_a_cut_profile_says_which_tests_never_run_a_source(sgcc_exe, three_files, tmp_path):
    """With a small budget the profile (a tenth of it) covers the quickest test only: a source
    it never saw run is 'never run by the 1 quickest of the 2 tests', not 'by the tests', and
    is searched last, not skipped on the word of a profile that did not see every test."""
    cands = tmp_path / "cands"
    cands.mkdir()
    report = three_files / "r.json"
    r = _sgcc(sgcc_exe, "optimize", "main.c", "work.c", "cold.c", "-O2", "--tests", "tests", "-o", "out",
              "--generators", "replay", "--candidates", str(cands), "--report", str(report), "--no-cache",
              "--budget", "5s", cwd=three_files)
    assert r.returncode == 0, r.stderr
    import json

    data = json.loads(report.read_text())
    assert "the 1 quickest of the 2 tests (the profiled ones) never run the functions of cold.c, so searched last" \
        in data["notes"], data["notes"]
    assert "never run" not in data["skipped"].get("cold.c", ""), data["skipped"]
    assert any(n.startswith("profiled on the 1 quickest of the 2 tests") for n in data["notes"]), data["notes"]
