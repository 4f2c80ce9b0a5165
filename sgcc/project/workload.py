"""The project's own test command and workload, run in a private copy of a built tree inside
the isolated runner (:mod:`sgcc.verify.box.sandbox`).

A *launcher* is a small shell script written next to a tree: it changes into the tree and
runs the commands. The sandbox runs it like any test binary (its own box, its limits, the
CPU time of the whole process tree counted), with the tree exposed, writable, at its own
path and nothing else of the host's writable. The tree is private to that run's candidate,
so a hostile candidate can only spoil its own copy.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc import proc

if TYPE_CHECKING:
    from sgcc.verify.box.sandbox import Sandbox

LAUNCHER_PREFIX = ".sgcc-"


def copy_tree(source: Path, dest: Path, *, writable: bool = True) -> Path:
    """A copy of a built tree (times kept, so make sees it up to date). ``writable``: owned by
    whoever the box runs as (nobody, when sgcc runs as root), so the test command can write in
    it. A tree the workload is timed in is not handed over: a run cannot change what the
    next timed run executes (the workload writes to /tmp or /dev/null)."""
    shutil.copytree(source, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    if writable:
        hand_over(dest)
    return dest


def hand_over(tree: Path) -> None:
    """Make ``tree`` writable by the box's user."""
    if os.geteuid() != 0:
        return
    for dirpath, dirnames, filenames in os.walk(tree):
        for name in (*dirnames, *filenames):
            try:
                os.lchown(os.path.join(dirpath, name), proc.NOBODY, proc.NOBODY)
            except OSError:
                pass
    os.chown(tree, proc.NOBODY, proc.NOBODY)


def launcher(tree: Path, name: str, commands: list[str]) -> Path:
    """A script beside ``tree`` that runs ``commands`` in it, one after the other, stopping
    at the first failure (its exit status is the script's)."""
    path = tree.parent / f"{LAUNCHER_PREFIX}{tree.name}-{name}"
    body = "".join(f"( {c}\n) || exit $?\n" for c in commands)
    path.write_text(f"#!/bin/sh\ncd {shlex.quote(str(tree.resolve()))} || exit 125\n{body}", encoding="utf-8")
    os.chmod(path, 0o755)
    return path


def tree_of(path: Path) -> Path | None:
    """The tree a launcher works in (what the sandbox must expose to its runs)."""
    name = Path(path).name
    if not name.startswith(LAUNCHER_PREFIX):
        return None
    stem = name[len(LAUNCHER_PREFIX):].rsplit("-", 1)[0]
    return Path(path).parent / stem


def run_tests(sandbox: Sandbox, tree: Path, command: str, timeout: float) -> tuple[bool, str]:
    """The project's test command in ``tree`` inside the sandbox: (passed, what failed)."""
    script = launcher(tree, "test", [command])
    r = sandbox.run(script, b"", timeout=timeout, writable=[tree])
    if r.ok:
        return True, ""
    tail = (r.stdout + r.stderr).decode(errors="replace").strip().splitlines()[-6:]
    return False, f"the test command {command!r} failed: {r.describe()}" + ("\n" + "\n".join(tail) if tail else "")


def expose(binary: Path) -> list[Path]:
    """What the sandbox shows a run of ``binary``: the tree a launcher works in (and only that
    one); nothing for a plain binary."""
    tree = tree_of(binary)
    return [tree] if tree is not None and tree.is_dir() else []
