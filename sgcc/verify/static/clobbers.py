"""Which caller-saved registers a function may change, as its callers in the same file assume.

gcc -O2/-O3 enables ``-fipa-ra``: when a function's body is in the same translation unit, its
callers assume it clobbers only the registers it (and what it calls) actually writes, and keep
values in the other caller-saved registers across the call. A candidate that follows the
calling convention to the letter can therefore still break its caller by writing ``%r8``
where gcc's version did not. This module computes, from the assembled objects, each
function's transitive clobber set, and refuses a candidate whose set is not contained in
gcc's. (With ``-fno-ipa-ra`` in the flags callers assume the ABI and the check is moot.)

Sound direction: the baseline's sets are computed precisely (an over-estimate there would let
a bad candidate through); the candidate's may be over-estimated (that only refuses more).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sgcc.asm import x86
from sgcc.asm.obj import read_object
from sgcc.verify.static.stackframe import regs_access

_GPR_ALIASES = {
    "rax": ("rax", "eax", "ax", "al", "ah"),
    "rcx": ("rcx", "ecx", "cx", "cl", "ch"),
    "rdx": ("rdx", "edx", "dx", "dl", "dh"),
    "rsi": ("rsi", "esi", "si", "sil"),
    "rdi": ("rdi", "edi", "di", "dil"),
}
_CANON = {alias: reg for reg, aliases in _GPR_ALIASES.items() for alias in aliases}
_RN = re.compile(r"^r(8|9|10|11)[dwb]?$")
_VEC = re.compile(r"^[xyz]mm(\d+)$")
_MASK = re.compile(r"^k[0-7]$")

#: Every caller-saved register ipa-ra tracks, by canonical name (the flags never survive a call).
ALL_CALLER_SAVED = frozenset(
    [*x86.CALLER_SAVED]
    + [f"v{i}" for i in range(32)]
    + [f"k{i}" for i in range(8)]
)


def canonical(name: str) -> str | None:
    """The caller-saved register a capstone register name belongs to, or None."""
    if name in _CANON:
        return _CANON[name]
    m = _RN.match(name)
    if m:
        return f"r{m.group(1)}"
    m = _VEC.match(name)
    if m:
        return f"v{m.group(1)}"
    if _MASK.match(name):
        return name
    return None


class ClobberAnalysis:
    """The functions of one relocatable object: code ranges, direct writes and call targets.

    Built on the shared parse of :func:`sgcc.asm.obj.read_object` (the object screen has
    usually read and decoded the same file already).
    """

    def __init__(self, path: Path):
        obj = read_object(path)
        self.symbols = obj.symbols
        self._obj = obj
        self.code: dict[int, bytes] = {}
        for dec in obj.code:
            if obj.sections[dec.index]["sh_type"] == "SHT_PROGBITS":
                self.code[dec.index] = dec.data
        # relocations by (section index, offset) -> symbol name (or section-relative target),
        # from the reader's one decoding (sgcc.asm.obj.ObjectFile.relocs)
        self.relocs: dict[tuple[int, int], tuple[str, int, int]] = {}
        for r in obj.relocs:
            if r.section in self.code:
                sym = self.symbols[r.symbol] if self.symbols else None
                name = sym.name if sym is not None else ""
                shndx = sym["st_shndx"] if sym is not None else "SHN_UNDEF"
                sec_of = shndx if isinstance(shndx, int) else -1
                self.relocs[(r.section, r.offset)] = (name, sec_of, r.addend)
        # Function groups (a function and its .cold parts) from the reader's one model of
        # extents: name -> [(section, start, size)].
        self.functions: dict[str, list[tuple[int, int, int]]] = {}
        for name, (shndx, start, end) in obj.extents.items():
            self.functions.setdefault(obj.group_of(name), []).append((shndx, start, end - start))

    def instructions(self, shndx: int) -> dict[int, Any]:
        """The linear disassembly of code section ``shndx``, by address."""
        dec = self._obj.decoded(shndx) if shndx in self.code else None
        return {i.address: i for i in dec.insns} if dec is not None else {}

    def function_at(self, shndx: int, address: int) -> str | None:
        """The function group (:meth:`sgcc.asm.obj.ObjectFile.group_of`) covering ``address``."""
        fn = self._obj.function_at(shndx, address)
        return self._obj.group_of(fn) if fn is not None else None

    def direct(self, name: str, assumed: bool = False) -> tuple[set[str], set[str], bool]:
        """Registers ``name`` writes itself, functions it calls here, and whether it calls out.

        ``assumed=True`` reads gcc's own code the way gcc's callers saw it, erring low: an
        indirect ``jmp`` is a jump table or computed goto (it stays inside), ``vzeroupper``
        leaves the low halves the callers keep values in, and what cannot be decoded writes
        nothing. Otherwise every doubt errs high (a candidate's code)."""
        import capstone

        writes: set[str] = set()
        callees: set[str] = set()
        calls_out = False
        for shndx, start, size in self.functions.get(name, []):
            decoded = 0
            recent: list = []  # the instructions just before this one (a table jump's setup)
            for insn in self._obj.insns(shndx, start, start + size) if shndx in self.code else ():
                recent = [*recent[-5:], insn]
                decoded += insn.size
                if assumed and insn.mnemonic in ("vzeroupper", "vzeroall"):
                    continue
                try:
                    _, written = regs_access(insn)
                except capstone.CsError:
                    calls_out = calls_out or not assumed  # cannot tell: assume the worst
                    continue
                for reg in written:
                    canon = canonical(insn.reg_name(reg))
                    if canon:
                        writes.add(canon)
                is_call = insn.group(capstone.CS_GRP_CALL)
                is_jump = insn.group(capstone.CS_GRP_JUMP)
                if not (is_call or is_jump):
                    continue
                target = self._branch_target(shndx, insn, name)
                if target is _INSIDE:
                    continue
                if target is None:
                    ops = insn.operands
                    if assumed and is_jump and not is_call and not (len(ops) == 1 and ops[0].type == 2):
                        continue  # an indirect jump in gcc's code: a table within the function
                    if is_jump and not is_call and self._table_jump_inside(shndx, recent, name):
                        continue  # a switch whose every table entry lands in this function
                    calls_out = True
                else:
                    callees.add(target)
            if decoded < size and not assumed:
                calls_out = True  # undecodable bytes: assume the worst
        return writes, callees, calls_out

    def _reloc_in(self, shndx: int, insn):
        """(offset, name, section of the symbol, addend) of the relocation inside ``insn``."""
        for off in range(insn.address + 1, insn.address + insn.size):
            rel = self.relocs.get((shndx, off))
            if rel is not None:
                return (off, *rel)
        return None

    def _table_jump_inside(self, shndx: int, recent: list, current: str) -> bool:
        """Whether the indirect jump ending ``recent`` is gcc's switch idiom through a table in
        read-only data whose every entry is an address in ``current`` (a candidate's switch
        then stays inside, as gcc's does; anything else calls out).

        Position-dependent: ``jmp *TABLE(,%idx,8)`` with 8-byte absolute entries. PIC: ``lea
        TABLE(%rip), %b; movslq (%b,%idx,4), %r; add %b, %r; jmp *%r`` with 4-byte entries
        ``.long .Lk-TABLE``, with nothing writing ``%b`` between the ``lea`` and the ``add``."""
        from capstone import x86_const as X

        jmp = recent[-1]
        ops = jmp.operands
        if len(ops) != 1:
            return False
        op = ops[0]
        if op.type == X.X86_OP_MEM:
            if op.mem.base != 0 or op.mem.index == 0 or op.mem.scale != 8 or op.mem.segment != 0:
                return False
            rel = self._reloc_in(shndx, jmp)
            if rel is None:
                return False
            return self._entries_inside(rel[2], rel[3], 8, current)
        if op.type != X.X86_OP_REG or len(recent) < 4:
            return False
        reg = op.reg
        add, load = recent[-2], recent[-3]
        if add.mnemonic != "add" or len(add.operands) != 2 or add.operands[0].type != X.X86_OP_REG or \
                add.operands[0].reg != reg or add.operands[1].type != X.X86_OP_REG:
            return False
        base = add.operands[1].reg
        if base == reg:
            return False
        if load.mnemonic != "movsxd" or len(load.operands) != 2 or load.operands[0].reg != reg:
            return False
        mem = load.operands[1]
        if mem.type != X.X86_OP_MEM or mem.mem.base != base or mem.mem.scale != 4 or mem.mem.disp != 0 or \
                mem.mem.segment != 0 or mem.mem.index in (0, base):
            return False
        for lea in reversed(recent[:-3]):
            _read, written = regs_access(lea)
            if lea.mnemonic == "lea" and lea.operands[0].reg == base and lea.operands[1].mem.base == X.X86_REG_RIP:
                rel = self._reloc_in(shndx, lea)
                if rel is None:
                    return False
                off, _name, sec_of, addend = rel
                return self._entries_inside(sec_of, addend + (lea.address + lea.size - off), 4, current)
            if base in written:
                return False
        return False

    def _entries_inside(self, sec_of: int, table: int, size: int, current: str) -> bool:
        """Whether the table at ``table`` in read-only section ``sec_of`` has entries, and each
        (contiguous ``size``-byte relocated words from its start) reaches code of ``current``."""
        if not 0 < sec_of < len(self._obj.sections) or sec_of in self.code:
            return False
        sec = self._obj.sections[sec_of]
        if sec["sh_flags"] & 0x1 or sec["sh_type"] != "SHT_PROGBITS":
            return False  # writable: its entries could change at run time
        entries = {r.offset: (r.type, r.symbol, r.addend) for r in self._obj.relocs_in(sec_of)}
        ranges = self.functions.get(current, [])
        k = 0
        while table + k * size in entries:
            rtype, symidx, addend = entries[table + k * size]
            if rtype != (2 if size == 4 else 1):  # R_X86_64_PC32 (.long .Lk-T) or R_X86_64_64
                return False
            sym = self.symbols[symidx] if 0 < symidx < len(self.symbols) else None
            if sym is None or not isinstance(sym["st_shndx"], int):
                return False
            dest = sym["st_value"] + addend - (k * size if size == 4 else 0)
            if not any(sec == sym["st_shndx"] and start <= dest < start + length for sec, start, length in ranges):
                return False
            k += 1
        return k > 0

    def _branch_target(self, shndx: int, insn, current: str):
        """The local function a call/jump reaches, _INSIDE for a branch within ``current``,
        or None for anything unknown (external, indirect)."""
        for off in range(insn.address + 1, insn.address + insn.size):
            rel = self.relocs.get((shndx, off))
            if rel is not None:
                name, sec_of, addend = rel
                if name in self.functions:
                    return name if name != current else _INSIDE
                if sec_of >= 0 and not name:  # section-relative (a local label)
                    target = self.function_at(sec_of, addend + 4)
                    return _INSIDE if target == current else target
                if name.startswith(".L") or (sec_of >= 0 and name not in self.functions):
                    target = self.function_at(sec_of, addend + 4) if sec_of >= 0 else None
                    return _INSIDE if target == current else target
                return None
        ops = insn.operands
        if len(ops) == 1 and ops[0].type == 2:  # X86_OP_IMM: a direct branch resolved by gas
            target = self.function_at(shndx, ops[0].imm)
            if target == current:
                return _INSIDE
            return target
        return None  # indirect (register or memory operand)

    def clobbers(self, name: str, assumed: bool = False) -> frozenset[str]:
        """Transitive caller-saved clobber set of ``name``: the union of what every function
        reachable from it writes, or everything if any of them calls out of the file.
        ``assumed=True``: what gcc's callers assumed, erring low (see :meth:`direct`)."""
        result: set[str] = set()
        seen: set[str] = set()
        todo = [name]
        while todo:
            fn = todo.pop()
            if fn in seen:
                continue
            seen.add(fn)
            writes, callees, out = self.direct(fn, assumed)
            if out:
                return ALL_CALLER_SAVED
            result |= writes
            todo.extend(callees)
        return frozenset(result)


_INSIDE = object()


# (rax: a variadic call's count of vector arguments)
_ARG_REGS = frozenset([*x86.ARGUMENT_REGS, "rax"] + [f"v{i}" for i in range(8)])
_PARTIAL = re.compile(r"^(?:[abcd][lh]|[abcd]x|si|di|sil|dil|r(?:8|9|10|11)[wb])$")
_WALK_BUDGET = 4000
# C library functions whose prototypes take no floating-point or vector arguments: a call to
# one reads no vector register.
_NO_VECTOR_ARGS = frozenset("""
    puts putchar putc fputc fputs fwrite fread fflush getchar getc fgetc fgets ungetc malloc calloc
    realloc free memcpy memmove memset memcmp memchr strlen strcmp strncmp strcpy strncpy strchr
    strrchr strstr strdup strndup strtol strtoul strtoll strtoull atoi atol exit _exit abort
    qsort bsearch __stack_chk_fail __assert_fail write read
""".split())
# Variadic functions: the caller sets %al to (an upper bound of) the number of vector
# registers that carry arguments (SysV ABI 3.5.7).
_VARIADIC = frozenset("""
    printf fprintf sprintf snprintf dprintf scanf fscanf sscanf __printf_chk __fprintf_chk
    __sprintf_chk __snprintf_chk __dprintf_chk __isoc99_scanf __isoc99_fscanf __isoc99_sscanf
    __isoc23_scanf __isoc23_fscanf __isoc23_sscanf
""".split())


def live_after_calls(obj: ClobberAnalysis, function: str, regs: set[str], ignore=frozenset()) -> set[str]:
    """Which of ``regs`` may be live after some direct call to ``function`` in ``obj``
    (call sites inside the functions of ``ignore`` do not count: a candidate replaces them).

    From each call site, walk the caller's code forward (both ways at conditional branches,
    into jump targets within the caller): a read makes the register live, a full write makes
    it dead on that path, a call out of the file kills it unless it is an argument register.
    Anything the walk cannot follow (returns, indirect jumps, calls to functions in the file,
    tail calls to ``function``, the budget running out) counts as live: unsure means refuse.
    """
    import capstone

    insns: dict[int, dict[int, Any]] = {shndx: obj.instructions(shndx) for shndx in obj.code}
    # Every direct call or tail call in the file: target -> [(section, address, caller, is_jump)].
    sites: dict[str, list[tuple[int, int, str, bool]]] = {}
    for caller, ranges in obj.functions.items():
        for shndx, start, size in ranges:
            for addr in sorted(a for a in insns.get(shndx, {}) if start <= a < start + size):
                insn = insns[shndx][addr]
                jump = insn.group(capstone.CS_GRP_JUMP)
                if insn.group(capstone.CS_GRP_CALL) or jump:
                    target = obj._branch_target(shndx, insn, caller)
                    if isinstance(target, str):
                        sites.setdefault(target, []).append((shndx, addr, caller, bool(jump)))
    called = set(sites)
    live: set[str] = set()
    for shndx, addr, caller, jump in sites.get(function, []):
        if caller in ignore:
            continue
        if jump:
            return set(regs)  # a tail call: F returns straight to the caller's callers
        insn = insns[shndx][addr]
        for reg in regs - live:
            if _may_be_read(obj, insns[shndx], shndx, addr + insn.size, caller, reg, called):
                live.add(reg)
    return live


def _may_be_read(obj: ClobberAnalysis, code: dict, shndx: int, start: int, caller: str, reg: str,
                 called: set[str]) -> bool:
    import capstone

    todo, seen, steps = [start], set(), 0
    while todo:
        addr = todo.pop()
        while True:
            if addr in seen:
                break
            seen.add(addr)
            steps += 1
            insn = code.get(addr)
            if insn is None or steps > _WALK_BUDGET:
                return True
            try:
                read, written = regs_access(insn)
            except capstone.CsError:
                return True
            if any(canonical(insn.reg_name(r)) == reg for r in read):
                return True
            if insn.group(capstone.CS_GRP_RET) or insn.group(capstone.CS_GRP_IRET):
                if caller in called:
                    return True  # its callers in this file may rely on the register too
                break  # only callers elsewhere, which assume the ABI: caller-saved means dead
            if insn.group(capstone.CS_GRP_CALL):
                target = obj._branch_target(shndx, insn, caller)
                if target is None and not _call_reads(obj, code, shndx, insn, reg):
                    break  # an external call clobbers every caller-saved register it does not read
                return True
            full = [insn.reg_name(r) for r in written if canonical(insn.reg_name(r)) == reg]
            if full and not any(_PARTIAL.match(name) for name in full):
                break  # overwritten before any read on this path
            if insn.group(capstone.CS_GRP_JUMP):
                target = obj._branch_target(shndx, insn, caller)
                ops = insn.operands
                if target is not _INSIDE or not (len(ops) == 1 and ops[0].type == 2):
                    return True
                todo.append(ops[0].imm)
                if insn.mnemonic == "jmp":
                    break
            addr = insn.address + insn.size
    return False


def _call_reads(obj: ClobberAnalysis, code: dict, shndx: int, insn, reg: str) -> bool:
    """Whether an external call may read ``reg`` as an argument."""
    if reg not in _ARG_REGS:
        return False
    if not reg.startswith("v"):
        return True
    name = _external_name(obj, shndx, insn)
    if name in _NO_VECTOR_ARGS:
        return False
    if name in _VARIADIC:
        count = _al_before(code, insn.address)
        return count is None or int(reg[1:]) < count
    return True


def _external_name(obj: ClobberAnalysis, shndx: int, insn) -> str | None:
    for off in range(insn.address + 1, insn.address + insn.size):
        rel = obj.relocs.get((shndx, off))
        if rel is not None:
            return rel[0] or None
    return None


def _al_before(code: dict, address: int) -> int | None:
    """The constant the instruction right before ``address`` puts in %eax/%al, if it does."""
    for size in range(1, 8):
        prev = code.get(address - size)
        if prev is not None and prev.address + prev.size == address:
            text = f"{prev.mnemonic} {prev.op_str}"
            if text in ("xor eax, eax", "xor al, al"):
                return 0
            m = re.fullmatch(r"mov (?:eax|al), (0x[0-9a-f]+|\d+)", text)
            return int(m.group(1), 0) if m else None
    return None


def extra_clobbers(candidate_obj: Path, baseline_obj: Path, function: str, *, replaced=frozenset()) -> list[str]:
    """Caller-saved registers the candidate's ``function`` may change, that gcc's does not,
    and that a caller in this file may still need after the call. Callers among ``replaced``
    (the functions the candidate replaces, which come with it) do not count."""
    base = ClobberAnalysis(baseline_obj)
    cand = ClobberAnalysis(candidate_obj)
    if function not in cand.functions:
        return []  # the object check reports a missing function; nothing to compare here
    # gcc's callers relied on what they assumed gcc's version writes (erring low), the
    # candidate may write anything its code could (erring high).
    extra = set(cand.clobbers(function) - base.clobbers(function, assumed=True))
    if extra:
        extra = live_after_calls(base, function, extra, frozenset(replaced))
    return sorted(extra, key=lambda r: (r[0], int(r[1:]) if r[1:].isdigit() else 0, r))


def describe(regs: list[str]) -> str:
    """Registers as an assembler writes them (``%rcx, %xmm3``) for messages."""
    names = [f"%xmm{r[1:]}" if r.startswith("v") else f"%{r}" for r in regs]
    return ", ".join(names)
