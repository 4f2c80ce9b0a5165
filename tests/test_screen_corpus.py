"""The verify stages never refuse gcc's own output.

Every flag set a variant generator compiles with (the variants' fixed lists, the flag
search's options, PGO with a real profile and combined with other variants, under both ISA
modes) over every program of the corpus (the example programs and tests/asm_corpus): each
unit the transplant offers and each whole file the generators would offer goes through the
text screen, the assembler, the object check (with the instruction-set check), the control-flow
proof and the clobber check, and none may be refused. A whole file is not offered where the
screen refuses it by design (inline asm, constructors, thread-local storage); the test
checks those are the only such reasons. Plus the two cases the issues named: kernel-entry
bytes inside a longer instruction (a vmulpd with ``0f 05`` among its bytes) and a memset
call gcc makes where its -O3 code did not.
"""

from __future__ import annotations

import re

import pytest

from sgcc import proc
from sgcc.candidates import variants
from sgcc.verify.static import controlflow, isa, objcheck
from tests import screen_corpus

#: Why a whole file may not be offered at all (the generator then offers nothing).
BY_DESIGN = ("#APP/#NO_APP markers (inline asm)", "runs code before or after main", "thread-local storage")


def _real_refusals(lines: list[str]) -> list[str]:
    return [ln for ln in lines if not ("<whole>" in ln and any(why in ln for why in BY_DESIGN))]


@pytest.mark.slow
@pytest.mark.parametrize("src", screen_corpus.programs(), ids=lambda p: p.stem)
def test_no_stage_refuses_gcc_output(tmp_path, src):
    # Each flag set compiled once: the portable ones checked for the portable target, the
    # native ones (where the host has AVX2; without it they are the portable ones) for the
    # host's. (One test per program and target before: the portable sets were compiled and
    # checked twice.)
    lines = screen_corpus.refusals(src, tmp_path, "avx2" in variants.host_cpu_flags())
    assert _real_refusals(lines) == [], "\n".join(lines)


def test_every_flag_set_is_checked_for_the_target_it_is_compiled_for():
    portable = screen_corpus.work(False)
    both = screen_corpus.work(True)
    assert all(item[-1] == "portable" for item in portable)
    assert both[:len(portable)] == portable
    native = [item for item in both if item[-1] == "native"]
    assert native and all(item[:-1] not in {p[:-1] for p in portable} for item in native)
    # Every native flag set and profile-guided combination is there, for one target or the other.
    every = screen_corpus.flag_sets(True) + screen_corpus.pgo_sets(True)
    every += screen_corpus.flag_sets(False) + screen_corpus.pgo_sets(False)
    assert {i[:-1] for i in both} == {(*i[:-1], tuple(i[-1])) for i in every}


def test_the_by_design_filter_keeps_real_refusals():
    """The filter must not hide a unit's refusal or another reason (so the test above can fail)."""
    lines = ["a.c unroll f: controlflow: call ...",
             "a.c pgo <whole>: objcheck: writable section .data holds other initial values than gcc's",
             "a.c pgo <whole>: textscreen: line 3: #APP/#NO_APP markers (inline asm) are not accepted"]
    assert _real_refusals(lines) == lines[:2]


def test_kernel_entry_bytes_inside_an_instruction_pass(tmp_path):
    """``vmulpd 0x140(%r15,%rcx,1),%zmm2,%zmm1`` encodes as 62 d1 ed 48 59 4c 0f 05: the raw
    pair 0f 05 (syscall) inside it is not an instruction, in a function that has no indirect jump."""
    def build(insn: str, name: str):
        s = tmp_path / f"{name}.s"
        s.write_text("\t.text\n\t.globl\tf\n\t.type\tf, @function\nf:\n\t.cfi_startproc\n"
                     f"\t{insn}\n\tret\n\t.cfi_endproc\n\t.size\tf, .-f\n"
                     '\t.section\t.note.GNU-stack,"",@progbits\n')
        o = tmp_path / f"{name}.o"
        proc.run(["gcc", "-c", str(s), "-o", str(o)], check=True)
        return o

    base = build("vaddpd\t%zmm2, %zmm2, %zmm1", "base")  # gcc's version: no such bytes
    cand = build("vmulpd\t0x140(%r15,%rcx,1), %zmm2, %zmm1", "cand")
    assert b"\x0f\x05" in cand.read_bytes() and b"\x0f\x05" not in base.read_bytes()
    if "avx512f" in variants.host_cpu_flags():
        v = objcheck.check_object(cand, base, isa=isa.native_target("gcc"))
        assert v.ok, v.reason
    assert controlflow.check(cand, base) == []


