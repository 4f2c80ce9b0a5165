"""Function-level differential testing in a CPU emulator (Unicorn).

gcc's function and a candidate's are loaded from their assembled objects (relocated with
:mod:`sgcc.asm.obj`'s reader) into one emulated address space that holds a captured entry
state (:mod:`sgcc.verify.function.funcstate`): the stack, heap and data of gcc's program as the
function found them, with the objects' writable sections placed exactly where the program
had them. Both functions run from the same registers and memory, on the captured states and
on mutated ones (:func:`mutations`), and must agree on:

* the return registers the C return type uses (all of rax, rdx, xmm0, xmm1 when unknown),
  and the stack pointer and callee-saved registers on return;
* every byte of memory either wrote, outside the function's own frame;
* the sequence of external calls (name and arguments), whose results are stubbed
  identically on both sides (ones the C library could return for :data:`RESULTS`), and what
  a routine writes through the pointers it is given
  (scanf's, fread's: :data:`OUTPUTS`) written the same on both; ``memcpy``/``memset``/
  ``memmove``/``memcmp``/``strlen`` are carried out instead (their effect is compared as
  memory), and a call that does not return (``abort``, ``exit``...) ends the run.

Memory the captured process did not have is mapped on first touch with content that depends
only on the address and the state (zeros or pseudo-random bytes), so sizes far beyond any test
read and write the same "memory" on both sides. A state on which gcc's function faults, runs
an instruction the emulator lacks, or runs too long is dropped: not the candidate's fault. A
candidate that faults where gcc's does not, or runs more than ``SLOWDOWN`` times as long, fails.

The emulator runs no system call: the ``syscall`` instruction stops the run as a failure.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import struct
import time
from dataclasses import dataclass, field

from sgcc.asm import x86
from sgcc.errors import SgccError
from sgcc.verify.function import deadline
from sgcc.verify.function.footprint import Footprint, Spans, Unavailable, Violation

PAGE = 0x1000
BLOCK = 0x1000  # granularity of the memory comparison
ARG_REGS = x86.ARGUMENT_REGS
CALLEE_SAVED = x86.CALLEE_SAVED
#: A candidate may take this many times gcc's emulated time on a state before it fails.
SLOWDOWN = 20
#: A run's limit is seconds on the CPU (the emulating thread's), so that what a run decides
#: does not depend on what else the machine runs: a wall-clock limit left a candidate's run on
#: the state that shows it wrong undecided whenever other processes had the CPU (a wrong
#: candidate accepted under `pytest -n 4`). The wall clock only bounds the wait: at most this
#: many times the limit, plus WALL_SLACK.
WALL_PER_CPU = 8.0
WALL_SLACK = 0.25
#: The CPU time left below which a run counts as having used up its limit (short slices cost
#: more than they decide).
MIN_SLICE = 0.002
#: Instructions of a run's first slice, and of each after a call (bounded by count, without a
#: timer): Unicorn's time limit starts a thread per slice and joins it when the slice ends, 0.1 ms
#: of wall-clock time on a quiet machine and a turn of the scheduler on a busy one. A loop of
#: 20,000 printf calls (a slice after each) took 18 s of wall-clock time for 1 s on the CPU beside
#: four busy processes, and gcc's run was called starved three times over: a state every candidate
#: is tested on left undecided (CI, stop 53). A counted slice stops a `rep` string as well (each
#: repetition counts). It runs at most SLICE_RATE instructions a second of the CPU time left (5 us
#: each, slower than a run under the footprint hook goes), so that it does not overrun a short limit.
#: (Every slice counted is no answer: Unicorn's count costs 16 times the time of a tight loop.)
#: The slices bounded by time are stopped by :mod:`deadline`'s one thread, not Unicorn's timer.
FIRST_SLICE = 200_000
SLICE_RATE = 200_000
MIN_COUNT = 1_000
#: gcc's function gets this long on one state before the state is dropped.
GCC_SECONDS = 1.0
#: Memory mapped on first touch: in chunks of CHUNK bytes, at most MAX_LAZY_BYTES in one run.
CHUNK = 1 << 20
MAX_LAZY_BYTES = 256 << 20
MAX_LAZY_MAPS = 512
#: Pages of captured memory tracked one by one in a run; past them a mapping is compared whole.
DIRTY_PAGES = 16
#: Memory routines carried out rather than stubbed (their writes are compared as memory).
MEMORY_ROUTINES = frozenset({"memcpy", "memmove", "memset", "memcmp", "strlen", "__memcpy_chk",
                             "__memmove_chk", "__memset_chk"})
NO_RETURN = frozenset({"abort", "exit", "_exit", "_Exit", "__assert_fail", "__stack_chk_fail", "longjmp",
                       "siglongjmp", "__longjmp_chk", "quick_exit", "__chk_fail", "__fortify_fail"})
#: Integer arguments compared per external call, where the prototype is known. Every other
#: external has all six argument registers compared: a routine the table does not know may read
#: any of them (a length gcc never passes must not hide in a third argument), and an honest
#: candidate that leaves other values in registers a known routine ignores is still accepted.
ARG_COUNT = {"malloc": 1, "free": 1, "calloc": 2, "realloc": 2, "puts": 1, "putchar": 1, "exit": 1,
             "printf": 1, "fprintf": 2, "fputs": 2, "fputc": 2, "putc": 2, "fwrite": 4, "fflush": 1,
             "rand": 0, "abort": 0, "__stack_chk_fail": 0, "__assert_fail": 4, "qsort": 4, "sqrt": 0,
             "__printf_chk": 2, "__fprintf_chk": 3, "getchar": 0, "scanf": 1, "__isoc99_scanf": 1,
             "fread": 4, "fgets": 3, "fputs_unlocked": 2, "fwrite_unlocked": 4, "write": 3, "read": 3,
             "bsearch": 5, "qsort_r": 5, "strcmp": 2, "strncmp": 3, "strcpy": 2, "strncpy": 3, "strcat": 2,
             "strncat": 3, "strchr": 2, "strrchr": 2, "strstr": 2, "memchr": 3, "strdup": 1, "strtol": 3,
             "strtoul": 3, "strtoll": 3, "strtoull": 3, "strtod": 2, "atoi": 1, "atol": 1, "atof": 1,
             "toupper": 1, "tolower": 1, "isalpha": 1, "isdigit": 1, "isspace": 1, "putchar_unlocked": 1,
             "getc": 1, "fgetc": 1, "ungetc": 2, "sprintf": 2, "snprintf": 3, "__sprintf_chk": 4,
             "__snprintf_chk": 5, "pow": 0, "exp": 0, "log": 0, "sin": 0, "cos": 0, "floor": 0, "ceil": 0,
             "fabs": 0, "labs": 1, "abs": 1, "llabs": 1, "time": 1, "clock": 0, "srand": 1,
             "__ctype_b_loc": 0, "__ctype_toupper_loc": 0, "__ctype_tolower_loc": 0, "__errno_location": 0,
             "atexit": 1, "signal": 2, "pthread_create": 4, "perror": 1, "fopen": 2, "fclose": 1}

#: Routines that write through a pointer they are given, and where their format is (scanf's
#: family): the emulator writes what they would (see Machine._outputs).
SCANF_FORMAT = {"scanf": 0, "__isoc99_scanf": 0, "sscanf": 1, "__isoc99_sscanf": 1, "fscanf": 1,
                "__isoc99_fscanf": 1}
#: The other routines the emulator writes for: name -> (the pointer's argument, the length):
#: bytes (an int), the argument holding it ("arg2"), or fread's size times count.
OUTPUTS: dict[str, tuple[int, int | str]] = {
    "fread": (0, "size*count"), "fread_unlocked": (0, "size*count"), "read": (1, "arg2"), "time": (0, 8),
    "posix_memalign": (0, 8), "strtol": (1, 8), "strtoul": (1, 8), "strtoll": (1, 8), "strtoull": (1, 8),
    "strtod": (1, 8)}

#: Routines whose result is one the C library could return, not the stub's 0 to 65535 (with
#: which the path after a successful scanf was never emulated: a function's whole success path
#: went untested, and the value told the emulator from the CPU): scanf's family the conversions
#: assigned or EOF, fread the items read, read the bytes read or -1, time what it stores. Half
#: the calls succeed whole, the others fall short (:func:`_plausible`).
RESULTS = frozenset({*SCANF_FORMAT, "fread", "fread_unlocked", "read", "time"})

#: One write a routine makes through a pointer: address, size, fixed, its bytes (None: the call's own).
Output = tuple[int, int, bool, "bytes | None"]
#: The area holding both objects' code and constants, the external calls' slots and the stubs.
AREA_BYTES = 64 << 20
#: Most bytes one output of a routine may have (a longer one leaves the state undecided).
MAX_OUTPUT = 1 << 24
#: What the bytes a routine writes are seeded with besides the call's place: new in every
#: process, so a candidate cannot recognise the emulator by them.
_SECRET = os.urandom(8).hex()

# x86-64 relocation types this loader applies
R_64, R_PC32, R_PLT32, R_GOTPCREL, R_32, R_32S, R_PC64, R_GOTPCRELX, R_REX_GOTPCRELX = 1, 2, 4, 9, 10, 11, 24, 41, 42


class Unsupported(SgccError):
    """The function cannot be run in the emulator (an object it cannot load)."""


class _Stop(Exception):
    """A memory routine the emulator carries out broke the footprint rule: the run stops."""


@dataclass
class Outcome:
    """What one function did on one state."""

    status: str  # "ret", "noreturn NAME", "fault: ...", "timeout", "unsupported: ...", "footprint"
    regs: dict = field(default_factory=dict)
    memory: dict = field(default_factory=dict)  # start -> bytes written (merged ranges, final values)
    calls: list = field(default_factory=list)
    seconds: float = 0.0  # wall-clock
    #: Seconds this run had on the CPU (the emulating thread's time): what its limit counts.
    cpu: float = 0.0
    #: A timeout that was the machine's doing, not the code's: the run reached its wall-clock
    #: ceiling (WALL_PER_CPU times its limit) before it had its limit on the CPU.
    starved: bool = False
    #: Record mode (gcc's function): the bytes it touched outside its own frame.
    footprint: Spans | None = None
    #: Check mode (a candidate): its first access outside the footprint rule, and where.
    violation: Violation | None = None
    where: str = ""
    #: Instructions executed, where counted (the cost comparison).
    instructions: int | None = None


@dataclass
class Mutation:
    """A change to a captured state: registers set, memory patched, how new pages are filled."""

    what: str
    regs: dict = field(default_factory=dict)
    patches: list = field(default_factory=list)  # (address, bytes)
    fill: str = "zero"  # "zero" or "random"
    large: bool = False  # a size far beyond what was seen: may run long, tried after the cheap ones
    alias: bool = False  # pointer arguments made to overlap, as a legal C call may (no ``restrict``)


#: The rules a function-level difference can break (:attr:`Mismatch.rule`), "differs" last:
#: every other is named by the start of the difference's text.
RULES = ("footprint", "cost", "undecided", "differs")


@dataclass
class Mismatch:
    """A state on which the candidate differs from gcc's function."""

    function: str
    state: str  # where it was captured
    mutation: str
    regs: dict
    difference: str

    @property
    def rule(self) -> str:
        """The rule it broke: "footprint" (memory gcc's function does not touch), "cost" (its speed
        does not hold beyond the sizes that were timed), "undecided" (a state every candidate is
        tested on could not be decided) or "differs" (another outcome)."""
        return next((r for r in RULES[:-1] if self.difference.startswith(r)), "differs")

    def render(self) -> str:
        args = ", ".join(f"{r}={self.regs[r]:#x}" for r in ARG_REGS if r in self.regs)
        return (f"{self.function} on a function state ({self.state}; {self.mutation}): {self.difference}; "
                f"entry registers {args}")


