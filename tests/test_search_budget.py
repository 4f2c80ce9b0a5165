"""The search's bounds: the budget shared among functions, and timing comparisons that stop
early only when they can no longer succeed (never to accept)."""

from __future__ import annotations

import random

from sgcc.engine.budget import Budget
from sgcc.verify import timing


class _Unit:
    def __init__(self, name):
        self.name = name


def _runs(mean_a: float, mean_b: float, seed: int = 3):
    rng = random.Random(seed)
    return (lambda pad: mean_a * (1 + 0.01 * rng.random())), (lambda pad: mean_b * (1 + 0.01 * rng.random()))


def test_futile_comparison_stops_halfway_and_rejects():
    run_a, run_b = _runs(0.1, 0.12)  # B is slower
    est = timing.measure(run_a, run_b, rounds=10, min_sample_seconds=0.05, seed=1, lock=False, futile_below=1.03)
    assert est.rounds == 5 and est.high < 1.03 and not timing.decide(est)


def test_promising_comparison_runs_every_round():
    run_a, run_b = _runs(0.1, 0.05)  # B is twice as fast
    est = timing.measure(run_a, run_b, rounds=10, min_sample_seconds=0.05, seed=1, lock=False, futile_below=1.03)
    assert est.rounds == 10 and timing.decide(est)
    # Without the option nothing changes.
    run_a, run_b = _runs(0.1, 0.12)
    assert timing.measure(run_a, run_b, rounds=10, min_sample_seconds=0.05, seed=1, lock=False).rounds == 10


def test_budget_shares_follow_the_profile():
    units = [_Unit("hot"), _Unit("warm"), _Unit("cold")]
    budget = Budget(100.0, 10, units, {"hot": 0.8, "warm": 0.15, "cold": 0.05})
    # At least half an equal share each; the hottest gets most.
    assert budget.share["hot"] == 0.8 and abs(budget.share["cold"] - 0.5 / 3) < 1e-9
    for _ in range(8):
        assert budget.allows("hot")
        budget.count("hot")
    assert not budget.allows("hot")  # round(10 * 0.8) candidates for it
    assert budget.allows("warm")
    budget.spend("warm", 20.0)  # more than its share of the seconds
    assert not budget.time_left("warm") and budget.time_left("cold")
    budget.overhead = 80.0  # preparation counts against the program's seconds
    assert not budget.time_left("cold") and budget.exhausted
    assert "preparation 80.0 s" in budget.spent_summary()


def test_unbounded_budget_allows_everything():
    budget = Budget(None, None, [_Unit("f")], None)
    for _ in range(100):
        budget.count("f")
        budget.spend("f", 10.0)
    assert budget.allows("f") and budget.time_left("f") and not budget.exhausted
