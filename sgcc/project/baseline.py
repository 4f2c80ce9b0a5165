"""gcc's build as the baseline of every comparison: recorded, copied, tested, its workload run.

1. :func:`record`: clean, then build once with ``CC`` set to sgcc, the cache off and
   ``SGCC_RECORD`` set (:mod:`sgcc.project.record`): every eligible compile writes down its
   source, flags, gcc's assembly and its cache key; the build itself is plain gcc's. The
   built tree is copied: candidates are built in copies of the copy.
2. :func:`prepare`, in the isolated runner: with a test command, the project's tests must
   pass on gcc's build, and the workload is the ``bench`` commands; without one, the binary
   on each stdin test is the workload. A workload command naming a path must name something
   the build made, and the workload must run on gcc's build (in a read-only copy of it).
"""

from __future__ import annotations

import shlex
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc.errors import SgccError
from sgcc.project import workload

if TYPE_CHECKING:
    from sgcc.project.state import ProjectRun
    from sgcc.verify.box.sandbox import TestCase


def record(run: ProjectRun) -> None:
    """The recorded build (``run.compiles``, ``run.build_seconds``), copied to ``run.built_tree``."""
    run.note("clean build with the compiles recorded")
    run.compiles, run.build_seconds = run.builder.record(run.workdir)
    run.report.phases["build"] = round(run.build_seconds, 1)
    shutil.copytree(run.root, run.built_tree, symlinks=True, ignore=shutil.ignore_patterns(".git"))


def prepare(run: ProjectRun) -> None:
    """gcc's build checked as the baseline and its workload written: ``run.base`` (a
    read-only copy), ``run.commands``, ``run.base_launcher``, ``run.engine_tests``,
    ``run.test_seconds``. Raises :class:`SgccError` when gcc's build fails its tests or its
    workload."""
    from sgcc.verify.box import sandbox as sandboxmod

    spec, report, sb = run.spec, run.report, run.sandbox
    base = workload.copy_tree(run.built_tree, run.base, writable=False)
    if spec.command_mode:
        report.proof = (f"the project's own test command ({spec.test!r}), run in the rebuilt tree in the "
                        "isolated runner for every candidate; no generated inputs")
        run.note(f"running the project's tests on gcc's build: {spec.test}")
        t0 = time.monotonic()
        ok, why = workload.run_tests(sb, workload.copy_tree(run.built_tree, run.workdir / "base-first-test"),
                                     spec.test, spec.test_timeout)
        run.test_seconds = time.monotonic() - t0
        report.phases["tests"] = round(run.test_seconds, 1)
        if not ok:
            raise SgccError(f"gcc's build fails the project's own tests: {why}",
                            hint="the test command must pass on the plain build (exit status 0)")
        run.commands = list(spec.workload)
        run.engine_tests.mkdir()
        (run.engine_tests / "workload.in").write_bytes(b"")
    else:
        binary = run.root / spec.binary
        if not binary.is_file():
            raise SgccError(f"the build did not produce {binary}", hint="check binary = ... in [project]")
        tests = sandboxmod.load_tests(Path(spec.tests))
        report.proof = (f"the stdin tests in {spec.tests} and inputs generated from them, compared with "
                        "gcc's program")
        run.test_seconds = 0.0
        run.commands = _stdin_workload(base, spec.binary, tests)
        run.engine_tests = Path(spec.tests)
    report.workload = run.commands
    _check_workload(base, run.commands)
    run.base_launcher = workload.launcher(base, "bench", run.commands)
    first = sb.run(run.base_launcher, b"", timeout=spec.test_timeout)
    if not first.ok:
        tail = (first.stdout + first.stderr).decode(errors="replace").strip().splitlines()[-6:]
        raise SgccError(f"the workload fails on gcc's build: {first.describe()}\n" + "\n".join(tail),
                        hint="bench commands run in a copy of the built tree that may not be writable to them "
                             "(write to /tmp or /dev/null); exit status 0 is expected")


def _stdin_workload(tree: Path, binary: str, tests: list[TestCase]) -> list[str]:
    """Stdin tests as a workload: the binary run on each input, inside the tree."""
    inputs = tree / ".sgcc-inputs"
    inputs.mkdir()
    commands = []
    for n, t in enumerate(tests):
        (inputs / f"{n}.in").write_bytes(t.stdin)
        commands.append(f"./{binary} < .sgcc-inputs/{n}.in > /dev/null")
    return commands


def _check_workload(tree: Path, commands: list[str]) -> None:
    """A workload command naming a path (``./prog``) must name something the build made."""
    for c in commands:
        first = shlex.split(c)[0]
        if "/" in first and not first.startswith("/") and not (tree / first).exists():
            raise SgccError(f"the bench command {c!r}: {first} does not exist after the build",
                            hint="bench commands run in the project's directory")
