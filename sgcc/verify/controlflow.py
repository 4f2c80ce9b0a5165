"""Control-flow validation of an assembled candidate, in the manner of Native Client's validator.

The text screen and the object checks say what a candidate *contains*; this module proves
where its code can *go*. Tests cannot show that: a candidate can reach any libc function
through a computed address (printf's GOT slot plus an offset, then ``push``/``ret``) with no
new import, no system-call bytes and no visible call, and behave perfectly under test.

Every function of the candidate object (a whole translation unit with candidate units in
it) is disassembled and walked as a control-flow graph. It may transfer control only

* within itself (its ``.cold`` part included), to instruction starts;
* by direct call or jump to a function entry of the same unit, or to an external function
  the baseline unit already calls, in the same form (through the PLT or directly);
* through jump tables whose every entry lies on an instruction of the function that jumps
  through them, and only where gcc's function has an indirect jump too;
* by indirect call only where gcc's function (or, for a private copy, gcc's unit) has one;
* by ``ret``, or a tail jump, only where a stack-height analysis proves the stack pointer
  is back at its entry height (so the return address is the caller's).

It may not write (or read) the return-address slot, take the address of a function or a
label that gcc's unit does not take (GOT loads, ``lea sym(%rip)`` of code, code addresses
in data), fall off the end of a function except after a call to a function that does not
return, or have code outside ``.text*`` or in a writable section. Whatever the analysis
cannot prove is refused. gcc's own code must always pass: the test suite runs the validator
over every object of the corpus under every flag set.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path

from sgcc.errors import SgccError

#: Functions that never return: falling off the end of a function right after calling one
#: of these is gcc's normal code (``call abort`` is often a function's last instruction).
NORETURN = frozenset(
    """abort exit _exit _Exit quick_exit __stack_chk_fail __assert_fail __assert_perror_fail
    __fortify_fail __chk_fail longjmp siglongjmp _longjmp __longjmp_chk err errx verr verrx
    __cxa_throw __cxa_rethrow _Unwind_Resume pthread_exit thrd_exit __libc_fatal""".split()
)

_COLD = re.compile(r"^(.*)\.cold(?:\.\d+)?$")

# x86-64 relocation types (the ones the analysis tells apart).
R_64, R_PC32, R_GOT32, R_PLT32, R_GOTPCREL, R_32, R_32S, R_PC64 = 1, 2, 3, 4, 9, 10, 11, 24
R_GOTPCRELX, R_REX_GOTPCRELX = 41, 42
_GOT_RELOCS = frozenset({R_GOT32, R_GOTPCREL, R_GOTPCRELX, R_REX_GOTPCRELX})
_PC_RELOCS = frozenset({R_PC32, R_PLT32, R_PC64})
_ABS_RELOCS = frozenset({R_64, R_32, R_32S})

_SHF_WRITE, _SHF_ALLOC, _SHF_EXECINSTR = 0x1, 0x2, 0x4

#: Most instructions one function may have before the analysis gives up (and refuses).
MAX_INSNS = 200_000


class Problem:
    """One broken rule: ``rule`` is a short name, ``text`` says where and what."""

    __slots__ = ("rule", "text")

    def __init__(self, rule: str, text: str):
        self.rule, self.text = rule, text

    def __str__(self) -> str:
        return f"{self.rule}: {self.text}"

    def __repr__(self) -> str:
        return f"Problem({self.rule!r}, {self.text!r})"


# --------------------------------------------------------------------------------- object model

def _at(dec, offset: int):
    """Index of the instruction starting at ``offset`` in a decoded section, or None."""
    k = bisect.bisect_left(dec.addrs, offset)
    if k < len(dec.addrs) and dec.addrs[k] == offset:
        return k
    return None


def _covering(dec, offset: int):
    """The instruction whose bytes include ``offset``, or None."""
    k = bisect.bisect_right(dec.addrs, offset) - 1
    if k >= 0 and dec.insns[k].address <= offset < dec.insns[k].address + dec.insns[k].size:
        return dec.insns[k]
    return None


class _Reloc:
    __slots__ = ("section", "offset", "type", "symbol", "addend")

    def __init__(self, section: int, offset: int, rtype: int, symbol: int, addend: int):
        self.section, self.offset, self.type, self.symbol, self.addend = section, offset, rtype, symbol, addend


class Unit:
    """What the validator knows of one relocatable object: code, symbols, relocations, read
    through the one object reader (:func:`sgcc.asm.obj.read_object`), so the object checks,
    the instruction-set check and this proof share one parse."""

    def __init__(self, path: Path):
        from sgcc.asm.obj import read_object

        obj = read_object(path)
        if not obj.relocatable:
            raise SgccError(f"{Path(path).name} is not a relocatable object")
        self.path = Path(path)
        self.sections = obj.sections
        self.symbols = obj.symbols
        self.code = {dec.index: dec for dec in obj.code}
        self.relocs: list[_Reloc] = []
        for target, relocs in obj.relocations:
            if not 0 < target < len(self.sections):
                raise SgccError(f"{self.path.name}: relocation section for a missing section")
            self.relocs.extend(_Reloc(target, *r) for r in relocs)
        self._functions()
        self.relocs_at: dict[int, list[_Reloc]] = {}
        for r in self.relocs:
            self.relocs_at.setdefault(r.section, []).append(r)
        self.reloc_sites = {s: sorted(r.offset for r in rs) for s, rs in self.relocs_at.items()}
        self.reloc_by_site = {(r.section, r.offset): r for r in self.relocs}

    # -- functions ------------------------------------------------------------------------

    def _functions(self) -> None:
        """Function extents per code section: a symbol's size, or up to the next symbol."""
        starts: dict[int, set[int]] = {}
        named = []
        for sym in self.symbols:
            shndx = sym["st_shndx"]
            if not isinstance(shndx, int) or shndx not in self.code:
                continue
            starts.setdefault(shndx, set()).add(sym["st_value"])
            if sym["st_info"]["type"] == "STT_FUNC" and sym.name:
                named.append(sym)
        self.functions: dict[str, tuple[int, int, int]] = {}  # name -> (section, start, end)
        for sym in named:
            shndx, start, size = sym["st_shndx"], sym["st_value"], sym["st_size"]
            if size:
                end = start + size
            else:
                later = sorted(s for s in starts[shndx] if s > start)
                end = later[0] if later else self.code[shndx].size
            self.functions.setdefault(sym.name, (shndx, start, end))
        self._extents = sorted((s, a, b, n) for n, (s, a, b) in self.functions.items())

    def function_at(self, shndx: int, offset: int) -> str | None:
        best = None
        for s, a, b, n in self._extents:
            if s == shndx and a <= offset < b:
                if best is None or a > self.functions[best][1]:
                    best = n
        return best

    def group_of(self, name: str) -> str:
        """A function and its ``.cold`` parts are one unit of control flow."""
        m = _COLD.match(name)
        return m.group(1) if m and m.group(1) in self.functions else name

    # -- symbols and relocations ------------------------------------------------------------

    def symbol(self, index: int):
        return self.symbols[index] if 0 < index < len(self.symbols) else None

    def target(self, r: _Reloc, place_end: int | None = None) -> tuple[str, object]:
        """Where relocation ``r`` points: ``("code", (section, offset))``, ``("external",
        name)``, ``("data", (section, offset))`` or ``("absolute", value)``.

        ``place_end`` is the end of the instruction holding a PC-relative field: the CPU adds
        the field to it, so the target is ``S + A + (end - P)``."""
        sym = self.symbol(r.symbol)
        if sym is None:
            return ("absolute", r.addend)
        shndx = sym["st_shndx"]
        value = sym["st_value"] + r.addend
        if r.type in _PC_RELOCS and place_end is not None:
            value += place_end - r.offset
        if shndx == "SHN_UNDEF":
            return ("external", sym.name)
        if not isinstance(shndx, int):
            return ("absolute", value)
        if shndx in self.code:
            return ("code", (shndx, value))
        return ("data", (shndx, value))

    def code_name(self, place: tuple[int, int]) -> str:
        """A code address named as the function it starts or lies in (``f`` or ``f+0x12``)."""
        shndx, off = place
        fn = self.function_at(shndx, off)
        if fn is None:
            return f"{self.sections[shndx].name}+{off:#x}"
        start = self.functions[fn][1]
        return fn if off == start else f"{fn}+{off - start:#x}"


