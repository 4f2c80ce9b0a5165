"""LLVM's code for each function: clang compiles the same source, and each function's unit
is offered as a candidate for gcc's (the ``clang`` generator).

Every other generator without a model is gcc under other options; the code gcc cannot reach
needs another code generator. The ``ziglang`` wheel ships a complete clang (``python -m
ziglang clang``), so one pip install brings it. For each searched file this generator runs
clang on the same source under the same meaning of the user's flags (:func:`clang_flags`:
the optimisation level, defines, include paths, the language standard, the target
options; no ``-march`` but the user's own, except ``-march=native`` under ``--isa native``;
``-ffp-contract=off`` unless the user chose, so that no multiply-add is contracted that gcc's
program does not contract; gcc's position-independence, stack protector, CET and fortify
defaults, read from gcc's predefined macros), under a few settings worth searching
(:data:`PORTABLE`, :data:`NATIVE`: ``-O3``, ``-O2``, no unrolling, no vectorisation, the
vectoriser's interleaving), and fits each function into gcc's unit with
:mod:`sgcc.candidates.transplant`, like a gcc variant's.

Clang's assembly is first put in gcc's shape (:func:`gcc_shaped`: ``.size f, .-f`` where
clang writes ``.Lfunc_end0``), and its side of the transplant knows that clang's functions of
internal linkage may have another calling convention than the C source's (LLVM removes dead
arguments, promotes pointer arguments to values and drops unused return values of static
functions without renaming them, where gcc makes a ``.isra``/``.constprop`` clone): a static
function of clang's is never called from gcc's code (its callers come along) and clang's code
never calls gcc's static functions (it brings clang's as private copies), unless its address
is taken, which keeps the C convention. Read-only objects clang made of never-written
statics travel as private constants. What clang's code needs that gcc's unit lacks (a
runtime helper such as ``__udivti3``, a static local clang names ``f.x`` where gcc says
``x.1``) refuses the unit with the reason, and the whole clang file is offered where the
screen accepts it.

Trust: clang is a compiler, not an adversary, but its output is not gcc's: ``trusted`` is
False, so every clang unit is held to the information-flow rule as well as the control-flow
rule, and to the function-level test (docs/proof.md). A missing clang makes the generator
offer nothing, saying "not installed" once; the other generators run. Never on the compile
path: clang runs in ``sgcc optimize`` only; a cached winner is substituted as stored.
"""

from __future__ import annotations

import os
import re
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc import proc
from sgcc.asm import lex
from sgcc.candidates.transplant.generator import TransplantGenerator, Variant, tag_for
from sgcc.candidates.transplant.side import Side

if TYPE_CHECKING:
    from sgcc.candidates import Context, ProgramView
    from sgcc.config import Config

NAME = "clang"
INSTALL_HINT = "pip install 'sgcc[clang]', which brings the ziglang wheel's clang"

#: Settings searched for the portable target: (name, clang options after the user's).
PORTABLE: list[tuple[str, list[str]]] = [
    ("O3", ["-O3"]),
    ("O2", ["-O2"]),
    ("O3-nounroll", ["-O3", "-fno-unroll-loops"]),
    ("O3-novec", ["-O3", "-fno-vectorize", "-fno-slp-vectorize"]),
    ("O3-interleave1", ["-O3", "-mllvm", "-force-vector-interleave=1"]),
]
#: Under ``--isa native``: every instruction this CPU has (``-ffp-contract=off`` is added by
#: :func:`clang_flags` unless the user chose a contraction), then the portable settings.
NATIVE: list[tuple[str, list[str]]] = [
    ("native-O3", ["-march=native", "-O3"]),
    ("native-O2", ["-march=native", "-O2"]),
    ("native-O3-nounroll", ["-march=native", "-O3", "-fno-unroll-loops"]),
    ("native-O3-novec", ["-march=native", "-O3", "-fno-vectorize", "-fno-slp-vectorize"]),
]

# --------------------------------------------------------------------------- finding clang


