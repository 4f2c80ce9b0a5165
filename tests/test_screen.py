"""Screening hostile candidates: real gcc, gas and capstone, no mocks.

The baseline is a tiny program with a popcount loop; candidates replace that function's body
in gcc's own assembly, the way a model's answer would be spliced in.
"""

from __future__ import annotations

import builtins
import sys
import time
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.verify.static import assembler, isa, objcheck, textscreen

PROGRAM = r"""
#include <stdio.h>
int count_bits(unsigned long x)
{
    int n = 0;
    while (x) {
        n += x & 1;
        x >>= 1;
    }
    return n;
}
int main(void)
{
    unsigned long v;
    long total = 0;
    while (scanf("%lu", &v) == 1)
        total += count_bits(v);
    printf("%ld\n", total);
    return 0;
}
"""


def gcc(*args: str, cwd: Path) -> None:
    proc.run(["gcc", *args], cwd=cwd, timeout=60, check=True)


class Baseline:
    def __init__(self, root: Path):
        self.root = root
        (root / "pc.c").write_text(PROGRAM)
        gcc("-O3", "-S", "pc.c", "-o", "pc.s", cwd=root)
        self.asm = (root / "pc.s").read_text()
        self.obj = root / "pc.o"
        v = assembler.assemble(root / "pc.s", self.obj)
        assert v.ok, v
        start = self.asm.index("count_bits:\n")
        end = self.asm.index("\t.cfi_endproc", start)
        self.head = self.asm[:start] + "count_bits:\n\t.cfi_startproc\n"
        self.tail = self.asm[end:]

    def text(self, body: str) -> str:
        """gcc's file with count_bits' body replaced by ``body``."""
        return self.head + body.strip("\n") + "\n" + self.tail

    def build(self, name: str, body: str, *, screened: bool = True) -> Path:
        """Assemble a candidate (after checking that the text screen lets it through)."""
        text = self.text(body)
        if screened:
            v = textscreen.screen_text(text)
            assert v.ok, v
        src = self.root / f"{name}.s"
        src.write_text(text)
        obj = self.root / f"{name}.o"
        v = assembler.assemble(src, obj)
        assert v.ok, v
        return obj


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Baseline:
    return Baseline(tmp_path_factory.mktemp("screen"))


@pytest.fixture(scope="module")
def default_target() -> isa.Target:
    return isa.target_from_flags("gcc", [])


@pytest.fixture(scope="module")
def native() -> isa.Target:
    return isa.native_target("gcc")


def host_has(flag: str) -> bool:
    try:
        return flag in Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False


POPCNT_BODY = "\tpopcntq\t%rdi, %rax\n\tret"


# ---------------------------------------------------------------------------------------------
# gcc's own output and the object check's baseline behaviour


def test_gcc_output_passes_every_gate(base, default_target):
    v = textscreen.screen_text(base.asm)
    assert v.ok and v.stage == "screen", v
    v = objcheck.check_object(base.obj, base.obj, isa=default_target)
    assert v.ok and v.stage == "check", v


def test_harmless_rewrite_passes(base, default_target):
    obj = base.build("plain", "\txorl\t%eax, %eax\n\ttestq\t%rdi, %rdi\n\tje\t1f\n"
                     "2:\tmovl\t%edi, %edx\n\tandl\t$1, %edx\n\taddl\t%edx, %eax\n"
                     "\tshrq\t%rdi\n\tjne\t2b\n1:\tret")
    assert objcheck.check_object(obj, base.obj, isa=default_target).ok


# ---------------------------------------------------------------------------------------------
# (1) popcnt: the papers' showcase is only legal when the user opts into the host's ISA


def test_popcnt_refused_by_default_allowed_native(base, default_target, native):
    obj = base.build("popcnt", POPCNT_BODY)
    v = objcheck.check_object(obj, base.obj, isa=default_target)
    assert not v.ok and v.stage == "check"
    assert "popcnt" in v.reason and "x86-64" in v.reason and "--isa native" in v.reason
    if not host_has("popcnt"):
        pytest.skip("this CPU has no popcnt")
    assert objcheck.check_object(obj, base.obj, isa=native).ok


