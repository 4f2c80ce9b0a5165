"""Value ranges of the general registers, for the information-flow rule's indexed accesses.

An untrusted candidate may index its own stack frame by a register (``addl $1,
(%rsp,%rax,4)``, histogram's counts) only where :mod:`sgcc.verify.static.infoflow` proves every
byte the access may touch lies in its frame. This module gives that proof its index range:
per register, an unsigned range ``(lo, hi)`` its whole 64-bit value lies in, or None.

Ranges come only from what the instruction set guarantees:

* a write to a 32-bit register clears the upper half: ``[0, 2**32-1]``;
* ``movzx`` from 8 or 16 bits: ``[0, 255]`` / ``[0, 65535]``; ``and $m``: ``[0, m]``; a
  constant; ``xor r, r``; a copy; a constant step (``add $1``) that cannot wrap;
* a conditional branch after ``cmp reg, $k`` (or ``test reg, reg``) whose flags are still
  live (no instruction that may write flags, or the register, between them): on each edge,
  the range the condition proves, unsigned conditions as such, signed ones only where the
  value is proven non-negative (or the condition proves it is).

Any other write of a register forgets its range (a call forgets the caller-saved ones).
Where paths meet, ranges join; a range that grows at a join is widened to the next of a few
thresholds (the compare constants ``k - 1`` and ``k`` seen on the way, 255, 256, 4095...
2**32-1), then forgotten, so loops converge in a few rounds.
"""

from __future__ import annotations

from sgcc.verify.static.stackframe import registers, regs_access

#: An index proven at most this large is one the frame check considers at all.
MAX_INDEX = 1 << 24
_MASK32 = (1 << 32) - 1
FULL32 = (0, _MASK32)
_THRESHOLDS = (0, 1, 255, 256, 4095, 4096, 65535, 65536, (1 << 31) - 1, _MASK32)
#: Instructions that write no flags: a compare's flags survive them (if they leave its register).
_KEEP_FLAGS = frozenset({"mov", "movabs", "movzx", "movsx", "movsxd", "lea", "nop", "push"})
#: Instructions that may leave a register they name as written unchanged (upper half included).
_MAY_NOT_WRITE = ("cmpxchg", "bsf", "bsr")
_NEGATE = {"ja": "jbe", "jae": "jb", "jb": "jae", "jbe": "ja", "je": "jne", "jne": "je", "jg": "jle",
           "jge": "jl", "jl": "jge", "jle": "jg", "js": "jns", "jns": "js"}


def join(seen: tuple, new: tuple, limits=frozenset()) -> tuple:
    """``seen`` (the ranges already at a join point) joined with ``new``, widened where it
    grew to the next threshold (``limits``: the function's compare constants, besides a few
    fixed ones), so that every range can grow only a bounded number of times."""
    if seen == new:
        return seen
    stops = tuple(sorted(set(_THRESHOLDS) | limits)) if limits else _THRESHOLDS
    return tuple(_join1(a, b, stops) for a, b in zip(seen, new))


def _join1(a, b, stops):
    if a is None or b is None:
        return None
    if a == b:
        return a
    lo, hi = min(a[0], b[0]), max(a[1], b[1])
    if lo < a[0]:
        lo = 0
    if hi > a[1]:
        hi = next((t for t in stops if t >= hi), None)
        if hi is None:
            return None
    return (lo, hi)


def forget(st, regs):
    """``st`` (a :class:`~sgcc.verify.static.infoflow.FlowState`) with nothing known of ``regs``."""
    from dataclasses import replace

    rng = list(st.bounds)
    for r in regs:
        rng[r] = None
    compared = None if st.compared is not None and st.compared[0] in regs else st.compared
    return replace(st, bounds=tuple(rng), compared=compared)


def _width(insn, op) -> int:
    return op.size * 8 if op.size in (4, 8) else 0