# -- return types ------------------------------------------------------------------------------

INT_TYPES = {"char": 8, "signed char": 8, "unsigned char": 8, "_Bool": 8, "bool": 8, "short": 16,
             "unsigned short": 16, "short int": 16, "int": 32, "unsigned": 32, "unsigned int": 32,
             "signed": 32, "signed int": 32, "long": 64, "unsigned long": 64, "long int": 64,
             "long long": 64, "unsigned long long": 64, "size_t": 64, "ssize_t": 64, "ptrdiff_t": 64,
             "intptr_t": 64, "uintptr_t": 64, "int8_t": 8, "uint8_t": 8, "int16_t": 16, "uint16_t": 16,
             "int32_t": 32, "uint32_t": 32, "int64_t": 64, "uint64_t": 64, "long unsigned int": 64}


def return_kind(source_text: str, name: str) -> tuple[str, int]:
    """How ``name`` returns, from its C definition: ("void", 0), ("int", bits), ("float", 32|64),
    or ("any", 0) when unknown (every return register is compared)."""
    base = name.split(".")[0]
    m = re.search(r"(?:^|[;})\n])\s*((?:[A-Za-z_]\w*[\s*]+)+?)" + re.escape(base) + r"\s*\([^;{]*\)\s*\{",
                  source_text)
    if m is None:
        return "any", 0
    words = [w for w in re.split(r"\s+", m.group(1).replace("*", " * ")) if w]
    words = [w for w in words if w not in ("static", "inline", "extern", "const", "volatile", "register",
                                           "__inline", "__inline__", "restrict")
             and not w.startswith("__attribute__")]
    if "*" in words:
        return "int", 64
    text = " ".join(words)
    if text == "void":
        return "void", 0
    if text in ("float",):
        return "float", 32
    if text in ("double",):
        return "float", 64
    if text in INT_TYPES:
        return "int", INT_TYPES[text]
    return "any", 0


def restrict_params(source_text: str, name: str) -> bool:
    """Whether ``name``'s C definition declares a ``restrict`` pointer parameter (then no legal
    call makes its buffers overlap, and no overlapping state is tried)."""
    base = name.split(".")[0]
    m = re.search(r"(?:^|[;})\n])\s*(?:[A-Za-z_]\w*[\s*]+)+?" + re.escape(base) + r"\s*\(([^;{)]*)\)\s*\{",
                  source_text)
    return m is not None and re.search(r"\b(?:restrict|__restrict|__restrict__)\b", m.group(1)) is not None


def integer_args(source_text: str, name: str) -> int | None:
    """How many of ``name``'s parameters travel in general registers (pointers and integers),
    from its C definition; None when unknown (variadic, structs, not found)."""
    base = name.split(".")[0]
    m = re.search(r"(?:^|[;})\n])\s*(?:[A-Za-z_]\w*[\s*]+)+?" + re.escape(base) + r"\s*\(([^;{)]*)\)\s*\{",
                  source_text)
    if m is None or "..." in m.group(1) or "struct" in m.group(1) or "union" in m.group(1):
        return None
    params = [p.strip() for p in m.group(1).split(",") if p.strip()]
    if params == ["void"]:
        return 0
    n = 0
    for p in params:
        if "*" in p or "[" in p:
            n += 1
        elif not re.search(r"\b(float|double)\b", p):
            n += 1
    return min(n, 6)


_DECLARATION = re.compile(r"\b([A-Za-z_]\w*)\s*\(((?:[^()]|\([^()]*(?:\([^()]*\))*[^()]*\))*)\)\s*"
                          r"(?:__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)\s*|__asm__\s*\([^)]*\)\s*"
                          r"|__THROW\s*|__wur\s*)*[;{]")


def declared_arity(text: str) -> dict[str, int]:
    """How many arguments each function declared or defined in ``text`` (C, preprocessed for
    the C library's prototypes) takes in general registers; a variadic function counts its
    fixed ones; a function with a struct passed by value is left out (all registers compared)."""
    out: dict[str, int] = {}
    for m in _DECLARATION.finditer(text):
        name, params = m.group(1), m.group(2)
        if name in ("if", "while", "for", "switch", "return", "sizeof", "__attribute__", "__typeof__"):
            continue
        parts, depth, cur = [], 0, ""
        for ch in params:
            depth += ch == "("
            depth -= ch == ")"
            if ch == "," and depth == 0:
                parts.append(cur.strip())
                cur = ""
            else:
                cur += ch
        if cur.strip():
            parts.append(cur.strip())
        if parts in ([], ["void"]):
            out[name] = 0
            continue
        fixed = [p for p in parts if p != "..."]
        if any(re.search(r"\b(struct|union)\b", p) and "*" not in p for p in fixed):
            out.pop(name, None)
            continue
        n = sum(1 for p in fixed if "*" in p or "[" in p or "(" in p
                or not re.search(r"\b(float|double|_Float\d+)\b", p))
        out[name] = min(n, 6)
    return out


# -- loading -----------------------------------------------------------------------------------

@dataclass
class Image:
    """One object loaded: its function entries, the range its code and constants occupy, and
    where its constants (read-only, not executable sections) lie."""

    entries: dict
    start: int
    end: int
    constants: list = field(default_factory=list)  # [(lo, hi)]
    code: list = field(default_factory=list)  # [(lo, hi)] of its executable sections