def locate(setting: str = "") -> tuple[list[str] | None, str]:
    """The clang driver command (``[zig, "clang", "-resource-dir", ...]`` for the ziglang
    wheel's, or ``[path]`` for the ``clang`` setting), or None and why not."""
    if setting:
        path = Path(os.path.expanduser(setting))
        if not (path.is_file() and os.access(path, os.X_OK)):
            return None, f"not installed ({setting} is not an executable; {INSTALL_HINT})"
        return [str(path)], ""
    try:
        spec = find_spec("ziglang")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        return None, f"not installed (no ziglang package: {INSTALL_HINT})"
    home = Path(spec.origin).parent
    zig = home / "zig"
    if not (zig.is_file() and os.access(zig, os.X_OK)):
        return None, f"not installed ({zig} is missing; {INSTALL_HINT})"
    # zig's clang looks for its own headers (stddef.h, immintrin.h) under lib/include.
    return [str(zig), "clang", "-resource-dir", str(home / "lib")], ""


def identity(setting: str = "") -> str:
    """Which clang the generator would run, cheaply (its path, size and time; no process
    started): part of the cache's search key, so that a verdict found without clang, or with
    another one, is not taken for this clang's."""
    command, _why = locate(setting)
    if command is None:
        return "none"
    try:
        st = os.stat(command[0])
    except OSError:
        return "none"
    return f"{command[0]}:{st.st_size}:{st.st_mtime_ns}"


# --------------------------------------------------------------------------- gcc's flags, clang's meaning

#: Options with a separate argument that pass to clang as they are.
_PASS_SEPARATE = frozenset("-I -D -U -include -imacros -isystem -iquote -idirafter".split())
#: Options with a separate argument that mean nothing for an assembly file (dropped).
_DROP_SEPARATE = frozenset("-o -x -MF -MT -MQ -L -l -Xlinker -Xassembler -u -T -e -z --param".split())
#: Exact options clang reads as gcc does.
_PASS_EXACT = frozenset(
    """
    -ansi -pthread -fno-strict-aliasing -fstrict-aliasing -fwrapv -fno-wrapv -ftrapv -fno-common
    -fcommon -fsigned-char -funsigned-char -fno-builtin -ffreestanding -fno-math-errno -fmath-errno
    -ffast-math -fno-fast-math -fno-trapping-math -ftrapping-math -fno-signed-zeros -freciprocal-math
    -fassociative-math -ffinite-math-only -fno-finite-math-only -fno-omit-frame-pointer -fomit-frame-pointer
    -fPIC -fpic -fPIE -fpie -fno-PIC -fno-pic -fno-PIE -fno-pie -fno-plt -fplt -fstack-protector
    -fstack-protector-strong -fstack-protector-all -fno-stack-protector -fstack-clash-protection
    -fno-stack-clash-protection -fasynchronous-unwind-tables -fno-asynchronous-unwind-tables
    -funwind-tables -fno-unwind-tables -fexceptions -fno-exceptions -fno-delete-null-pointer-checks
    -fdelete-null-pointer-checks -fno-strict-overflow -fstrict-overflow -fsemantic-interposition
    -fno-semantic-interposition -fshort-enums -fshort-wchar -fno-zero-initialized-in-bss
    -fgnu89-inline -fno-gnu89-inline -fno-jump-tables -fjump-tables
    """.split()
)
_PASS_PREFIX = ("-D", "-U", "-I", "-std=", "-ffp-contract=", "-fvisibility=", "-fcf-protection",
                "-fno-builtin-", "-fstack-protector", "-m", "-include", "-isystem", "-iquote", "-idirafter")
