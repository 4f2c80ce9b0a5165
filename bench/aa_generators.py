#!/usr/bin/env python3
"""A-vs-A with the model-free generators on: a program no generator can make faster.

The program spends all its time inside the C library (``memchr`` over a 32 MB buffer,
behind a compiler barrier so the call is repeated); its own code is a loop of a few
instructions around the call. Every generator still has plenty to offer -- compiler
variants, a profile-guided build, alignment edits of ``main`` -- and every candidate
passes the tests, so each is a near A-vs-A comparison: any candidate accepted, confirmed or
shipped here is noise taken for a gain. The engine runs ``--runs`` times per instruction-set
mode with the generators together (``variants,pgo,layout``), like ``sgcc optimize`` does by
default, and the script counts candidates timed, accepted during the search, confirmed on
fresh rounds, and shipped, with the re-measured speedup of what was shipped.

Target: nothing shipped (the engine's guarantee, with generators on, holds).

Usage: python bench/aa_generators.py [--runs 3] [--isa flags|native|both] [--rounds 10]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc import config as configmod  # noqa: E402
from sgcc.candidates import registry  # noqa: E402
from sgcc.engine import Request, optimize  # noqa: E402
from sgcc.progress import Progress  # noqa: E402

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SIZE = 32 << 20 };

__attribute__((noinline)) long scan(const char *buf, long n) {
    long total = 0;
    for (long i = 0; i < n; i++) {
        /* The barrier makes gcc call memchr every time (it may not reuse the last result). */
        __asm__ volatile("" ::: "memory");
        const char *hit = memchr(buf, 1, SIZE);
        total += hit ? hit - buf : -1;
    }
    return total;
}

int main(void) {
    long n;
    if (scanf("%ld", &n) != 1 || n < 0) return 2;
    char *buf = calloc(SIZE, 1);
    if (!buf) return 3;
    buf[SIZE - 7] = 1;
    printf("%ld\n", scan(buf, n));
    free(buf);
    return 0;
}
"""

TESTS = {"small": "1\n", "zero": "0\n", "large": "40\n"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="engine runs per mode (default 3)")
    ap.add_argument("--isa", choices=["flags", "native", "both"], default="both")
    ap.add_argument("--rounds", type=int, default=10, help="timing rounds per comparison")
    ap.add_argument("--seed", type=int, default=1, help="first seed (run k uses seed + k)")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds per engine run (default: none); the time the search leaves goes to "
                         "the confirmations' rounds")
    ap.add_argument("--no-race", action="store_true", help="time each candidate alone (no successive halving)")
    args = ap.parse_args()
    modes = ["flags", "native"] if args.isa == "both" else [args.isa]
    names = ["variants", "pgo", "layout"]

    rows = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sgcc-aa-gen-") as tmp:
        tmp = Path(tmp)
        (tmp / "scan.c").write_text(PROGRAM)
        (tmp / "tests").mkdir()
        for name, text in TESTS.items():
            (tmp / "tests" / f"{name}.in").write_text(text)
        cfg = configmod.load({"generators": ",".join(names)})
        for isa in modes:
            for k in range(args.runs):
                req = Request(source=tmp / "scan.c", flags=["-O3"], tests=tmp / "tests",
                              output=tmp / f"out-{isa}-{k}", generators=registry.build(cfg, names=names),
                              isa=isa, timing_rounds=args.rounds, seed=args.seed + k, budget_seconds=args.budget,
                              race=not args.no_race)
                t0 = time.monotonic()
                report = optimize(req, Progress(enabled=False))
                cands = [c for c in report.candidates if c.id != "-"]
                timed = [c for c in cands if c.speedup is not None]
                accepted = [c for c in cands if c.stage == "accepted" or (c.confirm is not None)]
                confirmed = [c for c in cands if c.stage == "accepted" and c.confirm is not None]
                h = report.honest
                row = {"isa": isa, "run": k + 1, "candidates": len(cands), "timed": len(timed),
                       "accepted": len(accepted), "confirmed": len(confirmed), "shipped": h["functions"],
                       "speedup": h["speedup"], "low": h["ci_low"], "high": h["ci_high"],
                       "max_timed": max((c.speedup for c in timed), default=1.0),
                       "races": len(report.budget.get("races", [])),
                       "confirm_rounds": max((c.confirm["rounds"] for c in cands if c.confirm), default=0),
                       "seconds": time.monotonic() - t0}
                rows.append(row)
                print(f"{isa:6} run {k + 1}: {row['candidates']:3d} candidates, {row['timed']:3d} timed "
                      f"(largest estimate {row['max_timed']:.3f}), {row['accepted']} accepted, "
                      f"{row['confirmed']} confirmed ({row['confirm_rounds']} rounds at most), {row['races']} races, "
                      f"shipped {', '.join(h['functions']) or 'the baseline'} "
                      f"{h['speedup']:.3f} [{h['ci_low']:.3f}, {h['ci_high']:.3f}]  {row['seconds']:.0f} s",
                      flush=True)

    timed = sum(r["timed"] for r in rows)
    shipped = sum(bool(r["shipped"]) for r in rows)
    print(f"\n{len(rows)} engine runs, {timed} candidates timed against the baseline; "
          f"accepted during the search {sum(r['accepted'] for r in rows)}, confirmed "
          f"{sum(r['confirmed'] for r in rows)}, runs that shipped a candidate {shipped} (target 0)")
    seeds = f"{args.seed}..{args.seed + args.runs - 1}"
    print(f"{time.monotonic() - started:.0f} s; settings: rounds {args.rounds}, seeds {seeds}, budget {args.budget}, "
          f"race {'off' if args.no_race else 'on'}")
    return 0 if shipped == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
