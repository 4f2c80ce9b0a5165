#!/usr/bin/env python3
"""Where one compile's overhead goes: CPU (user+sys, from wait4) and wall of single commands,
interleaved in a random order every round, medians and the ratio to gcc's own compile.

Rows: gcc itself; sgcc on each path a build takes (pass-through, eligible with nothing to
substitute, full path missing in a context that has winners, first hit, repeated hit,
SGCC_DISABLE); and the bare interpreter (``python -c pass``, with and without ``site``), which
bounds what any Python drop-in can cost.

Usage: ``python bench/compile_cost.py [--rounds 30] [--functions 16] [--flags "-O2 -g"] [--before DIR]``

``--before DIR``: another source tree of sgcc (``git archive <commit> | tar -x -C DIR``); each
sgcc row is then timed twice in the same interleaved rounds, once importing this tree and once
that one (``PYTHONPATH``), so a change's cost on the compile path is a ratio from one run.
``--stub``: sgcc runs ``true`` (copied under the name gcc) in gcc's place (``SGCC_COMPILER``), so the rows that hand the
command over at once (pass-through, disabled, nothing to substitute) time sgcc's own cost alone,
without gcc's compile and its noise; the cache-hit rows, which need gcc's output, are left out.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from build_overhead import _store_winner, interleaved  # noqa: E402
from overhead import typical_source  # noqa: E402

from sgcc import proc  # noqa: E402
from sgcc.cache import keys  # noqa: E402
from sgcc.cache import store as cache  # noqa: E402


def _run(argv: list[str], cwd: str, env: dict) -> tuple[float, float]:
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.chdir(cwd)
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {argv}")
    return (usage.ru_utime + usage.ru_stime) * 1e3, (time.perf_counter() - start) * 1e3


def prepare(functions: int, before: Path | None, prefix: str) -> tuple[str, str, Path]:
    """Bytecode for this tree (and ``before``), as pip leaves an installed package; the real
    gcc; a scratch directory with ``unit.c``, a ``functions``-function unit of ordinary code."""
    compileall.compile_dir(str(ROOT / "sgcc"), quiet=1)
    if before:
        compileall.compile_dir(str(before / "sgcc"), quiet=1)
    gcc = os.path.realpath(shutil.which("gcc"))
    work = tempfile.mkdtemp(prefix=prefix)
    src = Path(work) / "unit.c"
    src.write_text(re.sub(r"\b([a-z]+)_(\d+)\b", r"\1_u_\2", typical_source(functions=functions)))
    return gcc, work, src


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--functions", type=int, default=16)
    ap.add_argument("--flags", default="-O2 -g")
    ap.add_argument("--sgcc", default=shutil.which("sgcc") or str(Path(sys.executable).parent / "sgcc"))
    ap.add_argument("--before", type=Path, help="another sgcc source tree to time beside this one")
    ap.add_argument("--stub", action="store_true", help="run `true` in gcc's place: sgcc's own cost alone")
    args = ap.parse_args()
    flags = args.flags.split()
    gcc, work, _ = prepare(args.functions, args.before, "sgcc-compile-cost-")
    try:
        asm = proc.run([gcc, *flags, "-S", "unit.c", "-o", "-"], cwd=work, check=True).stdout.decode()
        ctx = keys.context(gcc, flags, "flags")
        hit = cache.Store(Path(work) / "hit")
        _store_winner(hit, keys.entry_key(ctx, keys.tu_digest(asm)), asm)
        first = cache.Store(Path(work) / "first")
        _store_winner(first, keys.entry_key(ctx, keys.tu_digest(asm)), asm)
        miss = cache.Store(Path(work) / "miss")  # a winner in this context, for other code
        _store_winner(miss, keys.entry_key(ctx, "0" * 64), asm)
        base = {k: v for k, v in os.environ.items() if not k.startswith("SGCC_")}
        base["SGCC_CONFIG"] = str(Path(work) / "none.toml")
        compile_args = [*flags, "-c", "unit.c", "-o", "unit.o"]
        py = sys.executable  # the environment's interpreter, as sgcc's script runs it
        rows = {
            "gcc": ([gcc, *compile_args], base),
            "gcc -O1": ([gcc, "-O1", *compile_args[1:]], base),
            "sgcc -O1 (pass-through)": ([args.sgcc, "-O1", *compile_args[1:]], base),
            "sgcc SGCC_DISABLE=1": ([args.sgcc, *compile_args], {**base, "SGCC_DISABLE": "1"}),
            "sgcc nothing to substitute": ([args.sgcc, *compile_args], {**base, "SGCC_CACHE_DIR": f"{work}/empty"}),
            "sgcc full path, miss": ([args.sgcc, *compile_args], {**base, "SGCC_CACHE_DIR": miss.root}),
            "sgcc hit (memoized)": ([args.sgcc, *compile_args], {**base, "SGCC_CACHE_DIR": hit.root}),
            "sgcc first hit (parse, join)": ([args.sgcc, *compile_args], {**base, "SGCC_CACHE_DIR": first.root}),
            "python -c pass": ([py, "-c", "pass"], base),
            "python -S -c pass": ([py, "-S", "-c", "pass"], base),
        }
        if args.stub:
            # `true` under the name gcc: sgcc takes it for gcc (a compiler of another name gets
            # the command untouched, which would make every row a pass-through).
            true = os.path.join(work, "stub", "gcc")
            os.makedirs(os.path.dirname(true))
            shutil.copy2(shutil.which("true"), true)
            for name in ("sgcc full path, miss", "sgcc hit (memoized)", "sgcc first hit (parse, join)"):
                del rows[name]
            for name in list(rows):
                argv, env = rows[name]
                if name.startswith("gcc"):
                    rows[name] = ([true, *argv[1:]], env)
                elif name.startswith("sgcc"):
                    rows[name] = (argv, {**env, "SGCC_COMPILER": true})
        if args.before:
            for name in [n for n in rows if n.startswith("sgcc")]:
                argv, env = rows[name]
                rows[name] = (argv, {**env, "PYTHONPATH": str(ROOT)})
                rows[name + " [before]"] = (argv, {**env, "PYTHONPATH": str(args.before.resolve())})
        for name in ("sgcc hit (memoized)", "sgcc full path, miss", "sgcc first hit (parse, join)"):
            if name in rows:  # learns the as command, memoizes the hit
                _run(rows[name][0], work, rows[name][1])
        results: dict[str, list[tuple[float, float]]] = {k: [] for k in rows}
        load = []
        for name in interleaved(list(rows), args.rounds):
            if name.startswith("sgcc first hit"):  # forget the memo: this is the first hit again
                shutil.rmtree(os.path.join(first.root, "entries", keys.context_id(ctx), "joined"),
                              ignore_errors=True)
            results[name].append(_run(rows[name][0], work, rows[name][1]))
            load.append(os.getloadavg()[0])
        medians = {k: (statistics.median(c for c, _ in v), statistics.median(w for _, w in v))
                   for k, v in results.items()}
        print(f"one compile of a {args.functions}-function unit, {' '.join(flags)}; {args.rounds} interleaved rounds; "
              f"load average {min(load):.1f}-{max(load):.1f} on {os.cpu_count()} CPUs")
        print(f"{'command':<39} {'CPU ms':>8} {'x gcc':>6} {'+ms':>6} {'wall ms':>8} {'x gcc':>6}  CPU quartiles"
              "   (x gcc: to gcc with the same flags)")
        for name, vals in results.items():
            cpu = sorted(c for c, _ in vals)
            med, wall = medians[name]
            gcc_cpu, gcc_wall = medians["gcc -O1" if "-O1" in name else "gcc"]
            q1, q3 = cpu[len(cpu) // 4], cpu[3 * len(cpu) // 4]
            print(f"{name:<39} {med:8.1f} {med / gcc_cpu:6.3f} {med - gcc_cpu:+6.1f} {wall:8.1f} "
                  f"{wall / gcc_wall:6.3f}  {q1:.1f}-{q3:.1f}")
        if args.before:
            print("\nthis tree over the --before tree, per row (paired by round: median of the CPU-time ratios, "
                  "quartiles)")
            for name in [n for n in rows if n.startswith("sgcc") and not n.endswith("[before]")]:
                ratios = sorted(a[0] / b[0] for a, b in zip(results[name], results[name + " [before]"]))
                print(f"{name:<39} {statistics.median(ratios):6.3f}  {ratios[len(ratios) // 4]:.3f}-"
                      f"{ratios[3 * len(ratios) // 4]:.3f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
