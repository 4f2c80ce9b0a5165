#!/usr/bin/env python3
"""What the model-free generators find: each alone and all together, in both instruction-set modes.

For every program in a directory of CodeNet-style programs (NAME/NAME.c, NAME/tests/*.in,
optional *.out; default examples/programs/, or bench/heldout/ for programs nobody tuned on),
this runs `sgcc optimize`'s engine once per configuration -- `variants`, `pgo`, `layout`
alone and `all` three together -- under `--isa flags` (the portable default) and
`--isa native`, each with `--budget` per generator (`all` gets three), and reports per run:

* the honest speedup over gcc -O3: the shipped program re-measured by the engine on fresh
  paired rounds (Report.honest), unclipped, with its 95% interval; 1.0 when the baseline
  is shipped;
* the test pass rate of the shipped binary, checked here independently of the engine: the
  binary runs on every test input (plain subprocess, no sandbox) and its output and exit
  status are compared with the .out file or, where there is none, with a gcc -O3 build of
  the program made here;
* which generator produced each shipped unit, and the search time (the whole engine run).

Overall, per mode and configuration: the geometric mean of the honest speedups, how many
programs gained significantly, the pass rate, the total time. The baseline (and its callgrind
profile) is built once per program and mode and shared by the runs.

Usage: python bench/generators.py [--dir DIR] [--only NAME ...] [--configs variants,pgo,layout,all]
       [--isa flags|native|both] [--rounds N] [--min-sample S] [--budget B] [--seed N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc import config as configmod  # noqa: E402
from sgcc import proc  # noqa: E402
from sgcc.candidates import registry  # noqa: E402
from sgcc.engine import Engine, Request  # noqa: E402
from sgcc.progress import Progress  # noqa: E402

CONFIGS = {"variants": ["variants"], "pgo": ["pgo"], "layout": ["layout"], "all": ["variants", "pgo", "layout"]}
FLAGS = ["-O3", "-lm"]


def programs(directory: Path, only: list[str] | None):
    for d in sorted(p for p in directory.iterdir() if (p / f"{p.name}.c").is_file() and (p / "tests").is_dir()):
        if only and d.name not in only:
            continue
        yield d


def expected_outputs(d: Path, work: Path) -> list[tuple[str, bytes, bytes, int]]:
    """(test, stdin, expected stdout, expected status) for every test, from .out files or a
    gcc -O3 build made here (the papers' definition: the original program's output)."""
    ref = work / f"{d.name}-gcc-O3"
    proc.run(["gcc", *FLAGS[:1], str(d / f"{d.name}.c"), *FLAGS[1:], "-o", str(ref)], check=True, timeout=300)
    out = []
    for t in sorted((d / "tests").glob("*.in")):
        stdin = t.read_bytes()
        r = proc.run([str(ref)], stdin=stdin, timeout=300)
        want = t.with_suffix(".out").read_bytes() if t.with_suffix(".out").is_file() else r.stdout
        out.append((t.name, stdin, want, r.returncode))
    return out


def pass_rate(binary: Path, expected) -> tuple[int, int]:
    passed = 0
    for _name, stdin, want, status in expected:
        r = proc.run([str(binary)], stdin=stdin, timeout=300)
        passed += (r.stdout, r.returncode) == (want, status)
    return passed, len(expected)


def run_config(d: Path, isa: str, cfg_name: str, program, args, work: Path) -> dict:
    cfg = configmod.load({"generators": ",".join(CONFIGS[cfg_name])})
    # The budget is per generator: `all` gets the three budgets together, so that it is
    # not starved by sharing one generator's budget (and the three preparations) three ways.
    seconds, candidates = configmod.parse_budget(args.budget)
    k = len(CONFIGS[cfg_name])
    seconds = seconds * k if seconds is not None else None
    candidates = candidates * k if candidates is not None else None
    out = work / f"{d.name}-{isa}-{cfg_name}"
    req = Request(source=d / f"{d.name}.c", flags=FLAGS, tests=d / "tests", output=out,
                  generators=registry.build(cfg, names=CONFIGS[cfg_name]), isa=isa,
                  timing_rounds=args.rounds, min_sample=args.min_sample, seed=args.seed,
                  budget_seconds=seconds, budget_candidates=candidates, jobs=args.jobs)
    engine = Engine(req, Progress(enabled=args.progress), program=program)
    try:
        report = engine.run()
    finally:
        engine.close()
    by_id = {c.id: c for c in report.candidates}
    shipped = [{"function": by_id[i].function, "generator": by_id[i].generator, "origin": by_id[i].origin}
               for i in report.shipped if i in by_id]
    return {"program": d.name, "isa": isa, "config": cfg_name, "honest": report.honest, "shipped": shipped,
            "candidates": len(report.candidates), "built": sum(c.id != "-" for c in report.candidates),
            "stages": report.stage_counts(), "seconds": report.seconds, "notes": report.notes,
            "binary": str(out),
            "detail": [{"id": c.id, "function": c.function, "generator": c.generator, "origin": c.origin,
                        "stage": c.stage, "reason": c.reason, "speedup": c.speedup, "low": c.ci_low,
                        "high": c.ci_high, "rounds": c.rounds, "confirm": c.confirm}
                       for c in report.candidates if c.id != "-"]}


def baseline(d: Path, isa: str, args, work: Path):
    """The program's baseline (and its profile, on first use), built once per mode."""
    req = Request(source=d / f"{d.name}.c", flags=FLAGS, tests=d / "tests", output=work / "unused", isa=isa)
    engine = Engine(req)
    return engine, engine.build_baseline()


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=ROOT / "examples" / "programs")
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--configs", default="variants,pgo,layout,all")
    parser.add_argument("--isa", choices=["flags", "native", "both"], default="both")
    parser.add_argument("--rounds", type=int, default=10, help="timing rounds per comparison")
    parser.add_argument("--min-sample", type=float, default=0.05, help="seconds one timing sample must last")
    parser.add_argument("--budget", default="", help="search budget per generator and run ('60s', '12', '60s,12'); "
                                                      "`all` gets it once per generator")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args()
    configs = [c for c in args.configs.split(",") if c]
    for c in configs:
        if c not in CONFIGS:
            parser.error(f"unknown configuration {c} (known: {', '.join(CONFIGS)})")
    isas = ["flags", "native"] if args.isa == "both" else [args.isa]

    rows = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sgcc-bench-gen-") as tmp:
        work = Path(tmp)
        for d in programs(args.dir, args.only):
            expected = expected_outputs(d, work)
            weights = None
            for isa in isas:
                base_engine, program = baseline(d, isa, args, work)
                program.weights = weights
                try:
                    for cfg_name in configs:
                        try:
                            row = run_config(d, isa, cfg_name, program, args, work)
                        except Exception as exc:  # noqa: BLE001 - one failed run is a row, not the end
                            row = {"program": d.name, "isa": isa, "config": cfg_name, "error": repr(exc),
                                   "honest": {"speedup": 1.0, "ci_low": 1.0, "ci_high": 1.0, "functions": []},
                                   "shipped": [], "candidates": 0, "built": 0, "seconds": 0.0,
                                   "binary": str(work / "missing")}
                        binary = Path(row["binary"])
                        row["tests_passed"], row["tests_total"] = (
                            pass_rate(binary, expected) if binary.exists() else (0, len(expected)))
                        rows.append(row)
                        weights = program.weights
                        h = row["honest"]
                        print(f"  {d.name:16} {isa:6} {cfg_name:8} {h['speedup']:.3f} "
                              f"[{h['ci_low']:.3f}, {h['ci_high']:.3f}] tests {row['tests_passed']}/"
                              f"{row['tests_total']} {row['seconds']:.0f}s", file=sys.stderr, flush=True)
                finally:
                    base_engine.close()
    elapsed = time.perf_counter() - started

    print(f"{'program':16} {'isa':6} {'config':8} {'honest':>7} {'95% CI':>16} {'tests':>7} {'built':>5} "
          f"{'secs':>5}  shipped")
    for r in rows:
        h = r["honest"]
        what = ", ".join(f"{s['function']} ({s['origin'] or s['generator']})" for s in r["shipped"]) or "-"
        if r.get("error"):
            what = f"ERROR {r['error']}"
        interval = f"[{h['ci_low']:.3f}, {h['ci_high']:.3f}]"
        print(f"{r['program']:16} {r['isa']:6} {r['config']:8} {h['speedup']:7.3f} "
              f"{interval:>16} {r['tests_passed']:>3}/{r['tests_total']:<3} "
              f"{r['built']:5d} {r['seconds']:5.0f}  {what}")
    print()
    print(f"{'isa':6} {'config':8} {'programs':>8} {'geomean':>8} {'gained':>7} {'best':>6} {'pass':>6} {'secs':>7}")
    summary = []
    for isa in isas:
        for cfg_name in configs:
            sel = [r for r in rows if r["isa"] == isa and r["config"] == cfg_name]
            if not sel:
                continue
            speeds = [r["honest"]["speedup"] for r in sel]
            passed = sum(r["tests_passed"] == r["tests_total"] for r in sel)
            item = {"isa": isa, "config": cfg_name, "programs": len(sel), "geomean": geomean(speeds),
                    "gained": sum(bool(r["honest"]["functions"]) for r in sel), "best": max(speeds),
                    "pass_rate": passed / len(sel), "seconds": sum(r["seconds"] for r in sel)}
            summary.append(item)
            print(f"{isa:6} {cfg_name:8} {item['programs']:8d} {item['geomean']:8.3f} "
                  f"{item['gained']:4d}/{len(sel):<2d} "
                  f"{item['best']:6.2f} {100 * item['pass_rate']:5.1f}% {item['seconds']:7.0f}")
    print(f"\nbenchmark time {elapsed:.0f} s; settings: rounds {args.rounds}, min sample {args.min_sample} s, "
          f"budget {args.budget or 'none'}, seed {args.seed}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "summary": summary, "seconds": elapsed,
                                         "settings": {k: str(v) for k, v in vars(args).items()}}, indent=2))


if __name__ == "__main__":
    main()
