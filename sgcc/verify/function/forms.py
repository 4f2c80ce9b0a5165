"""Instruction forms on the CPU and in the engines that stand in for it (issue 35 items 2 and 3).

The function-level test runs candidates in Unicorn and the SMT tier lifts them through VEX
(angr). Evidence from either counts only if the engine computes what this CPU computes: a
candidate that uses an instruction the emulator gets wrong (an undefined flag, ``bsf`` of zero,
a vector form QEMU runs as another) can be right in the emulator and wrong on the CPU; a form
the lifter models otherwise can make "proven equivalent" false. So every instruction *form*
(mnemonic and operand kinds: ``imul r64, r64, imm8``) a proof relies on is run natively and in
the engine on the same random states, and compared: registers, status flags, vector
registers, a scratch buffer its memory operands point into, and whether it traps.

* :func:`forms_of` -- the forms of some functions of an object, one instance each;
* :func:`emulator_differs` -- per form, whether Unicorn differs from the CPU (beyond flags the
  manual leaves undefined, which the information-flow rule already refuses to read);
* :func:`lifter_differs` -- the same for angr's VEX engine (the SMT tier's evidence).

The native side is a harness built by the host's gcc: each instance framed by code that loads a
state from a fixed address, runs the instruction's own bytes, and stores the state back; a
driver runs it on every state, catching traps. Only data instructions are compared (no
branches, nothing that uses ``%rsp`` or ``%rip``, no segment, string or system instructions):
those are held elsewhere (the control-flow proof, the object check). Results are cached per
form, engine version and CPU model in the user's cache directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sgcc.asm import x86
from sgcc.errors import SgccError

#: Where the harness's state, output and scratch buffer live (native, Unicorn and angr alike).
IN, OUT, BUF, CODE = 0x2000_0000, 0x2000_1000, 0x1000_0000, 0x3000_0000
BUF_SIZE = 4096
STATE = 400  # gpr[16] (128), rflags (8), pad (8), xmm[16] (256)
STATES_PER_FORM = 48
#: Status flags (CF PF AF ZF SF OF) and the reserved bit 1: what a state sets and compares.
STATUS_MASK = 0x8D5
FLAG_BITS = {"CF": 0x1, "PF": 0x4, "AF": 0x10, "ZF": 0x40, "SF": 0x80, "OF": 0x800}
GPRS = x86.GPR64
_SKIP_GROUPS = ("jump", "call", "ret", "int", "iret", "privilege", "branch_relative")
_SKIP = frozenset("""
    push pop pushf pushfq popf popfq leave enter call ret jmp syscall sysenter cpuid rdtsc rdtscp rdrand rdseed
    rdpid xgetbv hlt ud2 int3 lods lodsb lodsw lodsd lodsq stos stosb stosw stosd stosq movs movsb movsw movsq
    cmps cmpsb cmpsw cmpsd cmpsq scas scasb scasw scasd scasq xlatb nop endbr64 clflush prefetcht0 prefetcht1
    prefetcht2 prefetchnta lfence mfence sfence pause fxsave fxrstor xsave xrstor ldmxcsr stmxcsr fnstcw fldcw
    fnstsw fninit
