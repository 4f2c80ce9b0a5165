"""The drop-in inside link-time optimisation: cached winners substituted into the code an LTO link ships.

With ``-flto`` a compile writes GIMPLE, not machine code; the code that ships is made at the
link, where gcc's ``lto-wrapper`` runs the driver once per partition (``lto1 -fltrans``, then
``as`` on its assembly). That assembly is what this module intercepts, in two halves:

1. **At the link** (:func:`route`, from :mod:`sgcc.dropin.driver`): a link that gcc runs with
   ``-flto``, or without it but with objects that may hold LTO's language (:func:`plugin_lto`:
   gcc's linker plugin runs LTO on them anyway), and that sgcc may route (:func:`lto_link`)
   gets a *context* made from its flags
   (:func:`context_flags`: the user's code-shaping flags, ``-flto=N`` read as ``-flto``, and
   the marker ``-fltrans`` so no ordinary compile shares it). Nothing is stored with winners
   in that context (one directory listing, as for a compile) and no project build is being
   recorded or built from an overlay (``SGCC_RECORD``, ``SGCC_OVERLAY``, as for a compile):
   gcc runs the link as it is, in one exec. Otherwise gcc runs it with a
   private directory first in ``COMPILER_PATH`` holding an ``as`` that is this module, and
   ``SGCC_LTRANS`` saying the context and the real assembler; sgcc waits, removes the
   directory, and prints gcc's output. A link that fails so is run again by gcc as it is (a
   link that fails on its own then fails with gcc's diagnostics, once).
2. **At each partition's assembly** (:func:`main`, run as that ``as``): only for an ltrans
   partition (``-fltrans`` in the driver's ``COLLECT_GCC_OPTIONS``), with one input and one
   output it can read back, the partition's assembly is one translation unit to the cache
   (:class:`sgcc.cache.lookup.Lookup`, keyed by its content in the link's context: the overlay
   first, then the cache): a winner is substituted and assembled by the real ``as`` (and, in a
   recorded build, the partition is written down beside the compiles, :data:`LTRANS_RECORD`);
   anything else, including sgcc's own failure and an assembler error on the substituted text,
   runs the real ``as`` on gcc's own assembly with gcc's own arguments.

With nothing to substitute the link is gcc's own: the same assembler on the same assembly.
Partitions and the names gcc gives in them (``twice.lto_priv.0``) depend on the program and
the flags, not on the job count or the temporary names, so a later ``make`` with the same
flags meets the same keys (tests/test_lto.py shows it).

Where gcc finds ``as`` in one of its own directories (a cross toolchain's ``bin/``), those come
before ``COMPILER_PATH`` and the front is never run: the link is gcc's, nothing substituted.

Lean: the drop-in's imports only; json and the cache's lookup only on a link that has winners.
"""

from __future__ import annotations

import os
import sys

from sgcc.errors import log

TYPE_CHECKING = False  # typing's own import costs ~2 ms; mypy knows this name
if TYPE_CHECKING:
    from typing import NoReturn

#: The environment entry that tells the front its link's context and the real assembler.
ENV = "SGCC_LTRANS"
#: Flags a recorded build adds to each ``-flto`` compile, which the drop-in otherwise hands to
#: gcc as it is (project mode's variants of an LTO build's partitions,
#: :mod:`sgcc.candidates.ltovariants`); read only while ``SGCC_RECORD`` is set.
COMPILE_FLAGS = "SGCC_LTO_COMPILE_FLAGS"
#: The record of the partitions a recorded build's links made, beside ``SGCC_RECORD``'s file.
LTRANS_RECORD = "ltrans.jsonl"
#: Why gcc's driver refuses a command for the drop-in, where an LTO link may still be routed:
#: the link itself (no C source, the optimisation level left to the objects), LTO's own
#: options, a shared library.
_ROUTABLE = ("no-c-source", "opt-level-", "option-flto", "option-shared")


