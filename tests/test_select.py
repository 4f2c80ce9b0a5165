"""Selection after the search: when the combination of winners is not confirmed, the next
most promising combinations are tried while the budget lasts, and only a combination that
was validated and timed after the search is ever shipped.

The end-to-end tests build, test and run everything for real (gcc, as, the sandbox); only
the timing *decision* is a fake, so the test can say which measurement fails (no timing
assertions in unit tests)."""

from __future__ import annotations

import shutil
from pathlib import Path

from sgcc import proc
from sgcc.asm.units import AsmFile
from sgcc.candidates import Candidate
from sgcc.candidates.replay import ReplayGenerator
from sgcc.engine import Request
from sgcc.engine.driver import Engine
from sgcc.engine.report import CandidateResult
from sgcc.engine.select import combinations
from sgcc.stages import Stage
from sgcc.verify.timing.rounds import Estimate
from tests.conftest import EXAMPLES, TIMING_SAMPLE_SECONDS

COLLATZ = EXAMPLES / "programs" / "collatz"


def _winner(fn: str, speedup: float, confirmed: float | None = None, text: str = "x"):
    res = CandidateResult(id=f"{fn}-{speedup}", function=fn, generator="g")
    res.stage, res.speedup = Stage.ACCEPTED, speedup
    if confirmed is not None:
        res.confirm = {"speedup": confirmed}
    return res, Path("/nonexistent"), Candidate(function=fn, text=f"{fn}:{text}:{speedup}", generator="g")


def test_combinations_start_with_every_confirmed_winner_then_degrade():
    f1, f2 = _winner("f", 1.30, confirmed=1.20), _winner("f", 1.25)
    g1 = _winner("g", 1.10, confirmed=1.05)
    confirmed = {"f": f1, "g": g1}
    winners = {"f": [f1, f2], "g": [g1]}
    combos = [[r.id for r, _, _ in c] for c in combinations(confirmed, winners)]
    assert combos[0] == ["f-1.3", "g-1.1"]  # all confirmed winners together first
    assert ["f-1.3"] in combos  # the weakest member dropped
    assert ["f-1.25", "g-1.1"] in combos  # f's next-best candidate instead
    assert len(combos) == len({tuple(c) for c in combos})  # each tried once


def test_combinations_never_use_a_candidate_that_failed_its_re_measurement():
    f1, f2 = _winner("f", 1.30), _winner("f", 1.25)
    f1[0].stop(Stage.TIME, "not confirmed on fresh rounds")
    combos = combinations({}, {"f": [f1, f2]})
    assert [[r.id for r, _, _ in c] for c in combos] == [["f-1.25"]]


def test_a_whole_unit_candidate_is_never_combined():
    whole = _winner("<translation-unit>", 1.4, confirmed=1.3)
    f1 = _winner("f", 1.2, confirmed=1.1)
    combos = combinations({"<translation-unit>": whole, "f": f1}, {})
    assert all(len(c) == 1 for c in combos) and len(combos) == 2


class _FakeTiming:
    """Decides measurements by where the binary was built: search candidates are accepted
    (the cmov variant looks best); their re-measurement is accepted when ``confirm_ok``; a
    combination (built after the search) is rejected the first ``reject_combined`` times."""

    def __init__(self, reject_combined: int, confirm_ok: bool = True):
        self.reject_combined, self.confirm_ok = reject_combined, confirm_ok
        self.searched: set[Path] = set()
        self.combined: list[Path] = []

    def __call__(self, sandbox, tests, base, cand, *, screening=False, rounds=None):
        cand = Path(cand)
        if screening:
            self.searched.add(cand)
            text = cand.parent.joinpath("cand.s").read_text()
            speedup = 1.3 if "\tcmovc\t" in text else 1.2
        elif cand in self.searched:
            speedup = 1.25 if self.confirm_ok else 1.0
        else:
            self.combined.append(cand)
            speedup = 1.0 if len(self.combined) <= self.reject_combined else 1.2
        est = Estimate(speedup=speedup, low=speedup - 0.05, high=speedup + 0.05, rounds=8, reps=1,
                       samples_a=[1.0], samples_b=[1.0])
        return est.low > 1.03, est


