#!/usr/bin/env python3
"""What the box costs and whether timing stays honest in it (issue 14's measurements).

Three figures, each from one interleaved run (box and the older runner alternate in a random
order, so machine drift hits both alike):

1. **Per-run overhead**: wall time of one run of a program that does nothing
   (``int main(void){return 0;}``), box vs the older runner (``Sandbox(boxed=False)``:
   network namespace, rlimits, ``nobody`` as root, scratch directory and sweep), as a ratio
   of medians; and the CPU each counts for it.
2. **A-vs-A with the box**: ``--aa-runs`` comparisons of two byte-identical copies of one
   program with :func:`sgcc.verify.timing.rounds.measure` through the box; the number accepted as
   "faster" by :func:`~sgcc.verify.timing.rounds.decide` must be 0.
3. **Timing spread**: the confidence interval's width (high/low) of A-vs-A on bundled
   examples (their own tests as timing inputs), older runner vs box, ``--ci-repeats`` each.

Usage: ``python bench/isolation.py [--overhead-runs 200] [--aa-runs 20] [--ci-repeats 3]
[--examples collatz,hashmix] [--json out.json]`` (0 runs skip a part). About 6 minutes on a
2-core machine.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc import proc  # noqa: E402
from sgcc.verify.box import isolation_level  # noqa: E402
from sgcc.verify.box.sandbox import Sandbox, TestCase, load_tests  # noqa: E402
from sgcc.verify.timing.rounds import decide, measure, runner  # noqa: E402

NOTHING = "int main(void) { return 0; }\n"
WORK = r"""
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


def build(src_text: str | None, src: Path | None, out: Path) -> Path:
    if src is None:
        src = out.with_suffix(".c")
        src.write_text(src_text)
    proc.run(["gcc", "-O3", "-o", str(out), str(src), "-lm"], timeout=300, check=True)
    return out


def twin(binary: Path) -> Path:
    """A byte-identical copy under another name."""
    other = binary.with_name(binary.name + "-twin")
    shutil.copyfile(binary, other)
    other.chmod(0o755)
    return other


def overhead(box: Sandbox, old: Sandbox, binary: Path, runs: int, rng: random.Random) -> dict:
    walls = {"box": [], "old": []}
    cpus = {"box": [], "old": []}
    for sb in (box, old):  # warm-up
        sb.run(binary, b"")
    for _ in range(runs):
        order = [(box, "box"), (old, "old")]
        rng.shuffle(order)
        for sb, key in order:
            t = time.perf_counter()
            r = sb.run(binary, b"")
            walls[key].append(time.perf_counter() - t)
            cpus[key].append(r.cpu)
    med = {k: statistics.median(v) for k, v in walls.items()}
    return {"runs": runs, "median_wall_ms": {k: round(v * 1e3, 3) for k, v in med.items()},
            "ratio_box_over_old": round(med["box"] / med["old"], 3),
            "median_counted_cpu_ms": {k: round(statistics.median(v) * 1e3, 3) for k, v in cpus.items()}}


def aa(box: Sandbox, a: Path, tests: list[TestCase], runs: int, rounds: int, seed: int) -> dict:
    b = twin(a)
    accepted, speedups, lows = 0, [], []
    for i in range(runs):
        est = measure(runner(box, a, tests), runner(box, b, tests), rounds=rounds, seed=seed + i)
        accepted += decide(est)
        speedups.append(est.speedup)
        lows.append(est.low)
    return {"runs": runs, "rounds": rounds, "accepted": accepted,
            "speedup_median": round(statistics.median(speedups), 4),
            "speedup_range": [round(min(speedups), 4), round(max(speedups), 4)], "highest_low": round(max(lows), 4)}


def ci_width(box: Sandbox, old: Sandbox, a: Path, tests: list[TestCase], repeats: int, rounds: int,
             rng: random.Random) -> dict:
    b = twin(a)
    widths = {"box": [], "old": []}
    per_run_cpu = {"box": [], "old": []}
    for i in range(repeats):
        order = [(box, "box"), (old, "old")]
        rng.shuffle(order)
        for sb, key in order:
            est = measure(runner(sb, a, tests), runner(sb, b, tests), rounds=rounds, seed=1000 + i)
            widths[key].append(est.high / est.low)
            per_run_cpu[key].append(statistics.median(est.samples_a) / est.reps)
    return {"repeats": repeats, "rounds": rounds,
            "ci_width_high_over_low": {k: [round(w, 4) for w in v] for k, v in widths.items()},
            "median_width": {k: round(statistics.median(v), 4) for k, v in widths.items()},
            "cpu_per_run_ms": {k: round(statistics.median(v) * 1e3, 3) for k, v in per_run_cpu.items()}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--overhead-runs", type=int, default=200)
    ap.add_argument("--aa-runs", type=int, default=20)
    ap.add_argument("--aa-rounds", type=int, default=20)
    ap.add_argument("--ci-repeats", type=int, default=3)
    ap.add_argument("--ci-rounds", type=int, default=20)
    ap.add_argument("--examples", default="collatz,hashmix")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path)
    opts = ap.parse_args(argv)
    rng = random.Random(opts.seed)
    report = isolation_level.isolation_report()
    print(f"isolation: {report.describe()}", flush=True)
    if not report.boxed:
        print("no box on this machine: nothing to compare", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="sgcc-bench-iso-"))
    work.chmod(0o755)
    out: dict = {"isolation": report.to_dict()}
    try:
        nothing = build(NOTHING, None, work / "nothing")
        with Sandbox(timeout=30) as box, Sandbox(timeout=30, boxed=False) as old:
            if opts.overhead_runs > 0:
                out["overhead"] = overhead(box, old, nothing, opts.overhead_runs, rng)
                print("overhead:", json.dumps(out["overhead"]), flush=True)

            spin = build(WORK, None, work / "spin")
            tests = box.record(spin, [TestCase("t", b"3000000\n")])
            if opts.aa_runs > 0:
                out["aa"] = aa(box, spin, tests, opts.aa_runs, opts.aa_rounds, opts.seed)
                print("A-vs-A (box):", json.dumps(out["aa"]), flush=True)

            out["ci"] = {}
            for name in [e for e in opts.examples.split(",") if e]:
                d = ROOT / "examples" / "programs" / name
                src = next(d.glob("*.c"))
                binary = build(None, src, work / name)
                tests = box.record(binary, load_tests(d / "tests"))
                assert old.check(binary, tests).ok
                out["ci"][name] = ci_width(box, old, binary, tests, opts.ci_repeats, opts.ci_rounds, rng)
                print(f"CI width {name}:", json.dumps(out["ci"][name]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if opts.json:
        opts.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
