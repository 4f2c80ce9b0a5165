"""The search's bounds: the budget shared among functions, and timing comparisons that stop
early only when they can no longer succeed (never to accept)."""

from __future__ import annotations

import random

import pytest

from sgcc.engine.budget import Budget
from sgcc.verify.timing import rounds as timing


class _Unit:
    def __init__(self, name):
        self.name = name


def _runs(mean_a: float, mean_b: float, seed: int = 3):
    rng = random.Random(seed)
    return (lambda pad, world=0: mean_a * (1 + 0.01 * rng.random())), (lambda pad, world=0: mean_b * (1 + 0.01 * rng.random()))


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


class _Clock:
    """A clock the test moves by hand (the budget reads wall time)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_budget_shares_follow_the_profile_with_no_floor():
    units = [_Unit("hot"), _Unit("warm"), _Unit("cold")]
    clock = _Clock()
    budget = Budget(100.0, 10, units, {"hot": 0.8, "warm": 0.2, "cold": 1e-7}, started=clock.now, clock=clock)
    # Shares are the weights' fractions: no fixed floor for the cold function.
    assert abs(budget.share["hot"] - 0.8) < 1e-6 and budget.share["cold"] < 1e-6
    budget.begin_search()
    budget.reopen()
    for _ in range(8):
        assert budget.allows("hot")
        budget.count("hot")
    assert not budget.allows("hot")  # round(10 * 0.8) candidates of its own, the rest is claimed
    budget.record_build(1.0)
    budget.record_timing(9.0)  # a candidate costs about 10 s now
    # The cold function's share (1e-5 s) buys nothing; the hot and warm ones still claim theirs.
    assert not budget.time_left("cold") and budget.exhausted
    assert budget.time_left("warm")
    budget.spend("warm", 25.0)  # more than its 20 s
    assert not budget.time_left("warm") and budget.time_left("hot")
    # The hot function is done, 30 s spent of its 80: the rest is slack anyone may use.
    budget.spend("hot", 30.0)
    budget.finish("hot")
    assert budget.time_left("cold") and budget.time_left("warm")


def test_budget_is_wall_time_from_the_start_and_keeps_a_reserve():
    clock = _Clock()
    started = clock.now
    clock.now += 30.0  # baseline, tests, profile: before the search
    budget = Budget(100.0, None, [_Unit("f")], {"f": 1.0}, started=started, clock=clock)
    budget.begin_search()
    budget.reopen()
    assert budget.overhead == 30.0 and budget.search_seconds() == 70.0
    budget.record_timing(10.0)
    budget.record_timing(4.0, full=8.0)  # stopped halfway: a full one would take about 8 s
    assert budget.timing_cost() == 10.0 and budget.reserve() == 0.0  # no winner: nothing reserved
    assert budget.candidate_cost() == 7.0
    budget.winners = budget.combinable = 1  # one function to confirm: its re-measurement validates it alone
    assert budget.reserve() == 10.0
    budget.winners = budget.combinable = 2  # two to confirm, plus their combination: three timings
    assert budget.reserve() == 30.0
    budget.combinable = 1  # one of them replaces the whole unit: never combined
    assert budget.reserve() == 20.0
    budget.winners = budget.combinable = 1
    budget.record_timing(5.0, full=20.0)  # the slowest (full-length equivalent) sets the reserve
    assert budget.reserve() == 20.0 and budget.search_seconds() == 50.0
    clock.now += 45.0
    assert budget.time_left("f", cost=1.0)
    clock.now += 6.0  # 81 s elapsed + 20 s reserve > 100 s
    assert not budget.time_left("f", cost=1.0) and budget.exhausted
    assert abs(budget.left() - 19.0) < 1e-9
    assert "stopped 81.0 s into the run, 30.0 s of them before it began" in budget.spent_summary()


def test_building_stops_at_half_the_round():
    clock = _Clock()
    budget = Budget(100.0, None, [_Unit("f")], None, started=clock.now, clock=clock)
    budget.begin_search()
    budget.reopen()
    clock.now += 49.0
    assert budget.building_allowed()
    clock.now += 2.0
    assert not budget.building_allowed() and budget.exhausted


def test_cold_function_gets_candidates_only_from_slack():
    budget = Budget(None, 10, [_Unit("hot"), _Unit("cold")], {"hot": 0.99, "cold": 0.01})
    assert not budget.allows("cold")  # round(10 * 0.01) = 0 of its own, and hot claims its 10
    for _ in range(4):
        budget.count("hot")
    budget.finish("hot")  # hot wanted only 4: 6 are slack
    assert budget.allows("cold")


def test_unbounded_budget_allows_everything():
    budget = Budget(None, None, [_Unit("f")], None)
    for _ in range(100):
        budget.count("f")
        budget.spend("f", 10.0)
    assert budget.allows("f") and budget.time_left("f") and not budget.exhausted


def test_futile_comparison_is_checked_again_every_few_rounds():
    # B looks a little faster for the first rounds (the first look cannot rule it out),
    # then clearly slower: a later look stops it before the last round, and rejects.
    calls = {"b": 0}

    def run_a(pad, world=0):
        return 0.1

    def run_b(pad, world=0):
        calls["b"] += 1
        return 0.09 if calls["b"] <= 10 else 0.2

    est = timing.measure(run_a, run_b, rounds=20, min_sample_seconds=0.05, seed=1, lock=False, futile_below=1.03)
    assert est.rounds in (8, 11, 14, 17), est.rounds
    assert not timing.decide(est)


def test_screening_stops_a_clear_winner_early_but_a_re_measurement_never_does():
    run_a, run_b = _runs(0.1, 0.05)  # B is twice as fast
    est = timing.measure(run_a, run_b, rounds=20, min_sample_seconds=0.05, seed=1, lock=False,
                         futile_below=1.03, settled_above=1.03)
    assert est.rounds == timing.FUTILE_FIRST and timing.decide(est)
    run_a, run_b = _runs(0.1, 0.05)
    assert timing.measure(run_a, run_b, rounds=20, min_sample_seconds=0.05, seed=1, lock=False).rounds == 20


def test_full_length_of_a_timing_that_stopped_early():
    from sgcc.engine.search import full_length

    est = timing.Estimate(speedup=1.2, low=1.1, high=1.3, rounds=5, reps=1, samples_a=[0.1] * 5, samples_b=[0.08] * 5,
                          round_seconds=2.5)
    # 15 rounds skipped, 0.5 s of wall time each (the 0.5 s of warm-up and calibration once).
    assert full_length(3.0, est, 20) == pytest.approx(3.0 + 15 * 0.5)
    assert full_length(3.0, est, 5) == 3.0
    est.lock_wait = 1.0  # waiting for another sgcc's timing is not what a timing costs
    assert full_length(3.0, est, 20) == pytest.approx(2.0 + 15 * 0.5)


def test_confirmation_gets_the_rounds_the_time_left_allows():
    clock = _Clock()
    budget = Budget(200.0, None, [_Unit("f")], {"f": 1.0}, started=clock.now, clock=clock, confirm_factor=1.0)
    budget.begin_search()
    assert budget.confirm_rounds(20, 1) == 20  # nothing timed yet: no cost known
    budget.record_timing(10.0)  # a 20-round timing: 0.5 s a round
    clock.now += 150.0  # 50 s left
    # One confirmation: 0.8 * 50 s / 0.5 s = 80 rounds, the cap (4 x 20).
    assert budget.confirm_rounds(20, 1) == 80
    # Two still to come (a second function, or a combination): 40 each.
    assert budget.confirm_rounds(20, 2) == 40
    clock.now += 40.0  # 10 s left: never fewer than the setting's rounds
    assert budget.confirm_rounds(20, 1) == 20
    assert Budget(None, None, [_Unit("f")], None).confirm_rounds(20, 1) == 20  # unbounded: the setting
