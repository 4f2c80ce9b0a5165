"""The whole project's profile: one instrumented build, the workload run once on it.

A source of a project is no program of its own (``-fprofile-generate`` on one source and a
link fails: no ``main``, or another file's functions missing), so the profile is made the
way a user would make one: a private copy of the tree is cleaned and built with every
compile and link given ``-fprofile-generate=DIR -fprofile-update=prefer-atomic`` (through a
two-line compiler wrapper standing where the build puts ``$CC``), and the workload runs
once on it inside the isolated runner, which may write only ``DIR`` (and its own copy of
the tree). gcc then writes one ``.gcda`` per object, named by the object's path. The copy is
built and run where the build put the project (:mod:`sgcc.project.place`): gcc matches each
function's profile by the source's name as the build spelled it (CMake: absolute), so a
profile made at another path is refused function by function ("source locations for
function ... have changed").

:func:`profiles` gives each recorded compile its ``.gcda``; the pgo generator compiles
the source with ``-fprofile-use`` from it (and PGO combined with other variants), in the
compile's own directory so the profile's checksums match. The same instrumented build
also yields the *PGO-everywhere* reference: the whole project rebuilt with
``-fprofile-use`` (:func:`pgo_everywhere`), timed beside sgcc's result.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc.project import workload

if TYPE_CHECKING:
    from sgcc.project.state import ProjectRun
    from sgcc.verify.box.sandbox import Sandbox

#: Flags of the instrumented build (both compiles and links: the link pulls in libgcov).
GENERATE = ["-fprofile-update=prefer-atomic"]
#: Flags of the PGO-everywhere build, as a user makes it (``-fprofile-use`` and the profile; no
#: ``-fprofile-partial-training``, which changes the code of functions the workload never
#: ran): the warnings off change no code, and a profile that does not fit a function (which
#: the ordinary build would stop on) leaves that function compiled without one.
USE = ["-Wno-missing-profile", "-Wno-coverage-mismatch"]


class ProjectProfile:
    """The outcome of :func:`train`: where the profile is, how long it took, what went wrong."""

    def __init__(self, directory: Path, tree: Path, at: Path | None = None):
        self.directory = directory
        self.tree = tree
        self.at = at  # where the tree was built and run (the project's path), None: at its own
        self.seconds = 0.0
        self.error = ""
        self.build_error = ""  # the instrumented build failed, yet the workload ran on what it built
        self.gcda: dict[str, Path] = {}  # compile key -> its .gcda

    def for_compile(self, key: str) -> Path | None:
        return self.gcda.get(key)


#: Why an instrumented build fails with gcov's symbols undefined: its links do not run through
#: ``$CC``/``{sgcc}``, so they miss ``-fprofile-generate`` (CMake links with the compiler its build
#: directory was first configured with, and a C++ program with the C++ compiler; the compiler
#: launchers cover compiles only).
LINKS_BYPASS = ("the build's links{which} do not run through sgcc, so the instrumented objects link without "
                "gcc's profiling runtime (CMake: add -DCMAKE_C_LINKER_LAUNCHER={{sgcc}} to the build command's "
                "cmake, and -DCMAKE_CXX_LINKER_LAUNCHER={{sgcc}} where C++ programs link the project's C code; "
                "docs/build-systems.md)")
_MAKE_TARGET = re.compile(r"\*\*\* \[[^\]]*?:\d+: ([^\]]+)\] Error")


def links_bypass(output: str) -> str:
    """:data:`LINKS_BYPASS`, naming the targets whose links failed where make says which."""
    targets = list(dict.fromkeys(m.group(1) for m in _MAKE_TARGET.finditer(output)
                                 if m.group(1) != "all" and not m.group(1).endswith("/all")))
    return LINKS_BYPASS.format(which=f" of {', '.join(targets[:3])}" if targets else "")


def _wrapper(path: Path, compiler: str, flags: list[str]) -> Path:
    """A compiler that is ``compiler`` with ``flags`` added to every command line.

    It runs as ``$CC`` and as ``{sgcc}``, and ``{sgcc}`` is also a launcher (CMake's compiler and
    linker launchers: ``{sgcc} /usr/bin/cc -o ...``), so it goes through sgcc's own reading of
    a command line (a compiler named first is the compiler, sgcc named twice runs once) with
    sgcc off (``SGCC_DISABLE``: gcc runs the command as it is, no cache) and the compiler pinned
    to the recorded build's (``SGCC_COMPILER``). Handing the command to gcc directly made a
    launcher's link ``gcc /usr/bin/cc ...``, which fails (``cannot use executable file``)."""
    from sgcc.project.record import sgcc_executable

    added = " ".join(shlex.quote(f) for f in flags)
    path.write_text(f"#!/bin/sh\nSGCC_DISABLE=1 SGCC_COMPILER={shlex.quote(compiler)} exec "
                    f"{shlex.quote(sgcc_executable())} \"$@\" {added}\n", encoding="utf-8")
    os.chmod(path, 0o755)
    return path


