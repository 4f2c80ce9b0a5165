"""One wall-time budget for a whole project, shared among its sources by weight.

``--budget`` is fixed before any work and bounds the whole run, from its first second. The
default, 5 minutes plus 2 per source to search (those holding the hottest functions that
cover the set share of the workload), at most 30, can only be known once the workload is
profiled: it is fixed then and bounds what follows it (the whole-project candidates, the
search, the final rebuild and timing, the references); what comes before it is bounded on
its own and said before it starts (the recording build by ``build_timeout``, the test
command by ``test_timeout``, each profile by ``profile_timeout``). Either way the budget is
fixed before the work it bounds.

What the final rebuild, its tests and the workload's timing will take, and the PGO-everywhere
reference (one more build and its timings), is kept back from the search (:attr:`reserve`),
estimated from the recorded build, the first test run and the workload's first run; those
timings then take the rounds the time left allows (:meth:`rounds`). Each source gets the time
left times its share of the weight left, so a source that ends early leaves its time to the
next ones, and the hottest are searched first.

Decisions before figures: the whole-project race and its confirmations decide what ships, the
references only say what else could have shipped. So the race may take, beyond its share, the
search's time and the part of the reserve the references would spend on rounds past
:data:`FEWEST_ROUNDS` (:meth:`for_decisions`): a reference timed on fewer rounds has a wider
interval, a whole-project candidate built and never timed is a gain thrown away (wren with
``--budget 6m``: PGO + LTO built, then "no time for the race", then the references timed the
same build for 85 s, 1.14x, and gcc's build shipped with 1.6 minutes of the budget unused).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sgcc.project.plan import Target

#: Default budget: a base and a per-source part, and the most it may be (seconds).
BASE, PER_SOURCE, MOST = 300.0, 120.0, 1800.0
#: A source is not started with less than this left.
LEAST = 30.0
#: Fewest rounds a timing after the search takes, whatever the budget says.
FEWEST_ROUNDS = 6
#: Most of the budget kept back for what follows the search.
MOST_RESERVED = 0.5


class ProjectBudget:
    """Seconds for each source's search (see the module docstring)."""

    def __init__(self, total: float, rule: str, reserve: float, weight: float):
        self.total, self.rule, self.reserve = total, rule, reserve
        self.weight_left = weight
        self.started = time.monotonic()
        self.workload_seconds = 0.0
        #: Seconds of :attr:`reserve` the references would spend on rounds past FEWEST_ROUNDS.
        self.spare = 0.0

    @classmethod
    def choose(cls, given: float | None, plan: list[Target], build_seconds: float,
               test_seconds: float, workload_seconds: float = 0.0, rounds: int = 20) -> ProjectBudget:
        """The budget ``given`` (``--budget``), or the default for this plan."""
        if given:
            total, rule = float(given), "--budget"
        else:
            total = min(MOST, BASE + PER_SOURCE * len(plan))
            rule = f"default: 5 min + 2 min x {len(plan)} source(s), at most 30 min"
        # Kept back: the final rebuild (a clean build from the cache), its tests and its timing;
        # the PGO-everywhere reference's build (as long as a recorded build) and its two timings.
        per_round = 2 * max(workload_seconds, 0.05)
        timing = (rounds + 3) * per_round
        reserve = 1.2 * build_seconds + test_seconds + timing + build_seconds + 2 * timing + 30.0
        budget = cls(total, rule, min(reserve, MOST_RESERVED * total), sum(t.weight for t in plan))
        budget.workload_seconds = workload_seconds
        # The references' two timings at the fewest rounds instead of the rounds wanted.
        budget.spare = min(budget.reserve, 2 * max(0, rounds - FEWEST_ROUNDS) * per_round)
        return budget

    def start(self, started: float) -> None:
        """Count from ``started`` (a ``time.monotonic()`` value: the run's beginning)."""
        self.started = started

    def left(self) -> float:
        """Seconds left for the search (the reserve kept back)."""
        return self.total - self.reserve - (time.monotonic() - self.started)

    def for_decisions(self) -> float:
        """Seconds the whole-project race and its confirmations may still take: the search's
        time left and the reserve's :attr:`spare` (see the module docstring)."""
        return self.left() + self.spare

    def remaining(self) -> float:
        """Seconds left of the whole budget."""
        return self.total - (time.monotonic() - self.started)

    def rounds(self, wanted: int, timings: int = 1) -> int:
        """Rounds for the next of ``timings`` interleaved timings of the workload (A and B,
        about :attr:`workload_seconds` each, after a warm-up and a calibration), so that all
        of them fit the time left: at most ``wanted``, at least :data:`FEWEST_ROUNDS`."""
        per = 2 * max(self.workload_seconds, 0.05)
        fit = math.floor(self.remaining() / max(1, timings) / per) - 3
        return max(FEWEST_ROUNDS, min(wanted, fit))

    def over(self) -> float:
        """Seconds past the budget (0 when within it)."""
        return max(0.0, -self.remaining())

    def share(self, weight: float) -> float | None:
        """Seconds for a source of this weight, or None when too little is left to start it."""
        left = self.left()
        if left < LEAST or self.weight_left <= 0:
            return None
        return max(LEAST, left * min(1.0, weight / self.weight_left))

    def spent(self, weight: float) -> None:
        """A source's search ended."""
        self.weight_left = max(0.0, self.weight_left - weight)

    def eta(self) -> str:
        """'12.3 of 20 min left' for the progress line."""
        return f"{max(0.0, self.total - (time.monotonic() - self.started)) / 60:.1f} of {self.total / 60:.0f} min left"