# --------------------------------------------------------------------------------- what gcc does

class Baseline:
    """The constructs gcc's own object uses, which a candidate may use too."""

    def __init__(self, unit: Unit):
        self.unit = unit
        self.calls: set[tuple[str, str]] = set()  # (external name, "plt" | "direct")
        self.got: set[str] = set()  # symbols loaded from the GOT
        self.taken: set[str] = set()  # code addresses taken (function names, or f+off labels)
        self.noreturn: set[str] = set(NORETURN)
        self.indirect_jump: set[str] = set()  # function groups with an indirect jump
        self.indirect_call: set[str] = set()
        self.label_taken: set[str] = set()  # groups that take addresses of their own labels
        for shndx, code in unit.code.items():
            for insn in code.insns:
                fn = unit.function_at(shndx, insn.address)
                group = unit.group_of(fn) if fn else "?"
                kind = _branch_kind(insn)
                if kind == "indirect-jump":
                    self.indirect_jump.add(group)
                elif kind == "indirect-call":
                    self.indirect_call.add(group)
            for r in unit.relocs_at.get(shndx, []):
                insn = _covering(code, r.offset)
                end = insn.address + insn.size if insn is not None else None
                kind = _branch_kind(insn) if insn is not None else None
                where, what = unit.target(r, end)
                if r.type in _GOT_RELOCS:
                    sym = unit.symbol(r.symbol)
                    self.got.add(sym.name if sym is not None else "")
                elif kind in ("call", "jump") and where == "external":
                    self.calls.add((what, "plt" if r.type == R_PLT32 else "direct"))
                elif kind not in ("call", "jump", "cond") and where == "code":
                    fn = unit.function_at(*what)
                    self.taken.add(unit.code_name(what))
                    if fn is not None:
                        self.label_taken.add(unit.group_of(fn))
                elif kind not in ("call", "jump", "cond") and where == "external":
                    self.taken.add(what)
        for r in unit.relocs:
            sec = unit.sections[r.section]
            if r.section in unit.code or not sec["sh_flags"] & _SHF_ALLOC or sec.name == ".eh_frame":
                continue
            where, what = unit.target(r)
            if where == "code":
                self.taken.add(unit.code_name(what))
            elif where == "external":
                self.taken.add(what)
        # A call gcc placed last in a function (or right before another function) does not return.
        for shndx, code in unit.code.items():
            for k, insn in enumerate(code.insns):
                if _branch_kind(insn) != "call":
                    continue
                nxt = code.insns[k + 1].address if k + 1 < len(code.insns) else code.size
                fn = unit.function_at(shndx, insn.address)
                if fn is None:
                    continue
                _, _start, end = unit.functions[fn]
                if nxt >= end or unit.function_at(shndx, nxt) != fn:
                    r = unit.reloc_by_site.get((shndx, insn.address + 1))
                    if r is not None:
                        where, what = unit.target(r, insn.address + insn.size)
                        if where == "external":
                            self.noreturn.add(what)
                        elif where == "code":
                            self.noreturn.add(unit.code_name(what))


