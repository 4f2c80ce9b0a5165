#!/usr/bin/env python3
"""Run `sgcc bench` on the bundled example programs (examples/programs) with their replay candidates.

A thin caller of :mod:`sgcc.lab.bench` (the same as ``sgcc bench examples/programs --generators
replay``): per program compiled?, passed?, the papers' speedup (best-of-N, clipped at 1) and
sgcc's honest one (shipped program re-measured, unclipped, 95% interval); overall the papers'
row (compile pass %, test pass %, speedup p25/p50/p75 and average) and the geometric mean of
the honest speedups. ``--native`` also replays candidates-native/ under ``--isa native``.
Other options are passed to `sgcc bench` as they are (``--perturbation``, ``--aa``,
``--curves DIR``...). ``--clang`` adds the clang generator: its candidates beside the replayed
ones, and a ``clang`` column with clang's whole program timed against gcc's.

Usage: python bench/examples.py [--rounds N] [--seed S] [--only NAME ...] [--json FILE] [--native] [--clang]
       [BENCH OPTIONS]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc.cli.main import run_command  # noqa: E402

PROGRAMS = ROOT / "examples" / "programs"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--native", action="store_true")
    parser.add_argument("--clang", action="store_true",
                        help="the clang generator too: its candidates, and clang's whole program in its column")
    args, rest = parser.parse_known_args()
    argv = ["bench", str(PROGRAMS), "--generators", "replay,clang" if args.clang else "replay",
            "--timing-rounds", str(args.rounds)]
    if args.seed is not None:
        argv += ["--seed", str(args.seed)]
    for name in args.only:
        argv += ["--only", name]
    if args.json:
        argv += ["--json", str(args.json)]
    if args.native:
        argv += ["--isa", "native"]
    # Said at once: the first problem takes minutes to finish (sgcc bench then says what runs).
    print(f"bench/examples.py: sgcc {' '.join(argv + rest)}", file=sys.stderr, flush=True)
    return run_command(argv + rest)


if __name__ == "__main__":
    sys.exit(main())
