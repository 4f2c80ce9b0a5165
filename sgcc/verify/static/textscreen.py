"""The text screen: candidate assembly refused or let through before any assembler runs.

The GNU assembler is a programming language with side effects: ``.incbin``/``.include`` read
arbitrary files, ``.fill``/``.skip``/``.rept`` can write gigabytes or loop for minutes,
``.macro``/``.if`` make the text mean something a line-by-line reader cannot see, sections
such as ``.init_array`` run code before ``main``. :func:`screen_text` accepts the subset of
GAS that gcc emits for functions and refuses everything else. Lines are read by the one
lexer, :mod:`sgcc.asm.lex`; where our reading of the text could differ from gas's (character
constants, ``/`` comments, backslashes, ``#NO_APP``), we refuse rather than try to match gas
exactly.

Pure Python: reads nothing but the text.
"""

from __future__ import annotations

import re

from sgcc.asm import lex
from sgcc.stages import Stage
from sgcc.verify.static.names import reserved
from sgcc.verify.verdict import Verdict

#: Bound on the candidate text itself (a function's assembly is kilobytes).
MAX_TEXT_CHARS = 8 << 20

#: An instruction emits at most 15 bytes; counted toward ``max_bytes_emitted``.
_MAX_INSN_BYTES = 15


class _Refusal(Exception):
    """Internal: the text is refused; the message is the one-line reason."""


# ---------------------------------------------------------------------------------------------
# Text screening


# Symbols, labels and assignments are read by the one lexer (gas's reading): a name the
# screen read otherwise than gas could be defined without the screen seeing it.
_IDENT = lex.SYMBOL
_DIRECTIVE = re.compile(r"\.([A-Za-z_][\w.]*)")
_SYMBOL = re.compile(rf"^{_IDENT}$")
_INT = re.compile(r"^(?:0[xX][0-9a-fA-F]+|0[bB][01]+|[0-9]+)$")
_BIGNUM = re.compile(r"(?:0[xX][0-9a-fA-F]{33,}|\d{40,})")
_TERM = rf"(?:{_IDENT}|\.|[0-9]+|0[xX][0-9a-fA-F]+)"
_SIMPLE_EXPR = re.compile(rf"^-?{_TERM}(?:[ \t]*[-+][ \t]*{_TERM})?$")
_EXPR_CHARS = re.compile(r"^[\w.$@+\-*()<>&|^~! \t]+$")
_FLOAT = re.compile(
    r"^[-+]?(?:0[dfer])?[-+]?(?:[0-9]+\.?[0-9]*(?:e[-+]?[0-9]+)?|\.[0-9]+(?:e[-+]?[0-9]+)?|inf|nan)$",
    re.I,
)
_OPERAND_CHARS = re.compile(r"^[\w.$%(),*+\-:@ \t{}<>~&|^!]*$")
_MNEMONIC = re.compile(r"^[a-z][a-z0-9]*$")
_LOC_ARGS = re.compile(r"^[\w. \t$-]*$")
_CFI_ARGS = re.compile(r"^[\w.$, \t+\-]*$")
_SECTION_NAME = re.compile(r"^[\w.$-]+$")
_BAD_CHAR = re.compile(r"[^\t\n\x20-\x7e]")

#: Instruction prefixes (and gas pseudo-prefixes) that may precede a mnemonic.
_PREFIXES = frozenset(
    "lock rep repe repz repne repnz notrack bnd data16 data32 addr16 addr32 rex rex64 "
    "rex.w xacquire xrelease cs ds es fs gs ss".split()
)

_DATA_SIZES = {
    "byte": 1, "2byte": 2, "short": 2, "value": 2, "word": 2, "hword": 2,
    "4byte": 4, "long": 4, "int": 4, "8byte": 8, "quad": 8, "octa": 16,
}
_FLOAT_SIZES = {"float": 4, "single": 4, "double": 8}

_CFI_DIRECTIVES = frozenset(
    "cfi_startproc cfi_endproc cfi_def_cfa cfi_def_cfa_offset cfi_def_cfa_register "
    "cfi_adjust_cfa_offset cfi_offset cfi_rel_offset cfi_val_offset cfi_register cfi_restore "
    "cfi_undefined cfi_same_value cfi_remember_state cfi_restore_state cfi_escape "
    "cfi_personality cfi_lsda cfi_sections cfi_return_column cfi_signal_frame cfi_label "
    "cfi_window_save".split()
)

