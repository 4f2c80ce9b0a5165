"""Building the baseline exactly as gcc does with the user's flags: ``-S``, assemble, link."""

from __future__ import annotations

from pathlib import Path

from sgcc import proc
from sgcc.engine.request import Program, Request
from sgcc.errors import SgccError
from sgcc.gcc import args as gccargs


def target_for(compiler: str, isa: str, target_flags: list[str]):
    """The instruction set candidates may use (:class:`sgcc.verify.static.isa.Target`): what the
    flags' ``target_flags`` select, or everything the host has under ``isa="native"``."""
    from sgcc.verify.static import isa as isamod

    if isa == "native":
        return isamod.native_target(compiler)
    return isamod.target_from_flags(compiler, target_flags)


def link_hint(stderr: str, src: Path) -> str | None:
    """What to do when gcc cannot link SOURCE alone into a program: it is one file of several
    (no ``main``, or functions defined elsewhere)."""
    if "undefined reference to `main'" in stderr:
        return (f"{src.name} has no main: it is one file of a program; name every C source of the program "
                f"(sgcc optimize main.c {src.name} ... --tests DIR -o OUT) and sgcc searches them all")
    if "undefined reference" in stderr:
        return ("the program has other files: name every C source of it (sgcc optimize a.c b.c ...), and "
                "its objects and libraries as gcc takes them (b.o, -lm)")
    return None


def build_baseline(request: Request, workdir: Path) -> Program:
    """gcc's program for ``request.source``, built in ``workdir`` (``base.s``, ``base.o``,
    ``base``) and split into function units. Raises :class:`SgccError` when the flags are not
    an optimized build or gcc cannot compile, assemble or link it."""
    from sgcc.asm.units import AsmFile

    src = request.source
    if not src.is_file():
        raise SgccError(f"no such source file: {src}")
    inv = gccargs.parse([*request.flags, "-c", str(src)])
    # The flags for assembling any variant of this program: derived once, used by every
    # candidate (the parse would give the same answer each time).
    asm_flags = inv.flags_without_inputs(drop_dependency_flags=True)
    if inv.opt_level not in gccargs.ELIGIBLE_OPT_LEVELS:
        raise SgccError(f"sgcc optimizes -O2/-O3/-Ofast builds; the flags say -O{inv.opt_level}",
                        hint="add -O3 (or leave the optimization level out: -O3 is the default)")
    base_s = workdir / "base.s"
    r = proc.run([request.compiler, *request.flags, "-S", "-o", str(base_s), str(src)], timeout=300)
    if not r.ok:
        raise SgccError(f"gcc cannot compile {src}:\n{r.stderr.decode(errors='replace').strip()}")
    asm_text = base_s.read_text(encoding="utf-8", errors="surrogateescape")
    obj = workdir / "base.o"
    r = proc.run([request.compiler, *asm_flags, "-c", "-x", "assembler", str(base_s), "-o", str(obj)], timeout=300)
    if not r.ok:
        raise SgccError(f"gcc's own assembly for {src} does not assemble:\n"
                        f"{r.stderr.decode(errors='replace')[-2000:]}")
    binary = workdir / "base"
    r = proc.run(gccargs.link_argv(request.compiler, request.flags, [str(obj)], str(binary)), timeout=300)
    if not r.ok:
        raise SgccError(f"gcc cannot link {src}:\n{r.stderr.decode(errors='replace').strip()}",
                        hint=link_hint(r.stderr.decode(errors="replace"), src))
    target = target_for(request.compiler, request.isa, inv.target_flags)
    return Program(src, src.read_text(errors="replace"), list(request.flags), AsmFile.parse(asm_text),
                   asm_text, obj, binary, target, asm_flags=list(asm_flags))