#: gcc's optimisation choices, which change how, never what: dropped (clang has its own).
_OPTIMISATION = re.compile(
    r"^-f(?:no-)?(?:tree-|ipa-|unroll-|peel-|sched|schedule-|inline|align-|gcse|loop-|predictive-commoning"
    r"|split-|vect-|simd-|ira-|if-conversion|reorder-|optimize-|prefetch-|ivopts|version-loops|rename-"
    r"|guess-branch|branch-|crossjumping|cse-|expensive-|peephole|reg-struct|rerun|thread-jumps|caller-saves"
    r"|devirtualize|partial-inlining|early-inlining|hoist-|code-hoisting|store-merging|shrink-wrap"
    r"|tracer|web|var-tracking|move-loop|modulo-sched|selective-sched|live-range|combine-stack|defer-pop"
    r"|omit-|function-cse|auto-inc-dec|isolate-|lifetime-dse|dse|dce|ssa-|stdarg-opt|toplevel-reorder"
    r"|profile-|branch-probabilities|value-profile|fast-math-off|ree|sink|lra-|cprop|forward-propagate"
    r"|finite-loops|allow-store|section-anchors|zero-call|prefer-|cx-|keep-|stack-reuse|trivial-auto"
    r"|diagnostics|message-length|show-column|no-|ident|verbose-asm|record-gcc|dwarf|debug|eliminate-"
    r"|var-|gnu-unique|working-directory|function-sections|data-sections|asynchronous)"
)


class Untranslatable(Exception):
    """A gcc flag whose meaning clang would not give the program."""


def gcc_defaults(compiler: str, flags: list[str]) -> list[str]:
    """Clang options that give it what gcc's configuration turns on by default and ``flags``
    leave as it is: position independence, the stack protector, CET and ``_FORTIFY_SOURCE``,
    read from gcc's predefined macros (``gcc FLAGS -dM -E``). Distributions differ (Debian's
    gcc makes PIE code only; Ubuntu's also protects the stack and fortifies)."""
    keep = [f for f in flags if f.startswith(("-f", "-m", "-O", "-D", "-U", "-std", "-ansi"))]
    r = proc.run([compiler, *keep, "-dM", "-E", "-x", "c", "-"], stdin=b"", timeout=60)
    if not r.ok:
        return []
    macros: dict[str, str] = {}
    for line in r.stdout.decode(errors="replace").splitlines():
        parts = line.split(None, 2)
        if len(parts) >= 2 and parts[0] == "#define":
            macros[parts[1]] = parts[2] if len(parts) > 2 else ""
    out: list[str] = []
    if "__PIE__" in macros:
        # gcc's PIE code reads external variables directly (the linker copies them into the
        # executable); clang's would load their addresses from the GOT, which the control-flow
        # proof refuses where gcc's code does not.
        out += ["-fPIE" if macros["__PIE__"] == "2" else "-fpie", "-fdirect-access-external-data"]
    elif "__PIC__" in macros:
        # gcc's -fPIC code may be interposed (a global function called through the PLT,
        # never inlined); so must clang's.
        out += ["-fPIC" if macros["__PIC__"] == "2" else "-fpic", "-fsemantic-interposition"]
    else:
        out.append("-fno-pic")
    if "__SSP_ALL__" in macros:
        out.append("-fstack-protector-all")
    elif "__SSP_STRONG__" in macros:
        out.append("-fstack-protector-strong")
    elif "__SSP__" in macros:
        out.append("-fstack-protector")
    else:
        out.append("-fno-stack-protector")
    cet = macros.get("__CET__")
    out.append({"1": "-fcf-protection=branch", "2": "-fcf-protection=return", "3": "-fcf-protection=full"}
               .get(cet or "", "-fcf-protection=none"))
    if "_FORTIFY_SOURCE" in macros and not any(f.startswith(("-D_FORTIFY_SOURCE", "-U_FORTIFY_SOURCE"))
                                               for f in flags):
        out.append(f"-D_FORTIFY_SOURCE={macros['_FORTIFY_SOURCE'] or 1}")
    return out


