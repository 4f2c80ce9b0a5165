#!/usr/bin/env python3
"""What `CC=sgcc make` costs a full clean build, as ratios to gcc from one interleaved run.

Scenarios, each a clean `make` of the same tree, interleaved in a random order every round:

* ``gcc``: the real compiler;
* ``sgcc, empty cache``;
* ``sgcc, other projects' winners (other flags)``: a cache holding winners of other code,
  stored under different code-shaping flags (the index sends every compile straight to gcc);
* ``sgcc, other projects' winners (same flags)``: winners of other code under this build's
  very context (the worst case for the index: every compile takes sgcc's full path, misses);
* ``sgcc, substituting winners``: every translation unit of this build has a winner (one
  function with a ``nop`` added, stored as ``sgcc optimize`` stores them), so every compile
  substitutes.

Build CPU is user+sys of make and all its children (``wait4``), wall is elapsed time. The
default project is generated here (``--files`` C files of ordinary code and a Makefile);
``--tree DIR`` measures a checked-out make project instead (copied to a scratch directory,
never changed): zlib (``--configure``) and Lua work as they are.

Usage: ``python bench/build_overhead.py [--rounds 3] [--files 36] [--tree DIR [--configure]] [--jobs 2]``
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc import proc  # noqa: E402
from sgcc.asm.units import AsmFile  # noqa: E402
from sgcc.cache import keys  # noqa: E402
from sgcc.cache import store as cache  # noqa: E402
from sgcc.cache.entry import Applied, Entry  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from overhead import typical_source  # noqa: E402


def generate(tree: Path, files: int) -> None:
    """A make project of ``files`` C files (each a variant of overhead.py's typical unit)."""
    (tree / "src").mkdir(parents=True)
    for n in range(files):
        text = re.sub(r"\b([a-z]+)_(\d+)\b", rf"\1_m{n}_\2", typical_source(functions=16))
        (tree / "src" / f"m{n}.c").write_text(text)
    (tree / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    (tree / "Makefile").write_text(
        "CC ?= gcc\nCFLAGS ?= -O2 -g -Wall -MMD -MP\n"
        "SRCS := $(wildcard src/*.c)\nOBJS := $(SRCS:src/%.c=build/%.o)\n"
        "all: build/prog\nbuild/prog: $(OBJS)\n\t$(CC) $(CFLAGS) -o $@ $(OBJS) -lm\n"
        "build/%.o: src/%.c | build\n\t$(CC) $(CFLAGS) -c $< -o $@\nbuild:\n\tmkdir -p $@\n"
        "clean:\n\trm -rf build\n-include $(OBJS:.o=.d)\n")


def _timed(argv: list[str], cwd: Path, env: dict) -> tuple[float, float]:
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.chdir(cwd)
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"build failed: {' '.join(argv)} in {cwd}")
    return usage.ru_utime + usage.ru_stime, wall


def interleaved(names: list[str], rounds: int, seed: int = 1):
    """``rounds`` rounds of every name once, each round in a fresh random order (seeded)."""
    rng = random.Random(seed)
    for _ in range(rounds):
        order = list(names)
        rng.shuffle(order)
        yield from order


def paired(rows: list[tuple[float, float]], base: list[tuple[float, float]]) -> dict[str, list[float]]:
    """Per round, each (CPU, wall) over the baseline's of the same round (the same load for
    both), sorted: ``{"cpu": [...], "wall": [...]}``."""
    return {"cpu": sorted(c / b for (c, _), (b, _) in zip(rows, base)),
            "wall": sorted(w / b for (_, w), (_, b) in zip(rows, base))}


def ratio_columns(rows: list[tuple[float, float]], base: list[tuple[float, float]]) -> str:
    """One row's columns: median CPU s, median paired CPU ratio to ``base`` (quartiles; range),
    median wall s, median paired wall ratio (quartiles). Header: :data:`RATIO_HEADER`."""
    r = paired(rows, base)
    rc, rw, q = r["cpu"], r["wall"], len(rows) // 4
    return (f"{statistics.median(c for c, _ in rows):7.3f} {statistics.median(rc):6.3f} "
            f"({rc[q]:.3f}-{rc[-1 - q]:.3f}; {rc[0]:.2f}-{rc[-1]:.2f}) {statistics.median(w for _, w in rows):7.3f} "
            f"{statistics.median(rw):6.3f} ({rw[q]:.3f}-{rw[-1 - q]:.3f})")


#: The header of :func:`ratio_columns`.
RATIO_HEADER = f"{'CPU s':>7} {'CPU x':>6} {'(quartiles; range)':<24} {'wall s':>7} {'wall x':>6} (quartiles)"


def _winner(text: str) -> str:
    return text.replace("\t.cfi_startproc\n", "\t.cfi_startproc\n\tnop\n", 1)


def _store_winner(store: cache.Store, key: str, asm: str) -> None:
    units = AsmFile.parse(asm).units
    if not units:  # a file with no function (data only): nothing to substitute there
        return
    unit = max(units, key=lambda u: u.lines)
    store.update(key, lambda old: Entry(applied=Applied({unit.name: _winner(unit.text)})))


def record_build(tree: Path, make: list[str], env: dict, sgcc: str, work: Path) -> list[dict]:
    """Every compile of a build, as `sgcc optimize --project` records them (key, context, asm)."""
    rec = work / "record" / "compiles.jsonl"
    rec.parent.mkdir(parents=True)
    renv = {**env, "SGCC_CACHE": "0", "SGCC_RECORD": str(rec)}
    proc.run(["make", "clean"], cwd=tree, env=renv, timeout=600)
    r = proc.run([*make, f"CC={sgcc}"], cwd=tree, env=renv, timeout=1800)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    return [json.loads(line) for line in rec.read_text().splitlines()]


def build_caches(records: list[dict], work: Path, other_asm: list[tuple[str, str]]) -> dict[str, Path]:
    """The caches of each scenario, built from the recorded compiles."""
    gcc = os.path.realpath(shutil.which("gcc"))
    caches = {}
    subst = cache.Store(work / "cache-subst", max_bytes=1 << 40)
    for r in records:
        _store_winner(subst, r["key"], Path(r["asm"]).read_text())
    caches["sgcc, substituting winners"] = Path(subst.root)
    same = cache.Store(work / "cache-same", max_bytes=1 << 40)
    other = cache.Store(work / "cache-other", max_bytes=1 << 40)
    contexts = {json.dumps(r["context"], sort_keys=True): r["context"] for r in records}
    for _name, asm in other_asm:
        for ctx in contexts.values():  # other code, this build's context(s)
            _store_winner(same, keys.entry_key(ctx, keys.tu_digest(asm)), asm)
        ctx = keys.context(gcc, ["-O3", "-fno-plt", "-fomit-frame-pointer"], "flags")  # other flags
        _store_winner(other, keys.entry_key(ctx, keys.tu_digest(asm)), asm)
    caches["sgcc, other projects' winners (same flags)"] = Path(same.root)
    caches["sgcc, other projects' winners (other flags)"] = Path(other.root)
    caches["sgcc, empty cache"] = work / "cache-empty"
    return caches


def other_projects(work: Path) -> list[tuple[str, str]]:
    """Assembly of the repository's examples: another project's code."""
    out = []
    for src in sorted((ROOT / "examples").rglob("*.c"))[:24]:
        r = proc.run(["gcc", "-O2", "-S", str(src), "-o", "-", f"-I{src.parent}", f"-I{src.parent.parent / 'include'}"],
                     timeout=120)
        if r.returncode == 0 and AsmFile.parse(r.stdout.decode()).units:
            out.append((str(src), r.stdout.decode()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--files", type=int, default=36)
    ap.add_argument("--tree", type=Path, help="a make project to measure instead of the generated one")
    ap.add_argument("--configure", action="store_true", help="run ./configure first (zlib)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--sgcc", default=shutil.which("sgcc") or str(Path(sys.executable).parent / "sgcc"))
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    # What pip does for an installed package: without bytecode (an editable install under
    # PYTHONDONTWRITEBYTECODE) every compile would also pay for compiling sgcc's modules.
    compileall.compile_dir(str(ROOT / "sgcc"), quiet=1)
    work = Path(tempfile.mkdtemp(prefix="sgcc-build-bench-"))
    try:
        tree = work / "tree"
        if args.tree:
            shutil.copytree(args.tree, tree, symlinks=True)
        else:
            generate(tree, args.files)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SGCC_") and k not in ("CC", "CFLAGS")}
        env["SGCC_CONFIG"] = str(work / "no-config.toml")
        if args.configure:
            assert proc.run(["./configure"], cwd=tree, env=env, timeout=600).returncode == 0
        make = ["make", f"-j{args.jobs}"]
        records = record_build(tree, make, env, args.sgcc, work)
        caches = build_caches(records, work, other_projects(work))
        scenarios = {"gcc": ("gcc", None), **{k: (args.sgcc, v) for k, v in caches.items()}}
        results: dict[str, list[tuple[float, float]]] = {k: [] for k in scenarios}
        load = []
        for name in interleaved(list(scenarios), args.rounds, args.seed):
            cc, cache_dir = scenarios[name]
            senv = dict(env)
            if cache_dir is not None:
                senv["SGCC_CACHE_DIR"] = str(cache_dir)
            proc.run(["make", "clean"], cwd=tree, env=senv, timeout=600)
            load.append(os.getloadavg()[0])
            results[name].append(_timed([*make, f"CC={cc}"], tree, senv))
        n_c = len(records)
        print(f"{args.tree or f'generated project ({args.files + 1} C files)'}: {n_c} eligible compiles, "
              f"make -j{args.jobs}, {args.rounds} interleaved rounds; load average during the run "
              f"{min(load):.1f}-{max(load):.1f} on {os.cpu_count()} CPUs")
        print(f"{'scenario (x: to gcc, paired by round)':<46} {RATIO_HEADER}")
        for name, rows in results.items():
            print(f"{name:<46} {ratio_columns(rows, results['gcc'])}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
