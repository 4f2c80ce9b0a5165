"""The information-flow rule for untrusted candidates: they read only what gcc's function reads.

The shipped program runs outside the box, so a test in the box is worth only as much as the
proof that the candidate cannot tell the box from real use. A model's answer or a replayed
file (a generator not marked ``trusted``) is therefore proven, on the assembled object, to
read nothing beyond what gcc's *same* function reads. This is a positive rule, checked per
instruction as the control-flow walk (:mod:`sgcc.verify.static.controlflow`) follows every path with
the stack model of :mod:`sgcc.verify.static.stackframe`:

* **Registers.** It may read the argument registers gcc's function reads on entry (its
  live-in set, measured by walking gcc's function with this same model). Every other
  caller-saved register holds what the caller (or the C library, after a call) left there:
  reading it is refused (``entry-register``). The incoming callee-saved registers (``rbx``,
  ``rbp``, ``r12``-``r15``) carry the caller's state: they may be copied, pushed and popped,
  stored whole into its own frame, and must hold their incoming value again at every
  ``ret`` and tail jump; any other use, as data or as an address, is refused
  (``callee-saved``).
* **The stack.** A stack address may be used only as an address the model bounds: its own
  frame below the return-address slot, at places it has written before (what an earlier
  call left there is not its to read: ``uninitialised``), and the incoming stack arguments
  only within the extent gcc's function reads (``stack-arguments``). An index register on a
  stack-derived base (unless its proven range, :mod:`sgcc.verify.static.bounds`, keeps the whole
  access in its own frame, and a read where it has written), a string instruction from one,
  or a stack address whose offset the model lost (different on two paths) is refused
  (``stack-index``, ``unbounded``). A stack
  address may not be used as data, stored outside its own frame or returned
  (``stack-address``), nor passed to a call unless gcc's function passes one too
  (``call-argument``). ``%rsp``/``%rbp`` are loaded from memory only by ``pop``/``leave``
  (``stack-pointer``); a slot holding a stack address or a caller's register may be read
  back only whole (``stack-slot``).
* **Flags, vector registers, machine state.** A flag is read only where the last
  instruction writing it defined it from clean data (not the caller's flags, not one the
  manual leaves undefined, not one computed from a stack address: ``flags``); a vector or
  MMX register only once written or as gcc's function reads it on entry
  (``entry-register``); an instruction whose effect the model cannot follow from the
  operands the decoder shows (``cpuid``, ``pushf``, ``xlatb``, ``enter``, the x87 stack...)
  only where gcc's function has it (``instruction``). An instruction that may leave its
  destination as it was (a false ``cmov``, ``bsf`` of zero) reads it.
* **Elsewhere.** Memory reached through clean pointers (its arguments, what it loads
  through them, its symbols) is the program's own data, as in gcc's function; segment
  (``%fs``) accesses only at the displacements gcc's function uses (``segment``); and calls
  only to the externals gcc's same function calls (checked by the walk).

What this cannot prove, and which layer covers it, is in ``docs/proof.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sgcc.asm import x86
from sgcc.asm.x86 import GPR64
from sgcc.verify.static import bounds
from sgcc.verify.static.stackframe import (
    DIRTY,
    POP,
    PUSH,
    RSP,
    Frame,
    mem_access,
    registers,
    regs_access,
    stack_size,
)

# The ABI's register classes (sgcc.asm.x86), as the walk's register numbers.
CALLEE_SAVED = tuple(x86.GPR64.index(r) for r in x86.CALLEE_SAVED)
CALLER_SAVED = tuple(x86.GPR64.index(r) for r in x86.CALLER_SAVED)
ARGUMENTS = tuple(x86.GPR64.index(r) for r in x86.ARGUMENT_REGS)
RETURNS = tuple(x86.GPR64.index(r) for r in x86.RETURN_REGS)
#: What an external call leaves in the caller-saved registers it does not return in.
CLOBBERED = tuple(g for g in CALLER_SAVED if g not in RETURNS)
RBP = GPR64.index("rbp")
#: C library routines that call a function they are handed, by the argument registers that
#: carry it (rdi 7, rsi 6, rdx 2, rcx 1, r8 8). Whatever gcc's function does, a candidate must
#: pass these a function's address it took itself (rule ``callback``): a code pointer computed
#: from data (``system`` found through a return address) reaches nothing here.
CALLBACK_ARGS: dict[str, tuple[int, ...]] = {
    "qsort": (1,), "qsort_r": (1,), "bsearch": (8,), "lfind": (8,), "lsearch": (8,), "tsearch": (2,),
    "tfind": (2,), "tdelete": (2,), "twalk": (6,), "twalk_r": (6,), "tdestroy": (6,), "atexit": (7,),
    "at_quick_exit": (7,), "on_exit": (7,), "__cxa_atexit": (7,), "signal": (6,), "sigset": (6,),
    "bsd_signal": (6,), "sysv_signal": (6,), "pthread_create": (2,), "pthread_once": (6,),
    "pthread_atfork": (7, 6, 2), "scandir": (2, 1), "scandir64": (2, 1), "ftw": (6,), "nftw": (6,),
    "ftw64": (6,), "nftw64": (6,), "dl_iterate_phdr": (7,), "makecontext": (6,), "glob": (2,),
    "ualarm": (), "fopencookie": (), "obstack_begin": (),
}
#: C library routines whose result points into one of their arguments.
RETURNS_AN_ARGUMENT = frozenset("""
    memcpy memmove memset mempcpy strcpy strncpy stpcpy stpncpy strcat strncat memchr memrchr rawmemchr
    strchr strrchr strchrnul strstr strcasestr strpbrk strtok strtok_r index rindex fgets gets
    __memcpy_chk __memmove_chk __memset_chk __mempcpy_chk __strcpy_chk __stpcpy_chk __strncpy_chk
    __strcat_chk __strncat_chk __fgets_chk __gets_chk
""".split())
_ZERO_IDIOMS = frozenset({"xor", "sub", "sbb", "pxor", "vpxor", "xorps", "xorpd", "vxorps", "vxorpd", "pcmpeqb",
                          "pcmpeqd", "pcmpeqw", "pcmpeqq", "vpcmpeqd", "vpcmpeqb"})
_STRING = frozenset(f"{op}{w}" for op in ("movs", "stos", "cmps", "scas", "lods", "ins", "outs") for w in "bwdq")
#: The six status flags, by capstone's names (``X86_EFLAGS_TEST_CF``...).
STATUS_FLAGS = ("CF", "PF", "AF", "ZF", "SF", "OF")
ALL_FLAGS = frozenset(STATUS_FLAGS)
#: Instructions that read the flags as a whole, which capstone does not mark as testing them.
_READS_ALL_FLAGS = frozenset({"pushf", "pushfq", "pushfw", "lahf"})
#: Instructions whose effect the model cannot follow from the operands the decoder reports:
#: they read machine state no operand carries (the CPU's identity and features, the shadow
#: stack's address, protection keys) or registers and memory the decoder does not show
#: (``xlatb`` reads ``(%rbx,%al)``, ``enter`` pushes %rbp and moves %rsp and %rbp). The rule
#: is positive in what it follows; these are the instructions it cannot, and an untrusted
#: function may use one only where gcc's same function does. ``pushf`` is among them: besides
#: the status flags it reads system flags (IF, AC, ID) an emulator sets otherwise than the
#: kernel; ``clzero`` and ``maskmovdqu`` store through a register no memory operand shows.
#: (``rdtsc``, ``rdrand`` and the
#: privileged ones are refused for every candidate by the object check.)
UNMODELLED = frozenset("""
    cpuid xgetbv rdpkru wrpkru rdsspd rdsspq rdtsc rdtscp rdpid rdrand rdseed rdpmc rdpru rdfsbase rdgsbase
    xlatb enter smsw str sldt sgdt sidt lsl lar verr verw fxsave fxsave64 xsave xsave64 xsaveopt xsaveopt64
    xsavec xsavec64 fnstenv fnsave fstenv fsave fxrstor fxrstor64 xrstor xrstor64 popf popfq popfw
    stmxcsr vstmxcsr ldmxcsr vldmxcsr fnstcw fstcw fnstsw fstsw fldcw fldenv frstor fnclex fclex fninit finit
    pushf pushfq pushfw clzero maskmovdqu vmaskmovdqu maskmovq movdir64b enqcmd enqcmds