def _candidates(tmp_path: Path) -> Path:
    """collatz's two variants of collatz_steps, and one for main: gcc's own with a nop (a
    real, harmless change), so that two functions have winners to combine."""
    d = tmp_path / "cands"
    shutil.copytree(COLLATZ / "candidates", d)
    asm = proc.run(["gcc", "-O3", "-S", "-o", "-", str(COLLATZ / "collatz.c")], check=True).stdout.decode()
    main = AsmFile.parse(asm).unit("main").text
    (d / "main.s").write_text(main.replace("main:\n", "main:\n\tnop\n", 1))
    return d


def _run(tmp_path, reject_combined: int, confirm_ok: bool = True, **kw):
    req = Request(source=COLLATZ / "collatz.c", flags=["-O3"], tests=COLLATZ / "tests", output=tmp_path / "out",
                  generators=[ReplayGenerator(_candidates(tmp_path))], seed=1, timing_rounds=8, min_sample=TIMING_SAMPLE_SECONDS,
                  mutants=0, race=False, **kw)  # each candidate timed alone: the fake decides each
    engine = Engine(req)
    fake = _FakeTiming(reject_combined, confirm_ok)
    engine.pipeline.measure = fake
    try:
        report = engine.run()
    finally:
        engine.close()
    return report, fake


def _passes_tests(binary: Path) -> bool:
    for t in sorted((COLLATZ / "tests").glob("*.in")):
        r = proc.run([str(binary)], stdin=t.read_bytes(), timeout=30)
        expected = t.with_suffix(".out")
        if r.returncode != 0 or (expected.is_file() and r.stdout != expected.read_bytes()):
            return False
    return True


def _ids(report, fn_origin: str) -> set[str]:
    return {c.id for c in report.candidates if fn_origin in c.origin}


def test_a_failed_combination_falls_back_to_the_next_best_candidate(tmp_path):
    report, fake = _run(tmp_path, reject_combined=1)
    accepted = [c for c in report.candidates if c.stage == Stage.ACCEPTED]
    assert len(accepted) == 3, [(c.id, c.origin, c.stage, c.reason) for c in report.candidates]
    outcomes = [e["outcome"] for e in report.selection]
    assert outcomes == ["not significantly faster", "shipped"]
    first, second = report.selection
    # First every confirmed winner together; then collatz_steps' other accepted candidate
    # with main, never the combination that just failed.
    assert sorted(first["functions"]) == sorted(second["functions"]) == ["collatz_steps", "main"]
    assert set(second["candidates"]) & _ids(report, "shortcut") and first["candidates"] != second["candidates"]
    assert report.shipped == second["candidates"] and len(fake.combined) == 2
    assert report.final is not None and report.final["speedup"] == 1.2
    assert _passes_tests(tmp_path / "out")


def test_a_single_confirmed_winner_ships_on_its_re_measurement(tmp_path):
    report, fake = _run(tmp_path, reject_combined=99)
    # Every combination of two is rejected; one candidate alone, confirmed on fresh rounds,
    # needs no third timing.
    assert [e["outcome"] for e in report.selection][-1] == "shipped (its re-measurement on fresh rounds)"
    assert all(e["outcome"] == "not significantly faster" for e in report.selection[:-1])
    assert len(fake.combined) == len(report.selection) - 1 >= 1
    assert len(report.shipped) == 1 and report.final["speedup"] == 1.25
    assert _passes_tests(tmp_path / "out")


def test_when_nothing_is_confirmed_the_baseline_ships(tmp_path):
    report, fake = _run(tmp_path, reject_combined=99, confirm_ok=False)
    assert report.shipped == [] and report.final is None and fake.combined == []
    assert _passes_tests(tmp_path / "out")
    assert "shipped the baseline" in report.summary()


def test_the_budget_gives_a_cold_function_nothing_and_the_summary_says_so(tmp_path):
    # Two candidates in all: collatz_steps (nearly all the instructions) takes both; main,
    # which the tests barely run, gets none of its own and no slack is left.
    report, _ = _run(tmp_path, reject_combined=0, budget_candidates=2)
    assert report.weights["collatz_steps"] > 0.5 > report.weights["main"] > 0
    built = [c for c in report.candidates if c.id != "-"]
    assert {c.function for c in built} == {"collatz_steps"} and len(built) == 2
    cut = report.budget["cut"]
    assert cut["unsearched"] == ["main"] and cut["cut_short"] == [] and report.budget["timed"] == 2
    summary = report.summary()
    assert "budget 2 candidates" in summary and "budget: not searched: main" in summary
