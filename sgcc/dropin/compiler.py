"""How sgcc was invoked and which real compiler stands behind it.

Three ways to use sgcc, as with ccache:

* plain: ``sgcc <gcc args>`` (``CC=sgcc make``): the real compiler is ``gcc`` from PATH;
* prefix (launcher): ``sgcc gcc <gcc args>`` or ``sgcc /usr/bin/cc <args>`` (``CC="sgcc gcc"``,
  CMake's ``CMAKE_C_COMPILER_LAUNCHER=sgcc``): the first argument names the compiler, as with
  ccache: a compiler's name, an executable path, or a bare word that is no file here but an
  executable in PATH;
* masquerade: a symlink named ``gcc``/``cc``/``gcc-12``... pointing at sgcc, early in PATH: the
  real compiler is the next program of that name in PATH that is not sgcc.

``SGCC_COMPILER`` overrides the choice in every mode. sgcc works only with gcc: a real compiler
that is not gcc (clang, tcc, ... see :func:`is_gcc`) runs the command untouched. sgcc never runs itself as "the
compiler": candidates that resolve to sgcc are skipped, and a compiler that runs sgcc again
is caught through an environment marker and reported.

Standard library only: this runs on every compile.
"""

from __future__ import annotations

import os
import sys

from sgcc.errors import RecursionDetected, SgccError

#: Set in the environment of every real compiler sgcc starts; seeing it on entry means the
#: "real" compiler ran sgcc again.
RECURSION_MARKER = "SGCC_INSIDE_COMPILER"


def _stem(base: str) -> str:
    """A program's name without a version suffix (``gcc-12`` -> ``gcc``)."""
    head, dash, ver = base.rpartition("-")
    if dash and ver and all(part.isdigit() for part in ver.split(".")):
        return head
    return base


def _is_compiler_name(base: str) -> bool:
    """``gcc``, ``cc``, ``x86_64-linux-gnu-gcc-12``, ``clang-16``...: a C compiler's name.

    (String tests, not a regular expression: importing ``re`` would cost every compile.)
    """
    stem = _stem(base)  # an optional version suffix: -12, -12.2
    for name in ("gcc", "cc", "c89", "c99", "clang"):
        if stem == name:
            return True
        if stem.endswith("-" + name):
            prefix = stem[: -len(name) - 1]
            return bool(prefix) and all(c.isalnum() or c in "_.+-" for c in prefix)
    return False
_SELF_NAMES = ("sgcc",)


class Invoked:
    """The outcome of looking at argv[0] and argv[1] (a plain class: see sgcc.gcc.args on why)."""

    __slots__ = ("mode", "compiler", "args")

    def __init__(self, mode: str, compiler: str, args: list[str]):
        self.mode = mode  # "plain", "prefix" or "masquerade"
        self.compiler = compiler  # absolute path of the real compiler
        self.args = args  # the gcc arguments (without any compiler name)


def looks_like_compiler(word: str) -> bool:
    """Whether an argument in first position names a compiler rather than a gcc argument."""
    if not word or word.startswith("-") or word.startswith("@"):
        return False
    base = os.path.basename(word)
    if _is_compiler_name(base):
        return True
    if "." in base:  # x.c, libm.so.6, prog.o: inputs, never taken for a compiler
        return False
    if "/" in word:  # an explicit path to an executable (e.g. /opt/x/bin/mycc)
        return os.path.isfile(word) and os.access(word, os.X_OK)
    # A bare word that is no file here (gcc would fail on it as a linker input) but an
    # executable in PATH (``sgcc tcc -c x.c``): a compiler, as ccache takes it.
    return not os.path.lexists(word) and _which(word) is not None