def clang_flags(flags: list[str], *, isa: str = "flags") -> list[str]:
    """gcc's compile ``flags`` as clang options with the same meaning (see the module
    docstring). Outputs, dependency files, warnings, link options and gcc's optimisation
    choices are dropped; an option whose meaning clang may not share raises
    :class:`Untranslatable`. ``-march=native`` is dropped unless ``isa`` is ``native``
    (the variants add it there)."""
    out: list[str] = []
    contract = False
    i = 0
    while i < len(flags):
        a = flags[i]
        nxt = flags[i + 1] if i + 1 < len(flags) else None
        i += 1
        if a in _PASS_SEPARATE and nxt is not None:
            out += [a, nxt]
            i += 1
        elif a in _DROP_SEPARATE:
            i += 1
        elif a.startswith("-O"):
            level = a[2:]
            out += ["-O3", "-ffast-math"] if level == "fast" else [a]  # clang 22 deprecates -Ofast
            contract = contract or level == "fast"
        elif a in ("-c", "-S", "-s", "-w", "-pedantic", "-pedantic-errors", "-pipe", "-v", "-pie", "-no-pie",
                   "-rdynamic") or \
                a.startswith(("-W", "-l", "-L", "-o", "-x", "-M", "-g", "-static", "-shared", "--param",
                              "-Xlinker", "-Xassembler")):
            continue
        elif a in _PASS_EXACT or a.startswith(_PASS_PREFIX):
            if a.startswith("-march=native") and isa != "native":
                raise Untranslatable("-march=native is the user's, but sgcc's --isa is not native")
            out.append(a)
            contract = contract or a.startswith("-ffp-contract=") or a == "-ffast-math"
        elif _OPTIMISATION.match(a) or a.startswith("-fno-") and _OPTIMISATION.match("-f" + a[5:]):
            continue
        elif not a.startswith("-"):
            continue  # an input: the generator names the source itself
        else:
            raise Untranslatable(f"gcc's {a} has no clang equivalent sgcc knows")
    if not contract:
        # GNU C contracts a*b+c into one FMA wherever the target has it; gcc's baseline
        # without -march has none. Clang contracts within an expression by default.
        out.append("-ffp-contract=off")
    return out


# --------------------------------------------------------------------------- clang's assembly, gcc's shape

_FUNC_END_RE = re.compile(r"^(\.Lfunc_end\d+):\s*$")
_SIZE_END_RE = re.compile(r"^\s*\.size\s+([^\s,]+)\s*,\s*(\.Lfunc_end\d+)\s*-\s*([^\s,]+)\s*$")
_CFI_END_RE = re.compile(r"^\s*\.cfi_endproc\s*$")
_ADDRSIG_RE = re.compile(r"^\s*\.addrsig(?:_sym\s.*)?\s*$")
_ZERO_FILL_RE = re.compile(r"^(\s*)\.zero(\s+[^,#]+,)")
_FUNC_TYPE_RE = re.compile(r"^\s*\.type\s+([^\s,]+)\s*,\s*@function", re.M)
_SECTION_RE = re.compile(r"^\s*(?:\.text|\.data|\.bss|\.section)\b")
_TABLE_LINE_RE = re.compile(r"^\s*(?:\.p2align\b.*|\.LJTI\d+_\d+:\s*|\.(?:long|quad)\s+\.LBB\d+_\d+-\.LJTI\d+_\d+\s*)$")


def _jump_tables(lines: list[str], i: int) -> tuple[list[str], int]:
    """The jump tables clang wrote right after a function (a read-only section switch, then
    only alignment, ``.LJTI`` labels and ``.long .LBBx-.LJTIy`` entries), and where they end;
    ``([], i)`` when none follows."""
    if i >= len(lines) or not re.match(r"^\s*\.section\s+\.rodata", lines[i]):
        return [], i
    j = i + 1
    while j < len(lines) and _TABLE_LINE_RE.match(lines[j].rstrip("\n")):
        j += 1
    block = lines[i:j]
    if not any(".LJTI" in ln and ln.rstrip().endswith(":") for ln in block):
        return [], i
    return [ln if ln.endswith("\n") else ln + "\n" for ln in block], j


_CFI_REG_RE = re.compile(r"^(\s*\.cfi_\w+\s)(.*)$", re.S)
#: DWARF register numbers of x86-64, as gcc writes them in CFI directives (``.cfi_offset 3,
#: -16``; clang writes ``%rbx``, which the text screen does not read).
DWARF_REGS = {r: n for n, r in enumerate(
    "rax rdx rcx rbx rsi rdi rbp rsp r8 r9 r10 r11 r12 r13 r14 r15 rip".split())}
DWARF_REGS.update({f"xmm{k}": 17 + k for k in range(16)})