def after(st, insn, m: str) -> tuple[tuple, tuple | None]:
    """The ranges, and the live compare, after ``insn`` from state ``st``."""
    R = registers()
    X = R.X
    rng = list(st.bounds)
    ops = insn.operands
    try:
        _reads, writes = regs_access(insn)
    except Exception:  # noqa: BLE001 - refused by the rule's check
        return (None,) * 16, None
    written = {R.gpr[r] for r in writes if r in R.gpr}
    if m.startswith("call"):
        written |= {0, 1, 2, 6, 7, 8, 9, 10, 11}
    # The compare whose flags the next instruction sees.
    compared = None
    reg = lambda op: op.type == X.X86_OP_REG and op.reg in R.gpr  # noqa: E731
    if m == "cmp" and len(ops) == 2 and reg(ops[0]) and ops[1].type == X.X86_OP_IMM and _width(insn, ops[0]):
        bits = _width(insn, ops[0])
        compared = (R.gpr[ops[0].reg], ops[1].imm & ((1 << bits) - 1), bits)
    elif m == "test" and len(ops) == 2 and reg(ops[0]) and reg(ops[1]) and ops[0].reg == ops[1].reg \
            and _width(insn, ops[0]):
        compared = (R.gpr[ops[0].reg], 0, _width(insn, ops[0]))
    elif st.compared is not None and (m in _KEEP_FLAGS or m.startswith("j")) and st.compared[0] not in written:
        compared = st.compared
    # What the instruction proves of the register it writes.
    known = None
    if len(ops) == 2 and reg(ops[0]) and _width(insn, ops[0]) and not m.startswith(_MAY_NOT_WRITE):
        dst, bits = R.gpr[ops[0].reg], _width(insn, ops[0])
        mask = (1 << bits) - 1
        src = ops[1]
        old = st.bounds[dst]
        if m == "movzx" and src.size in (1, 2):
            known = (0, (1 << (8 * src.size)) - 1)
        elif m == "and" and src.type == X.X86_OP_IMM:
            known = (0, src.imm & mask)
        elif m in ("mov", "movabs") and src.type == X.X86_OP_IMM:
            known = (src.imm & mask,) * 2
        elif m in ("xor", "sub") and reg(src) and src.reg == ops[0].reg:
            known = (0, 0)
        elif m == "mov" and reg(src) and src.size == ops[0].size:
            b = st.bounds[R.gpr[src.reg]]
            known = b if b is not None and b[1] <= mask else None
        elif m in ("add", "sub") and src.type == X.X86_OP_IMM and old is not None and old[1] <= mask:
            d = src.imm if m == "add" else -src.imm
            if 0 <= old[0] + d and old[1] + d <= mask:
                known = (old[0] + d, old[1] + d)
        if known is not None:
            rng[dst] = known
            written.discard(dst)
    for reg_id in writes:
        r = R.gpr.get(reg_id)
        if r is None or r not in written:
            continue
        name = insn.reg_name(reg_id)
        # A 32-bit write clears the upper half; cmpxchg may leave its register unwritten, and
        # bsf/bsr of zero leave the whole destination as it was on real CPUs.
        wide32 = reg_id not in R.full and (name.startswith("e") or name.endswith("d"))
        rng[r] = FULL32 if wide32 and not m.startswith(_MAY_NOT_WRITE) else None
        written.discard(r)
    for r in written:  # what a call clobbers
        rng[r] = None
    return tuple(rng), compared


def refine(rng: tuple, compared: tuple, m: str, taken: bool) -> tuple:
    """``rng`` along one edge of conditional branch ``m`` that reads the flags of ``compared``."""
    cond = m if taken else _NEGATE.get(m)
    if cond is None or m not in _NEGATE:
        return rng
    r, k, bits = compared
    b = rng[r]
    if b is None:
        if bits != 64:
            return rng  # the 32-bit compare says nothing of an upper half not known clear
        b = (0, (1 << 64) - 1)
    if b[1] >> bits:
        return rng
    lo, hi = b
    half = 1 << (bits - 1)
    ks = k - (1 << bits) if k >= half else k
    if cond == "jb":
        hi = min(hi, k - 1)
    elif cond == "jbe":
        hi = min(hi, k)
    elif cond == "ja":
        lo = max(lo, k + 1)
    elif cond == "jae":
        lo = max(lo, k)
    elif cond == "je":
        lo, hi = max(lo, k), min(hi, k)
    elif cond == "jne":
        lo, hi = lo + (lo == k), hi - (hi == k)
    elif cond == "jns":
        hi = min(hi, half - 1)
    elif cond == "js":
        lo = max(lo, half)
    elif cond in ("jge", "jg"):
        least = ks if cond == "jge" else ks + 1
        if least >= 0:  # at least a non-negative constant: non-negative, so as unsigned
            lo, hi = max(lo, least), min(hi, half - 1)
    elif cond in ("jle", "jl") and hi < half:  # only a value proven non-negative
        hi = min(hi, ks if cond == "jle" else ks - 1)
    if lo > hi:
        return rng  # the edge is never taken: any range holds; keep the one known
    out = list(rng)
    out[r] = (lo, hi)
    return tuple(out)