# --------------------------------------------------------------------------------- instructions

def _branch_kind(insn) -> str | None:
    """``call``, ``jump``, ``cond``, ``indirect-call``, ``indirect-jump``, ``ret``, ``stop``
    (traps and halts: no successor) or None (falls through)."""
    X = _regs().X
    if insn is None:
        return None
    groups = set(insn.groups)
    m = insn.mnemonic
    if X.X86_GRP_RET in groups or X.X86_GRP_IRET in groups:
        return "ret"
    ops = insn.operands
    direct = bool(ops) and ops[0].type == X.X86_OP_IMM
    if X.X86_GRP_CALL in groups:
        return "call" if direct else "indirect-call"
    if X.X86_GRP_JUMP in groups or X.X86_GRP_BRANCH_RELATIVE in groups:
        if m.endswith("jmp") or m.endswith("jmpq") or m == "ljmp":
            return "jump" if direct else "indirect-jump"
        return "cond"
    if m in ("ud2", "ud1", "ud0", "int3", "hlt"):
        return "stop"
    return None


_GPR64 = ("rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
          "r14", "r15")
_CALLER_SAVED = ("rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11")
RSP, RBP = 4, 5

#: The value a function finds at the top of its stack on entry, and where that is.
RETURN_ADDRESS = ("ret", 0)
ENTRY = ("entry", 0)


class _Regs:
    """capstone's x86 register ids mapped to the 16 general registers (any width)."""

    def __init__(self):
        import capstone
        from capstone import x86_const as X

        self.X = X
        md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        self.gpr: dict[int, int] = {}
        self.full: set[int] = set()  # the 64-bit names: only writes to these keep a value
        names = {n: i for i, n in enumerate(_GPR64)}
        aliases = {"eax": "rax", "ax": "rax", "al": "rax", "ah": "rax", "ecx": "rcx", "cx": "rcx", "cl": "rcx",
                   "ch": "rcx", "edx": "rdx", "dx": "rdx", "dl": "rdx", "dh": "rdx", "ebx": "rbx", "bx": "rbx",
                   "bl": "rbx", "bh": "rbx", "esp": "rsp", "sp": "rsp", "spl": "rsp", "ebp": "rbp", "bp": "rbp",
                   "bpl": "rbp", "esi": "rsi", "si": "rsi", "sil": "rsi", "edi": "rdi", "di": "rdi", "dil": "rdi"}
        for r in range(8, 16):
            for suffix in ("d", "w", "b"):
                aliases[f"r{r}{suffix}"] = f"r{r}"
        for reg_id in range(1, X.X86_REG_ENDING):
            name = md.reg_name(reg_id)
            if name in names:
                self.gpr[reg_id] = names[name]
                self.full.add(reg_id)
            elif name in aliases:
                self.gpr[reg_id] = names[aliases[name]]


