"""The papers' metrics and sgcc's honest figures, on small cases checked by hand."""

import math
import random
import statistics

import pytest

from sgcc.engine import CandidateResult, figures
from sgcc.lab import metrics


def cand(stage, speedup=None, id="c1"):
    c = CandidateResult(id=id, function="f", generator="replay")
    c.stage, c.speedup = stage, speedup
    return c


def test_quantile_odd_count():
    # sorted 1, 2, 3, 4, 10: h = 4q. q=.25 -> h=1 -> 2; q=.5 -> 3; q=.75 -> h=3 -> 4.
    xs = [10, 1, 3, 2, 4]
    assert metrics.quantile(xs, 0.25) == 2
    assert metrics.quantile(xs, 0.5) == 3
    assert metrics.quantile(xs, 0.75) == 4
    assert metrics.quantile(xs, 0.0) == 1 and metrics.quantile(xs, 1.0) == 10


def test_quantile_even_count_interpolates():
    # sorted 1, 2, 4, 8: h = 3q. q=.25 -> h=.75 -> 1 + .75*(2-1) = 1.75;
    # q=.5 -> h=1.5 -> 2 + .5*(4-2) = 3; q=.75 -> h=2.25 -> 4 + .25*(8-4) = 5.
    xs = [8, 4, 2, 1]
    assert metrics.quantile(xs, 0.25) == pytest.approx(1.75)
    assert metrics.quantile(xs, 0.5) == pytest.approx(3.0)
    assert metrics.quantile(xs, 0.75) == pytest.approx(5.0)
    # The same as statistics' inclusive method (numpy's default), on other data too.
    rng = random.Random(5)
    for n in (2, 3, 7, 10):
        ys = [rng.uniform(0.5, 3.0) for _ in range(n)]
        assert [metrics.quantile(ys, q) for q in (0.25, 0.5, 0.75)] == pytest.approx(
            statistics.quantiles(ys, n=4, method="inclusive"))


def test_quantile_single_value_and_errors():
    assert metrics.quantile([1.3], 0.25) == 1.3
    with pytest.raises(ValueError):
        metrics.quantile([], 0.5)


def test_problem_figures_best_correct_candidate_clipped():
    cs = [cand("assemble", id="c1"), cand("test", id="c2"), cand("time", 0.9, id="c3"),
          cand("accepted", 1.25, id="c4"), cand("time", 1.1, id="c5")]
    # c4 is the best correct one: 1.25.
    assert figures.problem_figures(cs) == {"compiled": True, "passed": True, "speedup": 1.25}


def test_problem_figures_slower_correct_clips_to_one():
    # Correct but slower (0.8): the papers fall back to gcc's program, speedup 1.
    assert figures.problem_figures([cand("time", 0.8)]) == {"compiled": True, "passed": True, "speedup": 1.0}


def test_problem_figures_failures():
    # Assembled and linked but failed a test: compiled, not passed.
    assert figures.problem_figures([cand("test")]) == {"compiled": True, "passed": False, "speedup": 1.0}
    # Never assembled, and a skipped one that was never built (id "-") counts for nothing,
    # even with a stage that would count.
    assert figures.problem_figures([cand("assemble"), cand("time", 2.0, id="-")]) == \
        {"compiled": False, "passed": False, "speedup": 1.0}
    assert figures.problem_figures([]) == {"compiled": False, "passed": False, "speedup": 1.0}
    # Dicts (a report's JSON) work too.
    assert figures.problem_figures([{"id": "c1", "stage": "accepted", "speedup": 1.5}])["speedup"] == 1.5


def test_paper_row_hand_checked():
    problems = [
        {"compiled": True, "passed": True, "speedup": 1.5},
        {"compiled": True, "passed": False, "speedup": 1.0},
        {"compiled": False, "passed": False, "speedup": 1.0},
        {"compiled": True, "passed": True, "speedup": 0.7},  # clipped to 1
    ]
    row = metrics.paper_row(problems)
    # compiled 3/4 = 75%, passed 2/4 = 50%; speeds 1, 1, 1, 1.5: p25 = 1 (h=.75 between 1 and 1),
    # p50 = 1 (h=1.5 between 1 and 1), p75 = h=2.25: 1 + .25*(1.5-1) = 1.125; mean 4.5/4 = 1.125.
    assert row["compile_pass"] == 75.0 and row["test_pass"] == 50.0
    assert row["compiled"] == 3 and row["passed"] == 2 and row["problems"] == 4
    assert (row["p25"], row["p50"]) == (1.0, 1.0)
    assert row["p75"] == pytest.approx(1.125)
    assert row["average"] == pytest.approx(1.125)