def _cfi_numbers(line: str) -> str:
    m = _CFI_REG_RE.match(line)
    if not m or "%" not in m.group(2):
        return line
    return m.group(1) + re.sub(r"%(\w+)", lambda r: str(DWARF_REGS.get(r.group(1), r.group(0))), m.group(2))


def gcc_shaped(text: str) -> str:
    """Clang's assembly with each function ending as gcc's does (``.cfi_endproc`` then
    ``.size f, .-f``, which the splitter of :mod:`sgcc.asm` needs; clang writes
    ``.Lfunc_endN: .size f, .Lfunc_endN-f .cfi_endproc``) and without the address-significance
    table (``.addrsig``: a linker hint for identical-code folding), registers in CFI directives
    by their DWARF numbers as gcc writes them, and a filled ``.zero N,V`` as ``.space N, V``.
    The end label stays where anything else refers to it."""
    lines = lex.split_lines(text)
    used: dict[str, int] = {}
    for line in lines:
        if ".Lfunc_end" in line:
            for tok in re.findall(r"\.Lfunc_end\d+", line):
                used[tok] = used.get(tok, 0) + 1
    out: list[str] = []
    section = "\t.text\n"  # the directive in force, and the one in force where a function began
    in_function = section
    functions = {m.group(1) for m in _FUNC_TYPE_RE.finditer(text)}
    i = 0
    while i < len(lines):
        line = lines[i]
        if _SECTION_RE.match(line):
            section = line if line.endswith("\n") else line + "\n"
        elif line.split(":", 1)[0] in functions and line.split(":", 1)[0] + ":" == line.split("#", 1)[0].strip():
            in_function = section
        m = _FUNC_END_RE.match(line)
        size = _SIZE_END_RE.match(lines[i + 1]) if m and i + 1 < len(lines) else None
        if m and size and size.group(2) == m.group(1) and size.group(1) == size.group(3):
            label, fname = m.group(1), size.group(1)
            if used.get(label, 0) > 2:  # the label, the .size, and something else
                out.append(line)
            i += 2
            end = []
            if i < len(lines) and _CFI_END_RE.match(lines[i]):
                end.append(lines[i])
                i += 1
            # Jump tables clang writes after the function move into it, where gcc writes
            # them: a unit of the splitter brings its own table (its entries are its labels).
            table, j = _jump_tables(lines, i)
            if table:
                out += table + [in_function]
                i = j
            out += end + [f"\t.size\t{fname}, .-{fname}\n"]
            continue
        if not _ADDRSIG_RE.match(line):
            line = _cfi_numbers(line) if ".cfi_" in line else line
            # `.zero 16,3` (16 bytes of 3) is gas's `.space 16, 3`; gas's .zero takes a size only.
            out.append(_ZERO_FILL_RE.sub(r"\1.space\2", line) if ".zero" in line else line)
        i += 1
    return "".join(out)


# --------------------------------------------------------------------------- the generator


def compile_clang(context: Context, command: list[str], base_flags: list[str], variant: Variant, directory: Path,
                  *, timeout: float = 300) -> Variant:
    """Clang's assembly of the program under ``variant.flags`` (after ``base_flags``, the
    user's flags in clang's words), in gcc's shape, and its object for the clobber analysis
    (assembled by gcc's own assembler command). Sets ``variant.side`` or ``variant.error``."""
    program = context.program
    directory.mkdir(parents=True, exist_ok=True)
    asm = directory / f"{tag_for(variant.name)}.s"
    obj = asm.with_suffix(".o")
    source = program.source_arg or str(program.source)
    argv = [*command, "-target", "x86_64-linux-gnu", *base_flags, *variant.flags, "-g0", "-w",
            "-fno-addrsig", "-fno-ident", "-S", "-o", str(asm.resolve()), source]
    r = proc.run(argv, timeout=timeout, cwd=program.compile_cwd)
    if not r.ok:
        lines = [ln for ln in r.stderr.decode(errors="replace").splitlines() if "error" in ln.lower()]
        variant.error = "clang failed: " + ("; ".join(lines[:2])[:300] or f"exit {r.returncode}")
        return variant
    text = gcc_shaped(asm.read_text(encoding="utf-8", errors="surrogateescape"))
    asm.write_text(text, encoding="utf-8", errors="surrogateescape")
    r = proc.run([context.compiler, *program.asm_flags, "-c", "-x", "assembler", str(asm), "-o", str(obj)],
                 timeout=timeout)
    side = Side(text, obj=obj if r.ok else None)
    side.local_abi = side.callers_assume_abi = True
    variant.side = side
    return variant