#: Directives refused with a specific reason (anything not handled is refused generically).
_REFUSED_DIRECTIVES = {
    "incbin": "reads a file at assembly time",
    "include": "reads a file at assembly time",
    **dict.fromkeys(["macro", "endm", "purgem", "exitm", "altmacro", "noaltmacro"],
                    "macro expansion hides what actually gets assembled"),
    **dict.fromkeys(["irp", "irpc", "rept", "endr"], "repetition can expand the text without bound"),
    **dict.fromkeys(["err", "error", "warning", "print", "fail", "abort"],
                    "a function's code needs no assembler diagnostics"),
    "end": "it ends assembly early",
    "org": "it moves the location counter",
    "reloc": "it writes raw relocations",
    "symver": "symbol versions change which library symbol binds",
    "weakref": "it aliases another symbol",
    "comm": "it creates writable common storage",
    "lcomm": "it creates writable common storage",
    "tls_common": "it creates thread-local storage",
    "data": "it switches to a writable section",
    "bss": "it switches to a writable section",
    "intel_syntax": "only AT&T syntax is screened",
    **dict.fromkeys(["code16", "code16gcc", "code32", "code64"], "it switches the instruction mode"),
    "arch": "it changes the assembler's instruction set",
    "subsection": "subsections reorder code",
    "eqv": "it defines a lazily evaluated symbol",
    "nops": "gcc does not emit it",
}


def _statements(line: str, lineno: int) -> list[str]:
    """The statements of one physical line (raw, possibly empty), comment dropped.

    Refuses, at the first one met from the left, what gas could read otherwise than we do:
    outside strings the characters ``'`` (gas character constants: ``'#`` is *not* a
    comment), ``\\``, ``/`` (a comment at line start and a prefix separator elsewhere) and
    the backquote; ``#APP``/``#NO_APP`` comments; strings left open.
    """
    scanned = lex.scan(line)
    if scanned.hazard is not None:
        raise _Refusal(f"line {lineno}: character {scanned.hazard!r} is not accepted outside strings")
    if scanned.comment is not None and scanned.comment.strip().startswith(("APP", "NO_APP")):
        # #APP/#NO_APP switch gas's input scrubbing on and off (inline-asm regions), which
        # changes how it reads what follows.
        raise _Refusal(f"line {lineno}: #APP/#NO_APP markers (inline asm) are not accepted")
    if scanned.open_string == "escape":
        raise _Refusal(f"line {lineno}: backslash at the end of a string")
    if scanned.open_string is not None:
        raise _Refusal(f"line {lineno}: unterminated string")
    return scanned.parts


def _is_string(arg: str) -> bool:
    return len(arg) >= 2 and arg[0] == '"' and arg[-1] == '"' and '"' not in _unescape_quotes(arg[1:-1])


def _unescape_quotes(body: str) -> str:
    # Remove escaped characters so an embedded '"' left over means two strings glued together.
    return re.sub(r"\\.", "", body)


def _int(arg: str, what: str, lineno: int) -> int:
    arg = arg.strip()
    if not _INT.match(arg):
        raise _Refusal(f"line {lineno}: {what} must be a plain number, not {arg[:40]!r}")
    if arg[:2] in ("0x", "0X"):
        return int(arg, 16)
    if arg[:2] in ("0b", "0B"):
        return int(arg[2:], 2)
    if len(arg) > 1 and arg[0] == "0":  # gas reads a leading 0 as octal
        if not re.fullmatch(r"0[0-7]+", arg):
            raise _Refusal(f"line {lineno}: {arg!r} is not a valid number")
        return int(arg, 8)
    return int(arg)


