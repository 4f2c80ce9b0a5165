"""The papers' per-problem figures, which every report carries.

The papers (SuperCoder, section 4) score one problem from all of its candidates:

* it *compiled* if some candidate assembled and linked;
* it *passed* if some candidate passed every test;
* its *speedup* is the best t(P)/t(P') over its correct candidates, clipped at 1 (a slower
  or wrong candidate falls back to gcc's program, so a problem never scores below 1).

The engine writes them into each :class:`~sgcc.engine.report.Report` (``paper``); the
research harness (:mod:`sgcc.lab.metrics`) aggregates them over problems.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from sgcc.stages import COMPILED, PASSED

if TYPE_CHECKING:
    from sgcc.engine.report import CandidateResult


def _get(c: CandidateResult | dict, key: str) -> Any:  # a report dict's values are JSON's
    """``key`` of a candidate: a field of a CandidateResult, or of its dict (None where absent)."""
    return c.get(key) if isinstance(c, dict) else getattr(c, key)


def problem_figures(candidates: Iterable) -> dict:
    """The papers' per-problem figures from its candidates (CandidateResult or their dicts):
    ``{"compiled", "passed", "speedup"}``. Candidates never built (id ``-``: skipped,
    repeats, refused before building) do not count; a candidate that failed while being
    timed counts as compiled, not passed (its stage is ``test``)."""
    built = [c for c in candidates if _get(c, "id") != "-"]
    compiled = any(_get(c, "stage") in COMPILED for c in built)
    speeds = [_get(c, "speedup") for c in built if _get(c, "stage") in PASSED]
    return {"compiled": compiled, "passed": bool(speeds), "speedup": best_of(speeds)}


def clip(speedup: float | None) -> float:
    """The papers' clipping: a missing or slower result is gcc's program (1.0)."""
    if speedup is None or not math.isfinite(speedup):
        return 1.0
    return max(1.0, speedup)


def best_of(speedups: Sequence[float | None]) -> float:
    """Best-of-N as the papers score it: the best clipped speedup of correct attempts
    (``None`` = an attempt that was not correct)."""
    return max([1.0, *(clip(s) for s in speedups if s is not None)])
