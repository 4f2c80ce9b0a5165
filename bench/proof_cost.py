#!/usr/bin/env python3
"""What the stronger proof costs and whether it ever refuses gcc's own code.

1. The control-flow proof (sgcc.verify.static.controlflow) over gcc's objects: every file of
   tests/asm_corpus under 13 flag sets, and csmith programs when csmith is installed, each
   checked against itself. Reports false rejections (the goal is 0) and the time per object.
2. The generated inputs (sgcc.engine.proof): `sgcc optimize` on bundled example programs with
   the model-free generators and a fixed candidate budget, once with `mutants = 0` and once
   with the default, interleaved; reports the search-time ratio (goal: at most 1.25).

    python bench/proof_cost.py [--programs 4] [--budget 6] [--csmith 20]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc.verify.static import controlflow  # noqa: E402

FLAG_SETS = [
    ["-O2"], ["-O3"], ["-O3", "-fPIC"], ["-O3", "-fno-pie"], ["-O2", "-fno-omit-frame-pointer"],
    ["-O3", "-march=native"], ["-Ofast", "-funroll-loops"], ["-O3", "-fno-inline"],
    ["-O2", "-mavx2", "-fstack-protector-all"], ["-O3", "-g"], ["-O2", "-fno-if-conversion"],
    ["-O2", "-falign-functions=32", "-falign-loops=32"], ["-O3", "-fschedule-insns", "-fsched-pressure"],
]


def validator(sources: list[Path], extra: list[str], work: Path) -> tuple[int, int, list[float]]:
    objects = rejected = 0
    times = []
    for src in sources:
        for flags in FLAG_SETS:
            obj = work / f"{src.stem}-{abs(hash(tuple(flags)))}.o"
            if subprocess.run(["gcc", *flags, "-w", *extra, "-c", str(src), "-o", str(obj)],
                              capture_output=True).returncode:
                continue
            objects += 1
            start = time.process_time()
            problems = controlflow.check(obj, obj)
            times.append(time.process_time() - start)
            if problems:
                rejected += 1
                print(f"  FALSE REJECTION {src.name} {' '.join(flags)}: {problems[0]}")
    return objects, rejected, times


def search_time(program: Path, mutants: int, budget: str, out: Path) -> float:
    env = {**os.environ, "SGCC_MUTANTS": str(mutants)}
    start = time.monotonic()
    r = subprocess.run([str(Path(sys.executable).parent / "sgcc"), "optimize", str(program / f"{program.name}.c"),
                        "-O3", "--tests", str(program / "tests"), "-o", str(out), "--generators", "variants,layout",
                        "--budget", budget, "--seed", "1", "--timing-rounds", "8", "--no-cache", "-q"],
                       env=env, capture_output=True)
    if r.returncode:
        raise SystemExit(f"optimize failed on {program.name}: {r.stderr.decode()[-500:]}")
    return time.monotonic() - start


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", type=int, default=4, help="bundled example programs to search (0: skip)")
    ap.add_argument("--budget", default="6", help="candidate budget per search")
    ap.add_argument("--csmith", type=int, default=20, help="csmith programs for the validator (0: none)")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="sgcc-proofcost-"))
    corpus = sorted((ROOT / "tests" / "asm_corpus").glob("*.c"))
    n, bad, times = validator(corpus, [], work)
    if args.csmith and shutil.which("csmith"):
        progs = []
        for seed in range(1, args.csmith + 1):
            src = work / f"csmith{seed}.c"
            with open(src, "wb") as fh:
                subprocess.run(["csmith", "--seed", str(seed)], stdout=fh, cwd=work, check=True)
            progs.append(src)
        m, mbad, mtimes = validator(progs, ["-I/usr/include/csmith"], work)
        n, bad, times = n + m, bad + mbad, times + mtimes
    print(f"control-flow proof: {n} gcc objects, {bad} false rejections, "
          f"{1000 * statistics.median(times):.1f} ms median per object "
          f"({1000 * max(times):.0f} ms max) of CPU")
    if args.programs:
        programs = sorted(p for p in (ROOT / "examples" / "programs").iterdir() if (p / "tests").is_dir())
        ratios = []
        for program in programs[: args.programs]:
            pair = {}
            for mutants in (0, 16):  # interleaved per program
                pair[mutants] = search_time(program, mutants, args.budget, work / f"{program.name}-{mutants}")
            ratios.append(pair[16] / pair[0])
            print(f"  {program.name}: {pair[0]:.1f} s without generated inputs, {pair[16]:.1f} s with "
                  f"({ratios[-1]:.3f}x)")
        print(f"generated inputs: search time x{statistics.median(ratios):.3f} median "
              f"(min {min(ratios):.3f}, max {max(ratios):.3f}) over {len(ratios)} programs")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
