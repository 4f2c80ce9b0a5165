"""The drop-in compile: what ``sgcc <gcc args>`` does on every compile of a build.

Anything sgcc does not fully handle is *replaced* by the real gcc with the original argv
(``os.execv``), so exit status, output, side files and timing are gcc's own. An eligible
compile runs as gcc itself does, in two steps through the same gcc driver:

1. ``gcc <user flags> -S -o <private temporary file> src.c``, with the dependency file and
   target gcc would derive from the user's output name given explicitly (``-MF``/``-MQ``,
   :func:`dependency_flags`), so -MD/-MMD write exactly what the one-step compile writes.
   Nothing is written through the user's output path until the object is: a symlink, a hard
   link or a device named by ``-o`` sees only what gcc's own assembler writes;
2. the assembly, with any proven-faster function units substituted, goes to
   ``gcc <user flags> -c -x assembler tmp.s -o <output>`` (or into the link for executables).

Before any of that, sgcc decides whether the cache can hold anything to substitute for this
compile (:func:`plan`): with the cache off, or no winner stored for this compile's context
(compiler, code-shaping flags, ISA policy, CPU: one directory listing, see
:mod:`sgcc.cache.store`), gcc runs the command as it is, in one exec, like a pass-through.
What to substitute is the cache's answer (:class:`sgcc.cache.lookup.Lookup`: the key, the
project overlay, the memo, the signed entry, the join); the driver asks, and assembles it.

With nothing to substitute the result is byte-identical to gcc's. Diagnostics are buffered
and printed once at the end; if any step fails, sgcc discards what it did and hands the
original command to gcc, which then reports exactly what it would have.

Kept lean: no heavy imports here; this is the cost every ``make`` pays.
"""

from __future__ import annotations

import os
import sys

from sgcc import config
from sgcc.dropin import compiler as compilermod
from sgcc.errors import SgccError, log
from sgcc.gcc import args as gccargs

TYPE_CHECKING = False  # typing's own import costs a compile ~2 ms; mypy knows this name
if TYPE_CHECKING:
    from typing import NoReturn

    from sgcc.cache.lookup import Lookup
    from sgcc.cache.remote import Layer


def warn(message: str) -> None:
    """One line on stderr, prefixed so it is never mistaken for a gcc diagnostic."""
    sys.stderr.write(f"sgcc: warning: {message}\n")
    sys.stderr.flush()


