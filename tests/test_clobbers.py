"""The -fipa-ra guard: a candidate may not change caller-saved registers its callers here keep."""

from __future__ import annotations

from pathlib import Path

from sgcc import proc
from sgcc.asm.units import AsmFile
from sgcc.verify.static import clobbers

SOURCE = r"""
#include <stdio.h>
__attribute__((noinline)) long leaf(long x) { return x * 3 + 1; }
__attribute__((noinline)) long keeper(long a, long b) {
    long r = leaf(a);           /* b stays in a register gcc knows leaf leaves alone */
    return r + b * leaf(b);
}
int main(void) { printf("%ld\n", keeper(5, 7)); return 0; }
"""


def _objects(tmp_path: Path, leaf_text: str) -> tuple[Path, Path]:
    src = tmp_path / "p.c"
    src.write_text(SOURCE)
    base_s = tmp_path / "base.s"
    proc.run(["gcc", "-O3", "-S", str(src), "-o", str(base_s)], check=True)
    base_o = tmp_path / "base.o"
    proc.run(["gcc", "-c", str(base_s), "-o", str(base_o)], check=True)
    asm = AsmFile.parse(base_s.read_text())
    cand_s = tmp_path / "cand.s"
    cand_s.write_text(asm.join({"leaf": leaf_text}))
    cand_o = tmp_path / "cand.o"
    proc.run(["gcc", "-c", str(cand_s), "-o", str(cand_o)], check=True)
    return cand_o, base_o


LEAF = "\t.text\n\t.globl\tleaf\n\t.type\tleaf, @function\nleaf:\n{body}\tret\n\t.size\tleaf, .-leaf\n"


def test_gcc_version_is_accepted(tmp_path):
    src_unit = LEAF.format(body="\tleaq\t1(%rdi,%rdi,2), %rax\n")
    cand, base = _objects(tmp_path, src_unit)
    assert clobbers.extra_clobbers(cand, base, "leaf") == []


def test_extra_register_live_in_caller_is_refused(tmp_path):
    # Writes every caller-saved GPR: keeper keeps b (or a product) in one of them.
    body = "".join(f"\txorl\t%{r}, %{r}\n" for r in ("ecx", "edx", "esi", "r8d", "r9d", "r10d", "r11d"))
    cand, base = _objects(tmp_path, LEAF.format(body=body + "\tleaq\t1(%rdi,%rdi,2), %rax\n"))
    extra = clobbers.extra_clobbers(cand, base, "leaf")
    assert extra, "keeper relies on a register leaf leaves alone"


def test_clobber_sets_are_transitive(tmp_path):
    _, base = _objects(tmp_path, LEAF.format(body="\tleaq\t1(%rdi,%rdi,2), %rax\n"))
    obj = clobbers.ClobberAnalysis(base)
    assert obj.clobbers("leaf") <= obj.clobbers("keeper")
    assert obj.clobbers("main") == clobbers.ALL_CALLER_SAVED  # it calls printf