def test_popcnt_allowed_when_flags_promise_it(base):
    obj = base.build("popcnt2", POPCNT_BODY)
    assert objcheck.check_object(obj, base.obj, isa=isa.target_from_flags("gcc", ["-mpopcnt"])).ok


# ---------------------------------------------------------------------------------------------
# (2), (3) file-reading directives never reach the assembler


@pytest.mark.parametrize("line", [
    '\t.incbin "/etc/passwd"',
    '\t.incbin "/nonexistent/sgcc-sentinel"',
    '\t.INCBIN "/etc/passwd"',
    '\tnop; .incbin "/etc/passwd"',
    '.Lx: .incbin "/etc/passwd", 0, 10',
    '\t.include "/etc/passwd"',
    '\t.include "/nonexistent/sgcc-sentinel.s"',
])
def test_file_reading_directives_refused_purely(base, monkeypatch, line):
    # screen_text is pure: with process creation and file opening made to fail loudly, it
    # must still answer (and refuse).
    def forbidden(*a, **k):
        raise AssertionError("screen_text tried to run or open something")

    monkeypatch.setattr(proc, "run", forbidden)
    monkeypatch.setattr(builtins, "open", forbidden)
    v = textscreen.screen_text(base.text(line + "\n\tret"))
    monkeypatch.undo()
    assert not v.ok and v.stage == "screen"
    assert ".incbin" in v.reason.lower() or ".include" in v.reason
    assert "reads a file" in v.reason


# ---------------------------------------------------------------------------------------------
# (4) new externals


def test_call_system_assembles_but_is_refused(base, default_target):
    obj = base.build("system", "\tcall\tsystem@PLT\n\tret")
    v = objcheck.check_object(obj, base.obj, isa=default_target)
    assert not v.ok and "system" in v.reason and "external" in v.reason


def test_allowed_memory_routines_pass(base, default_target):
    obj = base.build("memset", "\tsubq\t$8, %rsp\n\tcall\tmemset@PLT\n\taddq\t$8, %rsp\n\tret")
    assert objcheck.check_object(obj, base.obj, isa=default_target).ok
    v = objcheck.check_object(obj, base.obj, isa=default_target, allowed_new_externals=frozenset())
    assert not v.ok and "memset" in v.reason


def test_got_load_of_new_symbol_refused(base, default_target):
    obj = base.build("execve", "\tmovq\texecve@GOTPCREL(%rip), %rax\n\tret")
    v = objcheck.check_object(obj, base.obj, isa=default_target)
    assert not v.ok and "execve" in v.reason


def test_new_global_definition_refused(base, default_target):
    obj = base.build("newglobal", "\t.globl\thelper\nhelper:\n\txorl\t%eax, %eax\n\tret")
    v = objcheck.check_object(obj, base.obj, isa=default_target)
    assert not v.ok and "helper" in v.reason


# ---------------------------------------------------------------------------------------------
# (5) system calls however spelled


@pytest.mark.parametrize("body", [
    "\t.byte 0x0f, 0x05\n\tret",                    # syscall as bytes
    "\t.byte 0xcd, 0x80\n\tret",                    # int $0x80 as bytes
])
def test_syscall_bytes_refused(base, default_target, native, body):
    obj = base.build("sysbytes", body)
    for target in (default_target, native):
        v = objcheck.check_object(obj, base.obj, isa=target)
        assert not v.ok
        assert "syscall" in v.reason or "int" in v.reason or "0f 05" in v.reason


@pytest.mark.parametrize("insn", ["syscall", "sysenter", "int\t$0x80", "int3", "hlt", "inb\t%dx, %al",
                                  "outb\t%al, %dx", "cli", "rdmsr", "swapgs", "lret", "rdtsc",
                                  "iretq", "rdpmc"])
def test_forbidden_instructions_refused_in_text(base, insn):
    v = textscreen.screen_text(base.text(f"\t{insn}\n\tret"))
    assert not v.ok and "instruction" in v.reason


def test_syscall_bytes_inside_an_instruction_are_unreachable_and_pass(base, default_target):
    """Bytes 0f 05 inside an immediate (or inside a vmulpd gcc emits) run only if a jump lands
    inside the instruction, which the checks below and the control-flow proof refuse; so the
    object check decodes instructions and does not count raw bytes (it once refused gcc's
    own -march=native code this way)."""
    obj = base.build("sysimm", "\tmovl\t$0x050f, %eax\n\tret")
    assert objcheck.check_object(obj, base.obj, isa=default_target).ok


