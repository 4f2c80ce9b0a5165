#!/usr/bin/env python3
"""What the second world costs: ``sgcc optimize --generators replay`` on bundled examples, the
code of a checkout before worlds (``--before DIR``, e.g. ``git archive e20d13a | tar -x -C DIR``)
against this tree, interleaved (the order alternates from pair to pair, so machine drift hits
both alike), each with its own timing lock and no cache.

Prints one JSON line per run (program, which, wall seconds, candidates accepted, units shipped)
and, per program, the ratio of the medians (this tree / before).

Usage: ``python bench/worlds_cost.py --before DIR [--only popcount,collatz] [--reps 2]``.
About 80 s per run on a loaded 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "examples" / "programs"


def run_once(prog: str, before: Path | None, out: Path, tag: str) -> dict:
    d = PROGRAMS / prog
    env = {**os.environ, "SGCC_CACHE": "0", "SGCC_TIMING_LOCK": str(out / f"lock-{tag}"),
           "SGCC_CONFIG": str(out / "no-config.toml")}
    env.pop("PYTHONPATH", None)
    if before is not None:
        env["PYTHONPATH"] = str(before)  # ahead of this tree's editable install
    report = out / f"{prog}-{tag}.json"
    started = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", "import sys; from sgcc.cli import main; sys.exit(main())", "optimize",
                        str(d / f"{prog}.c"), "-O3", "--tests", str(d / "tests"), "-o", str(out / f"{prog}-{tag}"),
                        "--candidates", str(d / "candidates"), "--generators", "replay", "--report", str(report),
                        "--quiet"], env=env, cwd=out, capture_output=True)
    wall = time.perf_counter() - started
    row = {"program": prog, "which": tag, "wall": round(wall, 2), "rc": r.returncode}
    if report.exists():
        data = json.loads(report.read_text())
        row["accepted"] = sum(c.get("stage") == "accepted" for c in data.get("candidates", []))
        row["shipped"] = len(data.get("shipped") or [])
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="a checkout of sgcc before worlds")
    ap.add_argument("--only", default="popcount,collatz,hashmix,insertion_sort")
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    progs = [p for p in args.only.split(",") if p]
    rows = []
    with tempfile.TemporaryDirectory(prefix="sgcc-worlds-cost-") as tmp:
        out = Path(tmp)
        for rep in range(args.reps):
            for i, prog in enumerate(progs):
                order = ("before", "worlds") if (rep + i) % 2 == 0 else ("worlds", "before")
                for tag in order:
                    row = run_once(prog, args.before.resolve() if tag == "before" else None, out, f"{tag}-{rep}")
                    row["which"] = tag
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    for prog in progs:
        walls = {t: [r["wall"] for r in rows if r["program"] == prog and r["which"] == t] for t in ("before", "worlds")}
        if walls["before"] and walls["worlds"]:
            ratio = statistics.median(walls["worlds"]) / statistics.median(walls["before"])
            print(f"{prog}: before {walls['before']} s, worlds {walls['worlds']} s, ratio of medians {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
