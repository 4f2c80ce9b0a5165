"""The stack, as the control-flow proof follows it through one function.

:func:`step` gives the :class:`Frame` after an instruction: the 16 general registers as
symbolic values (an offset from the stack pointer at function entry, or UNKNOWN) and the
stack slots whose contents are known, the return address among them. It follows what gcc
does with the stack (push/pop, constant adjustments, frame pointers, ``leave``, realignment
with a DRAP register) and reports accesses to the return-address slot. Used by
:mod:`sgcc.verify.static.controlflow`.
"""

from __future__ import annotations

from sgcc.asm.x86 import CALLER_SAVED, GPR64

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
        names = {n: i for i, n in enumerate(GPR64)}
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


def registers() -> _Regs:
    global _REGS
    if _REGS is None:
        _REGS = _Regs()
    return _REGS


UNKNOWN = None
#: A value only untrusted code's walk has: different on different paths, and at least one
#: of them not clean (a stack address, a callee-saved register's incoming value...).
DIRTY = ("dirty", 0)


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

    __slots__ = ("regs", "slots", "flow")

    def __init__(self, regs: tuple, slots: frozenset, flow=None):
        # ``flow``: the information-flow state of an untrusted candidate
        # (:class:`sgcc.verify.static.infoflow.FlowState`), None for gcc's code.
        self.regs, self.slots, self.flow = regs, slots, flow

    @classmethod
    def entry(cls, flow=None, regs=None) -> Frame:
        if regs is None:
            regs = [UNKNOWN] * 16
        regs = list(regs)
        regs[RSP] = ENTRY
        return cls(tuple(regs), frozenset({(ENTRY, RETURN_ADDRESS)}), flow)

    def __eq__(self, other) -> bool:
        return self.regs == other.regs and self.slots == other.slots and self.flow == other.flow

    def __hash__(self) -> int:
        return hash((self.regs, self.slots, self.flow))

    def merge(self, other: Frame) -> Frame:
        if self.flow is None:
            regs = tuple(a if a == b else UNKNOWN for a, b in zip(self.regs, other.regs))
            return Frame(regs, self.slots & other.slots)
        # Untrusted code: a register that differs between paths is not "unknown, so harmless"
        # but DIRTY (it may hold a stack address or the caller's state); only two clean
        # values merge to clean.
        regs = tuple(a if a == b else _merge_untrusted(a, b) for a, b in zip(self.regs, other.regs))
        return Frame(regs, self.slots & other.slots, self.flow.merge(other.flow))

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


def _merge_untrusted(a, b):
    """Two different values of one register where paths meet, in untrusted code: clean data
    (None, or a constant) stays clean; clean data and what the caller left stays the caller's
    ("junk", not to be read), or its own low bits over it where either is ("low": readable only
    as narrow as both); anything else may be a stack address or the caller's state."""
    kinds = {v[0] if v is not None else None for v in (a, b)}
    if kinds <= {None, "imm"}:
        return UNKNOWN
    if "low" in kinds and kinds <= {None, "imm", "low"}:
        # Clean on one path, its own low bits over something else on the other (or both):
        # readable at the narrower width; the rest is what both had above, merged.
        lows = [v for v in (a, b) if v is not None and v[0] == "low"]
        upper = lows[0][1] if len(lows) == 1 or lows[0][1] == lows[1][1] else _merge_untrusted(lows[0][1], lows[1][1])
        return ("low", upper if upper is not None else DIRTY, min(v[2] for v in lows))
    if "low" in kinds:  # with the caller's register or a stack address on the other path
        a, b = (v[1] if v is not None and v[0] == "low" else v for v in (a, b))
        return a if a == b else _merge_untrusted(a, b)
    if kinds <= {None, "imm", "junk"}:
        return a if a is not None and a[0] == "junk" else b
    return DIRTY


def _add(value, delta):
    if value is UNKNOWN or not isinstance(value[1], int):
        return value  # a "low" value (untrusted code's walk) stays what it was: not clean
    return (value[0], value[1] + delta)


def _address(frame: Frame, op, X):
    """The symbolic address of a memory operand, when its base register is known."""
    mem = op.mem
    if mem.index != 0 or mem.segment != 0:
        return UNKNOWN
    R = registers()
    base = R.gpr.get(mem.base)
    if base is None:
        return UNKNOWN
    return _add(frame.regs[base], mem.disp)


