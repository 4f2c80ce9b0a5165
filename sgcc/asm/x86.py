"""Facts of the x86-64 instruction set and the System V ABI that every proof shares: the
register classes, and the status flags the manual leaves undefined after an instruction.

One place, so that the static proof (:mod:`sgcc.verify.static.infoflow`), the function-level
test (:mod:`sgcc.verify.function.emulate`) and the comparison of instruction forms on the CPU
and in the emulator (:mod:`sgcc.verify.function.forms`) cannot disagree.
"""

from __future__ import annotations

#: The 16 general registers in encoding order (capstone's and the hardware's numbering).
GPR64 = ("rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15")
#: System V: integer arguments in order, the registers a function must preserve, those a call
#: may change, and the integer return registers.
ARGUMENT_REGS = ("rdi", "rsi", "rdx", "rcx", "r8", "r9")
CALLEE_SAVED = ("rbx", "rbp", "r12", "r13", "r14", "r15")
CALLER_SAVED = ("rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11")
RETURN_REGS = ("rax", "rdx")

STATUS_FLAGS = ("CF", "PF", "AF", "ZF", "SF", "OF")

#: Status flags the Intel manual (SDM vol. 2, each instruction's "Flags Affected") leaves
#: undefined, where capstone 5 marks them as computed: after ``imul`` it calls SF defined, and
#: this CPU and Unicorn disagree there (measured by :mod:`sgcc.verify.function.forms`). A
#: flag in this table is undefined whatever capstone says. Shifts and rotates: OF only for a
#: count of one, AF never.
UNDEFINED_FLAGS: dict[str, frozenset] = {
    **{m: frozenset({"SF", "ZF", "AF", "PF"}) for m in ("imul", "mul")},
    **{m: frozenset(STATUS_FLAGS) for m in ("div", "idiv")},
    **{m: frozenset({"CF", "OF", "SF", "AF", "PF"}) for m in ("bsf", "bsr")},
    **{m: frozenset({"OF", "AF"}) for m in ("shl", "sal", "shr", "sar", "shld", "shrd")},
    **{m: frozenset({"OF"}) for m in ("rol", "ror", "rcl", "rcr")},
    **{m: frozenset({"OF", "SF", "AF", "PF"}) for m in ("bt", "bts", "btr", "btc")},
    **{m: frozenset({"AF"}) for m in ("and", "or", "xor", "test")},
    **{m: frozenset({"OF", "SF", "PF", "AF"}) for m in ("lzcnt", "tzcnt")},
    **{m: frozenset({"AF", "PF"}) for m in ("andn", "blsi", "blsmsk", "blsr")},
    **{m: frozenset({"AF", "SF", "PF"}) for m in ("bextr", "bzhi")},
}


def undefined_flags(mnemonic: str, explicit_count_one: bool = False) -> frozenset:
    """The status flags the manual leaves undefined after ``mnemonic`` (capstone spelling,
    a size suffix allowed). A shift or rotate whose count is the constant 1 defines OF."""
    m = mnemonic.split()[-1]
    found = UNDEFINED_FLAGS.get(m)
    if found is None and m[-1:] in "bwlq":
        found = UNDEFINED_FLAGS.get(m[:-1])
    if found is None:
        return frozenset()
    if explicit_count_one and m.rstrip("bwlq") in ("shl", "sal", "shr", "sar", "rol", "ror", "rcl", "rcr"):
        return found - {"OF"}
    return found