def _mangled(obj: Path) -> str:
    """Where gcc puts the profile of object ``obj`` under ``-fprofile-generate=DIR``."""
    return str(Path(os.path.abspath(obj)).with_suffix("")).replace("/", "#") + ".gcda"


def build_with(builder, spec, tree: Path, compiler: str, flags: list[str], workdir: Path, name: str):
    """Clean and build ``tree`` with ``compiler`` plus ``flags`` as ``$CC`` (and for ``{sgcc}``)."""
    cc = str(_wrapper(workdir / f"{name}-cc", compiler, flags))
    env = builder.env(CC=cc)
    clean = spec.clean.replace("{sgcc}", shlex.quote(cc))
    build = spec.build.replace("{sgcc}", shlex.quote(cc))
    builder.run(clean, tree, env, f"{name} clean")
    return builder.run(build, tree, env, f"{name} build", check=False)


def train(builder, spec, compiler: str, root: Path, compiles, sandbox: Sandbox, commands: list[str], workdir: Path,
          timeout: float, inputs: Path | None = None, where: workload.Where | None = None) -> ProjectProfile:
    """Build an instrumented copy of the project, run the workload on it once, and find each
    compile's profile (see the module docstring). ``where``: where copies are seen (the
    builder places its builds likewise). Never raises: ``error`` says what failed."""
    started = time.monotonic()
    directory = workdir / "pgo-profile"
    directory.mkdir()
    os.chmod(directory, 0o733)  # the box's user writes the counters, nothing else of ours is open to it
    tree = workdir / "pgo-tree"
    where = where or workload.Where()
    prof = ProjectProfile(directory, tree, where.root)
    try:
        workload.copy_tree(root, tree, writable=False)
        r = build_with(builder, spec, tree, compiler, [f"-fprofile-generate={directory}", *GENERATE], workdir,
                       "instrumented")
        if not r.ok:
            # Some targets may not link instrumented (a shared library with a version script and
            # libgcov): what was built before the failure may still be all the workload runs.
            text = (r.stdout + r.stderr).decode(errors="replace")
            tail = text.strip().splitlines()[-3:]
            prof.build_error = "the instrumented build failed: " + " | ".join(tail)[-300:]
            if "undefined reference to `__gcov" in text:
                prof.build_error = links_bypass(text) + " (" + prof.build_error + ")"
        if inputs is not None:
            shutil.copytree(inputs, tree / inputs.name)
        workload.hand_over(tree)
        run = sandbox.run(workload.launcher(tree, "train", commands, where), b"", timeout=timeout,
                          writable=[directory])
        if not run.ok:
            prof.error = f"the workload failed on the instrumented build: {run.describe()}"
            if prof.build_error:
                prof.error += f" ({prof.build_error})"
            return prof
        for c in compiles:
            if c.output is None:
                continue
            try:
                rel = Path(c.output).resolve().relative_to(root.resolve())
            except ValueError:
                continue
            gcda = directory / _mangled((where.root or tree) / rel)
            if gcda.is_file():
                prof.gcda[c.key] = gcda
        if not prof.gcda:
            prof.error = "the workload's run left no profile for the recorded compiles"
        return prof
    except Exception as exc:  # noqa: BLE001 - the profile is an extra: the search goes on without it
        prof.error = f"{type(exc).__name__}: {exc}"
        return prof
    finally:
        prof.seconds = time.monotonic() - started


def pgo_everywhere(builder, spec, compiler: str, prof: ProjectProfile, workdir: Path, extra: list[str] | None = None):
    """The whole project rebuilt in the profile's tree with ``-fprofile-use`` from it (the
    objects keep their paths, so gcc finds each one's profile), and ``extra`` on every compile
    and link (:data:`sgcc.project.whole.LTO` for the PGO + LTO reference; ``ar`` reads LTO objects through the
    linker plugin binutils loads by itself): the tree, or None and why. Each call replaces the
    last build in that tree (the caller copies what it keeps)."""
    if prof.error:
        return None, prof.error
    extra = extra or []
    flags = [f"-fprofile-use={prof.directory}", *USE, *extra]
    try:
        r = build_with(builder, spec, prof.tree, compiler, flags, workdir, "pgo-lto" if extra else "pgo-everywhere")
    except Exception as exc:  # noqa: BLE001 - a reference only
        return None, f"{type(exc).__name__}: {exc}"
    if not r.ok:
        return None, f"the {' '.join(['-fprofile-use', *extra])} build failed"
    return prof.tree, ""