def _overlaps(a, size: int, b, bsize: int = 8) -> bool:
    return a[0] == b[0] and a[1] < b[1] + bsize and b[1] < a[1] + size


PUSH = frozenset({"push", "pushq", "pushw", "pushf", "pushfq", "pushfw"})
POP = frozenset({"pop", "popq", "popw", "popf", "popfq", "popfw"})  # not popcnt


_VECTOR_STORE = __import__("re").compile(r"^v?(?:mov|extract|pextr|maskmov|cvtps2ph|pmov|compress|scatter|pscatter)")


def mem_access(insn, k: int) -> int:
    """The access flags of ``insn``'s operand ``k`` (a memory operand), as capstone reports
    them but for stores it gets wrong: it marks the memory destination of VEX and EVEX vector
    stores (`vmovsd %xmm0, 8(%rsp)`, `vmovups`, `vextractf128`...) and of some legacy ones
    (`movq %xmm0, (m)`, `movlps`, `pextrq`) as read only. A store's destination (the first
    operand, of a move or extract into memory) is written, not read: missed, the model kept a
    saved register's slot as saved across such a store (and took clang's spills for unwritten)."""
    op = insn.operands[k]
    if k == 0 and not op.access & 2 and len(insn.operands) >= 2 and _VECTOR_STORE.match(insn.mnemonic):
        return 2
    return op.access


#: Instructions that replace their destination register whole (merge masking aside): where
#: capstone gives that operand no access, it is written and not read. Broadcasts, shifts and
#: shuffles by an immediate, `vgetmant`/`vgetexp`, `valign`, compares into a mask register,
#: gathers (whose merge is their mask's), and the mask register arithmetic.
_WHOLE_DEST = __import__("re").compile(
    r"^(?:v(?:p?broadcast\w*|ps(?:ll|rl|ra)[wdq]|ps[lr]ldq|pshuf(?:d|hw|lw)|getmant\w+|getexp\w+|align[dq]"
    r"|p?cmp\w*|p?gather\w+)|k(?:add|unpck)\w+)$")
#: Instructions into a mask register that capstone marks as reading it: they write it whole
#: (the bits their own mask leaves out are zeroed, never kept).
_MASK_RESULT = __import__("re").compile(r"^v(?:ptestn?m[bwdq]|fpclass\w+|pmov[bwdq]2m|p?cmp\w*)$")
_GATHER = __import__("re").compile(r"^v(?:p?gather\w+)$")


def regs_access(insn, certain: bool = False) -> tuple[set[int], set[int]]:
    """The registers ``insn`` reads and writes: capstone's ``regs_access()``, corrected where
    capstone 5 is wrong for EVEX. It leaves the access of many operands unset and out of
    ``regs_access()``: `vpbroadcastd (m), %zmm1` writes no register there, `vpaddd %zmm1,
    %zmm2, %zmm3{%k1}` and `vmovdqu64 %zmm1, (m){%k2}` read no %zmm1, `vpsrld $1, %xmm25,
    %xmm25` touches no register; it marks merge-masked destinations (`vpabsd %zmm1,
    %zmm7{%k1}`, which keeps %zmm7's other lanes) written only, and some masks a compare
    writes as read. Missed, a read of what the caller left in a register went unseen by the
    information-flow rule, and a register clang had just written counted as the caller's
    (every `-march=native` clang candidate of PolyBench refused). So: a source with no access
    is read; a destination with none is written, and read as well unless the instruction
    replaces it whole (:data:`_WHOLE_DEST`); a destination under merge masking (`{%k}`
    without `{z}`, not a mask register) and a gather's are read; a mask a compare or test
    writes is not; a memory operand's registers (a gather's vector index) are read.

    With ``certain`` (what gcc's own function is recorded to read, which widens what a
    candidate may), the reads this adds on suspicion are left out: a destination's, where
    capstone gives none and the instruction may replace it whole."""
    reads, writes = insn.regs_access()
    reads, writes = set(reads), set(writes)
    ops = insn.operands
    m = insn.mnemonic
    merge = "{k" in insn.op_str and "{z}" not in insn.op_str
    for k, op in enumerate(ops):
        if op.type == 3:  # X86_OP_MEM: its registers are read
            reads |= {r for r in (op.mem.base, op.mem.index) if r}
        elif op.type == 1 and not op.access:  # X86_OP_REG
            if k == 0:
                writes.add(op.reg)
                if not certain and not _WHOLE_DEST.match(m):
                    reads.add(op.reg)
            else:
                reads.add(op.reg)
    if m.startswith(("pcmp", "vpcmp")) and m.endswith(("strm", "stri")):
        # The string compares' implicit operands, which capstone leaves out of the `m` forms:
        # the explicit lengths in %eax and %edx (`e` forms), the result in %xmm0 or %ecx.
        from capstone import x86_const as X

        if "estr" in m:
            reads |= {X.X86_REG_EAX, X.X86_REG_EDX}
        writes |= {X.X86_REG_XMM0 if m.endswith("m") else X.X86_REG_ECX, X.X86_REG_EFLAGS}
    if ops and ops[0].type == 1:
        dest = ops[0].reg
        mask_dest = (insn.reg_name(dest) or "").startswith("k")
        if mask_dest and _MASK_RESULT.match(m):
            if not any(o.type == 1 and o.reg == dest for o in ops[1:]):
                reads.discard(dest)  # (unless it is its own mask as well)
            writes.add(dest)
        elif (merge and not mask_dest) or _GATHER.match(m):
            reads.add(dest)
    return reads, writes