class Machine:
    """One emulated address space for one captured state, with gcc's and a candidate's objects."""

    def __init__(self, state, capture, objects: list, *, fill_seed: int = 0, footprint: bool = False):
        self.ended: str | None = None  # why the current run stopped early (a fault, a timeout)
        import unicorn
        from unicorn import x86_const as x

        self.uc_mod, self.x = unicorn, x
        self.state = state
        self.capture = capture
        self.uc = unicorn.Uc(unicorn.UC_ARCH_X86, unicorn.UC_MODE_64)
        self.regions = sorted(state.regions, key=lambda r: r.start)
        for r in self.regions:
            # Read-only mappings stay read-only: a write there faults, as it would in the program.
            self.uc.mem_map(r.start, _round_up(len(r.data)), unicorn.UC_PROT_ALL)
            self.uc.mem_write(r.start, r.data)
            # Every captured page starts read-only. The first write to a page of a writable
            # mapping faults into _on_write_prot, which notes the page and allows it; past
            # DIRTY_PAGES pages in a run, the whole mapping is allowed and compared whole
            # afterwards (each protection change splits the mapping and flushes translations).
            # A write hook would slow every memory access. Writes to read-only mappings fault,
            # as they would in the program.
            self.uc.mem_protect(r.start, _round_up(len(r.data)), unicorn.UC_PROT_READ)
        self.patches: list = []  # the running mutation's (address, bytes), set by run()
        self.dirty: set[int] = set()  # pages written in this run (their region's first pages)
        self.dirty_regions: set[int] = set()  # regions written past the page budget: compared whole
        self.context = None
        self.lazy: dict[int, int] = {}  # start -> size of what was mapped on first touch
        self._fills: dict[int, bytes] = {}
        self.fill = "zero"
        self.fill_seed = fill_seed
        # Code, constants, GOT, stubs for externals and the return sentinel: one area near the
        # program's writable data (32-bit PC-relative references must reach it), clear of the state.
        self.area = self._pick_area(capture, state)
        self.next_free = self.area
        self.traps: list[str] = []
        self.trap_index: dict[str, int] = {}
        self.got: dict[int, int] = {}
        self.trap_base = self._alloc(PAGE * 4)
        self.stop = self._alloc(PAGE)
        self.uc.mem_write(self.stop, b"\xf4" * 16)
        self.images = [self._load(obj) for obj in objects]
        # Each external function is a slot of `hlt; ret`: hlt ends emu_start there (no code hook,
        # which would slow every instruction), the call is handled, and the run resumes at ret.
        self.uc.mem_write(self.trap_base, b"\xf4\xc3" * (PAGE * 2))
        self.code_end = self.next_free
        # Code, constants and the GOT are read-only, as in the program.
        self.uc.mem_protect(self.area, AREA_BYTES, unicorn.UC_PROT_READ | unicorn.UC_PROT_EXEC)
        self._hooks()
        # Unicorn counts instructions with a hook that only code translated while it was in
        # place calls: after a slice bounded by time alone, a counted one would run the code
        # translated there uncounted, a loop without end (`jmp .` spun for ever). Then the
        # translations are dropped first.
        self._uncounted = False
        self._insn_starts: list[int] | None = None
        #: Integer arguments of externals, from their declarations (FunctionTester.arity)
        self.arity: dict[str, int] = {}
        # The footprint rule's hook (untrusted candidates only: every memory access then takes
        # Unicorn's slow path, several times slower; gcc's own variants need no such rule).
        self.footprint: Footprint | None = None
        if footprint:
            try:
                self.footprint = Footprint(self.uc)
            except Unavailable as exc:
                raise Unsupported(exc.message) from exc
        self.lazy_limit_hit = False
        self._draw = ""
        self.overtime = False
        self.deadline = float("inf")  # wall-clock ceiling of the current run
        self.cpu_deadline = float("inf")  # its limit, on the thread's CPU clock
        self.overtime_wall = False

    # address space

    def _pick_area(self, capture, state) -> int:
        writable = [capture.sections[k] + state.load_delta for k in capture.sections
                    if capture.sections[k]]
        anchor = min(writable) if writable and state.load_delta else 0x40000000
        size = AREA_BYTES
        for start in (anchor - (256 << 20), anchor - (1 << 30), anchor + (512 << 20), 0x20000000):
            start &= ~(PAGE - 1)
            if start > 0 and not any(r.start < start + size and start < r.end for r in self.regions):
                self.uc.mem_map(start, size, self.uc_mod.UC_PROT_ALL)
                return start
        raise Unsupported("no room for the code near the program's data")

    def _alloc(self, size: int, align: int = 64) -> int:
        addr = (self.next_free + align - 1) & ~(align - 1)
        self.next_free = addr + size
        if self.next_free > self.area + AREA_BYTES:
            raise Unsupported("the objects do not fit the emulator's code area")
        return addr

    def _trap(self, name: str) -> int:
        if name not in self.trap_index:
            if len(self.traps) >= PAGE * 4 // 16:
                raise Unsupported("too many external functions")
            self.trap_index[name] = len(self.traps)
            self.traps.append(name)
        return self.trap_base + 16 * self.trap_index[name]

    def _got(self, target: int) -> int:
        if target not in self.got:
            slot = self._alloc(8, 8)
            self.uc.mem_write(slot, struct.pack("<Q", target & (2**64 - 1)))
            self.got[target] = slot
        return self.got[target]

    def describe_pc(self, pc: int) -> str:
        """Where ``pc`` is, in words: the function (of which object) and the instruction."""
        for which, image in zip(("gcc's", "the candidate's"), self.images):
            for lo, hi in image.code:
                if lo <= pc < hi:
                    entry = max(((a, n) for n, a in image.entries.items() if a <= pc), default=(lo, "?"))
                    import capstone

                    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
                    md.syntax = capstone.CS_OPT_SYNTAX_ATT
                    insn = next(md.disasm(bytes(self.uc.mem_read(pc, 16)), pc), None)
                    text = f"`{insn.mnemonic} {insn.op_str}`".replace(" `", "`") if insn else "?"
                    return f"at {entry[1]}+{pc - entry[0]:#x} ({which} code): {text}"
        return f"at {pc:#x}"

    def _starts(self) -> list[int]:
        """Every instruction start of the loaded code, sorted (for counting instructions)."""
        if self._insn_starts is None:
            import capstone

            md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
            starts = []
            for image in self.images:
                for lo, hi in image.code:
                    starts += [a for a, _size, _m, _o in md.disasm_lite(bytes(self.uc.mem_read(lo, hi - lo)), lo)]
            # Each external's slot is one `hlt; ret`: the ret counts, as a call's return does.
            starts += [self.trap_base + 16 * i + 1 for i in range(len(self.traps))]
            self._insn_starts = sorted(starts)
        return self._insn_starts

    def own_constants(self, image: int) -> list[tuple[int, int]]:
        """What a run of ``images[image]``'s code may read besides the footprint: its own
        constants and the GOT's slots (the addresses its relocations ask for)."""
        return [*self.images[image].constants, *((slot, slot + 8) for slot in self.got.values())]

    def _load(self, obj) -> Image:
        SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 1, 2, 4
        start = self.next_free
        placed: dict[int, int] = {}
        occurrence: dict[str, int] = {}
        delta = self.state.load_delta
        constants: list[tuple[int, int]] = []
        code: list[tuple[int, int]] = []
        for idx, sec in enumerate(obj.sections):
            flags = sec["sh_flags"]
            if not flags & SHF_ALLOC or sec.name.startswith((".eh_frame", ".note")):
                continue
            if flags & SHF_WRITE:
                k = occurrence.get(sec.name, 0)
                occurrence[sec.name] = k + 1
                addr = self.capture.sections.get((sec.name, k))
                if addr is None:
                    if sec["sh_size"] == 0:
                        continue
                    raise Unsupported(f"writable section {sec.name} is not where the program has it")
                placed[idx] = addr + delta
                continue
            size = sec["sh_size"]
            addr = self._alloc(max(size, 1), max(16, sec["sh_addralign"] or 1))
            placed[idx] = addr
            (code if flags & SHF_EXECINSTR else constants).append((addr, addr + size))
            if sec["sh_type"] != "SHT_NOBITS" and size:
                self.uc.mem_write(addr, sec.data())
        symbols = obj.symbols

        def resolve(symidx: int) -> int:
            sym = symbols[symidx]
            shndx = sym["st_shndx"]
            if isinstance(shndx, int):
                if shndx not in placed:
                    raise Unsupported(f"a reference into section {obj.sections[shndx].name}")
                return placed[shndx] + sym["st_value"]
            if shndx == "SHN_ABS":
                return sym["st_value"]
            if sym.name in self.capture.symbols:  # a variable of the program (common, or another file's)
                return self.capture.symbols[sym.name] + delta
            return self._trap(sym.name)

        for r in obj.relocs:
            target = r.section
            if target not in placed or obj.sections[target]["sh_flags"] & SHF_WRITE:
                continue  # writable data is the captured program's own, already relocated
            base = placed[target]
            offset, rtype, symidx, addend = r.offset, r.type, r.symbol, r.addend
            p = base + offset
            s = resolve(symidx)
            if rtype == R_64:
                self.uc.mem_write(p, struct.pack("<Q", (s + addend) & (2**64 - 1)))
            elif rtype in (R_PC32, R_PLT32):
                self._put32(p, s + addend - p, signed=True)
            elif rtype in (R_GOTPCREL, R_GOTPCRELX, R_REX_GOTPCRELX):
                self._put32(p, self._got(s) + addend - p, signed=True)
            elif rtype == R_32:
                self._put32(p, s + addend, signed=False)
            elif rtype == R_32S:
                self._put32(p, s + addend, signed=True)
            elif rtype == R_PC64:
                self.uc.mem_write(p, struct.pack("<Q", (s + addend - p) & (2**64 - 1)))
            else:
                raise Unsupported(f"relocation type {rtype}")
        entries: dict[str, int] = {}
        for sym in symbols:
            if sym["st_info"]["type"] in ("STT_FUNC", "STT_GNU_IFUNC") and isinstance(sym["st_shndx"], int) \
                    and sym["st_shndx"] in placed:
                entries.setdefault(sym.name, placed[sym["st_shndx"]] + sym["st_value"])
        return Image(entries, start, self.next_free, constants, code)

    def _put32(self, p: int, value: int, *, signed: bool) -> None:
        lo, hi = (-(2**31), 2**31 - 1) if signed else (0, 2**32 - 1)
        if not lo <= value <= hi:
            raise Unsupported("a 32-bit reference out of reach in the emulator")
        self.uc.mem_write(p, struct.pack("<i" if signed else "<I", value))

    # hooks

    def _hooks(self) -> None:
        u, x = self.uc_mod, self.x
        self.uc.hook_add(u.UC_HOOK_MEM_READ_UNMAPPED | u.UC_HOOK_MEM_WRITE_UNMAPPED, self._on_unmapped)
        self.uc.hook_add(u.UC_HOOK_MEM_WRITE_PROT, self._on_write_prot)
        self.uc.hook_add(u.UC_HOOK_INSN, self._on_syscall, aux1=x.UC_X86_INS_SYSCALL)  # type: ignore[call-arg]
        self.uc.hook_add(u.UC_HOOK_INTR, self._on_interrupt)

    def _fill_chunk(self, chunk: int) -> bytes:
        """The content of never-captured memory at ``chunk``: the same on both sides."""
        if self.fill == "zero":
            return bytes(CHUNK)
        got = self._fills.get(chunk)
        if got is None:
            got = self._fills[chunk] = random.Random(chunk ^ self.fill_seed).randbytes(CHUNK)
        return got

    def _on_unmapped(self, uc, access, address, size, value, data) -> bool:
        if self.area <= address < self.area + AREA_BYTES or address >= 1 << 47 or address < 1 << 16:
            return False
        if len(self.lazy) >= MAX_LAZY_MAPS:
            self.lazy_limit_hit = True
            return False
        if time.perf_counter() > self.deadline or time.thread_time() > self.cpu_deadline:
            # Mapping happens inside one emu_start, which a time limit does not interrupt here.
            self.overtime = True
            self.overtime_wall = time.thread_time() <= self.cpu_deadline  # the machine's doing
            return False
        first = address & ~(CHUNK - 1)
        last = (address + max(size, 1) - 1) & ~(CHUNK - 1)
        for chunk in range(first, last + CHUNK, CHUNK):
            if chunk in self.lazy:
                continue
            if sum(self.lazy.values()) >= MAX_LAZY_BYTES:
                self.lazy_limit_hit = True
                return False
            if any(r.start < chunk + CHUNK and chunk < r.end + PAGE for r in self.regions) or \
                    any(k < chunk + CHUNK and chunk < k + n for k, n in self.lazy.items()):
                return self._map_pages(uc, address, size)  # next to captured memory: what is free of it
            uc.mem_map(chunk, CHUNK)
            if self.fill != "zero":
                uc.mem_write(chunk, self._fill_chunk(chunk))
            self.lazy[chunk] = CHUNK
        return True

    def _map_pages(self, uc, address, size) -> bool:
        """Map the free pages from ``address`` on, up to the end of its chunk or the next
        captured region or earlier mapping, in one piece: a buffer that runs on past the
        captured heap (a size far beyond the tests') must not cost a mapping per page."""
        page = address & ~(PAGE - 1)
        needed = ((address + max(size, 1) - 1) | (PAGE - 1)) + 1
        while page < needed:
            taken = [(r.start & ~(PAGE - 1), r.end) for r in self.regions] + \
                    [(k, k + n) for k, n in self.lazy.items()]
            inside = [end for start, end in taken if start <= page < end]
            if inside:
                page = (max(inside) + PAGE - 1) & ~(PAGE - 1)
                continue
            if len(self.lazy) >= MAX_LAZY_MAPS or sum(self.lazy.values()) >= MAX_LAZY_BYTES:
                self.lazy_limit_hit = True
                return False
            stop = min([(page & ~(CHUNK - 1)) + CHUNK, *(start for start, _ in taken if start > page)])
            try:
                uc.mem_map(page, stop - page)
            except self.uc_mod.UcError:
                return False
            if self.fill != "zero":
                base = page & ~(CHUNK - 1)
                uc.mem_write(page, self._fill_chunk(base)[page - base:stop - base])
            self.lazy[page] = stop - page
            page = stop
        return True

    def _on_syscall(self, uc, data) -> None:
        self.ended = "fault: a system call"
        uc.emu_stop()

    def _on_interrupt(self, uc, intno, data) -> None:
        self.ended = f"fault: interrupt {intno}"
        uc.emu_stop()

    def _on_trap(self, uc, address) -> None:
        x = self.x
        name = self.traps[(address - self.trap_base) // 16]
        args = [uc.reg_read(getattr(x, f"UC_X86_REG_{r.upper()}")) for r in ARG_REGS]
        self.ncalls += 1
        if self.ncalls > 100000:
            self.ended = "timeout"
            uc.emu_stop()
            return
        if name in MEMORY_ROUTINES:
            uc.reg_write(x.UC_X86_REG_RAX, self._memory_routine(name.replace("__", "").replace("_chk", ""), args))
            return
        n = self.arity.get(name, ARG_COUNT.get(name, len(ARG_REGS)))
        shown = tuple(self._portable(a) for a in args[:n])
        if name in ("fwrite", "fwrite_unlocked", "fread", "fread_unlocked"):
            # size and count are one length to the C library: gcc writes fwrite(msg, 1, 50, f)
            # where clang writes fwrite(msg, 50, 1, f); what is written is what must agree.
            length = (args[1] * args[2]) & (2**64 - 1)
            data = self._bytes(args[0], min(length, 4096)) if name.startswith("fwrite") else self._portable(args[0])
            shown = (data, length, self._portable(args[3]))
        compared, writes = self._outputs(name, args, uc)
        # What it reads and where it writes are part of the call (ARG_COUNT compares scanf's
        # format only, strtol's string as an address).
        shown = tuple(self._portable(a) for a in args) if compared is None else (*shown, *compared)
        if name in ("printf", "__printf_chk", "fprintf", "__fprintf_chk", "puts", "fputs"):
            at = {"printf": 0, "puts": 0, "__printf_chk": 1, "fprintf": 1, "fputs": 0, "__fprintf_chk": 2}[name]
            fmt = self._cstring(args[at])
            shown = (*shown, fmt)
            if name not in ("puts", "fputs"):
                # What it prints: the arguments its format names (integers and strings from the
                # argument registers, then the stack; doubles from %xmm0-7), as a value each.
                shown = (*shown, *self._printed(fmt, args[at + 1:], uc))
        self.calls.append((name, shown))
        if name in NO_RETURN:
            self.ended = f"noreturn {name}"
            uc.emu_stop()
            return
        sp = uc.reg_read(x.UC_X86_REG_RSP)
        result = None
        if name in RESULTS and compared is not None:
            result, writes = self._result(name, args, compared, writes)
        writes = [w for w in writes if w[0] and w[1]]
        for k, write in enumerate(writes):
            if not self._output(name, k, write, sp):
                return
        if result is None:
            digest = hashlib.blake2b(f"{name}:{len(self.calls)}".encode(), digest_size=8).digest()
            result = int.from_bytes(digest, "little") & 0xFFFF
        uc.reg_write(x.UC_X86_REG_RAX, result & (2**64 - 1))

    def _result(self, name: str, args: list[int], compared: tuple, writes: list[Output]) -> tuple[int, list[Output]]:
        """The result of a routine in :data:`RESULTS`, and its writes made to agree with it, as
        the C library makes them: scanf's family stores only the conversions it assigned (the
        others keep what was there: a function that reads one it did not initialise reads what
        an earlier call left), ``fread`` and ``read`` only the bytes they report read (``fread``
        draws bytes, so ``fread(b, 1, 64, f)`` and ``fread(b, 64, 1, f)`` store the same and
        report 10 and 0 of 10 bytes), ``time`` its result, a second call a second later or the
        same. Seeded by the state, the mutation, the call's place and this process's secret:
        the same on both sides, unknown to a candidate."""
        rng = random.Random(f"{_SECRET}:{self._draw}:result:{name}:{len(self.calls)}")
        if name in SCANF_FORMAT:
            got = _plausible(rng, len(dict(compared)["writes to"]), -1)
            return got, writes[:max(got, 0)]
        if name == "time":
            base = random.Random(f"{_SECRET}:{self._draw}:time").randrange(1 << 30, 1 << 31)
            now = base + sum(1 for call, _ in self.calls[:-1] if call == "time") // 2
            return now, [(a, n, fixed, struct.pack("<Q", now)) for a, n, fixed, _ in writes]
        if name.startswith("fread"):
            size, count = args[1], args[2]
            total = (size * count) & (2**64 - 1)
            stored = _plausible(rng, total, 0)
            got = stored // size if size else 0
        else:
            got = _plausible(rng, args[2], -1)
            stored = max(got, 0)
        return got, [(addr, min(stored, n), True, None) for addr, n, _, _ in writes[:1] if min(stored, n)]

    def _outputs(self, name: str, args: list[int], uc) -> tuple[tuple | None, list[Output]]:
        """What a routine writes through the pointers it is given: (what of the call is compared
        beyond ARG_COUNT's arguments, None for "every argument register"; the writes, ``(address,
        size, fixed, bytes or None for the call's own)``). Fixed: the routine stores exactly those
        bytes whenever it succeeds; the others (``read``, ``fread``, scanf's ``%Ns``) store up
        to them, written here so both sides compare alike, never counted as the function's own."""
        if name in SCANF_FORMAT:
            at = SCANF_FORMAT[name]
            fmt = self._cstring(args[at])
            # (A format that cannot be read whole, or longer than what _cstring reads, is not read.)
            sizes = scanf_outputs(fmt) if fmt != b"?" and len(fmt) < 255 else None
            if sizes is None:
                # A format this does not read: its pointers cannot be told apart, so every
                # argument register is compared and nothing is written (reads of them then
                # count as reads of memory nobody wrote, as before).
                return None, []
            pointers = list(args[at + 1:])
            sp = uc.reg_read(self.x.UC_X86_REG_RSP)
            for k in range(max(0, len(sizes) - len(pointers))):  # past the registers: the stack
                try:
                    pointers.append(struct.unpack("<Q", bytes(uc.mem_read(sp + 8 * (1 + k), 8)))[0])
                except self.uc_mod.UcError:
                    break
            pointers = pointers[:len(sizes)]
            source = (("from", self._cstring(args[0])),) if at == 1 and not name.endswith("fscanf") else ()
            compared = (*source, ("format", fmt),
                        ("writes to", tuple((self._portable(p), n) for p, (n, _) in zip(pointers, sizes))))
            # One per conversion, in order (``_result`` keeps the ones assigned), then the ones
            # with bytes to write.
            return compared, [(p, n, fixed, None) for p, (n, fixed) in zip(pointers, sizes)]
        if name not in OUTPUTS:
            return (), []
        at, length = OUTPUTS[name]
        if name.startswith("strto"):
            # The end pointer: where the number's text ended, here its start (no digits read);
            # the text itself is compared, so a candidate cannot parse another string.
            return (("from", self._cstring(args[0])),), ([(args[at], 8, True, struct.pack("<Q", args[0]))]
                                                         if args[at] else [])
        if isinstance(length, int):
            size, fixed = length, True
        else:
            size = (args[1] * args[2]) & (2**64 - 1) if length == "size*count" else args[int(length[3:])]
            fixed = False
        return (), ([(args[at], size, fixed, None)] if args[at] and size else [])

    def _output(self, name: str, k: int, write: Output, sp: int) -> bool:
        """Write what ``name`` writes on the function's behalf (``k``: which of its outputs),
        bytes the same on both sides that depend on the call's place in the sequence and on a
        secret of this process (a candidate cannot tell them in advance). Held to the footprint
        rule like the function's own writes; in its own frame, a fixed output (scanf's ``%ld``
        into a local, read after the call) then counts as written in this call. False (the run
        ended as a fault) for an output below the stack pointer at the call (the routine's own
        stack) or into memory that is not writable."""
        addr, size, fixed, data = write
        if size > MAX_OUTPUT:
            raise Unsupported(f"{name}'s output too large")
        in_frame = self.frame_low <= addr and addr + size <= self.entry_sp
        end = addr + size
        # Any byte below the stack pointer at the call (the stack's mapping, not only the frame's
        # window), or in the code and constants area, whatever byte the output starts at.
        stack = self.state.region_at(self.entry_sp)
        below = addr < sp + 8 and end > (stack.start if stack is not None else self.frame_low)
        code = addr < self.area + AREA_BYTES and end > self.area
        if below or code or not self._allow(addr, size):
            self.ended = f"fault: {name} writes {size} bytes at {addr:#x} (below the stack pointer or read-only)"
            self.uc.emu_stop()
            return False
        if self.footprint is not None and (fixed or not in_frame) and not self.footprint.access(addr, size, True):
            self.violated_in = f"in {name}'s output ({size} bytes at {addr:#x})"
            raise _Stop()
        self._note_access(addr, size, True)
        self._write(addr, data if data is not None else
                    random.Random(f"{_SECRET}:{name}:{len(self.calls)}:{k}").randbytes(size))
        return True

    def _printed(self, fmt: bytes, ints: list[int], uc) -> list:
        """The values a printf format takes from the integer registers after it and from the
        vector registers (what reaches the output, compared so a wrong value printed is seen)."""
        out: list = []
        k_int = k_vec = 0
        sp = uc.reg_read(self.x.UC_X86_REG_RSP)
        for conv in format_conversions(fmt):
            if conv == "f":
                if k_vec < 8:
                    raw = uc.reg_read(getattr(self.x, f"UC_X86_REG_XMM{k_vec}"))
                    out.append(("double", raw & (2**64 - 1)))
                k_vec += 1
                continue
            if k_int < len(ints):
                value = ints[k_int]
            else:  # past the registers: the stack, above the return address
                try:
                    value = struct.unpack("<Q", bytes(uc.mem_read(sp + 8 * (1 + k_int - len(ints)), 8)))[0]
                except self.uc_mod.UcError:
                    value = None
            k_int += 1
            if value is None:
                out.append("?")
            elif conv == "s":
                out.append(("string", self._cstring(value)))
            else:
                out.append(self._portable(value))
        return out

    def _portable(self, value: int):
        """A value as both sides can agree on it: an address in the function's own frame says
        only "frame"; a function's entry says which function (a comparator or a callback:
        gcc's ``cmp`` and the candidate's ``cmp`` agree, a computed address into code does
        not); an external's slot which external; an address in an object's own constants
        (each side has its own copy) what is there; anything else is itself."""
        if self.frame_low <= value < self.entry_sp:
            return "frame"
        if self.area <= value < self.code_end:
            for image in self.images:
                for fname, entry in image.entries.items():
                    if entry == value:
                        return ("function", fname)
                if any(lo <= value < hi for lo, hi in image.code):
                    return ("code", "not a function's entry")
            if self._at_trap(value + 1):
                return ("function", self.traps[(value - self.trap_base) // 16])
            return ("constant", self._cstring(value)[:64])
        return value

    def _bytes(self, addr: int, n: int):
        try:
            return ("bytes", bytes(self.uc.mem_read(addr, n)))
        except self.uc_mod.UcError:
            return ("bytes", "?")

    def _cstring(self, addr: int) -> bytes:
        try:
            raw = bytes(self.uc.mem_read(addr, 256))
        except self.uc_mod.UcError:
            return b"?"
        return raw.split(b"\0", 1)[0]

    def _memory_routine(self, name: str, args: list[int]) -> int:
        dst, src, n = args[0], args[1], args[2]
        if name == "strlen":
            out = 0
            while out < 1 << 20 and bytes(self.uc.mem_read(dst + out, 1)) != b"\0":
                out += 1
            if self.footprint is not None and not self.footprint.access(dst, out + 1, False):
                self.violated_in = f"in strlen({dst:#x})"
                raise _Stop()
            return out
        if n > 1 << 28:
            raise Unsupported("memory routine too large")
        # What the routine touches on the function's behalf is held to the footprint rule as
        # the function's own accesses are (a memcpy of a length gcc's function never passes).
        touched = ([(dst, True)] if name == "memset" else
                   [(src, False), (dst, False)] if name == "memcmp" else [(src, False), (dst, True)])
        for addr, write in touched:
            if self.footprint is not None and not self.footprint.access(addr, n, write):
                self.violated_in = f"in {name}({dst:#x}, {src:#x}, {n})"
                raise _Stop()
        if name == "memset":
            self._note_access(dst, n, True)
            self._write(dst, bytes([src & 0xFF]) * n)
            return dst
        self._note_access(src, n, False)
        data = bytes(self.uc.mem_read(src, n)) if n else b""
        if name == "memcmp":
            self._note_access(dst, n, False)
            other = bytes(self.uc.mem_read(dst, n)) if n else b""
            return 0 if other == data else (1 if other > data else (2**64 - 1))
        if n:
            self._note_access(dst, n, True)
            self._write(dst, data)
        return dst

    # running

    def _base_context(self):
        """The captured registers, set once per machine and restored before every run."""
        x, uc, st = self.x, self.uc, self.state
        for name in ("rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12",
                     "r13", "r14", "r15"):
            uc.reg_write(getattr(x, f"UC_X86_REG_{name.upper()}"), st.regs[name] & (2**64 - 1))
        uc.reg_write(x.UC_X86_REG_EFLAGS, st.regs["rflags"] & 0xCD5 | 0x202)
        uc.reg_write(x.UC_X86_REG_FS_BASE, st.regs.get("fsbase", 0))
        for k, raw in enumerate(st.xmm):
            uc.reg_write(getattr(x, f"UC_X86_REG_XMM{k}"), int.from_bytes(raw, "little"))
        for k in range(8, 16):
            uc.reg_write(getattr(x, f"UC_X86_REG_XMM{k}"), 0)
        uc.reg_write(x.UC_X86_REG_MXCSR, 0x1F80)
        return uc.context_save()

    def run(self, entry: int, mutation: Mutation, seconds: float, *, watch: list | None = None,
            guard: list | None = None, record: bool = False, allowed: Spans | None = None,
            image: int = 1, count: bool = False) -> Outcome:
        """Run the function at ``entry`` from the state with ``mutation`` applied, for at most
        ``seconds`` on the CPU (and at most WALL_PER_CPU times that of wall-clock time: past
        it, a timeout is marked ``starved``); restore the state afterwards. With ``watch``
        (address ranges), the run stops with status "overlap" at the first byte of them that it
        both reads and writes; with
        ``guard`` (address ranges), with status "out of bounds" at its first access to one.

        The footprint rule (:mod:`sgcc.verify.function.footprint`): with ``record``, the bytes
        the run touches outside its own frame are in the outcome's ``footprint``; with
        ``allowed`` (gcc's record of the same state), the run of ``images[image]``'s code stops
        with status "footprint" at its first access outside the rule. With ``count``, the
        outcome says how many instructions ran."""
        x, uc = self.x, self.uc
        self.calls: list[tuple] = []
        self.ncalls = 0
        self.ended = None
        # What the C library's results are drawn from besides the call's place: the state and
        # the mutation (the same for gcc's run and the candidate's; every state alike, one
        # draw would decide every state's path).
        self._draw = f"{self.fill_seed}:{mutation.what}"
        self._watch = None
        # No limit while the state is written (a write past captured memory maps pages through
        # the same handler as the run's accesses): the last run's limits have passed.
        self.deadline, self.cpu_deadline, self.overtime, self.overtime_wall = float("inf"), float("inf"), False, False
        hooks = []
        for a, b in guard or ():
            hooks.append(uc.hook_add(self.uc_mod.UC_HOOK_MEM_READ | self.uc_mod.UC_HOOK_MEM_WRITE,
                                     self._on_guarded, begin=a, end=b - 1))
        if guard and not watch:
            uc.ctl_flush_tb()  # type: ignore[attr-defined]  # as for watch, below
        if watch:
            # Byte-level reads and writes inside ``watch`` (the ranges a first run wrote), to see
            # whether the function reads a byte it also writes: hooks bounded to those ranges, so
            # reads elsewhere (the inputs, when they do not overlap the outputs) cost no callback.
            self._watch = [(a, bytearray(b - a), bytearray(b - a)) for a, b in watch]
            for a, b in watch:
                hooks.append(uc.hook_add(self.uc_mod.UC_HOOK_MEM_READ | self.uc_mod.UC_HOOK_MEM_WRITE,
                                         self._on_watched, begin=a, end=b - 1))
            # Code translated before the hooks were added would not call them: translate afresh
            # (and again once they are gone, so that later runs are fast again).
            uc.ctl_flush_tb()  # type: ignore[attr-defined]  # present at run time, absent from the stubs
        self.fill = mutation.fill
        if self.context is None:
            self.context = self._base_context()
        uc.context_restore(self.context)
        for name, value in mutation.regs.items():
            uc.reg_write(getattr(x, f"UC_X86_REG_{name.upper()}"), value & (2**64 - 1))
        self.entry_sp = mutation.regs.get("rsp", self.state.regs["rsp"])
        self.frame_low = self.entry_sp - (1 << 20)
        self._write(self.entry_sp, struct.pack("<Q", self.stop))
        self.patches = list(mutation.patches)
        for addr, raw in mutation.patches:
            self._write(addr, raw)
        fp = self.footprint
        mode = "check" if allowed is not None else "record" if record else "off"
        if fp is not None:
            # The memory hook slows every access: attached only for the runs that need it.
            if mode == "off":
                fp.detach()
            else:
                fp.attach()
        if mode != "off" or count:
            if fp is None:
                raise Unsupported("this emulator was made without the footprint hook")
            stack = self.state.region_at(self.entry_sp)
            fp.start(mode, self.entry_sp, allowed, self.own_constants(image) if allowed is not None else None,
                     frame_low=stack.start if stack is not None else 0)
            fp.count(self._starts() if count else None)
        self.violated_in = ""
        out = Outcome("ret")
        started, on_cpu = time.perf_counter(), time.thread_time()
        ceiling = started + WALL_PER_CPU * seconds + WALL_SLACK
        starved = False
        try:
            pc, counted = entry, True
            self.deadline, self.cpu_deadline = ceiling, on_cpu + seconds
            while True:
                # Each slice is bounded by wall-clock time (the deadline keeper): as long as the
                # CPU time left, so that a run kept off the CPU goes on in the next slice.
                cpu_left = seconds - (time.thread_time() - on_cpu)
                wall_left = ceiling - time.perf_counter()
                if cpu_left <= MIN_SLICE:
                    out.status = "timeout"  # its limit, used up on the CPU: the code's doing
                    break
                if wall_left <= 0:
                    out.status, starved = "timeout", True  # the machine's doing
                    break
                left = min(cpu_left, wall_left)
                # Short runs (most) end within a slice bounded by instructions; a longer one goes on
                # bounded by time alone (until its next call), at full speed.
                if counted:
                    self._counted(pc, max(MIN_COUNT, min(FIRST_SLICE, int(left * SLICE_RATE))))
                else:
                    self._uncounted = True
                    # Stopped by the deadline keeper, not by Unicorn's timeout (see deadline.py).
                    token = 0
                    try:
                        token = deadline.arm(uc, time.perf_counter() + left)
                        uc.emu_start(pc, self.stop)
                    finally:
                        deadline.disarm(token)
                rip = uc.reg_read(x.UC_X86_REG_RIP)
                if mode == "check" and fp is not None and fp.violation() is not None:
                    out.status = "footprint"
                    break
                if self.ended is None and self._at_trap(rip):
                    try:
                        self._on_trap(uc, rip - 1)
                    except _Stop:
                        out.status = "footprint"
                        break
                    except Unsupported as exc:
                        # A call this state makes too large to carry out (a memset of 2^28
                        # bytes and more): this state's outcome, not the function's.
                        out.status = f"unsupported: {exc.message}"
                        break
                    if self.ended is None:
                        # The slot's `ret`, run on its own (its read of the return address
                        # under the same hooks as every access): a slice stopped before it would
                        # find the slot's trap again and make the call twice. Bounded by count=1,
                        # which code translated in a timed slice does not honour: it ran on,
                        # untimed, past the `ret` (a loop at the call's return address spun for
                        # ever, and a second call in it went unseen). So the translations are
                        # dropped first, as before any counted slice.
                        self._counted(rip, 1)
                        pc, counted = uc.reg_read(x.UC_X86_REG_RIP), True
                        continue
                if self.ended is not None:
                    out.status = self.ended
                elif rip == self.stop:
                    pass
                else:
                    # The slice's instructions or time ran out: go on, bounded by time alone,
                    # until the CPU time or the wall-clock ceiling is used up.
                    pc, counted = rip, False
                    continue
                break
        except self.uc_mod.UcError as exc:
            out.status = ("unsupported: an instruction the emulator lacks"
                          if exc.errno == self.uc_mod.UC_ERR_INSN_INVALID else f"fault: {exc}")
            if self.lazy_limit_hit:
                out.status = "unsupported: too much memory"
            if self.overtime:
                out.status, starved = "timeout", self.overtime_wall
        out.seconds = time.perf_counter() - started
        out.cpu = time.thread_time() - on_cpu
        out.starved = starved and out.status == "timeout"
        out.calls = self.calls
        if fp is not None and mode == "check":
            out.violation = fp.violation()
            if out.violation is not None:
                out.status = "footprint"
                out.where = self.violated_in or self.describe_pc(out.violation.pc)
        elif fp is not None and mode == "record" and (out.status == "ret" or out.status.startswith("noreturn")):
            if fp.overflow():
                out.status = "unsupported: too much memory touched to record"
            else:
                out.footprint = fp.spans()
        if fp is not None:
            if count:
                out.instructions = fp.instructions()
                fp.count(None)
            fp.start("off", self.entry_sp)
        if out.status == "ret":
            names = ("rax", "rdx", "rsp", *CALLEE_SAVED)
            values = uc.reg_read_batch(  # type: ignore[attr-defined]  # unicorn >= 2.1, not in its stubs
               [getattr(x, f"UC_X86_REG_{r.upper()}") for r in names])
            out.regs = dict(zip(names, values))
            for r in ("rax", "rdx"):
                if self.area <= out.regs[r] < self.code_end:
                    out.regs[r] = self._portable(out.regs[r])
            out.regs["xmm0"] = uc.reg_read(x.UC_X86_REG_XMM0)
            out.regs["xmm1"] = uc.reg_read(x.UC_X86_REG_XMM1)
        out.memory = self._changed(keep=out.status == "ret" or out.status.startswith("noreturn"))
        for h in hooks:
            uc.hook_del(h)
        if hooks:
            uc.ctl_flush_tb()  # type: ignore[attr-defined]
        self._watch = None
        return out

    def _on_guarded(self, uc, access, address, size, value, data) -> None:
        if self.ended is None:
            self.ended = "out of bounds"
            uc.emu_stop()

    def _on_watched(self, uc, access, address, size, value, data) -> None:
        self._note_access(address, size, access == self.uc_mod.UC_MEM_WRITE)

    def _note_access(self, address: int, size: int, write: bool) -> None:
        """A watched access: mark its bytes; a byte both read and written ends the run."""
        if self._watch is None or self.ended is not None:
            return
        for lo, reads, writes in self._watch:
            a, b = max(address - lo, 0), min(address + size - lo, len(reads))
            if a >= b:
                continue
            mine, other = (writes, reads) if write else (reads, writes)
            if any(other[a:b]):
                self.ended = "overlap"
                self.uc.emu_stop()
                return
            mine[a:b] = b"\1" * (b - a)

    def _with_patches(self, start: int, orig: bytes) -> bytes:
        """``orig`` (the captured bytes at ``start``) with this run's mutation patches applied."""
        end = start + len(orig)
        hits = [(a, raw) for a, raw in self.patches if a < end and a + len(raw) > start]
        if not hits:
            return bytes(orig)
        ref = bytearray(orig)
        for a, raw in hits:
            lo, hi = max(a, start), min(a + len(raw), end)
            ref[lo - start:hi - start] = raw[lo - a:hi - a]
        return bytes(ref)

    def _write(self, addr: int, raw: bytes) -> None:
        """Write into the state from outside the emulated code (noting what it touched)."""
        if not raw:
            return
        self._allow(addr, len(raw))  # first: writing a read-only page from outside is slow in Unicorn
        try:
            self.uc.mem_write(addr, raw)
        except self.uc_mod.UcError:
            self._on_unmapped(self.uc, 0, addr, len(raw), 0, None)
            self.uc.mem_write(addr, raw)

    def _allow(self, address: int, size: int) -> bool:
        for page in range(address & ~(PAGE - 1), address + max(size, 1), PAGE):
            r = self.state.region_at(page)
            if r is None:
                continue  # memory mapped on first touch: compared whole anyway
            if not r.writable:
                return False
            if r.start in self.dirty_regions or page in self.dirty:
                continue
            if len(self.dirty) < DIRTY_PAGES:
                self.dirty.add(page)
                self.uc.mem_protect(page, PAGE, self.uc_mod.UC_PROT_ALL)
            else:
                self.dirty_regions.add(r.start)
                self.uc.mem_protect(r.start, _round_up(len(r.data)), self.uc_mod.UC_PROT_ALL)
        return True

    def _on_write_prot(self, uc, access, address, size, value, data) -> bool:
        """The first write to a page of captured writable memory in a run: note it, allow it.
        Read-only memory of the program or the code: a fault, as in the program.

        Unicorn does not redo a store that faulted on protection once the hook makes the page
        writable: the first store to each page would be lost (for gcc's function and the
        candidate alike, so a difference in how they store could pass or fail at random). So
        the store is carried out here, with the value the hook is given (at most 8 bytes; a
        16-byte store reaches the hook as its first 8 bytes, and its second half is stored by
        Unicorn once the page is writable)."""
        allowed = self._allow(address, size)
        if allowed and 0 < size <= 8:
            uc.mem_write(address, (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little"))
        return allowed

    def _counted(self, pc: int, count: int) -> None:
        """Run from ``pc`` for at most ``count`` instructions, the translations of a slice bounded
        by time alone dropped first (Unicorn's count hook is only called by code translated
        while it was in place)."""
        if self._uncounted:
            self.uc.ctl_flush_tb()  # type: ignore[attr-defined]
            self._uncounted = False
        self.uc.emu_start(pc, self.stop, count=count)

    def _at_trap(self, rip: int) -> bool:
        slot = rip - 1 - self.trap_base
        return 0 <= slot < 16 * len(self.traps) and slot % 16 == 0

    def _changed(self, *, keep: bool) -> dict:
        """Pages of captured memory the run wrote that now differ, and changed blocks of memory
        mapped on first touch (the function's own frame left out): {address: final bytes}.
        Restores the state."""
        changed: dict[int, bytes] = {}
        low = self.entry_sp + 8
        spans = [(r.start, r) for r in self.regions if r.start in self.dirty_regions]
        spans += [(p, self.state.region_at(p)) for p in sorted(self.dirty)
                  if self.state.region_at(p).start not in self.dirty_regions]
        for start, r in spans:
            size = len(r.data) if start == r.start and r.start in self.dirty_regions else PAGE
            now = self.uc.mem_read(start, size)
            orig = r.data[start - r.start:start - r.start + size]
            if now != orig:
                self.uc.mem_write(start, orig)  # restore while still writable (fast), then protect
            self.uc.mem_protect(start, _round_up(size), self.uc_mod.UC_PROT_READ)
            # What the run wrote is measured from the memory it started with: the mutation's own
            # bytes are not the function's writes (counted as writes, every buffer mutation of a
            # read-only function looked like one that may read its own output, and paid a
            # watched run to find out). So a write of the captured bytes back over a patch is one
            # (measured from the captured bytes, it was invisible).
            ref = self._with_patches(start, orig)
            if now == ref:
                continue
            for off in range(0, size, BLOCK):
                a, b = bytes(now[off:off + BLOCK]), ref[off:off + BLOCK]
                if a == b:
                    continue
                addr = start + off
                if not keep or (addr + len(a) <= low and addr + BLOCK > self.frame_low):
                    continue  # below the return address: the function's own frame
                if addr < low < addr + len(a):
                    a = b[:low - addr] + a[low - addr:]
                    if a == b:
                        continue
                changed[addr] = a
        self.dirty.clear()
        self.dirty_regions.clear()
        for start, size in list(self.lazy.items()):
            if keep:
                now = bytes(self.uc.mem_read(start, size))
                fill = self._fill_chunk(start & ~(CHUNK - 1))[start & (CHUNK - 1):][:size]
                if now != fill:
                    for off in range(0, size, BLOCK):
                        if now[off:off + BLOCK] != fill[off:off + BLOCK]:
                            changed[start + off] = now[off:off + BLOCK]
            self.uc.mem_unmap(start, size)
        self.lazy.clear()
        self.lazy_limit_hit = False
        self.overtime = False
        return changed


def _round_up(n: int) -> int:
    return (n + PAGE - 1) & ~(PAGE - 1)


# -- mutations ---------------------------------------------------------------------------------

# No 64-bit values near 2^63: where gcc's arithmetic on a `long` would overflow (undefined in
# C), an honest candidate may compute something else (collatz's 3x+1 fused with the halving).
BOUNDARY = [0, 1, 2, 3, 7, 8, 2**64 - 1, 2**64 - 2, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0x80000001,
            # 2^30: where an int's 2n wraps (a loop bound of 2n - 1 turns negative)
            *[v for k in (8, 16, 24, 30, 32, 40) for v in (2**k - 1, 2**k, 2**k + 1)]]


def constants(obj, function: str) -> set[int]:
    """Immediates and displacements in ``function``'s code in ``obj`` (the values its
    comparisons and masks name), for mutations that reach the regions they guard.

    Where the function lies comes from the one code model (:attr:`ObjectFile.extents`), with
    its ``.cold`` parts, not from the symbol's size: a candidate written without ``.size``
    would otherwise hide every constant it compares with (a value wrong only at
    ``movabs $MAGIC`` shipped that way, tested on 583 states)."""
    out: set[int] = set()
    import capstone.x86 as cx

    for name, (shndx, start, end) in obj.extents.items():
        if name != function and obj.group_of(name) != function:
            continue
        for insn in obj.insns(shndx, start, end):
            for op in insn.operands:
                if op.type == cx.X86_OP_IMM:
                    out.add(op.imm & (2**64 - 1))
    return {c for c in out if c not in (0, 1)}


_LEGACY_PREFIXES = frozenset({0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x66, 0x67, 0xF0, 0xF2, 0xF3})


def vex_encoded(obj) -> str | None:
    """The first VEX- or EVEX-encoded instruction of any function of ``obj`` (AVX, AVX2, FMA,
    AVX-512, BMI's andn/shlx/...), as text; None when it has none.

    Unicorn 2.1.4 (QEMU 5's x86) runs no 256-bit AVX, and runs VEX.128 three-operand forms as
    their two-operand SSE forms, ignoring the second source (``vpaddd %xmm1, %xmm2, %xmm0``
    leaves xmm0 + xmm1 in xmm0, measured): a result it computes for such code means nothing.
    In 64-bit mode 0xC4/0xC5 (VEX) and 0x62 (EVEX) after the legacy prefixes can be nothing
    else. Every function is looked at, not only the one tested: it may call the others."""
    # Every executable section, whole: not the functions' symbol sizes, which a candidate
    # writes itself (without ``.size`` a function would have no instructions to look at).
    for dec in obj.code:
        for insn in dec.insns:
            raw = bytes(insn.bytes)
            k = 0
            while k < len(raw) and raw[k] in _LEGACY_PREFIXES:
                k += 1
            if k < len(raw) and raw[k] in (0xC4, 0xC5, 0x62):
                where = obj.function_at(dec.index, insn.address) or dec.name
                return f"{insn.mnemonic} {insn.op_str}".strip() + f" in {where}"
    return None


def heap_headers(state, pointers) -> list[tuple[int, int]]:
    """The size fields of glibc's heap chunks that hold ``pointers`` (addresses), as 8-byte
    ranges, for those in a captured mapping that is a heap: one whose chunks, walked from its
    start, end exactly at its end (the main arena's heap; a large allocation's own mapping is
    one chunk). No real call touches a header just below the object it was given: that is
    memory malloc owns (knapsack's dp[-1], read when a weight is made negative)."""
    out = []
    for p in pointers:
        region = state.region_at(p)
        if region is None:
            continue
        chunks = _chunks(region)
        for start, size in chunks:
            if start + 16 <= p < start + size + 8:  # its user bytes run into the next chunk's prev_size
                out.append((start + 8, start + 16))
                break
    return sorted(set(out))


def _chunks(region) -> list[tuple[int, int]]:
    """glibc's chunks of ``region`` as (start, size), or [] where the walk is not consistent."""
    data, out, off = region.data, [], 0
    while off + 16 <= len(data):
        size = struct.unpack_from("<Q", data, off + 8)[0] & ~0x7
        if size < 32 or size % 16 or off + size > len(data) + 4096:
            return []
        out.append((region.start + off, size))
        off += size
        if off >= len(data):
            return out if off - len(data) < 4096 else []
    return []


def mutations(state, consts: set[int], rng: random.Random, *, budget: int,
              largest: dict | None = None, args: int | None = None, alias: bool = False) -> list[Mutation]:
    """Mutated versions of ``state``: argument registers set to boundary values, values
    around what was seen, sizes far beyond it and the code's own constants; pointed-to
    buffers overwritten with all-ones, zero, sign-bit, random words and the constants; with
    ``alias``, pointer arguments made to overlap (``dst == src``, ``dst == src +- 8``), which no
    captured state may show and which a C call without ``restrict`` may make."""
    out: list[Mutation] = []
    scal: list[Mutation] = []
    regs = state.regs
    used = ARG_REGS if args is None else ARG_REGS[:args]
    pointers = [r for r in used if state.region_at(regs[r]) is not None and state.region_at(regs[r]).writable]
    scalars = [r for r in used if state.region_at(regs[r]) is None]
    if alias:
        for a in pointers[:3]:
            for b in pointers[:3]:
                if a == b:
                    continue
                for k in (8, 0, -8):
                    shown = f"{a}={b}" + (f"{k:+d}" if k else "")
                    out.append(Mutation(f"{shown} (the arguments alias)", {a: (regs[b] + k) & (2**64 - 1)},
                                        fill="random", alias=True))
    csorted = sorted(consts)
    if len(csorted) > 64:  # keep the spread (small thresholds and large magic values alike)
        csorted = csorted[:: -(-len(csorted) // 64)]
    for r in pointers[:3]:
        p = regs[r]
        region = state.region_at(p)
        window = max(0, min(4096, region.end - p)) // 8 * 8
        if window == 0:
            continue
        words = window // 8
        patterns = {"all-ones words": b"\xff" * window, "zero words": bytes(window),
                    "sign-bit words": struct.pack("<Q", 2**63) * words,
                    "random words": rng.randbytes(window), "0x7f.. words": struct.pack("<Q", 2**63 - 1) * words,
                    # Byte-wise boundaries (a char's sign bit, its largest value, a byte of one),
                    # and bytes drawn from them: a candidate wrong only where bytes equal 0x80.
                    "0x80 bytes": b"\x80" * window, "0x7f bytes": b"\x7f" * window,
                    "0x01 bytes": b"\x01" * window,
                    "boundary bytes": bytes(rng.choice((0, 1, 0x7F, 0x80, 0xFF)) for _ in range(window))}
        for c in csorted[:16]:
            patterns[f"words {c:#x}"] = struct.pack("<Q", c & (2**64 - 1)) * words
        for what, raw in patterns.items():
            out.append(Mutation(f"{window} bytes at {r} set to {what}", patches=[(p, raw)]))
            one = bytearray(rng.randbytes(window))
            k = rng.randrange(words)
            one[8 * k:8 * k + 8] = raw[:8]
            out.append(Mutation(f"{window} random bytes at {r}, word {k} from {what}", patches=[(p, bytes(one))]))
    for r in scalars[:4]:
        v = regs[r]
        v32 = v & 0xFFFFFFFF
        top = max(v32, (largest or {}).get(r, 0) & 0xFFFFFFFF)
        near = [v32 + 1, v32 - 1, top * 4 // 3 + 1, 2 * top + 1, 4 * top + 7, 8 * top + 3, v32 ^ 0x80000000]
        from_code = [w for c in csorted for w in (c, c + 1, c - 1)] + [2 * c for c in csorted]
        for value in dict.fromkeys([*from_code, *near, *BOUNDARY]):
            low = value & 0xFFFFFFFF
            large = min(low, 2**32 - low) > max(4 * v32, 1 << 16)
            fill = "zero" if low > max(4 * v32, 4096) else "random"
            scal.append(Mutation(f"{r}={value & (2**64 - 1):#x}", {r: value & (2**64 - 1)}, fill=fill, large=large))
    # Buffer patterns and integer values alternate, so that a short budget sees both kinds.
    merged = []
    for k in range(max(len(out), len(scal))):
        merged += [x[k] for x in (scal, out) if k < len(x)]
    out = merged
    while len(out) < budget:
        m = Mutation("random", fill="random")
        for r in scalars[:4]:
            if rng.random() < 0.6:
                bits = rng.choice((2, 3, 4, 5, 6, 8, 10, 32))
                m.regs[r] = rng.getrandbits(bits)
        for r in pointers[:3]:
            region = state.region_at(regs[r])
            window = max(0, min(512, region.end - regs[r]))
            if window and rng.random() < 0.7:
                raw = bytearray(rng.randbytes(window))
                for k in range(0, window - 7, 8):
                    if rng.random() < 0.2:
                        raw[k:k + 8] = rng.choice((b"\xff" * 8, bytes(8), struct.pack("<Q", 2**63)))
                m.patches.append((regs[r], bytes(raw)))
        m.what = "random: " + ", ".join(f"{k}={v:#x}" for k, v in m.regs.items()) + \
                 (f", random words at {', '.join(r for r in pointers[:3])}" if m.patches else "")
        out.append(m)
    return out


# -- comparing ---------------------------------------------------------------------------------

def compare(kind: tuple[str, int], g: Outcome, c: Outcome, machine: Machine, mutation: Mutation) -> str | None:
    """None if the candidate's outcome ``c`` matches gcc's ``g``, else what differs."""
    if c.status == "footprint" and c.violation is not None:
        return f"footprint: the candidate {c.violation.describe()} ({c.where})"
    if c.status != g.status:
        return f"gcc's function ends with {g.status}, the candidate's with {c.status}"
    if c.calls != g.calls:
        for i, (a, b) in enumerate(zip(g.calls, c.calls)):
            if a != b:
                return f"external call {i + 1}: gcc's makes {_call(a)}, the candidate's {_call(b)}"
        return f"gcc's function makes {len(g.calls)} external calls, the candidate's {len(c.calls)}"
    if g.status == "ret":
        kind_name, bits = kind
        checks = []
        if kind_name == "int":
            checks.append(("rax", (1 << bits) - 1))
        elif kind_name == "float":
            checks.append(("xmm0", (1 << bits) - 1))
        elif kind_name == "any":
            checks += [("rax", 2**64 - 1), ("rdx", 2**64 - 1), ("xmm0", 2**128 - 1), ("xmm1", 2**128 - 1)]
        checks += [(r, 2**64 - 1) for r in ("rsp", *CALLEE_SAVED)]
        for reg, mask in checks:
            a, b = g.regs[reg], c.regs[reg]
            if isinstance(a, int) and isinstance(b, int):
                if a & mask != b & mask:
                    return f"{reg} is {b & mask:#x}, gcc's function returns {a & mask:#x}"
            elif a != b:
                return f"{reg} is {b!r}, gcc's function returns {a!r}"
    for addr in sorted(set(g.memory) | set(c.memory)):
        exp, got = g.memory.get(addr), c.memory.get(addr)
        if exp != got:
            if exp is None or got is None:
                which = "gcc's function" if got is None else "the candidate"
                return f"only {which} changes memory at {addr:#x}.."
            k = next(i for i in range(len(exp)) if exp[i] != got[i])
            return (f"memory at {addr + k:#x} is {got[k:k + 8].hex()}, gcc's function leaves "
                    f"{exp[k:k + 8].hex()}")
    return None


_CONVERSION = re.compile(rb"%[-+ #0']*(\*|\d+)?(?:\.(\*|\d+))?(hh|h|ll|l|j|z|t|L|q)?([diouxXeEfFgGaAcspn%])")


_SCANF = re.compile(rb"%(\*)?(\d+)?(hh|h|ll|l|j|z|t|L|q)?(\[\^?\]?[^\]]*\]|[diouxXeEfFgGaAcspn%])")
#: Bytes an integer conversion stores, by length modifier (no modifier: an int; glibc reads
#: ``L`` on an integer as ``ll``).
_SCANF_INT = {b"hh": 1, b"h": 2, b"l": 8, b"ll": 8, b"L": 8, b"q": 8, b"j": 8, b"z": 8, b"t": 8}


def scanf_outputs(fmt: bytes) -> list[tuple[int, bool]] | None:
    """What scanf stores through each pointer its format takes, in order: ``(bytes, fixed)``.
    Fixed: stored whole whenever the conversion succeeds (an integer by its length modifier, a
    float 4, 8 with ``l``, 10 with ``L``, one ``%c``, wide with ``l``); not fixed: up to that
    many (``%Nc``, ``%Ns``, ``%N[``: at most N characters, and the NUL), or 0 for an unbounded
    ``%s``/``%[`` (no width). ``%*d`` and ``%%`` take no pointer. None for a format with any
    ``%`` this does not read (``%1$d``, ``%ms``, ``%'d``, ``%C``): its pointers cannot be
    told apart."""
    out: list[tuple[int, bool]] = []
    at = 0
    while (at := fmt.find(b"%", at)) >= 0:
        m = _SCANF.match(fmt, at)
        if m is None:
            return None
        at = m.end()
        suppressed, width, length, conv = m.groups()
        if conv == b"%" or suppressed:
            continue
        w = int(width) if width else None
        # glibc reads every length but h and hh on %c, %s and %[ as wide characters.
        char = 4 if length not in (None, b"h", b"hh") else 1
        if conv == b"s" or conv.startswith(b"["):
            out.append(((w + 1) * char if w else 0, False))
        elif conv == b"c":
            # %3c stores fewer than 3 at the end of the input, and the conversion still counts.
            out.append(((w or 1) * char, w in (None, 1)))
        elif conv in b"eEfFgGaA":
            out.append((10 if length in (b"L", b"ll", b"q") else 8 if length in (b"l", b"z", b"j", b"t") else 4,
                        True))
        elif conv == b"p":
            out.append((8, True))
        else:
            out.append((_SCANF_INT.get(length or b"", 4), True))
    return out


def format_conversions(fmt: bytes) -> list[str]:
    """What a printf format takes, in order: "i" (an integer or pointer, ``*`` widths
    included), "s" (a string), "f" (a double); ``%%`` takes nothing."""
    out = []
    for m in _CONVERSION.finditer(fmt):
        width, prec, _length, conv = m.groups()
        if conv == b"%":
            continue
        out += ["i"] * ((width == b"*") + (prec == b"*"))
        out.append("f" if conv in b"eEfFgGaA" else "s" if conv == b"s" else "i")
    return out


def _call(call) -> str:
    name, args = call

    def show(a) -> str:
        if isinstance(a, int):
            return hex(a)
        if isinstance(a, str):
            return a
        if isinstance(a, bytes):
            return repr(a.decode(errors="replace"))
        if isinstance(a, tuple) and len(a) == 2:
            return f"{a[0]} {show(a[1])}"
        return repr(a)

    return f"{name}({', '.join(show(a) for a in args)})"


def _plausible(rng: random.Random, full: int, low: int) -> int:
    """``full`` (the call did all it was asked) half the time, else a value from ``low`` up to
    ``full`` - 1 (a short read, a conversion that failed, EOF or an error as -1)."""
    if full <= low or rng.random() < 0.5:
        return full
    return rng.randrange(low, full)