class _TextScreen:
    """State of one :func:`screen_text` run."""

    def __init__(self, max_bytes: int, may_define: frozenset[str], writable_data: bool = False):
        self.max_bytes = max_bytes
        self.may_define = may_define
        self.writable_data = writable_data
        self.emitted = 0
        # In .bss (only with writable_data): zeroes there take memory, not assembler output.
        self.in_bss = False

    def emit(self, nbytes: int, lineno: int) -> None:
        self.emitted += nbytes
        if self.emitted > self.max_bytes:
            raise _Refusal(
                f"line {lineno}: the candidate would emit more than {self.max_bytes} bytes"
            )

    def define(self, name: str, lineno: int) -> None:
        if reserved(name) and name not in self.may_define:
            raise _Refusal(
                f"line {lineno}: defines {name!r}, a C-library or startup name, which would "
                "replace it for the whole program"
            )

    # -- statements -----------------------------------------------------------------------

    def statement(self, stmt: str, lineno: int) -> None:
        labels, s = lex.split_labels(stmt.strip())
        for label in labels:
            if not (label.isascii() and label.isdigit()):  # 1: is a local label, not a name
                self.define(label, lineno)
        s = s.strip()
        if not s:
            return
        bare = lex.blank_strings(s)  # the statement with string contents blanked out
        if _BIGNUM.search(bare):
            raise _Refusal(f"line {lineno}: number literal too long")
        m = lex.ASSIGN_RE.match(s)
        if m:
            self.assignment(m.group(1), s[m.end():], lineno)
            return
        if "=" in bare:
            raise _Refusal(f"line {lineno}: '=' is only accepted in a simple symbol assignment")
        if s.startswith("."):
            self.directive(s, lineno)
        else:
            self.instruction(s, lineno)

    def assignment(self, name: str, expr: str, lineno: int) -> None:
        if name == ".":
            # ". = . + N" is .org by another name: it emits N bytes.
            raise _Refusal(f"line {lineno}: assigning to the location counter is not accepted")
        if not _SIMPLE_EXPR.match(expr.strip()):
            raise _Refusal(
                f"line {lineno}: symbol {name!r} may only be set to a symbol, a number or a "
                "simple difference/offset"
            )
        self.define(name, lineno)

    def instruction(self, s: str, lineno: int) -> None:
        parts = s.split(None, 1)
        mnemonic = parts[0].lower()
        rest = parts[1] if len(parts) > 1 else ""
        # Prefixes may stand alone or in front of the mnemonic (lock xadd, rep stosq, {vex}).
        while (mnemonic in _PREFIXES or re.fullmatch(r"\{\w+\}", mnemonic)) and rest:
            parts = rest.split(None, 1)
            mnemonic = parts[0].lower()
            rest = parts[1] if len(parts) > 1 else ""
        lone_prefix = mnemonic in _PREFIXES or re.fullmatch(r"\{\w+\}", mnemonic)
        if not _MNEMONIC.match(mnemonic) and not lone_prefix:
            raise _Refusal(f"line {lineno}: {parts[0][:40]!r} is not an instruction or accepted directive")
        why = _text_forbidden(mnemonic)
        if why:
            raise _Refusal(f"line {lineno}: instruction {mnemonic} is not accepted ({why})")
        if not _OPERAND_CHARS.match(rest):
            raise _Refusal(f"line {lineno}: unexpected characters in the operands of {mnemonic}")
        self.emit(_MAX_INSN_BYTES, lineno)

    def directive(self, s: str, lineno: int) -> None:
        m = _DIRECTIVE.match(s)
        if not m:
            raise _Refusal(f"line {lineno}: malformed directive {s[:40]!r}")
        raw_name = m.group(1)
        # gas looks pseudo-ops up case-insensitively: .INCBIN is .incbin.
        name = raw_name.lower()
        rest = s[m.end():]
        if rest and not rest[0].isspace():
            raise _Refusal(f"line {lineno}: malformed directive .{raw_name}{rest[:20]}")
        rest = rest.strip()
        if name.startswith("if") or name in ("else", "elseif", "endif"):
            raise _Refusal(f"line {lineno}: conditional assembly (.{name}) is not accepted")
        if name.startswith(("dc", "ds")) and (name in ("dc", "ds", "dcb") or name[2:3] == "."):
            raise _Refusal(f"line {lineno}: .{name} is not accepted")
        why = _REFUSED_DIRECTIVES.get(name)
        if why and self.writable_data and name in _WRITABLE_DIRECTIVES:
            why = None  # a whole file's own data: the object check holds it to gcc's exactly
        if why:
            raise _Refusal(f"line {lineno}: .{name} is not accepted ({why})")
        handler = getattr(self, "d_" + name.replace(".", "_"), None)
        if name in _DATA_SIZES:
            self.d_data(_DATA_SIZES[name], rest, lineno)
        elif name in _FLOAT_SIZES:
            self.d_float(_FLOAT_SIZES[name], rest, lineno)
        elif name in _CFI_DIRECTIVES:
            if not _CFI_ARGS.match(rest):
                raise _Refusal(f"line {lineno}: unexpected characters in .{name}")
        elif handler is not None and name in _HANDLED:
            handler(name, rest, lineno)
        elif self.writable_data and name in _WRITABLE_DIRECTIVES:
            getattr(self, "w_" + name)(name, rest, lineno)
        else:
            raise _Refusal(f"line {lineno}: directive .{name} is not accepted")

    # -- directive handlers ---------------------------------------------------------------

    def d_data(self, size: int, rest: str, lineno: int) -> None:
        args = lex.split_args(rest)
        for a in args:
            if not a or not _EXPR_CHARS.match(a):
                raise _Refusal(f"line {lineno}: unexpected data expression {a[:40]!r}")
        self.emit(size * len(args), lineno)

    def d_float(self, size: int, rest: str, lineno: int) -> None:
        args = lex.split_args(rest)
        for a in args:
            if not _FLOAT.match(a):
                raise _Refusal(f"line {lineno}: unexpected floating-point literal {a[:40]!r}")
        self.emit(size * len(args), lineno)

    def d_ascii(self, name: str, rest: str, lineno: int) -> None:
        args = lex.split_args(rest)
        if not args:
            raise _Refusal(f"line {lineno}: .{name} needs a string")
        for a in args:
            if not _is_string(a):
                raise _Refusal(f"line {lineno}: .{name} takes only quoted strings")
            # The raw length bounds the decoded length (escapes only shrink).
            self.emit(len(a) - 2 + (name != "ascii"), lineno)

    d_asciz = d_string = d_ascii

    def d_uleb128(self, name: str, rest: str, lineno: int) -> None:
        args = lex.split_args(rest)
        for a in args:
            if not a or not _EXPR_CHARS.match(a):
                raise _Refusal(f"line {lineno}: unexpected expression in .{name}")
        self.emit(10 * len(args), lineno)

    d_sleb128 = d_uleb128

    def d_zero(self, name: str, rest: str, lineno: int) -> None:
        args = lex.split_args(rest)
        if name == "zero" and len(args) != 1 or not 1 <= len(args) <= 2:
            raise _Refusal(f"line {lineno}: .{name} takes a size and an optional fill byte")
        n = _int(args[0], f".{name} size", lineno)
        if len(args) == 2:
            _int(args[1], f".{name} fill value", lineno)
        if not self.in_bss:
            self.emit(n, lineno)

    d_skip = d_space = d_zero

    def d_fill(self, name: str, rest: str, lineno: int) -> None:
        args = lex.split_args(rest)
        if not 1 <= len(args) <= 3:
            raise _Refusal(f"line {lineno}: .fill takes repeat[, size[, value]]")
        repeat = _int(args[0], ".fill repeat count", lineno)
        size = _int(args[1], ".fill size", lineno) if len(args) > 1 and args[1] else 1
        if len(args) > 2 and args[2]:
            _int(args[2], ".fill value", lineno)
        if size > 8:
            raise _Refusal(f"line {lineno}: .fill size above 8")
        self.emit(repeat * size, lineno)

    def d_p2align(self, name: str, rest: str, lineno: int) -> None:
        args = lex.split_args(rest)
        if not 1 <= len(args) <= 3:
            raise _Refusal(f"line {lineno}: .{name} takes alignment[, fill[, max]]")
        n = _int(args[0], f".{name} alignment", lineno)
        for extra in args[1:]:
            if extra:
                _int(extra, f".{name} argument", lineno)
        if name == "p2align":
            if n > 12:
                raise _Refusal(f"line {lineno}: .p2align {n} is above the 4096-byte bound")
            pad = (1 << n) - 1
        else:
            if n > 4096 or n & (n - 1):
                raise _Refusal(f"line {lineno}: .{name} {n} is not a power of two up to 4096")
            pad = max(n - 1, 0)
        self.emit(pad, lineno)

    d_align = d_balign = d_p2align

    def d_section(self, name: str, rest: str, lineno: int) -> None:
        args = lex.split_args(rest)
        if not args:
            raise _Refusal(f"line {lineno}: .{name} needs a section name")
        _check_section(args, lineno, writable_data=self.writable_data)
        sname = args[0][1:-1] if _is_string(args[0]) else args[0]
        self.in_bss = self.writable_data and name == "section" and re.match(r"^\.bss(\.|$)", sname) is not None

    # -- writable data (whole-file candidates only: see screen_text) ------------------------

    def w_data(self, name: str, rest: str, lineno: int) -> None:
        if rest:
            raise _Refusal(f"line {lineno}: .{name} takes no arguments here")
        self.in_bss = name == "bss"

    w_bss = w_data

    def w_comm(self, name: str, rest: str, lineno: int) -> None:
        args = lex.split_args(rest)
        if not 2 <= len(args) <= 3 or not _SYMBOL.match(args[0]):
            raise _Refusal(f"line {lineno}: .{name} takes a symbol, a size and an optional alignment")
        self.define(args[0], lineno)
        _int(args[1], f".{name} size", lineno)  # storage, not assembler output
        if len(args) == 3:
            align = _int(args[2], f".{name} alignment", lineno)
            if align > 4096:
                raise _Refusal(f"line {lineno}: .{name} alignment above 4096")

    w_lcomm = w_comm

    d_pushsection = d_section

    def d_text(self, name: str, rest: str, lineno: int) -> None:
        if rest:
            raise _Refusal(f"line {lineno}: .{name} takes no arguments here")
        self.in_bss = False  # .previous/.popsection: unknown, so counted as emitting

    d_previous = d_popsection = d_text

    def d_att_syntax(self, name: str, rest: str, lineno: int) -> None:
        if rest not in ("", "prefix"):
            raise _Refusal(f"line {lineno}: only AT&T syntax with % register prefixes is accepted")

    def d_globl(self, name: str, rest: str, lineno: int) -> None:
        args = lex.split_args(rest)
        if not args or not all(_SYMBOL.match(a) for a in args):
            raise _Refusal(f"line {lineno}: .{name} takes symbol names")

    d_global = d_local = d_weak = d_hidden = d_protected = d_internal = d_globl

    def d_type(self, name: str, rest: str, lineno: int) -> None:
        args = lex.split_args(rest)
        if len(args) != 2 or not _SYMBOL.match(args[0]):
            raise _Refusal(f"line {lineno}: .type takes a symbol and a type")
        kind = args[1].strip().strip('"').lstrip("@%").lower()
        if kind in ("gnu_indirect_function", "stt_gnu_ifunc"):
            raise _Refusal(f"line {lineno}: indirect functions (ifunc) run a resolver at load time")
        if kind not in ("function", "object", "notype", "stt_func", "stt_object", "stt_notype"):
            raise _Refusal(f"line {lineno}: symbol type {args[1][:30]!r} is not accepted")

    def d_size(self, name: str, rest: str, lineno: int) -> None:
        args = lex.split_args(rest)
        if len(args) != 2 or not _SYMBOL.match(args[0]) or not _SIMPLE_EXPR.match(args[1]):
            raise _Refusal(f"line {lineno}: .size takes a symbol and a simple size expression")

    def d_set(self, name: str, rest: str, lineno: int) -> None:
        args = lex.split_args(rest)
        if len(args) != 2 or not _SYMBOL.match(args[0]):
            raise _Refusal(f"line {lineno}: .{name} takes a symbol and a value")
        self.assignment(args[0], args[1], lineno)

    d_equ = d_equiv = d_set

    def d_file(self, name: str, rest: str, lineno: int) -> None:
        for tok in re.findall(r'"(?:[^"\\]|\\.)*"|\S+', rest):
            if not (_is_string(tok) or _INT.match(tok) or tok == "md5"):
                raise _Refusal(f"line {lineno}: unexpected .file argument")

    def d_loc(self, name: str, rest: str, lineno: int) -> None:
        if not _LOC_ARGS.match(rest):
            raise _Refusal(f"line {lineno}: unexpected .loc argument")

    def d_ident(self, name: str, rest: str, lineno: int) -> None:
        if not _is_string(rest):
            raise _Refusal(f"line {lineno}: .ident takes one string")