""".split())


@dataclass(frozen=True)
class Form:
    """One instruction form and one instance of it (its bytes), with what its memory operand
    needs: the registers that address it (set to point into the scratch buffer)."""

    key: str
    raw: bytes
    bases: tuple  # (register index, displacement) for a memory operand's base; index registers set small
    index: tuple  # register indices used as a memory operand's index
    undefined: int  # status flags the manual leaves undefined after it (bits of FLAG_BITS)


def _operand_kind(op, insn, cs) -> str:
    import capstone.x86 as cx

    if op.type == cx.X86_OP_REG:
        name = insn.reg_name(op.reg)
        for prefix, kind in (("xmm", "xmm"), ("ymm", "ymm"), ("zmm", "zmm"), ("mm", "mm"), ("st", "st"), ("k", "k")):
            if name.startswith(prefix) and name[len(prefix):].isdigit():
                return kind
        return f"r{op.size * 8}"
    if op.type == cx.X86_OP_IMM:
        return "imm"
    if op.type == cx.X86_OP_MEM:
        return f"m{op.size * 8}"
    return "?"


def form_of(insn) -> Form | None:
    """The form of a decoded instruction (capstone, details on), or None for one this
    comparison does not run (control flow, the stack, %rip, segments, strings, system)."""
    import capstone.x86 as cx

    m = insn.mnemonic.split()[-1]
    if m in _SKIP or m.startswith(("j", "loop")) or insn.mnemonic.startswith("rep"):
        return None
    if any(insn.group_name(g) in _SKIP_GROUPS for g in insn.groups):
        return None
    if insn.bytes[0] in (0xC4, 0xC5, 0x62) or any(insn.group_name(g) in ("fpu", "mmx") for g in insn.groups):
        return None  # VEX/EVEX (the emulator runs none faithfully: untested anyway), x87 and MMX state
    bases, index = [], []
    for op in insn.operands:
        if op.type == cx.X86_OP_REG and insn.reg_name(op.reg) in ("rsp", "esp", "sp", "spl", "rip"):
            return None
        if op.type == cx.X86_OP_MEM:
            mem = op.mem
            if mem.segment or mem.base in (0, cx.X86_REG_RSP, cx.X86_REG_RIP, cx.X86_REG_ESP) \
                    or not -1024 <= mem.disp <= 1024:
                return None
            bases.append((GPRS.index(_full(insn.reg_name(mem.base))), mem.disp))
            if mem.index:
                if _full(insn.reg_name(mem.index)) in ("rsp", "rip"):
                    return None
                index.append(GPRS.index(_full(insn.reg_name(mem.index))))
    from sgcc.verify.static.stackframe import regs_access

    regs_read, regs_written = regs_access(insn)
    for r in (*regs_read, *regs_written):
        name = insn.reg_name(r)
        if name in ("rsp", "esp", "rip", "fs", "gs", "fpsw", "fpcw") or name.startswith(("st", "mm", "ymm", "zmm")):
            return None
    kinds = ", ".join(_operand_kind(op, insn, None) for op in insn.operands)
    regs = [op.reg for op in insn.operands if op.type == cx.X86_OP_REG]
    if len(regs) != len(set(regs)):
        kinds += " (one register twice)"  # xor %eax,%eax or addps %xmm1,%xmm1: another form
    from sgcc.verify.static.infoflow import undefined_after

    undefined = 0
    for name in undefined_after(insn):
        undefined |= FLAG_BITS[name]
    return Form(f"{m} {kinds}".strip(), bytes(insn.bytes), tuple(bases), tuple(index), undefined)


def _full(name: str) -> str:
    """The 64-bit register a name is part of."""
    table = {"eax": "rax", "ax": "rax", "al": "rax", "ah": "rax", "ecx": "rcx", "cx": "rcx", "cl": "rcx", "ch": "rcx",
             "edx": "rdx", "dx": "rdx", "dl": "rdx", "dh": "rdx", "ebx": "rbx", "bx": "rbx", "bl": "rbx", "bh": "rbx",
             "esi": "rsi", "si": "rsi", "sil": "rsi", "edi": "rdi", "di": "rdi", "dil": "rdi", "ebp": "rbp",
             "bp": "rbp", "bpl": "rbp", "esp": "rsp", "sp": "rsp", "spl": "rsp"}
    if name in table:
        return table[name]
    for suffix in ("d", "w", "b"):
        if name.startswith("r") and name.endswith(suffix) and name[1:-1].isdigit():
            return name[:-1]
    return name


def forms_of(obj, functions=None) -> dict[str, Form]:
    """The forms in ``functions`` of ``obj`` (an :class:`sgcc.asm.obj.ObjectFile`; all its
    functions when None), one instance each, by key."""
    out: dict[str, Form] = {}
    for name, (shndx, start, end) in obj.extents.items():
        if functions is not None and name not in functions and obj.group_of(name) not in functions:
            continue
        for insn in obj.insns(shndx, start, end):
            f = form_of(insn)
            if f is not None and f.key not in out:
                out[f.key] = f
    return out


# -- states ------------------------------------------------------------------------------------

_EDGES = [0, 1, 2, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 2**63 - 1, 2**63,
          2**64 - 1, 2**64 - 2, 63, 64, 31, 32]
_DOUBLES = [0.0, -0.0, 1.0, -1.5, float("inf"), float("-inf"), float("nan"), 1e-310, 2.0**1023, 3.5]


def states(form: Form, count: int, seed: int) -> list[tuple[bytes, bytes]]:
    """``count`` input states (the state block, the scratch buffer) for ``form``."""
    rng = random.Random(f"{seed}:{form.key}")
    out = []
    for k in range(count):
        gpr = [rng.choice(_EDGES) if rng.random() < 0.4 else rng.getrandbits(rng.choice((8, 16, 32, 64)))
               for _ in range(16)]
        for reg in form.index:
            gpr[reg] = rng.randrange(0, 8)
        for reg, disp in form.bases:
            gpr[reg] = BUF + 2048 - disp - 64 * 8 * (reg in form.index)
        gpr[4] = 0
        flags = (rng.getrandbits(12) & STATUS_MASK) | 0x2
        xmm = b""
        for _ in range(16):
            if rng.random() < 0.3:
                xmm += struct.pack("<dd", rng.choice(_DOUBLES), rng.choice(_DOUBLES))
            elif rng.random() < 0.3:
                xmm += struct.pack("<ffff", *(rng.choice((0.0, 1.0, -2.5, float("nan"), 1e-40)) for _ in range(4)))
            else:
                xmm += rng.randbytes(16)
        block = struct.pack("<16Q", *(g & (2**64 - 1) for g in gpr)) + struct.pack("<QQ", flags, 0) + xmm
        buf = rng.randbytes(BUF_SIZE) if k % 2 else bytes(rng.choice((0, 0xFF, 0x80)) for _ in range(BUF_SIZE))
        out.append((block, buf))
    return out


# -- the harness ---------------------------------------------------------------------------------

def _frame(raw: bytes) -> str:
    """Assembly of one harness function around an instruction's bytes."""
    load = [f"\tmovdqu\t{144 + 16 * k}(%rax), %xmm{k}" for k in range(16)]
    load += ["\tpushq\t128(%rax)", "\tpopfq"]
    load += [f"\tmovq\t{8 * i}(%rax), %{r}" for i, r in enumerate(GPRS) if r not in ("rax", "rsp")]
    load += ["\tmovq\t0(%rax), %rax"]
    store = ["\tpushfq", "\tpushq\t%rax", f"\tmovabsq\t${OUT:#x}, %rax", "\tpopq\t0(%rax)", "\tpopq\t128(%rax)"]
    store += [f"\tmovq\t%{r}, {8 * i}(%rax)" for i, r in enumerate(GPRS) if r not in ("rax", "rsp")]
    store += [f"\tmovdqu\t%xmm{k}, {144 + 16 * k}(%rax)" for k in range(16)]
    body = ["\tpushq\t%rbx", "\tpushq\t%rbp", "\tpushq\t%r12", "\tpushq\t%r13", "\tpushq\t%r14", "\tpushq\t%r15",
            f"\tmovabsq\t${IN:#x}, %rax", *load, "\t.byte\t" + ", ".join(f"{b:#x}" for b in raw), *store,
            "\tpopq\t%r15", "\tpopq\t%r14", "\tpopq\t%r13", "\tpopq\t%r12", "\tpopq\t%rbp", "\tpopq\t%rbx", "\tret"]
    return "\n".join(body)