def profile_digest(gcda: Path) -> str:
    """The content's SHA-256 of a profile (what a cache entry of its PGO compile names)."""
    import hashlib

    return hashlib.sha256(Path(gcda).read_bytes()).hexdigest()


def compile_with_profile(compiler: str, c, gcda: Path, tree: Path, root: Path,
                         extra: list[str] | None = None, placed: bool = False) -> tuple[str | None, str]:
    """gcc's assembly of recorded compile ``c`` with ``-fprofile-use`` from ``gcda`` (and
    ``extra`` flags after the compile's own).

    gcc names a static function's profile by the output's name *as spelled* (``-o lvm.o``
    gives ``lvm``; ``-o /tmp/x/prog.s`` gives another name, and the static functions' counts
    are then "missing": measured on Lua's ``lvm.c``, 3 warnings and a different program). So
    the compile runs in ``tree`` (the instrumented build's copy of the project), in the
    directory matching the compile's own, with the output spelled as the build spelled it
    (``.s`` for ``.o``) and the profile beside it; ``-fdebug-prefix-map`` gives the debug
    information the project's own directory. ``placed``: the instrumented build ran with
    ``tree`` mounted where the project lies (:mod:`sgcc.project.place`), and so does this
    compile, in the compile's own directory: every path is the build's. (text, '') or
    (None, why)."""
    from sgcc.gcc import args as gccargs

    inv = gccargs.parse(c.args)
    if not inv.sources:
        return None, "no source on the compile's command line"
    try:
        cwd = tree / Path(c.cwd).resolve().relative_to(root.resolve())
    except ValueError:
        return None, "the compile ran outside the project's tree"
    spelled = Path(inv.output_for(inv.sources[0]))
    if spelled.is_absolute():
        try:
            spelled = Path(os.path.relpath(spelled, c.cwd))
        except ValueError:
            return None, "the compile's output is outside its directory"
    out = cwd / spelled.with_suffix(".s")
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(gcda, out.with_suffix(".gcda"))
    flags = inv.flags_without_inputs(drop_dependency_flags=True)
    mapping = [] if placed else [f"-fdebug-prefix-map={cwd}={c.cwd}"]
    return gcc_assembly([compiler, *flags, *(extra or []), "-fprofile-use", *USE, *mapping,
                         "-S", "-o", str(spelled.with_suffix(".s")), inv.sources[0].path],
                        Path(c.cwd) if placed else cwd, out, place=(tree, root) if placed else None)


def gcc_assembly(argv: list[str], cwd: Path, out: Path,
                 place: tuple[Path, Path] | None = None) -> tuple[str | None, str]:
    """Run gcc's ``-S`` command ``argv`` in ``cwd`` (with ``place``, :func:`sgcc.proc.run`'s):
    (the assembly it wrote to ``out``, '') or (None, gcc's first error lines)."""
    from sgcc import proc

    r = proc.run(argv, cwd=cwd, timeout=600, place=place)
    if not r.ok:
        lines = [ln for ln in r.stderr.decode(errors="replace").splitlines() if "error" in ln.lower()]
        return None, "gcc failed: " + ("; ".join(lines[:2])[:300] or f"exit {r.returncode}")
    return out.read_text(encoding="utf-8", errors="surrogateescape"), ""


def profile_project(run: ProjectRun, for_reference: bool = False) -> None:
    """``run.profile``: the whole project's profile for the pgo generator and the
    PGO-everywhere reference (:func:`train`), reported in ``run.report``."""
    report = run.report
    run.note("profile-guided: building the whole project instrumented and running the workload once"
             + (" (for the PGO-everywhere reference)" if for_reference else ""))
    run.tick(True)
    try:
        inputs = run.base / ".sgcc-inputs"  # stdin tests as a workload
        profile = train(run.builder, run.spec, run.tmpl.compiler, run.root, run.compiles, run.sandbox, run.commands,
                        run.workdir, run.spec.test_timeout * 5, inputs=inputs if inputs.is_dir() else None,
                        where=run.where)
    finally:
        run.tick(False)
    run.profile = profile
    report.pgo = {"seconds": round(profile.seconds, 1), "profiles": len(profile.gcda), "error": profile.error}
    report.phases["pgo_profile"] = round(profile.seconds, 1)
    if profile.error:
        report.notes.append(f"no whole-project profile: {profile.error}")
    elif profile.build_error:
        report.notes.append(f"whole-project profile: {profile.build_error}; the workload ran on what "
                            "was built before the failure")
        report.pgo["build_error"] = profile.build_error