""".split())
#: The x87 register stack is addressed relative to its top, which the model does not follow:
#: x87 instructions (capstone's FPU group) only where gcc's function has them.
X87 = "x87"
_VECTOR = __import__("re").compile(r"^(?:([xyz])mm|(mm)|(k))(\d+)$")
#: Vector register numbers: n for the low 128 bits of xmm/ymm/zmm n, n + UPPER for the bits
#: above (a legacy SSE write to %xmm n keeps them: they may still be the caller's), MMX n at
#: MMX + n, the AVX-512 mask register %k n at KMASK + n (the caller's, or a C library call's,
#: like any vector register: glibc's EVEX string routines leave masks of the bytes they read).
UPPER, MMX, KMASK = 32, 64, 96
#: Instructions whose result does not depend on their sources when both are one register
#: (`vpxor %xmm1, %xmm1, %xmm0`, `kxnorw %k0, %k0, %k1`: clang's all-ones mask for a gather).
_SAME_SOURCE_IDIOMS = frozenset({"vpxor", "vpxord", "vpxorq", "vxorps", "vxorpd", "vpsubb", "vpsubw", "vpsubd",
                                 "vpsubq", "vpcmpeqb", "vpcmpeqw", "vpcmpeqd", "vpcmpeqq", "kxorb", "kxorw",
                                 "kxord", "kxorq", "kxnorb", "kxnorw", "kxnord", "kxnorq"})


@dataclass(frozen=True)
class FlowState:
    """The part of the frame only the flow rule needs: which ranges of its own frame the
    function has written (``(base, lo, hi)``, relative to a stack base) and which may hold a
    value that is not clean (a stack address, a caller's register, the return address)."""

    written: frozenset = frozenset()
    tainted: frozenset = frozenset()
    #: Per general register, the unsigned range ``(lo, hi)`` its whole 64-bit value is proven
    #: to lie in, or None (:mod:`sgcc.verify.static.bounds`).
    bounds: tuple = (None,) * 16
    #: The last ``cmp reg, imm`` (or ``test reg, reg``) whose flags are still live:
    #: ``(register, constant, width in bits)``, for the conditional branch that reads them.
    compared: tuple | None = None
    #: The constants ``k - 1`` and ``k`` of the compares seen on the way: where a widened
    #: range stops first (a loop `cmp $100; jne` settles at ``[0, 99]``).
    limits: frozenset = frozenset()
    #: The status flags that do not hold clean data: what the caller or a call left (on
    #: entry, after a call), what the manual leaves undefined (``imul``'s ZF, ``bsf``'s CF: a
    #: CPU and an emulator differ there), or what an instruction computed from a stack
    #: address (the parity of ``sub $8, %rsp`` is the parity of the stack's low byte).
    flags: frozenset = ALL_FLAGS
    #: The vector registers (xmm/ymm/zmm numbers) that hold its own data: on entry the ones
    #: gcc's function reads as arguments; after a call the return registers.
    vectors: frozenset = frozenset()
    #: The tainted ranges that hold only what a caller-saved register held on entry or after
    #: a call (clang's ``push %rax`` reserves a slot that way): like a slot it never wrote,
    #: such bytes count as written by a callee they are passed to (scanf's ``&n``).
    junk: frozenset = frozenset()
    #: xmm registers whose low 64 bits hold its own data and whose other lanes do not: a
    #: scalar merged into what the caller left (clang's `vcvtsi2sd %edi, %xmm15, %xmm0` takes
    #: the upper lanes of a register it never wrote; `cvtsi2sd %edi, %xmm0` keeps %xmm0's).
    #: Scalar instructions may read such a register (:func:`_lanes`), a packed one may not.
    scalar: frozenset = frozenset()

    def merge(self, other: FlowState) -> FlowState:
        """Where paths meet (``self`` the state seen there before): ranges join, widened so
        loops converge; a compare survives only if both paths made it."""
        limits = self.limits | other.limits
        tainted = self.tainted | other.tainted
        # Junk on one path only stays junk only where the other did not taint it otherwise.
        junk = {j for j in self.junk | other.junk
                if not _overlaps_any((self.tainted - self.junk) | (other.tainted - other.junk), j)}
        vectors = self.vectors & other.vectors
        scalar = ((self.vectors | self.scalar) & (other.vectors | other.scalar)) - vectors
        return FlowState(self.written & other.written, tainted,
                         bounds.join(self.bounds, other.bounds, limits),
                         self.compared if self.compared == other.compared else None, limits,
                         self.flags | other.flags, vectors, frozenset(junk), frozenset(scalar))


@dataclass
class Facts:
    """What gcc's function reads, measured on gcc's object by walking it with this rule in
    record mode: the bound for the candidate of the same name."""

    live_in: set = field(default_factory=set)  # caller-saved registers read before written
    arg_extent: int = 0  # bytes of incoming stack arguments read, past the return address
    #: (segment register, displacement, with a base register, with an index) read
    segments: set = field(default_factory=set)
    stack_to_calls: bool = False  # passes a stack address to a call
    vector_live_in: set = field(default_factory=set)  # vector registers read before written
    unmodelled: set = field(default_factory=set)  # instructions of UNMODELLED it executes
    #: external -> the argument registers in which gcc's function passes it a function's address
    callbacks: dict = field(default_factory=dict)

    @classmethod
    def permissive(cls) -> Facts:
        """For a private copy (no namesake in gcc's unit): its arguments, nothing on the stack."""
        return cls(live_in=set(ARGUMENTS) | {0}, vector_live_in=set(range(8)) | {n + UPPER for n in range(8)})


def _clean(v) -> bool:
    """Clean data: an argument, what was loaded through clean pointers, a constant, the address
    of a function (``("code:NAME", offset)``, from ``lea NAME(%rip)`` or a GOT load)."""
    return v is None or v[0] == "imm" or v[0].startswith("code:")


def code_value(name: str) -> tuple[str, int]:
    """The symbolic value of a register that holds ``name``'s address (a function of the unit or
    an external): what a routine that calls back may be handed (rule ``callback``)."""
    return (f"code:{name}", 0)


#: The high bytes of the first four registers (bits 8-15): never part of a "low" value.
_HIGH_BYTES = frozenset({"ah", "bh", "ch", "dh"})


def _low_bits(name: str) -> int:
    """How many low bits of its 64-bit register a register name spells: 8 (``cl``, ``sil``,
    ``r8b``), 16 (``cx``, ``r8w``), 32 (``ecx``, ``r8d``) or 64; 0 for a high byte (``ch``)."""
    if name in _HIGH_BYTES:
        return 0
    if name.startswith("r") and name[1:].isdigit():
        return 64
    if name.startswith("r") and name[-1] in "bwd" and name[1:-1].isdigit():
        return {"b": 8, "w": 16, "d": 32}[name[-1]]
    if name.startswith("r"):
        return 64
    if name.startswith("e"):
        return 32
    return 8 if name.endswith(("l", "b")) else 16


def _clean_as(v, bits: int) -> bool:
    """Whether the low ``bits`` bits of a register holding ``v`` are clean: clean data, or a
    register whose low 8 or 16 bits the function wrote itself over something else (``setl
    %cl`` keeps the caller's upper 56 bits of %rcx, or a stack address's; ``movzbl %cl`` and
    ``or %al, %cl`` read only its own bits): ``("low", upper, bits)``, where ``upper`` is
    what the register held before, which the rest of it still holds."""
    return _clean(v) or (v[0] == "low" and 0 < bits <= v[2])


def _whole(v):
    """What a register holding ``v`` is when read whole: a "low" value is what its upper bits
    still hold (the caller's register, a stack address...)."""
    return v[1] if v is not None and v[0] == "low" else v


def _stack(v) -> bool:
    return v is not None and (v[0] == "entry" or v[0].startswith("aligned@") or v[0] == "dirty")


class Flow:
    """The rule for one function group. ``facts`` None: record mode, for gcc's own function
    (nothing is refused; what it reads is recorded in :attr:`facts`)."""

    def __init__(self, facts: Facts | None):
        self.record = facts is None
        self.facts = Facts() if facts is None else facts
        self.R = registers()

    # -- states -------------------------------------------------------------------------

    def entry(self) -> Frame:
        regs: list = [None] * 16
        for r in CALLER_SAVED:
            if r not in self.facts.live_in or self.record:
                regs[r] = ("junk", r)
        for r in CALLEE_SAVED:
            regs[r] = ("cs", r)
        ret = frozenset({("entry", 0, 8)})
        vectors = frozenset() if self.record else frozenset(self.facts.vector_live_in)
        return Frame.entry(FlowState(ret, ret, vectors=vectors), regs)

    # -- the rule, before an instruction --------------------------------------------------

    def check(self, frame: Frame, insn, where: str, add) -> None:
        """Report every use ``insn`` makes of something the rule does not let it read."""
        R, X = self.R, self.R.X
        m = insn.mnemonic
        ops = insn.operands
        text = f"`{m} {insn.op_str}`".replace(" `", "`") + f" at {where}"

        def refuse(rule: str, what: str) -> None:
            if not self.record:
                add(rule, f"{text} {what}")

        if m.startswith(("nop", "endbr")):
            return  # padding: its operands are never read
        name = insn.insn_name() or m
        if _is_x87(insn):
            name = X87
        if name in UNMODELLED or m in UNMODELLED or name == X87:
            if self.record:
                self.facts.unmodelled.add(name)
            elif name not in self.facts.unmodelled:
                refuse("instruction", "has effects the model cannot follow (machine state, or registers and memory "
                                      "no operand shows); gcc's function does not use it")
        self._flags(frame, insn, m, refuse)
        self._vectors(frame, insn, refuse)

        try:
            reads, writes = regs_access(insn, certain=self.record)
        except Exception:  # noqa: BLE001 - capstone cannot say: nothing can be proven
            refuse("decode", "has operands the analysis cannot read")
            return
        exempt: set[int] = set()
        for op in ops:
            if op.type == X.X86_OP_MEM:
                for reg in (op.mem.base, op.mem.index):
                    if reg in R.gpr:
                        exempt.add(R.gpr[reg])
                self._memory(frame, insn, op, refuse)
        read = {R.gpr[r] for r in reads if r in R.gpr} | _kept(insn, R)
        # Registers read only in their low bits, as wide as each read goes (a full read, or
        # a high byte, counts as 64: beyond any "low" value's clean part).
        narrow: dict[int, int] = {}
        for r in reads:
            if r in R.gpr:
                bits = 64 if r in R.full else (_low_bits(insn.reg_name(r)) or 64)
                narrow[R.gpr[r]] = max(narrow.get(R.gpr[r], 0), bits)
        for g in _kept(insn, R):
            narrow[g] = 64
        written = {R.gpr[r] for r in writes if r in R.gpr}
        if m in PUSH or m in POP or m.startswith(("call", "ret", "leave")):
            exempt.add(RSP)
        if m.startswith("leave"):
            exempt.add(RBP)
            self._frame_read(frame, frame.regs[RBP], 0, 8, True, refuse)
        if m in POP and ops and ops[0].type == X.X86_OP_MEM:
            # pop into memory carries the slot's value there whole: a stack address or the
            # caller's register only into its own frame (elsewhere it would read back clean).
            top = frame.regs[RSP]
            value = dict(frame.slots).get(top) if top is not None else None
            tainted = _stack(top) and top[0] != "dirty" and any(
                b == top[0] and a < top[1] + 8 and top[1] < c for b, a, c in frame.flow.tainted)
            if (tainted or not _clean(value)) and not self._own_frame(frame, ops[0]):
                if value is not None and value[0] == "cs":
                    refuse("callee-saved", f"pops the caller's %{GPR64[value[1]]} outside its own frame")
                else:
                    refuse("stack-address", "pops a slot holding a stack address or a caller's register outside "
                                            "its own frame")
        if m in POP:
            size = stack_size(insn)
            # Only all 8 bytes of a slot are a whole value: a 16-bit pop of a pushed stack
            # address takes its low bits as data.
            self._frame_read(frame, frame.regs[RSP], 0, size, size == 8, refuse)
            if ops and ops[0].type == X.X86_OP_REG and R.gpr.get(ops[0].reg) == RSP:
                refuse("stack-pointer", "loads %rsp from the stack")
        if len(ops) == 2 and ops[0].type == ops[1].type == X.X86_OP_REG and ops[0].reg == ops[1].reg \
                and m in _ZERO_IDIOMS:
            read = set()  # xor %eax,%eax reads nothing
        full = lambda op: op.type == X.X86_OP_REG and op.reg in R.full  # noqa: E731
        stored = None  # the register whose whole value a store writes to memory
        if m in ("mov", "movq") and len(ops) == 2 and full(ops[1]):
            src = R.gpr[ops[1].reg]
            if full(ops[0]):
                exempt.add(src)  # a copy: the value goes on, and its uses are checked there
            elif ops[0].type == X.X86_OP_MEM and ops[0].size == 8:
                exempt.add(src)
                stored = (src, ops[0])
        elif m in ("push", "pushq") and ops and full(ops[0]):
            exempt.add(R.gpr[ops[0].reg])
            stored = (R.gpr[ops[0].reg], None)
        elif m in ("add", "addq", "sub", "subq", "and", "andq") and len(ops) == 2 and full(ops[0]) \
                and ops[1].type == X.X86_OP_IMM:
            dst = R.gpr[ops[0].reg]
            v = frame.regs[dst]
            if v is not None and (v[0] == "entry" or v[0].startswith("aligned@")) \
                    and (not m.startswith("and") or dst == RSP):
                exempt.add(dst)  # constant steps of a stack address (and realigning %rsp)
        if _canary_check(frame, insn, R):
            exempt.add(R.gpr[ops[0].reg])
        for g in sorted(read - exempt):
            if not _clean_as(frame.regs[g], narrow.get(g, 64)):
                self._data_use(g, frame.regs[g], refuse)
        if m.startswith("lea") and len(ops) == 2 and not full(ops[0]) and ops[1].mem.base in R.gpr \
                and not _clean(frame.regs[R.gpr[ops[1].mem.base]]):
            refuse("stack-address", "keeps part of a stack address as data")
        if stored is not None:
            src, dest = stored
            v = _whole(frame.regs[src])
            if not _clean(v):
                ok = self._own_frame(frame, dest) if dest is not None else _stack(frame.regs[RSP]) \
                    and frame.regs[RSP][0] != "dirty"
                if not ok and v[0] == "junk":
                    self._data_use(src, v, refuse)
                elif not ok:
                    rule, what = ("callee-saved", f"the caller's %{GPR64[v[1]]}") if v[0] == "cs" else \
                        ("return-slot", "the return address") if v[0] == "ret" else \
                        ("segment", "the stack protector's canary") if v[0] == "canary" else \
                        ("stack-address", "a stack address")
                    refuse(rule, f"stores {what} outside its own frame")
        if m == "std":
            refuse("direction", "reverses string instructions, which the model follows upwards only")
        loads = [op for k, op in enumerate(ops) if op.type == X.X86_OP_MEM and mem_access(insn, k) & 1
                 and not m.startswith("lea")]
        if loads and m not in POP and m not in PUSH and not m.startswith("leave"):
            if RSP in written:
                refuse("stack-pointer", "loads the stack pointer from memory")
            elif RBP in written and any(self._stack_based(frame, op) and not self._clean_slot(frame, op)
                                        for op in loads) and not (
                    ops and ops[0].type == X.X86_OP_REG and ops[0].reg in R.gpr and ops[0].reg not in R.full):
                # %rbp loaded from clean memory is clean data (gcc uses it as any register): it
                # can then satisfy neither `leave` nor the rule that %rbp is back at `ret`. From
                # its own stack, all 64 bits could restore a frame pointer the model did not
                # follow. A 32-bit (or narrower) load cannot: a stack address does not fit in it,
                # and what the slot holds is checked as any read of the frame is (`uninitialised`,
                # `stack-slot`). gcc -O3 spills ints held in %ebp that way (examples/dataset/triangles).
                refuse("stack-pointer", "loads the frame pointer from the stack other than by pop or leave")
        if m.startswith("call"):
            self.arguments(frame, refuse)

    def _flags(self, frame: Frame, insn, m: str, refuse) -> None:
        """A flag may be read only where the last instruction that wrote it defined it from
        clean data (``flags``)."""
        if self.record or frame.flow is None:
            return
        tested = ALL_FLAGS if m in _READS_ALL_FLAGS else _flag_set(insn, "TEST")
        bad = tested & frame.flow.flags
        if bad:
            refuse("flags", f"reads {', '.join(sorted(bad))}, which holds what its caller or a call left, what "
                            "the manual leaves undefined, or bits of a stack address")

    def _vectors(self, frame: Frame, insn, refuse) -> None:
        """A vector register may be read only once it holds the function's own data."""
        if frame.flow is None:
            return
        reads, _writes = _vector_access(insn, certain=self.record)
        lanes = None if self.record else _lanes(insn)
        for n in sorted(reads - frame.flow.vectors):
            if lanes is not None and _lane_read_ok(n, lanes, frame.flow.scalar):
                continue
            if self.record:
                self.facts.vector_live_in.add(n)
            else:
                what = f"%k{n - KMASK}" if n >= KMASK else f"%mm{n - MMX}" if n >= MMX \
                    else f"the upper part of %ymm{n - UPPER}" if n >= UPPER else f"%xmm{n}"
                refuse("entry-register", f"reads {what}, which holds what its caller or a call left there, not "
                                         "an argument gcc's function reads")

    def _data_use(self, g: int, v, refuse) -> None:
        if _clean(v):
            return
        v = _whole(v)  # a "low" value read beyond its own low bits: what the rest holds
        if _clean(v):
            return
        kind = v[0]
        name = "%" + GPR64[g]
        if kind == "junk":
            if self.record:
                self.facts.live_in.add(v[1])  # where the value came from (a copy of %rdi is %rdi's)
            else:
                refuse("entry-register", f"reads {name}, which holds what its caller or a call left there, "
                                         "not an argument gcc's function reads")
        elif kind == "cs":
            refuse("callee-saved", f"uses the caller's %{GPR64[v[1]]} (a callee-saved register) as data")
        elif kind == "ret":
            refuse("return-slot", "uses the return address as data")
        elif kind == "canary":
            refuse("segment", f"uses the stack protector's canary ({name}) as data other than to check it")
        else:
            refuse("stack-address", f"uses a stack address ({name}) as data")

    def callbacks(self, frame: Frame, name: str, refuse) -> None:
        """At a call or tail jump to the external ``name``: a routine that calls back is handed
        a function's address the code took (``lea f(%rip)``, a GOT load), at the argument
        registers the table lists and wherever gcc's same function passes one to ``name``."""
        if self.record:
            given = {g for g in ARGUMENTS if frame.regs[g] is not None and frame.regs[g][0].startswith("code:")
                     and frame.regs[g][1] == 0}
            if given:
                self.facts.callbacks.setdefault(name, set()).update(given)
            return
        for g in sorted(set(CALLBACK_ARGS.get(name, ())) | self.facts.callbacks.get(name, set())):
            v = frame.regs[g]
            if v is None or not v[0].startswith("code:") or v[1] != 0:
                refuse("callback", f"hands {name} a code pointer in %{GPR64[g]} that is not the address of a "
                                   "function it took (computed, or loaded from data)")

    def arguments(self, frame: Frame, refuse) -> None:
        """At a call or tail jump: what the argument registers may carry to the callee."""
        for g in ARGUMENTS:
            v = _whole(frame.regs[g])
            if _clean(v) or v[0] == "junk":
                continue
            if v[0] == "cs":
                refuse("callee-saved", f"passes the caller's %{GPR64[v[1]]} to a call")
            elif v[0] == "ret":
                refuse("return-slot", "passes the return address to a call")
            elif v[0] == "canary":
                refuse("segment", f"passes the stack protector's canary (%{GPR64[g]}) to a call")
            elif self.record:
                self.facts.stack_to_calls = True
            elif v[0] == "entry" and v[1] >= 0:
                refuse("call-argument", f"passes its caller's part of the stack (%{GPR64[g]}) to a call")
            elif v[0] == "dirty":
                refuse("call-argument", f"passes a stack address whose offset the model lost (%{GPR64[g]}) to a call")
            elif not self.facts.stack_to_calls:
                refuse("call-argument", f"passes a stack address in %{GPR64[g]} to a call, which gcc's "
                                        "function does not (the callee could read past its frame)")

    def at_exit(self, frame: Frame, text: str, where: str, add, tail: bool) -> None:
        """At ``ret`` or a tail jump: the caller's registers back, no stack address handed out."""
        if self.record:
            return
        for r in CALLEE_SAVED:
            if frame.regs[r] != ("cs", r):
                add("callee-saved", f"`{text}` at {where} leaves %{GPR64[r]} other than its caller's value")
        if tail:
            self.arguments(frame, lambda rule, what: add(rule, f"`{text}` at {where} {what}"))
            return
        for r in RETURNS:
            v = _whole(frame.regs[r])
            if v is not None and v[0] == "canary":
                add("segment", f"`{text}` at {where} returns the stack protector's canary in %{GPR64[r]}")
            elif not _clean(v) and v[0] != "junk":
                add("stack-address", f"`{text}` at {where} returns a stack address or a caller's register "
                                     f"in %{GPR64[r]}")

    # -- memory ------------------------------------------------------------------------

    def _memory(self, frame: Frame, insn, op, refuse) -> None:
        R = self.R
        mem = op.mem
        m = insn.mnemonic
        if mem.segment != 0:
            # The displacement and the shape: `%fs:40(%rax)` reaches any thread-local byte
            # (the thread's own address at %fs:0 among them) where gcc reads only %fs:40.
            key = (mem.segment, mem.disp, mem.base != 0, mem.index != 0)
            if self.record:
                self.facts.segments.add(key)
            elif key not in self.facts.segments:
                refuse("segment", "reads thread-local memory gcc's function does not read")
            if not self.record:
                for reg in (mem.base, mem.index):
                    if reg in R.gpr and not _clean(frame.regs[R.gpr[reg]]):
                        self._address_use(reg, frame.regs[R.gpr[reg]], refuse, index=reg == mem.index)
            return
        v = frame.regs[R.gpr[mem.base]] if mem.base in R.gpr else None
        iv = frame.regs[R.gpr[mem.index]] if mem.index in R.gpr else None
        if iv is not None and mem.index in R.gpr and not _clean(iv):
            self._address_use(mem.index, DIRTY if iv[0] == "low" and _stack(iv[1]) else _whole(iv), refuse,
                              index=True)
            return
        if mem.base not in R.gpr or v is None or _clean(v):
            return
        if v[0] in ("cs", "junk", "low", "ret"):
            # An address whose low bits the function overwrote is no place the model knows.
            self._address_use(mem.base, DIRTY if v[0] == "low" and _stack(v[1]) else _whole(v), refuse, index=False)
            return
        if mem.index != 0:
            self._indexed(frame, insn, op, v, refuse)
            return
        if v[0] == "dirty":
            refuse("unbounded", "uses a stack address whose offset differs between paths")
            return
        if m.startswith(("lea", "nop")):
            return  # no access; the address is followed exactly
        size = op.size or 8
        if self._is_string(insn):
            count = self._string_count(frame, insn)
            if count is None:
                refuse("stack-index", "runs a string instruction from a stack address for a count the model "
                                      "does not know")
                return
            size *= count
        off = v[1] + mem.disp
        self._frame_access(frame, insn, v[0], off, size, self._reads(insn, op), refuse)

    def _indexed(self, frame: Frame, insn, op, v, refuse) -> None:
        """A register-indexed access on a stack base: allowed only where the index's proven
        range puts every byte it may touch inside its own frame (below the return-address
        slot) and, for a read, where it has written (not a slot holding a stack address or
        a caller's register). ``lea`` is refused: the address would become data the model
        no longer follows."""
        span = self._indexed_span(frame, insn, op, v)
        if span is None:
            refuse("stack-index", "indexes a stack address by a register the model cannot bound inside its "
                                  "own frame")
            return
        if self._reads(insn, op):
            base, lo, hi = span
            st = frame.flow
            if not _covered(st.written, base, lo, hi):
                refuse("uninitialised", "reads its stack frame through an index where it has not written (what "
                                        "an earlier call or the caller left there)")
            elif any(b == base and a < hi and lo < c for b, a, c in st.tainted):
                refuse("stack-slot", "reads through an index where a slot holds a stack address or a caller's "
                                     "register")

    def _indexed_span(self, frame: Frame, insn, op, v) -> tuple | None:
        """``(base, lo, hi)``: every byte a register-indexed access on stack value ``v`` may
        touch, when the index is bounded and all of it lies in its own frame; else None."""
        R = self.R
        mem = op.mem
        m = insn.mnemonic
        if frame.flow is None or v[0] == "dirty" or m.startswith(("lea", "nop")) or self._is_string(insn) \
                or mem.index not in R.full or insn.mnemonic.startswith(("push", "pop")):
            return None
        b = frame.flow.bounds[R.gpr[mem.index]]
        if b is None or b[1] > bounds.MAX_INDEX:
            return None
        lo = v[1] + mem.disp + mem.scale * b[0]
        hi = v[1] + mem.disp + mem.scale * b[1] + (op.size or 8)
        own = hi <= 0 if v[0] == "entry" else self._aligned_below(v[0], hi)
        return (v[0], lo, hi) if own else None

    def _reads(self, insn, op) -> bool:
        """Whether ``insn`` reads memory operand ``op``. capstone marks the destination of some
        vector stores (``vmovdqa %ymm0,(%rsp)``) as read too, or as read only
        (:func:`stackframe.mem_access`); a move only writes it."""
        m = insn.mnemonic
        first = op is insn.operands[0] or (insn.operands and insn.operands[0].type == op.type
                                          and insn.operands[0].mem.disp == op.mem.disp
                                          and insn.operands[0].mem.base == op.mem.base)
        if first:
            if m.startswith(("mov", "vmov")) and not self._is_string(insn) and len(insn.operands) == 2:
                return False
            return bool(mem_access(insn, 0) & 1)
        return bool(op.access & 1)

    def _is_string(self, insn) -> bool:
        X = self.R.X
        return insn.mnemonic.split()[-1] in _STRING and not any(
            o.type == X.X86_OP_REG and self.R.gpr.get(o.reg) is None for o in insn.operands)  # not SSE movsd

    def _string_count(self, frame: Frame, insn) -> int | None:
        """How many elements a string instruction moves: 1, or a constant %rcx under ``rep``
        (upwards: the ABI says the direction flag is clear, and ``std`` is refused)."""
        if not insn.mnemonic.startswith("rep"):
            return 1
        rcx = frame.regs[1]
        return rcx[1] if rcx is not None and rcx[0] == "imm" and 0 <= rcx[1] <= 1 << 20 else None

    def _address_use(self, reg_id: int, v, refuse, index: bool) -> None:
        name = "%" + GPR64[self.R.gpr[reg_id]]
        if v[0] == "cs":
            refuse("callee-saved", f"uses the caller's %{GPR64[v[1]]} (a callee-saved register) as an address")
        elif v[0] == "junk":
            if self.record:
                self.facts.live_in.add(v[1])
            else:
                refuse("entry-register", f"uses {name}, which its caller did not pass, as an address")
        elif v[0] == "ret":
            refuse("return-slot", "uses the return address as an address")
        elif index:
            refuse("stack-index", f"uses a stack address ({name}) as an index")
        else:
            refuse("unbounded", f"uses {name} as an address the model cannot bound")

    def _frame_access(self, frame: Frame, insn, base: str, off: int, size: int, is_read: bool, refuse) -> None:
        m = insn.mnemonic
        if base == "entry":
            lo, hi = off, off + size
            if lo < 8 and hi > 0:
                if not (m in PUSH or m in POP):
                    refuse("return-slot", "touches the return-address slot")
                return
            if lo >= 8:
                if self.record:
                    self.facts.arg_extent = max(self.facts.arg_extent, hi - 8)
                elif hi - 8 > self.facts.arg_extent:
                    refuse("stack-arguments", f"reaches {hi - 8} bytes into its incoming stack arguments; gcc's "
                                              f"function reads {self.facts.arg_extent}")
                return
        elif not self._aligned_below(base, off + size):
            refuse("unbounded", "reaches above its frame from a realigned stack pointer")
            return
        if is_read:
            whole = size == 8 and (m in ("mov", "movq") or m in PUSH) and len(insn.operands) >= 1 \
                and (m in PUSH or insn.operands[0].type == self.R.X.X86_OP_REG and insn.operands[0].reg in self.R.full)
            self._frame_read(frame, (base, off), 0, size, whole, refuse)

    def _aligned_below(self, base: str, hi: int) -> bool:
        """Whether ``[..., hi)`` relative to a realigned stack pointer lies in its own frame:
        the aligned place is at or below the entry-relative height it was aligned from."""
        if not base.startswith("aligned@") or ":" not in base:
            return False
        return int(base.rsplit(":", 1)[1]) + hi <= 0

    def _frame_read(self, frame: Frame, at, disp: int, size: int, whole: bool, refuse) -> None:
        """A read of ``size`` bytes at stack value ``at`` + ``disp`` (own frame)."""
        if self.record or at is None or not _stack(at) or at[0] == "dirty":
            return
        if at[0] != "entry" and not self._aligned_below(at[0], at[1] + disp + size):
            refuse("unbounded", "reaches above its frame from a realigned stack pointer")
            return
        base, lo = at[0], at[1] + disp
        hi = lo + size
        st = frame.flow
        if base == "entry" and lo < 8 and hi > 0:
            return  # the return-address slot: the control-flow rules decide
        if base == "entry" and lo >= 8:
            # Incoming arguments (pop and leave reach them without a memory operand).
            if hi - 8 > self.facts.arg_extent:
                refuse("stack-arguments", f"reaches {hi - 8} bytes into its incoming stack arguments; gcc's "
                                          f"function reads {self.facts.arg_extent}")
            return
        if not _covered(st.written, base, lo, hi):
            refuse("uninitialised", "reads its stack frame where it has not written (what an earlier call or "
                                    "the caller left there)")
        elif not whole and any(b == base and a < hi and lo < c for b, a, c in st.tainted):
            refuse("stack-slot", "reads part of a slot that holds a stack address or a caller's register")

    def _clean_slot(self, frame: Frame, op) -> bool:
        """Whether memory operand ``op`` is a place of its own frame that it wrote on every
        path with clean data only (no stack address, no caller's register: those stores
        taint it): what it loads from there is clean data, so it can be no frame pointer
        (clang keeps values in %rbp as in any register and reloads its spills whole)."""
        if not self._own_frame(frame, op):
            return False
        v = frame.regs[self.R.gpr[op.mem.base]]
        base, lo = v[0], v[1] + op.mem.disp
        hi = lo + (op.size or 8)
        st = frame.flow
        return st is not None and _covered(st.written, base, lo, hi) and \
            not any(b == base and a < hi and lo < c for b, a, c in st.tainted)

    def _stack_based(self, frame: Frame, op) -> bool:
        v = frame.regs[self.R.gpr[op.mem.base]] if op.mem.base in self.R.gpr else None
        return not _clean(v)

    def _own_frame(self, frame: Frame, op) -> bool:
        """Whether memory operand ``op`` is a bounded place of its own frame."""
        R = self.R
        mem = op.mem
        if mem.segment != 0 or mem.index != 0 or mem.base not in R.gpr:
            return False
        v = frame.regs[R.gpr[mem.base]]
        if not _stack(v) or v[0] == "dirty":
            return False
        hi = v[1] + mem.disp + (op.size or 8)
        return hi <= 0 if v[0] == "entry" else self._aligned_below(v[0], hi)

    # -- the state, after an instruction ------------------------------------------------

    def after(self, frame: Frame, new: Frame, insn) -> Frame:
        """``new`` (what :func:`stackframe._step` made of ``frame``) with the flow state on."""
        R, X = self.R, self.R.X
        st = frame.flow
        written, tainted, junk = set(st.written), set(st.tainted), set(st.junk)
        slots = new.slots
        regs = list(new.regs)
        m = insn.mnemonic
        ops = insn.operands

        def taint(base: str, lo: int, hi: int, value) -> None:
            nonlocal junk
            tainted.add((base, lo, hi))
            if _whole(value) is not None and _whole(value)[0] == "junk":
                junk.add((base, lo, hi))
            else:
                junk = _subtract(junk, base, lo, hi)

        if m in PUSH:
            top = new.regs[RSP]
            if _stack(top) and top[0] != "dirty":
                size = stack_size(insn)
                written.add((top[0], top[1], top[1] + size))
                value = dict(new.slots).get(top)
                if ops and ops[0].type == X.X86_OP_MEM or not _clean(value):
                    pushed = frame.regs[R.gpr[ops[0].reg]] if ops and ops[0].type == X.X86_OP_REG \
                        and ops[0].reg in R.full else DIRTY
                    taint(top[0], top[1], top[1] + size, pushed)
        elif m.startswith("call"):
            sp = new.regs[RSP]
            # The callee's frame lies below the stack pointer: what was written there is its.
            # (After realignment the stack pointer is at or below entry + o + k: the part of
            # the frame written before the alignment, above that, stays the function's.)
            floor = None
            if _stack(sp) and sp[0].startswith("aligned@") and ":" in sp[0]:
                floor = int(sp[0].rsplit(":", 1)[1]) + sp[1]
            written = {w for w in written if _stack(sp) and (w[0] == sp[0] and w[1] >= sp[1]
                                                             or w[0] == "entry" and floor is not None
                                                             and w[1] >= floor)}
            # A stack address passed to the callee (where gcc's function passes one: scanf's
            # &n) is where the callee writes its result: the object is taken to reach up to
            # the next place the function wrote itself, or its frame's top.
            for g in ARGUMENTS:
                v = frame.regs[g]
                if v is not None and (v[0] == "entry" and v[1] < 0 or v[0].startswith("aligned@")):
                    top = 0 if v[0] == "entry" else v[1] + 64
                    above = [a for b, a, _c in written if b == v[0] and a > v[1]]
                    hi = min([top, *above])
                    written.add((v[0], v[1], hi))
                    # Bytes that held only a caller-saved register's value (a reserved
                    # slot) are the callee's result there, as unwritten ones are.
                    for b, a, c in [j for j in junk if j[0] == v[0] and j[1] < hi and v[1] < j[2]]:
                        lo2, hi2 = max(a, v[1]), min(c, hi)
                        tainted = _subtract(tainted, b, lo2, hi2)
                        junk = _subtract(junk, b, lo2, hi2)
                        slots = frozenset(sl for sl in slots if not (sl[0][0] == b and sl[0][1] < hi2
                                                                      and lo2 < sl[0][1] + 8))
            for g in CALLER_SAVED:
                v = frame.regs[g]
                if _clean(v) or _whole(v)[0] == "junk":
                    continue
                if v[0] == "entry" and v[1] < 0 or v[0].startswith("aligned@"):
                    # A place of its own frame the call was given (scanf's &n in %rdx): after
                    # the call the register holds that place again, the callee's result or
                    # what the call left there. Junk: no data, no address, only what may be
                    # passed on to a call, which that place already was (rule call-argument).
                    regs[g] = ("junk", g)
                else:
                    regs[g] = DIRTY
        else:
            count = self._string_count(frame, insn) if self._is_string(insn) else 1
            for k, op in enumerate(ops):
                if op.type == X.X86_OP_MEM and mem_access(insn, k) & 2 and self._own_frame(frame, op) \
                        and count is not None and not _PARTIAL_STORE.match(m) and "{k" not in insn.op_str:
                    v = frame.regs[R.gpr[op.mem.base]]
                    lo = v[1] + op.mem.disp
                    written.add((v[0], lo, lo + (op.size or 8) * count))
                    src = ops[1] if len(ops) == 2 else None
                    if src is not None and src.type == X.X86_OP_REG and src.reg in R.gpr \
                            and not _clean(frame.regs[R.gpr[src.reg]]):
                        taint(v[0], lo, lo + (op.size or 8), frame.regs[R.gpr[src.reg]])
                    elif m in _PLAIN_STORES and src is not None and count == 1 and (
                            src.type == X.X86_OP_IMM or src.type == X.X86_OP_REG and src.reg in R.gpr):
                        # A plain store of clean data (a constant, a clean register) replaces
                        # the bytes it covers: what a push of the caller's register left
                        # there is gone (clang's `push %rax` reserves a slot, `movq $0,(%rsp)`
                        # then initializes it).
                        tainted = _subtract(tainted, v[0], lo, lo + (op.size or 8))
                        junk = _subtract(junk, v[0], lo, lo + (op.size or 8))
        # A whole slot read back where the model lost what it holds (two paths stored different
        # values) is not clean: it may be a stack address or a caller's register.
        loaded = None
        if m in POP and ops and ops[0].type == X.X86_OP_REG and ops[0].reg in R.gpr:
            loaded = (R.gpr[ops[0].reg], frame.regs[RSP])
        elif m.startswith("leave"):
            loaded = (RBP, frame.regs[RBP])
        elif m in ("mov", "movq") and len(ops) == 2 and ops[0].type == X.X86_OP_REG and ops[0].reg in R.full \
                and ops[1].type == X.X86_OP_MEM and ops[1].mem.index == 0 and ops[1].mem.base in R.gpr:
            base = frame.regs[R.gpr[ops[1].mem.base]]
            loaded = (R.gpr[ops[0].reg], base if base is None else (base[0], base[1] + ops[1].mem.disp))
        if loaded is not None and _stack(loaded[1]):
            into, addr = loaded
            if (addr, regs[into]) not in frame.slots and any(
                    b == addr[0] and a < addr[1] + 8 and addr[1] < c for b, a, c in st.tainted):
                regs[into] = DIRTY
        if m in ("mov", "movl", "movq", "movabs") and len(ops) == 2 and ops[0].type == X.X86_OP_REG \
                and ops[1].type == X.X86_OP_IMM and ops[0].reg in R.gpr:
            name = insn.reg_name(ops[0].reg)
            if ops[0].reg in R.full or name.startswith("e") or name.endswith("d"):
                regs[R.gpr[ops[0].reg]] = ("imm", ops[1].imm & 0xFFFFFFFF if ops[0].reg not in R.full else ops[1].imm)
        # A write of 8 or 16 bits keeps the rest of the register: what was not clean stays so.
        try:
            _reads, writes = regs_access(insn)
        except Exception:  # noqa: BLE001 - refused in check
            writes = set()
        for reg_id in writes:
            part = R.gpr.get(reg_id)
            if part is None or reg_id in R.full or part == RSP:
                continue
            name = insn.reg_name(reg_id)
            before = frame.regs[part]
            bits = _low_bits(name)
            if bits >= 32 or _clean(before):
                continue
            if bits:
                # Its own low 8 or 16 bits over what was there: readable at that width only.
                regs[part] = ("low", _whole(before), max(bits, before[2] if before[0] == "low" else 0))
            else:
                regs[part] = before if before[0] in ("junk", "low") else DIRTY
        for k, op in enumerate(ops):
            if op.type == X.X86_OP_MEM and mem_access(insn, k) & 2 and op.mem.index != 0 and op.mem.base in R.gpr:
                v = frame.regs[R.gpr[op.mem.base]]
                span = self._indexed_span(frame, insn, op, v) if _stack(v) else None
                if span is not None:
                    # A store the model let through lands somewhere in the span: what it knew of
                    # the slots there (a saved register, its spills) no longer holds. Slots
                    # named from another base (entry vs. a realigned %rsp) may be the same
                    # bytes: forgotten too. The return address lies above any span.
                    slots = frozenset(s for s in slots if s == (("entry", 0), ("ret", 0))
                                      or s[0][0] == span[0] and not (s[0][1] < span[2] and span[1] < s[0][1] + 8))
        flags, vectors = _flags_after(frame, insn, m, self.R), _vectors_after(st.vectors, insn, m)
        scalar = st.scalar
        if not self.record:
            vectors, scalar = _scalar_after(st.vectors, st.scalar, vectors, insn, m)
        # What an instruction loads from the canary's place is the canary: it may be saved in
        # the frame and checked (`sub %fs:40, reg`: then the register is clean), nothing else.
        if _canary_check(frame, insn, R):
            regs[R.gpr[ops[0].reg]] = None
        elif any(op.type == X.X86_OP_MEM and op.mem.segment != 0 and op.mem.disp == CANARY and op.access & 1
                 for op in ops) and not m.startswith("lea"):
            for reg_id in _written_gprs(insn, R):
                regs[R.gpr[reg_id]] = ("canary", CANARY)
        rng, compared, limits = st.bounds, None, st.limits
        if not self.record:
            rng, compared = bounds.after(frame.flow, insn, m)
            if compared is not None and compared is not st.compared and 0 < compared[1] <= bounds.MAX_INDEX:
                limits = limits | {compared[1] - 1, compared[1]}
        return Frame(tuple(regs), slots, FlowState(frozenset(written), frozenset(tainted), rng, compared, limits,
                                                   flags, vectors, frozenset(junk & tainted), scalar))

    def branch(self, frame: Frame, insn, taken: bool) -> Frame:
        """The state along one edge of a conditional branch: what its compare proves there."""
        st = frame.flow
        if self.record or st is None or st.compared is None:
            return frame
        rng = bounds.refine(st.bounds, st.compared, insn.mnemonic, taken)
        if rng == st.bounds:
            return frame
        return Frame(frame.regs, frame.slots, FlowState(st.written, st.tainted, rng, st.compared, st.limits,
                                                        st.flags, st.vectors, st.junk, st.scalar))

    def after_external_call(self, frame: Frame, before: Frame | None = None, name: str | None = None) -> Frame:
        """After a call into the C library: the registers it does not return in hold what it
        left there, which may depend on anything it read (the environment included). A
        routine that returns a pointer into its arguments (``memset``, ``fgets``...) returns
        a stack address when it was given one: not clean data. An unknown callee (a
        function pointer) is assumed to be such a routine."""
        regs = list(frame.regs)
        for g in CLOBBERED:
            regs[g] = ("junk", g)
        if frame.flow is not None:
            from dataclasses import replace

            frame = Frame(frame.regs, frame.slots, replace(bounds.forget(frame.flow, CALLER_SAVED), flags=ALL_FLAGS,
                                                           vectors=frame.flow.vectors & _RETURN_VECTORS,
                                                           scalar=frozenset()))
        if before is not None and (name is None or name in RETURNS_AN_ARGUMENT) \
                and any(_stack(before.regs[g]) for g in ARGUMENTS):
            regs[0] = DIRTY

        return Frame(tuple(regs), frame.slots, frame.flow)


#: What a call leaves in the vector registers that holds data: its return value (%xmm0, %xmm1).
_RETURN_VECTORS = frozenset({0, 1, UPPER, UPPER + 1})
_X87_GROUP: int | None = None


def _is_x87(insn) -> bool:
    global _X87_GROUP
    if _X87_GROUP is None:
        from sgcc.verify.static import insnfeatures

        _X87_GROUP = next((g for g, n in insnfeatures.group_names().items() if n == "FPU"), -1)
    return _X87_GROUP in insn.groups
_EFLAGS: dict | None = None


def _flag_set(insn, kind: str) -> frozenset:
    """The status flags ``insn`` marks as ``kind`` (TEST, MODIFY, RESET, SET, UNDEFINED)."""
    global _EFLAGS
    if _EFLAGS is None:
        from capstone import x86_const as X

        _EFLAGS = {(k, f): getattr(X, f"X86_EFLAGS_{k}_{f}", 0)
                   for k in ("TEST", "MODIFY", "RESET", "SET", "UNDEFINED", "PRIOR") for f in STATUS_FLAGS}
    bits = insn.eflags
    found = frozenset(f for f in STATUS_FLAGS if bits & _EFLAGS[(kind, f)])
    # Where capstone calls a flag computed that the manual leaves undefined (imul's SF): the
    # manual wins (sgcc.asm.x86), for every kind, so that it counts as undefined only.
    manual = x86.undefined_flags(insn.mnemonic, _count_one(insn))
    return found | manual if kind == "UNDEFINED" else found - manual


def undefined_after(insn) -> frozenset:
    """The status flags ``insn`` leaves undefined: capstone's record with the manual's
    corrections (what the emulator and a CPU may disagree on, and the rule refuses to read)."""
    return _flag_set(insn, "UNDEFINED")


def _count_one(insn) -> bool:
    """A shift or rotate by the constant 1 (written, or implicit): it defines OF."""
    imms = [o.imm for o in insn.operands[1:] if o.type == 2]  # capstone's X86_OP_IMM
    regs = [o for o in insn.operands[1:] if o.type == 1]  # X86_OP_REG
    return (imms == [1]) or (not imms and not regs)


#: Instructions that may leave their destination register as it was (a false ``cmov``, ``bsf``
#: and ``bsr`` of zero, a failed ``cmpxchg``), which capstone lists as written, not read: what
#: it held is read, as data, since it may be what the register holds afterwards.
_KEEPS_DESTINATION = ("cmov", "bsf", "bsr", "cmpxchg")


def _kept(insn, R) -> set:
    ops = insn.operands
    if not insn.mnemonic.startswith(_KEEPS_DESTINATION) or not ops or ops[0].type != R.X.X86_OP_REG:
        return set()
    g = R.gpr.get(ops[0].reg)
    return set() if g is None else {g}


#: Shifts and rotates: with a count of zero (``%cl`` = 0, or an immediate the CPU masks to 0)
#: they leave every flag as it was.
_SHIFTS = frozenset("shl sal shr sar rol ror rcl rcr shld shrd".split())


def _may_keep_flags(insn, m: str, R) -> bool:
    if m.rstrip("bwlq") not in _SHIFTS and m not in _SHIFTS:
        return False
    counts = [o for o in insn.operands[1:] if o.type == R.X.X86_OP_IMM]
    if not counts:
        return True  # by %cl, or by the implicit 1 (`shr %eax`: capstone shows no count): see below
    width = max((o.size for o in insn.operands if o.type == R.X.X86_OP_REG), default=4)
    return counts[-1].imm & (63 if width == 8 else 31) == 0


#: Where glibc's thread control block keeps the stack protector's canary (``%fs:40``).
CANARY = 40


def _canary_check(frame: Frame, insn, R) -> bool:
    """``sub``/``xor``/``cmp %fs:40, reg`` with the canary in ``reg``: gcc's check, whose
    result (zero, or a call to ``__stack_chk_fail``) says only whether the frame is intact."""
    ops = insn.operands
    X = R.X
    return (insn.mnemonic in ("sub", "subq", "xor", "xorq", "cmp", "cmpq") and len(ops) == 2
            and ops[0].type == X.X86_OP_REG and ops[0].reg in R.full and ops[1].type == X.X86_OP_MEM
            and ops[1].mem.segment != 0 and ops[1].mem.disp == CANARY and ops[1].mem.base == 0
            and ops[1].mem.index == 0 and frame.regs[R.gpr[ops[0].reg]] == ("canary", CANARY))


def _written_gprs(insn, R) -> list:
    try:
        _reads, writes = regs_access(insn)
    except Exception:  # noqa: BLE001 - refused in check
        return []
    return [r for r in writes if r in R.gpr and R.gpr[r] != RSP]


def _flags_after(frame: Frame, insn, m: str, R) -> frozenset:
    """The flags that do not hold clean data after ``insn`` (see :attr:`FlowState.flags`)."""
    st = frame.flow
    if _canary_check(frame, insn, R):
        return st.flags - _flag_set(insn, "MODIFY")
    if m.startswith("call") or m in ("popf", "popfq", "popfw"):
        return ALL_FLAGS
    undefined = _flag_set(insn, "UNDEFINED")
    defined = (_flag_set(insn, "MODIFY") | _flag_set(insn, "RESET") | _flag_set(insn, "SET")
               | _flag_set(insn, "PRIOR")) - undefined
    if not (defined or undefined):
        return st.flags
    try:
        reads, _writes = regs_access(insn)
    except Exception:  # noqa: BLE001 - refused in check
        return ALL_FLAGS
    ops = insn.operands
    if len(ops) == 2 and ops[0].type == ops[1].type == R.X.X86_OP_REG and ops[0].reg == ops[1].reg \
            and m in _ZERO_IDIOMS and not m.startswith("sbb"):
        return (st.flags - defined) | undefined  # xor %eax,%eax: flags of zero, whatever %eax held
    keep = _may_keep_flags(insn, m, R)
    if keep and not any(o.type == R.X.X86_OP_REG and insn.reg_name(o.reg) == "cl" for o in ops[1:]) \
            and not any(o.type == R.X.X86_OP_IMM for o in ops[1:]):
        keep = False  # the implicit count of 1
    # Computed from a stack address (a constant step of %rsp) or a caller's value: not clean.
    # A register that only forms a memory operand's address (`cmpl $2, -48(%rsp)`) is not an
    # input: the flags come from what the memory holds, which the frame rules vouch for.
    X = R.X
    address = {o.mem.base for o in insn.operands if o.type == X.X86_OP_MEM} | {
        o.mem.index for o in insn.operands if o.type == X.X86_OP_MEM}
    direct = {o.reg for o in insn.operands if o.type == X.X86_OP_REG}
    inputs = [r for r in reads if r in R.gpr and (r not in address or r in direct)]
    dirty = any(not _clean_as(frame.regs[R.gpr[r]], 64 if r in R.full else (_low_bits(insn.reg_name(r)) or 64))
                for r in inputs)
    if dirty:
        return st.flags | defined | undefined
    if keep:
        return st.flags | undefined  # a count of zero would leave the flags as they were
    return (st.flags - defined) | undefined


#: Legacy SSE scalar instructions that write the low 32 or 64 bits of their destination and
#: keep the rest, which capstone does not list as read (``sqrtsd %xmm1,%xmm5`` keeps the
#: caller's bits 64-127 of %xmm5).
_SCALAR_MERGE = frozenset("cvtsi2ss cvtsi2sd cvtss2sd cvtsd2ss sqrtss sqrtsd rcpss rsqrtss roundss roundsd".split())


def _vector_access(insn, certain: bool = False) -> tuple[set, set]:
    """The vector register numbers ``insn`` reads and writes (xmm, ymm and zmm alike, and the
    mask registers); a register combined with itself by a zero idiom (``pxor %xmm0,%xmm0``)
    is not read. ``certain``: only the reads it surely makes (stackframe.regs_access)."""
    try:
        reads, writes = regs_access(insn, certain=certain)
    except Exception:  # noqa: BLE001 - refused in check
        return set(), set()
    from sgcc.verify.static.insnfeatures import encoding

    legacy = encoding(insn) == "legacy"

    def nums(ids, writing):
        out = set()
        for r in ids:
            hit = _VECTOR.match(insn.reg_name(r) or "")
            if not hit:
                continue
            n = int(hit.group(4))
            if hit.group(3):
                out.add(KMASK + n)
            elif hit.group(2):
                out.add(MMX + n)
            elif hit.group(1) != "x":
                out |= {n, n + UPPER}
            else:
                out.add(n)
                if writing and not legacy:
                    out.add(n + UPPER)  # a VEX or EVEX write clears the bits above
        return out
    r, w = nums(reads, False), nums(writes, True)
    ops = insn.operands
    if legacy and insn.mnemonic in _SCALAR_MERGE and ops and ops[0].type == 1:
        # The bits above the scalar come from the destination as it was: read.
        r |= nums([ops[0].reg], False)
    regs = [o.reg for o in insn.operands if o.type == 1]  # X86_OP_REG
    if insn.mnemonic in _ZERO_IDIOMS and len(regs) == len(insn.operands) >= 2 and len(set(regs)) == 1:
        r = set()
    if "{k" not in insn.op_str:  # (under a mask the lanes it keeps are read)
        if insn.mnemonic in _SAME_SOURCE_IDIOMS and len(regs) == len(ops) == 3 and regs[1] == regs[2]:
            r = set()
        if insn.mnemonic in ("vpternlogd", "vpternlogq") and ops and ops[-1].type == 2 \
                and ops[-1].imm & 0xFF in (0, 0xFF):
            r = set()  # all zeros or all ones, whatever the sources hold
    return r, w


def _vectors_after(vectors: frozenset, insn, m: str) -> frozenset:
    if m.startswith("call"):
        # A function of the unit (gcc's, or a candidate held to this rule) leaves only its
        # own data; gcc keeps vectors live across such a call (-fipa-ra: float_consts'
        # %xmm4 across saxpy). A C library call resets them (after_external_call).
        return vectors
    if m == "vzeroall":
        # %ymm0-15 zeroed whole; %zmm16-31 and the mask registers as they were.
        return vectors | frozenset(range(16)) | frozenset(n + UPPER for n in range(16))
    if m == "vzeroupper":
        return vectors | frozenset(n + UPPER for n in range(16))
    _r, w = _vector_access(insn)
    return vectors | w if w else vectors


#: Scalar instructions whose low lane comes from their last source alone and whose upper lanes
#: come from the destination (legacy encoding) or the first source (VEX): that register's low
#: lane is not an input.
_SCALAR_CONVERT = frozenset("cvtsi2sd cvtsi2ss cvtusi2sd cvtusi2ss cvtss2sd cvtsd2ss sqrtsd sqrtss roundsd roundss "
                            "rcpss rsqrtss".split())
#: Scalar arithmetic: the low lanes of both sources are inputs, the upper lanes as above.
_SCALAR_ARITH = frozenset("addsd subsd mulsd divsd minsd maxsd addss subss mulss divss minss maxss".split())
_FMA_SCALAR = __import__("re").compile(r"^vfn?m(?:add|sub)(?:132|213|231)s[sd]$")
#: Read only the low 64 bits of their vector sources (a compare, a conversion to a general
#: register, a broadcast of the low lane).
_LOW_READERS = frozenset("ucomisd ucomiss comisd comiss cvttsd2si cvtsd2si cvttss2si cvtss2si movddup "
                         "unpcklpd unpcklps".split())
_LOW_MOVES = frozenset("movsd movss movq movd".split())
#: Broadcasts of a vector register's lowest element (8 to 64 bits, all within the low lane):
#: clang's `vcvtsi2sd %eax, %xmm31, %xmm31; vbroadcastsd %xmm31, %zmm31` makes a vector of its
#: own from a scalar whose upper lanes are the caller's (PolyBench correlation, native).
_LOW_BROADCASTS = frozenset("vbroadcastsd vbroadcastss vpbroadcastq vpbroadcastd vpbroadcastw vpbroadcastb".split())
_WHOLE_COPIES = frozenset("movaps movapd movdqa movdqu movups movupd".split())
_XMM = __import__("re").compile(r"^xmm(\d+)$")


def _lanes(insn) -> tuple[set, set, int | None] | None:
    """For a scalar instruction on xmm registers: (the registers whose low lane is an input,
    those that only give the destination its upper lanes, the source of a whole register
    copy); None for every other instruction (its vector reads are whole)."""
    m = insn.mnemonic
    base = m[1:] if m.startswith("v") and m[1:] in (_SCALAR_CONVERT | _SCALAR_ARITH | _LOW_READERS | _LOW_MOVES
                                                      | _WHOLE_COPIES) else m
    vex = base != m
    ops = insn.operands

    def xmm(op) -> int | None:
        if op.type != 1:  # X86_OP_REG
            return None
        hit = _XMM.match(insn.reg_name(op.reg) or "")
        return int(hit.group(1)) if hit else None

    if not ops:
        return None
    if base in _SCALAR_CONVERT or base in _SCALAR_ARITH or _FMA_SCALAR.match(m):
        dest = xmm(ops[0])
        if dest is None:
            return None
        fma = bool(_FMA_SCALAR.match(m))
        provider, rest = (xmm(ops[1]), ops[2:]) if vex and not fma and len(ops) == 3 else (dest, ops[1:])
        if provider is None:
            return None
        low = {n for n in (xmm(o) for o in rest) if n is not None}
        if base in _SCALAR_ARITH or fma:
            low.add(provider)
        return low, {provider}, None
    if base in _LOW_READERS:
        # A compare reads both operands; a legacy unpack reads its destination's low lane too.
        both = base.startswith(("ucomis", "comis")) or (base.startswith("unpckl") and not vex)
        srcs = ops if both else ops[1:]
        return {n for n in (xmm(o) for o in srcs) if n is not None}, set(), None
    if base in _LOW_MOVES:
        regs = [xmm(o) for o in ops]
        if len(ops) == 3 and None not in regs:  # vmovsd %xmm2, %xmm1, %xmm0: upper from the first source
            return {regs[2]}, {regs[1]}, None
        if len(ops) == 2 and regs[1] is not None:
            if regs[0] is not None and base in ("movsd", "movss"):
                return {regs[1]}, {regs[0]}, None  # legacy register form: the upper lanes stay
            return {regs[1]}, set(), None  # a store, to a general register, movq's zero extension
        return None
    if m in _LOW_BROADCASTS and len(ops) == 2:
        # (A merge-masked destination is read whole: not in these sets, so refused unless its own.)
        src = xmm(ops[1])
        return ({src}, set(), None) if src is not None else None
    if base in _WHOLE_COPIES and len(ops) == 2:
        dst, src = xmm(ops[0]), xmm(ops[1])
        if dst is not None and src is not None:
            return set(), set(), src
    return None


def _lane_read_ok(n: int, lanes, scalar: frozenset) -> bool:
    """Whether reading vector register ``n`` (not wholly its own data) is allowed to a scalar
    instruction: only its upper lanes, carried to the destination's; its low lane where that
    is its own data; a whole copy of such a register (the copy is then as it is)."""
    low, upper, copy = lanes
    if n >= UPPER:
        return False
    if n in low:
        return n in scalar
    return n in upper or (copy == n and n in scalar)


def _scalar_after(old_vectors: frozenset, old_scalar: frozenset, vectors: frozenset, insn,
                  m: str) -> tuple[frozenset, frozenset]:
    """The vector registers wholly its own and those only low-lane its own after ``insn``."""
    if m.startswith("call") or m == "vzeroupper":
        return vectors, old_scalar
    if m == "vzeroall":
        return vectors, frozenset()
    _r, w = _vector_access(insn)
    written = {n for n in w if n < UPPER}
    if not written:
        return vectors, old_scalar
    scalar = set(old_scalar) - written
    lanes = _lanes(insn)
    if lanes is not None:
        low, upper, copy = lanes
        partial = (copy is not None and copy not in old_vectors) or any(p not in old_vectors for p in upper)
        if partial:
            vectors = vectors - written
            # A single-precision scalar writes 32 bits: the 32 above it in the low lane are
            # still not its own, so such a register is not followed as a scalar at all.
            base = m[1:] if m.startswith("v") else m
            if copy is not None and copy in old_scalar or upper and not base.endswith("ss"):
                scalar |= written
    return vectors, frozenset(scalar)


#: Stores that write only some of the bytes their memory operand spans (a mask picks them):
#: they overwrite what the model knew there, but do not make it written.
_PARTIAL_STORE = __import__("re").compile(r"^v?(?:maskmov|compress|scatter|pscatter)")

#: Stores whose memory operand receives the source operand whole and nothing else.
_PLAIN_STORES = frozenset({"mov", "movb", "movw", "movl", "movq", "movabs"})


def _overlaps_any(ranges, r) -> bool:
    return any(b == r[0] and a < r[2] and r[1] < c for b, a, c in ranges)


def _subtract(ranges, base: str, lo: int, hi: int) -> set:
    """``ranges`` (``(base, lo, hi)`` triples) less the bytes ``[lo, hi)`` of ``base``."""
    out = set()
    for b, a, c in ranges:
        if b != base or c <= lo or a >= hi:
            out.add((b, a, c))
            continue
        if a < lo:
            out.add((b, a, lo))
        if c > hi:
            out.add((b, hi, c))
    return out


def _covered(ranges, base: str, lo: int, hi: int) -> bool:
    """Whether the union of ``ranges`` on ``base`` covers ``[lo, hi)``."""
    spans = sorted((a, c) for b, a, c in ranges if b == base and c > lo and a < hi)
    at = lo
    for a, c in spans:
        if a > at:
            return False
        at = max(at, c)
        if at >= hi:
            return True
    return at >= hi