_DRIVER = r"""
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
typedef void (*fn)(void);
extern fn sgcc_forms[];
static sigjmp_buf jb;
static void on_trap(int sig) { siglongjmp(jb, sig); }
int main(int argc, char **argv) {
    if (mmap((void *)0x10000000, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0)
        == MAP_FAILED || mmap((void *)0x20000000, 8192, PROT_READ | PROT_WRITE,
        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == MAP_FAILED) return 2;
    struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_handler = on_trap; sa.sa_flags = SA_NODEFER;
    sigaction(SIGFPE, &sa, 0); sigaction(SIGSEGV, &sa, 0); sigaction(SIGILL, &sa, 0); sigaction(SIGBUS, &sa, 0);
    FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
    unsigned int k;
    while (fread(&k, 4, 1, in) == 1) {
        if (fread((void *)0x20000000, 400, 1, in) != 1 || fread((void *)0x10000000, 4096, 1, in) != 1) return 3;
        memset((void *)0x20001000, 0, 400);
        int sig = sigsetjmp(jb, 1);
        if (!sig) sgcc_forms[k]();
        fwrite(&sig, 4, 1, out);
        fwrite((void *)0x20001000, 400, 1, out);
        fwrite((void *)0x10000000, 4096, 1, out);
    }
    fclose(out);
    return 0;
}
"""


