#!/usr/bin/env python3
"""A no-change rebuild through ``ccache sgcc`` against the same rebuild through ``ccache gcc``,
and the objects a wrapped build gives against what ``sgcc`` alone gives, on a real project.

Set-up: the project (``--tree``, copied to a scratch directory) is built once through sgcc
recording every compile (``SGCC_RECORD``); then winners go into a fresh sgcc cache for every
other translation unit compiled to an object (each the unit's largest function with a ``nop`` added, stored as
``sgcc optimize`` stores a winner: what is timed here is caching, not the winners' speed).

Exactness, in three states of sgcc's cache: as seeded; after a winner is added for a unit
that had none; after a winner is withdrawn (its entry kept without winners). In each, a clean
``make CC=sgcc`` (sgcc alone) and a clean ``make CC="ccache sgcc"`` with
``CCACHE_EXTRAFILES=$(sgcc cache state)``; every object file must be byte-identical between the
two, and after each change ccache must not serve the old object.

Cost: with both ccache caches warm, interleaved rounds in a random order of a clean rebuild
``sh -c 'make CC="ccache gcc"'`` and ``sh -c 'CCACHE_EXTRAFILES=$(sgcc cache state) make
CC="ccache sgcc"'`` (the per-build ``sgcc cache state`` counted on sgcc's side); CPU time
(user+sys of the whole process tree, ``wait4``) and wall; the ratio per round (both under the
same load), median and quartiles; ccache's hit counts show that every compile was a hit.

Run it from a copy of sgcc that nobody edits meanwhile (``git archive HEAD | tar -x -C DIR``):
the state includes the modification times of sgcc's compile-path modules, so an edit during
the run is a change of state (compiles under ccache then keep gcc's code, as they must).

CMake (``--cmake``): each build has a build directory of its own in the copied tree, configured
once (Release): sgcc alone as the launcher (``-DCMAKE_C_COMPILER_LAUNCHER=sgcc``); ccache as the
launcher with sgcc as ccache's prefix (``CCACHE_PREFIX=sgcc``, the compiler CMake found stays
the compiler, docs/build-systems.md); ccache as the launcher alone (``ccache gcc``). A build is
``cmake --build DIR --target clean`` then ``cmake --build DIR``; objects are compared by their
path in the build directory.

Usage: ``python bench/ccache_rebuild.py --tree DIR [--make "make -C programs zstd"]
[--clean "make clean"] [--rounds 10] [--jobs 2]``, or ``--tree DIR --cmake [--cmake-args=
-DWITH_GTEST=OFF]`` (zstd, facebook/zstd, and zlib-ng, zlib-ng/zlib-ng, are the projects
docs/results.md reports; not vendored).
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from build_overhead import RATIO_HEADER, _store_winner, _timed, interleaved, ratio_columns  # noqa: E402

from sgcc import proc  # noqa: E402
from sgcc.asm.units import AsmFile  # noqa: E402
from sgcc.cache import store as cache  # noqa: E402
from sgcc.cache.entry import Entry  # noqa: E402


def _sh(command: str, cwd: Path, env: dict) -> str:
    r = proc.run(["sh", "-c", command], cwd=cwd, env=env, timeout=3600)
    if r.returncode != 0:
        raise SystemExit(f"failed: {command}\n{r.stderr.decode()[-3000:]}")
    return r.stdout.decode()


def _objects(tree: Path) -> dict[str, bytes]:
    """Every object file of the tree by its name (the directory a makefile derives from $(CC),
    as zstd's conf_<hash>, left out)."""
    out: dict[str, bytes] = {}
    for p in sorted(tree.rglob("*.o")):
        if "CMakeFiles" in p.parts and p.parent.name.startswith("CompilerId"):
            continue  # CMake's compiler identification, made when the directory was configured
        rel = p.relative_to(tree)
        name = "/".join(part for part in rel.parts if not part.startswith("conf_"))
        assert name not in out, name
        out[name] = p.read_bytes()
    return out


def _ccache_hits(env: dict) -> tuple[int, int]:
    text = proc.run(["ccache", "--print-stats"], env=env, timeout=60).stdout.decode()
    stats = {k: int(v) for k, v in (line.split("\t", 1) for line in text.splitlines() if "\t" in line)
             if v.strip().isdigit()}
    return stats.get("direct_cache_hit", 0) + stats.get("preprocessed_cache_hit", 0), stats.get("cache_miss", 0)


def _builds(args, tree: Path, env: dict) -> dict[str, tuple[str, str, Path]]:
    """Each build's clean command, build command and where its objects are: ``sgcc`` (sgcc
    alone), ``ccache sgcc`` (wrapped, sgcc's state in ccache's key), ``ccache gcc``. A make
    project builds in its tree with ``CC``; a CMake project (``--cmake``) in a build directory
    per build, configured here once."""
    state = "CCACHE_EXTRAFILES=$(sgcc cache state)"
    if not args.cmake:
        make = f"{args.make} -j{args.jobs}"
        return {"sgcc": (args.clean, f"{make} CC=sgcc", tree),
                "ccache sgcc": (args.clean, f'{state} {make} CC="ccache sgcc"', tree),
                "ccache gcc": (args.clean, f'{make} CC="ccache gcc"', tree)}
    out = {}
    for name, directory, launcher, prefix in (("sgcc", "_b-sgcc", "sgcc", ""),
                                             ("ccache sgcc", "_b-wrap", "ccache", f"CCACHE_PREFIX=sgcc {state} "),
                                             ("ccache gcc", "_b-gcc", "ccache", "")):
        _sh(f"cmake -S . -B {directory} -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER_LAUNCHER={launcher} "
            f"{args.cmake_args}", tree, env)
        out[name] = (f"cmake --build {directory} --target clean", f"{prefix}cmake --build {directory} -j{args.jobs}",
                     tree / directory)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, required=True, help="a make project (copied; never changed)")
    ap.add_argument("--make", default="make", help="the build command, without CC (default: make)")
    ap.add_argument("--clean", default="make clean")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cmake", action="store_true", help="a CMake project: a build directory per build (see above)")
    ap.add_argument("--cmake-args", default="", help="more arguments to CMake's configure (--cmake)")
    args = ap.parse_args()
    compileall.compile_dir(str(ROOT / "sgcc"), quiet=1)  # as pip leaves an installed package
    work = Path(tempfile.mkdtemp(prefix="sgcc-ccache-bench-"))
    try:
        tree = work / "tree"
        shutil.copytree(args.tree, tree, symlinks=True)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SGCC_", "CCACHE_", "MAKE")) and k not in ("CC", "CFLAGS", "MFLAGS")}
        env.update(SGCC_CONFIG=str(work / "config.toml"), SGCC_CACHE_DIR=str(work / "sgcc-cache"),
                   CCACHE_DIR=str(work / "ccache"), PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}")
        builds = _builds(args, tree, env)
        # Every compile, as sgcc optimize --project records them (key, assembly).
        record = work / "record" / "compiles.jsonl"
        record.parent.mkdir()
        alone_clean, alone_build, alone_root = builds["sgcc"]
        _sh(alone_clean, tree, env)
        _sh(alone_build, tree, {**env, "SGCC_CACHE": "0", "SGCC_RECORD": str(record)})
        import json

        recorded = [json.loads(line) for line in record.read_text().splitlines()]
        # The compiles to objects whose unit has a function (not configure-style probes).
        compiles = [c for c in recorded if c["mode"] == "compile" and AsmFile.parse(Path(c["asm"]).read_text()).units]
        os.environ.update(SGCC_CONFIG=env["SGCC_CONFIG"])  # this process signs with the same key
        store = cache.Store(env["SGCC_CACHE_DIR"], max_bytes=1 << 40)
        for c in compiles[0::2]:
            _store_winner(store, c["key"], Path(c["asm"]).read_text())
        print(f"{args.tree} ({'cmake' if args.cmake else args.make}): {len(recorded)} compiles through sgcc, "
              f"{len(compiles)} of them to objects with functions; winners stored for {len(store.keys())}", flush=True)

        # -- exactness -----------------------------------------------------------------------
        wrap_clean, wrapped, wrap_root = builds["ccache sgcc"]
        added, withdrawn = compiles[1], compiles[0]
        states = [("as seeded", None),
                  (f"a winner added ({Path(added['source']).name})",
                   lambda: _store_winner(store, added["key"], Path(added["asm"]).read_text())),
                  (f"a winner withdrawn ({Path(withdrawn['source']).name})",
                   lambda: store.update(withdrawn["key"], lambda old: Entry()))]
        previous: dict[str, bytes] | None = None
        for label, change in states:
            if change is not None:
                change()
            _sh(alone_clean, tree, env)
            _sh(alone_build, tree, env)
            alone = _objects(alone_root)
            _sh(wrap_clean, tree, env)
            h0, m0 = _ccache_hits(env)
            _sh(wrapped, tree, env)
            h1, m1 = _ccache_hits(env)
            ours = _objects(wrap_root)
            same = sorted(alone) == sorted(ours) and all(alone[k] == ours[k] for k in alone)
            changed = [] if previous is None else sorted(k for k in ours if previous.get(k) != ours[k])
            print(f"  {label}: {len(ours)} objects, every one byte-identical to sgcc alone's: {same}; "
                  f"ccache {h1 - h0} hits, {m1 - m0} misses; objects changed since the last state: "
                  f"{', '.join(changed) or '-'}", flush=True)
            if not same:
                raise SystemExit("a wrapped build differs from sgcc alone's")
            previous = ours

        # -- cost ----------------------------------------------------------------------------
        scenarios = {name: builds[name] for name in ("ccache gcc", "ccache sgcc")}
        for clean, command, _ in scenarios.values():  # both caches warm
            _sh(clean, tree, env)
            _sh(command, tree, env)
        results: dict[str, list[tuple[float, float]]] = {k: [] for k in scenarios}
        hits: dict[str, list[tuple[int, int]]] = {k: [] for k in scenarios}
        load = []
        for name in interleaved(list(scenarios), args.rounds, args.seed):
            _sh(scenarios[name][0], tree, env)
            h0, m0 = _ccache_hits(env)
            load.append(os.getloadavg()[0])
            results[name].append(_timed(["sh", "-c", scenarios[name][1]], tree, env))
            h1, m1 = _ccache_hits(env)
            hits[name].append((h1 - h0, m1 - m0))
        print(f"no-change rebuild, {args.rounds} interleaved rounds; load average {min(load):.1f}-{max(load):.1f} "
              f"on {os.cpu_count()} CPUs")
        print(f"{'build':<14} {RATIO_HEADER}  ccache hits/misses per build (x: to ccache gcc, paired by round)")
        for name, rows in results.items():
            print(f"{name:<14} {ratio_columns(rows, results['ccache gcc'])}  {sorted(set(hits[name]))}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
