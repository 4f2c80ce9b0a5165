"""What the control-flow proof knows of an object: its code, symbols and relocations
(:class:`Unit`), and the constructs gcc's own object uses (:class:`Baseline`).

Read through the one object reader (:func:`sgcc.asm.obj.read_object`), so the object checks,
the instruction-set check and the proof share one parse. Used by :mod:`sgcc.verify.static.controlflow`.
"""

from __future__ import annotations

import bisect
from pathlib import Path

# The relocation types and their decoding live in the object reader: one model for every proof.
from sgcc.asm.obj import ABS_RELOCS, GOT_RELOCS, PC_RELOCS, R_PLT32  # noqa: F401 - re-exported
from sgcc.errors import SgccError
from sgcc.verify.static.stackframe import registers

#: Functions that never return: falling off the end of a function right after calling one
#: of these is gcc's normal code (``call abort`` is often a function's last instruction).
NORETURN = frozenset(
    """abort exit _exit _Exit quick_exit __stack_chk_fail __assert_fail __assert_perror_fail
    __fortify_fail __chk_fail longjmp siglongjmp _longjmp __longjmp_chk err errx verr verrx
    __cxa_throw __cxa_rethrow _Unwind_Resume pthread_exit thrd_exit __libc_fatal""".split()
)

SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4


# --------------------------------------------------------------------------------- object model

def at(dec, offset: int):
    """Index of the instruction starting at ``offset`` in a decoded section, or None."""
    k = bisect.bisect_left(dec.addrs, offset)
    if k < len(dec.addrs) and dec.addrs[k] == offset:
        return k
    return None


def covering(dec, offset: int):
    """The instruction whose bytes include ``offset``, or None."""
    k = bisect.bisect_right(dec.addrs, offset) - 1
    if k >= 0 and dec.insns[k].address <= offset < dec.insns[k].address + dec.insns[k].size:
        return dec.insns[k]
    return None


