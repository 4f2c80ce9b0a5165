#!/usr/bin/env python3
"""Wall-time overhead of sgcc over plain gcc, as ratios measured in one run.

Three situations, each timed against the same gcc command, interleaved in random order:

* eligible:     ``-O3 -c`` of a typical translation unit (sgcc runs gcc -S, then assembles);
* pass-through: ``-O1 -c`` of the same unit (sgcc classifies, then execs gcc);
* disabled:     ``SGCC_DISABLE=1`` (sgcc resolves the compiler and execs it).

Usage: ``python bench/overhead.py [--rounds N] [--source FILE.c]``. Prints, per situation, the
median wall time of gcc and of sgcc, their ratio with a bootstrap 95% interval, and the
absolute extra milliseconds.
"""

from __future__ import annotations

import argparse
import os
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

DEFAULT_SOURCE = ROOT / "examples" / "wordstats" / "src" / "count.c"


def _time(argv: list[str], env: dict, cwd: str) -> float:
    start = time.perf_counter()
    result = proc.run(argv, env=env, cwd=cwd, timeout=120)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"command failed: {' '.join(argv)}\n{result.stderr.decode()}")
    return elapsed


def _interval(ratios: list[float], rng: random.Random, n: int = 2000) -> tuple[float, float]:
    meds = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--sgcc", default=shutil.which("sgcc") or str(Path(sys.executable).parent / "sgcc"))
    args = parser.parse_args()
    gcc = shutil.which("gcc")
    rng = random.Random(1)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGCC_")}
    with tempfile.TemporaryDirectory(prefix="sgcc-overhead-") as tmp:
        src = Path(tmp) / args.source.name
        shutil.copy(args.source, src)
        include = ["-I", str(args.source.parent)]
        situations = {
            "eligible -O3 -c": (["-O3", *include, "-c", src.name, "-o", "x.o"], env),
            "pass-through -O1 -c": (["-O1", *include, "-c", src.name, "-o", "x.o"], env),
            "disabled (SGCC_DISABLE=1)": (["-O3", *include, "-c", src.name, "-o", "x.o"], {**env, "SGCC_DISABLE": "1"}),
        }
        print(f"source: {args.source.relative_to(ROOT) if args.source.is_relative_to(ROOT) else args.source}, "
              f"{args.rounds} interleaved rounds, wall time")
        print(f"{'situation':28} {'gcc ms':>8} {'sgcc ms':>8} {'ratio':>7} {'95% CI':>15} {'extra ms':>9}")
        for name, (flags, senv) in situations.items():
            for _ in range(3):  # warm the page cache and gcc's files
                _time([gcc, *flags], env, tmp)
                _time([args.sgcc, *flags], senv, tmp)
            g, s = [], []
            for _ in range(args.rounds):
                pair = [("g", [gcc, *flags], env), ("s", [args.sgcc, *flags], senv)]
                rng.shuffle(pair)
                for tag, argv, e in pair:
                    (g if tag == "g" else s).append(_time(argv, e, tmp))
            ratios = [b / a for a, b in zip(g, s)]
            lo, hi = _interval(ratios, rng)
            gm, sm = statistics.median(g) * 1000, statistics.median(s) * 1000
            print(f"{name:28} {gm:8.1f} {sm:8.1f} {statistics.median(ratios):7.2f} "
                  f"{f'[{lo:.2f}, {hi:.2f}]':>15} {sm - gm:9.1f}")


if __name__ == "__main__":
    main()
