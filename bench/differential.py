#!/usr/bin/env python3
"""External differential harness: sgcc against gcc on programs nobody here wrote.

Two checks, each on random programs from csmith (Debian packages ``csmith`` and
``libcsmith-dev``) and, when a directory of them is given, gcc's own torture tests
(``gcc/testsuite/gcc.c-torture/execute/*.c`` from a gcc source tree):

1. **Drop-in**: every program compiled to an object by ``gcc`` and by ``sgcc`` with the same
   command line in the same directory, under several flag sets; exit status, stdout, stderr
   and the object's bytes must be identical.
2. **Optimize**: on a sample, ``sgcc optimize`` with the default generators (one test: the
   program's own output on empty stdin, recorded from the baseline as sgcc always does), and
   the shipped program's output compared with a ``gcc -O0`` build's.

    python bench/differential.py --csmith 200 --optimize 10 [--torture DIR] [--json FILE]

Exit status 1 if any difference was found. Without csmith and without --torture, it says so
and exits 0 having tried nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLAG_SETS = [
    ["-O2"], ["-O3"], ["-O3", "-g"], ["-O3", "-fPIC"], ["-O2", "-march=x86-64-v2"], ["-Ofast"],
    ["-O3", "-funroll-loops"], ["-O2", "-fno-omit-frame-pointer"], ["-O3", "-MMD"], ["-O2", "-Wall"],
]
CSMITH_INCLUDE = "/usr/include/csmith"


def _sgcc() -> str:
    exe = Path(sys.executable).parent / "sgcc"
    return str(exe) if exe.exists() else (shutil.which("sgcc") or "sgcc")


#: sgcc runs with the caller's environment less SGCC_* settings, so the comparison is the default.
ENV = {k: v for k, v in os.environ.items() if not k.startswith("SGCC_") or k in ("SGCC_CACHE_DIR", "SGCC_CONFIG")}


def _run(argv, cwd, timeout=120, stdin=b""):
    try:
        r = subprocess.run(argv, cwd=cwd, input=stdin, capture_output=True, timeout=timeout, env=ENV)
        return r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired:
        return "timeout", b"", b""


def csmith_programs(n: int, seed: int, out: Path) -> list[Path]:
    """``n`` csmith programs that compile and finish quickly at -O0."""
    if shutil.which("csmith") is None:
        return []
    rng = random.Random(seed)
    progs = []
    tries = 0
    while len(progs) < n and tries < n * 4:
        tries += 1
        s = rng.randrange(1, 2**31)
        src = out / f"csmith{s}.c"
        with open(src, "wb") as fh:
            # csmith writes platform.info into its working directory: keep it in ``out``.
            if subprocess.run(["csmith", "--seed", str(s)], stdout=fh, stderr=subprocess.DEVNULL, cwd=out).returncode:
                continue
        exe = out / f"csmith{s}.O0"
        rc, _, _ = _run(["gcc", "-O0", "-w", f"-I{CSMITH_INCLUDE}", str(src), "-o", str(exe)], out)
        if rc != 0:
            continue
        rc, _, _ = _run([str(exe)], out, timeout=5)
        if rc != 0:  # crashes, or runs too long to be a useful test
            continue
        progs.append(src)
    return progs


def torture_programs(directory: Path, n: int, seed: int) -> list[Path]:
    files = sorted(directory.glob("*.c"))
    random.Random(seed).shuffle(files)
    return files[:n]


def dropin(progs: list[Path], work: Path, flag_sets) -> dict:
    """Compile each program with gcc and sgcc, compare everything."""
    tried = identical = 0
    differences = []
    for src in progs:
        for flags in flag_sets:
            extra = [f"-I{CSMITH_INCLUDE}"] if src.name.startswith("csmith") else []
            argv = [*flags, "-w", *extra, "-c", str(src), "-o", "out.o"]
            results = []
            for compiler in (["gcc"], [_sgcc()]):
                d = work / "dropin"
                shutil.rmtree(d, ignore_errors=True)
                d.mkdir()
                rc, out, err = _run([*compiler, *argv], d)
                obj = (d / "out.o").read_bytes() if (d / "out.o").exists() else None
                dep = (d / "out.d").read_bytes() if (d / "out.d").exists() else None
                results.append((rc, out, err, obj, dep))
            tried += 1
            if results[0] == results[1]:
                identical += 1
            else:
                differences.append({"program": src.name, "flags": flags,
                                    "what": [k for k, a, b in zip(("status", "stdout", "stderr", "object", "deps"),
                                                                   results[0], results[1]) if a != b]})
    return {"compiles": tried, "identical": identical, "differences": differences}


def optimize(progs: list[Path], work: Path, budget: str) -> dict:
    """``sgcc optimize`` with the default generators; the shipped program against -O0."""
    tried = optimized = 0
    differences, failures = [], []
    for src in progs:
        d = work / f"opt-{src.stem}"
        shutil.rmtree(d, ignore_errors=True)
        (d / "tests").mkdir(parents=True)
        (d / "tests" / "empty.in").write_bytes(b"")
        extra = [f"-I{CSMITH_INCLUDE}"] if src.name.startswith("csmith") else []
        rc, _, _ = _run(["gcc", "-O0", "-w", *extra, str(src), "-o", str(d / "ref")], d)
        if rc != 0:
            continue
        ref = _run([str(d / "ref")], d, timeout=10)
        tried += 1
        started = time.monotonic()
        rc, _out, err = _run([_sgcc(), "optimize", str(src), "-O3", "-w", *extra, "--tests", "tests", "-o", "out",
                              "--budget", budget, "--report", "report.json", "-q"], d, timeout=3600)
        seconds = time.monotonic() - started
        if rc != 0:
            failures.append({"program": src.name, "status": rc, "stderr": err.decode(errors="replace")[-500:]})
            continue
        shipped = json.loads((d / "report.json").read_text()).get("final", {}) or {}
        if shipped.get("units"):
            optimized += 1
        got = _run([str(d / "out")], d, timeout=10)
        if got[:2] != ref[:2]:
            differences.append({"program": src.name, "expected": ref[1].decode(errors="replace")[:200],
                                "got": got[1].decode(errors="replace")[:200]})
        print(f"  optimize {src.name}: {seconds:.0f}s, {'changed' if shipped.get('units') else 'gcc'}"
              f"{'' if got[:2] == ref[:2] else ', OUTPUT DIFFERS'}", flush=True)
    return {"programs": tried, "optimized": optimized, "output_differences": differences, "failures": failures}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csmith", type=int, default=50, help="csmith programs to generate (0: none)")
    ap.add_argument("--torture", type=Path, help="a directory of gcc torture tests (gcc.c-torture/execute)")
    ap.add_argument("--torture-count", type=int, default=200)
    ap.add_argument("--flag-sets", type=int, default=len(FLAG_SETS), help="how many of the flag sets to use")
    ap.add_argument("--optimize", type=int, default=5, help="programs to run sgcc optimize on")
    ap.add_argument("--budget", default="60s", help="sgcc optimize budget per program")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="sgcc-diff-"))
    progs = csmith_programs(args.csmith, args.seed, work) if args.csmith else []
    if args.torture:
        progs += torture_programs(args.torture, args.torture_count, args.seed)
    if not progs:
        print("differential: nothing to try (no csmith in PATH and no --torture DIR)")
        return 0
    print(f"differential: {len(progs)} programs, {args.flag_sets} flag sets", flush=True)
    result = {"programs": len(progs), "dropin": dropin(progs, work, FLAG_SETS[: args.flag_sets])}
    d = result["dropin"]
    print(f"drop-in: {d['compiles']} compiles, {d['identical']} identical, {len(d['differences'])} differ")
    for diff in d["differences"][:20]:
        print(f"  DIFFERS {diff['program']} {' '.join(diff['flags'])}: {', '.join(diff['what'])}")
    if args.optimize:
        sample = [p for p in progs if p.name.startswith("csmith")][: args.optimize] or progs[: args.optimize]
        o = result["optimize"] = optimize(sample, work, args.budget)
        print(f"optimize: {o['programs']} programs, {o['optimized']} changed by sgcc, "
              f"{len(o['output_differences'])} output differences, {len(o['failures'])} failed runs")
        for f in o["failures"][:5]:
            print(f"  FAILED {f['program']}: status {f['status']}: {f['stderr'][-300:]}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    bad = d["differences"] or result.get("optimize", {}).get("output_differences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
