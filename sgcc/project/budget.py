"""One wall-time budget for a whole project, shared among its sources by weight.

The default is 5 minutes plus 2 per source to search (those holding the hottest functions
that cover the set share of the workload), at most 30: about 17-20 minutes for zlib's
compress/decompress workload. It counts from the start of the run (the recording build and
the profiles included); what the final rebuild, its tests and the workload's timing will
take (estimated from the first build and test run), and the PGO-everywhere reference (one
more build and its timing), is kept back from the search. Each source
gets the time left times its share of the weight left, so a source that ends early leaves
its time to the next ones, and the hottest are searched first.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sgcc.project.plan import Target

#: Default budget: a base and a per-source part, and the most it may be (seconds).
BASE, PER_SOURCE, MOST = 300.0, 120.0, 1800.0
#: A source is not started with less than this left.
LEAST = 30.0


class ProjectBudget:
    """Seconds for each source's search (see the module docstring)."""

    def __init__(self, total: float, rule: str, reserve: float, weight: float):
        self.total, self.rule, self.reserve = total, rule, reserve
        self.weight_left = weight
        self.started = time.monotonic()

    @classmethod
    def choose(cls, given: float | None, plan: list[Target], build_seconds: float,
               test_seconds: float) -> ProjectBudget:
        """The budget ``given`` (``--budget``), or the default for this plan."""
        if given:
            total, rule = float(given), "--budget"
        else:
            total = min(MOST, BASE + PER_SOURCE * len(plan))
            rule = f"default: 5 min + 2 min x {len(plan)} source(s), at most 30 min"
        # Kept back: the final rebuild and its tests, the PGO-everywhere reference's build
        # (gcc alone, about half a recording build) and the timing of both.
        reserve = 2.5 * build_seconds + 2 * test_seconds + 90.0
        return cls(total, rule, reserve, sum(t.weight for t in plan))

    def start(self, started: float) -> None:
        """Count from ``started`` (a ``time.monotonic()`` value: the run's beginning)."""
        self.started = started

    def left(self) -> float:
        return self.total - self.reserve - (time.monotonic() - self.started)

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
