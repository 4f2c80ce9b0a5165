"""The SMT equivalence tier (docs/proof.md, "Part three"): gcc's function and a candidate's,
lifted from their assembled objects and run symbolically, must agree on every input.

Both objects are loaded with angr (CLE's loader, VEX as the lifter through ``pyvex``, claripy
over z3 as the solver: angr's VEX engine already implements the x86 flag helpers VEX calls,
which an own interpretation of VEX would have to re-implement). Each function is run
symbolically from the same entry state:

* every general register but ``%rsp``, and ``%xmm0``-``%xmm7``, holds a symbol shared by
  both sides;
* a parameter the C definition declares as a pointer points to its own buffer of
  symbolic bytes (``BUFFER`` bytes, shared by both sides); the buffers of different
  parameters lie far apart, so the proof assumes **pointer arguments do not alias** and
  point to at least that many bytes: a verdict that used a buffer says "assuming ...";
* the stack pointer is concrete and the return address a marker.

A path ends at ``ret`` to the marker. A path that reads or writes memory other than its own
frame, the buffers and its object's read-only data, uses a symbolic address, calls an
external, makes a system call, jumps indirectly or runs an instruction the engine lacks
makes the function **not decided** (with that reason). Every path of one side is paired
with every path of the other; the solver is asked for an input that follows both and on
which the return registers the C type uses, the stack pointer, the callee-saved registers or
a byte either side wrote to a buffer differ. A model is a **counterexample**: the argument
registers and buffer bytes, shown as the failing state.

Loops: a path that runs any one basic block more than ``bound`` times is cut. If no path was
cut the verdict is "proven equivalent" (all inputs); otherwise "equivalent up to bound k":
equal on every input on which both functions stay within ``k`` runs of every block. More
than ``MAX_PATHS`` paths or ``seconds`` of work is "not decided" (unless a counterexample was
found first: a refutation never depends on the bound).

angr is an optional dependency (the ``proof`` extra): it is imported only here, only when
this tier runs; :func:`available` says whether it is installed.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from sgcc.asm import x86
from sgcc.errors import SgccError
from sgcc.verify.function.emulate import ARG_REGS, CALLEE_SAVED  # one register vocabulary for both tiers

#: Default unrolling bound (runs of one basic block on one path).
DEFAULT_BOUND = 8
#: Paths per function and side before the tier gives up ("not decided").
MAX_PATHS = 400
#: Seconds per function pair before the tier gives up.
DEFAULT_SECONDS = 60.0
#: Symbolic bytes each pointer argument points to.
BUFFER = 512
GPRS = tuple(r for r in x86.GPR64 if r != "rsp")  # every general register but the stack pointer
STACK_TOP = 0x7FFF_0000_0000
RET_MARK = 0x0DEA_D000
BUFFER_BASE = 0x5000_0000_0000
BUFFER_STRIDE = 1 << 32
FRAME = 1 << 20  # the most stack a function may use below its entry stack pointer
HINT = "install the proof extra: pip install 'sgcc[proof]' (angr, z3); docs/proof.md"


class NeedsExtra(SgccError):
    """The proof extra (angr) is not installed."""


def available() -> bool:
    """Whether the lifter and solver of this tier can be imported (without importing them)."""
    import importlib.util

    return importlib.util.find_spec("angr") is not None and importlib.util.find_spec("claripy") is not None


def require() -> None:
    """Raise :class:`NeedsExtra` unless the tier can run."""
    if not available():
        raise NeedsExtra("proof = bounded/equivalent needs the proof extra (angr and z3 are not installed)",
                         hint=HINT)


@dataclass
class SmtVerdict:
    """The SMT tier's answer for one function."""

    function: str
    status: str  # "proven", "bounded", "refuted", "undecided"
    bound: int = 0
    reason: str = ""  # why undecided
    assumptions: list = field(default_factory=list)
    counterexample: dict | None = None  # {"regs": {...}, "memory": {reg: bytes}, "difference": str}
    confirmed: str = ""  # how the counterexample was confirmed
    paths: tuple = (0, 0)  # completed paths (gcc, candidate)
    seconds: float = 0.0

    def level(self) -> str:
        """The verdict in the report's words."""
        assume = f" assuming {' and '.join(self.assumptions)}" if self.assumptions else ""
        if self.status == "proven":
            return ("proven equivalent" if not assume else "equivalent" + assume)
        if self.status == "bounded":
            return f"equivalent up to bound {self.bound}{assume}"
        if self.status == "refuted":
            return "refuted: differs from gcc's function on a solver's counterexample"
        return f"not decided ({self.reason})"

    def render_counterexample(self) -> str:
        """The failing state, as the report's detail shows it."""
        ce = self.counterexample or {}
        regs = ", ".join(f"{r}={v:#x}" for r, v in ce.get("regs", {}).items())
        mem = "; ".join(f"bytes at {r}: {b.hex()}" for r, b in ce.get("memory", {}).items())
        text = f"{self.function} on a solver's counterexample: {ce.get('difference', '')}; entry registers {regs}"
        if mem:
            text += f"; {mem}"
        if self.confirmed:
            text += f" ({self.confirmed})"
        return text

    def to_dict(self) -> dict:
        return {"function": self.function, "level": self.level(), "status": self.status, "bound": self.bound,
                "reason": self.reason, "assumptions": list(self.assumptions),
                "counterexample": self.render_counterexample() if self.counterexample else None,
                "paths": list(self.paths), "seconds": round(self.seconds, 3)}


