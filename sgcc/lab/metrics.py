"""The papers' table row and sgcc's honest figures, as pure functions.

The papers (SuperCoder, section 4) score a system on a set of problems. Per problem
(:func:`sgcc.engine.figures.problem_figures`, which every engine report carries): whether
it *compiled*, whether it *passed*, and its best *speedup*, clipped at 1. Over problems, the
row: compile pass %, test pass %, speedup p25/p50/p75 and the average speedup.

Quantiles interpolate linearly between order statistics (numpy's default, the same as
``statistics.quantiles(method="inclusive")``): the q-quantile of sorted x_0..x_{n-1} is
x_f + (h - f)(x_{f+1} - x_f) with h = (n - 1) q and f = floor(h).

Those numbers pick the best of N noisy measurements and clip the rest at 1, so noise alone
scores above 1 (the papers' own random-layout row: 1.19x). Beside them sgcc reports what it
shipped: the geometric mean of the *unclipped*, re-measured speedups of the shipped programs
(1 where gcc's program was shipped) with a bootstrap interval over problems, the share of
problems whose re-measured interval clears ``1 + min_gain``, and the A-vs-A noise floor.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from sgcc.engine import best_of, clip


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default method)."""
    if not values:
        raise ValueError("quantile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError("q must be in [0, 1]")
    xs = sorted(values)
    h = (len(xs) - 1) * q
    f = math.floor(h)
    if f + 1 >= len(xs):
        return float(xs[-1])
    return xs[f] + (h - f) * (xs[f + 1] - xs[f])


def paper_row(problems: Sequence[dict]) -> dict:
    """The papers' row over problems (each with ``compiled``, ``passed``, ``speedup``):
    percentages of problems compiled and passed, speedup quartiles and mean (clipped)."""
    n = len(problems)
    if n == 0:
        return {"problems": 0, "compile_pass": None, "test_pass": None, "p25": None, "p50": None,
                "p75": None, "average": None}
    speeds = [clip(p["speedup"]) for p in problems]
    return {
        "problems": n,
        "compiled": sum(bool(p["compiled"]) for p in problems),
        "passed": sum(bool(p["passed"]) for p in problems),
        "compile_pass": 100.0 * sum(bool(p["compiled"]) for p in problems) / n,
        "test_pass": 100.0 * sum(bool(p["passed"]) for p in problems) / n,
        "p25": quantile(speeds, 0.25),
        "p50": quantile(speeds, 0.50),
        "p75": quantile(speeds, 0.75),
        "average": sum(speeds) / n,
    }


def geomean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("geometric mean of no values")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def bootstrap_geomean(values: Sequence[float], *, confidence: float = 0.95, resamples: int = 2000,
                      seed: int | None = 0) -> tuple[float, float, float]:
    """(geometric mean, low, high): percentile bootstrap over the values (problems)."""
    point = geomean(values)
    if len(values) < 2:
        return point, point, point
    rng = random.Random(seed)
    logs = [math.log(v) for v in values]
    n = len(logs)
    stats = sorted(sum(rng.choices(logs, k=n)) / n for _ in range(resamples))
    alpha = (1 - confidence) / 2
    lo = math.exp(stats[int(math.floor(alpha * (resamples - 1)))])
    hi = math.exp(stats[int(math.ceil((1 - alpha) * (resamples - 1)))])
    return point, min(lo, point), max(hi, point)


def honest_row(problems: Sequence[dict], min_gain: float = 0.03, *, seed: int | None = 0) -> dict:
    """sgcc's figures over problems, each with ``honest`` = {"speedup", "ci_low", ...}: the
    shipped program re-measured (1.0, interval [1, 1], where the baseline was shipped).

    ``geomean`` (unclipped: a shipped program that turns out slower counts below 1) with a
    bootstrap interval over problems; ``significant``: problems whose re-measured interval's
    lower end exceeds ``1 + min_gain``; ``shipped``: problems where anything was shipped."""
    n = len(problems)
    if n == 0:
        return {"problems": 0, "geomean": None, "ci_low": None, "ci_high": None, "significant": 0,
                "significant_share": None, "shipped": 0}
    speeds = [float(p["honest"]["speedup"]) for p in problems]
    point, lo, hi = bootstrap_geomean(speeds, seed=seed)
    sig = sum(1 for p in problems if (p["honest"].get("ci_low") or 0.0) > 1 + min_gain)
    shipped = sum(1 for p in problems if p["honest"].get("functions"))
    return {"problems": n, "geomean": point, "ci_low": lo, "ci_high": hi, "significant": sig,
            "significant_share": 100.0 * sig / n, "shipped": shipped, "min_gain": min_gain}


def noise_floor(estimates: Sequence[dict], min_gain: float = 0.03) -> dict:
    """A-vs-A: a baseline timed against a byte-identical copy. ``estimates`` are
    {"speedup", "low", "high"} from sgcc's timing (and optionally "papers": the papers'
    clipped ratio). Reports the median and max estimate, how many would have been accepted
    (lower bound above ``1 + min_gain``; ideally none), and the papers' clipped mean."""
    if not estimates:
        return {"pairs": 0}
    speeds = [e["speedup"] for e in estimates]
    accepted = sum(1 for e in estimates if e["low"] > 1 + min_gain)
    out = {"pairs": len(estimates), "median": quantile(speeds, 0.5), "max": max(speeds),
           "min": min(speeds), "accepted": accepted, "accepted_share": 100.0 * accepted / len(estimates)}
    papers = [e["papers"] for e in estimates if e.get("papers") is not None]
    if papers:
        out["papers_clipped_mean"] = sum(clip(p) for p in papers) / len(papers)
        out["papers_max"] = max(papers)
    return out


def curve(attempts: Sequence[Sequence[tuple[int, int, float | None]]], xs: Sequence[int], *,
          by: str = "sample") -> list[dict]:
    """Best-of-N (``by="sample"``) or refinement (``by="round"``) curve over problems.

    ``attempts`` has, per problem, its attempts as (sample, round, speedup or None when not
    correct); samples are 1-based, rounds 0-based. Point x of the sample curve uses attempts
    with sample <= x in round 0; of the round curve, attempts with round <= x (all samples).
    Each point: the papers' average (clipped, best-of) speedup over problems, the share of
    problems with a correct attempt, and the number of attempts it used."""
    out = []
    for x in xs:
        bests, correct, used = [], 0, 0
        for problem in attempts:
            if by == "sample":
                chosen = [s for (k, r, s) in problem if k <= x and r == 0]
            else:
                chosen = [s for (k, r, s) in problem if r <= x]
            used += len(chosen)
            bests.append(best_of(chosen))
            correct += any(s is not None for s in chosen)
        n = len(attempts)
        out.append({"x": x, "average": sum(bests) / n if n else None,
                    "pass": 100.0 * correct / n if n else None, "attempts": used})
    return out
