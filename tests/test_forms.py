"""Instruction forms on this CPU and in the engines that stand in for it (issue 35 items 2, 3).

Real gcc builds the native harness, the real CPU runs it, the real Unicorn and angr run the
same bytes; what they disagree on is found, and a candidate that relies on such a form cannot
get evidence from the emulator.
"""

from __future__ import annotations

import pytest

from sgcc import proc
from sgcc.asm.obj import read_object
from sgcc.verify.function import forms
from sgcc.verify.static import controlflow

ARITH = """
long mix(long a, long b, unsigned c) { return ((a * 7) ^ (b >> 3)) + (long)(c % 13u) - (a < b); }
"""


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path, monkeypatch):
    # The verdicts are cached per machine: measure them here.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _obj(tmp, text, name="f", c=True):
    src = tmp / (name + (".c" if c else ".s"))
    src.write_text(text)
    out = tmp / (name + ".o")
    proc.run(["gcc", "-O2", "-c", str(src), "-o", str(out)], check=True)
    return out


def test_gcc_s_integer_forms_run_alike_on_the_cpu_and_in_both_engines(tmp_path):
    found = forms.forms_of(read_object(_obj(tmp_path, ARITH)))
    assert {"imul r64, r64, imm", "lea r64, m64", "sar r64, imm"} & set(found), sorted(found)
    assert forms.emulator_differs(found) == {}
    assert forms.lifter_differs({k: found[k] for k in sorted(found)[:6]}) == {}


def test_a_difference_between_the_emulator_and_the_cpu_is_found():
    # addps of two NaNs: this CPU keeps the first operand's payload, Unicorn (QEMU 5's
    # softfloat) the second's -- a tell a candidate could compute itself.
    import capstone

    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.detail = True
    addps = forms.form_of(next(md.disasm(bytes.fromhex("0f58c1"), 0)))
    add = forms.form_of(next(md.disasm(bytes.fromhex("4801c8"), 0)))
    assert addps is not None and add is not None
    differs = forms.emulator_differs({addps.key: addps, add.key: add})
    assert add.key not in differs
    assert "xmm0" in differs.get(addps.key, ""), differs


def test_the_manual_s_undefined_flags_win_over_capstone_s(tmp_path):
    # capstone calls imul's SF defined; the manual does not, and the emulator and this CPU
    # disagree on it: a candidate that branches on it is refused before it runs (rule flags).
    base = _obj(tmp_path, "long f(long a, long b) { return a * b; }\n", "base")
    tell = _obj(tmp_path, """
    .text
    .globl f
    .type f, @function
f:
    movq %rdi, %rax
    imulq %rsi, %rax
    js 1f
    ret
1:  addq $0, %rax
    ret
""", "tell", c=False)
    verdict = controlflow.verdict(tell, base, frozenset({"f"}))
    assert not verdict.ok and verdict.reason.startswith("flags: "), verdict.reason
    assert "imul" in verdict.reason or "js" in verdict.reason
