"""The budget: the wall time and candidates a whole run may spend, shared among functions.

``--budget 120s`` is the wall time the user waits for the whole run: the clock starts when
the run starts (baseline, recorded outputs, generated inputs and the profile count), and
the re-measurement and validation after the search (confirm, combine) are paid from it
too. While the search runs, it keeps a *reserve* for that last step: one full timing per
function that has an accepted candidate, plus one for the combined program when there are
several (a timing costs what the slowest full timing so far did). Without a winner
nothing is reserved.

Shares follow the profile and nothing else: a function running 1e-7 of the instructions
gets 1e-7 of the search time, which is less than one candidate costs, so it gets nothing
of its own. It may still be searched from *slack*: time that no function still waiting
for work can claim (the hotter ones are searched first and may finish under their share).
A fixed floor for cold functions (the old half an equal share) spent a quarter of a
two-function budget on a function the tests barely run, where no gain could show.
"""

from __future__ import annotations

import time

#: The reason recorded for candidates the budget left out (and in the report's notes).
BUDGET_REACHED = "search budget reached"
#: A confirmation may run up to this many times the ``timing_rounds`` setting's rounds when
#: the budget has the time (a narrower interval for the winner; more would mostly delay the run).
MAX_CONFIRM_FACTOR = 4
#: The share of its part of the time left a confirmation plans to use (timings vary).
CONFIRM_MARGIN = 0.8