_HANDLED = frozenset(
    "ascii asciz string uleb128 sleb128 zero skip space fill p2align align balign section "
    "pushsection text previous popsection att_syntax globl global local weak hidden protected "
    "internal type size set equ equiv file loc ident".split()
)

_SECTION_REASONS = [
    (re.compile(r"^\.(init_array|fini_array|preinit_array|ctors|dtors|init|fini)(\.|$)"),
     "runs code before or after main"),
    (re.compile(r"^\.interp$|^\.dynamic$|^\.got|^\.plt"), "belongs to the dynamic linker"),
    (re.compile(r"^\.(tdata|tbss)(\.|$)"), "thread-local storage is not accepted"),
    (re.compile(r"^\.(data|bss)(\.|$)"),
     "writable sections are not accepted: a function's code needs none, and writable data "
     "is where code pointers get built"),
    (re.compile(r"^\.(debug|zdebug)"), "debug sections come from gcc, not from candidates"),
]


#: Directives a whole file's writable data needs (``screen_text(writable_data=True)``).
_WRITABLE_DIRECTIVES = frozenset({"data", "bss", "comm", "lcomm"})


def _check_section(args: list[str], lineno: int, writable_data: bool = False) -> None:
    """Refuse any section other than code, read-only data and the two notes gcc emits (and,
    with ``writable_data``, gcc's writable data sections)."""
    raw = args[0]
    name = raw[1:-1] if _is_string(raw) else raw
    if not _SECTION_NAME.match(name):
        raise _Refusal(f"line {lineno}: section name {raw[:40]!r} is not accepted")
    flags = None
    if len(args) > 1:
        if not _is_string(args[1]):
            raise _Refusal(f"line {lineno}: section flags must be a quoted string")
        flags = args[1][1:-1]
    stype = None
    if len(args) > 2:
        stype = args[2].strip().strip('"').lstrip("@%")
    extra = args[3:]
    if name == ".text" or name.startswith(".text."):
        allowed_flags, allowed_types = set("ax"), {"progbits"}
    elif name == ".rodata" or name.startswith(".rodata."):
        allowed_flags, allowed_types = set("aMS"), {"progbits"}
    elif name == ".data.rel.ro" or name.startswith(".data.rel.ro."):
        # gcc's home for a function's constant tables of code/data addresses under PIE
        # (computed goto, pointer tables): writable only while the dynamic linker relocates
        # it, read-only (RELRO) when code runs. Never executable.
        allowed_flags, allowed_types = set("aw"), {"progbits"}
    elif name == ".note.GNU-stack":
        # Only the empty-flags form: an "x" here asks for an executable stack.
        allowed_flags, allowed_types = set(), {"progbits"}
    elif name == ".note.gnu.property":
        allowed_flags, allowed_types = set("a"), {"note"}
    elif writable_data and re.match(r"^\.debug_\w+$", name):
        # A whole file from a -g compilation: its own DWARF, never loaded (no "a" flag; the
        # object check holds the result to gcc's debug sections by name, type and flags).
        allowed_flags, allowed_types = set("MS"), {"progbits"}
    elif writable_data and re.match(r"^\.(data|bss)(\.|$)", name):
        # A whole file's own variables (never executable, never thread-local).
        allowed_flags, allowed_types = set("aw"), {"progbits", "nobits"}
    else:
        for pattern, why in _SECTION_REASONS:
            if pattern.search(name):
                raise _Refusal(f"line {lineno}: section {name} is not accepted ({why})")
        raise _Refusal(
            f"line {lineno}: section {name} is not accepted (only .text*, .rodata*, "
            ".data.rel.ro* and the .note.GNU-stack marker)"
        )
    if flags is not None and not set(flags) <= allowed_flags:
        bad = "".join(sorted(set(flags) - allowed_flags))
        raise _Refusal(f"line {lineno}: section {name} with flags {bad!r} is not accepted")
    if stype is not None and stype not in allowed_types:
        raise _Refusal(f"line {lineno}: section {name} of type {stype!r} is not accepted")
    if extra:
        if len(extra) == 1 and flags is not None and "M" in flags:
            if _int(extra[0], "section entry size", lineno) > 64:
                raise _Refusal(f"line {lineno}: section entry size above 64")
        else:
            raise _Refusal(f"line {lineno}: section groups and linked sections are not accepted")