def _which(name: str) -> str | None:
    """The first executable called ``name`` in PATH, whatever it is (sgcc included)."""
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(directory or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


#: Programs that stand in front of a compiler and run it under the name they were called by.
_WRAPPERS = ("ccache", "distcc", "icecc", "sccache")


def _gcc_name(base: str) -> bool:
    stem = _stem(base)
    return stem in ("gcc", "xgcc", "cc", "c89", "c99") or stem.endswith(("-gcc", "-c89", "-c99"))


def is_gcc(compiler: str) -> bool:
    """Whether the real compiler is gcc, judged by names (no process: this runs on every compile).

    The file the links end at decides (``cc`` -> ``x86_64-linux-gnu-gcc-12`` is gcc, ``cc`` ->
    ``clang-16`` is not); a ccache-style wrapper there runs the compiler it was called as, so
    then the name it was called by decides. sgcc's steps (-S, its own assembly, the cache keyed
    by gcc's output) are gcc's; any other compiler gets the command untouched.
    """
    real = os.path.basename(os.path.realpath(compiler))
    if _gcc_name(real):
        return True
    return _stem(real) in _WRAPPERS and _gcc_name(os.path.basename(compiler))


#: The compiler caches whose keys can hold sgcc's state (sgcc.dropin.wrapper).
CACHING_WRAPPERS = ("ccache", "sccache")


def caching_parent() -> tuple[str, str] | None:
    """(name, executable) of the compiler cache that started this process (ccache or sccache,
    judged by the parent's executable, links followed: ccache's masquerading links too), or
    None. One ``readlink``: asked only by a compile that would substitute."""
    try:
        exe = os.readlink(f"/proc/{os.getppid()}/exe")
    except OSError:
        return None
    base = os.path.basename(exe).removesuffix(" (deleted)")
    for name in CACHING_WRAPPERS:
        if base == name or base.startswith((name + "-", name + ".")):
            return name, exe
    return None


def _self_paths(argv0: str) -> set[str]:
    paths = {os.path.realpath(argv0)}
    if sys.argv and sys.argv[0]:
        paths.add(os.path.realpath(sys.argv[0]))
    return paths


def is_sgcc(path: str, self_paths: set[str]) -> bool:
    """Whether ``path`` is sgcc itself: the same file, a link to it, or a copy of its launcher."""
    real = os.path.realpath(path)
    if real in self_paths or os.path.basename(real) in _SELF_NAMES:
        return True
    try:
        if os.path.getsize(real) > 4096:
            return False
        with open(real, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    # pip's console-script launcher for sgcc imports sgcc.cli.
    return b"sgcc.cli" in head or b"from sgcc" in head


def find_in_path(name: str, self_paths: set[str]) -> str | None:
    """The first executable called ``name`` in PATH that is not sgcc."""
    if "/" in name:
        if os.path.isfile(name) and os.access(name, os.X_OK) and not is_sgcc(name, self_paths):
            return os.path.abspath(name)
        return None
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(directory or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            if is_sgcc(candidate, self_paths):
                continue
            return os.path.abspath(candidate)
    return None


def _names_sgcc(word: str, self_paths: set[str]) -> bool:
    """Whether a launcher's compiler word (a path, or a name looked up in PATH) is sgcc."""
    path = word if "/" in word else _which(word)
    return path is not None and is_sgcc(path, self_paths)


def resolve(argv: list[str]) -> Invoked:
    """Work out the invocation mode and the real compiler from sgcc's own argv.

    Raises :class:`RecursionDetected` when a compiler sgcc started has started sgcc again, and
    :class:`SgccError` when no real compiler can be found.
    """
    if os.environ.get(RECURSION_MARKER):
        raise RecursionDetected(
            f"the compiler sgcc runs ({os.environ[RECURSION_MARKER]}) runs sgcc again",
            hint="set SGCC_COMPILER to the real gcc (e.g. SGCC_COMPILER=/usr/bin/gcc)",
        )
    argv0 = argv[0] if argv else "sgcc"
    selfs = _self_paths(argv0)
    base = os.path.basename(argv0)
    rest = list(argv[1:])
    override = os.environ.get("SGCC_COMPILER")

    if base not in _SELF_NAMES and not base.startswith("sgcc") and _is_compiler_name(base):
        mode, wanted = "masquerade", base
    else:
        mode, wanted = "plain", "gcc"
        while rest and looks_like_compiler(rest[0]):
            mode, wanted = "prefix", rest[0]
            rest = rest[1:]
            # A launcher in front of a compiler that is sgcc itself (CMake's launcher with
            # CC=sgcc, as `sgcc optimize --project` builds): sgcc once is enough. A link to
            # sgcc named like a compiler stands for that compiler, as when masquerading.
            if not _names_sgcc(wanted, selfs):
                break
            if not os.path.basename(wanted).startswith("sgcc"):
                wanted = os.path.basename(wanted)
                break
            mode, wanted = "plain", "gcc"

    if override:
        wanted = override
    found = find_in_path(wanted, selfs)
    if found is None:
        named = "/" in wanted and os.path.isfile(wanted) and os.access(wanted, os.X_OK)
        if named or find_in_path(wanted, set()) is not None:
            raise RecursionDetected(
                f"the only '{wanted}' sgcc can find is sgcc itself",
                hint="put the real compiler in PATH after sgcc, or set SGCC_COMPILER=/usr/bin/gcc",
            )
        raise SgccError(
            f"cannot find the real compiler '{wanted}'",
            hint="install gcc, or set SGCC_COMPILER to its path",
        )
    return Invoked(mode=mode, compiler=found, args=rest)


def child_env(compiler: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a real compiler run by sgcc: the caller's plus the recursion marker."""
    env = dict(os.environ if base is None else base)
    env[RECURSION_MARKER] = compiler
    return env
