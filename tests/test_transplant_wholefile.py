"""Whole-file candidates with writable data: the program's variables stay gcc's.

Attacks first: a whole-file text that adds a writable global or a static, changes an
initializer, makes one name alias another's storage, retargets a pointer in data, reorders
or grows an object -- each refused by the object check (sgcc.verify.static.writable) even though the
text screen now lets a whole file define writable sections. Then the generator's side: a
variant whose data is not gcc's is not offered, and one whose data is gets gcc's data in
place of its own, passes every verify stage, and behaves like gcc's program; end to end,
whole-file PGO is offered and built for a program with .bss.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sgcc import proc
from sgcc.candidates.pgo import PgoGenerator
from sgcc.candidates.transplant.side import Side
from sgcc.candidates.transplant.wholefile import whole_file_text
from sgcc.engine import Request, optimize
from sgcc.verify.static import controlflow, isa, objcheck, textscreen
from tests.conftest import EXAMPLES, TIMING_SAMPLE_SECONDS

PROGRAM = r"""#include <stdio.h>
int counter = 5;
long zeroes[128];
static int hidden_state;
static int twice(int x) { return 2 * x; }
static int thrice(int x) { return 3 * x; }
int (*table[])(int) = {twice, thrice};
const char *names[] = {"zero", "one"};
__attribute__((noinline)) int step(int i) {
    hidden_state += i;
    zeroes[i & 127] += hidden_state;
    return table[i & 1](counter++);
}
int main(void) {
    int s = 0;
    for (int i = 0; i < 20; i++) s += step(i);
    printf("%d %d %ld %s\n", s, hidden_state, zeroes[19], names[1]);
    return 0;
}
"""


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    d = tmp_path_factory.mktemp("whole")
    (d / "p.c").write_text(PROGRAM)
    proc.run(["gcc", "-O3", "-S", "p.c", "-o", "base.s"], cwd=d, check=True)
    proc.run(["gcc", "-c", "base.s", "-o", "base.o"], cwd=d, check=True)
    return d


def _verdict(base: Path, text: str, name: str):
    """Every stage the engine runs on a whole-file candidate before linking."""
    v = textscreen.screen_text(text, may_define=frozenset({"step", "main", "twice", "thrice"}), writable_data=True)
    if not v.ok:
        return v
    s, o = base / f"{name}.s", base / f"{name}.o"
    s.write_text(text)
    r = proc.run(["gcc", "-c", str(s), "-o", str(o)], timeout=60)
    assert r.ok, r.stderr.decode()
    v = objcheck.check_object(o, base / "base.o", isa=isa.target_from_flags("gcc", ["-O3"]))
    if not v.ok:
        return v
    return controlflow.verdict(o, base / "base.o")


def _edit(base: Path, old: str, new: str) -> str:
    text = (base / "base.s").read_text()
    assert old in text, old
    return text.replace(old, new, 1)


def test_gcc_own_whole_file_passes(base):
    assert _verdict(base, (base / "base.s").read_text(), "same").ok


def test_adding_a_writable_global_is_refused(base):
    text = (base / "base.s").read_text() + "\t.globl\tevil\n\t.data\n\t.align 8\nevil:\n\t.quad\t0\n"
    v = _verdict(base, text, "add_global")
    assert not v.ok and "gcc's" in v.reason, v


def test_adding_a_static_in_common_storage_is_refused(base):
    text = (base / "base.s").read_text() + "\t.local\tevil\n\t.comm\tevil,8,8\n"
    v = _verdict(base, text, "add_static")
    assert not v.ok and ("writable" in v.reason or "common" in v.reason), v


def test_changing_an_initializer_is_refused(base):
    v = _verdict(base, _edit(base, "counter:\n\t.long\t5\n", "counter:\n\t.long\t6\n"), "init")
    assert not v.ok and "initial values" in v.reason, v


def test_aliasing_a_variable_to_another_one_storage_is_refused(base):
    text = (base / "base.s").read_text()
    assert "\t.local\thidden_state\n\t.comm\thidden_state,4,4\n" in text
    text = text.replace("\t.local\thidden_state\n\t.comm\thidden_state,4,4\n", "\t.set\thidden_state, counter\n")
    v = _verdict(base, text, "alias")
    assert not v.ok, v


def test_retargeting_a_function_pointer_in_data_is_refused(base):
    v = _verdict(base, _edit(base, "\t.quad\ttwice\n\t.quad\tthrice\n", "\t.quad\tthrice\n\t.quad\tthrice\n"),
                 "retarget")
    assert not v.ok and "points at other things" in v.reason, v


def test_growing_a_bss_object_is_refused(base):
    text = _edit(base, "\t.size\tzeroes, 1024\nzeroes:\n\t.zero\t1024\n", "\t.size\tzeroes, 2048\nzeroes:\n\t.zero\t2048\n")
    v = _verdict(base, text, "grow")
    assert not v.ok and "writable section .bss" in v.reason, v


def test_writable_sections_still_refused_in_function_candidates_and_tls_everywhere():
    unit = "f:\n\tret\n\t.data\nx:\n\t.long 1\n"
    assert not textscreen.screen_text(unit).ok
    assert textscreen.screen_text(unit, writable_data=True).ok
    for bad in ('\t.section\t.tdata,"awT",@progbits\n', '\t.section\t.data,"awx",@progbits\n',
                '\t.section\t.data.evil,"aw",@note\n'):
        assert not textscreen.screen_text(bad, writable_data=True).ok, bad
    # .bss zeroes are storage, not assembler output; .data zeroes still count.
    big = "\t.bss\nbuf:\n\t.zero\t100000000\n"
    assert textscreen.screen_text(big, writable_data=True).ok
    assert not textscreen.screen_text(big.replace(".bss", ".data"), writable_data=True).ok


# -- the generator's side -------------------------------------------------------------------


def _sides(base: Path, variant_text: str) -> tuple[Side, Side]:
    (base / "var.s").write_text(variant_text)
    proc.run(["gcc", "-c", str(base / "var.s"), "-o", str(base / "var.o")], check=True)
    return Side((base / "base.s").read_text(), obj=base / "base.o"), Side(variant_text, obj=base / "var.o")


def _variant(base: Path, flags: list[str]) -> str:
    proc.run(["gcc", "-O3", *flags, "-S", "p.c", "-o", "var0.s"], cwd=base, check=True)
    return (base / "var0.s").read_text()


def test_a_variant_with_other_data_is_not_offered(base):
    var = _variant(base, ["-funroll-loops"])
    cases = {
        "defines evil": var + "\t.globl\tevil\n\t.data\nevil:\n\t.long\t1\n",
        "otherwise": var.replace("counter:\n\t.long\t5\n", "counter:\n\t.long\t7\n"),
        "something else": var.replace("\t.local\thidden_state\n\t.comm\thidden_state,4,4\n",
                                      "\t.section\t.rodata\nhidden_state:\n\t.long\t0\n"),
    }
    for expect, text in cases.items():
        assert text != var
        b, v = _sides(base, text)
        out, why = whole_file_text(b, v)
        assert out is None and expect in why, (expect, why)


def test_data_pointing_at_a_constant_the_variant_numbers_otherwise_is_not_offered(base):
    b = Side((base / "base.s").read_text(), obj=base / "base.o")
    label = next(lab for lab in b.data if lab.startswith(".LC") and '"one"' in (b.data_block(lab) or ""))
    var = _variant(base, ["-funroll-loops"])
    # The variant's constant of that number holds another string.
    assert f'{label}:\n\t.string\t"one"\n' in var
    b, v = _sides(base, var.replace(f'{label}:\n\t.string\t"one"\n', f'{label}:\n\t.string\t"two"\n'))
    out, why = whole_file_text(b, v)
    assert out is None and label in why, why


def test_ambiguous_numbered_statics_are_not_offered(tmp_path):
    src = tmp_path / "s.c"
    src.write_text("int f(int x){static int n; n += x; return n;}\n"
                   "int g(int x){static int n; n -= x; return n;}\n")
    proc.run(["gcc", "-O3", "-S", str(src), "-o", str(tmp_path / "base.s")], check=True)
    proc.run(["gcc", "-c", str(tmp_path / "base.s"), "-o", str(tmp_path / "base.o")], check=True)
    base_text = (tmp_path / "base.s").read_text()
    assert "n.0" in base_text and "n.1" in base_text
    b, v = _sides(tmp_path, _variant_of(src, tmp_path))
    out, why = whole_file_text(b, v)
    assert out is None and "ambiguous" in why, why


def _variant_of(src: Path, where: Path) -> str:
    proc.run(["gcc", "-O3", "-funroll-loops", "-S", str(src), "-o", str(where / "v.s")], check=True)
    return (where / "v.s").read_text()


@pytest.mark.parametrize("flags", [["-funroll-loops"], ["-O2"], ["-fno-tree-vectorize", "-Os"]])
def test_a_variant_with_gcc_data_gets_gcc_data_and_passes(base, flags):
    b, v = _sides(base, _variant(base, flags))
    text, why = whole_file_text(b, v)
    assert text is not None, why
    assert _verdict(base, text, "whole_" + flags[0].strip("-")).ok
    proc.run(["gcc", str(base / ("whole_" + flags[0].strip("-") + ".o")), "-o", str(base / "cand")], check=True)
    proc.run(["gcc", str(base / "base.o"), "-o", str(base / "ref")], check=True)
    assert proc.run([str(base / "cand")]).stdout == proc.run([str(base / "ref")]).stdout


@pytest.mark.slow
def test_whole_file_pgo_is_offered_for_a_program_with_writable_data(tmp_path):
    d = EXAMPLES / "programs" / "nqueens"
    tests = tmp_path / "tests"
    tests.mkdir()
    for f in (d / "tests").iterdir():
        if not f.name.startswith("large."):
            (tests / f.name).write_bytes(f.read_bytes())
    text = proc.run(["gcc", "-O3", "-S", "-o", "-", str(d / "nqueens.c")], check=True).stdout.decode()
    assert ".bss" in text or ".comm" in text or ".data" in text
    report = optimize(Request(source=d / "nqueens.c", flags=["-O3"], tests=tests, output=tmp_path / "out",
                              generators=[PgoGenerator()], timing_rounds=6, min_sample=TIMING_SAMPLE_SECONDS, seed=1,
                              test_timeout=5.0))
    whole = [c for c in report.candidates if c.function == "<translation-unit>" and c.meta.get("variant") == "pgo"]
    assert whole and whole[0].id != "-", [(c.function, c.stage, c.reason) for c in report.candidates]
    assert whole[0].stage in ("time", "accepted"), (whole[0].stage, whole[0].reason)
    ref = tmp_path / "ref"
    proc.run(["gcc", "-O3", str(d / "nqueens.c"), "-o", str(ref)], check=True)
    for t in sorted(tests.glob("*.in")):
        want = proc.run([str(ref)], stdin=t.read_bytes(), timeout=60)
        got = proc.run([str(tmp_path / "out")], stdin=t.read_bytes(), timeout=60)
        assert (got.stdout, got.returncode) == (want.stdout, want.returncode), t.name