class ClangGenerator(TransplantGenerator):
    """Offers every function of clang's compilations (see the module docstring)."""

    name = NAME
    trusted = False  # a compiler, but not gcc: its units face every rule an outsider's do
    abi_callers = True  # gcc's callers, not clang's, where only -fipa-ra needs them

    def __init__(self, setting: str = "", sets: list[tuple[str, list[str]]] | None = None):
        super().__init__()
        self.setting = setting
        self.sets = sets  # None: the built-in lists for the run's --isa
        self._missing_said = False
        self.command: list[str] | None = None  # the clang driver, once prepared
        self.base_flags: list[str] = []  # the user's flags in clang's words, gcc's defaults first
        self.why_not = ""  # why prepare found nothing to run
        self._isa = "flags"  # the run's --isa, once prepared

    def chosen(self, isa: str) -> list[tuple[str, list[str]]]:
        if self.sets is not None:
            return [(n, f) for n, f in self.sets if isa == "native" or "-march=native" not in f]
        return NATIVE + PORTABLE[:2] if isa == "native" else PORTABLE

    def _prepare(self, context: Context) -> None:
        self._setup_base(context.program)
        self.command, self.why_not = None, ""
        command, why = locate(self.setting)
        if command is None:
            self.base, self.variants, self.why_not = None, [], why
            if not self._missing_said:  # once per run, not once per source of a project
                self._missing_said = True
                self.notes.append(f"clang: {why}")
            return
        try:
            flags = clang_flags(context.program.flags, isa=context.isa)
        except Untranslatable as exc:
            self.base, self.variants, self.why_not = None, [], str(exc)
            self.notes.append(f"clang: {exc}")
            return
        flags = gcc_defaults(context.compiler, context.program.flags) + flags
        self.command, self.base_flags, self._isa = command, flags, context.isa
        variants = [Variant(n, list(f), shown=["clang", *f]) for n, f in self.chosen(context.isa)]
        directory = Path(context.workdir) / "clang"
        self.defer(context, variants, lambda v: compile_clang(context, command, flags, v, directory))


    def whole_program(self, program: ProgramView, compiler: str, directory: Path, *,
                      timeout: float = 300) -> tuple[Path | None, str]:
        """clang's whole program, the reference a report shows beside sgcc's result: the
        source under the first setting searched (``-O3``, with ``-march=native`` under
        ``--isa native``), linked by gcc with the user's flags. (path, "") or (None, why)."""
        from sgcc.gcc import args as gccargs

        if self.command is None:
            return None, self.why_not or "clang did not run"
        opts = self.chosen(self._isa)[0][1]
        directory.mkdir(parents=True, exist_ok=True)
        obj, out = directory / "clang-whole.o", directory / "clang-whole"
        source = program.source_arg or str(program.source)
        r = proc.run([*self.command, "-target", "x86_64-linux-gnu", *self.base_flags, *opts, "-w", "-c",
                      "-o", str(obj.resolve()), source], timeout=timeout, cwd=program.compile_cwd)
        if not r.ok:
            return None, "clang failed: " + r.stderr.decode(errors="replace").strip()[-300:]
        r = proc.run(gccargs.link_argv(compiler, program.flags, [str(obj)], str(out)), timeout=timeout)
        if not r.ok:
            return None, "gcc could not link clang's object: " + r.stderr.decode(errors="replace").strip()[-300:]
        return out, " ".join(["clang", *opts])


def from_config(cfg: Config) -> ClangGenerator:
    from sgcc.candidates.variants import parse_variants  # the same ';'-separated option sets

    text = cfg.clang_variants
    return ClangGenerator(cfg.clang, parse_variants(text) if text.strip() else None)
