#!/usr/bin/env python3
"""What a profile cut short sees: the hot function's share of the instructions when callgrind
profiles only the quickest test, against when it profiles as many tests as fit in a few seconds.

The engine profiles gcc's program quickest test first, for at most ``profile.PROFILE_SECONDS``
of wall time (at least one test). On a slow or loaded machine fewer tests fit, and a program's
hot loop often runs only in the tests left out (the large one). Before sgcc.engine.search.weigh
ranked the functions such a profile did not see last, it skipped them as "not executed": the
cause of CI's failure at stop 49's second try (the bundled dataset's hot functions never
searched). This prints, per problem of the bundled dataset that carries replay candidates, the
hot function's weight both ways, and what the engine does with it now.

Usage: ``python bench/profile_cut.py [--seconds 3]``. About a minute.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc.engine import profile  # noqa: E402
from sgcc.verify.box.sandbox import Sandbox, load_tests  # noqa: E402

SOURCES = ROOT / "examples" / "dataset-src"
DATASET = ROOT / "examples" / "dataset"
HOT = {"bubble_sort": "bubble_sort", "edit_distance": "edit_distance", "gray_code": "gray_decode_all",
       "lis": "lis", "min_rotation": "least_rotation", "triangles": "count_triangles"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="the longer profile's wall seconds (default 3)")
    args = ap.parse_args()
    print("| problem | hot function | tests | weight, quickest test only | weight, tests that fit | "
          "before: searched? | now: searched? |")
    print("|---|---|---:|---:|---:|---|---|")
    with tempfile.TemporaryDirectory() as tmp, Sandbox(timeout=60) as box:
        for name, fn in HOT.items():
            binary = Path(tmp) / name
            subprocess.run(["gcc", "-O3", "-o", str(binary), str(SOURCES / name / f"{name}.c")], check=True)
            tests = load_tests(DATASET / name / "tests")
            cut = profile.profile_tests(binary, tests, sandbox=box, names=[fn], seconds=0.0)
            more = profile.profile_tests(binary, tests, sandbox=box, names=[fn], seconds=args.seconds)
            if cut is None or more is None:
                print(f"| {name} | {fn} | {len(tests)} | valgrind failed | | | |")
                continue
            seen = cut.weights[fn] > 0
            complete = cut.profiled >= cut.total
            print(f"| {name} | {fn} | {len(tests)} | {cut.weights[fn]:.2g} ({cut.profiled} profiled) | "
                  f"{more.weights[fn]:.3f} ({more.profiled} profiled) | {'yes' if seen else 'no: skipped'} | "
                  f"{'yes' if seen else ('yes, last' if not complete else 'no: no test runs it')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