def lto_active(args: list[str]) -> bool:
    """Whether gcc runs this command with link-time optimisation (the last of ``-flto``,
    ``-flto=N`` and ``-fno-lto`` decides)."""
    active = False
    for a in args:
        if a == "-flto" or a.startswith("-flto="):
            active = True
        elif a == "-fno-lto":
            active = False
    return active


def plugin_lto(args: list[str]) -> bool:
    """Whether a link without ``-flto`` may still be an LTO link: gcc's linker plugin hands
    objects that hold LTO's intermediate language (compiled with ``-flto``) to LTO whatever
    the link's own flags say, unless ``-fno-lto`` or ``-fno-use-linker-plugin`` is given
    (then fat objects' ordinary code is linked). A plain link of plain objects runs no
    partition, and the front is then never run."""
    return not any(a in ("-fno-lto", "-fno-use-linker-plugin") for a in args)


def lto_link(inv) -> bool:
    """Whether ``inv`` (a parsed command the drop-in does not compile itself) is a link sgcc
    may route through the front: a link, LTO on (``-flto``) or possible through the plugin
    (:func:`plugin_lto`: objects compiled with ``-flto`` and linked without it, as a
    project's own link of an LTO variant's objects is), and every reason for refusing it one
    of :data:`_ROUTABLE` (anything else, ``-save-temps`` or ``-r`` say, stays gcc's untouched)."""
    if inv.mode != "link" or not (lto_active(inv.args) or plugin_lto(inv.args)):
        return False
    return all(tag.startswith(_ROUTABLE) for tag in inv.reason.split(",") if tag)


def context_flags(inv) -> list[str]:
    """The flags of an LTO link's context: the user's flags without inputs (the cache key
    keeps only the code-shaping ones), ``-flto=N`` as ``-flto`` (the job count changes no
    partition), and ``-fltrans``."""
    flags = ["-flto" if a.startswith("-flto=") else a for a in inv.flags_without_inputs(drop_dependency_flags=True)]
    return [*flags, "-fltrans"]


