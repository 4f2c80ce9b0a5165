"""Tests run what was built: a project's shared libraries are the ones its tests and workload load.

A program the build links against one of the project's shared libraries finds it through its
RPATH, ``LD_LIBRARY_PATH`` or the system's directories. Where the build's directory is not
where the program looks (a copy at another path, a test command that points the loader
elsewhere, a build without an RPATH), the dynamic loader takes the first library of that name
it finds, and a system's copy of the library (an older version, say) stands in silently:
gcc's build and every candidate in the library would then be tested and timed against code
sgcc did not build.

So the first run of the test command and of the workload on gcc's build, and the test run of
the rebuilt tree, run with the loader's trace on (``LD_DEBUG=libs,files``, written to files
of a directory of sgcc's, not to the programs' output), and :func:`check` reads what each
process loaded: a library with the name (``DT_SONAME``) of one the build made
(:func:`built`), needed by one of the project's programs or libraries, must be loaded from
the project's tree. Otherwise, or when no process of the run left a trace (a loader that
does not trace, so nothing can be ensured), the run stops with an error. Every later test
and timing runs the same commands on a copy seen at the same path, so the loader finds the
same files.

Processes started with a cleared environment (``env -i``) leave no trace and are not seen.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sgcc.errors import SgccError
from sgcc.project.place import in_tree
from sgcc.project.workload import TRACE_NAME

_NEEDED = re.compile(r"^\s*\d+:\s+file=(\S+) \[\d+\];\s+needed by (.+?) \[\d+\]\s*$")
_FIND = re.compile(r"^\s*\d+:\s+find library=(\S+) \[\d+\]; searching")
_TRYING = re.compile(r"^\s*\d+:\s+trying file=(.+?)\s*$")
_BLANK = re.compile(r"^\s*\d+:\s*$")


def built(tree: Path, since: float) -> dict[str, str]:
    """The shared libraries the build made in ``tree`` (modified at or after ``since``, a
    ``time.time()`` value): soname -> path in the tree."""
    from sgcc.asm.obj import shared_object_name

    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            if ".so" not in name:
                continue
            path = os.path.join(dirpath, name)
            try:
                if os.path.islink(path) or os.stat(path).st_mtime < since - 1:
                    continue
            except OSError:
                continue
            soname = shared_object_name(path)
            if soname:
                out.setdefault(soname, os.path.relpath(path, tree))
    return out


def trace_dir(path: Path) -> Path:
    """An empty directory for one run's trace, writable by the box's user."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o733)
    return path


def loaded(directory: Path) -> tuple[list[tuple[str, str, str]], int]:
    """What the processes of a traced run loaded by name: (the name, the path it was loaded
    from, the program or library that needed it), and how many processes left a trace."""
    out: list[tuple[str, str, str]] = []
    files = sorted(directory.glob(f"{TRACE_NAME}.*"))
    for f in files:
        try:
            lines = f.read_text(errors="replace").splitlines()
        except OSError:
            continue
        needer: dict[str, str] = {}
        wanted, last = None, None
        for line in lines:
            m = _NEEDED.match(line)
            if m:
                needer[m.group(1)] = m.group(2)
                continue
            m = _FIND.match(line)
            if m or _BLANK.match(line):
                if wanted and last:
                    out.append((wanted, os.path.normpath(last), needer.get(wanted, "")))
                wanted, last = (m.group(1) if m else None), None
                continue
            m = _TRYING.match(line)
            if m and wanted:
                last = m.group(1)
    return out, len(files)


#: Where a command named without a path is found in the box (its worlds' PATHs hold only these).
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _projects(needer: str, at: Path) -> bool:
    """Whether the program or library ``needer`` (as the loader names it: a library by its
    path, the main program by its ``argv[0]``) is the project's: in the tree, run by a
    relative path, or a bare name the system's directories do not hold."""
    import shutil

    if needer.startswith("/"):
        return in_tree(needer, at)
    if "/" in needer or not needer:
        return True
    return shutil.which(needer, path=SYSTEM_PATH) is None


def check(directory: Path, made: dict[str, str], at: Path, what: str) -> dict[str, list[str]]:
    """Raise :class:`SgccError` unless every library named as one the build made (``made``:
    :func:`built`) that the traced run ``what`` loaded for the project's programs and
    libraries came from the tree, seen at ``at``; the project's libraries it loaded: soname
    -> paths (relative to the tree). A program named by a relative path (``./build/prog``,
    run in the tree) counts as the project's; a system program (``/usr/bin/python3``, or
    ``ctest`` found on the system's PATH) that loads a system library of the same name is
    its own business."""
    if not made:
        return {}
    libs, processes = loaded(directory)
    if not processes:
        raise SgccError(f"{what}: cannot tell which shared libraries it loads (the dynamic loader left no "
                        f"trace), so a system copy of the project's {', '.join(sorted(made))} could stand in for "
                        "the one the build made",
                        hint="sgcc checks with LD_DEBUG (glibc's loader); a command that clears the "
                             "environment hides its programs from the check")
    used: dict[str, set[str]] = {}
    for name, path, needer in libs:
        if name not in made or not _projects(needer, at):
            continue
        if not in_tree(path, at):
            who = f"{os.path.relpath(needer, at) if needer.startswith('/') else needer or 'a program'}"
            raise SgccError(f"{what}: {who} loads {name} from {path}, not the one the build made "
                            f"({made[name]}): the tests and timings would run a system copy instead of the "
                            "code sgcc builds",
                            hint="link the project's programs with an RPATH to its build directory (CMake's "
                                 "default; not CMAKE_SKIP_BUILD_RPATH), or set LD_LIBRARY_PATH to it in the "
                                 "test and bench commands")
        used.setdefault(name, set()).add(os.path.relpath(path, at))
    return {k: sorted(v) for k, v in sorted(used.items())}
