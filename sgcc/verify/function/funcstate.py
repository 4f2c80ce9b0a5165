"""Capturing the entry states of gcc's functions while the tests run gcc's program.

Whole-program tests exercise a handful of values of a function's inputs; the function-level
differential test (:mod:`sgcc.verify.function.emulate`) runs gcc's function and a candidate on the
*states* the function really starts from, and on many mutations of them. This module
captures those states with a capture build of gcc's own program:

* each captured function's assembly gets one instruction after its label,
  ``call __sgcc_cap_<i>``; the stub saves every general register, the flags and xmm0-7,
  and ``__sgcc_dump`` (``funcstate_rt.c``, no libc, no vector registers) writes them and
  every readable, non-executable mapping of the process (stack, heap, the program's data,
  libc's data; bounded: 2 calls per function and run, 40 MB per mapping, 48 MB per call,
  160 MB per run) to a file in a directory the box lets the run write;
* the link map (``-Wl,-Map``) says where the object's writable sections landed, and the
  dump carries the runtime address of ``__sgcc_dump``, so a position-independent program's
  load offset is known: gcc's and the candidate's objects are later loaded so that their
  ``.data``/``.bss`` are exactly the captured program's.

The capture build is gcc's code plus the runtime, run in the same box as every other run;
nothing of a candidate runs here.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path

from sgcc import proc
from sgcc.errors import SgccError

MAGIC = b"SGCCCAP1"
GPR_NAMES = ("rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp",
             "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rflags", "fsbase")
#: Most states kept per function (the dumps of every test run together).
MAX_STATES = 12
CAPTURE_TIMEOUT = 60.0


@dataclass
class Region:
    """One mapping of the captured process: ``start`` .. ``start + len(data)``."""

    start: int
    data: bytes
    writable: bool

    @property
    def end(self) -> int:
        return self.start + len(self.data)


@dataclass
class FuncState:
    """The machine state at one entry of one function: registers and readable memory."""

    function: str
    regs: dict[str, int]
    xmm: list[bytes]
    regions: list[Region]
    load_delta: int  # runtime address minus link-time address of the capture binary
    origin: str = ""  # which test run and call it came from

    def region_at(self, addr: int) -> Region | None:
        for r in self.regions:
            if r.start <= addr < r.end:
                return r
        return None


@dataclass
class Capture:
    """Every state captured for a program, and where the object's writable sections live."""

    states: dict[str, list[FuncState]] = field(default_factory=dict)
    # (section name, occurrence among same-named sections of the object) -> link-time address
    sections: dict[tuple[str, int], int] = field(default_factory=dict)
    symbols: dict[str, int] = field(default_factory=dict)  # capture binary's data symbols (link-time)
    seconds: float = 0.0
    runs: int = 0
    note: str = ""


def instrument(asm_text: str, names: list[str]) -> str:
    """gcc's assembly with ``call __sgcc_cap_<i>`` after the label of ``names[i]``."""
    index = {n: i for i, n in enumerate(names)}
    out = []
    for line in asm_text.splitlines():
        out.append(line)
        m = re.match(r"^([A-Za-z_.$][\w.$]*):\s*$", line)
        if m and m.group(1) in index:
            out.append(f"\tcall\t__sgcc_cap_{index[m.group(1)]}")
    return "\n".join(out) + "\n"