_REGS: _Regs | None = None


def _regs() -> _Regs:
    global _REGS
    if _REGS is None:
        _REGS = _Regs()
    return _REGS


UNKNOWN = None


class Frame:
    """What the walk knows at one instruction: each general register as a symbolic value
    ``(base, offset)`` or UNKNOWN, and the stack slots whose contents are known.

    Bases are ``"entry"`` (the stack pointer at function entry: the return address lives at
    offset 0), ``"ret"`` (the return address itself) and fresh names for values only known
    relative to each other (the stack pointer after ``and $-64, %rsp``). This follows what gcc
    does with the stack, frame pointers and DRAP registers (``lea 8(%rsp),%r10`` ... ``lea
    -8(%r10),%rsp``). Writes through computed pointers are not followed: no static proof can
    say where they land; isolation and the tests are the layers for them.
    """

    __slots__ = ("regs", "slots")

    def __init__(self, regs: tuple, slots: frozenset):
        self.regs, self.slots = regs, slots

    @classmethod
    def entry(cls) -> Frame:
        regs = [UNKNOWN] * 16
        regs[RSP] = ENTRY
        return cls(tuple(regs), frozenset({(ENTRY, RETURN_ADDRESS)}))

    def __eq__(self, other) -> bool:
        return self.regs == other.regs and self.slots == other.slots

    def __hash__(self) -> int:
        return hash((self.regs, self.slots))

    def merge(self, other: Frame) -> Frame:
        regs = tuple(a if a == b else UNKNOWN for a, b in zip(self.regs, other.regs))
        return Frame(regs, self.slots & other.slots)

    @property
    def rsp(self):
        return self.regs[RSP]

    def height(self) -> str:
        r = self.rsp
        if r is UNKNOWN or r[0] != "entry":
            return "at an unknown height"
        return f"{-r[1]} bytes below its entry height" if r[1] <= 0 else f"{r[1]} bytes above its entry height"

    def returns_safely(self) -> bool:
        """rsp is back at entry and the slot there still holds the return address."""
        return self.rsp == ENTRY and (ENTRY, RETURN_ADDRESS) in self.slots


def _add(value, delta):
    return UNKNOWN if value is UNKNOWN else (value[0], value[1] + delta)


def _address(frame: Frame, op, X):
    """The symbolic address of a memory operand, when its base register is known."""
    mem = op.mem
    if mem.index != 0 or mem.segment != 0:
        return UNKNOWN
    R = _regs()
    base = R.gpr.get(mem.base)
    if base is None:
        return UNKNOWN
    return _add(frame.regs[base], mem.disp)


def _overlaps(a, size: int, b, bsize: int = 8) -> bool:
    return a[0] == b[0] and a[1] < b[1] + bsize and b[1] < a[1] + size


_PUSH = frozenset({"push", "pushq", "pushw", "pushf", "pushfq", "pushfw"})
_POP = frozenset({"pop", "popq", "popw", "popf", "popfq", "popfw"})  # not popcnt