def test_jump_into_the_middle_of_an_instruction_refused(base, default_target):
    obj = base.build("midjump", "\tjmp\t1f+1\n1:\tmovl\t$0x90909090, %eax\n\tret")
    v = objcheck.check_object(obj, base.obj, isa=default_target)
    assert not v.ok and "middle of an instruction" in v.reason


def test_undecodable_bytes_in_code_refused(base, default_target):
    obj = base.build("databytes", "\tret\n\t.long 0xffffffff")
    v = objcheck.check_object(obj, base.obj, isa=default_target)
    assert not v.ok and "do not decode" in v.reason


def test_rip_relative_reach_outside_section_refused(base, default_target):
    obj = base.build("rip", "\tmovl\t1000000(%rip), %eax\n\tret")
    v = objcheck.check_object(obj, base.obj, isa=default_target)
    assert not v.ok and "outside" in v.reason


def test_absolute_branch_target_refused(base, default_target):
    obj = base.build("absjmp", "\tjmp\t0x1234\n\tret")
    assert not objcheck.check_object(obj, base.obj, isa=default_target).ok


def test_segment_register_write_refused(base, default_target):
    obj = base.build("segreg", "\tmovw\t%ax, %fs\n\tret")
    v = objcheck.check_object(obj, base.obj, isa=default_target)
    assert not v.ok and "segment register" in v.reason


def test_baseline_inline_syscall_is_not_a_new_capability(tmp_path, default_target):
    # A function whose gcc output already has a syscall (inline asm) may keep it.
    (tmp_path / "s.c").write_text(
        "long raw_getpid(void) { long r; __asm__ volatile (\"syscall\" : \"=a\"(r) : \"0\"(39L)"
        " : \"rcx\", \"r11\", \"memory\"); return r; }\n"
    )
    gcc("-O3", "-c", "s.c", "-o", "s.o", cwd=tmp_path)
    assert objcheck.check_object(tmp_path / "s.o", tmp_path / "s.o", isa=default_target).ok


# ---------------------------------------------------------------------------------------------
# (6) runaway directives: refused at once, before any assembler


@pytest.mark.parametrize("line", [
    "\t.fill 1000000000, 1, 0",
    "\t.fill 200000, 8, 0",
    "\t.rept 100000000\n\tnop\n\t.endr",
    "\t.skip 1099511627776",
    "\t.space 2000000, 0x90",
    "\t.zero 4294967296",
    "\t.p2align 30",
    "\t.balign 1048576",
    "\t.skip 1<<40",
    "\t.irp r,a,b\n\t.endr",
    "\t.macro m\n\t.endm",
    "\t.if 1\n\t.endif",
    "\t.org 0x100000",
    "\t. = . + 100000000",
    "\t.set ., . + 100000000",
    "\t.equ\t., 0x7fffffff",
])
def test_runaway_or_opaque_directives_refused_quickly(base, line):
    start = time.perf_counter()
    v = textscreen.screen_text(base.text(line + "\n\tret"))
    assert time.perf_counter() - start < 1.0
    assert not v.ok and v.stage == "screen"


def test_emitted_bytes_bound_is_configurable(base):
    text = base.text("\t.zero 4096\n\tret")
    assert textscreen.screen_text(text).ok
    assert not textscreen.screen_text(text, max_bytes_emitted=1000).ok


def test_huge_text_refused(base):
    v = textscreen.screen_text("#" * (textscreen.MAX_TEXT_CHARS + 1))
    assert not v.ok


# ---------------------------------------------------------------------------------------------
# (7) sections and symbol kinds that run code or change the program