def stubs(count: int, dump_dir: str) -> str:
    """The assembly of the ``__sgcc_cap_<i>`` stubs and the dump directory's name."""
    save = [("rax", 0), ("rcx", 16), ("rdx", 24), ("rsi", 32), ("rdi", 40), ("rbp", 48),
            ("r8", 64), ("r9", 72), ("r10", 80), ("r11", 88), ("r12", 96), ("r13", 104), ("r14", 112),
            ("r15", 120), ("rbx", 8)]
    body = ["\t.text"]
    for i in range(count):
        body += [f"\t.globl\t__sgcc_cap_{i}", f"\t.hidden\t__sgcc_cap_{i}", f"__sgcc_cap_{i}:", "\tpushfq"]
        body += [f"\tmovq\t%{r}, __sgcc_regs+{o}(%rip)" for r, o in save]
        body += ["\tleaq\t16(%rsp), %rax", "\tmovq\t%rax, __sgcc_regs+56(%rip)",
                 "\tmovq\t(%rsp), %rax", "\tmovq\t%rax, __sgcc_regs+128(%rip)"]
        body += [f"\tmovdqu\t%xmm{k}, __sgcc_regs+{144 + 16 * k}(%rip)" for k in range(8)]
        body += ["\tmovq\t%rsp, %rbx", "\tandq\t$-16, %rsp", f"\tmovl\t${i}, %edi", "\tcall\t__sgcc_dump",
                 "\tmovq\t%rbx, %rsp"]
        body += [f"\tmovq\t__sgcc_regs+{o}(%rip), %{r}" for r, o in save]
        body += ["\tpopfq", "\tret"]
    escaped = dump_dir.replace("\\", "\\\\").replace('"', '\\"')
    body += ["\t.section\t.rodata", "\t.globl\t__sgcc_cap_dir", "\t.hidden\t__sgcc_cap_dir",
             f"__sgcc_cap_dir:\n\t.string\t\"{escaped}\"", '\t.section\t.note.GNU-stack,"",@progbits']
    return "\n".join(body) + "\n"


def build(program, workdir: Path, compiler: str, names: list[str]) -> tuple[Path, Path, Path]:
    """Build the capture binary of ``program`` (gcc's assembly, instrumented) in ``workdir``;
    returns (binary, link map, dump directory). Raises :class:`SgccError` when it does not build."""
    import tempfile

    from sgcc.gcc import args as gccargs

    workdir.mkdir(parents=True, exist_ok=True)
    # Its own directory outside the run's private one (which the box cannot reach), removed by capture().
    dump_dir = Path(tempfile.mkdtemp(prefix="sgcc-cap-"))
    os.chmod(dump_dir, 0o733)  # the program may run as nobody: it writes here and nowhere else of ours
    cap_s = workdir / "cap.s"
    cap_s.write_text(instrument(program.asm_text, names), encoding="utf-8", errors="surrogateescape")
    (workdir / "stubs.s").write_text(stubs(len(names), str(dump_dir)))
    rt_c = Path(__file__).with_name("funcstate_rt.c")
    steps = [
        [compiler, *program.asm_flags, "-c", "-x", "assembler", str(cap_s), "-o", str(workdir / "cap.o")],
        [compiler, "-c", "-x", "assembler", str(workdir / "stubs.s"), "-o", str(workdir / "stubs.o")],
        [compiler, "-O2", "-mgeneral-regs-only", "-fno-stack-protector", "-fno-builtin", "-fcf-protection=none",
         "-fPIC", "-c", str(rt_c), "-o", str(workdir / "rt.o")],
    ]
    binary, map_file = workdir / "cap", workdir / "cap.map"
    steps.append(gccargs.link_argv(compiler, [*program.flags, f"-Wl,-Map={map_file}"],
                                   [str(workdir / "cap.o"), str(workdir / "stubs.o"), str(workdir / "rt.o")],
                                   str(binary)))
    for argv in steps:
        r = proc.run(argv, timeout=300)
        if not r.ok:
            raise SgccError("the capture build of gcc's program failed",
                            hint=r.stderr.decode(errors="replace")[-800:])
    return binary, map_file, dump_dir


def parse_map(text: str, obj_name: str) -> dict[tuple[str, int], int]:
    """Link-time addresses of the input sections of the object named ``obj_name`` (its path as
    the link map writes it): (section name, occurrence) -> address."""
    out: dict[tuple[str, int], int] = {}
    seen: dict[str, int] = {}
    pending = None
    for line in text.splitlines():
        m = re.match(r"^ (\S+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(.+)$", line)
        if m is None and pending is not None:
            m2 = re.match(r"^\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(.+)$", line)
            if m2 is not None:
                name, addr, where = pending, m2.group(1), m2.group(3)
                pending = None
                _record(out, seen, name, addr, where, obj_name)
                continue
        pending = None
        if m is not None:
            _record(out, seen, m.group(1), m.group(2), m.group(4), obj_name)
            continue
        m = re.match(r"^ (\.\S+)$", line)
        if m is not None:
            pending = m.group(1)
    return out