def stack_size(insn) -> int:
    """Bytes a push or pop moves: 2 with the operand-size prefix (0x66), else 8 (64-bit mode
    has no 32-bit push). From the encoding, not the spelling: capstone writes ``pop cx`` and
    ``pushf`` for the 16-bit forms, and a model that took them for 8 bytes lost the stack
    pointer by 6 while believing it exact."""
    return 2 if 0x66 in insn.prefix else 8


def step(frame: Frame, insn, where: str, add, flow=None) -> Frame:
    """The frame after ``insn``; reports accesses to the return-address slot through ``add``.
    ``flow`` (:class:`sgcc.verify.static.infoflow.Flow`, untrusted code only) checks the
    information-flow rule first and carries its state on."""
    if flow is None:
        return _step(frame, insn, where, add)
    flow.check(frame, insn, where, add)
    after = _step(frame, insn, where, add)
    return flow.after(frame, after, insn)


def _step(frame: Frame, insn, where: str, add) -> Frame:
    R = registers()
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
    if not (m in PUSH or m in POP or m.startswith(("lea", "nop", "call", "ret"))):
        for k, op in enumerate(ops):
            if op.type != X.X86_OP_MEM:
                continue
            addr = _address(frame, op, X)
            if addr is UNKNOWN:
                continue
            if mem_access(insn, k) & 2:  # CS_AC_WRITE
                store(addr, op.size, value_of(ops[1]) if len(ops) == 2 and m in ("mov", "movq") else UNKNOWN)
            elif _overlaps(addr, op.size, ENTRY) and (ENTRY, RETURN_ADDRESS) in frame.slots:
                add("return-slot", f"`{m} {insn.op_str}` at {where} reads the return address")

    _reads, writes = regs_access(insn)
    if m in PUSH:
        size = stack_size(insn)
        value = value_of(ops[0]) if ops else UNKNOWN
        regs[RSP] = _add(regs[RSP], -size)
        if regs[RSP] is not UNKNOWN:
            store(regs[RSP], size, value)
        return Frame(tuple(regs), frozenset(slots.items()))
    if m in POP:
        size = stack_size(insn)
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
        for name in CALLER_SAVED:
            regs[GPR64.index(name)] = UNKNOWN
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
                # The name carries the entry-relative height it was aligned from (the
                # aligned place is at or below it), when that is known.
                height = f":{regs[RSP][1]}" if regs[RSP][0] == "entry" else ""
                new[dst] = (f"aligned@{insn.address:x}{height}", 0)
    for reg_id in writes:
        r = R.gpr.get(reg_id)
        if r is not None:
            regs[r] = new.get(r, UNKNOWN)
    return Frame(tuple(regs), frozenset(slots.items()))
