"""The information-flow rule on shapes clang's honest code has and gcc's does not (issue 38).

clang writes the low byte of a register it never cleared (``setl %cl; orb %al, %cl``),
reserves a stack slot with ``push %rax`` and hands it to scanf, keeps a value in %rbp and
reloads its spill whole, inlines a callee of gcc's (``posix_memalign`` called from ``main``
with its own frame's address, where gcc's ``main`` calls ``xmalloc``). Each honest shape below
was refused by the rule before these refinements and passes now; each hostile neighbour
(reading the bits the function did not write, a slot that holds the caller's register, a
call gcc's function does not reach) is still refused. Every candidate first passes the
trusted rules (the control), as in tests/test_infoflow.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.verify.static import controlflow
from tests.test_infoflow import COUNT, _rules
from tests.test_infoflow import program as program

# --------------------------------------------------------------------------- the low bits it wrote


def test_its_own_low_byte_over_the_caller_s_register_passes(program):
    """clang's `setl %cl; setg %al; orb %al, %cl; movzbl %cl`: only the bytes it wrote are read."""
    body = ("\tcmpl\t$2, %esi\n\tsetl\t%cl\n\tsetg\t%al\n\torb\t%al, %cl\n\tmovzbl\t%cl, %edx\n"
            "\tshlq\t%cl, %rdx\n" + COUNT)
    assert _rules(program, body, "low_byte") == set()


@pytest.mark.parametrize("name,read", [
    ("ecx", "\tmovl\t%ecx, %edx\n"),  # 32 bits: 24 of them the caller's
    ("cx", "\tmovzwl\t%cx, %edx\n"),  # 16 bits: 8 of them the caller's
    ("ch", "\tmovzbl\t%ch, %edx\n"),  # the high byte: the caller's
    ("rcx_flags", "\ttestq\t%rcx, %rcx\n\tje\t.Lh6\n"),
])
def test_bits_it_did_not_write_are_still_the_caller_s(program, name, read):
    body = "\tcmpl\t$2, %esi\n\tsetl\t%cl\n" + read + COUNT
    assert "entry-register" in _rules(program, body, f"low_{name}")


def test_its_own_low_byte_over_a_stack_address_passes_and_the_rest_is_refused(program):
    """After `leaq 8(%rsp), %rdx` (scanf's &n) and `setl %dl`, %dl is its own; %edx still
    holds 24 bits of a stack address."""
    honest = "\tleaq\t-8(%rsp), %rdx\n\tcmpl\t$2, %esi\n\tsetl\t%dl\n\tmovzbl\t%dl, %r8d\n" + COUNT
    assert _rules(program, honest, "low_over_stack") == set()
    hostile = "\tleaq\t-8(%rsp), %rdx\n\tcmpl\t$2, %esi\n\tsetl\t%dl\n\tmovl\t%edx, %r8d\n" + COUNT
    assert "stack-address" in _rules(program, hostile, "low_over_stack_rest")


# --------------------------------------------------------------------------- reserved slots


def test_a_reserved_slot_initialised_by_a_constant_passes(program):
    """clang's `push %rax` reserves 8 bytes (what %rax held goes there); `movq $0, (%rsp)`
    replaces them, so reading part of the slot reads its own constant."""
    body = "\tpushq\t%rax\n\tmovq\t$0, (%rsp)\n\tmovl\t4(%rsp), %edx\n\tpopq\t%rcx\n" + COUNT
    assert _rules(program, body, "reserved_init") == set()


@pytest.mark.parametrize("name,body", [
    ("junk", "\tpushq\t%rax\n\tmovl\t4(%rsp), %edx\n\tpopq\t%rcx\n"),  # what the caller left in %rax
    ("half", "\tpushq\t%rax\n\tmovl\t$0, (%rsp)\n\tmovl\t4(%rsp), %edx\n\tpopq\t%rcx\n"),  # the other half
    ("rbx", "\tpushq\t%rbx\n\tmovl\t$0, (%rsp)\n\tmovl\t4(%rsp), %edx\n\tpopq\t%rbx\n"),  # the caller's %rbx
])
def test_a_slot_still_holding_a_register_s_bytes_is_refused(program, name, body):
    assert "stack-slot" in _rules(program, body + COUNT, f"reserved_{name}")


def _replaced_rules(d: Path, function: str, body: str, name: str) -> set[str]:
    """The rules gcc's ``function`` (in ``d``'s base.s) replaced by ``body`` breaks as
    untrusted, after the control: the trusted rules let it through."""
    text = (d / "base.s").read_text()
    pattern = re.compile(rf"(^{function}:\n)(.*?)(^\t\.size\t{function}, )", re.S | re.M)
    (d / f"{name}.s").write_text(pattern.sub(lambda m: m.group(1) + body + m.group(3), text, count=1))
    proc.run(["gcc", "-c", f"{name}.s", "-o", f"{name}.o"], cwd=d, check=True)
    obj = d / f"{name}.o"
    assert controlflow.check(obj, d / "base.o") == [], "control: the trusted rules refuse it already"
    return {p.rule for p in controlflow.check(obj, d / "base.o", frozenset({function}))}


