#!/usr/bin/env python3
"""Which functions the function-level test covers (docs/proof.md), and what it costs.

For each program (examples/programs and bench/heldout by default, or the directories given):
build gcc's program, capture every function's entry states on its tests (in the box), and run
gcc's own object against itself on captured and mutated states. Prints per function: states
captured, states tested (mutated), seconds, or why it is tested on whole-program tests only;
and per program the capture time. gcc's own code must never differ from itself: any mismatch
is printed as an error and the exit status is 1.

Usage: python bench/funcproof_coverage.py [--states N] [--seconds S] [--json FILE] [PROGRAM_DIR ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc.engine.baseline import build_baseline  # noqa: E402
from sgcc.engine.request import Request  # noqa: E402
from sgcc.verify import funcdiff, funcstate  # noqa: E402
from sgcc.verify.sandbox import Sandbox, load_tests  # noqa: E402


def programs(dirs: list[Path]) -> list[Path]:
    out = []
    for d in dirs:
        if (d / f"{d.name}.c").is_file():
            out.append(d)
        else:
            out += sorted(p for p in d.iterdir() if (p / f"{p.name}.c").is_file())
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("dirs", nargs="*", type=Path)
    args = parser.parse_args()
    dirs = args.dirs or [ROOT / "examples" / "programs", ROOT / "bench" / "heldout"]
    rows, bad = [], 0
    for d in programs(dirs):
        with tempfile.TemporaryDirectory(prefix="sgcc-cov-") as tmp:
            tmp = Path(tmp)
            req = Request(source=d / f"{d.name}.c", flags=["-O3", "-lm"], tests=d / "tests", output=tmp / "out")
            program = build_baseline(req, tmp)
            names = [u.name for u in program.asm.units]
            with Sandbox(timeout=30) as sandbox:
                tests = sandbox.record(program.binary, load_tests(d / "tests"))
                t0 = time.perf_counter()
                cap = funcstate.capture(program, sandbox, tests, tmp / "cap", "gcc", names)
                capture_s = time.perf_counter() - t0
            tester = funcdiff.FunctionTester(cap, program.obj, program.source_text, states=args.states,
                                             seconds=args.seconds)
            for name in names:
                t0 = time.perf_counter()
                verdict = tester.check(program.obj, [name])
                row = {"program": d.name, "function": name, "captured": len(cap.states.get(name, [])),
                       "capture_seconds": round(capture_s, 2), "seconds": round(time.perf_counter() - t0, 2)}
                if verdict.mismatch is not None:
                    bad += 1
                    row["error"] = verdict.mismatch.render()
                elif name in verdict.tested:
                    row["tested"], row["mutated"] = verdict.tested[name]
                else:
                    row["untested"] = verdict.untested.get(name, "")
                rows.append(row)
                what = (f"tested {row['tested']} ({row['mutated']} mutated)" if "tested" in row else
                        f"ERROR {row['error']}" if "error" in row else f"program tests only: {row['untested']}")
                print(f"{d.name:16} {name:22} captured {row['captured']:2}  {what}  [{row['seconds']} s; "
                      f"capture {row['capture_seconds']} s]", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    tested = sum(1 for r in rows if "tested" in r)
    print(f"{tested} of {len(rows)} functions tested on function states; gcc's own code refused: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