def _record(out, seen, name, addr, where, obj_name) -> None:
    if where.strip() != obj_name:
        return
    k = seen.get(name, 0)
    seen[name] = k + 1
    out[(name, k)] = int(addr, 16)


def parse_dump(data: bytes, names: list[str], dump_address: int) -> FuncState | None:
    """One dump file as a :class:`FuncState`; None when it is truncated or not a dump."""
    if len(data) < 24 + 34 * 8 or data[:8] != MAGIC:
        return None
    index, runtime_dump = struct.unpack_from("<QQ", data, 8)
    if index >= len(names):
        return None
    vals = struct.unpack_from("<34Q", data, 24)
    regs = dict(zip(GPR_NAMES, vals[:18]))
    xmm = [data[24 + 144 + 16 * k: 24 + 160 + 16 * k] for k in range(8)]
    pos = 24 + 34 * 8
    regions = []
    while True:
        if pos + 24 > len(data):
            return None  # truncated: the run was killed while it wrote
        start, end, prot = struct.unpack_from("<QQQ", data, pos)
        pos += 24
        if start == end == 0:
            break
        size = end - start
        if size > len(data) - pos:
            return None
        regions.append(Region(start, data[pos:pos + size], bool(prot & 2)))
        pos += size
    return FuncState(names[index], regs, xmm, regions, runtime_dump - dump_address)


def capture(program, sandbox, tests: list, workdir: Path, compiler: str, names: list[str],
            *, max_states: int = MAX_STATES) -> Capture:
    """Run the capture build of ``program`` on ``tests`` and return the states of ``names``
    (at most ``max_states`` per function, smallest dumps first so that small states, which
    cost little to run, are kept). Raises :class:`SgccError` when the capture build fails."""
    import time


    started = time.perf_counter()
    binary, map_file, dump_dir = build(program, workdir, compiler, names)
    try:
        return _capture(binary, map_file, dump_dir, sandbox, tests, workdir, names, max_states, started)
    finally:
        shutil.rmtree(dump_dir, ignore_errors=True)


def _capture(binary, map_file, dump_dir, sandbox, tests, workdir, names, max_states, started) -> Capture:
    import time

    from sgcc.asm.obj import read_object

    cap = Capture()
    cap.sections = parse_map(map_file.read_text(errors="replace"), str(workdir / "cap.o"))
    exe = read_object(binary, remember=False)
    dump_address = None
    for sym in exe.symbols:
        if sym.name == "__sgcc_dump":
            dump_address = sym["st_value"]
        elif sym["st_info"]["type"] in ("STT_OBJECT", "STT_NOTYPE", "STT_TLS") and sym["st_shndx"] != "SHN_UNDEF":
            cap.symbols.setdefault(sym.name, sym["st_value"])
    if dump_address is None:
        raise SgccError("the capture build has no __sgcc_dump symbol")
    for test in tests:
        sandbox.run(binary, test.stdin, timeout=CAPTURE_TIMEOUT, memory=16 << 30, writable=[dump_dir])
        cap.runs += 1
        for f in sorted(dump_dir.iterdir(), key=lambda p: p.stat().st_size):
            try:
                state = parse_dump(f.read_bytes(), names, dump_address)
            except (OSError, struct.error):
                state = None
            f.unlink(missing_ok=True)
            if state is None:
                continue
            kept = cap.states.setdefault(state.function, [])
            if len(kept) < max_states:
                state.origin = f"test {test.name}, call {f.stem.rsplit('-', 1)[-1]}"
                kept.append(state)
    for kept in cap.states.values():
        kept.sort(key=lambda s: sum(len(r.data) for r in s.regions))  # cheapest first
    cap.seconds = time.perf_counter() - started
    return cap