@pytest.mark.parametrize("line", [
    '\t.section\t.init_array,"aw"\n\t.quad\tcount_bits\n\t.text',
    '\t.pushsection .init_array,"aw"\n\t.popsection',
    '\t.section\t".init_array"',
    '\t.section\t.init_array.00100,"aw"',
    '\t.section\t.fini_array,"aw"',
    '\t.section\t.preinit_array,"aw"',
    '\t.section\t.ctors,"aw",@progbits',
    '\t.section\t.init,"ax",@progbits',
    '\t.section\t.interp,"a"',
    '\t.section\t.data',
    '\t.data',
    '\t.bss',
    '\t.section\t.tbss,"awT",@nobits',
    '\t.section\t.text.evil,"awx",@progbits',
    '\t.section\t.rodata.x,"ax",@progbits',
    '\t.section\t.note.GNU-stack,"x",@progbits',
    '\t.section\t.text.g,"axG",@progbits,g,comdat',
    '\t.comm\tbuf,4096,32',
    '\t.type\tcount_bits, @gnu_indirect_function',
    '\t.type\tcount_bits, %gnu_indirect_function',
    '\t.symver\tcount_bits,count_bits@V1',
    '\t.weakref\tx, system',
    '\t.code32',
    '\t.intel_syntax noprefix',
    '\t.reloc\t., R_X86_64_64, system',
])
def test_dangerous_sections_and_symbols_refused_in_text(base, line):
    v = textscreen.screen_text(base.text(line + "\n\tret"))
    assert not v.ok and v.stage == "screen", line


def test_init_array_refused_in_object_even_if_text_screen_bypassed(base, default_target):
    obj = base.build("ctor", '\tret\n\t.section\t.init_array,"aw"\n\t.align 8\n\t.quad\tcount_bits\n\t.text',
                     screened=False)
    v = objcheck.check_object(obj, base.obj, isa=default_target)
    assert not v.ok and ".init_array" in v.reason


CTORS = r"""
static int ready;
int f(int x) { return x * 3 + ready; }
__attribute__((constructor)) static void init1(void) { ready += 1; }
__attribute__((constructor)) static void init2(void) { ready *= 5; }
"""


def _init_array_addends(obj: Path) -> list[int]:
    from elftools.elf.elffile import ELFFile

    with open(obj, "rb") as f:
        rela = ELFFile(f).get_section_by_name(".rela.init_array")
        return [r["r_addend"] for r in rela.iter_relocations()]


def test_constructor_table_must_stay_gccs(tmp_path, default_target):
    (tmp_path / "ct.c").write_text(CTORS)
    gcc("-O3", "-S", "ct.c", "-o", "ct.s", cwd=tmp_path)
    asm = (tmp_path / "ct.s").read_text()
    assert assembler.assemble(tmp_path / "ct.s", tmp_path / "ct.o").ok

    def variant(name: str, text: str) -> Path:
        (tmp_path / f"{name}.s").write_text(text)
        assert assembler.assemble(tmp_path / f"{name}.s", tmp_path / f"{name}.o").ok
        return tmp_path / f"{name}.o"

    # A longer init1 moves init2 within .text.startup: the table still names gcc's targets.
    longer = variant("longer", asm.replace("\taddl\t$1, ready(%rip)\n", "\taddl\t$1, ready(%rip)\n" + "\tnop\n" * 20))
    assert _init_array_addends(longer) != _init_array_addends(tmp_path / "ct.o")
    assert objcheck.check_object(longer, tmp_path / "ct.o", isa=default_target).ok
    # Pointing the table at another function is refused.
    hijack = variant("hijack", asm.replace("\t.quad\tinit2", "\t.quad\tf"))
    v = objcheck.check_object(hijack, tmp_path / "ct.o", isa=default_target)
    assert not v.ok and "startup table .init_array" in v.reason


def test_new_code_and_constant_sections_pass(base, default_target):
    obj = base.build("cold", "\ttestq\t%rdi, %rdi\n\tje\tcount_bits.cold\n"
                     "\tmovsd\t.LCk(%rip), %xmm0\n\tcvttsd2si\t%xmm0, %eax\n\tret\n"
                     '\t.section\t.text.unlikely,"ax",@progbits\ncount_bits.cold:\n\txorl\t%eax, %eax\n\tret\n'
                     '\t.section\t.rodata.cst8,"aM",@progbits,8\n\t.align 8\n.LCk:\n\t.long\t0\n\t.long\t1072693248\n'
                     "\t.text")
    v = objcheck.check_object(obj, base.obj, isa=default_target)
    assert v.ok, v


