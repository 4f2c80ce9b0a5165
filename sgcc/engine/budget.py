"""The search budget: how many seconds and candidates the search may spend, per function."""

from __future__ import annotations

#: The reason recorded for candidates the budget left out (and in the report's notes).
BUDGET_REACHED = "search budget reached"


class Budget:
    """Bounded search: total seconds and candidates for the program, shared among the
    functions in proportion to their weight (each searched function gets at least half an
    equal share, so a flat profile still spreads the search).

    ``seconds`` / ``candidates`` of ``None`` are unbounded. ``overhead`` is the seconds spent
    for the whole program (the generators' preparation); ``exhausted`` becomes true the first
    time the budget refuses anything."""

    def __init__(self, seconds: float | None, candidates: int | None, units, weights: dict[str, float] | None):
        self.seconds, self.candidates = seconds, candidates
        names = [u.name for u in units]
        n = max(1, len(names))
        total = sum((weights or {}).get(k, 0.0) for k in names) if weights else 0.0
        self.share: dict[str, float] = {}
        for k in names:
            w = (weights[k] / total) if (weights and total > 0) else 1.0 / n
            self.share[k] = max(w, 0.5 / n)
        self.spent_s: dict[str, float] = {k: 0.0 for k in names}
        self.spent_n: dict[str, int] = {k: 0 for k in names}
        self.overhead = 0.0
        self.exhausted = False

    def time_left(self, name: str) -> bool:
        """Whether the seconds budget still allows work for function ``name``."""
        if self.seconds is not None:
            if self.overhead + sum(self.spent_s.values()) >= self.seconds or \
               self.spent_s.get(name, 0.0) >= self.seconds * self.share.get(name, 1.0):
                self.exhausted = True
                return False
        return True

    def allows(self, name: str) -> bool:
        """Whether one more candidate for ``name`` fits (seconds and candidates)."""
        if not self.time_left(name):
            return False
        if self.candidates is not None:
            if sum(self.spent_n.values()) >= self.candidates or \
               self.spent_n.get(name, 0) >= max(1, round(self.candidates * self.share.get(name, 1.0))):
                self.exhausted = True
                return False
        return True

    def spend(self, name: str, seconds: float) -> None:
        """Charge ``seconds`` of work to function ``name``."""
        self.spent_s[name] = self.spent_s.get(name, 0.0) + seconds

    def count(self, name: str) -> None:
        """Charge one more candidate to function ``name``."""
        self.spent_n[name] = self.spent_n.get(name, 0) + 1

    def describe(self) -> dict:
        """The budget as the report keeps it."""
        return {"seconds": self.seconds, "candidates": self.candidates,
                "share": {k: round(v, 4) for k, v in self.share.items()}}

    def spent_summary(self) -> str:
        """What was spent, for the report's note."""
        return (f"{self.overhead + sum(self.spent_s.values()):.1f} s "
                f"(preparation {self.overhead:.1f} s), {sum(self.spent_n.values())} candidates")