class Budget:
    """Bounded run: ``seconds`` of wall time from ``started`` (``time.perf_counter()``) and
    ``candidates`` built, for the program; ``None`` is unbounded.

    Per function, ``share`` is its fraction of the weight of the searched functions (equal
    shares without a profile). A function may use its own share of the search time (the
    budget less the elapsed time before the search and the reserve) while that share covers
    at least half a candidate's typical cost, and beyond it only slack (see the module
    docstring). ``finish(name)`` says a function will ask for nothing more this round, so
    its unused share becomes slack. ``exhausted`` becomes true the first time the budget
    refuses anything."""

    def __init__(self, seconds: float | None, candidates: int | None, units, weights: dict[str, float] | None,
                 *, started: float | None = None, clock=time.perf_counter, confirm_factor: float = 1.0):
        self.seconds, self.candidates = seconds, candidates
        # A confirmation's rounds over a full timing's (its rounds are shared among the worlds,
        # at least a few each: sgcc.verify.timing.rounds.confirm_rounds).
        self.confirm_factor = confirm_factor
        self.clock = clock
        self.started = clock() if started is None else started
        names = [u.name for u in units]
        n = max(1, len(names))
        total = sum((weights or {}).get(k, 0.0) for k in names) if weights else 0.0
        self.share: dict[str, float] = {
            k: ((weights.get(k, 0.0) / total) if (weights and total > 0) else 1.0 / n) for k in names}
        self.spent_s: dict[str, float] = {k: 0.0 for k in names}
        self.spent_n: dict[str, int] = {k: 0 for k in names}
        self.timings: list[float] = []  # seconds of each timing so far
        self.timed: list[float] = []  # what each would have cost at full length
        self.build_costs: list[float] = []  # seconds of each build and test so far
        self.winners = 0  # functions with an accepted candidate (each needs a confirmation)
        self.combinable = 0  # of those, the ones that may be combined (not the whole unit)
        self.finished: set[str] = set()
        self.overhead = 0.0  # elapsed before the search began (baseline, tests, profile, preparation)
        self.search_started: float | None = None
        self.round_started: float | None = None
        self.round_left = 0.0
        self.exhausted = False

    # ------------------------------------------------------------------ the clock

    def elapsed(self) -> float:
        """Wall seconds since the run started."""
        return self.clock() - self.started

    def begin_search(self) -> None:
        """Mark the start of the search (what came before is ``overhead``)."""
        self.search_started = self.clock()
        self.overhead = self.search_started - self.started

    def timing_cost(self) -> float:
        """What one full-length timing costs (the slowest so far; 0 before any)."""
        return max(self.timed, default=0.0)

    def confirm_cost(self) -> float:
        """What one confirmation (or a combination's timing) costs."""
        return self.timing_cost() * self.confirm_factor

    def confirm_rounds(self, rounds: int, pending: int) -> int:
        """Rounds for the next confirmation: ``rounds`` (the ``timing_rounds`` setting), or
        more when the seconds left, shared among the ``pending`` timings still to come after
        the search, allow them (up to :data:`MAX_CONFIRM_FACTOR` times as many). Time the
        search could not use (its candidates all timed, or cut) so narrows the winner's
        interval instead of being left over; an unbounded budget keeps ``rounds``."""
        left = self.left()
        cost = self.confirm_cost()
        if left is None or cost <= 0 or rounds < 1:
            return rounds
        per_round = cost / rounds  # warm-up and calibration included: an overestimate
        affordable = int(CONFIRM_MARGIN * left / max(1, pending) / per_round)
        return max(rounds, min(affordable, MAX_CONFIRM_FACTOR * rounds))

    def typical_timing(self) -> float:
        """What one timing typically costs: the mean of the timings so far (0 before any)."""
        return sum(self.timings) / len(self.timings) if self.timings else 0.0

    def candidate_cost(self) -> float:
        """What one candidate typically costs: mean build-and-test plus mean timing (0 before any)."""
        return self.build_cost() + self.typical_timing()

    def reserve(self) -> float:
        """Seconds kept for confirming winners and validating their combination."""
        if not self.winners:
            return 0.0
        # One re-measurement per function; a combination of several needs one more timing
        # (a whole-unit winner is never combined).
        return (self.winners + (1 if self.combinable > 1 else 0)) * self.confirm_cost()

    def search_seconds(self) -> float | None:
        """Seconds the search may use in all (None: unbounded)."""
        if self.seconds is None:
            return None
        return max(0.0, self.seconds - self.overhead - self.reserve())

    def left(self) -> float | None:
        """Wall seconds left in the whole run (None: unbounded); may be negative."""
        if self.seconds is None:
            return None
        return self.seconds - self.elapsed()

    # ------------------------------------------------------------------ the search's questions

    def _search_left(self, cost: float = 0.0) -> bool:
        """Whether work costing about ``cost`` seconds would still end before the reserve."""
        if self.seconds is None:
            return True
        return self.elapsed() + cost + self.reserve() <= self.seconds

    def _own_seconds(self, name: str) -> float:
        search = self.search_seconds()
        # A name outside the profile (a cached winner re-validated) may use it all.
        return (search or 0.0) * self.share.get(name, 1.0)

    def _slack_seconds(self, name: str) -> float:
        """Search seconds nobody still waiting for work can claim."""
        search = self.search_seconds() or 0.0
        claimed = sum(max(0.0, self._own_seconds(k) - self.spent_s[k])
                      for k in self.share if k != name and k not in self.finished)
        return search - sum(self.spent_s.values()) - claimed

    def time_left(self, name: str, cost: float | None = None) -> bool:
        """Whether the seconds budget still allows work for function ``name`` that costs
        about ``cost`` seconds (default: a whole candidate, :meth:`candidate_cost`)."""
        if self.seconds is None:
            return True
        cost = self.candidate_cost() if cost is None else cost
        # Work that would run into the reserve is not started (a run ends near its budget).
        if not self._search_left(cost):
            self.exhausted = True
            return False
        own = self._own_seconds(name)
        # A share smaller than half the work buys nothing of its own (0 before any cost
        # is known: the hottest functions come first and set it).
        if own >= 0.5 * cost and self.spent_s.get(name, 0.0) < own:
            return True
        if self._slack_seconds(name) > 0.5 * cost:
            return True
        self.exhausted = True
        return False

    def build_cost(self) -> float:
        """Mean seconds of one build and test so far (0 before any)."""
        return sum(self.build_costs) / len(self.build_costs) if self.build_costs else 0.0

    def building_allowed(self) -> bool:
        """Whether more candidates may be built this round: building stops at half the
        time the round began with, so timing (what decides anything) keeps the rest."""
        if self.seconds is None or self.round_started is None:
            return True
        if self.clock() - self.round_started < 0.5 * self.round_left:
            return True
        self.exhausted = True
        return False

    def _own_count(self, name: str) -> int:
        return round((self.candidates or 0) * self.share.get(name, 0.0))

    def allows(self, name: str) -> bool:
        """Whether one more candidate for ``name`` fits (seconds and candidates)."""
        if not self.time_left(name):
            return False
        if self.candidates is not None:
            used = sum(self.spent_n.values())
            if used >= self.candidates:
                self.exhausted = True
                return False
            if self.spent_n.get(name, 0) >= self._own_count(name):
                claimed = sum(max(0, self._own_count(k) - self.spent_n[k])
                              for k in self.share if k != name and k not in self.finished)
                if self.candidates - used - claimed <= 0:
                    self.exhausted = True
                    return False
        return True

    def spend(self, name: str, seconds: float) -> None:
        """Charge ``seconds`` of work to function ``name``."""
        self.spent_s[name] = self.spent_s.get(name, 0.0) + seconds

    def count(self, name: str) -> None:
        """Charge one more candidate to function ``name``."""
        self.spent_n[name] = self.spent_n.get(name, 0) + 1

    def finish(self, name: str) -> None:
        """``name`` asks for nothing more this round: its unused share becomes slack."""
        self.finished.add(name)

    def reopen(self) -> None:
        """A new round: every function may ask again."""
        self.finished.clear()
        self.new_pass()

    def new_pass(self) -> None:
        """Building starts again (for what was refused earlier in the round): it may take
        half the time left."""
        self.round_started = self.clock()
        self.round_left = max(0.0, (self.seconds or 0.0) - self.elapsed() - self.reserve())

    def record_timing(self, seconds: float, full: float | None = None) -> None:
        """A timing took ``seconds``; at full length (it may have stopped early) it would
        have taken about ``full`` seconds (default: the same), what the reserve counts on."""
        self.timings.append(seconds)
        self.timed.append(max(seconds, full or 0.0))

    def record_build(self, seconds: float) -> None:
        """A candidate's build and tests took ``seconds``."""
        self.build_costs.append(seconds)

    # ------------------------------------------------------------------ reporting

    def describe(self) -> dict:
        """The budget as the report keeps it."""
        return {"seconds": self.seconds, "candidates": self.candidates,
                "share": {k: round(v, 6) for k, v in self.share.items()}}

    def spent_summary(self) -> str:
        """When the search stopped, for the report's note (how many candidates were built, timed
        and cut is the budget line's: one count each, from the candidates' results)."""
        return (f"the search stopped {self.elapsed():.1f} s into the run, {self.overhead:.1f} s of them before "
                "it began")