def step(frame: Frame, insn, where: str, add) -> Frame:
    """The frame after ``insn``; reports accesses to the return-address slot through ``add``."""
    R = _regs()
    X = R.X
    m = insn.mnemonic
    ops = insn.operands
    regs = list(frame.regs)
    slots = dict(frame.slots)

    def value_of(op):
        if op.type == X.X86_OP_REG:
            r = R.gpr.get(op.reg)
            return regs[r] if r is not None and op.reg in R.full else UNKNOWN
        if op.type == X.X86_OP_MEM:
            addr = _address(frame, op, X)
            if addr is not UNKNOWN and op.size == 8:
                return slots.get(addr, UNKNOWN)
        return UNKNOWN

    def store(addr, size, value):
        for slot in [s for s in slots if _overlaps(addr, size, s)]:
            if slot == ENTRY and value != RETURN_ADDRESS:
                add("return-slot", f"`{m} {insn.op_str}` at {where} overwrites the return address")
            del slots[slot]
        if value is not UNKNOWN and size == 8:
            slots[addr] = value

    # Memory operands: reading or writing the return-address slot other than by push/pop.
    if not (m in _PUSH or m in _POP or m.startswith(("lea", "nop", "call", "ret"))):
        for op in ops:
            if op.type != X.X86_OP_MEM:
                continue
            addr = _address(frame, op, X)
            if addr is UNKNOWN:
                continue
            if op.access & 2:  # CS_AC_WRITE
                store(addr, op.size, value_of(ops[1]) if len(ops) == 2 and m in ("mov", "movq") else UNKNOWN)
            elif _overlaps(addr, op.size, ENTRY) and (ENTRY, RETURN_ADDRESS) in frame.slots:
                add("return-slot", f"`{m} {insn.op_str}` at {where} reads the return address")

    _reads, writes = insn.regs_access()
    if m in _PUSH:
        size = 2 if m in ("pushw", "pushfw") else 8
        value = value_of(ops[0]) if ops else UNKNOWN
        regs[RSP] = _add(regs[RSP], -size)
        if regs[RSP] is not UNKNOWN:
            store(regs[RSP], size, value)
        return Frame(tuple(regs), frozenset(slots.items()))
    if m in _POP:
        size = 2 if m in ("popw", "popfw") else 8
        top = regs[RSP]
        value = slots.get(top, UNKNOWN) if top is not UNKNOWN and size == 8 else UNKNOWN
        regs[RSP] = _add(top, size)
        if ops and ops[0].type == X.X86_OP_REG:
            r = R.gpr.get(ops[0].reg)
            if r is not None:
                regs[r] = value if ops[0].reg in R.full else UNKNOWN
        elif ops and ops[0].type == X.X86_OP_MEM:
            addr = _address(frame, ops[0], X)
            if addr is not UNKNOWN:
                store(addr, size, value)
        return Frame(tuple(regs), frozenset(slots.items()))
    if m in ("leave", "leaveq"):
        top = regs[RBP]
        regs[RBP] = slots.get(top, UNKNOWN) if top is not UNKNOWN else UNKNOWN
        regs[RSP] = _add(top, 8)
        return Frame(tuple(regs), frozenset(slots.items()))
    if m in ("call", "callq"):
        for name in _CALLER_SAVED:
            regs[_GPR64.index(name)] = UNKNOWN
        # The callee's own frame lies below rsp: what was stored there is gone.
        sp = regs[RSP]
        if sp is UNKNOWN:
            slots = {s: v for s, v in slots.items() if s[0] == "entry" and s[1] >= 0}
        else:
            slots = {s: v for s, v in slots.items() if not (s[0] == sp[0] and s[1] < sp[1])}
        return Frame(tuple(regs), frozenset(slots.items()))

    new = {}
    if len(ops) == 2 and ops[0].type == X.X86_OP_REG and ops[0].reg in R.full:
        dst = R.gpr.get(ops[0].reg)
        src = ops[1]
        if dst is not None:
            if m in ("mov", "movq", "movabs"):
                new[dst] = value_of(src)
            elif m in ("lea", "leaq") and src.type == X.X86_OP_MEM:
                new[dst] = _address(frame, src, X)
            elif m in ("add", "addq", "sub", "subq") and src.type == X.X86_OP_IMM:
                new[dst] = _add(regs[dst], src.imm if m.startswith("add") else -src.imm)
            elif m in ("and", "andq") and src.type == X.X86_OP_IMM and dst == RSP and regs[RSP] is not UNKNOWN:
                # Realignment: rsp is somewhere at or below where it was; name that place.
                new[dst] = (f"aligned@{insn.address:x}", 0)
    for reg_id in writes:
        r = R.gpr.get(reg_id)
        if r is not None:
            regs[r] = new.get(r, UNKNOWN)
    return Frame(tuple(regs), frozenset(slots.items()))


# --------------------------------------------------------------------------------- the proof

