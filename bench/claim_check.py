#!/usr/bin/env python3
"""Does the speedup sgcc claims hold outside its box, as the user runs the program?

Optimizes one example program with ``sgcc optimize`` (its replay candidates by default),
reads the claim from the report (the shipped program's speedup over gcc's with its
interval), builds the same source with plain ``gcc -O3``, and measures the shipped program
against gcc's *outside* the isolated runner, as a user runs it: a plain ``fork``/``exec``
of the binary in this process's environment, stdin from the test's file, stdout to
``/dev/null`` (or to a real file, ``--stdout file``), CPU time of the child from ``wait4``.
The measurement is interleaved (random order within each round), paired, with a bootstrap
interval (:func:`sgcc.verify.timing.rounds.measure`, the same statistic sgcc uses), on every test
input the claim was timed on. It prints the claim, the measurement and whether the claimed
interval contains the measured speedup (and whether the two intervals overlap).

``--pad`` gives every outside run a random environment size, as the box does (the default
is one fixed environment, the user's). ``--repeat N`` measures N times (fresh rounds each),
so a claim is judged against more than one outside measurement.

Usage: ``python bench/claim_check.py [--program popcount] [--rounds 40] [--budget 120s]``;
``--source F.c --tests DIR --candidates DIR`` for another program. Takes 1-3 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc.verify.timing.rounds import measure  # noqa: E402

PROGRAMS = ROOT / "examples" / "programs"


def _spawn_cpu(argv: list[str], env: dict, what: str, file_actions=()) -> float:
    """Run ``argv`` with posix_spawn (vfork-like: no copy of this Python process's pages is
    charged to the child, as when a shell starts the program); its CPU seconds (user +
    system, from ``wait4``). Stops the script when it fails."""
    pid = os.posix_spawn(argv[0], argv, env, file_actions=list(file_actions))
    _, status, usage = os.wait4(pid, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        raise SystemExit(f"{what} failed outside the box (status {status})")
    return usage.ru_utime + usage.ru_stime


def outside_runner(binary: Path, inputs: list[Path], stdout: str, scratch: Path, pad: bool):
    """A run function for :func:`measure`: ``binary`` on every input, outside any box;
    the CPU seconds (user + system) of the child, from ``wait4``."""
    env = dict(os.environ)

    def run(env_pad: int, world: int = 0) -> float:
        total = 0.0
        run_env = dict(env, SGCC_CLAIM_PAD="x" * env_pad) if pad else env
        for path in inputs:
            actions = [(os.POSIX_SPAWN_OPEN, 0, str(path), os.O_RDONLY, 0),
                       (os.POSIX_SPAWN_OPEN, 1, str(scratch / f"{binary.name}.out") if stdout == "file"
                        else os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)]
            total += _spawn_cpu([str(binary)], run_env, f"{binary} on {path.name}", actions)
        return total

    return run


def shell_runner(tree: Path, commands: list[str]):
    """A run function for :func:`measure`: the project's bench ``commands`` in ``tree``,
    each through ``/bin/sh -c`` as a user types them, outside any box; CPU seconds of the
    shell and every process it waited for (``wait4``)."""

    def run(env_pad: int, world: int = 0) -> float:
        total = 0.0
        for command in commands:
            total += _spawn_cpu(["/bin/sh", "-c", f"cd {shlex.quote(str(tree))} && {command}"],
                                dict(os.environ), f"{command!r} in {tree}")
        return total

    return run


def check_project(args) -> int:
    """``--project``: sgcc's whole-project claim against the shipped tree outside the box."""
    import shutil
    import tomllib

    work = Path(args.keep or tempfile.mkdtemp(prefix="sgcc-claim-"))
    work.mkdir(parents=True, exist_ok=True)
    shipped, plain, report_path = work / "shipped", work / "plain", work / "report.json"
    toml = Path(args.project) / "sgcc.toml"
    spec = tomllib.loads(toml.read_text()).get("project", {}) if toml.is_file() else {}
    commands = args.bench or spec.get("bench") or []
    if not commands:
        print("claim_check: error: no bench commands (sgcc.toml's [project] bench, or --bench)", file=sys.stderr)
        return 2
    if not (args.reuse and report_path.is_file() and shipped.is_dir()):
        shutil.rmtree(shipped, ignore_errors=True)
        shutil.copytree(args.project, shipped, symlinks=True)
        cmd = [_sgcc(), "optimize", "--project", str(shipped), "--report", str(report_path)]
        if args.budget:
            cmd += ["--budget", args.budget]
        print("$ " + " ".join(cmd), flush=True)
        # The run leaves the tree rebuilt from its winners (a private cache: nothing of the
        # user's is read or written): that tree is the claim's.
        subprocess.run(cmd, check=True, env=dict(os.environ, SGCC_CACHE_DIR=str(work / "cache")))
    if not (args.reuse and plain.is_dir()):
        shutil.rmtree(plain, ignore_errors=True)
        shutil.copytree(args.project, plain, symlinks=True)
        build = args.plain_build or spec.get("build", "make").replace("{sgcc}", "gcc")
        subprocess.run(["/bin/sh", "-c", f"{spec.get('clean', 'make clean')} >/dev/null 2>&1; {build}"], cwd=plain,
                       check=True, stdout=subprocess.DEVNULL)
    report = json.loads(report_path.read_text())
    final = report.get("final")
    if not final:
        print("sgcc shipped gcc's build: no claim to check")
        return 0
    claim = (final["speedup"], final["low"], final["high"])
    print(f"claim (sgcc's report, in the box): {claim[0]:.3f}x [{claim[1]:.3f}, {claim[2]:.3f}] on "
          f"{final.get('rounds')} rounds x {final.get('reps')} reps")
    return _compare(args, claim, shell_runner(plain, commands), shell_runner(shipped, commands),
                    f"bench commands {commands}")