def test_a_memset_call_gcc_makes_where_its_baseline_did_not_passes(tmp_path):
    src = tmp_path / "z.c"
    src.write_text("void z(char *p, int n) { for (int i = 0; i < n; i++) p[i] = 0; }\n")
    base, cand = tmp_path / "base.o", tmp_path / "cand.o"
    proc.run(["gcc", "-O3", "-fno-tree-loop-distribute-patterns", "-c", str(src), "-o", str(base)], check=True)
    proc.run(["gcc", "-O3", "-c", str(src), "-o", str(cand)], check=True)
    assert b"memset" in cand.read_bytes() and b"memset" not in base.read_bytes()
    assert controlflow.check(cand, base) == []
    # Another library function gcc's code does not call is still refused.
    s = tmp_path / "evil.s"
    s.write_text("\t.text\n\t.globl\tz\n\t.type\tz, @function\nz:\n\t.cfi_startproc\n\tsubq\t$8, %rsp\n"
                 "\tcall\tsystem@PLT\n\taddq\t$8, %rsp\n\tret\n\t.cfi_endproc\n\t.size\tz, .-z\n"
                 '\t.section\t.note.GNU-stack,"",@progbits\n')
    proc.run(["gcc", "-c", str(s), "-o", str(tmp_path / "evil.o")], check=True)
    assert {p.rule for p in controlflow.check(tmp_path / "evil.o", base)} == {"call"}


SWITCH = r"""#include <stdio.h>
int work(int x) { return x * 3 + 1; }
int pick(int k, int x) {
    switch (k) {
    case 0: return x + 11; case 1: return x * 7; case 2: return x - 5;
    case 3: return x ^ 99; case 4: return x << 2; case 5: return x / 3; default: return 0;
    }
}
int main(void) { int x; if (scanf("%d", &x) != 1) return 1; printf("%d %d\n", work(x), pick(x & 7, x)); return 0; }
"""


@pytest.mark.parametrize("pie", [[], ["-fno-pie"]], ids=["pic", "non-pic"])
def test_layout_change_of_a_switch_passes_the_clobber_check(tmp_path, pie):
    """gcc torture pr48809's shape (the -fipa-ra jump-table case): only alignment moved in a
    function that jumps through a table. Its indirect jump stays inside, like gcc's."""
    from sgcc.verify.static import clobbers

    (tmp_path / "p.c").write_text(SWITCH)
    proc.run(["gcc", "-O3", *pie, "-S", "p.c", "-o", "base.s"], cwd=tmp_path, check=True)
    proc.run(["gcc", "-c", "base.s", "-o", "base.o"], cwd=tmp_path, check=True)
    text = (tmp_path / "base.s").read_text()
    assert "\t.p2align 4\n" in text
    (tmp_path / "lay.s").write_text(text.replace("\t.p2align 4\n", "\t.p2align 6\n"))
    proc.run(["gcc", "-c", "lay.s", "-o", "lay.o"], cwd=tmp_path, check=True)
    cand = clobbers.ClobberAnalysis(tmp_path / "lay.o")
    assert cand.direct("pick")[2] is False  # does not call out
    for fn in ("work", "pick", "main"):
        assert clobbers.extra_clobbers(tmp_path / "lay.o", tmp_path / "base.o", fn, replaced=frozenset([fn])) == []
    # A table entry moved into another function, or a jump through a loaded pointer, calls out.
    m = re.search(r"(\.L\d+):\n\t\.long\t(\.L\d+)-\1\n", text) or re.search(r"(\.L\d+):\n\t\.quad\t(\.L\d+)\n", text)
    assert m, "expected a jump table"
    entry = m.group(0)
    (tmp_path / "out.s").write_text(text.replace(entry, entry.replace(m.group(2), "work", 1), 1))
    proc.run(["gcc", "-c", "out.s", "-o", "out.o"], cwd=tmp_path, check=True)
    assert clobbers.ClobberAnalysis(tmp_path / "out.o").direct("pick")[2] is True
    body = "\tmovq\t(%rsi), %rax\n\tjmp\t*%rax\n"
    ptr = re.sub(r"(pick:\n(?:.*\n)*?\t\.cfi_startproc\n)", lambda mm: mm.group(1) + body, text, count=1)
    (tmp_path / "ptr.s").write_text(ptr)
    proc.run(["gcc", "-c", "ptr.s", "-o", "ptr.o"], cwd=tmp_path, check=True)
    assert clobbers.ClobberAnalysis(tmp_path / "ptr.o").direct("pick")[2] is True