def test_paper_row_odd_count_ties():
    problems = [{"compiled": True, "passed": True, "speedup": s} for s in (1.2, 1.2, 2.0)]
    row = metrics.paper_row(problems)
    # sorted 1.2, 1.2, 2.0: h = 2q; p25 = h .5 -> 1.2; p50 = 1.2; p75 = h 1.5 -> 1.2 + .5*.8 = 1.6;
    # mean 4.4/3.
    assert row["p25"] == pytest.approx(1.2) and row["p50"] == pytest.approx(1.2)
    assert row["p75"] == pytest.approx(1.6)
    assert row["average"] == pytest.approx(4.4 / 3)


def test_paper_row_all_failed_and_single_and_empty():
    row = metrics.paper_row([{"compiled": False, "passed": False, "speedup": 1.0}] * 3)
    assert row["compile_pass"] == 0.0 and row["test_pass"] == 0.0
    assert row["p25"] == row["p50"] == row["p75"] == row["average"] == 1.0
    one = metrics.paper_row([{"compiled": True, "passed": True, "speedup": 1.3}])
    assert one["compile_pass"] == 100.0 and one["p25"] == one["p75"] == one["average"] == 1.3
    assert metrics.paper_row([])["average"] is None


def test_honest_row_unclipped_geomean_and_significance():
    problems = [
        {"honest": {"speedup": 2.0, "ci_low": 1.8, "ci_high": 2.2, "functions": ["f"]}},
        {"honest": {"speedup": 0.5, "ci_low": 0.45, "ci_high": 0.55, "functions": ["g"]}},  # unclipped
        {"honest": {"speedup": 1.0, "ci_low": 1.0, "ci_high": 1.0, "functions": []}},
        {"honest": {"speedup": 1.02, "ci_low": 1.01, "ci_high": 1.03, "functions": ["h"]}},
    ]
    row = metrics.honest_row(problems, min_gain=0.03)
    # geomean(2, .5, 1, 1.02) = (1.02)^(1/4)
    assert row["geomean"] == pytest.approx(1.02 ** 0.25)
    # The problems differ, so the bootstrap interval has width on both sides.
    assert row["ci_low"] < row["geomean"] < row["ci_high"]
    # Only the first clears 1.03 with its lower bound; three shipped something.
    assert row["significant"] == 1 and row["significant_share"] == 25.0 and row["shipped"] == 3


def test_honest_row_single_problem():
    row = metrics.honest_row([{"honest": {"speedup": 1.5, "ci_low": 1.4, "ci_high": 1.6, "functions": ["f"]}}])
    assert row["geomean"] == pytest.approx(1.5) and row["ci_low"] == row["ci_high"] == pytest.approx(1.5)


def test_bootstrap_interval_is_wider_for_spread_values():
    tight = metrics.bootstrap_geomean([1.0, 1.01, 0.99, 1.0, 1.02, 0.98])
    wide = metrics.bootstrap_geomean([0.5, 2.0, 0.6, 1.8, 1.0, 1.1])
    assert tight[2] / tight[1] < wide[2] / wide[1]
    assert math.isclose(metrics.geomean([4.0, 1.0]), 2.0)


def test_noise_floor():
    ests = [{"speedup": 1.01, "low": 0.99, "high": 1.03, "papers": 1.10},
            {"speedup": 0.98, "low": 0.95, "high": 1.00, "papers": 0.90},
            {"speedup": 1.06, "low": 1.04, "high": 1.08, "papers": 1.00}]
    nf = metrics.noise_floor(ests, 0.03)
    # median of 0.98, 1.01, 1.06 = 1.01; max 1.06; one lower bound (1.04) above 1.03.
    assert nf["median"] == pytest.approx(1.01) and nf["max"] == pytest.approx(1.06)
    assert nf["accepted"] == 1 and nf["accepted_share"] == pytest.approx(100 / 3)
    # Papers' clipped mean: (1.10 + 1 + 1) / 3.
    assert nf["papers_clipped_mean"] == pytest.approx(3.10 / 3)
    assert metrics.noise_floor([]) == {"pairs": 0}


def test_curves_best_of_n_and_rounds():
    # Problem A: sample 1 wrong, sample 2 1.2x, sample 3 1.5x; round 1 sample 1 gives 2.0x.
    # Problem B: sample 1 0.9x (correct, slower), nothing else.
    a = [(1, 0, None), (2, 0, 1.2), (3, 0, 1.5), (1, 1, 2.0)]
    b = [(1, 0, 0.9)]
    pts = metrics.curve([a, b], [1, 2, 4], by="sample")
    # N=1: A best 1 (wrong), B 1 -> avg 1, pass: B only (50%). N=2: A 1.2 -> avg 1.1, 100%.
    # N=4: A 1.5 -> avg 1.25.
    assert [p["average"] for p in pts] == pytest.approx([1.0, 1.1, 1.25])
    assert [p["pass"] for p in pts] == [50.0, 100.0, 100.0]
    assert [p["attempts"] for p in pts] == [2, 3, 4]
    rounds = metrics.curve([a, b], [0, 1], by="round")
    # Round 0: A 1.5 -> 1.25; round <= 1: A 2.0 -> 1.5.
    assert [p["average"] for p in rounds] == pytest.approx([1.25, 1.5])
