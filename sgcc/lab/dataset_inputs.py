"""Reading a dataset's source directory defensively: which problems it holds, and their
sources and inputs under size caps (no symlinks, no special files: the sources may come
from anywhere)."""

from __future__ import annotations

import os
from pathlib import Path

from sgcc.errors import SgccError
from sgcc.fsutil import ReadError, read_bounded
from sgcc.lab.dataset_model import (
    CANDIDATE_DIRS,
    MAX_INPUT,
    MAX_INPUTS,
    MAX_INPUTS_TOTAL,
    MAX_SOURCE,
    NAME,
    Dropped,
    Outcome,
    Problem,
)
from sgcc.verify.box.sandbox import TestCase


def read_capped(path: Path, limit: int, what: str) -> bytes:
    """Read a regular, non-symlink file of at most ``limit`` bytes, or raise :class:`SgccError`.

    :func:`sgcc.fsutil.read_bounded` without following symlinks: a symlink (which could point
    at any file on the machine, later shown in a dataset), a FIFO (which would hang the read)
    or a file swapped in after a check are all refused.
    """
    try:
        return read_bounded(path, limit, what=what, follow_symlinks=False)
    except ReadError:
        if os.path.islink(path):
            raise SgccError(f"{what} {path} is a symlink (not followed)") from None
        raise


def discover(src_dir: Path) -> tuple[list[Problem], list[Outcome]]:
    """Find the problems in ``src_dir``; also return entries skipped as unusable.

    Two layouts, which may be mixed:

    * flat: ``SRC/NAME.c`` with inputs ``SRC/NAME.in`` and ``SRC/NAME-T.in`` (also ``_T``
      or ``.T``); an input belongs to the longest program name it starts with, so
      ``sort.c`` and ``sort2.c`` do not share inputs;
    * one directory per problem: ``SRC/NAME/NAME.c`` with ``SRC/NAME/*.in`` or
      ``SRC/NAME/tests/*.in``, and optionally ``SRC/NAME/candidates*/``.

    ``.out`` files next to the inputs are ignored: expected outputs are recorded from the
    program itself, as in the papers.
    """
    src_dir = Path(src_dir)
    if not src_dir.is_dir():
        raise SgccError(f"source directory {src_dir} does not exist or is not a directory")
    try:
        entries = sorted(os.scandir(src_dir), key=lambda e: e.name)
    except OSError as exc:
        raise SgccError(f"cannot read source directory {src_dir}", cause=exc) from exc

    problems: dict[str, Problem] = {}
    skipped: list[Outcome] = []
    flat_inputs = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_dir(follow_symlinks=False):
            source = Path(entry.path) / f"{entry.name}.c"
            if not os.path.lexists(source):
                continue  # a helper directory (scripts, docs), not a problem
            if not NAME.match(entry.name):
                skipped.append(Outcome(entry.name).drop("read", "unsafe problem name"))
                continue
            problems[entry.name] = _directory_problem(entry.name, Path(entry.path))
        elif entry.name.endswith(".c"):
            name = entry.name[:-2]
            if not NAME.match(name):
                skipped.append(Outcome(name).drop("read", "unsafe problem name"))
                continue
            if name in problems:
                skipped.append(Outcome(name).drop("read", "both NAME.c and NAME/NAME.c exist"))
                continue
            problems[name] = Problem(name, Path(entry.path), {})
        elif entry.name.endswith(".in"):
            flat_inputs.append(entry)

    # Flat inputs: longest matching name first.
    flat_names = sorted((p.name for p in problems.values() if p.source.parent == src_dir), key=len, reverse=True)
    for entry in flat_inputs:
        stem = entry.name[:-3]
        for name in flat_names:
            if stem == name:
                test = "main"
            elif stem.startswith(name) and stem[len(name)] in "-_.":
                test = stem[len(name) + 1 :]
            else:
                continue
            if NAME.match(test):
                problems[name].inputs[test] = Path(entry.path)
            break
    result = sorted(problems.values(), key=lambda p: p.name)
    for p in result:
        if not p.inputs:
            skipped.append(Outcome(p.name).drop("read", "no input files (NAME.in, NAME-T.in or NAME/tests/T.in)"))
    return [p for p in result if p.inputs], skipped


def _directory_problem(name: str, directory: Path) -> Problem:
    """A problem in its own directory: inputs in ``tests/`` if present, else beside the source."""
    tests_dir = directory / "tests"
    where = tests_dir if tests_dir.is_dir() and not tests_dir.is_symlink() else directory
    inputs = {}
    for entry in sorted(os.scandir(where), key=lambda e: e.name):
        if entry.name.endswith(".in") and NAME.match(entry.name[:-3]):
            inputs[entry.name[:-3]] = Path(entry.path)
    extras = {}
    for sub in CANDIDATE_DIRS:
        d = directory / sub
        if d.is_dir() and not d.is_symlink():
            extras[sub] = d
    return Problem(name, directory / f"{name}.c", inputs, extras)


def read_problem(problem: Problem) -> tuple[bytes, list[TestCase]]:
    """The source text and the inputs, under the size caps; raises :class:`Dropped`."""
    try:
        source = read_capped(problem.source, MAX_SOURCE, "source")
        if len(problem.inputs) > MAX_INPUTS:
            raise SgccError(f"too many inputs ({len(problem.inputs)}, limit {MAX_INPUTS})")
        tests, total = [], 0
        for test, path in sorted(problem.inputs.items()):
            data = read_capped(path, MAX_INPUT, "input")
            total += len(data)
            if total > MAX_INPUTS_TOTAL:
                raise SgccError(f"the inputs are too large together (limit {MAX_INPUTS_TOTAL} bytes)")
            tests.append(TestCase(test, data))
    except SgccError as exc:
        raise Dropped("read", exc.message) from None
    return source, tests
