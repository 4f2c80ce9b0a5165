"""The project's own test command and workload, run in a private copy of a built tree inside
the isolated runner (:mod:`sgcc.verify.box.sandbox`).

A *launcher* is a small shell script written next to a tree: it changes into the tree and
runs the commands. The sandbox runs it like any test binary (its own box, its limits, the
CPU time of the whole process tree counted), with the tree exposed, writable, where the
build put the project (:mod:`sgcc.project.place`; at its own path where that is not
possible) and nothing else of the host's writable. The tree is private to that run's
candidate, so a hostile candidate can only spoil its own copy. What a run is shown is
written in the launcher's header (:func:`expose` reads it back), so a launcher says all
about its runs.
"""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc import proc

if TYPE_CHECKING:
    from sgcc.verify.box.sandbox import Sandbox

LAUNCHER_PREFIX = ".sgcc-"
#: Where the dynamic loader's trace of a run goes (:mod:`sgcc.project.libraries`).
TRACE_NAME = "ld"


@dataclass(frozen=True)
class Where:
    """Where the runs of a copy see it: at ``root``, the project's own path (None: at the
    copy's own path), with ``tools`` (programs the tests name outside the system's
    directories, :func:`sgcc.project.place.named_tools`) shown read-only: (what, where)."""

    root: Path | None = None
    tools: tuple[tuple[Path, Path], ...] = ()


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


def launcher(tree: Path, name: str, commands: list[str], where: Where | None = None,
             trace: Path | None = None) -> Path:
    """A script beside ``tree`` that runs ``commands`` in it, one after the other, stopping
    at the first failure (its exit status is the script's). ``where``: where its runs see the
    tree (:class:`Where`); ``trace``: a directory where the dynamic loader writes what it
    loads (``LD_DEBUG``, :mod:`sgcc.project.libraries`)."""
    where = where or Where()
    path = tree.parent / f"{LAUNCHER_PREFIX}{tree.name}-{name}"
    at = where.root or tree.resolve()
    head = [f"# sgcc-tree: {shlex.quote(str(tree.resolve()))} {shlex.quote(str(at))}"]
    head += [f"# sgcc-tool: {shlex.quote(str(s))} {shlex.quote(str(t))}" for s, t in where.tools]
    env = ""
    if trace is not None:
        head.append(f"# sgcc-trace: {shlex.quote(str(trace))}")
        output = shlex.quote(str(trace / TRACE_NAME))
        env = f"LD_DEBUG=libs,files LD_DEBUG_OUTPUT={output}\nexport LD_DEBUG LD_DEBUG_OUTPUT\n"
    body = "".join(f"( {c}\n) || exit $?\n" for c in commands)
    path.write_text(f"#!/bin/sh\n{chr(10).join(head)}\n{env}cd {shlex.quote(str(at))} || exit 125\n{body}",
                    encoding="utf-8")
    os.chmod(path, 0o755)
    return path


def _header(path: Path) -> dict[str, list[list[str]]]:
    """The ``# sgcc-KEY: words`` lines of a launcher (written by :func:`launcher`)."""
    out: dict[str, list[list[str]]] = {}
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read(1 << 16).splitlines()
    except (OSError, UnicodeDecodeError):
        return out
    for line in lines[1:]:
        if not line.startswith("# sgcc-"):
            break
        key, _, rest = line[len("# sgcc-"):].partition(": ")
        out.setdefault(key, []).append(shlex.split(rest))
    return out


def tree_of(path: Path) -> Path | None:
    """The tree a launcher works in (what the sandbox must expose to its runs)."""
    if not Path(path).name.startswith(LAUNCHER_PREFIX):
        return None
    trees = _header(path).get("tree")
    return Path(trees[0][0]) if trees else None


def run_tests(sandbox: Sandbox, tree: Path, command: str, timeout: float, where: Where | None = None,
              output: Path | None = None, trace: Path | None = None) -> tuple[bool, str]:
    """The project's test command in ``tree`` inside the sandbox: (passed, what failed).
    ``output``: where to write everything the command printed, whatever the outcome."""
    script = launcher(tree, "test", [command], where, trace)
    r = sandbox.run(script, b"", timeout=timeout)
    if output is not None:
        output.write_bytes(r.stdout + (b"\n" if r.stdout and not r.stdout.endswith(b"\n") else b"") + r.stderr)
    if r.ok:
        return True, ""
    tail = (r.stdout + r.stderr).decode(errors="replace").strip().splitlines()[-6:]
    return False, f"the test command {command!r} failed: {r.describe()}" + ("\n" + "\n".join(tail) if tail else "")


def expose(binary: Path) -> list:
    """What the sandbox shows a run of ``binary``: for a launcher, its tree (and only that
    one) where the launcher says, writable, the tools it names read-only, and its trace
    directory; nothing for a plain binary."""
    from sgcc.verify.box.isolate import Bind

    if not Path(binary).name.startswith(LAUNCHER_PREFIX):
        return []
    head = _header(binary)
    out: list = []
    for tree, at in head.get("tree", []):
        if Path(tree).is_dir():
            out.append(Bind(tree, at))
    out += [Bind(words[0], words[1], writable=False) for words in head.get("tool", [])
            if len(words) == 2 and os.path.exists(words[0])]
    out += [Bind(words[0]) for words in head.get("trace", []) if Path(words[0]).is_dir()]
    return out
