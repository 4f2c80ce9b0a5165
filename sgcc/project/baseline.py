"""gcc's build as the baseline of every comparison: recorded, copied, tested, its workload run.

1. :func:`record`: clean, then build once with ``CC`` set to sgcc, the cache off and
   ``SGCC_RECORD`` set (:mod:`sgcc.project.record`): every eligible compile writes down its
   source, flags, gcc's assembly and its cache key; the build itself is plain gcc's. The
   built tree is copied: candidates are built in copies of the copy.
2. :func:`place_copies`: from now on every copy is built, tested and timed where the build
   put the project (:mod:`sgcc.project.place`), where the kernel allows it; otherwise a tree
   whose build recorded its own path is refused.
3. :func:`prepare`, in the isolated runner: with a test command, the project's tests must
   pass on gcc's build (everything they printed is kept in a log when they do not), and the
   workload is the ``bench`` commands; without one, the binary on each stdin test is the
   workload. A workload command naming a path must name something the build made, and the
   workload must run on gcc's build (in a read-only copy of it). Both first runs are traced:
   the project's shared libraries must be the ones loaded (:mod:`sgcc.project.libraries`).
"""

from __future__ import annotations

import os
import shlex
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc.errors import SgccError
from sgcc.project import libraries, partitions, place, workload

if TYPE_CHECKING:
    from sgcc.project.state import ProjectRun
    from sgcc.verify.box.sandbox import TestCase


def record(run: ProjectRun) -> None:
    """The recorded build (``run.compiles``, ``run.build_seconds``), copied to ``run.built_tree``."""
    run.note("clean build with the compiles recorded")
    run.compiles, run.build_seconds = run.builder.record(run.workdir)
    # An LTO build's code is made at its links, in partitions: searched as compiles are.
    run.partitions = partitions.partitions(run, run.workdir / "record")
    run.report.phases["build"] = round(run.build_seconds, 1)
    shutil.copytree(run.root, run.built_tree, symlinks=True, ignore=shutil.ignore_patterns(".git"))


def place_copies(run: ProjectRun) -> None:
    """Copies shown where the build put the project from now on (``run.where``, the builder's
    ``placing``), or, where the kernel cannot, a tree that needs it refused."""
    from sgcc import proc

    if run.sandbox.isolated and proc.placing_available():
        place.check_root(run.root)
        tools = place.named_tools(run.built_tree, run.root)
        run.where = workload.Where(run.root, tuple(tools))
        run.builder.placing = True
        run.report.placed = {"at": str(run.root),
                             "tools": [str(t) if s == t else f"{t} (shown as {s})" for s, t in tools]}
        return
    recorded = place.recorded_in(run.built_tree, run.root)
    if recorded:
        raise SgccError(f"the build recorded the project's path {run.root} (in {', '.join(recorded[:3])}), and "
                        "copies of the project cannot be shown there here (no mount namespace): a copy's build "
                        "would write into your tree",
                        hint="project mode builds and tests copies of the tree; it needs a kernel that lets users "
                             "create user and mount namespaces (see docs/isolation.md)")
    run.report.placed = {"at": "", "why": "no mount namespace: copies are built and tested at their own paths"}


def prepare(run: ProjectRun) -> None:
    """gcc's build checked as the baseline and its workload written: ``run.base`` (a
    read-only copy), ``run.commands``, ``run.base_launcher``, ``run.engine_tests``,
    ``run.test_seconds``, ``run.made_libraries``. Raises :class:`SgccError` when gcc's build
    fails its tests or its workload, or loads another copy of the project's libraries."""
    from sgcc.verify.box import sandbox as sandboxmod

    spec, report, sb = run.spec, run.report, run.sandbox
    base = workload.copy_tree(run.built_tree, run.base, writable=False)
    run.made_libraries = libraries.built(run.built_tree, run.builder.started)
    at = run.where.root or base
    if spec.command_mode:
        report.proof = (f"the project's own test command ({spec.test!r}), run in the rebuilt tree in the "
                        "isolated runner for every candidate; no generated inputs")
        run.note(f"running the project's tests on gcc's build: {spec.test}")
        t0 = time.monotonic()
        first_test = workload.copy_tree(run.built_tree, run.workdir / "base-first-test")
        trace = libraries.trace_dir(run.workdir / "trace-tests")
        output = run.workdir / "base-first-test.log"
        ok, why = run.run_tests(first_test, output=output, trace=trace)
        run.test_seconds = time.monotonic() - t0
        report.phases["tests"] = round(run.test_seconds, 1)
        if not ok:
            log = keep_log(run, output, first_test)
            raise SgccError(f"gcc's build fails the project's own tests: {why}\n(everything the test command "
                            f"printed, and the files it names from the tree it ran in: {log})",
                            hint="the test command must pass on the plain build (exit status 0)")
        _check_libraries(run, trace, run.where.root or first_test, f"the test command ({spec.test})")
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
    run.base_launcher = run.launcher(base, "bench", run.commands)
    trace = libraries.trace_dir(run.workdir / "trace-bench")
    t0 = time.monotonic()
    first = sb.run(run.launcher(base, "bench-first", run.commands, trace=trace), b"", timeout=spec.test_timeout)
    run.workload_seconds = time.monotonic() - t0
    run.workload_output = first.stdout
    if not first.ok:
        tail = (first.stdout + first.stderr).decode(errors="replace").strip().splitlines()[-6:]
        raise SgccError(f"the workload fails on gcc's build: {first.describe()}\n" + "\n".join(tail),
                        hint="bench commands run in a copy of the built tree that may not be writable to them "
                             "(write to /tmp or /dev/null); exit status 0 is expected")
    _check_libraries(run, trace, at, "the workload")


def _check_libraries(run: ProjectRun, trace: Path, at: Path, what: str) -> None:
    """The project's shared libraries a traced run loaded, recorded; another copy refused."""
    used = libraries.check(trace, run.made_libraries, at, what)
    if run.made_libraries:
        libs = run.report.libraries
        libs["built"] = dict(run.made_libraries)
        libs.setdefault("loaded", {}).update(used)


def keep_log(run: ProjectRun, output: Path, tree: Path) -> Path:
    """A lasting copy of a failed test command's whole output, followed by the files of the
    tree it ran in that the output names (ctest's ``LastTest.log``): the copy itself is
    discarded. Where: ``logs/`` of the cache directory."""
    import re

    from sgcc import dirs

    where = Path(dirs.cache_root()) / "logs"
    where.mkdir(parents=True, exist_ok=True)
    log = where / f"project-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-tests.log"
    text = output.read_bytes() if output.is_file() else b""
    at = str(run.where.root or tree)
    parts = [text]
    seen: set[str] = set()
    for m in re.finditer(rb"(" + re.escape(at.encode()) + rb"/[^\s'\"]+)", text):
        name = m.group(1).decode(errors="replace").rstrip(".:,;)")
        if name in seen:
            continue
        seen.add(name)
        copy = tree / os.path.relpath(name, at)
        if copy.is_file() and copy.stat().st_size <= 16 << 20:
            parts.append(f"\n==> {name} (from the copy of the tree the tests ran in) <==\n".encode()
                         + copy.read_bytes())
    log.write_bytes(b"".join(parts))
    return log


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
