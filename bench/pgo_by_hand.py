"""A PGO build made by hand, the ordinary way, beside gcc's build, an identical copy of it and
the tree sgcc left: the workload timed outside sgcc, interleaved (issue 39).

What a user does: build with ``-fprofile-generate`` added to the build's C flags, run the
workload once, build again in the same place with ``-fprofile-use`` (gcc finds each object's
profile beside it), and run the result. Nothing of sgcc's takes part. Builds:

- ``gcc``: the plain build (the baseline of every ratio);
- ``gcc-copy``: an identical copy of gcc's build (the A-vs-A noise control);
- ``pgo-by-hand``: the ordinary PGO build, trained on the workload (``--train`` to train on
  something else);
- ``sgcc``: the tree sgcc left (``--sgcc``: its build directory, or the project's tree);
- with ``--lto FLAGS`` (``-flto=auto``, say), two more (issue 40): ``lto``, gcc's build with
  FLAGS added, and ``pgo-lto-by-hand``, PGO the ordinary way with FLAGS in the instrumented,
  the trained and the final build alike (each in a place of its own).

Two layouts. ``--layout builddir`` (CMake, Meson): every build is a build directory of the
project's own tree, ``{dir}`` in ``--build`` and ``--bench`` (``build-b0`` for gcc's,
``build-b2`` for PGO's...), ``{cflags}`` the C flags added. ``--layout copy`` (make, in-tree
builds): every build is a copy of the tree (a make project names its files relatively) in
``--work`` (``b0``, ``b1``...), ``{dir}`` the copy, ``{cflags}`` as above; ``--sgcc`` is then
the project's tree itself. What sgcc left is copied beside the others (``build-b5``, ``b5``)
and timed there: every build runs from a path of one length (the path is the program's
``argv[0]`` and the shell's ``PWD``, and their length moves the stack: named by build, an
identical copy of zlib-ng's gcc build ran 0.929x of it). The line before the figures says
which build is where.

Rounds run every build's workload once each, in a fresh random order; each run's CPU time
(user + system of all its processes, ``wait4``). Printed per build: the median per-round ratio
to gcc's build (above 1 is faster) with a 95% bootstrap interval, and the pairs ``--versus``.

    python bench/pgo_by_hand.py --tree /tmp/bzip2 --layout builddir \\
        --build 'cmake -S . -B {dir} -DCMAKE_C_FLAGS="{cflags}" && cmake --build {dir}' \\
        --bench '{dir}/bzip2 -9 -c big.dat | {dir}/bzip2 -d | cmp - big.dat' --sgcc build \\
        --versus pgo-by-hand,sgcc --rounds 30
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from project_vs_pgo import interval, timed_rounds


def run(cmd: str, cwd: Path, what: str) -> None:
    r = subprocess.run(["/bin/sh", "-c", cmd], cwd=cwd, capture_output=True)
    if r.returncode != 0:
        sys.exit(f"{what} failed in {cwd}: {cmd}\n{r.stderr.decode(errors='replace')[-2000:]}")


def cpu(cmd: str, cwd: Path) -> float:
    p = subprocess.Popen(["/bin/sh", "-c", cmd], cwd=cwd)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"{cmd!r} failed in {cwd} ({p.returncode})")
    return ru.ru_utime + ru.ru_stime


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", required=True, type=Path)
    ap.add_argument("--layout", choices=("builddir", "copy"), required=True)
    ap.add_argument("--build", required=True, help="build command: {dir}, {cflags}")
    ap.add_argument("--clean", default="", help="clean command before the -fprofile-use build (copy layout)")
    ap.add_argument("--bench", action="append", required=True, help="workload command: {dir}")
    ap.add_argument("--train", action="append", help="training command (default: the workload)")
    ap.add_argument("--cflags", default="", help="the build's own C flags, kept in every build")
    ap.add_argument("--sgcc", help="the tree sgcc left: its build directory (builddir) or '.' (copy)")
    ap.add_argument("--versus", action="append", default=[], help="A,B: also print B against A")
    ap.add_argument("--lto", default="", help="LTO flags: also build gcc + LTO and PGO + LTO by hand")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--work", type=Path, help="where copies go (copy layout; default a temporary directory)")
    args = ap.parse_args(argv)
    tree = args.tree.resolve()
    started = time.monotonic()
    work = args.work or Path(tempfile_dir())
    where: dict[str, tuple[Path, str]] = {}  # build -> (cwd, {dir})
    # Every build is timed from a place whose name has one length (b0, b1, ...): the path is the
    # program's argv[0] and the shell's PWD, whose length moves the stack. Named by build
    # ("gcc-copy", the user's "build"), zlib-ng's identical copy of gcc's build ran 0.929x.
    slots = ["gcc", "gcc-copy", "pgo", "lto", "pgo-lto", "sgcc"]

    def slot(name: str) -> str:
        return f"b{slots.index(name)}"

    def spot(name: str) -> tuple[Path, str]:
        """Where build ``name`` is made and timed from: (cwd, {dir})."""
        if args.layout == "builddir":
            return tree, f"build-{slot(name)}"
        return work / slot(name), str(work / slot(name))

    def place(name: str) -> tuple[Path, str]:
        """``spot(name)``, emptied (a build directory) or a fresh copy of the tree."""
        cwd, d = spot(name)
        shutil.rmtree(tree / d if args.layout == "builddir" else cwd, ignore_errors=True)
        if args.layout == "copy":
            shutil.copytree(tree, cwd, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        return cwd, d

    def build(name: str, cflags: str, cwd: Path, d: str) -> None:
        flags = " ".join(f for f in (args.cflags, cflags) if f)
        run(args.build.replace("{dir}", d).replace("{cflags}", flags), cwd, f"the {name} build")

    cwd, d = place("gcc")
    if args.layout == "copy" and args.clean:
        run(args.clean, cwd, "clean")
    build("gcc", "", cwd, d)
    where["gcc"] = (cwd, d)
    # The noise control: gcc's build, copied as it is.
    where["gcc-copy"] = _copied(tree / d if args.layout == "builddir" else cwd, *spot("gcc-copy"))
    def by_hand(name: str, extra: str) -> None:
        # PGO the ordinary way: instrument, train, rebuild in the same place with the profile.
        cwd, d = place(name.removesuffix("-by-hand"))
        if args.layout == "copy" and args.clean:
            run(args.clean, cwd, "clean")
        build(f"{name} (instrumented)", " ".join(f for f in ("-fprofile-generate", extra) if f), cwd, d)
        t0 = time.monotonic()
        for c in args.train or args.bench:
            cpu(c.replace("{dir}", d), cwd)
        print(f"{name}: trained in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        if args.clean:
            run(args.clean.replace("{dir}", d), cwd, "clean")
        build(name, " ".join(f for f in ("-fprofile-use", extra) if f), cwd, d)
        where[name] = (cwd, d)

    by_hand("pgo-by-hand", "")
    if args.lto:
        cwd, d = place("lto")
        if args.layout == "copy" and args.clean:
            run(args.clean, cwd, "clean")
        build("lto", args.lto, cwd, d)
        where["lto"] = (cwd, d)
        by_hand("pgo-lto-by-hand", args.lto)
    if args.sgcc:
        # A copy of what sgcc left, timed from a place like the others'.
        where["sgcc"] = _copied(tree / args.sgcc if args.layout == "builddir" else tree, *spot("sgcc"))
    print(f"built {len(where)} builds in {time.monotonic() - started:.0f} s; timing {args.rounds} rounds; "
          f"load average {os.getloadavg()[0]:.1f}; timed from "
          + ", ".join(f"{n} {d}" for n, (_, d) in where.items()), file=sys.stderr)
    benches = {n: [b.replace("{dir}", shlex.quote(d)) for b in args.bench] for n, (_, d) in where.items()}
    times = timed_rounds(list(where), lambda n: sum(cpu(b, where[n][0]) for b in benches[n]), args.rounds, seed=39)
    print(f"{args.rounds} rounds, gcc's build {statistics.median(times['gcc']):.3f} s CPU (median; "
          f"min {min(times['gcc']):.3f}, max {max(times['gcc']):.3f}); load average {os.getloadavg()[0]:.1f}")
    for n in where:
        if n != "gcc":
            med, lo, hi = interval([g / x for g, x in zip(times["gcc"], times[n])])
            print(f"{n:>14}: {med:.3f}x [{lo:.3f}, {hi:.3f}] against gcc's build")
    for pair in args.versus:
        a, b = pair.split(",")
        med, lo, hi = interval([x / y for x, y in zip(times[a], times[b])])
        print(f"{b:>14}: {med:.3f}x [{lo:.3f}, {hi:.3f}] against {a}")
    return 0


def _copied(source: Path, cwd: Path, d: str) -> tuple[Path, str]:
    """``source`` (a build directory, or a built tree) copied as it is to ``d`` (below ``cwd``,
    or ``cwd`` itself for a tree): where that build is timed from."""
    target = cwd / d if not Path(d).is_absolute() else Path(d)
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    return cwd, d


def tempfile_dir() -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="pgo-by-hand-")


if __name__ == "__main__":
    raise SystemExit(main())