class Unit:
    """What the validator knows of one relocatable object: code, symbols, relocations and
    function extents, all from the one object reader (:func:`sgcc.asm.obj.read_object`), so
    the object checks, the instruction-set check, the register check and this proof share one
    parse and one model (extents, ``.cold`` grouping, relocation targets)."""

    def __init__(self, path: Path):
        from sgcc.asm.obj import read_object

        obj = read_object(path)
        if not obj.relocatable:
            raise SgccError(f"{Path(path).name} is not a relocatable object")
        self.obj = obj
        self.path = Path(path)
        self.sections = obj.sections
        self.symbols = obj.symbols
        self.code = {dec.index: dec for dec in obj.code}
        self.relocs = obj.relocs
        self.functions: dict[str, tuple[int, int, int]] = obj.extents  # name -> (section, start, end)
        self.relocs_at: dict[int, list] = {}
        for r in self.relocs:
            self.relocs_at.setdefault(r.section, []).append(r)
        self.reloc_by_site = {(r.section, r.offset): r for r in self.relocs}
        self.function_at = obj.function_at
        self.group_of = obj.group_of
        self.target = obj.target
        self.reloc_in = obj.reloc_in

    def aliases(self, name: str) -> set[str]:
        """The function groups of every name whose extent is ``name``'s (``name`` included)."""
        place = self.functions[name]
        return {self.group_of(n) for n, ext in self.functions.items() if ext == place}

    def symbol(self, index: int):
        return self.symbols[index] if 0 < index < len(self.symbols) else None

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
        self.group_calls: dict[str, set[tuple[str, str]]] = {}  # per function group: its external calls
        #: What gcc's groups read, once walked (sgcc.verify.static.controlflow.flow_facts).
        self.flow_record: dict | None = None
        for shndx, code in unit.code.items():
            for insn in code.insns:
                fn = unit.function_at(shndx, insn.address)
                group = unit.group_of(fn) if fn else "?"
                kind = branch_kind(insn)
                if kind == "indirect-jump":
                    self.indirect_jump.add(group)
                elif kind == "indirect-call":
                    self.indirect_call.add(group)
            for r in unit.relocs_at.get(shndx, []):
                insn = covering(code, r.offset)
                end = insn.address + insn.size if insn is not None else None
                kind = branch_kind(insn) if insn is not None else None
                where, what = unit.target(r, end)
                if r.type in GOT_RELOCS:
                    sym = unit.symbol(r.symbol)
                    self.got.add(sym.name if sym is not None else "")
                elif kind in ("call", "jump") and where == "external":
                    call = (what, "plt" if r.type == R_PLT32 else "direct")
                    self.calls.add(call)
                    fn = unit.function_at(shndx, r.offset)
                    if fn is not None:
                        self.group_calls.setdefault(unit.group_of(fn), set()).add(call)
                elif kind not in ("call", "jump", "cond") and where == "code":
                    fn = unit.function_at(*what)
                    self.taken.add(unit.code_name(what))
                    if fn is not None:
                        self.label_taken.add(unit.group_of(fn))
                elif kind not in ("call", "jump", "cond") and where == "external":
                    self.taken.add(what)
            self._resolved_references(unit, shndx, code)
        for r in unit.relocs:
            sec = unit.sections[r.section]
            if r.section in unit.code or not sec["sh_flags"] & SHF_ALLOC or sec.name == ".eh_frame":
                continue
            where, what = unit.target(r)
            if where == "code":
                self.taken.add(unit.code_name(what))
            elif where == "external":
                self.taken.add(what)
        # Per function group, the functions of the unit it calls or tail-jumps to.
        self.group_local_calls: dict[str, set[str]] = {}
        for shndx, code in unit.code.items():
            for insn in code.insns:
                if branch_kind(insn) not in ("call", "jump", "cond"):
                    continue
                fn = unit.function_at(shndx, insn.address)
                if fn is None:
                    continue
                r = unit.reloc_in(shndx, insn.address, insn.address + insn.size)
                where, what = unit.target(r, insn.address + insn.size) if r is not None else ("code", None)
                if what is None:
                    imm = next((op.imm for op in insn.operands if op.type == registers().X.X86_OP_IMM), None)
                    what = (shndx, imm) if imm is not None else None
                if where == "code" and what is not None:
                    callee = unit.function_at(*what)
                    if callee is not None and unit.group_of(callee) != unit.group_of(fn):
                        # Every name of the callee's entry (aliases: weak_alias = real_impl).
                        self.group_local_calls.setdefault(unit.group_of(fn), set()).update(unit.aliases(callee))
        # A call gcc placed last in a function (or right before another function) does not return.
        for shndx, code in unit.code.items():
            for k, insn in enumerate(code.insns):
                if branch_kind(insn) != "call":
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
                    else:
                        # A call the assembler resolved (a local function in the same section,
                        # such as an assert's .part.0 split): its target is the immediate.
                        X = registers().X
                        imm = next((op.imm for op in insn.operands if op.type == X.X86_OP_IMM), None)
                        if imm is not None:
                            self.noreturn.add(unit.code_name((shndx, imm)))


    def reached(self, group: str) -> set[str]:
        """The function groups of gcc's unit that ``group`` reaches through the unit's functions
        it calls or tail-jumps to, transitively, itself included: gcc's function as a call
        graph, whatever it inlined. What gcc's function may call, and whether it passes stack
        addresses to calls, is what any of these does (an untrusted candidate that inlined
        gcc's ``xmalloc`` calls ``posix_memalign`` with its own frame's address, as gcc's
        ``xmalloc`` does for gcc's ``main``)."""
        if not hasattr(self, "_reached"):
            self._reached: dict[str, set[str]] = {}
        if group not in self._reached:
            unit = self.unit
            seen, todo = {group}, [group]
            while todo:
                for name in self.group_local_calls.get(todo.pop(), ()):
                    if name in unit.functions:
                        g = unit.group_of(name)
                        if g not in seen:
                            seen.add(g)
                            todo.append(g)
            self._reached[group] = seen
        return self._reached[group]

    def reached_calls(self, group: str) -> set[tuple[str, str]]:
        """The externals (name, form) gcc's ``group`` calls, itself or through the unit's
        functions it reaches (:meth:`reached`)."""
        out: set[tuple[str, str]] = set()
        for g in self.reached(group):
            out |= self.group_calls.get(g, set())
        return out

    def reached_local_calls(self, group: str) -> set[str]:
        """The unit's functions gcc's ``group`` calls, itself or through those it reaches."""
        out: set[str] = set()
        for g in self.reached(group):
            out |= self.group_local_calls.get(g, set())
        return out

    def _resolved_references(self, unit: Unit, shndx: int, code) -> None:
        """Addresses gcc's code takes that need no relocation: ``lea f(%rip)`` to a static
        function in the same section is resolved by the assembler, so only the instruction's
        RIP-relative operand says that gcc takes ``f``'s address (a callback passed to a
        library, as Lua's ``lua_pcallk`` passes ``f_call``). The candidate walk resolves such
        operands the same way, so both sides must count them or gcc's own code is refused."""
        X = registers().X
        for insn in code.insns:
            end = insn.address + insn.size
            if unit.reloc_in(shndx, insn.address, end) is not None:
                continue  # a relocation names the place; counted above
            if branch_kind(insn) in ("call", "jump", "cond"):
                continue
            for op in insn.operands:
                if op.type == X.X86_OP_MEM and op.mem.base == X.X86_REG_RIP:
                    what = (shndx, end + op.mem.disp)
                    self.taken.add(unit.code_name(what))
                    here, there = unit.function_at(shndx, insn.address), unit.function_at(*what)
                    if here is not None and there is not None and unit.group_of(here) == unit.group_of(there) \
                            and unit.functions[there][1] != what[1]:
                        self.label_taken.add(unit.group_of(here))


# --------------------------------------------------------------------------------- instructions

def branch_kind(insn) -> str | None:
    """``call``, ``jump``, ``cond``, ``indirect-call``, ``indirect-jump``, ``ret``, ``stop``
    (traps and halts: no successor) or None (falls through)."""
    X = registers().X
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