def exec_compiler(compiler: str, args: list[str]) -> NoReturn:
    """Replace this process with the real compiler running ``args`` (never returns)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(compiler, [compiler, *args], compilermod.child_env(compiler))


class _Fallback(Exception):
    """A step of the eligible path failed: run the original command with gcc instead."""


class EligibleCompile:
    """Carries out one eligible invocation; see the module docstring for the steps."""

    def __init__(self, compiler: str, inv: gccargs.Invocation, tmpdir: str, settings: dict | None = None,
                 lookup: Lookup | None = None):
        self.compiler = compiler
        self.inv = inv
        self.tmpdir = tmpdir
        self.settings: dict = settings if settings is not None else {"cache": False}
        self.lookup = lookup  # the cache as this compile sees it (see plan), made once
        self.env = compilermod.child_env(compiler)
        self.stdout: list[bytes] = []
        self.stderr: list[bytes] = []

    def _gcc(self, args: list[str]) -> None:
        status, out, err = _spawn([self.compiler, *args], self.env, self.tmpdir)
        self.stdout.append(out)
        self.stderr.append(err)
        if status != 0:
            raise _Fallback(f"{' '.join(args[:3])}...: exit status {status}")

    def _assemble(self, flags: list[str], asm_path: str, obj: str) -> None:
        """``gcc <flags> -c -x assembler asm_path -o obj``, by running the ``as`` command that
        gcc would run (see :mod:`sgcc.dropin.assemble`) when it is known; else by gcc."""
        argv = None
        if self.settings.get("cache") and self.lookup is not None:
            from sgcc.dropin import assemble

            try:
                argv = assemble.template(self.compiler, self.lookup.ctx["compiler"], flags, self.env,
                                         self.settings["cache_dir"],
                                         lambda a: _spawn(a, self.env, self.tmpdir))
            except (OSError, ValueError):
                argv = None
        if argv is None:
            self._gcc([*flags, "-c", "-x", "assembler", asm_path, "-o", obj])
            return
        from sgcc.dropin import assemble

        status, out, err = _spawn(assemble.command(argv, asm_path, obj), self.env, self.tmpdir)
        self.stdout.append(out)
        self.stderr.append(err)
        if status != 0:
            raise _Fallback(f"as {asm_path}: exit status {status}")

    def run(self) -> int:
        inv = self.inv
        s_flags = inv.flags_without_inputs()
        asm_flags = inv.flags_without_inputs(drop_dependency_flags=True)
        objects: dict[int, str] = {}
        for n, src in enumerate(inv.sources):
            lang = ["-x", "c"] if src.explicit_lang else []
            s_out = os.path.join(self.tmpdir, f"{n}.s")
            deps = dependency_flags(inv, src) if inv.mode != "link" else []
            self._gcc([*s_flags, *deps, *_prefix_map(), "-S", "-o", s_out, *lang, src.path,
                       *(["-x", "none"] if lang else [])])
            text = _read(s_out)
            if inv.mode == "assemble-only":
                new = self.rewrite(text, src)
                # As gcc would: open the named file for writing (through a link, into a device).
                _write(inv.output_for(src), text if new is None else new)
                continue
            new = self.rewrite(text, src)
            asm_path = os.path.join(self.tmpdir, f"{n}.s")
            _write(asm_path, text if new is None else new)
            obj = inv.output_for(src) if inv.mode == "compile" else os.path.join(self.tmpdir, f"{n}.o")
            self._assemble(asm_flags, asm_path, obj)
            objects[src.index] = obj
        if inv.mode == "link":
            self._gcc(_link_args(inv, objects))
        _emit(self.stdout, sys.stdout)
        _emit(self.stderr, sys.stderr)
        return 0

    def rewrite(self, asm: str, src: gccargs.Source) -> str | None:
        """The assembly to assemble instead of gcc's ``asm``, or None when nothing changes:
        the cache's answer (:meth:`sgcc.cache.lookup.Lookup.get`). While ``sgcc optimize
        --project`` records a build (``SGCC_RECORD``), each compile not served by its overlay
        is written down with its key."""
        if self.lookup is None:
            return None
        found = self.lookup.get(asm, src.path)
        recording = os.environ.get("SGCC_RECORD")
        if recording and found.how != "overlay":
            _record(recording, found.key, self.lookup.ctx, asm, src, self.inv)
        return found.text


def _given(args: list[str], *names: str) -> bool:
    """Whether one of the options ``names`` is on the command line, separate or joined."""
    return any(a.startswith(names) for a in args)


def _prefix_map() -> list[str]:
    """``-ffile-prefix-map=COPY=ORIGINAL`` while ``sgcc optimize --project`` builds a copy of
    the tree (``SGCC_PREFIX_MAP``): with -g, gcc's assembly spells the build's directory
    (``.file 0 "/dir"``, DW_AT_comp_dir), so without it no compile in the copy would have the
    key it was recorded under in the tree, and the overlay would silently not apply. Only the
    ``-S`` step gets it; the cache key's flags are the user's."""
    mapping = os.environ.get("SGCC_PREFIX_MAP")
    return [f"-ffile-prefix-map={mapping}"] if mapping and "=" in mapping else []


def _record(path: str, key: str, ctx: dict, asm: str, src: gccargs.Source, inv: gccargs.Invocation) -> None:
    """Append what ``sgcc optimize --project`` needs to know about this compile."""
    import json

    directory = os.path.dirname(os.path.abspath(path))
    asm_path = os.path.join(directory, f"{key}.s")
    _write(asm_path, asm)
    line = json.dumps({"key": key, "context": ctx, "cwd": os.getcwd(), "source": os.path.realpath(src.path),
                       "output": os.path.abspath(inv.output_for(src)) if inv.mode != "link" else None,
                       "mode": inv.mode, "args": inv.args, "asm": asm_path})
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


def _link_args(inv: gccargs.Invocation, objects: dict[int, str]) -> list[str]:
    """The user's argv with each C source replaced by its object, and -x removed.

    Sources are replaced in place so link order (which matters for libraries) is kept.
    """
    out: list[str] = []
    args = inv.args
    i = 0
    while i < len(args):
        a = args[i]
        if i in objects:
            out.append(objects[i])
        elif a == "-x":
            i += 1  # and its argument
        elif not a.startswith("-x"):
            out.append(a)
        i += 1
    return out


def _read(path: str) -> str:
    with open(path, "rb") as fh:
        return fh.read().decode("utf-8", "surrogateescape")


def dependency_flags(inv: gccargs.Invocation, src: gccargs.Source) -> list[str]:
    """The ``-MF``/``-MQ`` gcc's driver derives from the output name for -MD/-MMD, made
    explicit so that the -S step can write its assembly to a temporary file.

    gcc 12's spec: the dependency file is the ``-o`` argument with its suffix replaced by
    ``.d`` (without ``-o``: the source's base name, ``.d``, in the working directory), unless
    ``-MF`` names one; the target is ``-MQ <-o argument>`` unless ``-MT``/``-MQ`` name one
    (without ``-o``, the preprocessor's default, the source's base name with ``.o``, which is
    the object name gcc -c writes: given as ``-MQ`` too, since the -S step's ``-o`` would
    otherwise become the target)."""
    args = inv.args
    if "-MD" not in args and "-MMD" not in args:
        return []
    explicit_o = _given(args, "-o")
    out: list[str] = []
    if not _given(args, "-MF"):
        if explicit_o:
            target = inv.output_for(src)
            stem, dot, suffix = os.path.basename(target).rpartition(".")
            name = stem if dot and stem else os.path.basename(target)
            out += ["-MF", os.path.join(os.path.dirname(target), name + ".d")]
        else:
            base = os.path.basename(src.path)
            stem, dot, _ = base.rpartition(".")
            out += ["-MF", (stem if dot and stem else base) + ".d"]
    if not _given(args, "-MT", "-MQ"):
        out += ["-MQ", inv.output_for(src)]
    return out


def _write(path: str, text: str) -> None:
    with open(path, "wb") as fh:
        fh.write(text.encode("utf-8", "surrogateescape"))


def _emit(chunks: list[bytes], stream) -> None:
    data = b"".join(chunks)
    if data:
        stream.flush()
        stream.buffer.write(data)
        stream.flush()


def main(argv: list[str]) -> int:
    """Run one compiler invocation as gcc would, intercepting it when it is eligible."""
    try:
        invoked = compilermod.resolve(argv)
    except SgccError as exc:  # no real compiler, or it would run sgcc again
        sys.stderr.write(exc.render() + "\n")
        return 1
    if config.env_flag("SGCC_DISABLE", unknown=True):  # an unknown value: the safe side, plain gcc
        log(f"disabled: {invoked.compiler}")
        exec_compiler(invoked.compiler, invoked.args)
    try:
        settings = config.compile_settings()
    except SgccError as exc:  # a broken configuration must not break the build
        warn(f"ignoring sgcc configuration ({exc.message}); compiling with plain gcc")
        exec_compiler(invoked.compiler, invoked.args)
    except Exception as exc:  # noqa: BLE001 - a bad setting must never break the build
        warn(f"ignoring sgcc configuration ({exc}); compiling with plain gcc")
        exec_compiler(invoked.compiler, invoked.args)
    if not compilermod.is_gcc(invoked.compiler):  # clang, tcc...: that compiler's own results
        log(f"pass-through (not-gcc): {invoked.mode} {invoked.compiler}")
        _stats(settings, {"passthrough": 1}, {"not-gcc": 1})
        exec_compiler(invoked.compiler, invoked.args)
    inv = gccargs.parse(invoked.args)
    if not inv.eligible and inv.mode == "link":  # a link may run LTO (-flto, or objects made with it)
        _lto_link(invoked.compiler, inv, settings)
    if not inv.eligible and inv.mode == "compile" and os.environ.get("SGCC_RECORD") and \
            os.environ.get("SGCC_LTO_COMPILE_FLAGS") and "option-flto" in inv.reason:  # ltrans.COMPILE_FLAGS
        _lto_compile(invoked.compiler, invoked.args)
    if not inv.eligible:
        log(f"pass-through ({inv.reason}): {invoked.mode} {invoked.compiler}")
        _stats(settings, {"passthrough": 1}, {inv.reason or "unknown": 1})
        exec_compiler(invoked.compiler, invoked.args)
    remote = None
    try:
        remote = _remote_layer(settings)
        lookup = plan(invoked.compiler, inv, settings, remote)
    except Exception as exc:  # noqa: BLE001 - sgcc's own failure must never break the build
        warn(f"internal error ({type(exc).__name__}: {exc}); compiling with plain gcc")
        _stats(settings, {"eligible": 1, "internal_errors": 1, **_remote_counts(remote)})
        exec_compiler(invoked.compiler, invoked.args)
    if lookup is None:
        log(f"eligible, nothing to substitute: {invoked.mode} {invoked.compiler} {inv.mode} "
            f"{' '.join(s.path for s in inv.sources)}")
        _stats(settings, {"eligible": 1, "direct": 1, **_remote_counts(remote)})
        exec_compiler(invoked.compiler, invoked.args)
    log(f"eligible: {invoked.mode} {invoked.compiler} {inv.mode} {' '.join(s.path for s in inv.sources)}")
    keep = config.env_flag("SGCC_KEEP_TEMPS", unknown=True)
    tmpdir = _private_tmpdir()
    if tmpdir is None:  # nowhere to work (TMPDIR and /tmp unusable): gcc copes, so let it
        log("no private temporary directory; compiling with plain gcc")
        _stats(settings, {"eligible": 1, "fallbacks": 1, **_remote_counts(remote)})
        exec_compiler(invoked.compiler, invoked.args)
    job = EligibleCompile(invoked.compiler, inv, tmpdir, settings, lookup)
    try:
        status = job.run()
    except KeyboardInterrupt:  # make's ^C: stop as gcc would, leaving nothing of sgcc's behind
        _cleanup(tmpdir, keep)
        return 130
    except _Fallback as exc:
        log(f"fallback to gcc: {exc}")
        _stats(settings, {"eligible": 1, "fallbacks": 1, **_remote_counts(remote)})
        # gcc itself failed (a compile error, usually): let it run the original command and
        # report exactly what it reports, once.
        _cleanup(tmpdir, keep)
        exec_compiler(invoked.compiler, invoked.args)
    except Exception as exc:  # noqa: BLE001 - sgcc's own failure must never break the build
        warn(f"internal error ({type(exc).__name__}: {exc}); compiling with plain gcc")
        _stats(settings, {"eligible": 1, "internal_errors": 1, **_remote_counts(remote)})
        _cleanup(tmpdir, keep)
        exec_compiler(invoked.compiler, invoked.args)
    _cleanup(tmpdir, keep)
    _stats(settings, {"eligible": 1, **lookup.counts, **_remote_counts(remote)})
    return status


def _lto_compile(compiler: str, args: list[str]) -> NoReturn:
    """A ``-flto`` compile of a recorded project build that asks for flags added
    (:data:`sgcc.dropin.ltrans.COMPILE_FLAGS`: a variant of an LTO build's partitions, whose
    functions keep the optimisation flags they were compiled with): gcc, with them last."""
    import shlex

    from sgcc.dropin import ltrans

    extra = shlex.split(os.environ.get(ltrans.COMPILE_FLAGS, ""))
    log(f"lto compile, with {' '.join(extra)} added for a variant: {compiler}")
    exec_compiler(compiler, [*args, *extra])


def _lto_link(compiler: str, inv: gccargs.Invocation, settings: dict) -> None:
    """An LTO link with winners in its context runs with the assembler front in place
    (:mod:`sgcc.dropin.ltrans`) and this process exits with gcc's status; otherwise this
    returns and the caller hands the command to gcc as it is."""
    from sgcc.dropin import ltrans

    if not ltrans.lto_link(inv):
        return
    remote = None
    try:
        remote = _remote_layer(settings)
        status = ltrans.route(compiler, inv, settings, remote)
    except Exception as exc:  # noqa: BLE001 - sgcc's own failure must never break the build
        warn(f"internal error ({type(exc).__name__}: {exc}); linking with plain gcc")
        _stats(settings, {"lto_links": 1, "internal_errors": 1, **_remote_counts(remote)})
        return
    if status is None:
        return
    _stats(settings, {"lto_links": 1, **_remote_counts(remote)})
    sys.exit(status)


def _remote_layer(settings: dict) -> Layer | None:
    """The remote cache layer when ``remote_storage`` is set (and the cache is on), else None:
    only then is :mod:`sgcc.cache.compose` (and the remote layer) imported. The drop-in holds
    the settings, so it builds the storage and hands it to the store (ccache's layering)."""
    if not settings.get("remote_storage") or not settings.get("cache"):
        return None
    from sgcc.cache import compose

    return compose.remote_layer(settings["cache_dir"], settings["remote_storage"], settings.get("remote_timeout", 150))


def _remote_counts(remote: Layer | None) -> dict:
    return remote.counts if remote is not None else {}


def plan(compiler: str, inv: gccargs.Invocation, settings: dict, remote: Layer | None = None) -> Lookup | None:
    """Whether this eligible compile has anything to substitute, decided before running gcc.

    Returns None when it cannot: the cache is off (and no ``sgcc optimize --project`` is
    recording or overlaying), or the cache holds no winner in this compile's context.
    Otherwise the cache's :class:`~sgcc.cache.lookup.Lookup` for the compile, with the keys
    that have winners in its context listed now (see :mod:`sgcc.cache.store` for why a key
    missing from that list has nothing to substitute). With a ``remote`` layer
    (``remote_storage``), the keys its server lists for the context join them: one round
    trip, within ``remote_timeout``, skipped while the server is marked down; a remote key's
    entry is fetched and validated only if the local cache misses it.
    """
    overlay = os.environ.get("SGCC_OVERLAY") or ""
    overlay_or_record = overlay or os.environ.get("SGCC_RECORD")
    if not settings.get("cache") and not overlay_or_record:
        return None
    from sgcc.cache.lookup import Lookup

    lookup = Lookup.plan(compiler, inv.flags_without_inputs(drop_dependency_flags=True), settings.get("isa", "flags"),
                         root=settings["cache_dir"] if settings.get("cache") else None,
                         signing_key=settings.get("signing_key", ""), trusted_keys=settings.get("trusted_keys", ""),
                         remote=remote, overlay=overlay, overlay_used=os.environ.get("SGCC_OVERLAY_USED") or "")
    if not lookup.marks and not overlay_or_record:
        return None
    # Checked only now, when sgcc would take its own path (one stat, off the common path).
    if inv.mode != "link" and not all(_plain_output(inv.output_for(s)) for s in inv.sources):
        return None  # -o /dev/null, /dev/stdout, a FIFO: gcc writes those its own way
    if not _wrapper_allows(lookup, settings):
        return None
    return lookup


def _wrapper_allows(lookup: Lookup, settings: dict) -> bool:
    """Under a compiler cache (ccache, sccache: the parent process), whether this compile may
    still substitute: only when the wrapper hashes sgcc's state for the configuration seen now
    (:mod:`sgcc.dropin.wrapper`); an overlay never. Otherwise the lookup keeps nothing to
    substitute (a recording still records) and False means gcc runs the command as it is."""
    if not lookup.marks and not lookup.overlay:
        return True
    parent = compilermod.caching_parent()
    if parent is None:
        return True
    from sgcc.dropin import wrapper

    name, exe = parent
    if lookup.overlay:
        log(f"under {name}: the overlay of sgcc optimize --project is not used (no state covers it)")
        lookup.overlay = ""
    if lookup.marks:
        store = lookup.store
        try:
            keyring = store.keyring if store is not None else None
        except Exception:  # noqa: BLE001 - a key file that cannot be read: the hit fails anyway
            keyring = None
        if not wrapper.keyed(name, exe, settings, lookup.ctx["compiler"], keyring):
            log(f"under {name} without sgcc's state in its key ({wrapper.WRAPPERS[name]}, see `sgcc cache state`): "
                "compiling as gcc")
            lookup.marks = frozenset()
            if not os.environ.get("SGCC_RECORD"):
                _stats(settings, {"wrapper_unkeyed": 1})
                return False
            lookup.counts["wrapper_unkeyed"] = 1
    return bool(lookup.marks) or bool(os.environ.get("SGCC_RECORD"))


def _plain_output(path: str) -> bool:
    """Whether the output is a regular file or does not exist yet (through a link too). A
    device, a FIFO or /dev/stdout goes to gcc untouched: the assembler, run by sgcc with its
    output captured, would see another file there, and removes what it cannot write."""
    import stat

    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _stats(settings: dict, counts: dict, reasons: dict | None = None) -> None:
    """Count this compile in the cache's statistics (never fails the compile)."""
    if not settings.get("cache"):
        return
    try:
        from sgcc.cache import stats

        stats.record(settings["cache_dir"], counts, reasons)
    except Exception:  # noqa: BLE001 - counting must never fail a compile
        pass


def _private_tmpdir() -> str | None:
    """A new 0700 directory under $TMPDIR, else /tmp (as gcc falls back when TMPDIR is
    unusable), or None (like ``tempfile.mkdtemp``, whose import would cost every compile
    ~4 ms: ``mkdir`` fails rather than reuse an existing path)."""
    for base in dict.fromkeys([os.environ.get("TMPDIR") or "/tmp", "/tmp"]):
        for _ in range(100):
            path = os.path.join(base, f"sgcc-{os.getpid()}-{os.urandom(6).hex()}")
            try:
                os.mkdir(path, 0o700)
                return path
            except FileExistsError:
                continue
            except OSError:
                break
    return None


def _cleanup(tmpdir: str, keep: bool) -> None:
    if keep:
        sys.stderr.write(f"sgcc: kept temporary files in {tmpdir}\n")
        return
    # The directory holds only the flat files this compile wrote; shutil's import (bz2, lzma,
    # fnmatch) would cost every compile a few milliseconds for this.
    try:
        for entry in os.scandir(tmpdir):
            os.unlink(entry.path)
        os.rmdir(tmpdir)
    except OSError:
        import shutil

        shutil.rmtree(tmpdir, ignore_errors=True)


def _spawn(argv: list[str], env: dict, tmpdir: str) -> tuple[int, bytes, bytes]:
    """Run gcc with stdin from /dev/null and its output captured: (exit status, stdout, stderr).

    The drop-in's own lean runner, not :func:`sgcc.proc.run`: importing subprocess (selectors,
    signal, threading, locale) costs a compile that substitutes several milliseconds, and gcc
    here needs none of what proc adds (no timeout: a build waits for its compiler as long as
    gcc itself would take; no limits: this is the user's own compiler on the user's code).
    Output goes to files in the private temporary directory, read back after the exit.
    """
    out_path = os.path.join(tmpdir, f"stdout.{len(os.listdir(tmpdir))}")
    err_path = out_path.replace("stdout.", "stderr.")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    fo = os.open(out_path, flags, 0o600)
    fe = os.open(err_path, flags, 0o600)
    try:
        pid = os.posix_spawn(argv[0], argv, env, file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, fo, 1),
            (os.POSIX_SPAWN_DUP2, fe, 2),
        ])
    finally:
        os.close(fo)
        os.close(fe)
    _, wstatus = os.waitpid(pid, 0)
    status = os.waitstatus_to_exitcode(wstatus)
    result = []
    for path in (out_path, err_path):
        with open(path, "rb") as fh:
            result.append(fh.read())
        os.unlink(path)
    return status, result[0], result[1]