def test_executable_stack_marker_refused_in_object(base, default_target):
    text = base.text("\tret").replace('.note.GNU-stack,"",@progbits', '.note.GNU-stack,"x",@progbits')
    src = base.root / "xstack.s"
    src.write_text(text)
    obj = base.root / "xstack.o"
    assert assembler.assemble(src, obj).ok
    v = objcheck.check_object(obj, base.obj, isa=default_target)
    assert not v.ok and ".note.GNU-stack" in v.reason


@pytest.mark.parametrize("name", ["system", "malloc", "__libc_start_main", "_init", "exit"])
def test_defining_libc_names_refused(base, name):
    for line in (f"{name}:", f"\t.set\t{name}, count_bits", f"{name} = count_bits"):
        v = textscreen.screen_text(base.text(line + "\n\tret"))
        assert not v.ok and name in v.reason
    assert textscreen.screen_text(base.text(f"{name}:\n\tret"), may_define=frozenset({name})).ok


# ---------------------------------------------------------------------------------------------
# The lexer: where our reading and gas's could differ, refuse


@pytest.mark.parametrize("line", [
    "\tmovb\t$'#, %al ; .incbin \"/etc/passwd\"",   # gas: '# is a char constant, not a comment
    "\tmovl\t$1, %eax /* .incbin \"x\" */",
    "/ comment to gas",
    "\trep/movsb",
    "\tmovl\t$1, \\%eax",
    "#APP",
    "\t.set\tx, y*4096+z",
    "\tx == 1",
    "\tmov\u00e9\t%eax, %eax",
    "\tmovl\t$1, %eax\r",
    '\t.string "unterminated',
    '\t.section\t".\\151nit_array","aw"',
])
def test_ambiguous_text_refused(base, line):
    assert not textscreen.screen_text(base.text(line + "\n\tret")).ok


@pytest.mark.parametrize("line", [
    '\t.section\t.rodata.str1.1,"aMS",@progbits,1\n.LCx:\n\t.string\t"a;b#c\\"d"\n\t.text',
    "\tnop; nop # .incbin in a comment is only a comment",
    "\t.set\t.LCy, .LC0+8",
    "y = 5",
    "\t.p2align 4,,10\n\t.p2align 3\n\t.align 8\n\t.balign 16",
    "\tlock xaddl\t%eax, (%rdi)\n\trep stosq\n\tnotrack jmp\t*%rax",
    "\tvpaddd\t%zmm0, %zmm1, %zmm2{%k1}{z}",
    "\tmovq\t%fs:40, %rax",
    "\t.cfi_escape 0x10,0x6,0x2,0x76,0",
    "\t.loc 1 5 3 is_stmt 0 discriminator 1 view .LVU3",
    '\t.file 1 "/usr/include/stdio.h"',
    "\t.uleb128 .LLSDACSE1-.LLSDACSB1",
    "\t.long\t.L3-.L4\n\t.quad\t.L5\n\t.value\t7\n\t.byte\t1,2,3",
    "\t.double\t1.5\n\t.float\t-2e10",
    '\t.section\t.data.rel.ro.local,"aw"\n\t.quad\t.L3\n\t.text',
    '\t.section\t.text.unlikely,"ax",@progbits\ncount_bits.cold:\n\tud2\n\t.text',
])
def test_ordinary_gcc_text_accepted(base, line):
    v = textscreen.screen_text(base.text(line + "\n\tret"))
    assert v.ok, v


# ---------------------------------------------------------------------------------------------
# (8), (9) the assembler: line numbers for feedback, nothing from other files


def test_broken_asm_reports_assembler_line(base):
    src = base.root / "broken.s"
    src.write_text("\t.text\nf:\n\tmovl\t$1, %eax\n\tmovl\t%eax\n\tret\n")
    v = assembler.assemble(src, base.root / "broken.o")
    assert not v.ok and v.stage == "assemble"
    assert "broken.s:4: Error:" in v.reason
    assert not (base.root / "broken.o").exists()