#: Instructions refused in text (object screening catches every spelling, these catch the
#: obvious ones early with a clear message). AT&T size suffixes are folded below.
_TEXT_FORBIDDEN = {
    **dict.fromkeys(["syscall", "sysenter", "int", "int1", "icebp", "into", "int3"],
                    "system call or trap"),
    **dict.fromkeys(
        "sysexit sysret iret iretw iretd hlt in out ins insb insw insd outs outsb outsw "
        "outsd cli sti clts lgdt lidt lldt ltr lmsw sgdt sidt sldt str smsw invd wbinvd "
        "wbnoinvd invlpg invlpga invpcid invept invvpid rdmsr wrmsr rdpmc swapgs rsm monitor "
        "mwait monitorx mwaitx umonitor umwait tpause clac stac xsetbv xsaves xsaves64 xrstors "
        "xrstors64 getsec skinit stgi clgi vmcall vmlaunch vmresume vmxoff vmxon vmptrld "
        "vmptrst vmread vmwrite vmclear vmfunc vmload vmsave vmmcall vmrun encls enclu enclv "
        "pconfig lar lsl verr verw wrpkru rdfsbase rdgsbase wrfsbase wrgsbase wrssd wrssq "
        "wrussd wrussq rstorssp saveprevssp setssbsy clrssbsy".split(),
        "privileged, I/O or system-state instruction"),
    **dict.fromkeys("ljmp lcall lret retf lds les lfs lgs lss".split(),
                    "far transfer or segment load"),
    **dict.fromkeys("rdtsc rdtscp rdrand rdseed rdpid rdpru".split(),
                    "nondeterministic: tests could not vouch for it"),
}


