#!/usr/bin/env python3
"""sgcc's search against every single whole-program flag set, in one interleaved run.

Per program (bundled examples, and PolyBench/C kernels when ``--polybench DIR`` points at a
checkout of PolyBench/C 4.2.1, which is never copied into this repository):

1. build it with each flag set applied everywhere (``-O2``, ``-O3``, ``-O3 -funroll-loops``,
   ``-Ofast``, ``-O3 -march=native``, ``-O3 -march=native -funroll-loops``, ``-Ofast
   -march=native``, the two native ones with ``-ffp-contract=off`` (no FMA), PGO portable and
   native), clang's whole program (``-O3``, and ``-O3 -march=native``; the ziglang wheel's clang
   as the clang generator runs it), plus an identical copy of the ``-O3`` binary as the noise
   control; a set whose
   output differs from ``-O3``'s is timed but marked (sgcc may never ship that), and the best
   set is reported among all and among the output-preserving ones;
2. run ``sgcc optimize`` on it (``--budget``, default generators without the llm), portable
   and ``--isa native``; optionally also with another sgcc (``--before-sgcc``, e.g. main's)
   to compare candidates timed per minute of budget;
3. time every binary in the same run: ``--rounds`` rounds, each running every binary on all
   its tests (repeated so a sample lasts 0.2 s of -O3) in a shuffled order, CPU time (user +
   system, ``wait4``) per run; the ratio to ``-O3`` of the same round, per round, then a
   20%-trimmed mean of the log ratios
   and a percentile bootstrap interval (95%), per program and as a geometric mean over the
   programs (rounds resampled per program); sgcc against the best output-preserving flag set
   and against clang's whole program, per mode, the same way (per round, both timed in it);
   per sgcc run and generator, the candidates offered, built, passed, timed and accepted, and
   where the others stopped.

Every phase keeps its results in ``--work`` (default ``bench-out/search_vs_flags``), so a run
that was cut short continues where it stopped; ``--phases`` picks phases
(prepare,flags,before,search,time,report).

PolyBench: each kernel and ``utilities/polybench.c`` with their own headers make one C file
(``#define <DATASET>_DATASET``, ``POLYBENCH_DUMP_ARRAYS`` and ``NDEBUG`` at its top, the
arrays dumped to stdout instead of stderr; the system headers stay ``#include`` lines, so
clang compiles the file too), its one test is an empty stdin, its expected output what ``-O3``
prints. ``NDEBUG`` drops the one ``assert`` of the harness (in ``polybench_flush_cache``, which these
runs never call): with it, gcc splits that function into a ``.part.0`` ending in
``__assert_fail``, and sgcc's control-flow check refuses every candidate of the file
("falls off its end after calling ... which returns"), a false refusal to fix there.

Usage:
  python bench/search_vs_flags.py [--polybench DIR] [--kernels gemm,lu,...] [--dataset MEDIUM]
      [--examples matmul,lcs] [--heldout crc32,levenshtein] [--budget 120s] [--rounds 20] [--modes portable,native]
      [--before-sgcc /work/main/.venv/bin/sgcc] [--before-modes portable] [--work DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc import proc  # noqa: E402

PROGRAMS = ROOT / "examples" / "programs"
HELDOUT = ROOT / "bench" / "heldout"
#: Flag sets applied to the whole program (name -> (flags, isa: "portable" or "native")).
FLAG_SETS = {
    "O2": (["-O2"], "portable"),
    "O3": (["-O3"], "portable"),
    "O3-unroll": (["-O3", "-funroll-loops"], "portable"),
    "Ofast": (["-Ofast"], "portable"),
    "O3-native": (["-O3", "-march=native"], "native"),
    "O3-native-unroll": (["-O3", "-march=native", "-funroll-loops"], "native"),
    "Ofast-native": (["-Ofast", "-march=native"], "native"),
    # -march=native lets gcc contract a*b+c into FMA, which changes floating-point output;
    # these keep the output while using every other native instruction.
    "O3-native-nofma": (["-O3", "-march=native", "-ffp-contract=off"], "native"),
    "O3-native-unroll-nofma": (["-O3", "-march=native", "-funroll-loops", "-ffp-contract=off"], "native"),
}
PGO_SETS = {"PGO": (["-O3"], "portable"), "PGO-native": (["-O3", "-march=native"], "native")}
#: clang's whole program (the ziglang wheel's clang, as the clang generator runs it: gcc's
#: defaults for position independence and the like, -ffp-contract=off), linked by gcc.
CLANG_SETS = {"clang-O3": (["-O3"], "portable"), "clang-O3-native": (["-O3", "-march=native"], "native")}
DEFAULT_KERNELS = "gemm,correlation,jacobi-2d,lu"
TRIM = 0.2
#: CPU seconds of -O3 a timing sample lasts at least (short programs run several times).
MIN_SAMPLE = 0.2
RESAMPLES = 4000


# ----------------------------------------------------------------------------- programs


def polybench_program(root: Path, kernel: str, dataset: str, work: Path) -> dict:
    """One kernel as a single C file and an empty-stdin test: ``utilities/polybench.c``, the
    kernel and their own headers included textually (the system headers stay ``#include``
    lines, so that any C compiler, clang included, can compile the file as it is)."""
    matches = [p for p in root.rglob(f"{kernel}.c") if p.parent.name == kernel]
    if not matches:
        raise SystemExit(f"no PolyBench kernel {kernel} under {root}")
    src = matches[0]
    d = work / "programs" / kernel
    (d / "tests").mkdir(parents=True, exist_ok=True)
    dirs = [src.parent, root / "utilities"]

    def inline(path: Path, depth: int = 0) -> str:
        # Every inclusion is expanded where it stands (the headers' own guards apply, and
        # polybench.c includes polybench.h in both branches of an #if).
        out = []
        for line in path.read_text().splitlines(keepends=True):
            m = re.match(r'\s*#\s*include\s*[<"]([^>"]+)[>"]', line)
            found = next((dd / m.group(1) for dd in dirs if m and (dd / m.group(1)).is_file()), None)
            out.append(line if found is None or depth > 8 else inline(found, depth + 1))
        return "".join(out)

    head = "".join(f"#define {m} 1\n" for m in (f"{dataset}_DATASET", "POLYBENCH_DUMP_ARRAYS", "NDEBUG"))
    text = head + inline(root / "utilities" / "polybench.c") + inline(src)
    # The dump goes to stdout, where sgcc's tests look (errors, which never happen, go there too).
    text = text.replace("#define POLYBENCH_DUMP_TARGET stderr", "#define POLYBENCH_DUMP_TARGET stdout")
    text = re.sub(r"\bfprintf\s*\(\s*stderr\b", "fprintf(stdout", text)
    out = d / f"{kernel}.c"
    out.write_text(text)
    (d / "tests" / "run.in").write_bytes(b"")
    return {"name": kernel, "source": str(out), "tests": str(d / "tests"), "libs": ["-lm"], "suite": "polybench"}


def example_program(name: str, root: Path = PROGRAMS, suite: str = "examples") -> dict:
    d = root / name
    if not (d / f"{name}.c").is_file():
        raise SystemExit(f"no program {name} in {root}")
    return {"name": name, "source": str(d / f"{name}.c"), "tests": str(d / "tests"), "libs": ["-lm"],
            "suite": suite}


def test_inputs(tests: str) -> list[tuple[str, bytes]]:
    return [(p.stem, p.read_bytes()) for p in sorted(Path(tests).glob("*.in"))]


def run_once(binary: str, stdin: bytes) -> tuple[float, bytes, int]:
    r = proc.run([binary], stdin=stdin, timeout=300)
    return r.cpu, r.stdout, r.returncode


def outputs(binary: str, tests) -> list[tuple[bytes, int]]:
    return [run_once(binary, stdin)[1:] for _, stdin in tests]


# ----------------------------------------------------------------------------- phases


def build_flags(prog: dict, work: Path) -> dict:
    """Every flag-set binary of ``prog`` (name -> path, or a reason it is left out)."""
    d = work / "bin" / prog["name"]
    d.mkdir(parents=True, exist_ok=True)
    tests = test_inputs(prog["tests"])
    built: dict[str, str] = {}

    def gcc(flags, out, extra=()):
        subprocess.run(["gcc", *flags, *extra, prog["source"], "-o", str(out), *prog["libs"]], check=True,
                       capture_output=True)

    for name, (flags, _) in FLAG_SETS.items():
        out = d / name
        gcc(flags, out)
        built[name] = str(out)
    shutil.copy2(d / "O3", d / "O3-copy")  # the noise control: an identical binary
    built["O3-copy"] = str(d / "O3-copy")
    for name, (flags, _) in PGO_SETS.items():
        prof = d / f"{name}.prof"
        shutil.rmtree(prof, ignore_errors=True)
        gen = d / f"{name}-gen"
        gcc(flags, gen, [f"-fprofile-generate={prof}"])
        for _, stdin in tests:
            run_once(str(gen), stdin)
        gcc(flags, d / name, [f"-fprofile-use={prof}", "-fprofile-correction", "-Wno-missing-profile"])
        built[name] = str(d / name)
    from sgcc.candidates import clang

    command, why = clang.locate()
    for name, (flags, isa) in CLANG_SETS.items():
        if command is None:
            print(f"  {name}: clang {why}", flush=True)
            continue
        opts = clang.gcc_defaults("gcc", flags) + clang.clang_flags(flags, isa="native" if isa == "native" else "flags")
        obj = d / f"{name}.o"
        subprocess.run([*command, "-target", "x86_64-linux-gnu", *opts, *flags, "-w", "-c", prog["source"], "-o",
                        str(obj)], check=True, capture_output=True)
        subprocess.run(["gcc", str(obj), "-o", str(d / name), *prog["libs"]], check=True, capture_output=True)
        built[name] = str(d / name)
    reference = outputs(built["O3"], tests)
    # Timed all the same (the table has them), but marked: sgcc may never do this.
    differs = [name for name in built if name != "O3" and outputs(built[name], tests) != reference]
    return {"binaries": built, "differs": differs}


def run_sgcc(sgcc: str, prog: dict, mode: str, budget: str, work: Path, tag: str, seed: int,
             generators: str) -> dict:
    d = work / "sgcc" / tag / prog["name"]
    d.mkdir(parents=True, exist_ok=True)
    out, report = d / f"{mode}.bin", d / f"{mode}.json"
    argv = [sgcc, "optimize", prog["source"], "--tests", prog["tests"], "-o", str(out), "--budget", budget,
            "--report", str(report), "--no-cache", "-q", "--seed", str(seed), "--generators", generators]
    if mode == "native":
        argv += ["--isa", "native"]
    argv += ["--", "-O3", *prog["libs"]]
    started = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - started
    result = {"argv": argv, "rc": r.returncode, "wall": wall, "stderr": r.stderr[-2000:]}
    if r.returncode == 0 and report.is_file():
        rep = json.loads(report.read_text())
        cands = rep.get("candidates", [])
        result.update(binary=str(out), timed=sum(c.get("speedup") is not None for c in cands),
                      offered=len(cands), honest=rep.get("honest"), ranking=rep.get("ranking"),
                      cut=(rep.get("budget") or {}).get("cut"), selection=rep.get("selection"),
                      shipped=rep.get("shipped"), notes=rep.get("notes"), per_generator=per_generator(cands))
    return result


def per_generator(cands: list[dict]) -> dict:
    """Per generator: candidates offered (not skipped), built (assembled, linked: tested),
    passed the tests, timed, accepted; and where the others stopped (stage: reason's kind)."""
    out: dict = {}
    for c in cands:
        if c.get("id") == "-":
            continue
        g = out.setdefault(c["generator"], {"offered": 0, "built": 0, "passed": 0, "timed": 0, "accepted": 0,
                                            "stopped": {}})
        stage = c.get("stage")
        if stage == "skipped":
            continue
        g["offered"] += 1
        g["built"] += stage in ("test", "time", "accepted")
        g["passed"] += stage in ("time", "accepted")
        g["timed"] += c.get("speedup") is not None
        g["accepted"] += stage == "accepted"
        if stage in ("screen", "assemble", "check", "control", "link", "test"):
            reason = c.get("reason", "")
            kind = reason.split(":", 1)[0] if stage == "control" else \
                "function-level test" if "gcc's function" in reason or "function-level" in reason else \
                "held-out or generated inputs" if "held" in reason or "generated" in reason else "tests"
            key = f"{stage}: {kind}" if stage in ("control", "test") else stage
            g["stopped"][key] = g["stopped"].get(key, 0) + 1
    return out


def time_all(binaries: dict[str, str], tests, rounds: int, seed: int,
             where: Path | None = None) -> tuple[dict[str, list[float]], int]:
    """CPU seconds per round for each binary (all tests summed, ``reps`` times, so that a
    sample lasts at least MIN_SAMPLE seconds of -O3), shuffled order each round.

    Every binary runs from one directory under a name of the same length (``where``/``b07``):
    the path is ``argv[0]``, whose length moves the stack, and a program sensitive to the
    stack's alignment ran 10% slower from sgcc's longer output path than a byte-identical
    copy of gcc's program did from its own (levenshtein, issue 38's first run)."""
    from sgcc.verify.timing.rounds import timing_lock

    if where is not None:
        shutil.rmtree(where, ignore_errors=True)
        where.mkdir(parents=True)
        copies = {}
        for k, (n, b) in enumerate(sorted(binaries.items())):
            copies[n] = str(where / f"b{k:02d}")
            shutil.copy2(b, copies[n])
        binaries = copies
    rng = random.Random(seed)
    names = list(binaries)
    samples = {n: [] for n in names}

    def sample(n: str, reps: int) -> float:
        return sum(run_once(binaries[n], stdin)[0] for _ in range(reps) for _, stdin in tests)

    with timing_lock():
        for n in names:  # warm-up
            sample(n, 1)
        reps = max(1, math.ceil(MIN_SAMPLE / max(sample("O3", 1), 1e-4)))
        for _ in range(rounds):
            rng.shuffle(names)
            for n in names:
                samples[n].append(sample(n, reps))
    return samples, reps


# ----------------------------------------------------------------------------- statistics


def trimmed(xs: list[float]) -> float:
    xs = sorted(xs)
    k = int(len(xs) * TRIM)
    kept = xs[k:len(xs) - k] or xs
    return sum(kept) / len(kept)


def log_ratios(samples: dict[str, list[float]], name: str) -> list[float]:
    return [math.log(max(a, 1e-9) / max(b, 1e-9)) for a, b in zip(samples["O3"], samples[name])]


def interval(per_program: list[list[float]], rng: random.Random) -> tuple[float, float, float]:
    """Geometric mean over programs of each program's trimmed-mean ratio, with a bootstrap
    interval that resamples every program's rounds."""
    point = math.exp(sum(trimmed(x) for x in per_program) / len(per_program))
    stats = sorted(math.exp(sum(trimmed(rng.choices(x, k=len(x))) for x in per_program) / len(per_program))
                   for _ in range(RESAMPLES))
    return point, stats[int(0.025 * RESAMPLES)], stats[int(0.975 * RESAMPLES) - 1]


# ----------------------------------------------------------------------------- main


def load(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def save(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--polybench", type=Path, help="a PolyBench/C 4.2.1 checkout (not vendored)")
    ap.add_argument("--kernels", default=DEFAULT_KERNELS)
    ap.add_argument("--dataset", default="MEDIUM")
    ap.add_argument("--examples", default="matmul,lcs", help="bundled programs ('' for none)")
    ap.add_argument("--heldout", default="", help="programs of bench/heldout (crc32,levenshtein...)")
    ap.add_argument("--budget", default="120s")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--modes", default="portable,native")
    ap.add_argument("--generators", default="auto,-llm")
    ap.add_argument("--sgcc", default=str(Path(sys.executable).with_name("sgcc")))
    ap.add_argument("--before-sgcc", help="another sgcc (e.g. main's) for candidates timed per minute")
    ap.add_argument("--before-modes", default="portable")
    ap.add_argument("--work", type=Path, default=ROOT / "bench-out" / "search_vs_flags")
    ap.add_argument("--phases", default="prepare,flags,before,search,time,report")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    phases = set(args.phases.split(","))
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    state_path = work / "state.json"
    state = load(state_path)

    if "prepare" in phases or "programs" not in state:
        progs = [example_program(n) for n in args.examples.split(",") if n]
        progs += [example_program(n, HELDOUT, "heldout") for n in args.heldout.split(",") if n]
        if args.polybench:
            progs += [polybench_program(args.polybench.resolve(), k, args.dataset, work)
                      for k in args.kernels.split(",") if k]
        state["programs"] = progs
        state["config"] = {"budget": args.budget, "rounds": args.rounds, "generators": args.generators,
                           "dataset": args.dataset, "sgcc": args.sgcc, "before_sgcc": args.before_sgcc}
        save(state_path, state)
    progs = state["programs"]
    flags = state.setdefault("flags", {})
    searches = state.setdefault("searches", {})

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)

    if "flags" in phases:
        for p in progs:
            if p["name"] not in flags:
                log(f"flags: {p['name']}")
                flags[p["name"]] = build_flags(p, work)
                save(state_path, state)
    todo = []
    if "before" in phases and args.before_sgcc:
        todo += [("before", args.before_sgcc, m) for m in args.before_modes.split(",") if m]
    if "search" in phases:
        todo += [("after", args.sgcc, m) for m in args.modes.split(",") if m]
    for tag, exe, mode in todo:
        for p in progs:
            key = f"{tag}:{mode}:{p['name']}"
            if key in searches and searches[key].get("rc") == 0:
                continue
            log(f"sgcc {tag} {mode}: {p['name']} (budget {args.budget})")
            searches[key] = run_sgcc(exe, p, mode, args.budget, work, tag, args.seed, args.generators)
            s = searches[key]
            log(f"  rc {s['rc']}, {s['wall']:.0f} s, timed {s.get('timed')}, shipped {s.get('honest')}")
            save(state_path, state)

    timings = state.setdefault("timings", {})
    if "time" in phases:
        for p in progs:
            if p["name"] in timings:
                continue
            binaries = dict(flags[p["name"]]["binaries"])
            for key, s in searches.items():
                tag, mode, name = key.split(":")
                if name == p["name"] and s.get("binary"):
                    binaries[f"sgcc-{tag}-{mode}"] = s["binary"]
            log(f"timing {p['name']}: {len(binaries)} binaries x {args.rounds} rounds")
            tests = test_inputs(p["tests"])
            reference = outputs(binaries["O3"], tests)
            wrong = [n for n, b in binaries.items() if outputs(b, tests) != reference]
            if any(n.startswith("sgcc") for n in wrong):
                log(f"  WRONG OUTPUT from {wrong}")
            samples, reps = time_all(binaries, tests, args.rounds, args.seed, where=work / "run")
            timings[p["name"]] = {"samples": samples, "reps": reps, "wrong": wrong}
            save(state_path, state)

    if "report" in phases:
        summary = report(state)
        if args.json:
            save(args.json, summary)
    return 0


def report(state: dict) -> dict:
    rng = random.Random(0)
    progs = [p["name"] for p in state["programs"] if p["name"] in state.get("timings", {})]
    if not progs:
        print("nothing timed yet")
        return {}
    names = sorted({n for p in progs for n in state["timings"][p]["samples"]})
    per = {}
    rounds = {len(state["timings"][p]["samples"]["O3"]) for p in progs}
    print(f"\nratio over gcc -O3 (CPU time, {'/'.join(map(str, sorted(rounds)))} shuffled rounds; trimmed mean)")
    short = {n: n.replace("sgcc-", "").replace("portable", "port").replace("native", "nat") for n in names}
    print(f"{'program':12}" + "".join(f"{short[n]:>{max(8, len(short[n]) + 1)}}" for n in names))
    for p in progs:
        s = state["timings"][p]["samples"]
        row = f"{p:12}"
        for n in names:
            w = max(8, len(short[n]) + 1)
            if n in s:
                lr = log_ratios(s, n)
                per.setdefault(n, {})[p] = lr
                row += f"{math.exp(trimmed(lr)):>{w}.3f}"
            else:
                row += f"{'-':>{w}}"
        print(row)
    out = {"geomean": {}, "per_program": {}, "candidates_per_minute": {}}
    print("\ngeo-mean over gcc -O3 (programs where every configuration ran):")
    for n in names:
        common = [p for p in progs if p in per.get(n, {})]
        if len(common) != len(progs):
            continue
        g, lo, hi = interval([per[n][p] for p in progs], rng)
        out["geomean"][n] = {"ratio": g, "low": lo, "high": hi}
        print(f"  {n:22} {g:.3f} [{lo:.3f}, {hi:.3f}]")
    for p in progs:
        out["per_program"][p] = {n: math.exp(trimmed(per[n][p])) for n in names if p in per.get(n, {})}
    differs = {n for p in progs for n in state["flags"][p].get("differs", [])}
    if differs:
        print(f"  (changes the output on some program, which sgcc never may: {', '.join(sorted(differs))})")
    out["output_changing"] = sorted(differs)
    flag_names = [n for n in out["geomean"] if not n.startswith(("sgcc", "clang")) and n not in ("O3", "O3-copy")]
    portable = [n for n in flag_names if (FLAG_SETS.get(n) or PGO_SETS.get(n) or ("", "portable"))[1] == "portable"]
    pools = (("portable", portable), ("portable, output-preserving", [n for n in portable if n not in differs]),
             ("any", flag_names), ("any, output-preserving", [n for n in flag_names if n not in differs]))
    for label, pool in pools:
        if pool:
            best = max(pool, key=lambda n: out["geomean"][n]["ratio"])
            out[f"best_flag_set_{label}"] = best
            print(f"best single flag set ({label}): {best} {out['geomean'][best]['ratio']:.3f}")
            hind = math.exp(sum(math.log(max(out["per_program"][p][n] for n in pool)) for p in progs) / len(progs))
            print(f"best flag set per program, picked after the fact ({label}): {hind:.3f}")
            out[f"hindsight_{label}"] = hind
    for mode, best_pool, clang_name in (("portable", "portable, output-preserving", "clang-O3"),
                                        ("native", "any, output-preserving", "clang-O3-native")):
        me = f"sgcc-after-{mode}"
        best = out.get(f"best_flag_set_{best_pool}")
        for label, other in (("the best single flag set " + (f"({best})" if best else ""), best),
                             (f"clang's whole program ({clang_name})", clang_name)):
            if other is None or me not in per or other not in per or any(p not in per[other] or p not in per[me]
                                                                        for p in progs):
                continue
            # Per round, sgcc against the other binary: both timed in the same shuffled rounds.
            diffs = [[b - a for a, b in zip(per[other][p], per[me][p])] for p in progs]
            g, lo, hi = interval(diffs, rng)
            out.setdefault("sgcc_against", {})[f"{mode}:{other}"] = {"ratio": g, "low": lo, "high": hi}
            print(f"sgcc ({mode}) against {label}: {g:.3f} [{lo:.3f}, {hi:.3f}] geo-mean "
                  f"({'meets' if lo >= 1.03 else 'point estimate meets' if g >= 1.03 else 'misses'} the 3% bar)")
    print("\nsgcc runs (candidates timed per minute of budget; wall time)")
    budget_s = _seconds(state["config"]["budget"])
    rates: dict[str, list[float]] = {}
    for key, s in sorted(state.get("searches", {}).items()):
        tag, mode, name = key.split(":")
        timed = s.get("timed")
        per_min = timed / (budget_s / 60) if timed is not None and budget_s else None
        per_wall = timed / (s["wall"] / 60) if timed is not None else None
        if per_min is not None:
            rates.setdefault(f"{tag}:{mode}", []).append(per_min)
        rho = (s.get("ranking") or {}).get("spearman")
        h = s.get("honest") or {}
        print(f"  {key:34} rc {s['rc']} wall {s['wall']:6.1f} s  timed {timed}  offered {s.get('offered')}  "
              f"per budget-minute {per_min if per_min is None else round(per_min, 2)}  per wall-minute "
              f"{per_wall if per_wall is None else round(per_wall, 2)}  shipped {h.get('speedup', 1.0):.3f}  "
              f"rho {rho}  cut {s.get('cut')}")
    for key, s in sorted(state.get("searches", {}).items()):
        for gen, t in sorted((s.get("per_generator") or {}).items()):
            print(f"    {key:32} {gen:9} offered {t['offered']:3}  built {t['built']:3}  passed {t['passed']:3}  "
                  f"timed {t['timed']:3}  accepted {t['accepted']:3}  stopped {t['stopped']}")
    for k, v in rates.items():
        out["candidates_per_minute"][k] = sum(v) / len(v)
        print(f"  mean candidates timed per budget-minute, {k}: {sum(v) / len(v):.2f}")
    wrong = {p: state["timings"][p]["wrong"] for p in progs if state["timings"][p]["wrong"]}
    print(f"\nbinaries whose output differs from -O3's at timing: {wrong or 'none'}")
    out["wrong"] = wrong
    return out


def _seconds(budget: str) -> float | None:
    for part in budget.split(","):
        part = part.strip()
        if part.endswith("s"):
            return float(part[:-1])
        if part.endswith("m"):
            return 60 * float(part[:-1])
    return None


if __name__ == "__main__":
    sys.exit(main())