class _Undecided(Exception):
    pass


@dataclass
class Trap:
    """A path that ends in a fault the CPU raises and VEX does not: a division by zero or whose
    quotient does not fit (``SIGFPE``), an aligned access to an unaligned address (``SIGSEGV``).
    Its outcome is the signal; ``constraints`` say on which inputs it is taken."""

    constraints: list
    signal: str
    where: str


#: Legacy SSE instructions with a 16-byte memory operand that do not require it aligned; every
#: other one faults on an unaligned address, as do the VEX forms that say so (``vmovaps``...).
_UNALIGNED_OK = frozenset("""
    movups movupd movdqu lddqu movlps movhps movlpd movhpd movq movd movss movsd pinsrb pinsrw pinsrd pinsrq
    pextrb pextrw pextrd pextrq extractps insertps movntdqa prefetcht0 prefetchnta
""".split())
_VEX_ALIGNED = frozenset("vmovaps vmovapd vmovdqa vmovdqa32 vmovdqa64 vmovntps vmovntpd vmovntdq vmovntdqa".split())


def trapping(insn) -> str | None:
    """What may make ``insn`` fault where VEX computes a value: "div", "idiv" (division by
    zero, a quotient that does not fit), "align" (an access that must be aligned), or None."""
    import capstone.x86 as cx

    m = insn.mnemonic
    if m in ("div", "idiv"):
        return m
    mem = [op for op in insn.operands if op.type == cx.X86_OP_MEM]
    if not mem:
        return None
    vex = insn.bytes[0] in (0xC4, 0xC5, 0x62)
    if vex:
        return "align" if m in _VEX_ALIGNED else None
    if mem[0].size == 16 and m not in _UNALIGNED_OK and (
            any(insn.reg_name(op.reg).startswith("xmm") for op in insn.operands if op.type == cx.X86_OP_REG)
            or m.startswith(("movap", "movdqa", "movnt"))):
        return "align"
    return None


def param_kinds(source_text: str, name: str) -> list[str] | None:
    """The kinds of ``name``'s register parameters from its C definition ("ptr", "int",
    "float"), None when unknown (then every argument register is an integer)."""
    base = name.split(".")[0]
    m = re.search(r"(?:^|[;})\n])\s*(?:[A-Za-z_]\w*[\s*]+)+?" + re.escape(base) + r"\s*\(([^;{)]*)\)\s*\{",
                  source_text or "")
    if m is None or "..." in m.group(1) or "struct" in m.group(1) or "union" in m.group(1) or "[" in m.group(1):
        return None
    params = [p.strip() for p in m.group(1).split(",") if p.strip()]
    if params == ["void"]:
        return []
    out = []
    for p in params:
        if "*" in p:
            out.append("ptr")
        elif re.search(r"\b(float|double)\b", p):
            out.append("float")
        elif "long double" in p:
            return None
        else:
            out.append("int")
    return out