def validate(candidate: Unit, baseline: Baseline) -> list[Problem]:
    """Every broken rule in ``candidate`` (empty: proven), at most a few per rule."""
    problems: list[Problem] = []
    unit = candidate
    base_unit = baseline.unit

    def add(rule: str, text: str) -> None:
        if sum(p.rule == rule for p in problems) < 5:
            problems.append(Problem(rule, text))

    # -- sections ---------------------------------------------------------------------------
    for sec in unit.sections:
        flags = sec["sh_flags"]
        if flags & _SHF_EXECINSTR and flags & _SHF_WRITE:
            add("section", f"{sec.name} is both writable and executable")
        elif flags & _SHF_EXECINSTR and not (sec.name == ".text" or sec.name.startswith(".text.")):
            add("section", f"code in {sec.name}, outside .text*")
    for code in unit.code.values():
        if code.undecodable is not None:
            add("decode", f"bytes at {code.name}+{code.undecodable:#x} do not decode as instructions")
    if problems:
        return problems

    base_groups = {base_unit.group_of(n) for n in base_unit.functions}

    def construct_in_base(group: str, kinds: set[str]) -> bool:
        # A private copy (a renamed clone a variant brought along) has no namesake in gcc's
        # unit: then gcc's unit as a whole is the reference.
        return group in kinds if group in base_groups else bool(kinds)

    # -- data that points into code: jump tables and function pointers ----------------------
    table_targets: dict[str, set[tuple[int, int]]] = {}  # group -> code places reached through tables
    table_starts: dict[int, list[int]] = {}  # data section -> offsets code refers to (table bases)
    for shndx, code in unit.code.items():
        for r in unit.relocs_at.get(shndx, []):
            insn = _covering(code, r.offset)
            where, what = unit.target(r, insn.address + insn.size if insn is not None else None)
            if where == "data":
                table_starts.setdefault(what[0], []).append(what[1])
    for offsets in table_starts.values():
        offsets.sort()
    for r in unit.relocs:
        sec = unit.sections[r.section]
        if r.section in unit.code or not sec["sh_flags"] & _SHF_ALLOC or sec.name == ".eh_frame":
            continue  # code is walked below; debug and unwind info never run
        where, what = unit.target(r)
        if where == "external" and what not in baseline.taken and _is_function(base_unit, what, baseline):
            add("address", f"{sec.name}+{r.offset:#x} holds the address of {what}, which gcc's unit does not take")
        if where != "code":
            continue  # data pointing at data: the object checks cover which symbols exist
        shndx, off = what
        if r.type in _PC_RELOCS:
            # A PC-relative table entry (.long .L5-.L4) holds target - table base; the base is
            # the nearest label at or before this entry that code refers to.
            starts = table_starts.get(r.section, [])
            k = bisect.bisect_right(starts, r.offset) - 1
            if k < 0:
                add("table", f"a PC-relative code reference in {sec.name}+{r.offset:#x} belongs to no table")
                continue
            off = off - (r.offset - starts[k])
        fn = unit.function_at(shndx, off)
        name = unit.code_name((shndx, off))
        if fn is not None and unit.functions[fn][1] == off and (fn in baseline.taken or name in baseline.taken
                                                                 or not construct_in_base(fn, baseline.taken)):
            continue  # a function pointer in data, as gcc's unit has (or gcc's unit takes some)
        if fn is None or _at(unit.code[shndx], off) is None:
            add("table", f"{sec.name}+{r.offset:#x} points into {name}, not at an instruction")
            continue
        table_targets.setdefault(unit.group_of(fn), set()).add((shndx, off))

    # -- every function group, walked from its entry ------------------------------------------
    groups: dict[str, list[str]] = {}
    for name in unit.functions:
        groups.setdefault(unit.group_of(name), []).append(name)
    entries = {(s, a): n for n, (s, a, _b) in unit.functions.items()}
    for group, members in sorted(groups.items()):
        _walk(unit, baseline, group, members, entries, table_targets.get(group, set()),
              construct_in_base, add)
        _hidden_system_calls(unit, baseline, group, members, add)
    return problems


#: Encodings of kernel entries, which may hide inside other instructions' bytes.
GADGETS = {b"\x0f\x05": "syscall", b"\x0f\x34": "sysenter", b"\xcd\x80": "int 0x80"}


def _gadgets(unit: Unit, members) -> int:
    count = 0
    for name in members:
        shndx, start, end = unit.functions[name]
        data = unit.code[shndx].data[start:end]
        count += sum(data.count(p) for p in GADGETS)
    return count


def _hidden_system_calls(unit: Unit, baseline: Baseline, group: str, members, add) -> None:
    """Kernel-entry bytes inside other instructions are unreachable when every transfer goes
    to an instruction start, which the walk proves for direct branches and tables. A
    register-indirect jump or call computes its target at run time, so a function that has
    one may not carry such bytes beyond what gcc's own function carries."""
    indirect = False
    for name in members:
        shndx, start, end = unit.functions[name]
        dec = unit.code[shndx]
        k = bisect.bisect_left(dec.addrs, start)
        while k < len(dec.insns) and dec.insns[k].address < end:
            if _branch_kind(dec.insns[k]) in ("indirect-jump", "indirect-call"):
                indirect = True
                break
            k += 1
        if indirect:
            break
    if not indirect:
        return
    base = baseline.unit
    base_members = [n for n in base.functions if base.group_of(n) == group]
    allowed = _gadgets(base, base_members) if base_members else 0
    found = _gadgets(unit, members)
    if found > allowed:
        add("hidden", f"{group} jumps through registers and its bytes hide the encoding of a system call "
                      f"({found} such byte pairs, gcc's function has {allowed})")