def account(seconds: float, budget_seconds: float | None, search_end: float, lock_waits, started: float) -> dict:
    """Where a run's wall time went beyond what its budget says, for the report: the waits
    for the timing lock (``lock_waits``: (began, seconds, holder) each, ``time.perf_counter()``
    clock, as :attr:`sgcc.engine.pipeline.Pipeline.lock_waits` keeps them) and, when the run
    took longer than ``budget_seconds``, by how much and why: work after the search (the
    winners' re-measurement, which always runs once, and the combined program's), part of
    it waiting for the lock; and search work that began within the budget and ran past it.
    ``seconds`` is the run's wall time, ``search_end`` when its search ended (seconds into
    the run). Over by less than a second or 1% of the budget is not counted as over."""
    out: dict = {}
    if lock_waits:
        holders = list(dict.fromkeys(h for _, _, h in lock_waits if h))
        out["lock_wait"] = {"seconds": round(sum(w for _, w, _ in lock_waits), 1), "waits": len(lock_waits),
                            "after_search_seconds": round(sum(w for t, w, _ in lock_waits
                                                              if t - started >= search_end), 1),
                            "holders": holders[:3]}
    # Over by a second or 1% (whichever is more): the end of a run is not a promise to the millisecond.
    if budget_seconds is not None and seconds > budget_seconds + max(1.0, 0.01 * budget_seconds):
        over = seconds - budget_seconds
        after = max(0.0, seconds - search_end)
        # Of the time after the search, what the budget had not left for it.
        after_over = min(over, max(0.0, after - max(0.0, budget_seconds - search_end)))
        out["over"] = {"seconds": round(over, 1), "after_search_seconds": round(after_over, 1),
                       "search_seconds": round(max(0.0, over - after_over), 1),
                       "lock_wait_seconds": round(min(over, out.get("lock_wait", {}).get("seconds", 0.0)), 1)}
    return out