def route(compiler: str, inv, settings: dict, remote=None) -> int | None:
    """Run the LTO link ``inv`` with the front in place when the cache holds winners in its
    context (or a project build is recorded or overlaid) and return 0 when it succeeded; None
    when there is nothing to route or the routed link failed: the caller execs gcc with the
    command as it is."""
    # A recorded build, or one of `sgcc optimize --project`'s builds from an overlay, runs every
    # partition through the front whatever the cache holds: a link without -flto too (Lua's
    # makefile links without CFLAGS: MYCFLAGS=-flto makes an LTO link of it), which costs a
    # plain link there one more process and finds no partition.
    project = bool(os.environ.get("SGCC_RECORD") or os.environ.get("SGCC_OVERLAY"))
    if not settings.get("cache") and not project:
        return None
    from sgcc.cache.lookup import Lookup

    flags = context_flags(inv)
    isa = settings.get("isa", "flags")
    lookup = Lookup.plan(compiler, flags, isa, root=settings["cache_dir"] if settings.get("cache") else None,
                         remote=remote)
    if not lookup.marks and not project:
        if lto_active(inv.args):  # (a plain link says only its pass-through line, as before)
            log(f"lto link, nothing to substitute in its context ({lookup.context_id}): {compiler}")
        return None
    real_as = _real_as(compiler)
    if real_as is None:
        log("lto link: gcc's assembler not found; linking with plain gcc")
        return None
    from sgcc.dropin import compiler as compilermod
    from sgcc.dropin import driver

    tmpdir = driver._private_tmpdir()
    if tmpdir is None:
        return None
    import json

    try:
        front = os.path.join(tmpdir, "as")
        # -P: no working directory on sys.path, so a build tree's own `sgcc/` is never imported.
        script = f"#!/bin/sh\nexec {_quote(sys.executable)} -P -m sgcc.dropin.ltrans \"$@\"\n"
        fd = os.open(front, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
        try:
            os.write(fd, script.encode())
        finally:
            os.close(fd)
        env = compilermod.child_env(compiler)
        old = env.get("COMPILER_PATH", "")
        env["COMPILER_PATH"] = tmpdir + (os.pathsep + old if old else "")
        # The program the link makes: a recorded partition is charged only to that program's
        # profile (two programs linked from one library make partitions alike).
        output = os.path.abspath(inv.output or "a.out")
        env[ENV] = json.dumps({"compiler": compiler, "flags": flags, "as": real_as, "output": output})
        # (A project build's plain link is routed too, in case its objects hold LTO's
        # language: said as such, not as an LTO link.)
        kind = "lto link" if lto_active(inv.args) or lookup.marks else "link (LTO partitions recorded, if any)"
        log(f"{kind}: routing the ltrans assembly through sgcc ({len(lookup.marks)} keys with winners)")
        try:
            status, out, err = driver._spawn([compiler, *inv.args], env, tmpdir)
        except KeyboardInterrupt:  # make's ^C reached gcc too (one process group): stop as gcc would
            return 130
        if status != 0:
            # Whatever failed (the front itself, say), the link is then gcc's own: run again by
            # the caller as it is, so a failing link fails with gcc's diagnostics, once.
            log(f"{kind} through sgcc failed (exit status {status}); linking with plain gcc")
            driver._stats(settings, {"lto_links": 1, "fallbacks": 1})
            return None
        driver._emit([out], sys.stdout)
        driver._emit([err], sys.stderr)
        return 0
    finally:
        driver._cleanup(tmpdir, False)


def _quote(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


def _real_as(compiler: str) -> str | None:
    """The assembler gcc runs (``-print-prog-name=as``, with the caller's environment),
    as an absolute path."""
    from sgcc.dropin import assemble, driver
    from sgcc.dropin import compiler as compilermod

    tmpdir = driver._private_tmpdir()
    if tmpdir is None:
        return None
    try:
        env = compilermod.child_env(compiler)
        status, out, _ = driver._spawn([compiler, "-print-prog-name=as"], env, tmpdir)
    finally:
        driver._cleanup(tmpdir, False)
    name = out.decode("utf-8", "surrogateescape").strip()
    if status != 0 or not name:
        return None
    found = assemble._which(name, env)
    return os.path.abspath(found) if found else None


# ---- the front: run as `as` by gcc's driver for each partition --------------------------------


def _io(args: list[str]) -> tuple[int, str] | None:
    """Where the assembly input is in ``args`` (its index) and the output's name, when the
    command is the plain one gcc's driver gives (options, ``-o OUT``, one ``.s`` input)."""
    inputs, output, i = [], None, 0
    while i < len(args):
        a = args[i]
        if a == "-o" and i + 1 < len(args):
            output = args[i + 1]
            i += 2
            continue
        if a == "--" or a == "-":
            return None
        if not a.startswith("-"):
            inputs.append(i)
        i += 1
    if output is None or len(inputs) != 1 or not args[inputs[0]].endswith(".s"):
        return None
    return inputs[0], output


def _exec_as(real: str, args: list[str]) -> NoReturn:
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(real, [real, *args])


def main(argv: list[str]) -> int:
    """The assembler front (see the module docstring): substitute, or be gcc's ``as``."""
    args = argv[1:]
    import json

    try:
        spec = json.loads(os.environ.get(ENV, ""))
        real, compiler, flags = spec["as"], spec["compiler"], spec["flags"]
        assert isinstance(real, str) and isinstance(compiler, str) and isinstance(flags, list)
    except (ValueError, KeyError, TypeError, AssertionError):
        # Not run by a routed link (the front is never in PATH, only in that link's
        # COMPILER_PATH): the `as` in PATH, as gcc's driver would find it.
        from sgcc.dropin import assemble

        _exec_as(assemble._which("as", dict(os.environ)) or "/usr/bin/as", args)
    if "'-fltrans'" not in os.environ.get("COLLECT_GCC_OPTIONS", ""):
        _exec_as(real, args)  # the assembly of an LTO object or of a C source in the link: gcc's
    where = _io(args)
    if where is None:
        log(f"ltrans: an assembler command sgcc does not read ({' '.join(args)}): gcc's code")
        _exec_as(real, args)
    index, output = where
    partition = os.path.basename(output).rpartition(".ltrans.o")[0].rpartition(".")[2] or output
    from sgcc.dropin import driver

    settings: dict = {}
    counts: dict = {}
    remote = None
    tmpdir = None
    try:
        from sgcc import config
        from sgcc.cache.lookup import Lookup

        settings = config.compile_settings()
        recording = os.environ.get("SGCC_RECORD")
        overlay = os.environ.get("SGCC_OVERLAY") or ""
        if not settings.get("cache") and not recording and not overlay:
            _exec_as(real, args)
        remote = driver._remote_layer(settings)
        lookup = Lookup.plan(compiler, flags, settings.get("isa", "flags"),
                             root=settings["cache_dir"] if settings.get("cache") else None,
                             signing_key=settings.get("signing_key", ""),
                             trusted_keys=settings.get("trusted_keys", ""), remote=remote,
                             overlay=overlay, overlay_used=os.environ.get("SGCC_OVERLAY_USED") or "")
        asm = driver._read(args[index])
        found = lookup.get(asm, partition)
        if recording:
            _record(recording, found.key, lookup.ctx, asm, partition, found.how, str(spec.get("output") or ""))
        counts = {"ltrans": 1, **lookup.counts, **driver._remote_counts(remote)}
        if found.text is None:
            driver._stats(settings, counts)
            _exec_as(real, args)
        tmpdir = driver._private_tmpdir()
        if tmpdir is None:
            raise OSError("no private temporary directory")
        path = os.path.join(tmpdir, "ltrans.s")
        driver._write(path, found.text)
        status, out, err = driver._spawn([real, *args[:index], path, *args[index + 1:]], os.environ.copy(), tmpdir)
        if status != 0:
            raise RuntimeError(f"as on the substituted assembly: exit status {status}: "
                               f"{err.decode('utf-8', 'replace').strip()[:200]}")
        driver._emit([out], sys.stdout)
        driver._emit([err], sys.stderr)
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - sgcc's own failure must never break the link
        log(f"ltrans {partition}: {type(exc).__name__}: {exc}; gcc's code")
        driver._stats(settings, {"ltrans": 1, "fallbacks": 1})
        if tmpdir is not None:
            driver._cleanup(tmpdir, False)
        _exec_as(real, args)
    if tmpdir is not None:
        driver._cleanup(tmpdir, False)
    log(f"ltrans {partition}: substituted {', '.join(found.functions) or 'the partition'}")
    driver._stats(settings, counts)
    return 0


def _record(path: str, key: str, ctx: dict, asm: str, partition: str, how: str, output: str) -> None:
    """While a build is recorded (``SGCC_RECORD``, see :func:`sgcc.dropin.driver.rewrite`),
    each partition the front sees goes to ``ltrans.jsonl`` beside the compiles' record: its
    key, context, gcc's assembly (``KEY.s``), the link's directory, the program it makes
    and how it was served."""
    import json

    from sgcc.fsutil import atomic_write

    directory = os.path.dirname(os.path.abspath(path))
    asm_path = os.path.join(directory, f"{key}.s")
    atomic_write(asm_path, asm, mode=None)
    line = json.dumps({"key": key, "context": ctx, "cwd": os.getcwd(), "partition": partition, "asm": asm_path,
                       "output": output, "served": how})
    fd = os.open(os.path.join(directory, LTRANS_RECORD), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode("utf-8", "surrogateescape"))  # one write: whole lines under -j
    finally:
        os.close(fd)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
