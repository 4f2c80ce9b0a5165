#!/usr/bin/env python3
"""A-vs-A calibration of sgcc's "faster" decision, next to the papers' method.

Builds one small CPU-bound C program with ``gcc -O3``, makes two byte-identical copies
(A and A'), and compares them ``--runs`` times:

* sgcc's way (:func:`sgcc.verify.timing.rounds.measure` + :func:`sgcc.verify.timing.rounds.decide`): CPU time,
  interleaved random-order rounds, random environment padding, bootstrap interval; a
  "speedup" is accepted only if the interval's lower end clears ``--min-gain``. Target:
  0 acceptances (at most 1 in 20).
* the papers' way on the same pair: baseline then candidate, sequentially, each with 3
  warm-up runs and 10 timed runs, mean wall time, ratio clipped at 1.0 (a slower candidate
  falls back to the baseline). Any value above 1 is a "speedup" found in noise; the
  expected best of 8 shows what best-of-N selection makes of it.

Usage: ``python bench/aa_timing.py [--runs 20] [--rounds 20] [--work 12000000]``.
Takes about 5 s per run on a 2-core machine.
"""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sgcc import proc
from sgcc.verify.box.sandbox import Sandbox, TestCase
from sgcc.verify.timing.rounds import decide, measure, runner, timing_lock, timing_lock_path

PROGRAM = r"""
#include <stdio.h>
int main(void) {
    long n;
    if (scanf("%ld", &n) != 1) return 2;
    unsigned long x = 1;
    for (long i = 0; i < n; i++) { x = x * 6364136223846793005UL + 1442695040888963407UL; x ^= x >> 29; }
    printf("%lu\n", x);
    return 0;
}
"""


def papers_ratio(a: Path, b: Path, stdin: bytes) -> tuple[float, float]:
    """The papers' protocol on one pair: (raw mean-wall ratio t(A)/t(B), clipped at 1)."""

    def mean_wall(binary: Path) -> float:
        # Like hyperfine -N (no shell): 3 warm-ups, then the mean of 10 timed runs.
        for _ in range(3):
            proc.run([str(binary)], stdin=stdin, timeout=60)
        return statistics.fmean(proc.run([str(binary)], stdin=stdin, timeout=60).wall for _ in range(10))

    ta = mean_wall(a)
    tb = mean_wall(b)
    ratio = ta / tb
    return ratio, max(1.0, ratio)


def expected_best_of(values: list[float], k: int) -> float:
    """Expected maximum of ``k`` values drawn without replacement from ``values``."""
    xs = sorted(values)
    n = len(xs)
    if n < k:
        return max(xs)
    total = math.comb(n, k)
    # The i-th smallest (1-based) is the maximum of comb(i-1, k-1) of the k-subsets.
    return sum(x * math.comb(i - 1, k - 1) for i, x in enumerate(xs, start=1)) / total


def quantiles(values: list[float]) -> str:
    q = statistics.quantiles(values, n=4, method="inclusive")
    return f"min {min(values):.3f}  p25 {q[0]:.3f}  p50 {q[1]:.3f}  p75 {q[2]:.3f}  max {max(values):.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=20, help="A-vs-A comparisons (default 20)")
    ap.add_argument("--rounds", type=int, default=20, help="rounds per measure() (default 20)")
    ap.add_argument("--min-sample", type=float, default=0.05, help="min CPU seconds per sample")
    ap.add_argument("--min-gain", type=float, default=0.03, help="decide()'s margin (default 0.03)")
    ap.add_argument("--work", type=int, default=12_000_000, help="loop iterations of the program")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="sgcc-aa-"))
    try:
        (tmp / "prog.c").write_text(PROGRAM)
        proc.run(["gcc", "-O3", "-o", str(tmp / "a"), str(tmp / "prog.c")], timeout=120, check=True)
        shutil.copyfile(tmp / "a", tmp / "a2")  # byte-identical, a separate file
        (tmp / "a2").chmod(0o755)
        stdin = f"{args.work}\n".encode()

        with Sandbox(timeout=60) as sandbox:
            tests = sandbox.record(tmp / "a", [TestCase("work", stdin)])
            one = sandbox.run(tmp / "a", stdin)
            null = sandbox.run(Path("/bin/true"), b"")
            print(f"program: {one.cpu * 1e3:.1f} ms CPU, {one.wall * 1e3:.1f} ms wall per sandboxed run "
                  f"(sandbox overhead alone, /bin/true: {null.cpu * 1e3:.1f} ms CPU)")
            print(f"timing lock: {timing_lock_path()}")
            print(f"{args.runs} A-vs-A comparisons, {args.rounds} rounds each, min gain {args.min_gain:.0%}\n")
            print(f"{'run':>3}  {'reps':>4}  {'sgcc speedup':>12}  {'95% CI':>15}  {'accept':>6}  "
                  f"{'papers raw':>10}  {'clipped':>7}")

            ours, lows, highs, accepted = [], [], [], 0
            raw, clipped = [], []
            started = time.monotonic()
            for i in range(args.runs):
                est = measure(
                    runner(sandbox, tmp / "a", tests),
                    runner(sandbox, tmp / "a2", tests),
                    rounds=args.rounds,
                    min_sample_seconds=args.min_sample,
                )
                ok = decide(est, args.min_gain)
                accepted += ok
                ours.append(est.speedup)
                lows.append(est.low)
                highs.append(est.high)
                with timing_lock():  # the papers' numbers get the same quiet machine
                    r, c = papers_ratio(tmp / "a", tmp / "a2", stdin)
                raw.append(r)
                clipped.append(c)
                print(f"{i + 1:>3}  {est.reps:>4}  {est.speedup:>12.4f}  [{est.low:.4f}, {est.high:.4f}]  "
                      f"{'YES' if ok else 'no':>6}  {r:>10.4f}  {c:>7.4f}", flush=True)
            elapsed = time.monotonic() - started

        widths = [hi / lo for lo, hi in zip(lows, highs)]
        print(f"\nsgcc (CPU time, interleaved, bootstrap CI, accept if low > {1 + args.min_gain:.2f}):")
        print(f"  accepted:          {accepted} of {args.runs}  (target 0, at most 1)")
        print(f"  speedup estimates: {quantiles(ours)}")
        print(f"  CI lower bounds:   {quantiles(lows)}")
        print(f"  CI upper bounds:   {quantiles(highs)}")
        print(f"  CI width (hi/lo):  median {statistics.median(widths):.4f}")
        covered = sum(lo <= 1.0 <= hi for lo, hi in zip(lows, highs))
        print(f"  CIs containing 1:  {covered} of {args.runs}")
        print("papers (sequential, 3 warm-up + 10 runs, mean wall, ratio clipped at 1):")
        print(f"  raw ratios:        {quantiles(raw)}")
        print(f"  clipped mean 'speedup': {statistics.fmean(clipped):.4f}   "
              f"expected best-of-8: {expected_best_of(clipped, 8):.4f}   "
              f"ratios > 1.03: {sum(r > 1.03 for r in raw)} of {args.runs}")
        print(f"\n{elapsed:.0f} s")
        return 0 if accepted <= 1 else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
