#!/usr/bin/env python3
"""Is an accepted speedup reproducible? Optimize the same program twice, independently.

Runs `sgcc optimize` on examples/programs/popcount with its popcnt candidate under
--isa native, twice with different seeds, and prints both shipped (re-measured) estimates
with their 95% intervals, and whether the second estimate lies inside the first interval.

Usage: python bench/reproduce.py [--rounds N] [--program NAME] [--candidates DIR] [--isa flags|native]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc.candidates.replay import ReplayGenerator  # noqa: E402
from sgcc.engine import Request, optimize  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--program", default="popcount")
    parser.add_argument("--candidates", default="candidates-native")
    parser.add_argument("--isa", default="native")
    args = parser.parse_args()
    d = ROOT / "examples" / "programs" / args.program
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in (1, 2):
            req = Request(source=d / f"{d.name}.c", flags=["-O3", "-lm"], tests=d / "tests",
                          output=Path(tmp) / f"out{seed}", generators=[ReplayGenerator(d / args.candidates)],
                          isa=args.isa, timing_rounds=args.rounds, seed=seed)
            h = optimize(req).honest
            results.append(h)
            print(f"run {seed}: {h['speedup']:.3f}x [{h['ci_low']:.3f}, {h['ci_high']:.3f}] shipped {h['functions']}")
    first, second = results
    inside = first["ci_low"] <= second["speedup"] <= first["ci_high"]
    print(f"second estimate inside the first run's interval: {'yes' if inside else 'NO'}")


if __name__ == "__main__":
    main()