@dataclass(frozen=True)
class Result:
    """What one run of a form did: the trap signal (0: none), the state block, the buffer."""

    trap: int
    block: bytes
    buf: bytes


def native(forms: list[Form], cases: list[list[tuple[bytes, bytes]]], work: Path) -> list[list[Result]]:
    """Run each form on its states on this CPU (a harness built by the host's gcc); the harness
    functions' bytes, for the engines to run, are in :func:`harness_code` afterwards."""
    from sgcc import proc

    work.mkdir(parents=True, exist_ok=True)
    asm = ["\t.text"]
    for i, f in enumerate(forms):
        asm += [f"\t.globl\tsgcc_form_{i}", f"sgcc_form_{i}:", _frame(f.raw)]
    asm += ["\t.section\t.data.rel.ro,\"aw\"", "\t.globl\tsgcc_forms", "sgcc_forms:"]
    asm += [f"\t.quad\tsgcc_form_{i}" for i in range(len(forms))]
    asm += ['\t.section\t.note.GNU-stack,"",@progbits']
    (work / "forms.s").write_text("\n".join(asm) + "\n")
    (work / "driver.c").write_text(_DRIVER)
    gcc = shutil.which("gcc") or "gcc"
    env = {**os.environ, "SGCC_DISABLE": "1"}
    r = proc.run([gcc, "-c", "-o", str(work / "forms.o"), str(work / "forms.s")], timeout=120, env=env)
    if r.ok:
        r = proc.run([gcc, "-o", str(work / "driver"), str(work / "driver.c"), str(work / "forms.o")], timeout=120,
                     env=env)
    if not r.ok:
        raise SgccError("the instruction-form harness did not build: "
                        + r.stderr.decode(errors="replace").strip().splitlines()[-1][:200])
    with open(work / "in.bin", "wb") as fh:
        for i, per in enumerate(cases):
            for block, buf in per:
                fh.write(struct.pack("<I", i) + block + buf)
    r = proc.run([str(work / "driver"), str(work / "in.bin"), str(work / "out.bin")], timeout=120, env=env)
    if not r.ok:
        raise SgccError(f"the instruction-form harness failed ({r.describe()})")
    raw = (work / "out.bin").read_bytes()
    out, pos = [], 0
    for per in cases:
        results = []
        for _ in per:
            sig = struct.unpack_from("<i", raw, pos)[0]
            results.append(Result(sig, raw[pos + 4:pos + 4 + STATE], raw[pos + 4 + STATE:pos + 4 + STATE + BUF_SIZE]))
            pos += 4 + STATE + BUF_SIZE
        out.append(results)
    return out


def harness_code(work: Path, count: int) -> list[bytes]:
    """The bytes of the harness functions :func:`native` built in ``work`` (position
    independent but for the fixed addresses: what the engines run from CODE), in order."""
    from sgcc.asm.obj import read_object

    obj = read_object(work / "forms.o", remember=False)
    text = next(d for d in obj.code if d.name == ".text")
    starts = sorted((s["st_value"], s.name) for s in obj.symbols
                    if s.name.startswith("sgcc_form_") and s["st_shndx"] == text.index)
    ends = [a for a, _ in starts[1:]] + [text.size]
    return [text.data[a:b] for (a, _), b in zip(starts, ends)][:count]


_UC: dict = {}


