#!/usr/bin/env python3
"""Where an sgcc cache hit's CPU time goes, phase by phase, against gcc's own compile.

Rows, timed in one run of interleaved rounds (random order each round):

* ``gcc -c``: gcc's compile of the unit (driver, cc1, as);
* ``sgcc hit``: the real ``sgcc`` script, a repeated (memoized) hit on a winner of the unit;
* the same hit run in a harness (``--child``: the interpreter of the script, then sgcc's drop-in
  entry with checkpoints), which splits its CPU time (user+sys of the process, and of the
  children it waited for) into phases: interpreter start (up to the harness's first line, with
  ``site``), the entry's imports, settings, plan (context, index of winners), ``gcc -S``,
  reading gcc's assembly, the lookup (key, memo, signatures), writing the assembly, ``as``,
  statistics, clean-up; imports made inside a phase are counted apart (``of which imports``).
* ``python -c pass`` and ``python -S -c pass``: the interpreter's floor.

Usage: ``python bench/hit_cost.py [--rounds 20] [--functions 16] [--flags "-O2 -g"] [--before DIR]``
(``--before DIR``: another sgcc tree, ``git archive <commit> | tar -x -C DIR``, whose hit is timed
in the same rounds, with ``PYTHONPATH``).
"""

from __future__ import annotations

import os
import resource
import sys

_START = resource.getrusage(resource.RUSAGE_SELF)  # before anything else: the interpreter's start


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return (r.ru_utime + r.ru_stime) * 1e3


def child(argv: list[str], out_path: str) -> None:
    """Run sgcc's drop-in on ``argv`` as the ``sgcc`` script does, with checkpoints; write the
    phases (ms of CPU, self and children) to ``out_path``."""
    import time  # noqa: F401 - imported by site already; here for the reader

    phases: list[tuple[str, float, float]] = [("interpreter start (with site)",
                                                (_START.ru_utime + _START.ru_stime) * 1e3, 0.0)]
    imports = {"ms": 0.0, "depth": 0}
    marks = {"self": _cpu(resource.RUSAGE_SELF), "children": _cpu(resource.RUSAGE_CHILDREN), "imports": 0.0}
    import_ms: dict[str, float] = {}

    import importlib._bootstrap as bootstrap

    real_load = bootstrap._find_and_load

    def timed_load(name, import_):
        imports["depth"] += 1
        start = _cpu(resource.RUSAGE_SELF) if imports["depth"] == 1 else 0.0
        try:
            return real_load(name, import_)
        finally:
            imports["depth"] -= 1
            if imports["depth"] == 0:
                imports["ms"] += _cpu(resource.RUSAGE_SELF) - start

    bootstrap._find_and_load = timed_load

    def mark(name: str) -> None:
        now_self, now_children = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
        phases.append((name, now_self - marks["self"], now_children - marks["children"]))
        import_ms[name] = imports["ms"] - marks["imports"]
        marks.update(self=now_self, children=now_children, imports=imports["ms"])

    sys.argv = argv
    from sgcc.cli import main as _main  # noqa: F401 - what the script imports first
    from sgcc.dropin import driver

    mark("entry imports (sgcc.cli, drop-in driver)")

    def wrap(owner, name: str, label: str):
        real = getattr(owner, name)

        def wrapped(*a, **kw):
            mark("(between phases)")
            try:
                return real(*a, **kw)
            finally:
                mark(label)

        setattr(owner, name, wrapped)

    from sgcc import config

    wrap(config, "compile_settings", "settings (configuration layers)")
    wrap(driver, "plan", "plan (context, index of winners)")
    wrap(driver.EligibleCompile, "_gcc", "gcc -S (the driver and cc1)")
    wrap(driver, "_read", "read gcc's assembly")
    wrap(driver.EligibleCompile, "rewrite", "lookup (key, memo, signatures)")
    wrap(driver, "_write", "write the assembly")
    wrap(driver.EligibleCompile, "_assemble", "as")
    wrap(driver, "_stats", "statistics")
    wrap(driver, "_cleanup", "clean-up")
    status = driver.main(argv)
    mark("(between phases)")
    merged: dict[str, list[float]] = {}
    for name, own, kids in phases:
        row = merged.setdefault(name, [0.0, 0.0, 0.0])
        row[0] += own
        row[1] += kids
        row[2] += import_ms.get(name, 0.0)
    import json

    with open(out_path, "w") as fh:
        json.dump({"status": status, "phases": merged}, fh)