def _walk(unit: Unit, baseline: Baseline, group: str, members: list[str], entries, table_targets,
          construct_in_base, add) -> None:
    """Follow every path of one function group from its entry, carrying the stack state, to a
    fixed point: where two paths meet with different states, the differing part becomes
    UNKNOWN (and a ``ret`` that needs it is refused)."""
    X = _regs().X
    ranges: dict[int, list[tuple[int, int]]] = {}
    for name in members:
        shndx, start, end = unit.functions[name]
        ranges.setdefault(shndx, []).append((start, end))
    base_names = set(baseline.unit.functions)

    def inside(place) -> bool:
        shndx, off = place
        return any(a <= off < b for a, b in ranges.get(shndx, []))

    entry_name = group if group in unit.functions else members[0]
    shndx0, start0, _ = unit.functions[entry_name]
    state: dict[tuple[int, int], Frame] = {}
    work: list[tuple[tuple[int, int], Frame]] = [((shndx0, start0), Frame.entry())]
    jump_states: set[Frame] = set()  # stack states at this group's indirect jumps
    targets = set(table_targets)  # places its tables (and its own label addresses) reach

    def reach(place, st) -> None:
        work.append((place, st))

    def add_target(place) -> None:
        if place not in targets:
            targets.add(place)
            for st in jump_states:
                reach(place, st)

    def fall(place, end, st, text, where, after_call) -> None:
        nxt = (place[0], end)
        if inside(nxt):
            reach(nxt, st)
        elif after_call is None:
            add("fall-through", f"`{text}` at {where} falls off the end of {group}")
        else:
            add("fall-through", f"{group} falls off its end after calling {after_call}, which returns")

    def reference(dest_kind, what, reloc, text, where) -> None:
        """A non-branch operand that names a place: only addresses gcc's code takes too."""
        if reloc is not None and reloc.type in _GOT_RELOCS:
            sym = unit.symbol(reloc.symbol)
            name = sym.name if sym is not None else "?"
            if name not in baseline.got and name != "_GLOBAL_OFFSET_TABLE_":
                add("address", f"`{text}` at {where} loads {name}'s address from the GOT, which gcc's code "
                               "does not")
            return
        if dest_kind == "external":
            if reloc is not None and reloc.type in _PC_RELOCS and what not in baseline.taken:
                add("address", f"`{text}` at {where} takes the address of {what}, which gcc's code does not")
            return
        if dest_kind != "code":
            return
        label = unit.code_name(what)
        fn = unit.function_at(*what)
        if fn is not None and unit.group_of(fn) == group and unit.functions[fn][1] != what[1]:
            # The address of its own label: a computed goto, as in gcc's function.
            if not construct_in_base(group, baseline.label_taken):
                add("address", f"`{text}` at {where} takes the address of its own code ({label})")
            elif _at(unit.code[what[0]], what[1]) is None:
                add("address", f"`{text}` at {where} refers into the middle of an instruction")
            else:
                add_target(what)
            return
        if fn is not None and unit.functions[fn][1] == what[1]:
            if fn in baseline.taken or label in baseline.taken:
                return
            if fn not in base_names and construct_in_base(group, baseline.taken):
                return  # a private copy's address, where gcc's code takes function addresses
        add("address", f"`{text}` at {where} takes the address of {label}, which gcc's code does not")

    steps = 0
    while work:
        place, st = work.pop()
        seen = state.get(place)
        if seen is not None:
            merged = seen.merge(st)
            if merged == seen:
                continue
            st = merged
        state[place] = st
        steps += 1
        if steps > MAX_INSNS:
            add("size", f"{group} is too large to analyse")
            return
        shndx, off = place
        code = unit.code[shndx]
        k = _at(code, off)
        if k is None:
            add("branch", f"{unit.code_name(place)} is reached but is not the start of an instruction")
            continue
        insn = code.insns[k]
        where = unit.code_name(place)
        text = f"{insn.mnemonic} {insn.op_str}".strip()
        kind = _branch_kind(insn)
        end = off + insn.size
        after = step(st, insn, where, add)
        sites = unit.reloc_sites.get(shndx, [])
        lo = bisect.bisect_left(sites, off)
        reloc = unit.reloc_by_site[(shndx, sites[lo])] if lo < len(sites) and sites[lo] < end else None

        if kind not in ("call", "jump", "cond"):
            if reloc is not None:
                reference(*unit.target(reloc, end), reloc, text, where)
            else:
                for op in insn.operands:
                    if op.type == X.X86_OP_MEM and op.mem.base == X.X86_REG_RIP:
                        # Resolved by the assembler: a place in this very section.
                        reference("code", (shndx, end + op.mem.disp), None, text, where)

        if X.X86_GRP_INT in insn.groups or X.X86_GRP_PRIVILEGE in insn.groups:
            # System calls, traps into the kernel, privileged instructions: no C function has them.
            add("instruction", f"`{text}` at {where} enters the kernel")
        elif kind is None:
            fall(place, end, after, text, where, None)
        elif kind == "stop":
            pass
        elif kind == "ret":
            if not st.returns_safely():
                add("ret", f"`{text}` at {where} with the stack {st.height()}, not proven to return to its caller")
        elif kind in ("indirect-jump", "indirect-call"):
            kinds = baseline.indirect_jump if kind == "indirect-jump" else baseline.indirect_call
            if not construct_in_base(group, kinds):
                add("indirect", f"`{text}` at {where}: gcc's code has no {kind.replace('-', ' ')} here")
            elif kind == "indirect-call":
                fall(place, end, after, text, where, "a function pointer")
            elif after not in jump_states:
                # A switch through a table, a computed goto, or a tail call through a pointer
                # (then the stack must be at its entry height, as for any tail jump).
                jump_states.add(after)
                for target in sorted(targets):
                    reach(target, after)
                if not targets and not st.returns_safely():
                    add("ret", f"indirect tail jump `{text}` at {where} with the stack {st.height()}")
        else:
            _direct(unit, baseline, group, place, insn, kind, reloc, end, after, st, text, where, entries,
                    inside, reach, fall, add)