def unicorn_run(code: bytes, block: bytes, buf: bytes) -> Result:
    """One harness function run in Unicorn, as the function-level test runs code."""
    import unicorn
    from unicorn import x86_const as x

    uc = _UC.get(code)
    if uc is None:
        _UC.clear()
        uc = _UC[code] = unicorn.Uc(unicorn.UC_ARCH_X86, unicorn.UC_MODE_64)
        uc.mem_map(CODE, 0x10000)
        uc.mem_write(CODE, code + b"\xf4")
        uc.mem_map(BUF, 0x1000)
        uc.mem_map(IN, 0x2000)
        uc.mem_map(0x7000_0000, 0x10000)
    uc.mem_write(BUF, buf)
    uc.mem_write(IN, block)
    uc.mem_write(OUT, bytes(STATE))
    stop = CODE + len(code)
    uc.reg_write(x.UC_X86_REG_RSP, 0x7000_8000)
    uc.mem_write(0x7000_8000, struct.pack("<Q", stop))
    uc.reg_write(x.UC_X86_REG_MXCSR, 0x1F80)
    try:
        uc.emu_start(CODE, stop, timeout=2_000_000)
    except unicorn.UcError as exc:
        _UC.clear()  # an engine that stopped on an exception is not reused
        trap = {unicorn.UC_ERR_INSN_INVALID: 4}.get(exc.errno, 8 if "DIVIDE" in str(exc).upper() else 11)
        if exc.errno == unicorn.UC_ERR_EXCEPTION:
            trap = 8  # a CPU exception: #DE on this harness (division), QEMU's helper raised it
        return Result(trap, bytes(STATE), bytes(uc.mem_read(BUF, BUF_SIZE)))
    return Result(0, bytes(uc.mem_read(OUT, STATE)), bytes(uc.mem_read(BUF, BUF_SIZE)))


def compare(form: Form, cpu: Result, other: Result) -> str | None:
    """None if ``other`` computed what the CPU did; "flags" if only flags the manual leaves
    undefined differ; else what differs."""
    if cpu.trap != other.trap:
        return f"traps differently (CPU signal {cpu.trap}, engine {other.trap})"
    if cpu.trap:
        return None
    a, b = struct.unpack_from("<16Q", cpu.block), struct.unpack_from("<16Q", other.block)
    for i, (va, vb) in enumerate(zip(a, b)):
        if i != 4 and va != vb:
            return f"%{GPRS[i]} is {vb:#x} where the CPU gives {va:#x}"
    if cpu.block[144:] != other.block[144:]:
        k = next(i for i in range(144, STATE) if cpu.block[i] != other.block[i])
        return f"%xmm{(k - 144) // 16} differs from the CPU's"
    if cpu.buf != other.buf:
        return "memory differs from the CPU's"
    fa, fb = struct.unpack_from("<Q", cpu.block, 128)[0] & STATUS_MASK, struct.unpack_from("<Q", other.block, 128)[0] \
        & STATUS_MASK
    if fa != fb:
        if (fa ^ fb) & ~form.undefined & STATUS_MASK:
            names = [n for n, bit in FLAG_BITS.items() if (fa ^ fb) & bit]
            return f"flags {', '.join(names)} differ from the CPU's"
        return "flags"
    return None


# -- verdicts, cached ------------------------------------------------------------------------------

def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def _cache_path(engine: str) -> Path:
    from sgcc import dirs

    # What decides a verdict: the engine, the CPU, and this comparison with its flag facts.
    from sgcc.asm import x86

    logic = Path(__file__).read_bytes() + Path(x86.__file__).read_bytes()
    tag = hashlib.sha256(f"{engine}:{_cpu_model()}:".encode() + logic).hexdigest()[:16]
    return Path(dirs.user_cache_dir()) / "function" / f"forms-{tag}.json"