def _main_rules(program: Path, body: str, name: str) -> set[str]:
    """popcount's ``main`` replaced (gcc's passes stack addresses to scanf, so a candidate may too)."""
    return _replaced_rules(program, "main", body, name)


SCANF = "\tleaq\t.LC0(%rip), %rdi\n\txorl\t%eax, %eax\n\tcall\t__isoc99_scanf@PLT\n"


def test_a_reserved_slot_scanf_writes_passes(program):
    """clang's collatz main: `push %rax`, scanf(&slot), then the value read back."""
    body = ("\tpushq\t%rax\n\tmovq\t%rsp, %rsi\n\tleaq\t4(%rsp), %rdx\n" + SCANF +
            "\tmovq\t(%rsp), %rcx\n\tmovl\t4(%rsp), %eax\n\taddl\t%ecx, %eax\n\tpopq\t%rcx\n\tret\n")
    assert _main_rules(program, body, "reserved_scanf") == set()


def test_a_callee_saved_register_s_slot_given_to_scanf_is_still_refused(program):
    """Only a caller-saved register's leftovers count as the callee's result: a slot that
    holds the caller's %rbx stays its (a call that does not write it would hand it back)."""
    body = ("\tpushq\t%rbx\n\tmovq\t%rsp, %rsi\n\tleaq\t4(%rsp), %rdx\n" + SCANF +
            "\tmovl\t4(%rsp), %eax\n\tpopq\t%rbx\n\tret\n")
    assert "stack-slot" in _main_rules(program, body, "cs_scanf")


def test_its_frame_address_after_a_call_is_junk(program):
    """scanf's second &n is still in %rdx after the call (or the callee's leftovers): it may go
    on to malloc (which ignores it), never be read as data or an address."""
    honest = ("\tsubq\t$24, %rsp\n\tleaq\t8(%rsp), %rsi\n\tleaq\t12(%rsp), %rdx\n" + SCANF +
              "\tmovl\t$64, %edi\n\tcall\tmalloc@PLT\n\taddq\t$24, %rsp\n\tret\n")
    assert _main_rules(program, honest, "rdx_after_call") == set()
    hostile = ("\tsubq\t$24, %rsp\n\tleaq\t8(%rsp), %rsi\n\tleaq\t12(%rsp), %rdx\n" + SCANF +
               "\tmovq\t(%rdx), %rax\n\taddq\t$24, %rsp\n\tret\n")
    assert "entry-register" in _main_rules(program, hostile, "rdx_after_call_used")


# --------------------------------------------------------------------------- %rbp reloads


def test_a_spill_of_a_caller_s_register_reloaded_into_rbp_is_refused(program):
    body = ("\tpushq\t%rbp\n\tmovq\t%r8, -16(%rsp)\n\tmovq\t-16(%rsp), %rbp\n\tmovq\t%rbp, %rdi\n"
            "\tpopq\t%rbp\n")
    assert _rules(program, body + COUNT, "rbp_junk_spill") & {"stack-pointer", "entry-register"}


# --------------------------------------------------------------------------- calls: gcc's call graph

REACH = r"""#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) void *grab(long n)
{ void *p = 0; if (posix_memalign(&p, 64, n)) return 0; return p; }
__attribute__((noinline)) long peek(void) { return getenv("SGCC_T") != 0; }
int main(void) { long *a = grab(64); a[0] = 1; printf("%ld\n", a[0] + peek()); free(a); return 0; }
"""


@pytest.fixture(scope="module")
def reach(tmp_path_factory):
    d = tmp_path_factory.mktemp("reach")
    (d / "r.c").write_text(REACH)
    proc.run(["gcc", "-O3", "-S", "r.c", "-o", "base.s"], cwd=d, check=True)
    proc.run(["gcc", "-c", "base.s", "-o", "base.o"], cwd=d, check=True)
    return d


MEMALIGN = ("\tsubq\t$24, %rsp\n\tmovq\t$0, 8(%rsp)\n\tleaq\t8(%rsp), %rdi\n\tmovl\t$64, %esi\n"
            "\tmovl\t$64, %edx\n\tcall\tposix_memalign@PLT\n\tmovq\t8(%rsp), %rax\n\taddq\t$24, %rsp\n\tret\n")


