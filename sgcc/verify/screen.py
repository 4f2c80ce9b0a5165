"""Screening hostile candidate assembly before and after the assembler runs.

Candidates come from a model (or files): sgcc treats them as hostile. Three gates, in order:

1. :func:`screen_text` -- pure Python, before ``as`` ever sees the text. The GNU assembler is a
   programming language with side effects: ``.incbin``/``.include`` read arbitrary files,
   ``.fill``/``.skip``/``.rept`` can write gigabytes or loop for minutes, ``.macro``/``.if``
   make the text mean something a line-by-line reader cannot see, sections such as
   ``.init_array`` run code before ``main``. The screen accepts the subset of GAS that gcc
   emits for functions and refuses everything else. Where our reading of the text could
   differ from gas's (character constants, ``/`` comments, backslashes, ``#NO_APP``), we
   refuse rather than try to match gas exactly.
2. :func:`assemble` -- ``gcc -c -x assembler`` (never the C preprocessor) under CPU, memory and
   output-size limits, with messages reduced to the candidate's own ``file:line: Error:``
   lines, so nothing read from another file reaches a model.
3. :func:`check_object` -- the assembled object against gcc's baseline object: no new
   external symbols (beyond a few memory/string routines), no new or changed sections (other
   than more code or read-only constants), no relocation types or targets the baseline
   lacks, no forbidden instructions however they were spelled (raw ``.byte`` included),
   every byte of executable sections decodable, and every instruction within the
   instruction set the target promises (:mod:`sgcc.verify.isa`).

What this does not do: make arbitrary machine code harmless. Code that runs inside a
process can reach the C library through any pointer it finds (a return address on the
stack, a GOT entry), so the real boundary for *running* candidates is the sandbox of
:func:`sgcc.proc.run` (rlimits, no network, scratch directory). The screen keeps assembly
time safe, refuses the direct routes (system calls, new imports, constructors,
privileged/I-O instructions, hidden bytes, jumps into the middle of instructions), and keeps
shipped code within the promised instruction set.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc.errors import SgccError

if TYPE_CHECKING:
    from sgcc.verify.isa import Target

STAGE_CHECK = "check"
STAGE_ASSEMBLE = "assemble"


@dataclass
class Verdict:
    """The outcome of one screening step.

    ``reason`` is one human-readable line; ``detail`` carries more (e.g. the assembler's
    sanitized error lines) for feedback to a model. Neither ever contains the content of a
    file the candidate tried to read.
    """

    ok: bool
    stage: str  # "check" or "assemble"
    reason: str = ""
    detail: str = ""

    def __bool__(self) -> bool:
        return self.ok


#: New external symbols a candidate may reference: memory and string routines gcc itself
#: emits calls to (block moves, ``__builtin_*`` expansions), their fortified ``_chk``
#: variants, and the stack-protector failure path. None of them can start a process, open a
#: file or talk to the network.
DEFAULT_ALLOWED_EXTERNALS = frozenset(
    {
        "memcpy", "memmove", "memset", "memcmp", "strlen", "strcmp", "strncmp", "strchr",
        "__memcpy_chk", "__memmove_chk", "__memset_chk", "__stack_chk_fail",
    }
)

#: Names a candidate may not define (labels, ``.set``, ``=``) unless the caller says so:
#: defining them interposes on the C library or the startup code for the whole program.
RESERVED_NAMES = frozenset(
    """
    system execve execv execvp execvpe execl execlp execle fexecve posix_spawn posix_spawnp
    fork vfork clone popen pclose open open64 openat creat read write pread pwrite readv
    writev close dup dup2 pipe socket connect bind listen accept accept4 send sendto sendmsg
    recv recvfrom recvmsg mmap mmap64 mprotect munmap mremap brk sbrk malloc calloc realloc
    free memalign posix_memalign aligned_alloc valloc exit _exit _Exit abort atexit
    at_quick_exit on_exit quick_exit printf fprintf sprintf snprintf vprintf vfprintf
    vsprintf vsnprintf dprintf puts fputs putchar fputc putc fwrite fread fopen fdopen
    freopen fclose fflush getchar getc fgetc fgets gets scanf fscanf sscanf ungetc setvbuf
    setbuf memcpy memmove memset memcmp bcmp strlen strcmp strncmp strchr strrchr strcpy
    strncpy strcat strncat strdup strstr dlopen dlsym dlclose signal sigaction raise kill
    ptrace syscall setuid setgid seteuid setegid setresuid setresgid chdir chroot chmod
    unlink rename getenv setenv putenv environ __environ stdin stdout stderr errno
    __errno_location __stack_chk_fail __stack_chk_guard __libc_start_main __libc_csu_init
    __libc_csu_fini __cxa_atexit __cxa_finalize __gmon_start__ __dso_handle _start _init
    _fini _GLOBAL_OFFSET_TABLE_ _DYNAMIC __ehdr_start __executable_start __bss_start _edata
    _end etext edata end __data_start data_start _IO_stdin_used __tls_get_addr
    """.split()
)
_RESERVED_PREFIXES = (
    "__libc_", "_dl_", "__init_array", "__fini_array", "__preinit_array", "_IO_", "__GI_",
    "_ITM_", "__TMC_", "__x86.", "__morestack", "__gcc_personality", "__sanitizer",
)

#: Bound on the candidate text itself (a function's assembly is kilobytes).
MAX_TEXT_CHARS = 8 << 20

#: An instruction emits at most 15 bytes; counted toward ``max_bytes_emitted``.
_MAX_INSN_BYTES = 15


class _Refusal(Exception):
    """Internal: the text is refused; the message is the one-line reason."""


# ---------------------------------------------------------------------------------------------
# Text screening


_IDENT = r"[A-Za-z_.$][\w.$]*"
_LABEL = re.compile(rf"({_IDENT}|\d+)[ \t]*:(?!:)")
_ASSIGN = re.compile(rf"({_IDENT})[ \t]*=(?!=)[ \t]*(.*)$")
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
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')

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


def _reserved(name: str) -> bool:
    return name in RESERVED_NAMES or name.startswith(_RESERVED_PREFIXES)


def _split_statements(line: str, lineno: int) -> list[str]:
    """Split one physical line into statements at ``;``, dropping a ``#`` comment.

    Double-quoted strings are kept intact (with backslash escapes). Characters where gas's
    reading could differ from ours are refused outside strings: ``'`` (gas character
    constants: ``'#`` is *not* a comment), ``\\``, ``/`` (a comment at line start and a prefix
    separator elsewhere), and the backquote.
    """
    out: list[str] = []
    cur: list[str] = []
    i, n = 0, len(line)
    in_str = False
    while i < n:
        c = line[i]
        if in_str:
            cur.append(c)
            if c == "\\":
                if i + 1 >= n:
                    raise _Refusal(f"line {lineno}: backslash at the end of a string")
                cur.append(line[i + 1])
                i += 2
                continue
            if c == '"':
                in_str = False
            i += 1
            continue
        if c == '"':
            in_str = True
            cur.append(c)
        elif c == "#":
            comment = line[i + 1:].strip()
            # #APP/#NO_APP switch gas's input scrubbing on and off (inline-asm regions), which
            # changes how it reads what follows.
            if comment.startswith(("APP", "NO_APP")):
                raise _Refusal(f"line {lineno}: #APP/#NO_APP markers (inline asm) are not accepted")
            break
        elif c == ";":
            out.append("".join(cur))
            cur = []
        elif c in "'\\/`":
            raise _Refusal(f"line {lineno}: character {c!r} is not accepted outside strings")
        else:
            cur.append(c)
        i += 1
    if in_str:
        raise _Refusal(f"line {lineno}: unterminated string")
    out.append("".join(cur))
    return out


def _split_args(text: str) -> list[str]:
    """Split directive arguments at top-level commas (strings and parentheses respected)."""
    args, cur, depth, in_str, i = [], [], 0, False, 0
    while i < len(text):
        c = text[i]
        cur.append(c)
        if in_str:
            if c == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            cur.pop()
            args.append("".join(cur).strip())
            cur = []
        i += 1
    last = "".join(cur).strip()
    if args or last:
        args.append(last)
    return args


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

    def __init__(self, max_bytes: int, may_define: frozenset[str]):
        self.max_bytes = max_bytes
        self.may_define = may_define
        self.emitted = 0

    def emit(self, nbytes: int, lineno: int) -> None:
        self.emitted += nbytes
        if self.emitted > self.max_bytes:
            raise _Refusal(
                f"line {lineno}: the candidate would emit more than {self.max_bytes} bytes"
            )

    def define(self, name: str, lineno: int) -> None:
        if _reserved(name) and name not in self.may_define:
            raise _Refusal(
                f"line {lineno}: defines {name!r}, a C-library or startup name, which would "
                "replace it for the whole program"
            )

    # -- statements -----------------------------------------------------------------------

    def statement(self, stmt: str, lineno: int) -> None:
        s = stmt.strip()
        while s:
            m = _LABEL.match(s)
            if not m:
                break
            if not m.group(1).isdigit():
                self.define(m.group(1), lineno)
            s = s[m.end():].strip()
        if not s:
            return
        bare = _STRING.sub('""', s)  # the statement with string contents blanked out
        if _BIGNUM.search(bare):
            raise _Refusal(f"line {lineno}: number literal too long")
        m = _ASSIGN.match(s)
        if m:
            self.assignment(m.group(1), m.group(2), lineno)
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
        else:
            raise _Refusal(f"line {lineno}: directive .{name} is not accepted")

    # -- directive handlers ---------------------------------------------------------------

    def d_data(self, size: int, rest: str, lineno: int) -> None:
        args = _split_args(rest)
        for a in args:
            if not a or not _EXPR_CHARS.match(a):
                raise _Refusal(f"line {lineno}: unexpected data expression {a[:40]!r}")
        self.emit(size * len(args), lineno)

    def d_float(self, size: int, rest: str, lineno: int) -> None:
        args = _split_args(rest)
        for a in args:
            if not _FLOAT.match(a):
                raise _Refusal(f"line {lineno}: unexpected floating-point literal {a[:40]!r}")
        self.emit(size * len(args), lineno)

    def d_ascii(self, name: str, rest: str, lineno: int) -> None:
        args = _split_args(rest)
        if not args:
            raise _Refusal(f"line {lineno}: .{name} needs a string")
        for a in args:
            if not _is_string(a):
                raise _Refusal(f"line {lineno}: .{name} takes only quoted strings")
            # The raw length bounds the decoded length (escapes only shrink).
            self.emit(len(a) - 2 + (name != "ascii"), lineno)

    d_asciz = d_string = d_ascii

    def d_uleb128(self, name: str, rest: str, lineno: int) -> None:
        args = _split_args(rest)
        for a in args:
            if not a or not _EXPR_CHARS.match(a):
                raise _Refusal(f"line {lineno}: unexpected expression in .{name}")
        self.emit(10 * len(args), lineno)

    d_sleb128 = d_uleb128

    def d_zero(self, name: str, rest: str, lineno: int) -> None:
        args = _split_args(rest)
        if name == "zero" and len(args) != 1 or not 1 <= len(args) <= 2:
            raise _Refusal(f"line {lineno}: .{name} takes a size and an optional fill byte")
        n = _int(args[0], f".{name} size", lineno)
        if len(args) == 2:
            _int(args[1], f".{name} fill value", lineno)
        self.emit(n, lineno)

    d_skip = d_space = d_zero

    def d_fill(self, name: str, rest: str, lineno: int) -> None:
        args = _split_args(rest)
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
        args = _split_args(rest)
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
        args = _split_args(rest)
        if not args:
            raise _Refusal(f"line {lineno}: .{name} needs a section name")
        _check_section(args, lineno)

    d_pushsection = d_section

    def d_text(self, name: str, rest: str, lineno: int) -> None:
        if rest:
            raise _Refusal(f"line {lineno}: .{name} takes no arguments here")

    d_previous = d_popsection = d_text

    def d_att_syntax(self, name: str, rest: str, lineno: int) -> None:
        if rest not in ("", "prefix"):
            raise _Refusal(f"line {lineno}: only AT&T syntax with % register prefixes is accepted")

    def d_globl(self, name: str, rest: str, lineno: int) -> None:
        args = _split_args(rest)
        if not args or not all(_SYMBOL.match(a) for a in args):
            raise _Refusal(f"line {lineno}: .{name} takes symbol names")

    d_global = d_local = d_weak = d_hidden = d_protected = d_internal = d_globl

    def d_type(self, name: str, rest: str, lineno: int) -> None:
        args = _split_args(rest)
        if len(args) != 2 or not _SYMBOL.match(args[0]):
            raise _Refusal(f"line {lineno}: .type takes a symbol and a type")
        kind = args[1].strip().strip('"').lstrip("@%").lower()
        if kind in ("gnu_indirect_function", "stt_gnu_ifunc"):
            raise _Refusal(f"line {lineno}: indirect functions (ifunc) run a resolver at load time")
        if kind not in ("function", "object", "notype", "stt_func", "stt_object", "stt_notype"):
            raise _Refusal(f"line {lineno}: symbol type {args[1][:30]!r} is not accepted")

    def d_size(self, name: str, rest: str, lineno: int) -> None:
        args = _split_args(rest)
        if len(args) != 2 or not _SYMBOL.match(args[0]) or not _SIMPLE_EXPR.match(args[1]):
            raise _Refusal(f"line {lineno}: .size takes a symbol and a simple size expression")

    def d_set(self, name: str, rest: str, lineno: int) -> None:
        args = _split_args(rest)
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


def _check_section(args: list[str], lineno: int) -> None:
    """Refuse any section other than code, read-only data and the two notes gcc emits."""
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
    text: str, *, max_bytes_emitted: int = 1 << 20, may_define: frozenset[str] = frozenset()
) -> Verdict:
    """Screen candidate assembly text before any assembler runs (stage ``"check"``).

    Pure: reads nothing but ``text``. Accepts the GAS subset gcc emits for functions (AT&T
    syntax; code, read-only data and CFI directives; bounded data and alignment) and refuses
    file-reading, looping, conditional and macro directives, sections other than ``.text*``/
    ``.rodata*``, indirect functions, definitions of C-library names (unless listed in
    ``may_define``, e.g. the baseline's own symbols), and system/privileged instructions.
    The bytes data, alignment and instructions could emit are bounded by ``max_bytes_emitted``.
    """
    if len(text) > MAX_TEXT_CHARS:
        return Verdict(False, STAGE_CHECK, f"the candidate text is larger than {MAX_TEXT_CHARS} characters")
    screen = _TextScreen(max_bytes_emitted, frozenset(may_define))
    try:
        bad = _BAD_CHAR.search(text)
        if bad:
            lineno = text.count("\n", 0, bad.start()) + 1
            raise _Refusal(
                f"line {lineno}: character {bad.group()!r} is not accepted "
                "(printable ASCII and tabs only)"
            )
        for lineno, line in enumerate(text.split("\n"), 1):
            for stmt in _split_statements(line, lineno):
                screen.statement(stmt, lineno)
    except _Refusal as refusal:
        return Verdict(False, STAGE_CHECK, str(refusal))
    return Verdict(True, STAGE_CHECK, "", f"at most {screen.emitted} bytes")


# ---------------------------------------------------------------------------------------------
# Assembling


#: Limits for the assembler: gas needs tens of megabytes for a function; the bounds stop a
#: runaway that got past the text screen (or a bug) from eating the machine.
ASSEMBLER_LIMITS_CPU = 30
ASSEMBLER_LIMITS_MEMORY = 2 << 30
ASSEMBLER_LIMITS_FILE = 64 << 20
_MAX_MESSAGE_LINES = 20
_MAX_MESSAGE_CHARS = 240

#: Driver flags passed on to ``gcc -c -x assembler``: the ones that shape the object (mode,
#: debug info, prefix maps) and a few safe ``-Wa,`` options. Everything else is dropped --
#: ``-x assembler-with-cpp``, ``-D``, ``-I``, ``-include``, ``@file`` or ``-Wa,-a=listing`` must
#: never reach the assembler of a hostile candidate.
_AS_FLAG = re.compile(
    r"^(?:-m64|-march=[\w.+-]+|-mtune=[\w.+-]+|-mno-[\w.-]+|-m[a-z0-9.]+|-g[\w-]*|-gdwarf-\d"
    r"|-fdebug-prefix-map=[^,]*|-ffile-prefix-map=[^,]*|-pipe"
    r"|-Wa,(?:--noexecstack|--execstack|-mrelax-relocations=(?:yes|no)|--gdwarf-\d|-O[0-2]?"
    r"|-mx86-used-note=(?:yes|no)|--generate-missing-build-notes=(?:yes|no)))$"
)
_AS_MESSAGE = re.compile(r"^(.*?):(\d+): (Error|Warning|Fatal error|Assembler messages): ?(.*)$")


def _assembler_flags(flags) -> list[str]:
    out = []
    for f in flags or ():
        if isinstance(f, str) and _AS_FLAG.match(f) and f not in ("-m32", "-mx32", "-m16"):
            out.append(f)
    return out


def _sanitize(stderr: bytes, asm_path: Path) -> tuple[list[str], int]:
    """Keep only ``<candidate>:<line>: Error|Warning: message`` lines, shortened.

    Messages about any other file (an ``.include``d file, a ``# 1 "file"`` line marker) are
    dropped whole: they could quote that file's text. Returns the kept lines and how many
    file:line messages were withheld.
    """
    names = {str(asm_path), os.fspath(asm_path.name), os.path.abspath(asm_path)}
    keep, withheld = [], 0
    for raw in stderr.decode("utf-8", errors="replace").splitlines():
        m = _AS_MESSAGE.match(raw)
        if not m or m.group(3) == "Assembler messages":
            continue
        if m.group(1) not in names:
            withheld += 1
            continue
        msg = "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in m.group(4))
        line = f"{asm_path.name}:{m.group(2)}: {m.group(3)}: {msg}"
        keep.append(line[:_MAX_MESSAGE_CHARS])
        if len(keep) >= _MAX_MESSAGE_LINES:
            break
    return keep, withheld


def assemble(asm_path: Path, obj_path: Path, *, gcc: str = "gcc", flags=(), timeout: float = 60) -> Verdict:
    """Assemble a screened candidate: ``gcc <flags> -c -x assembler asm -o obj`` (stage ``"assemble"``).

    ``-x assembler`` keeps the C preprocessor out. The run has CPU, address-space and
    output-size limits and a wall-clock timeout, a minimal environment and the object's
    directory as working directory. The verdict's ``detail`` holds only the candidate's own
    ``file:line: Error: ...`` lines (capped), never text from other files.
    """
    from sgcc import proc

    asm_path, obj_path = Path(asm_path), Path(obj_path)
    argv = [gcc, *_assembler_flags(flags), "-c", "-x", "assembler", str(asm_path), "-o", str(obj_path)]
    # A minimal environment: no GCC_EXEC_PREFIX/COMPILER_PATH/DEPENDENCIES_OUTPUT steering the
    # driver, and C messages so the sanitizer's pattern matches.
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "TMPDIR", "HOME")}
    env["LC_ALL"] = "C"
    try:
        obj_path.unlink()
    except FileNotFoundError:
        pass
    result = proc.run(
        argv,
        env=env,
        cwd=str(obj_path.parent),
        timeout=timeout,
        capture_limit=1 << 20,
        limits=proc.Limits(
            cpu=ASSEMBLER_LIMITS_CPU,
            address_space=ASSEMBLER_LIMITS_MEMORY,
            file_size=ASSEMBLER_LIMITS_FILE,
            open_files=256,
        ),
    )
    messages, withheld = _sanitize(result.stderr, asm_path)
    detail = "\n".join(messages)
    if result.ok and obj_path.is_file():
        return Verdict(True, STAGE_ASSEMBLE, "", detail)
    errors = [m for m in messages if ": Error: " in m or ": Fatal error: " in m]
    if result.timed_out or result.signal is not None or result.truncated:
        reason = f"the assembler was stopped ({result.describe()})"
    elif errors:
        reason = errors[0]
    else:
        reason = f"the assembler failed ({result.describe()})"
    if withheld:
        # Said, not shown: they concern other files and could quote them.
        reason += f"; {withheld} message(s) about other files withheld"
    return Verdict(False, STAGE_ASSEMBLE, reason, detail)


# ---------------------------------------------------------------------------------------------
# Object screening


_SHF_WRITE, _SHF_ALLOC, _SHF_EXECINSTR = 0x1, 0x2, 0x4
_SHF_GROUP, _SHF_TLS, _SHF_LINK_ORDER = 0x200, 0x400, 0x80
_SHF_COMPARED = _SHF_WRITE | _SHF_ALLOC | _SHF_EXECINSTR | _SHF_GROUP | _SHF_TLS | _SHF_LINK_ORDER

_R_NAMES = {
    0: "R_X86_64_NONE", 1: "R_X86_64_64", 2: "R_X86_64_PC32", 3: "R_X86_64_GOT32",
    4: "R_X86_64_PLT32", 9: "R_X86_64_GOTPCREL", 10: "R_X86_64_32", 11: "R_X86_64_32S",
    19: "R_X86_64_TLSGD", 20: "R_X86_64_TLSLD", 21: "R_X86_64_DTPOFF32",
    22: "R_X86_64_GOTTPOFF", 23: "R_X86_64_TPOFF32", 24: "R_X86_64_PC64",
    25: "R_X86_64_GOTOFF64", 26: "R_X86_64_GOTPC32", 37: "R_X86_64_IRELATIVE",
    41: "R_X86_64_GOTPCRELX", 42: "R_X86_64_REX_GOTPCRELX",
}
_R_64, _R_PC32, _R_PLT32, _R_32, _R_32S, _R_PC64 = 1, 2, 4, 10, 11, 24
#: Relocation types ordinary code uses to reach its own data, functions and imports.
_CODE_RELOCS = frozenset({1, 2, 4, 9, 10, 11, 24, 41, 42})
_PC_RELOCS = frozenset({_R_PC32, _R_PLT32, _R_PC64})
_ABS_RELOCS = frozenset({_R_64, _R_32, _R_32S})

#: Sections whose *content* runs code around main: if the baseline has them, the candidate's
#: must be identical (same size and relocations).
_STARTUP_SECTION = re.compile(r"^\.(init_array|fini_array|preinit_array|ctors|dtors|init|fini)(\.|$)")

#: Byte sequences that are system calls wherever execution lands: checked at every offset of
#: executable sections, not just at instruction boundaries, so a jump into the middle of an
#: instruction cannot reach one the linear disassembly did not see.
_GADGETS = {b"\x0f\x05": "syscall", b"\x0f\x34": "sysenter", b"\xcd\x80": "int 0x80"}

_FORBIDDEN_NAMES = {
    **dict.fromkeys(["syscall", "sysenter", "int", "int1", "int3", "into"], "system call or trap"),
    **dict.fromkeys(
        "sysexit sysexitq sysret sysretq iret iretd iretq hlt in out insb insw insd outsb outsw "
        "outsd cli sti clts lgdt lidt lldt ltr lmsw sgdt sidt sldt str smsw invd wbinvd wbnoinvd "
        "invlpg invlpga invpcid invept invvpid rdmsr wrmsr rdpmc swapgs rsm monitor mwait "
        "monitorx mwaitx umonitor umwait tpause clac stac xsetbv xsaves xsaves64 xrstors "
        "xrstors64 getsec skinit stgi clgi encls enclu enclv pconfig lar lsl verr verw wrpkru "
        "rdfsbase rdgsbase wrfsbase wrgsbase wrssd wrssq wrussd wrussq rstorssp saveprevssp "
        "setssbsy clrssbsy incsspd incsspq ptwrite xcryptcbc xcryptcfb xcryptctr xcryptecb "
        "xcryptofb xsha1 xsha256 xstore montmul".split(),
        "privileged, I/O or system-state instruction"),
    **dict.fromkeys("ljmp lcall retf retfq lds les lfs lgs lss".split(), "far transfer or segment load"),
    **dict.fromkeys("rdtsc rdtscp rdrand rdseed rdpid rdpru".split(),
                    "nondeterministic: tests could not vouch for it"),
}
_FORBIDDEN_GROUPS = {"INT": "system call or trap", "IRET": "privileged, I/O or system-state instruction",
                     "PRIVILEGE": "privileged, I/O or system-state instruction",
                     "VM": "privileged, I/O or system-state instruction",
                     "SGX": "privileged, I/O or system-state instruction"}
_SEGMENT_REGS = frozenset({"cs", "ds", "es", "fs", "gs", "ss"})


def _forbidden(insn) -> tuple[str, str] | None:
    """(key, why) if a decoded instruction is not accepted; the key is what a baseline
    function must also contain for the candidate's version of it to be allowed."""
    from sgcc.verify import isa
    from capstone import x86_const

    name = insn.insn_name() or insn.mnemonic
    if name in _FORBIDDEN_NAMES:
        return name, _FORBIDDEN_NAMES[name]
    for op in insn.operands:
        if op.type == x86_const.X86_OP_REG and insn.reg_name(op.reg) in _SEGMENT_REGS:
            return "segment-register", "reads or writes a segment register"
    names = isa._group_names()
    for g in insn.groups:
        why = _FORBIDDEN_GROUPS.get(names.get(g, ""))
        if why:
            return name, why
    if name.startswith("vm") and isa._encoding(insn) == "legacy":  # not vmovdqu & co
        return name, "virtualization instruction"
    return None


@dataclass
class _Obj:
    """What check_object needs from one ELF object."""

    path: Path
    elf: object
    sections: list  # pyelftools Section objects, by index
    symbols: list  # pyelftools Symbol objects, by index (index 0 included)

    @classmethod
    def load(cls, path: Path) -> "_Obj":
        from sgcc.verify import isa
        from elftools.elf.sections import SymbolTableSection

        elf, _raw = isa._open_elf(path)
        try:
            if elf["e_type"] != "ET_REL":
                raise SgccError(f"{Path(path).name} is not a relocatable object")
            sections = list(elf.iter_sections())
            symbols = []
            for sec in sections:
                if isinstance(sec, SymbolTableSection) and sec["sh_type"] == "SHT_SYMTAB":
                    symbols = list(sec.iter_symbols())
        except SgccError:
            raise
        except Exception as exc:  # pyelftools raises assorted errors on corrupt input
            raise SgccError(f"{Path(path).name} is not a valid ELF object", cause=exc) from exc
        return cls(Path(path), elf, sections, symbols)

    def section_key(self, sec) -> tuple:
        return (sec.name, sec["sh_type"], sec["sh_flags"] & _SHF_COMPARED)

    def content_sections(self):
        for sec in self.sections:
            if sec["sh_type"] not in ("SHT_NULL", "SHT_SYMTAB", "SHT_STRTAB", "SHT_RELA", "SHT_REL"):
                yield sec

    def relocations(self):
        """(relocated section's index, section, [(offset, type, symbol index, addend)])."""
        from elftools.elf.relocation import RelocationSection

        for sec in self.sections:
            if isinstance(sec, RelocationSection):
                target = sec["sh_info"]
                if not 0 < target < len(self.sections):
                    raise SgccError(f"{self.path.name}: relocation section for a missing section")
                relocs = [
                    (r["r_offset"], r["r_info_type"], r["r_info_sym"], r["r_addend"] if sec.is_RELA() else 0)
                    for r in sec.iter_relocations()
                ]
                yield target, self.sections[target], relocs

    def symbol_info(self, sym) -> tuple[str, str, str, object]:
        return sym.name, sym["st_info"]["bind"], sym["st_info"]["type"], sym["st_shndx"]


#: Undefined symbols the assembler itself creates: gas references the GOT's symbol for any
#: ``@GOTPCREL`` operand. It names the linker's table, not a new capability.
_ASSEMBLER_UNDEFINED = frozenset({"_GLOBAL_OFFSET_TABLE_"})


def _ok_undefined(base: _Obj, allowed_new: frozenset[str]) -> set[str]:
    names = set(allowed_new) | _ASSEMBLER_UNDEFINED
    for sym in base.symbols:
        name, bind, _type, shndx = base.symbol_info(sym)
        if not name:
            continue
        if shndx == "SHN_UNDEF" or bind in ("STB_GLOBAL", "STB_WEAK", "STB_LOOS"):
            names.add(name)
        elif not _reserved(name):
            names.add(name)  # the baseline's own local functions and data
    return names


def _where(sec_name: str, offset: int, fn: str | None) -> str:
    return f"{sec_name}+{offset:#x}" + (f" in {fn}" if fn else "")


def check_object(
    candidate_obj: Path,
    baseline_obj: Path,
    *,
    isa: Target,
    allowed_new_externals: frozenset[str] = DEFAULT_ALLOWED_EXTERNALS,
) -> Verdict:
    """Screen an assembled candidate against gcc's object (stage ``"check"``).

    Refuses: new undefined symbols (except ``allowed_new_externals``), new global
    definitions or changed bindings, indirect functions, sections the baseline lacks (by
    name, type and flags; only new ``.text*`` code and ``.rodata*`` read-only data sections
    are let through) or a missing ``.note.GNU-stack``, changed constructor/destructor
    tables, relocation types the baseline does not use beyond ordinary code ones, relocations
    against absolute addresses, executable bytes that do not decode, forbidden instructions
    (system calls, privileged, I/O, far transfers, segment registers, nondeterministic ones)
    unless the same baseline function has them, ``syscall`` bytes hidden inside other
    instructions, branches and references into the middle of an instruction or out of their
    section, and instructions the ``isa`` target (an :class:`sgcc.verify.isa.Target`) does not promise.
    ``reason`` names the first problem, ``detail`` lists up to 20.
    """
    from sgcc.verify import isa as isa_mod

    try:
        cand = _Obj.load(Path(candidate_obj))
        base = _Obj.load(Path(baseline_obj))
        problems = _object_problems(cand, base, isa, frozenset(allowed_new_externals), isa_mod)
    except SgccError as exc:
        return Verdict(False, STAGE_CHECK, exc.message)
    except Exception as exc:  # a malformed object that pyelftools/capstone choke on is refused
        return Verdict(False, STAGE_CHECK, f"the object could not be analysed ({type(exc).__name__})")
    if problems:
        return Verdict(False, STAGE_CHECK, problems[0], "\n".join(problems[:20]))
    return Verdict(True, STAGE_CHECK)


def _object_problems(cand: _Obj, base: _Obj, target, allowed_new: frozenset[str], isa_mod) -> list[str]:
    problems: list[str] = []

    # -- sections -----------------------------------------------------------------------------
    base_keys = {base.section_key(s) for s in base.content_sections()}
    base_by_name = {s.name: s for s in base.content_sections()}
    for sec in cand.content_sections():
        if cand.section_key(sec) not in base_keys and not _plain_new_section(sec, base_by_name):
            if sec.name in base_by_name:
                problems.append(f"section {sec.name} differs from gcc's (type or flags)")
            else:
                problems.append(f"adds section {sec.name}, which gcc's object does not have")
    cand_names = {s.name for s in cand.content_sections()}
    if ".note.GNU-stack" in base_by_name and ".note.GNU-stack" not in cand_names:
        problems.append("lacks the .note.GNU-stack marker (the program would get an executable stack)")

    # -- symbols ------------------------------------------------------------------------------
    ok_undef = _ok_undefined(base, allowed_new)
    base_globals = {}
    for sym in base.symbols:
        name, bind, stype, shndx = base.symbol_info(sym)
        if name and shndx != "SHN_UNDEF" and bind != "STB_LOCAL":
            base_globals[name] = (bind, stype)
    for sym in cand.symbols:
        name, bind, stype, shndx = cand.symbol_info(sym)
        if not name:
            continue
        if shndx == "SHN_UNDEF":
            if name not in ok_undef:
                problems.append(f"references new external symbol {name!r}")
            continue
        if stype in ("STT_LOOS", "STT_GNU_IFUNC") and base_globals.get(name, (None, None))[1] != stype:
            problems.append(f"makes {name!r} an indirect function (ifunc)")
        if bind == "STB_LOCAL":
            continue
        if name not in base_globals:
            problems.append(f"defines new global symbol {name!r}")
        elif base_globals[name][0] != bind:
            problems.append(f"changes the binding of {name!r} ({base_globals[name][0]} -> {bind})")

    # -- startup tables must be gcc's exactly ----------------------------------------------------
    base_relocs = {t.name: r for _, t, r in base.relocations()}
    cand_relocs = {t.name: r for _, t, r in cand.relocations()}
    for sec in cand.content_sections():
        if _STARTUP_SECTION.match(sec.name):
            b = base_by_name.get(sec.name)
            if b is None:
                continue  # already reported as new
            same_targets = _reloc_sig(cand, cand_relocs.get(sec.name, [])) == _reloc_sig(
                base, base_relocs.get(sec.name, [])
            )
            if sec["sh_size"] != b["sh_size"] or not same_targets:
                problems.append(f"changes the startup table {sec.name}")

    # -- relocations ----------------------------------------------------------------------------
    base_types = {r[1] for _, _, rel in base.relocations() for r in rel}
    code_c = isa_mod.decode_object(cand.path, cache=False)
    code_b = isa_mod.decode_object(base.path)
    decoded = {d.index: d for d in code_c.sections}
    starts = {d.index: set(d.addrs) for d in code_c.sections}
    reloc_sites: dict[int, list[int]] = {}
    for tidx, tsec, relocs in cand.relocations():
        for offset, rtype, symidx, addend in relocs:
            reloc_sites.setdefault(tidx, []).append(offset)
            tname = _R_NAMES.get(rtype, f"type {rtype}")
            if rtype not in _CODE_RELOCS and rtype not in base_types:
                problems.append(
                    f"uses relocation {tname} at {tsec.name}+{offset:#x}, which gcc's object does not"
                )
                continue
            if symidx == 0 or symidx >= len(cand.symbols):
                problems.append(f"relocation at {tsec.name}+{offset:#x} has no symbol (an absolute address)")
                continue
            sym = cand.symbols[symidx]
            shndx = sym["st_shndx"]
            if shndx == "SHN_ABS":
                problems.append(f"relocation at {tsec.name}+{offset:#x} refers to an absolute address")
                continue
            if not isinstance(shndx, int) or shndx not in decoded:
                continue
            # A reference into code: it must land on an instruction the disassembly saw.
            if not tsec["sh_flags"] & _SHF_ALLOC:
                continue  # debug info points one past a function's end; it never runs
            value = sym["st_value"] + addend
            if rtype in _ABS_RELOCS:
                dest = value
            elif rtype in _PC_RELOCS and tidx in decoded:
                insn = _insn_covering(decoded[tidx], offset)
                if insn is None:
                    continue
                dest = value + (insn.address + insn.size - offset)
            else:
                continue
            if dest not in starts[shndx]:
                problems.append(
                    f"refers to {decoded[shndx].name}+{dest:#x} from {tsec.name}+{offset:#x}, "
                    "which is not the start of an instruction"
                )

    # -- code ---------------------------------------------------------------------------------
    base_forbidden: dict[str | None, set[str]] = {}
    for sec in code_b.sections:
        for insn in sec.insns:
            f = _forbidden(insn)
            if f:
                base_forbidden.setdefault(code_b.function_at(sec.index, insn.address), set()).add(f[0])
    for sec in code_c.sections:
        if sec.undecodable is not None:
            problems.append(
                f"bytes at {sec.name}+{sec.undecodable:#x} do not decode as instructions "
                "(data or hidden bytes in code)"
            )
        sites = sorted(reloc_sites.get(sec.index, []))
        for insn in sec.insns:
            fn = code_c.function_at(sec.index, insn.address)
            f = _forbidden(insn)
            if f and f[0] not in base_forbidden.get(fn, set()):
                name = insn.insn_name() or insn.mnemonic
                problems.append(f"uses {name} at {_where(sec.name, insn.address, fn)}: {f[1]}")
            dest = _unrelocated_target(insn, sites)
            if dest is not None and dest not in starts[sec.index]:
                if 0 <= dest < sec.size:
                    problems.append(
                        f"{insn.mnemonic} at {_where(sec.name, insn.address, fn)} targets "
                        f"{sec.name}+{dest:#x}, the middle of an instruction"
                    )
                else:
                    problems.append(
                        f"{insn.mnemonic} at {_where(sec.name, insn.address, fn)} reaches outside "
                        f"{sec.name} without a relocation"
                    )
    for pattern, what in _GADGETS.items():
        n_c = sum(d.data.count(pattern) for d in code_c.sections)
        n_b = sum(d.data.count(pattern) for d in code_b.sections)
        if n_c > n_b:
            problems.append(f"executable bytes contain the encoding of {what} ({pattern.hex(' ')})")

    # -- instruction set ----------------------------------------------------------------------
    for item in isa_mod.unsupported_items(code_c, target, code_b):
        name, where, missing = item
        hint = "" if target.host else " (use --isa native to allow)"
        problems.append(
            f"uses {name} at {where}, which needs {', '.join(missing)}: the target "
            f"{target.name} does not promise it{hint}"
        )
    return problems


def _plain_new_section(sec, base_by_name) -> bool:
    """A section gcc's object lacks that is still fine: more code or more read-only data.

    A candidate may move a cold path to ``.text.unlikely`` or need a constant pool
    (``.rodata.cst16``) the baseline did not. Such sections add no capability: code sections
    are disassembled and checked like the rest, read-only data cannot run. Everything else
    (writable, TLS, grouped, other names) must match the baseline by type and flags.
    """
    if sec.name in base_by_name or sec["sh_type"] != "SHT_PROGBITS":
        return False
    flags = sec["sh_flags"] & _SHF_COMPARED
    if sec.name == ".text" or sec.name.startswith(".text."):
        return flags == _SHF_ALLOC | _SHF_EXECINSTR
    if sec.name == ".rodata" or sec.name.startswith(".rodata."):
        return flags == _SHF_ALLOC
    return False


def _reloc_sig(obj: _Obj, relocs) -> list:
    """What a table's relocations point at, independent of code layout.

    gas writes a reference to a local function as "section symbol + offset"; the offset moves
    whenever a candidate changes the size of an earlier function, so such targets are named
    by the symbol defined at that offset instead.
    """
    by_place: dict[tuple[int, int], str] = {}
    for sym in obj.symbols:
        kind = sym["st_info"]["type"]
        if sym.name and kind not in ("STT_SECTION", "STT_FILE") and isinstance(sym["st_shndx"], int):
            by_place.setdefault((sym["st_shndx"], sym["st_value"]), sym.name)
    out = []
    for offset, rtype, symidx, addend in relocs:
        sym = obj.symbols[symidx] if 0 < symidx < len(obj.symbols) else None
        if sym is None:
            target = ("", addend)
        elif sym["st_info"]["type"] == "STT_SECTION" and isinstance(sym["st_shndx"], int):
            named = by_place.get((sym["st_shndx"], sym["st_value"] + addend))
            target = (named, 0) if named else (obj.sections[sym["st_shndx"]].name, addend)
        else:
            target = (sym.name, addend)
        out.append((offset, rtype, *target))
    return sorted(out)


def _insn_covering(dec, offset: int):
    import bisect

    k = bisect.bisect_right(dec.addrs, offset) - 1
    if k >= 0 and dec.insns[k].address <= offset < dec.insns[k].address + dec.insns[k].size:
        return dec.insns[k]
    return None


def _unrelocated_target(insn, sites: list[int]) -> int | None:
    """The section offset a direct branch or RIP-relative operand reaches, if no relocation
    patches the instruction (with one, the relocation check covers it)."""
    import bisect
    from capstone import x86_const

    lo = bisect.bisect_left(sites, insn.address)
    if lo < len(sites) and sites[lo] < insn.address + insn.size:
        return None
    names = {x86_const.X86_GRP_JUMP, x86_const.X86_GRP_CALL, x86_const.X86_GRP_BRANCH_RELATIVE}
    if names & set(insn.groups):
        if x86_const.X86_GRP_BRANCH_RELATIVE in insn.groups or insn.opcode[0] in (0xE8, 0xE9, 0xEB):
            for op in insn.operands:
                if op.type == x86_const.X86_OP_IMM:
                    return op.imm
    for op in insn.operands:
        if op.type == x86_const.X86_OP_MEM and op.mem.base == x86_const.X86_REG_RIP:
            return insn.address + insn.size + op.mem.disp
    return None
