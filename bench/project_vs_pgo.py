"""A project's workload under gcc's build, PGO everywhere, PGO on single objects only, a
whole-project flag set and sgcc's tree, timed in one interleaved run (issue 26).

Every build is a private copy of the project tree (``--tree``), cleaned and built with ``$CC``
standing for gcc plus the build's flags (a two-line wrapper, as ``sgcc.project.pgo`` does):

- ``gcc``: the plain build (the baseline of every ratio);
- ``pgo``: one ``-fprofile-generate`` build, the workload run once on it, then the whole
  project with ``-fprofile-use`` (what ``sgcc optimize --project`` reports as PGO everywhere);
- ``pgo-only:OBJ``: the same profile used for the compile writing ``OBJ`` alone (``--only``),
  the rest gcc's: how much of PGO's gain one source holds, inlining and layout of the other
  sources left as gcc's;
- ``flags:F``: the whole project with gcc plus ``F`` (``--flags``), a whole-project flag set;
- ``pgo+F``: PGO everywhere with the flag set ``F`` added to every compile (``--pgo-flags``), as
  project mode's whole-project candidates combine them;
- ``sgcc``: an already built tree (``--sgcc-tree``: ``make CC=sgcc`` after a project run);
- ``gcc-copy``: a copy of gcc's build (``--aa``): the A-vs-A ratio is this machine's noise floor.

Rounds run every build's workload once each, in a fresh random order; each run's CPU time
(user + system of all its processes) is taken from ``wait4``. Printed per build: the median of
its per-round ratio to gcc's build (gcc's time / its time: above 1 is faster) and a 95%
bootstrap interval of that median, and the same for pairs given with ``--versus A,B``.

    python bench/project_vs_pgo.py --tree /tmp/lua --build 'make CC={cc}' --clean 'make clean' \\
        --bench './lua bench.lua > /dev/null' --only lvm.o --rounds 20
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

USE = ["-fprofile-partial-training", "-Wno-missing-profile", "-Wno-coverage-mismatch"]


def wrapper(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    os.chmod(path, 0o755)
    return str(path)


def build(tree: Path, cc: str, args) -> None:
    env = dict(os.environ, CC=cc)
    for cmd in (args.clean, args.build):
        r = subprocess.run(["/bin/sh", "-c", cmd.replace("{cc}", shlex.quote(cc))], cwd=tree, env=env,
                           capture_output=True)
        if r.returncode != 0 and cmd is args.build:
            sys.exit(f"build failed in {tree}: {r.stderr.decode(errors='replace')[-2000:]}")


def cpu_of(tree: Path, commands: list[str]) -> float:
    total = 0.0
    for c in commands:
        p = subprocess.Popen(["/bin/sh", "-c", c], cwd=tree)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            sys.exit(f"{c!r} failed in {tree} ({p.returncode})")
        total += ru.ru_utime + ru.ru_stime
    return total


def interval(ratios: list[float], seed: int = 1) -> tuple[float, float, float]:
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(2000))
    return statistics.median(ratios), meds[50], meds[1949]


def timed_rounds(names: list[str], run, rounds: int, seed: int) -> dict[str, list[float]]:
    """``run(name)`` (CPU seconds) for every name once per round, each round in a fresh random
    order (:func:`build_overhead.interleaved`), after one warm-up run each."""
    from build_overhead import interleaved

    for n in names:
        run(n)
    times: dict[str, list[float]] = {n: [] for n in names}
    for n in interleaved(names, rounds, seed):
        times[n].append(run(n))
    return times


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", required=True, type=Path, help="the project's source tree (copied, never changed)")
    ap.add_argument("--build", required=True, help="build command, {cc} for the compiler")
    ap.add_argument("--clean", required=True)
    ap.add_argument("--bench", action="append", required=True, help="workload command (repeatable)")
    ap.add_argument("--train", action="append", help="training command (default: the workload)")
    ap.add_argument("--only", action="append", default=[], help="object path (relative) for a pgo-only build")
    ap.add_argument("--flags", action="append", default=[], help="a whole-project flag set, e.g. '-march=native'")
    ap.add_argument("--pgo-flags", action="append", default=[],
                    help="a flag set added to PGO everywhere's compiles, e.g. '-O3 -march=native'")
    ap.add_argument("--sgcc-tree", type=Path, help="a tree built by sgcc to time beside them")
    ap.add_argument("--aa", action="store_true", help="also time a copy of gcc's build (A-vs-A: the noise floor)")
    ap.add_argument("--versus", action="append", default=[], help="A,B: also print B against A")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--compiler", default="gcc")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="project-vs-pgo-"))
    cc = args.compiler
    trees: dict[str, Path] = {}
    started = time.monotonic()

    def copy(name: str) -> Path:
        t = work / name.replace(":", "_").replace("/", "_").replace(" ", "_")
        shutil.copytree(args.tree, t, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        return t

    trees["gcc"] = copy("gcc")
    build(trees["gcc"], wrapper(work / "cc-gcc", f'exec {cc} "$@"'), args)
    profile = work / "profile"
    profile.mkdir()
    inst = copy("instrumented")
    build(inst, wrapper(work / "cc-gen", f'exec {cc} "$@" -fprofile-generate={profile} '
                                        "-fprofile-update=prefer-atomic"), args)
    t0 = time.monotonic()
    cpu_of(inst, args.train or args.bench)
    print(f"trained in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    use = " ".join([f"-fprofile-use={profile}", *USE])
    # The instrumented tree's paths name the profiles: the PGO builds are made in it (renamed).
    for name in ["pgo", *[f"pgo-only:{o}" for o in args.only], *[f"pgo+{f}" for f in args.pgo_flags]]:
        t = copy(name)
        # gcc looks profiles up by the object's absolute path: give each PGO tree the
        # instrumented tree's profiles under its own path.
        shutil.rmtree(profile.with_name(profile.name + "-" + t.name), ignore_errors=True)
        mine = profile.with_name(profile.name + "-" + t.name)
        mine.mkdir()
        for g in profile.iterdir():
            mine.joinpath(g.name.replace(str(inst).replace("/", "#"), str(t).replace("/", "#"))).write_bytes(
                g.read_bytes())
        use_t = use.replace(str(profile), str(mine))
        if name == "pgo":
            body = f'exec {cc} "$@" {use_t}'
        elif name.startswith("pgo+"):
            body = f'exec {cc} "$@" {name[4:]} {use_t}'
        else:
            obj = name.split(":", 1)[1]
            # Only the compile writing OBJ gets the profile.
            body = (f'for a in "$@"; do case "$a" in *{shlex.quote(obj)}) exec {cc} "$@" {use_t};; esac; done\n'
                    f'exec {cc} "$@"')
        build(t, wrapper(work / f"cc-{t.name}", body), args)
        trees[name] = t
    for f in args.flags:
        t = copy(f"flags:{f}")
        build(t, wrapper(work / f"cc-{t.name}", f'exec {cc} "$@" {f}'), args)
        trees[f"flags:{f}"] = t
    if args.aa:
        trees["gcc-copy"] = work / "gcc-copy"
        shutil.copytree(trees["gcc"], trees["gcc-copy"], symlinks=True)
    if args.sgcc_tree:
        trees["sgcc"] = args.sgcc_tree
    print(f"built {len(trees)} trees in {time.monotonic() - started:.0f} s; timing {args.rounds} rounds",
          file=sys.stderr)
    times = timed_rounds(list(trees), lambda n: cpu_of(trees[n], args.bench), args.rounds, seed=7)
    print(f"{args.rounds} rounds, gcc's build {statistics.median(times['gcc']):.3f} s CPU (median; "
          f"min {min(times['gcc']):.3f}, max {max(times['gcc']):.3f})")
    for n in trees:
        if n == "gcc":
            continue
        med, lo, hi = interval([g / x for g, x in zip(times["gcc"], times[n])])
        print(f"{n:>28}: {med:.3f}x [{lo:.3f}, {hi:.3f}] against gcc's build")
    for pair in args.versus:
        a, b = pair.split(",")
        med, lo, hi = interval([x / y for x, y in zip(times[a], times[b])])
        print(f"{b:>28}: {med:.3f}x [{lo:.3f}, {hi:.3f}] against {a}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"trees kept in {work}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