def test_main_may_call_what_gcc_s_main_reaches_through_its_callees(reach):
    """gcc's main calls grab, which calls posix_memalign with its own frame's address: a
    candidate main that inlined grab does the same."""
    assert _replaced_rules(reach, "main", MEMALIGN, "inlined_grab") == set()


def test_a_call_gcc_s_function_does_not_reach_is_still_refused(reach):
    """grab reaches posix_memalign, not getenv (peek's): a candidate grab that
    calls getenv is refused, though another function of the unit calls it."""
    body = "\tsubq\t$8, %rsp\n\txorl\t%edi, %edi\n\tcall\tgetenv@PLT\n\taddq\t$8, %rsp\n\tret\n"
    assert "call" in _replaced_rules(reach, "grab", body, "grab_getenv")


# --------------------------------------------------------------------------- scalars in vector registers


@pytest.mark.parametrize("name,body", [
    # legacy: cvtsi2sd keeps %xmm0's upper lanes (the caller's), writes the low one
    ("legacy", "\tcvtsi2sd\t%esi, %xmm0\n\tmulsd\t%xmm0, %xmm0\n\tcvttsd2si\t%xmm0, %edx\n"),
    # VEX: clang takes the upper lanes of a register it never wrote (%xmm15)
    ("vex", "\tvcvtsi2sd\t%esi, %xmm15, %xmm0\n\tvaddsd\t%xmm0, %xmm0, %xmm1\n\tvmovq\t%xmm1, %rdx\n"),
    ("copy_store", "\tcvtsi2sd\t%esi, %xmm0\n\tmovapd\t%xmm0, %xmm1\n\tmovsd\t%xmm1, -8(%rsp)\n"),
])
def test_a_scalar_over_the_caller_s_lanes_passes(program, name, body):
    assert _rules(program, body + COUNT, f"scalar_{name}") == set()


@pytest.mark.parametrize("name,body", [
    ("extract_upper", "\tvcvtsi2sd\t%esi, %xmm15, %xmm0\n\tvpextrq\t$1, %xmm0, %rdx\n"),
    ("unpack_high", "\tvcvtsi2sd\t%esi, %xmm15, %xmm0\n\tvunpckhpd\t%xmm0, %xmm0, %xmm1\n\tvmovq\t%xmm1, %rdx\n"),
    ("packed", "\tcvtsi2sd\t%esi, %xmm0\n\tmovapd\t%xmm0, %xmm1\n\taddpd\t%xmm1, %xmm1\n\tmovq\t%xmm1, %rdx\n"),
    ("unpack_junk_low", "\tcvtsi2sd\t%esi, %xmm0\n\tunpcklpd\t%xmm2, %xmm0\n\tmovhpd\t%xmm0, -8(%rsp)\n"),
    ("scalar_of_junk", "\tmulsd\t%xmm3, %xmm3\n\tcvttsd2si\t%xmm3, %edx\n"),
])
def test_the_caller_s_lanes_stay_unread(program, name, body):
    assert "entry-register" in _rules(program, body + COUNT, f"lanes_{name}")


def test_a_single_precision_scalar_over_the_caller_s_lanes_is_not_its_own(program):
    """cvtsi2ss writes 32 bits: the 32 above it in the low lane are still the caller's."""
    body = "\tcvtsi2ss\t%esi, %xmm0\n\tmovsd\t%xmm0, -8(%rsp)\n"
    assert "entry-register" in _rules(program, body + COUNT, "lanes_single")


# --------------------------------------------------------------------------- vector stores


def test_a_vector_spill_is_a_write(program):
    """capstone reports `vmovsd %xmm0, -8(%rsp)` as reading its memory operand: the model took
    clang's spill for nothing written and refused reading it back."""
    body = ("\tvpxor\t%xmm0, %xmm0, %xmm0\n\tvmovsd\t%xmm0, -8(%rsp)\n\tvmovsd\t-8(%rsp), %xmm1\n"
            "\tvmovq\t%xmm1, %rdx\n")
    assert _rules(program, body + COUNT, "vector_spill") == set()


@pytest.mark.parametrize("store", ["vmovq\t%xmm0, (%rsp)", "vmovsd\t%xmm0, (%rsp)", "vmovlps\t%xmm0, (%rsp)",
                                   "movq\t%xmm0, (%rsp)", "vpextrq\t$0, %xmm0, (%rsp)"])
def test_a_vector_store_over_a_saved_register_is_seen(program, store):
    """The same stores over the slot that holds the caller's %rbx: popped back, %rbx is no
    longer the caller's (the model kept the slot as saved, and let the return through)."""
    body = f"\tpushq\t%rbx\n\tvpxor\t%xmm0, %xmm0, %xmm0\n\t{store}\n\tpopq\t%rbx\n"
    assert "callee-saved" in _rules(program, body + COUNT, "vstore_" + store.split()[0])