def _text_forbidden(mnemonic: str) -> str | None:
    why = _TEXT_FORBIDDEN.get(mnemonic)
    if why is None and len(mnemonic) > 2 and mnemonic[-1] in "bwlq":
        why = _TEXT_FORBIDDEN.get(mnemonic[:-1])
    return why


def screen_text(
    text: str, *, max_bytes_emitted: int = 1 << 20, may_define: frozenset[str] = frozenset(),
    writable_data: bool = False,
) -> Verdict:
    """Screen candidate assembly text before any assembler runs (stage ``"screen"``).

    Pure: reads nothing but ``text``. Accepts the GAS subset gcc emits for functions (AT&T
    syntax; code, read-only data and CFI directives; bounded data and alignment) and refuses
    file-reading, looping, conditional and macro directives, sections other than ``.text*``/
    ``.rodata*``, indirect functions, definitions of C-library names (unless listed in
    ``may_define``, e.g. the baseline's own symbols), and system/privileged instructions.
    The bytes data, alignment and instructions could emit are bounded by ``max_bytes_emitted``.

    ``writable_data`` (a candidate for the whole translation unit, which must define the
    file's variables) also accepts ``.data``/``.bss`` sections and ``.comm``/``.lcomm``; the
    object check (:func:`sgcc.verify.static.objcheck.check_object`) then requires the writable
    sections to be gcc's exactly: the same bytes, symbols and relocation targets.
    """
    if len(text) > MAX_TEXT_CHARS:
        return Verdict(False, Stage.SCREEN, f"the candidate text is larger than {MAX_TEXT_CHARS} characters")
    screen = _TextScreen(max_bytes_emitted, frozenset(may_define), writable_data)
    try:
        bad = _BAD_CHAR.search(text)
        if bad:
            lineno = text.count("\n", 0, bad.start()) + 1
            raise _Refusal(
                f"line {lineno}: character {bad.group()!r} is not accepted "
                "(printable ASCII and tabs only)"
            )
        for lineno, line in enumerate(text.split("\n"), 1):
            for stmt in _statements(line, lineno):
                screen.statement(stmt, lineno)
    except _Refusal as refusal:
        return Verdict(False, Stage.SCREEN, str(refusal))
    return Verdict(True, Stage.SCREEN, "", f"at most {screen.emitted} bytes")
