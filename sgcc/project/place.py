"""The tree where the build put it: every copy of the project is built, tested and timed at
the project's own path.

Build systems record absolute paths: CMake's generated makefiles ``cd`` into the build
directory by its absolute path and name every source that way, ``CTestTestfile.cmake`` names
test programs, scripts and interpreters by theirs, RPATHs name the build directory, gcc's
``-fprofile-use`` matches each function's profile by the source's name as spelled, and debug
information names the compile's directory. A copy at another path is therefore another
project: its build writes into the original tree, its tests run the original's programs (or
fail), its programs load a system copy of their libraries, and its profile does not match.

So each copy is shown at the project's path (:attr:`ProjectRun.root
<sgcc.project.state.ProjectRun>`), and only there:

* a build of a copy runs in a private mount namespace where the copy is mounted over the
  project's directory (:func:`sgcc.proc.run` with ``place``); the rest of the file system is
  the host's, and the user's own tree is hidden under the copy;
* a test or timed run of a copy (the isolated runner, :mod:`sgcc.verify.box.isolate`) sees
  the copy at the project's path (:class:`~sgcc.verify.box.isolate.Bind`) and never the
  user's tree; tools and interpreters the tests name by an absolute path outside the
  system's directories (:func:`named_tools`) are shown read-only, with the installation they
  belong to.

Where the kernel allows neither (no mount namespace), copies stay at their own paths, and a
tree whose build recorded its absolute path is refused (:func:`recorded_in`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sgcc.errors import SgccError

#: What the isolated runner shows of the host anyway (:data:`sgcc.verify.box.isolate.SYSTEM_DIRS`).
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/alternatives", "/dev", "/proc")
#: Files that say which programs a test suite runs: CTest's, by absolute path.
TEST_FILES = ("CTestTestfile.cmake",)
#: Largest file :func:`recorded_in` reads.
_SCAN_LIMIT = 4 << 20


def check_root(root: Path) -> None:
    """A project's directory must be one a copy can be mounted over without hiding the system."""
    r = str(root)
    if r == "/" or any(r == s or r.startswith(s + "/") for s in SYSTEM[:7]):
        raise SgccError(f"the project's directory {root} is a system directory",
                        hint="copy the project under your home or /tmp first")


def in_tree(path: str | Path, root: str | Path) -> bool:
    return os.path.normpath(path) == str(root) or os.path.normpath(path).startswith(str(root) + os.sep)


def recorded_in(tree: Path, root: Path, limit: int = 5) -> list[str]:
    """Files of ``tree`` (a copy of the built project) that spell the project's absolute path
    ``root``: a build that recorded it cannot be built or tested in a copy at another path."""
    needle = os.fsencode(str(root) + "/")
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = os.path.join(dirpath, name)
            try:
                if os.path.islink(path) or os.path.getsize(path) > _SCAN_LIMIT:
                    continue
                with open(path, "rb") as f:
                    data = f.read()
            except OSError:
                continue
            if needle in data and b"\0" not in data[:4096]:
                found.append(os.path.relpath(path, tree))
                if len(found) >= limit:
                    return found
    return found


_QUOTED = re.compile(r'"(/[^"\n]+)"')
#: A pyenv shim (a bash script that asks pyenv which interpreter to run): what it runs is shown
#: at its path instead, since pyenv itself looks for its root and version files in $HOME.
_PYENV_SHIM = re.compile(rb'^exec "(/[^"]+/libexec/pyenv)" exec "\$program"', re.M)


def named_tools(tree: Path, root: Path) -> list[tuple[Path, Path]]:
    """Programs and scripts the test suite names by an absolute path that the isolated runner
    would not show, as (what to show, where): outside the project (the copy is shown at
    ``root``) and outside the system's directories, existing on this machine
    (``CTestTestfile.cmake``: an interpreter CMake found, a tool the tests run). Each comes
    with what it needs to run: its target when it is a link, its installation (the directory
    above its ``bin``: a virtual environment's ``pyvenv.cfg``, an interpreter's library), and
    for a pyenv shim the interpreter it stands for in the project's directory, shown at the
    shim's path."""
    out: list[tuple[Path, Path]] = []
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            if name not in TEST_FILES:
                continue
            try:
                text = Path(dirpath, name).read_text(errors="replace")
            except OSError:
                continue
            for word in _QUOTED.findall(text):
                for source, target in _with_installation(word, root):
                    if target in seen or in_tree(target, root) or in_tree(root, target) or _shown(target) \
                            or not os.path.exists(source):
                        continue
                    seen.add(target)
                    out.append((Path(source), Path(target)))
    # A directory shown already shows what is under it (but for a shim shown as its interpreter).
    dirs = [t for s, t in out if s == t and t.is_dir()]
    return [(s, t) for s, t in out if s != t or not any(t != d and in_tree(t, d) for d in dirs)]


def _pyenv_target(path: str, root: Path) -> str | None:
    """The interpreter a pyenv shim runs in ``root`` (``pyenv which``), or None."""
    from sgcc import proc

    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return None
    m = _PYENV_SHIM.search(head)
    if not head.startswith(b"#!") or m is None:
        return None
    r = proc.run([m.group(1).decode(), "which", os.path.basename(path)], cwd=root, timeout=30)
    found = r.stdout.decode(errors="replace").strip()
    return os.path.realpath(found) if r.ok and found.startswith("/") and os.path.isfile(found) else None


def _with_installation(word: str, root: Path) -> list[tuple[str, str]]:
    """``word`` (or, for a pyenv shim, its interpreter at the shim's path), the file it links
    to, and the installation prefix of an executable in a ``bin`` directory: only a virtual
    environment (``pyvenv.cfg``) or a prefix with ``lib`` and ``include`` (an interpreter's
    own installation), never a home directory."""
    word = os.path.normpath(word)
    shimmed = _pyenv_target(word, root) if os.path.isfile(word) else None
    pairs = [(shimmed, word)] if shimmed else [(word, word)]
    real = shimmed or os.path.realpath(word)
    if real != word:
        pairs.append((real, real))
    for p in {word, real}:
        parent = os.path.dirname(p)
        prefix = os.path.dirname(parent)
        if os.path.basename(parent) != "bin" or not (os.path.isfile(p) and os.access(p, os.X_OK)):
            continue
        if prefix in (os.path.expanduser("~"), "/", "/home", "/root"):
            continue
        if os.path.isfile(os.path.join(prefix, "pyvenv.cfg")) or \
                all(os.path.isdir(os.path.join(prefix, d)) for d in ("lib", "include")):
            pairs.append((prefix, prefix))
    return pairs


def _shown(path: str) -> bool:
    return any(path == s or path.startswith(s + "/") for s in SYSTEM)