def _verdicts(forms: dict[str, Form], engine: str, run_engine, per_form: int,
              traps_modelled: bool = False) -> dict[str, str]:
    """Per form key: "same", "flags" (only undefined flags differ), "cpu lacks it", or what
    differs. ``traps_modelled``: the engine's user models traps itself (the SMT tier's division
    and alignment faults), so states on which the CPU traps are not compared."""
    path = _cache_path(engine)
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        known = {}
    todo = [f for k, f in sorted(forms.items()) if k not in known]
    if todo:
        work = Path(tempfile.mkdtemp(prefix="sgcc-forms-"))
        try:
            cases = [states(f, per_form, seed=1) for f in todo]
            cpu = native(todo, cases, work)
            codes = harness_code(work, len(todo))
            for f, per, results, code in zip(todo, cases, cpu, codes):
                if all(r.trap == 4 for r in results):
                    known[f.key] = "cpu lacks it"
                    continue
                verdict = "same"
                for (block, buf), mine in zip(per, results):
                    if mine.trap == 4 or traps_modelled and mine.trap:
                        continue
                    diff = compare(f, mine, run_engine(code, block, buf))
                    if diff is not None and diff != "flags":
                        verdict = diff
                        break
                    if diff == "flags":
                        verdict = "flags"
                known[f.key] = verdict
        finally:
            shutil.rmtree(work, ignore_errors=True)
        try:
            from sgcc.fsutil import atomic_write

            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(os.fspath(path), json.dumps(known, indent=0, sort_keys=True).encode())
        except OSError:
            pass
    return {k: known[k] for k in forms}


def lifter_differs(forms: dict[str, Form]) -> dict[str, str]:
    """The forms angr's VEX engine (the SMT tier) computes otherwise than this CPU on states
    the CPU does not trap on (the tier models division and alignment faults itself)."""
    import angr

    v = _verdicts(forms, f"angr {angr.__version__}", angr_run, ANGR_STATES, traps_modelled=True)
    return {k: w for k, w in v.items() if w not in ("same", "flags", "cpu lacks it")}


#: States per form for the lifter (angr steps slowly; the forms it is asked about are few).
ANGR_STATES = 12
_ANGR: dict = {}


def angr_run(code: bytes, block: bytes, buf: bytes) -> Result:
    """One harness function run concretely by angr's VEX engine, as the SMT tier runs code."""
    import io
    import logging

    import angr
    import claripy

    logging.getLogger("angr").setLevel(logging.ERROR)
    logging.getLogger("cle").setLevel(logging.ERROR)
    proj = _ANGR.get(code)
    if proj is None:
        _ANGR.clear()
        proj = _ANGR[code] = angr.Project(io.BytesIO(code + b"\xf4" * 16), auto_load_libs=False, main_opts={
            "backend": "blob", "arch": "amd64", "base_addr": CODE, "entry_point": CODE})
    o = angr.options
    st = proj.factory.blank_state(addr=CODE, add_options={o.ZERO_FILL_UNCONSTRAINED_MEMORY,
                                                          o.ZERO_FILL_UNCONSTRAINED_REGISTERS})
    st.memory.store(IN, block)
    st.memory.store(BUF, buf)
    st.memory.store(OUT, bytes(STATE))
    stop = CODE + len(code)
    st.regs.rsp = 0x7000_8000
    st.memory.store(0x7000_8000, claripy.BVV(stop, 64), endness="Iend_LE")
    for _ in range(64):
        succ = proj.factory.successors(st)
        nxt = succ.flat_successors
        if len(nxt) != 1:
            return Result(11, bytes(STATE), bytes(BUF_SIZE))
        st = nxt[0]
        if st.addr == stop:
            out = st.solver.eval(st.memory.load(OUT, STATE), cast_to=bytes)
            mem = st.solver.eval(st.memory.load(BUF, BUF_SIZE), cast_to=bytes)
            return Result(0, out, mem)
    return Result(11, bytes(STATE), bytes(BUF_SIZE))


def emulator_differs(forms: dict[str, Form]) -> dict[str, str]:
    """The forms Unicorn runs otherwise than this CPU (beyond flags the manual leaves
    undefined), each with what differs."""
    import unicorn

    v = _verdicts(forms, f"unicorn {unicorn.__version__}", unicorn_run, STATES_PER_FORM)
    return {k: w for k, w in v.items() if w not in ("same", "flags", "cpu lacks it")}