def main() -> None:
    import argparse
    import json
    import shutil
    import statistics
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root))
    sys.path.insert(0, str(root / "bench"))
    from build_overhead import _store_winner, interleaved
    from compile_cost import _run as run_timed
    from compile_cost import prepare

    from sgcc import proc
    from sgcc.cache import keys
    from sgcc.cache import store as cache

    def _run(argv: list[str], cwd: str, env: dict) -> float:
        return run_timed(argv, cwd, env)[0]  # CPU ms

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--functions", type=int, default=16)
    ap.add_argument("--flags", default="-O2 -g")
    ap.add_argument("--sgcc", default=str(Path(sys.executable).parent / "sgcc"))
    ap.add_argument("--before", type=Path)
    args = ap.parse_args()
    flags = args.flags.split()
    gcc, work, _ = prepare(args.functions, args.before, "sgcc-hit-cost-")
    try:
        base = {k: v for k, v in os.environ.items() if not k.startswith("SGCC_")}
        base.update(SGCC_CONFIG=str(Path(work) / "none.toml"), SGCC_CACHE_DIR=str(Path(work) / "cache"))
        os.environ.update(SGCC_CONFIG=base["SGCC_CONFIG"])  # the key this process signs with
        asm = proc.run([gcc, *flags, "-S", "unit.c", "-o", "-"], cwd=work, check=True).stdout.decode()
        _store_winner(cache.Store(base["SGCC_CACHE_DIR"]), keys.entry_key(keys.context(gcc, flags, "flags"),
                                                                           keys.tu_digest(asm)), asm)
        compile_args = [*flags, "-c", "unit.c", "-o", "unit.o"]
        py = sys.executable
        out = str(Path(work) / "phases.json")
        rows = {
            "gcc -c": ([gcc, *compile_args], base),
            "sgcc hit": ([args.sgcc, *compile_args], {**base, "PYTHONPATH": str(root)}),
            "sgcc hit, in the harness": ([py, str(Path(__file__).resolve()), "--child", out, args.sgcc,
                                          *compile_args], {**base, "PYTHONPATH": str(root)}),
            "python -c pass": ([py, "-c", "pass"], base),
            "python -S -c pass": ([py, "-S", "-c", "pass"], base),
        }
        if args.before:
            rows["sgcc hit [before]"] = ([args.sgcc, *compile_args], {**base, "PYTHONPATH": str(args.before.resolve())})
        for name in ("sgcc hit", "sgcc hit [before]"):
            if name in rows:  # learns the as command, memoizes the hit
                _run(*rows[name][:1], work, rows[name][1])
        log = Path(work) / "log"
        _run(rows["sgcc hit"][0], work, {**rows["sgcc hit"][1], "SGCC_LOGFILE": str(log)})
        if "(memoized)" not in log.read_text():
            raise SystemExit(f"not a memoized hit: {log.read_text()}")
        results: dict[str, list[float]] = {k: [] for k in rows}
        phases: list[dict[str, list[float]]] = []
        load = []
        for name in interleaved(list(rows), args.rounds):
            results[name].append(_run(rows[name][0], work, rows[name][1]))
            if name == "sgcc hit, in the harness":
                phases.append(json.loads(Path(out).read_text())["phases"])
            load.append(os.getloadavg()[0])
        gcc_med = statistics.median(results["gcc -c"])
        print(f"one compile of a {args.functions}-function unit ({len(asm)} bytes of assembly), {' '.join(flags)}; "
              f"{args.rounds} interleaved rounds; load average {min(load):.1f}-{max(load):.1f} "
              f"on {os.cpu_count()} CPUs")
        print(f"{'command':<28} {'CPU ms':>8} {'x gcc -c':>9}   CPU quartiles; paired ratio to gcc -c (quartiles)")
        for name, vals in results.items():
            s = sorted(vals)
            ratios = sorted(v / g for v, g in zip(vals, results["gcc -c"]))
            n = len(s)
            print(f"{name:<28} {statistics.median(s):8.1f} {statistics.median(s) / gcc_med:9.3f}   "
                  f"{s[n // 4]:.1f}-{s[3 * n // 4]:.1f}; {statistics.median(ratios):.3f} "
                  f"({ratios[n // 4]:.3f}-{ratios[3 * n // 4]:.3f})")
        print(f"\nthe hit in phases (medians over rounds, ms of CPU; 'x gcc -c': the phase's share of gcc's "
              f"{gcc_med:.1f} ms)")
        print(f"{'phase':<42} {'sgcc':>7} {'children':>9} {'of which imports':>17} {'x gcc -c':>9}")
        names = list(phases[0])
        total = 0.0
        for name in names:
            own = statistics.median(p[name][0] for p in phases if name in p)
            kids = statistics.median(p[name][1] for p in phases if name in p)
            imp = statistics.median(p[name][2] for p in phases if name in p)
            total += own + kids
            print(f"{name:<42} {own:7.1f} {kids:9.1f} {imp:17.1f} {(own + kids) / gcc_med:9.3f}")
        print(f"{'sum of medians':<42} {total:17.1f} {'':>17} {total / gcc_med:9.3f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[3:], sys.argv[2])
    else:
        main()
