"""Which candidates to time first: a cheap, repeatable prediction of each one's gain.

Timing a candidate on a loaded machine takes tens of seconds; a budget rarely times all of
them. Before timing, the search runs the baseline and each candidate that passed its tests
under ``valgrind --tool=cachegrind --cache-sim=yes --branch-sim=yes`` on the same tests
and predicts the gain as the ratio of a simple cost model (instructions, plus a penalty per
simulated first-level and last-level cache miss and per mispredicted branch). The counts
are exact and do not depend on the machine's load, so the order is repeatable. Candidates are then timed best predicted
first, and those the budget cannot reach are the least promising ones.

The prediction only *orders* timing (and so decides what the budget leaves out). It never
accepts anything: every candidate still has to pass the same tests and clear the same
confidence bound on real CPU time, and the report records how well the prediction agreed
with the timed result (:func:`spearman`). Without valgrind, nothing is ranked (a note says so).

The candidate runs in the sandbox like any test, under valgrind, on as many tests as fit
in :data:`RANK_SECONDS` of the baseline's valgrind time (at least one), from the median
input size up, the same tests for every candidate.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sgcc.verify.box.sandbox import Sandbox, TestCase

#: Wall seconds of the baseline's valgrind runs that decide how many tests are used (a
#: candidate's count should cost a small fraction of a timing, which takes 10-70 s).
RANK_SECONDS = 1.5
#: Ranking is off when the smallest test alone takes longer than this under valgrind.
RANK_MAX_SECONDS = 8.0
#: Wall seconds one test may take under valgrind.
RANK_TEST_TIMEOUT = 120.0
#: Cost model weights: cycles per instruction, per first-level miss, per last-level miss.
L1_MISS_COST = 10.0
LL_MISS_COST = 100.0
#: ... and per simulated mispredicted branch (a cmov instead of a branch is often the gain).
MISPREDICT_COST = 15.0


def valgrind() -> str | None:
    """The valgrind executable, or None."""
    return shutil.which("valgrind")


def cost(events: dict[str, int]) -> float:
    """The cost model: instructions plus weighted simulated cache misses."""
    l1 = events.get("I1mr", 0) + events.get("D1mr", 0) + events.get("D1mw", 0)
    ll = events.get("ILmr", 0) + events.get("DLmr", 0) + events.get("DLmw", 0)
    mispredicted = events.get("Bcm", 0) + events.get("Bim", 0)
    return events.get("Ir", 0) + L1_MISS_COST * l1 + LL_MISS_COST * ll + MISPREDICT_COST * mispredicted


def parse_summary(text: str) -> dict[str, int] | None:
    """The ``events:`` and ``summary:`` lines of a cachegrind output file as a dict."""
    names = values = None
    for line in text.splitlines():
        if line.startswith("events:"):
            names = line.split()[1:]
        elif line.startswith("summary:"):
            values = line.split()[1:]
    if not names or not values or len(names) != len(values):
        return None
    try:
        return {n: int(v) for n, v in zip(names, values)}
    except ValueError:
        return None


class Ranker:
    """Counts for one program's baseline and its candidates (see the module docstring).

    ``seconds``: how long the baseline's count may take (more tests while it lasts; a
    candidate's costs about as much). ``note`` says why ranking is off (``ok`` false)."""

    def __init__(self, sandbox: Sandbox, baseline: Path, tests: list[TestCase], seconds: float = RANK_SECONDS):
        self.sandbox = sandbox
        self.tests = list(tests)
        self.note = ""
        self.base_cost: float | None = None
        self.base_seconds = 0.0
        self.seconds = 0.0  # wall seconds spent under valgrind
        self.exe = valgrind()
        if self.exe is None:
            self.note = "valgrind not found: candidates timed in the order offered"
            return
        if not self.tests:
            self.note = "no tests to rank on"
            return
        # Choose the tests once, by the baseline's time, so every candidate runs the same ones:
        # from the median input size up, then the smaller ones, while time lasts. A count
        # that costs as much as a timing buys nothing, but the smallest inputs often run
        # little more than the C library's start-up, which every candidate shares.
        by_size = sorted(self.tests, key=lambda t: len(t.stdin))
        mid = len(by_size) // 2
        chosen: list = []
        total, started = None, time.monotonic()
        for test in by_size[mid:] + by_size[:mid][::-1]:
            if chosen and time.monotonic() - started > seconds:
                break
            t0 = time.monotonic()
            events = self._events(baseline, [test])
            if events is None:
                self.note = "valgrind failed on the baseline: candidates timed in the order offered"
                return
            if not chosen and time.monotonic() - t0 > RANK_MAX_SECONDS:
                self.seconds += time.monotonic() - started
                self.note = (f"the smallest test takes over {RANK_MAX_SECONDS:g} s under valgrind, about what "
                             "timing a candidate costs: candidates timed in the order offered")
                return
            chosen.append(test)
            total = events if total is None else {k: total.get(k, 0) + v for k, v in events.items()}
        self.tests = chosen
        self.base_cost = cost(total or {})
        self.base_seconds = time.monotonic() - started  # what one candidate's count costs, about
        self.seconds += self.base_seconds

    @property
    def ok(self) -> bool:
        """Whether candidates can be ranked."""
        return self.base_cost is not None and self.base_cost > 0

    def _events(self, binary: Path, tests: list[TestCase]) -> dict[str, int] | None:
        out_dir = Path(tempfile.mkdtemp(prefix="sgcc-rank-"))
        os.chmod(out_dir, 0o733)  # the program may run as nobody: it writes here and nowhere else of ours
        total: dict[str, int] = {}
        exe = self.exe
        assert exe is not None  # counted only where valgrind was found
        try:
            for n, test in enumerate(tests):
                out = out_dir / f"cg.{n}"
                r = self.sandbox.run(binary, test.stdin,
                                     prefix=[exe, "--tool=cachegrind", "--cache-sim=yes", "--branch-sim=yes",
                                             "--quiet",
                                             f"--cachegrind-out-file={out}"],
                                     timeout=RANK_TEST_TIMEOUT, memory=16 << 30, writable=[out_dir])
                if r.timed_out or not out.is_file():
                    return None
                events = parse_summary(out.read_text(errors="replace"))
                if events is None:
                    return None
                for k, v in events.items():
                    total[k] = total.get(k, 0) + v
        finally:
            shutil.rmtree(out_dir, ignore_errors=True)
        return total

    def predict(self, binary: Path) -> float | None:
        """Predicted speedup of ``binary`` over the baseline (above 1: faster), or None."""
        if not self.ok:
            return None
        started = time.monotonic()
        events = self._events(binary, self.tests)
        self.seconds += time.monotonic() - started
        if events is None:
            return None
        c = cost(events)
        return self.base_cost / c if c > 0 and self.base_cost is not None else None


def spearman(xs: list[float], ys: list[float]) -> float | None:
    """Spearman's rank correlation of two equally long lists (ties get mean ranks); None
    with fewer than 3 pairs or no variation."""
    if len(xs) != len(ys) or len(xs) < 3:
        return None

    def ranks(vs: list[float]) -> list[float]:
        order = sorted(range(len(vs)), key=lambda i: vs[i])
        r = [0.0] * len(vs)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and vs[order[j + 1]] == vs[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2 + 1
            i = j + 1
        return r

    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx <= 0 or syy <= 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def agreement(pairs: list[tuple[str, float, float]]) -> dict:
    """How well predictions agreed with timings: ``pairs`` of (candidate id, predicted,
    measured speedup). Spearman's rho over them, and each pair."""
    rho = spearman([p for _, p, _ in pairs], [m for _, _, m in pairs])
    return {"signal": "cachegrind (instructions + 10 x L1 misses + 100 x LL misses + 15 x mispredicted branches)",
            "spearman": None if rho is None else round(rho, 3), "timed": len(pairs),
            "pairs": [{"id": i, "predicted": round(p, 4), "measured": round(m, 4)} for i, p, m in pairs]}