@pytest.mark.parametrize("line", [
    '\t.incbin "secret.txt", 0, 1000000',
    '\t.incbin "secret.txt", 5, 7\n\tbogus_insn',
    '\t.include "secret.txt"',
    '# 1 "secret.txt"\n\tbogus SECRET-TOKEN',
])
def test_assembler_messages_never_carry_file_contents(tmp_path, line):
    # If screening were bypassed, the assembler's own messages must still not leak the file.
    (tmp_path / "secret.txt").write_text("SECRET-TOKEN\nmovl SECRET-TOKEN, %eax\nSECRET-TOKEN:\n")
    src = tmp_path / "leak.s"
    src.write_text("\t.text\n" + line + "\n")
    v = assembler.assemble(src, tmp_path / "leak.o")
    assert not v.ok and v.stage == "assemble"
    assert "SECRET-TOKEN" not in v.reason and "SECRET-TOKEN" not in v.detail


def test_assemble_never_runs_the_preprocessor(tmp_path):
    src = tmp_path / "cpp.s"
    src.write_text('#include "/etc/passwd"\n\t.text\n\tret\n')
    v = assembler.assemble(src, tmp_path / "cpp.o", flags=["-x", "assembler-with-cpp", "-DX", "@/etc/passwd"])
    assert v.ok  # '#include' is a comment to gas; the dangerous flags were dropped


def test_assembler_limits_stop_a_runaway(tmp_path):
    # Bypassing the screen, a huge .fill hits the output-size limit instead of the disk.
    src = tmp_path / "big.s"
    src.write_text("\t.text\n\t.fill 200000000, 1, 0\n")
    start = time.perf_counter()
    v = assembler.assemble(src, tmp_path / "big.o", timeout=30)
    assert not v.ok and time.perf_counter() - start < 30


# ---------------------------------------------------------------------------------------------
# (10), (11) the instruction set, however spelled


def test_avx_refused_by_default(base, default_target, native):
    obj = base.build("avx", "\tvpxor\t%ymm0, %ymm0, %ymm0\n\tvmovdqu\t%ymm0, -40(%rsp)\n"
                     "\tvzeroupper\n\txorl\t%eax, %eax\n\tret")
    v = objcheck.check_object(obj, base.obj, isa=default_target)
    assert not v.ok and "avx" in v.reason
    if host_has("avx2"):
        assert objcheck.check_object(obj, base.obj, isa=native).ok


def test_byte_spelled_popcnt_refused_by_default(base, default_target, native):
    obj = base.build("popbytes", "\t.byte 0xf3, 0x0f, 0xb8, 0xc0\n\tret")
    v = objcheck.check_object(obj, base.obj, isa=default_target)
    assert not v.ok and "popcnt" in v.reason
    if host_has("popcnt"):
        assert objcheck.check_object(obj, base.obj, isa=native).ok


def test_lzcnt_needs_lzcnt(base, default_target):
    obj = base.build("lzcnt", "\tlzcntq\t%rdi, %rax\n\tret")
    v = objcheck.check_object(obj, base.obj, isa=default_target)
    assert not v.ok and "lzcnt" in v.reason
    assert objcheck.check_object(obj, base.obj, isa=isa.target_from_flags("gcc", ["-mlzcnt"])).ok


def test_corrupt_object_is_a_refusal(base, default_target, tmp_path):
    raw = base.obj.read_bytes()
    for i, junk in enumerate([b"\x7fELF" + b"\x00" * 40, raw[: len(raw) // 2], raw[:64] + b"\xff" * 200]):
        bad = tmp_path / f"bad{i}.o"
        bad.write_bytes(junk)
        v = objcheck.check_object(bad, base.obj, isa=default_target)
        assert not v.ok and v.stage == "check"
    assert not objcheck.check_object(tmp_path / "missing.o", base.obj, isa=default_target).ok


def test_module_import_is_cheap():
    r = proc.run([sys.executable, "-c", "import sys, sgcc.verify.static.textscreen, sgcc.verify.static.assembler, "
                  "sgcc.verify.static.objcheck, sgcc.verify.static.isa, sgcc.asm.obj; "
                  "print(any(m.startswith(('capstone', 'elftools')) for m in sys.modules))"],
                 cwd=Path(__file__).resolve().parent.parent, timeout=60)
    assert r.stdout.strip() == b"False"
