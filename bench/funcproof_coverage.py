#!/usr/bin/env python3
"""Which functions the function-level test covers (docs/proof.md), and what it costs.

For each program (examples/programs and bench/heldout by default, or the directories given):
build gcc's program, capture every function's entry states on its tests (in the box), and run
gcc's own object against itself on captured and mutated states. Prints per function: states
captured, states tested (mutated), seconds, or why it is tested on whole-program tests only;
and per program the capture time. gcc's own code must never differ from itself: any mismatch
is printed as an error and the exit status is 1.

With ``--polybench K1,K2`` it also covers PolyBench/C 4.2.1 kernels (MINI_DATASET, arrays
dumped) from a snapshot the ``fetch`` tool brought under /work/.mirror (``--polybench-repo``):
each kernel and polybench.c are joined into one source in a temporary directory, never into
the repository. PolyBench's kernels are ``static``: at -O3 gcc often inlines them into main.

Usage: python bench/funcproof_coverage.py [--states N] [--seconds S] [--json FILE]
           [--polybench gemm,atax,...] [--polybench-repo DIR] [PROGRAM_DIR ...]
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
from sgcc.verify.box.sandbox import Sandbox, load_tests  # noqa: E402
from sgcc.verify.function import funcdiff, funcstate  # noqa: E402


def programs(dirs: list[Path]) -> list[Path]:
    out = []
    for d in dirs:
        if (d / f"{d.name}.c").is_file():
            out.append(d)
        else:
            out += sorted(p for p in d.iterdir() if (p / f"{p.name}.c").is_file())
    return out


POLYBENCH_REPO = Path("/work/.mirror/MatthiasJReisinger+PolyBenchC-4.2.1/repo")


def polybench(kernels: list[str], repo: Path, into: Path) -> list[tuple[Path, list[str]]]:
    """Program directories (one source, one empty test) for PolyBench ``kernels``, and flags."""
    import subprocess

    files = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "--name-only", "HEAD"],
                           capture_output=True, text=True, check=True).stdout.split()

    def show(path: str) -> str:
        return subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True, text=True,
                              check=True).stdout

    util = into / "utilities"
    util.mkdir(parents=True, exist_ok=True)
    (util / "polybench.h").write_text(show("utilities/polybench.h"))
    out = []
    for k in kernels:
        src = next((f for f in files if f.endswith(f"/{k}/{k}.c")), None)
        if src is None:
            print(f"polybench: no kernel {k}", file=sys.stderr)
            continue
        d = into / k
        (d / "tests").mkdir(parents=True, exist_ok=True)
        (d / f"{k}.h").write_text(show(src[:-2] + ".h"))
        (d / f"{k}.c").write_text(show("utilities/polybench.c") + "\n" + show(src))
        (d / "tests" / "a.in").write_text("")
        out.append((d, ["-I", str(util), "-I", str(d), "-DMINI_DATASET", "-DPOLYBENCH_DUMP_ARRAYS"]))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--polybench", default="", help="comma-separated PolyBench kernels")
    parser.add_argument("--polybench-repo", type=Path, default=POLYBENCH_REPO)
    parser.add_argument("dirs", nargs="*", type=Path)
    args = parser.parse_args()
    dirs = args.dirs or ([] if args.polybench else [ROOT / "examples" / "programs", ROOT / "bench" / "heldout"])
    rows, bad = [], 0
    pb_dir = Path(tempfile.mkdtemp(prefix="sgcc-polybench-"))
    todo = [(d, []) for d in programs(dirs)]
    if args.polybench:
        todo += polybench([k for k in args.polybench.split(",") if k], args.polybench_repo, pb_dir)
    for d, extra in todo:
        with tempfile.TemporaryDirectory(prefix="sgcc-cov-") as tmp:
            tmp = Path(tmp)
            req = Request(source=d / f"{d.name}.c", flags=["-O3", *extra, "-lm"], tests=d / "tests",
                          output=tmp / "out")
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
                    row["dropped"] = sum(verdict.dropped.get(name, {}).values())
                    row["dropped_why"] = dict(verdict.dropped.get(name, {}))
                else:
                    row["untested"] = verdict.untested.get(name, "")
                rows.append(row)
                whys = ", ".join(f"{k} {v}" for k, v in row.get("dropped_why", {}).items())
                what = (f"tested {row['tested']} ({row['mutated']} mutated, {row['dropped']} dropped"
                        f"{': ' + whys if whys else ''})"
                        if "tested" in row else
                        f"ERROR {row['error']}" if "error" in row else f"program tests only: {row['untested']}")
                print(f"{d.name:16} {name:22} captured {row['captured']:2}  {what}  [{row['seconds']} s; "
                      f"capture {row['capture_seconds']} s]", flush=True)
    import shutil

    shutil.rmtree(pb_dir, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    tested = sum(1 for r in rows if "tested" in r)
    print(f"{tested} of {len(rows)} functions tested on function states; gcc's own code refused: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
