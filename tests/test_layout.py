"""Layout candidates: gcc's own units with other loop and entry alignment.

An edit may only move code: every candidate passes the text screen, assembles, and decodes
to exactly gcc's instructions (padding aside); loop heads are the targets of backward
jumps; each unit gets a few alternatives, not dozens.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sgcc import proc
from sgcc.asm.lex import split_lines
from sgcc.asm.units import AsmFile
from sgcc.candidates.layout import EDITS, LayoutGenerator, edit, loop_heads
from sgcc.verify.static import clobbers, isa, objcheck, textscreen
from tests.conftest import EXAMPLES

CORPUS = Path(__file__).parent / "asm_corpus"
SOURCES = sorted(CORPUS.glob("*.c")) + sorted((EXAMPLES / "programs").glob("*/*.c"))


def _instructions(obj: Path) -> dict[str, list[str]]:
    """Per function, its instructions without alignment padding (nops)."""
    import capstone

    o = clobbers.ClobberAnalysis(obj)
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    out = {}
    for name, ranges in o.functions.items():
        seq = []
        for shndx, start, size in ranges:
            for insn in md.disasm(o.code[shndx][start:start + size], start):
                if insn.mnemonic.startswith("nop") or (insn.mnemonic, insn.op_str) == ("xchg", "ax, ax") \
                        or insn.mnemonic == "data16" or "nop" in insn.mnemonic:
                    continue
                seq.append(insn.mnemonic)
        out[name] = seq
    return out


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.stem)
def test_edits_only_move_code(tmp_path, src):
    base_s, base_o = tmp_path / "base.s", tmp_path / "base.o"
    proc.run(["gcc", "-O3", "-S", "-o", str(base_s), str(src)], check=True)
    proc.run(["gcc", "-c", str(base_s), "-o", str(base_o)], check=True)
    asm = AsmFile.parse(base_s.read_text())
    want = _instructions(base_o)
    target = isa.target_from_flags("gcc", [])
    gen = LayoutGenerator()
    for unit in asm.units:
        cands = gen.propose(None, unit, 0, [])
        assert len(cands) <= len(EDITS)
        assert len({c.text for c in cands}) == len(cands)
        assert gen.propose(None, unit, 1, []) == []
        for cand in cands:
            if "#APP" not in unit.text:  # inline asm is refused by the screen, edited or not
                verdict = textscreen.screen_text(cand.text, may_define=frozenset(u.name for u in asm.units))
                assert verdict.ok, (unit.name, cand.origin, verdict.reason)
            s, o = tmp_path / "cand.s", tmp_path / "cand.o"
            s.write_text(asm.join({unit.name: cand.text}))
            r = proc.run(["gcc", "-c", str(s), "-o", str(o)])
            assert r.ok, (unit.name, cand.origin, r.stderr.decode()[-400:])
            assert _instructions(o) == want, (unit.name, cand.origin)
            if "#APP" not in unit.text:
                assert objcheck.check_object(o, base_o, isa=target).ok


def test_loop_heads_are_backward_jump_targets():
    text = (
        "\t.text\n\t.p2align 4\n\t.globl\tf\n\t.type\tf, @function\nf:\n"
        "\txorl\t%eax, %eax\n\ttestl\t%edi, %edi\n\tjle\t.L1\n"       # forward: not a loop
        "\t.p2align 4,,10\n\t.p2align 3\n.L3:\n\taddl\t%edi, %eax\n\tsubl\t$1, %edi\n\tjne\t.L3\n"
        ".L1:\n\tret\n\t.size\tf, .-f\n"
    )
    lines = split_lines(text)
    start, heads = loop_heads(lines, "f")
    assert lines[start] == "f:\n" and [lines[h] for h in heads] == [".L3:\n"]
    assert ".p2align 5\n.L3:" in edit(text, "f", "loops32")
    assert "\t.p2align 4\n.L3:" in edit(text, "f", "loops16")
    packed = edit(text, "f", "loops-packed")
    assert "p2align 3" not in packed and packed.count(".p2align") == 1
    entry = edit(text, "f", "entry64")
    assert entry.startswith("\t.text\n\t.p2align 6\n\t.globl\tf\n") and entry.count(".p2align 4,,10") == 1
    no_loop = text.replace("\tjne\t.L3\n", "\tret\n")
    assert edit(no_loop, "f", "loops32") is None and edit(no_loop, "f", "entry64") is not None