class _Side:
    """One function run symbolically: its completed paths."""

    def __init__(self, path, name, inputs, bound, deadline, readonly_hint=None):
        import angr
        import claripy

        self.angr, self.claripy = angr, claripy
        self.proj = angr.Project(str(path), auto_load_libs=False, load_options={"main_opts": {"base_addr": 0x400000}})
        sym = self.proj.loader.main_object.get_symbol(name)
        if sym is None or not sym.is_function:
            raise _Undecided(f"{name} is not a function of the object")
        self.entry = sym.rebased_addr
        main = self.proj.loader.main_object
        self.text = [(s.vaddr, s.vaddr + s.memsize) for s in main.sections if s.is_executable]
        self.readonly = [(s.vaddr, s.vaddr + s.memsize) for s in main.sections
                         if s.occupies_memory and not s.is_writable and not s.is_executable]
        self.inputs = inputs
        self.bound = bound
        self.deadline = deadline
        self.done: list = []  # completed paths: angr states that returned, and Trap paths
        self.traps = self._trapping(main)
        self.cut = 0
        self.used_buffers: set = set()

    def _state(self):
        angr, claripy = self.angr, self.claripy
        o = angr.options
        st = self.proj.factory.blank_state(
            addr=self.entry,
            add_options={o.SYMBOL_FILL_UNCONSTRAINED_MEMORY, o.SYMBOL_FILL_UNCONSTRAINED_REGISTERS,
                         o.NO_SYMBOLIC_JUMP_RESOLUTION},
            remove_options={o.SIMPLIFY_MEMORY_WRITES} if hasattr(o, "SIMPLIFY_MEMORY_WRITES") else set())
        for r, v in self.inputs["regs"].items():
            setattr(st.regs, r, v)
        rsp = STACK_TOP - 8
        st.regs.rsp = rsp
        st.memory.store(rsp, claripy.BVV(RET_MARK, 64), endness="Iend_LE")
        for base, data in self.inputs["buffers"].values():
            st.memory.store(base, data)
        st.globals["counts"] = {}
        st.globals["writes"] = frozenset()
        st.globals["bad"] = None
        st.inspect.b("mem_read", when=angr.BP_BEFORE, action=self._on_read)
        st.inspect.b("mem_write", when=angr.BP_BEFORE, action=self._on_write)
        for addr in self.traps:
            st.inspect.b("instruction", when=angr.BP_BEFORE, instruction=addr, action=self._on_trapping)
        return st

    def _trapping(self, main) -> dict:
        """Address -> (what may fault, the decoded instruction) over the object's code."""
        import capstone

        md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        md.detail = True
        out = {}
        for lo, hi in self.text:
            code = self.proj.loader.memory.load(lo, hi - lo)
            for insn in md.disasm(code, lo):
                kind = trapping(insn)
                if kind is not None:
                    out[insn.address] = (kind, insn)
        return out

    def _value(self, st, insn, op):
        """The value of operand ``op`` of ``insn`` in ``st`` (a register or memory)."""
        import capstone.x86 as cx

        if op.type == cx.X86_OP_REG:
            return getattr(st.regs, insn.reg_name(op.reg))
        return st.memory.load(self._address(st, insn, op), op.size, endness="Iend_LE")

    def _address(self, st, insn, op):
        import capstone.x86 as cx

        claripy = self.claripy
        mem = op.mem
        a = claripy.BVV(mem.disp & (2**64 - 1), 64)
        if mem.base == cx.X86_REG_RIP:
            a = a + (insn.address + insn.size)
        elif mem.base:
            a = a + getattr(st.regs, insn.reg_name(mem.base))
        if mem.index:
            a = a + getattr(st.regs, insn.reg_name(mem.index)) * mem.scale
        return a

    def _on_trapping(self, st):
        """Before an instruction that may fault: the inputs on which it does end this path as a
        trap (a completed path of its own); the path goes on with the others only."""
        kind, insn = self.traps[st.inspect.instruction]
        claripy = self.claripy
        if kind == "align":
            import capstone.x86 as cx

            op = next(o for o in insn.operands if o.type == cx.X86_OP_MEM)
            cond = (self._address(st, insn, op) & (op.size - 1)) != 0
            signal = "SIGSEGV (an aligned access to an unaligned address)"
        else:
            op = insn.operands[0]
            w = op.size * 8
            d = self._value(st, insn, op)
            if w == 8:
                ax = st.regs.ax
                high, low = ax[15:8], ax[7:0]
            else:
                high = {16: st.regs.dx, 32: st.regs.edx, 64: st.regs.rdx}[w]
                low = {16: st.regs.ax, 32: st.regs.eax, 64: st.regs.rax}[w]
            if kind == "div":
                overflow = claripy.UGE(high, d)
            else:
                wide = claripy.Concat(high, low)
                q = claripy.SDiv(wide, claripy.SignExt(w, d))
                top, bottom = 2 ** (w - 1) - 1, -(2 ** (w - 1))
                overflow = claripy.Or(claripy.SGT(q, claripy.BVV(top, 2 * w)),
                                      claripy.SLT(q, claripy.BVV(bottom & (2 ** (2 * w) - 1), 2 * w)))
            cond = claripy.Or(d == 0, overflow)
            signal = "SIGFPE (a division by zero or a quotient that does not fit)"
        if st.solver.satisfiable(extra_constraints=[cond]):
            self.done.append(Trap(list(st.solver.constraints) + [cond], signal, f"{insn.address:#x}: "
                                  f"{insn.mnemonic} {insn.op_str}"))
        st.add_constraints(claripy.Not(cond))

    def _where(self, st, addr_ast, size):
        if isinstance(addr_ast, int):
            a = addr_ast
        elif addr_ast.symbolic:
            return None, "a memory access at an address that depends on the input"
        else:
            a = st.solver.eval(addr_ast)
        end = a + size
        if STACK_TOP - FRAME <= a and end <= STACK_TOP - 8:
            return "frame", a
        if STACK_TOP - 8 <= a and end <= STACK_TOP:
            return "return-slot", a  # `ret` reads it; the control-flow proof keeps data off it
        for reg, (base, _) in self.inputs["buffers"].items():
            if base <= a and end <= base + BUFFER:
                self.used_buffers.add(reg)
                return "buffer", a
            if base - BUFFER_STRIDE // 2 <= a < base + BUFFER_STRIDE // 2:
                return None, f"an access {a - base:+#x} bytes from {reg} (outside the {BUFFER} bytes modelled)"
        return "other", a

    @staticmethod
    def _size(st, length, default) -> int | None:
        """The access's size, None when it depends on the input (a `rep` count): angr would
        pick one value, and a proof over one value is none."""
        if length is None:
            return default
        if isinstance(length, int):
            return length
        if length.symbolic:
            return None
        return st.solver.eval(length)

    def _access(self, st, address, length, default):
        """(kind, address, size) of one memory access, or None after marking the path
        undecided (a size or an address that depends on the input)."""
        size = self._size(st, length, default)
        if size is None:
            st.globals["bad"] = st.globals["bad"] or "a memory access whose size depends on the input"
            return None
        kind, a = self._where(st, address, size)
        if kind is None:
            st.globals["bad"] = st.globals["bad"] or a
            return None
        return kind, a, size

    def _on_read(self, st):
        got = self._access(st, st.inspect.mem_read_address, st.inspect.mem_read_length, 8)
        if got is None:
            return
        kind, a, size = got
        if kind == "other" and not any(lo <= a and a + size <= hi for lo, hi in self.readonly):
            if STACK_TOP - 8 <= a < STACK_TOP + FRAME:
                st.globals["bad"] = st.globals["bad"] or "reads the caller's stack (stack arguments or return address)"
            else:
                st.globals["bad"] = st.globals["bad"] or f"reads memory at {a:#x} (global or unmodelled data)"

    def _on_write(self, st):
        got = self._access(st, st.inspect.mem_write_address, st.inspect.mem_write_length,
                           len(st.inspect.mem_write_expr) // 8)
        if got is None:
            return
        kind, a, size = got
        if kind == "buffer":
            st.globals["writes"] = st.globals["writes"] | frozenset(range(a, a + size))
        elif kind == "return-slot":
            st.globals["bad"] = st.globals["bad"] or "writes the return-address slot"
        elif kind == "other":
            st.globals["bad"] = st.globals["bad"] or f"writes memory at {a:#x} (global data or the caller's stack)"

    def run(self) -> None:
        """Explore every path up to the bound; raise :class:`_Undecided` on what cannot be modelled."""
        work = [self._state()]
        while work:
            if time.perf_counter() > self.deadline:
                raise _Undecided(f"out of time after {len(self.done)} paths, {self.cut} cut at bound {self.bound}")
            st = work.pop()
            if len(self.done) + len(work) + self.cut > MAX_PATHS:
                # cut paths count too: a loop nest over input-dependent counts multiplies them
                raise _Undecided(f"more than {MAX_PATHS} paths within bound {self.bound}")
            try:
                # opt_level 0: each instruction writes the registers it changes before the next one
                # starts, so a fault check before an instruction sees the values the CPU would
                # (VEX optimisation keeps them in temporaries to the end of the block).
                succ = self.proj.factory.successors(st, opt_level=0)
            except Exception as exc:  # angr's engine errors: an instruction it lacks
                raise _Undecided(f"the lifter or engine cannot run it ({type(exc).__name__}: {exc})"[:200]) from exc
            if succ.unconstrained_successors:
                raise _Undecided("an indirect jump or call through a computed address")
            for t in succ.flat_successors:
                if t.globals["bad"]:
                    raise _Undecided(t.globals["bad"])
                jk = t.history.jumpkind
                if jk.startswith("Ijk_Sys"):
                    raise _Undecided("a system call")
                if t.addr == RET_MARK and t.solver.eval(t.regs.rsp) == STACK_TOP and jk == "Ijk_Ret":
                    self.done.append(t)
                    continue
                if not any(lo <= t.addr < hi for lo, hi in self.text):
                    name = self.proj.loader.find_symbol(t.addr)
                    raise _Undecided(f"a call to {name.name if name else hex(t.addr)}, which the tier does not model")
                if jk not in ("Ijk_Boring", "Ijk_Call", "Ijk_Ret"):
                    raise _Undecided(f"control flow it does not model ({jk})")
                counts = t.globals["counts"]
                n = counts.get(t.addr, 0) + 1
                if n > self.bound:
                    self.cut += 1
                    continue
                t.globals["counts"] = {**counts, t.addr: n}
                work.append(t)


def _inputs(kinds, claripy):
    regs = {r: claripy.BVS(f"in_{r}", 64, explicit_name=True) for r in GPRS}
    for i in range(8):
        regs[f"xmm{i}"] = claripy.BVS(f"in_xmm{i}", 128, explicit_name=True)
    buffers = {}
    for i, kind in enumerate(kinds or []):
        slot = sum(1 for k in kinds[:i] if k != "float")  # its place among the integer registers
        if kind == "ptr" and slot < len(ARG_REGS):
            reg = ARG_REGS[slot]
            base = BUFFER_BASE + len(buffers) * BUFFER_STRIDE
            regs[reg] = claripy.BVV(base, 64)
            # one symbol per 8-byte word: a load then simplifies to its word, not an extract
            # from one 4096-bit vector (which made every branch check slow)
            words = [claripy.BVS(f"mem_{reg}_{k:03x}", 64, explicit_name=True) for k in range(0, BUFFER, 8)]
            buffers[reg] = (base, claripy.Concat(*words))
    return {"regs": regs, "buffers": buffers}


def _outputs(kind, g, c):
    """Pairs (what, gcc's value, candidate's value) the two paths must agree on."""
    out = []
    what, bits = kind
    if what == "int":
        out.append(("eax" if bits == 32 else "rax" if bits == 64 else f"low {bits} bits of rax",
                    g.regs.rax[bits - 1:0], c.regs.rax[bits - 1:0]))
    elif what == "float":
        out.append(("xmm0", g.regs.xmm0[bits - 1:0], c.regs.xmm0[bits - 1:0]))
    elif what != "void":
        for r in ("rax", "rdx", "xmm0", "xmm1"):
            out.append((r, getattr(g.regs, r), getattr(c.regs, r)))
    for r in CALLEE_SAVED:
        out.append((r, getattr(g.regs, r), getattr(c.regs, r)))
    for addr in sorted(g.globals["writes"] | c.globals["writes"]):
        out.append((f"memory byte {addr:#x}", g.memory.load(addr, 1), c.memory.load(addr, 1)))
    return out


def prove(base_obj, cand_obj, name: str, source_text: str = "", *, bound: int = DEFAULT_BOUND,
          seconds: float = DEFAULT_SECONDS) -> SmtVerdict:
    """Prove ``name`` of ``cand_obj`` equal to ``name`` of ``base_obj`` (gcc's), or refute it
    with a counterexample, or say why it is not decided."""
    require()
    import logging

    import claripy

    for lg in ("angr", "cle", "pyvex", "claripy"):
        logging.getLogger(lg).setLevel(logging.ERROR)
    started = time.perf_counter()
    verdict = SmtVerdict(name, "undecided", bound=bound)
    from sgcc.verify.function.emulate import return_kind

    kind = return_kind(source_text or "", name)
    kinds = param_kinds(source_text or "", name)
    inputs = _inputs(kinds, claripy)
    deadline = started + seconds
    unlike = _unlike_the_cpu(base_obj, cand_obj, name)
    if unlike is not None:
        verdict.reason = unlike
        verdict.seconds = time.perf_counter() - started
        return verdict
    try:
        g = _Side(base_obj, name, inputs, bound, deadline)
        c = _Side(cand_obj, name, inputs, bound, deadline)
        g.run()
        c.run()
    except _Undecided as exc:
        verdict.reason = str(exc)
        verdict.seconds = time.perf_counter() - started
        return verdict
    verdict.paths = (len(g.done), len(c.done))
    for gs in g.done:
        for cs in c.done:
            if time.perf_counter() > deadline:
                verdict.reason = "out of time"
                verdict.seconds = time.perf_counter() - started
                return verdict
            # z3's own limit: one query must not outlive the tier's seconds (the loop's check
            # runs only between queries).
            s = claripy.Solver(timeout=max(1000, int((deadline - time.perf_counter()) * 1000)))
            s.add(_constraints(gs) + _constraints(cs))
            trapped = isinstance(gs, Trap), isinstance(cs, Trap)
            try:
                if not s.satisfiable():
                    continue
                if any(trapped):
                    # A trap is an outcome: the same one on both sides, or the inputs that
                    # reach this pair are a counterexample (a dead `div` by zero included).
                    if all(trapped) and gs.signal == cs.signal:
                        continue
                    outs = [("outcome", claripy.BVV(0, 1), claripy.BVV(1, 1))]
                    differs = True
                    what = (f"gcc's function {_ending(gs)}, the candidate's {_ending(cs)}")
                else:
                    outs = _outputs(kind, gs, cs)
                    diff = claripy.Or(*[a != b for _, a, b in outs])
                    s.add(diff)
                    differs = s.satisfiable()
                    what = ""
            except claripy.errors.ClaripyError as exc:  # a timeout reads as an error from z3
                verdict.reason = f"out of time (the solver: {str(exc)[:80]})"
                verdict.seconds = time.perf_counter() - started
                return verdict
            if differs:
                verdict.status = "refuted"
                verdict.counterexample = _model(s, inputs, kinds, outs)
                if what:
                    verdict.counterexample["difference"] = what
                verdict.confirmed = _confirm(base_obj, cand_obj, name, kind, verdict.counterexample)
                verdict.seconds = time.perf_counter() - started
                return verdict
    verdict.status = "bounded" if (g.cut or c.cut) else "proven"
    used = g.used_buffers | c.used_buffers
    if used:
        verdict.assumptions.append(f"{', '.join(sorted(used))} point{'s' if len(used) == 1 else ''} to "
                                   f"{BUFFER} bytes or more" + (" that do not overlap" if len(used) > 1 else ""))
    verdict.seconds = time.perf_counter() - started
    return verdict


def _unlike_the_cpu(base_obj, cand_obj, name: str) -> str | None:
    """Why VEX's account of ``name`` (either side) is not evidence: an instruction form angr
    computes otherwise than this CPU (:func:`sgcc.verify.function.forms.lifter_differs`), or
    VEX-encoded code, whose forms are not compared; None when every compared form agrees."""
    from sgcc.asm.obj import read_object
    from sgcc.verify.function import emulate, forms

    objs = [read_object(base_obj), read_object(cand_obj, remember=False)]
    for obj in objs:
        vex = emulate.vex_encoded(obj)
        if vex:
            return f"VEX-encoded code is not compared with the CPU here ({vex})"
    found: dict = {}
    for obj in objs:
        found.update(forms.forms_of(obj, {name}))
    try:
        unlike = forms.lifter_differs(found)
    except SgccError as exc:
        return f"the lifter could not be compared with the CPU ({exc.message})"
    if unlike:
        key, what = sorted(unlike.items())[0]
        return f"the lifter computes `{key}` unlike this CPU ({what})"
    return None


def _constraints(path) -> list:
    return list(path.constraints) if isinstance(path, Trap) else list(path.solver.constraints)


def _ending(path) -> str:
    return f"faults with {path.signal} at {path.where}" if isinstance(path, Trap) else "returns"


def _model(s, inputs, kinds, outs) -> dict:
    """One input on which the two sides differ: argument registers and buffer bytes."""
    import claripy

    nargs = len([k for k in kinds if k != "float"]) if kinds is not None else 6
    names = [r for r in ARG_REGS[:nargs] if r not in inputs["buffers"]]
    vals = [inputs["regs"][r] for r in names] + [d for _, d in inputs["buffers"].values()]
    whole = claripy.Concat(*vals) if vals else None
    regs, memory = {}, {}
    # every general register's value (what the emulator's confirmation starts from)
    full = claripy.Concat(*[inputs["regs"][r] for r in GPRS if inputs["regs"][r].symbolic])
    fv = s.eval(full, 1)[0]
    width, entry = int(full.length or 0), {}
    for r in GPRS:
        if inputs["regs"][r].symbolic:
            width -= 64
            entry[r] = (fv >> width) & (2**64 - 1)
    if whole is not None:
        v = s.eval(whole, 1)[0]
        width = int(whole.length or 0)
        for r in names:
            width -= 64
            regs[r] = (v >> width) & (2**64 - 1)
        for r, (base, data) in inputs["buffers"].items():
            width -= data.length
            raw = ((v >> width) & (2 ** data.length - 1)).to_bytes(data.length // 8, "big")
            regs[r] = base
            memory[r] = raw[:64]
    differs = []
    for what, a, b in outs:
        sa = claripy.Solver()
        sa.add(s.constraints)
        sa.add(whole == s.eval(whole, 1)[0]) if whole is not None else None
        if sa.satisfiable(extra_constraints=[a != b]):
            va, vb = sa.eval(a, 1)[0], sa.eval(b, 1)[0]
            differs.append(f"{what} is {vb:#x}, gcc's function gives {va:#x}")
            break
    buffers = {r: (base, raw_all) for r, (base, raw_all) in _buffer_bytes(s, inputs).items()}
    entry.update({r: base for r, (base, _) in buffers.items()})
    return {"regs": regs, "memory": memory, "difference": "; ".join(differs) or "the outputs differ",
            "entry": entry, "buffers": buffers}


def _buffer_bytes(s, inputs) -> dict:
    out = {}
    for r, (base, data) in inputs["buffers"].items():
        out[r] = (base, s.eval(data, 1)[0].to_bytes(data.length // 8, "big"))
    return out


def _confirm(base_obj, cand_obj, name, kind, ce) -> str:
    """Run the counterexample concretely on both objects in funcdiff's emulator (Unicorn, a
    second implementation of the ISA): a difference there confirms it independently of VEX."""
    try:
        from sgcc.asm.obj import read_object
        from sgcc.verify.function import emulate, funcstate

        regs = {r: 0 for r in GPRS}
        regs.update(ce["entry"])
        regs["rsp"] = STACK_TOP - 8
        regs["rflags"] = 0x202
        regions = [funcstate.Region(STACK_TOP - FRAME, bytes(FRAME + 0x1000), True)]
        for base, raw in ce["buffers"].values():
            regions.append(funcstate.Region(base, raw + bytes((-len(raw)) % 0x1000), True))
        state = funcstate.FuncState(name, regs, [bytes(16)] * 8, regions, 0, origin="solver")
        capture = funcstate.Capture()
        m = emulate.Machine(state, capture, [read_object(base_obj), read_object(cand_obj, remember=False)])
        mut = emulate.Mutation("counterexample")
        g = m.run(m.images[0].entries[name], mut, 5.0)
        c = m.run(m.images[1].entries[name], mut, 5.0)
        diff = emulate.compare(kind, g, c, m, mut)
        if diff is None:
            return "not confirmed in the emulator: both functions agree there"
        return f"confirmed in the emulator: {diff}"
    except Exception as exc:  # noqa: BLE001 - a confirmation that cannot run does not undo the refutation
        return f"not confirmed in the emulator ({type(exc).__name__}: {exc})"[:200]