def _direct(unit, baseline, group, place, insn, kind, reloc, end, after, st, text, where, entries, inside,
            reach, fall, add) -> None:
    """A direct call, jump or conditional jump: its target from the relocation, or from the
    displacement the assembler resolved."""
    X = _regs().X
    if reloc is not None:
        tkind, what = unit.target(reloc, end)
    else:
        imm = next((op.imm for op in insn.operands if op.type == X.X86_OP_IMM), None)
        if imm is None:
            add("branch", f"`{text}` at {where} has no target")
            return
        tkind, what = "code", (place[0], imm)
    if tkind == "external":
        form = "plt" if reloc.type == R_PLT32 else "direct"
        if (what, form) not in baseline.calls:
            add("call", f"`{text}` at {where} reaches {what} ({form}), which gcc's code does not call so")
        elif kind == "call":
            if what not in baseline.noreturn:
                fall(place, end, after, text, where, what)
        elif kind == "jump":
            if not st.returns_safely():
                add("ret", f"tail jump `{text}` at {where} with the stack {st.height()}")
        else:
            if not st.returns_safely():
                add("ret", f"conditional tail jump `{text}` at {where} with the stack {st.height()}")
            fall(place, end, after, text, where, None)
        return
    if tkind != "code":
        add("branch", f"`{text}` at {where} transfers control to {tkind} data")
        return
    callee = entries.get(what)
    if kind == "call" and callee is not None:
        if callee not in baseline.noreturn:
            fall(place, end, after, text, where, callee)
        return
    if inside(what):
        if kind == "call":
            add("call", f"`{text}` at {where} calls into its own body")
            return
        reach(what, after)
        if kind == "cond":
            fall(place, end, after, text, where, None)
        return
    if callee is None:
        add("branch", f"`{text}` at {where} reaches {unit.code_name(what)}, inside another function")
        return
    if not st.returns_safely():
        add("ret", f"tail jump `{text}` at {where} with the stack {st.height()}")
    if kind == "cond":
        fall(place, end, after, text, where, None)


def _is_function(base_unit: Unit, name: str, baseline: Baseline) -> bool:
    """Whether gcc's unit knows ``name`` as code: it calls it, or defines it as a function."""
    return (name, "plt") in baseline.calls or (name, "direct") in baseline.calls or name in base_unit.functions


# --------------------------------------------------------------------------------- entry point

_BASELINES: dict[tuple, Baseline] = {}


def verdict(candidate_obj: Path, baseline_obj: Path):
    """The proof as a stage verdict (:data:`sgcc.stages.Stage.CONTROL`): the first broken rule
    as the reason, up to 20 as the detail. An object the reader cannot parse is refused."""
    from sgcc.stages import Stage
    from sgcc.verify.verdict import Verdict

    try:
        problems = check(candidate_obj, baseline_obj)
    except SgccError as exc:
        return Verdict(False, Stage.CONTROL, exc.message)
    if problems:
        return Verdict(False, Stage.CONTROL, str(problems[0]), "\n".join(str(p) for p in problems[:20]))
    return Verdict(True, Stage.CONTROL)


def check(candidate_obj: Path, baseline_obj: Path) -> list[Problem]:
    """Validate the control flow of ``candidate_obj`` against gcc's ``baseline_obj``."""
    st = Path(baseline_obj).stat()
    key = (str(baseline_obj), st.st_size, st.st_mtime_ns, st.st_ino)
    base = _BASELINES.get(key)
    if base is None:
        base = Baseline(Unit(Path(baseline_obj)))
        if len(_BASELINES) > 16:
            _BASELINES.pop(next(iter(_BASELINES)))
        _BASELINES[key] = base
    return validate(Unit(Path(candidate_obj)), base)
