"""A slow test command's profile is capped and still used (real valgrind, the isolated
runner): callgrind dumps its counts as it goes, so a run stopped at the limit still says
which functions ran. Before, a profile ran up to 30 minutes with nothing shown."""

from __future__ import annotations

import os
import shutil

import pytest

from sgcc import proc
from sgcc.project import attribute, workload
from sgcc.project.optimize import expected_duration
from sgcc.project.plan import profile_cap
from sgcc.verify.box.sandbox import Sandbox

SLOW = r"""
#include <stdio.h>
__attribute__((noinline)) unsigned long step(unsigned long x) { return x * 6364136223846793005ul + 1442695040888963407ul; }
int main(void) { unsigned long x = 1; for (;;) { x = step(x); if (x == 42) break; } printf("%lu\n", x); return 0; }
"""


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_a_profile_cut_at_its_limit_still_names_what_ran():
    import tempfile
    from pathlib import Path

    tmp_path = Path(tempfile.mkdtemp(prefix="sgcc-test-cap-"))  # reachable by the box's user
    try:
        _cut_profile(tmp_path)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _cut_profile(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "slow.c").write_text(SLOW)
    proc.run(["gcc", "-O2", "-o", str(tree / "slow"), str(tree / "slow.c")], check=True, timeout=120)
    os.chmod(tmp_path, 0o755)
    workload.hand_over(tree)
    with Sandbox(timeout=60, expose=workload.expose) as sb:
        costs = attribute.profile(sb, workload.launcher(tree, "bench", ["./slow"]), tmp_path / "prof",
                                  timeout=8, partial=True)
        assert costs is not None and attribute.was_partial(costs)
        assert any(fn == "step" and ir > 0 for (_ob, fn), ir in costs.items()), sorted(costs)[:10]
        # Without partial, a run stopped at its limit is no profile.
        assert attribute.profile(sb, workload.launcher(tree, "bench", ["./slow"]), tmp_path / "prof2",
                                 timeout=4) is None


def test_the_budget_is_said_before_any_work():
    assert "about 9 min (--budget)" in expected_duration(540)
    assert "5 min + 2 min per source" in expected_duration(None) and "at most 30 min" in expected_duration(None)
    # What comes before the default budget is fixed is bounded on its own, and said first.
    assert "two profiles (each at most 108 s: profile_timeout)" in expected_duration(None)
    assert profile_cap(540) == pytest.approx(108) and profile_cap(None) == pytest.approx(108)
    assert profile_cap(60) == 60
    # The test profile's limit is a setting (brotli and cmark both hit the old fixed one).
    assert profile_cap(None, 400) == 400 and profile_cap(540, 30) == 30


def test_the_budget_bounds_what_follows_it_and_its_timings_fit_what_is_left():
    """Lua: 32.3 min against a 30-minute default, fixed 213 s into the run; the final and
    reference timings took their full rounds whatever was left."""
    import time

    from sgcc.project.budget import FEWEST_ROUNDS, ProjectBudget

    b = ProjectBudget.choose(None, [], build_seconds=10, test_seconds=2, workload_seconds=0.5, rounds=20)
    # Kept back: the final rebuild, tests and timing; the reference's build and two timings.
    assert b.total == 300 and b.reserve == pytest.approx(10 * 1.2 + 2 + 23 + 10 + 46 + 30)
    b.start(time.monotonic())  # the default counts from when it is fixed
    assert b.remaining() == pytest.approx(300, abs=1) and b.over() == 0
    assert b.rounds(20, timings=3) == 20  # 3 timings of 23 rounds of 1 s fit 300 s
    b.start(time.monotonic() - 250)  # 50 s left: 50 / 2 - 3 = 22 -> 20; 50 / 3 - 3 = 13
    assert b.rounds(20, timings=2) == 20 and b.rounds(20, timings=3) == 13
    b.start(time.monotonic() - 292)  # 8 s left: never under the floor
    assert b.rounds(20, timings=2) == FEWEST_ROUNDS
    b.start(time.monotonic() - 310)
    assert b.over() == pytest.approx(10, abs=1)
    # A long workload cannot reserve more than half the budget.
    assert ProjectBudget.choose(600, [], 10, 2, workload_seconds=60).reserve == 300


def test_built_whole_project_candidates_are_raced_past_their_share_before_the_references_get_spare_rounds():
    """wren, ``--budget 6m``: PGO everywhere and PGO + LTO built in the whole-project share,
    then "no time for the race" (the share could not hold the race and full confirmations),
    then the references timed the same builds for 85 s (PGO + LTO 1.14x), and gcc's build
    shipped with 1.6 minutes of the budget unused. Decisions come before figures."""
    import time

    from sgcc.project.adopt import CONFIRM_FEWEST, WHOLE_SHARE, confirm_rounds, race_affordable
    from sgcc.project.budget import FEWEST_ROUNDS, ProjectBudget

    b = ProjectBudget.choose(360, [], build_seconds=8.9, test_seconds=3.3, workload_seconds=0.78, rounds=20)
    # The references' two timings at the fewest rounds instead of the 20 wanted, a round being
    # two runs of the workload: what the whole-project decisions may take from the reserve.
    assert b.spare == pytest.approx(2 * (20 - FEWEST_ROUNDS) * 2 * 0.78)
    b.start(time.monotonic() - 175)  # the race is due 175 s into the run
    assert b.for_decisions() == pytest.approx(b.left() + b.spare, abs=0.1)
    share_left = WHOLE_SHARE * 360 - 60  # building the two candidates took 60 s of the share
    confirmations = 2  # the winner against PGO everywhere, then against gcc's build
    # A first rung of 6 rounds for both candidates and two confirmations of 40 rounds do not
    # fit the share; with the confirmations cut to the floor, they fit the time for decisions.
    assert not race_affordable(2, 6, 0.78, share_left=share_left, decisions_left=0, rounds=40,
                               confirmations=confirmations)
    assert race_affordable(2, 6, 0.78, share_left=share_left, decisions_left=b.for_decisions(), rounds=40,
                           confirmations=confirmations)
    assert b.left() < 6 * 3 * 0.78 + confirmations * 2 * CONFIRM_FEWEST * 0.78  # the search's time alone would not
    # Within the share the full confirmations are kept: the race stops where they would not fit.
    assert race_affordable(2, 6, 0.78, share_left=200, decisions_left=0, rounds=40, confirmations=2)
    assert not race_affordable(4, 24, 0.78, share_left=200, decisions_left=0, rounds=40, confirmations=2)
    # Confirmations take the rounds wanted, or those that fit, never fewer than the floor.
    assert confirm_rounds(40, 1000, 0.78) == 40
    assert confirm_rounds(40, 60, 0.78) == int(60 / 1.56) - 3
    assert confirm_rounds(40, 30, 0.78, timings=2) == CONFIRM_FEWEST


def test_project_entries_are_dated():
    """`sgcc cache list` showed '?' for 30 of 36 entries: those project mode wrote."""
    from sgcc.project.store import _applying

    assert _applying("x.c", None, None).updated[:2] == "20"
