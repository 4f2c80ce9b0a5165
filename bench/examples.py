#!/usr/bin/env python3
"""Run `sgcc optimize` on every bundled example program and print the papers' table columns.

For each program in examples/programs/ (NAME/NAME.c, NAME/tests/, NAME/candidates/), the
replay candidates go through the whole engine. Programs with candidates-native/ are run a
second time with --isa native. Per program: compiled?, passed?, the papers' speedup
(best-of-N, clipped at 1) and sgcc's honest one (shipped program re-measured, unclipped, 95%
interval). Overall: compile pass %, test pass %, speedup p25/p50/p75 and average (papers'
definitions) and the geometric mean of the honest speedups.

Usage: python bench/examples.py [--rounds N] [--only NAME ...] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc.candidates.replay import ReplayGenerator  # noqa: E402
from sgcc.optimize import Request, optimize  # noqa: E402
from sgcc.progress import Progress  # noqa: E402

PROGRAMS = ROOT / "examples" / "programs"


def programs(only: list[str] | None):
    for d in sorted(p for p in PROGRAMS.iterdir() if (p / f"{p.name}.c").is_file()):
        if only and d.name not in only:
            continue
        yield d


def quantiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) == 1:
        return values[0], values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[1], q[2]


def run_one(d: Path, isa: str, cand_dir: Path, args, out_dir: Path) -> dict:
    flags = ["-O3", "-lm"]
    req = Request(source=d / f"{d.name}.c", flags=flags, tests=d / "tests", output=out_dir / f"{d.name}-{isa}",
                  generators=[ReplayGenerator(cand_dir)] if cand_dir.is_dir() else [], isa=isa,
                  timing_rounds=args.rounds, seed=args.seed)
    started = time.perf_counter()
    report = optimize(req, Progress(enabled=args.progress))
    row = {"program": d.name, "isa": isa, **report.paper, "honest": report.honest,
           "candidates": len(report.candidates), "stages": report.stage_counts(),
           "seconds": time.perf_counter() - started}
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args()
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory(prefix="sgcc-examples-") as tmp:
        for d in programs(args.only):
            rows.append(run_one(d, "flags", d / "candidates", args, Path(tmp)))
            if (d / "candidates-native").is_dir():
                rows.append(run_one(d, "native", d / "candidates-native", args, Path(tmp)))
            print(f"  done {d.name}", file=sys.stderr)

    print(f"{'program':18} {'isa':7} {'cands':>5} {'compiled':>8} {'passed':>6} {'paper':>6} "
          f"{'honest':>7} {'95% CI':>16} {'shipped':20} {'secs':>6}")
    for r in rows:
        h = r["honest"]
        ci = f"[{h['ci_low']:.3f}, {h['ci_high']:.3f}]"
        print(f"{r['program']:18} {r['isa']:7} {r['candidates']:5d} {str(r['compiled']):>8} {str(r['passed']):>6} "
              f"{r['speedup']:6.2f} {h['speedup']:7.3f} {ci:>16} "
              f"{','.join(h['functions']) or '-':20} {r['seconds']:6.1f}")
    n = len(rows)
    paper = [r["speedup"] for r in rows]
    p25, p50, p75 = quantiles(paper)
    honest = [r["honest"]["speedup"] for r in rows]
    geo = math.exp(sum(math.log(s) for s in honest) / n)
    print()
    print(f"programs {n}  compile pass {100 * sum(r['compiled'] for r in rows) / n:.1f}%  "
          f"test pass {100 * sum(r['passed'] for r in rows) / n:.1f}%  "
          f"speedup p25/p50/p75 {p25:.2f}/{p50:.2f}/{p75:.2f}  average {statistics.mean(paper):.3f}  "
          f"(papers' definitions)")
    print(f"honest: geometric mean of shipped, re-measured speedups {geo:.3f}; "
          f"programs with a significant gain {sum(bool(r['honest']['functions']) for r in rows)}/{n}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