def _sgcc() -> str:
    mine = ROOT / ".venv" / "bin" / "sgcc"
    return str(mine) if mine.exists() else "sgcc"


def _compare(args, claim, run_plain, run_shipped, what: str) -> int:
    """Measure ``--repeat`` times outside the box and print each against the claim."""
    contained = 0
    for k in range(args.repeat):
        est = measure(run_plain, run_shipped, rounds=args.rounds, min_sample_seconds=args.min_sample,
                      seed=None if args.seed is None else args.seed + k)
        inside = claim[1] <= est.speedup <= claim[2]
        overlap = est.low <= claim[2] and claim[1] <= est.high
        contained += inside
        print(f"measured outside the box ({'padded' if args.pad else 'fixed'} environment, stdout to "
              f"{args.stdout}, {what}): {est}")
        print(f"  claimed interval contains the measurement: {'yes' if inside else 'NO'}; intervals overlap: "
              f"{'yes' if overlap else 'NO'}; measured/claimed {est.speedup / claim[0]:.3f}", flush=True)
    print(f"\n{contained} of {args.repeat} outside measurements inside the claimed interval")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--program", default="popcount", help="an example under examples/programs (default popcount)")
    ap.add_argument("--source", type=Path, help="another C source (with --tests, --candidates)")
    ap.add_argument("--tests", type=Path)
    ap.add_argument("--candidates", type=Path)
    ap.add_argument("--generators", default="replay", help="sgcc's generators (default: replay)")
    ap.add_argument("--budget", default=None, help="sgcc's --budget")
    ap.add_argument("--rounds", type=int, default=40, help="rounds of the outside measurement (default 40)")
    ap.add_argument("--repeat", type=int, default=1, help="outside measurements (default 1)")
    ap.add_argument("--stdout", choices=["null", "file"], default="null", help="where the timed runs write")
    ap.add_argument("--pad", action="store_true", help="random environment size per run, as in the box")
    ap.add_argument("--inputs", choices=["claimed", "all"], default="claimed",
                    help="time the inputs the claim was timed on (the tests the search saw; default) or all")
    ap.add_argument("--min-sample", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--keep", type=Path, default=None, help="keep the binaries and the report here")
    ap.add_argument("--reuse", action="store_true", help="with --keep: reuse the sgcc run kept there")
    ap.add_argument("--project", type=Path, help="a project tree with an sgcc.toml (copied; never changed)")
    ap.add_argument("--bench", action="append", help="--project: a bench command (default: sgcc.toml's)")
    ap.add_argument("--plain-build", help="--project: gcc's build (default: sgcc.toml's build with gcc for {sgcc})")
    args = ap.parse_args()
    if args.project is not None:
        return check_project(args)

    if args.source is None:
        d = PROGRAMS / args.program
        source, tests, cands = d / f"{args.program}.c", d / "tests", d / "candidates"
    else:
        source, tests, cands = args.source, args.tests, args.candidates
    inputs = sorted(Path(tests).glob("*.in"))
    if args.inputs == "claimed":
        # The engine times candidates on the tests the search sees, not the held-out third
        # (sgcc.engine.proof.split): the claim is about that mix of inputs.
        from sgcc.engine.proof import split

        visible, _ = split([SimpleNamespace(name=p.stem, path=p) for p in inputs])
        inputs = [t.path for t in visible]
    if not source.is_file() or not inputs:
        print(f"claim_check: error: {source} or its tests ({tests}) are missing", file=sys.stderr)
        return 2

    work = Path(args.keep or tempfile.mkdtemp(prefix="sgcc-claim-"))
    work.mkdir(parents=True, exist_ok=True)
    shipped, plain, report_path = work / "shipped", work / "plain", work / "report.json"
    cmd = [_sgcc(), "optimize", str(source), "-O3", "--tests", str(tests), "-o", str(shipped),
           "--report", str(report_path), "--generators", args.generators, "--no-cache", "-q"]
    if cands and cands.is_dir() and "replay" in args.generators:
        cmd += ["--candidates", str(cands)]
    if args.budget:
        cmd += ["--budget", args.budget]
    if args.reuse and report_path.is_file() and shipped.is_file():
        print(f"reusing {report_path} and {shipped}")
    else:
        print("$ " + " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    subprocess.run(["gcc", "-O3", "-o", str(plain), str(source)], check=True)
    report = json.loads(report_path.read_text())
    final = report.get("final")
    if not final:
        print("sgcc shipped gcc's program: no claim to check")
        return 0
    if args.inputs == "claimed" and final.get("timed_on"):
        named = [p for p in inputs if p.stem in set(final["timed_on"])]
        inputs = named or inputs
    claim = (final["speedup"], final["low"], final["high"])
    print(f"claim (sgcc's report, in the box): {claim[0]:.3f}x [{claim[1]:.3f}, {claim[2]:.3f}] "
          f"on {final.get('rounds')} rounds x {final.get('reps')} reps; functions {', '.join(final['functions'])}")
    winners = [c for c in report["candidates"] if c["id"] in report.get("shipped", [])]
    for c in winners:
        race = c.get("meta", {}).get("race")
        sel = f"{c['speedup']:.3f}x [{c['ci_low']:.3f}, {c['ci_high']:.3f}] on {c['rounds']} rounds" \
            if c.get("speedup") else "-"
        print(f"  {c['id']} ({c['function']}): selected on {sel}"
              + (f" (a race of {race['field']}, rungs {race['rungs']})" if race else "")
              + (f"; confirmed on fresh rounds {c['confirm']['speedup']:.3f}x" if c.get("confirm") else ""))

    return _compare(args, claim, outside_runner(plain, inputs, args.stdout, work, args.pad),
                    outside_runner(shipped, inputs, args.stdout, work, args.pad),
                    f"inputs {', '.join(p.stem for p in inputs)}")


if __name__ == "__main__":
    sys.exit(main())
