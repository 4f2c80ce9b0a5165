"""sgcc.engine.explain on real gcc output: each kind of change made by hand to gcc's own assembly of
popcount's ``count_bits``, assembled by the real assembler, linked and run against the
example's tests (so every rewrite is a real, correct program), then classified from the
objects' machine code. One engine run checks the report names what the replay candidate did.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.asm.units import AsmFile
from sgcc.engine import explain
from tests.conftest import EXAMPLES

POPCOUNT = EXAMPLES / "programs" / "popcount"
SMALL_TESTS = ["t1", "t2", "t3", "t4"]


@pytest.fixture(scope="module")
def base_s() -> str:
    return proc.run(["gcc", "-O3", "-S", "-o", "-", str(POPCOUNT / "popcount.c")], check=True).stdout.decode()


def _unit(asm: str) -> str:
    return AsmFile.parse(asm).unit("count_bits").text


def _rewrite(base: str, old: str, new: str) -> str:
    """gcc's file with ``old`` replaced by ``new`` inside count_bits (``old`` must be there)."""
    unit = _unit(base)
    assert unit.count(old) == 1, f"gcc's count_bits no longer contains {old!r}:\n{unit}"
    return AsmFile.parse(base).join({"count_bits": unit.replace(old, new)})


def _build(tmp_path: Path, asm: str, name: str) -> Path:
    s, o, exe = tmp_path / f"{name}.s", tmp_path / f"{name}.o", tmp_path / name
    s.write_text(asm)
    proc.run(["gcc", "-c", str(s), "-o", str(o)], check=True)
    proc.run(["gcc", str(o), "-o", str(exe)], check=True)
    return o


def _correct(obj: Path) -> bool:
    exe = obj.with_suffix("")
    for t in SMALL_TESTS:
        r = proc.run([str(exe)], stdin=(POPCOUNT / "tests" / f"{t}.in").read_bytes(), timeout=30)
        if r.returncode != 0 or r.stdout != (POPCOUNT / "tests" / f"{t}.out").read_bytes():
            return False
    return True


def _pair(tmp_path: Path, base: str, variant: str) -> tuple[Path, Path]:
    a = _build(tmp_path, base, "base")
    b = _build(tmp_path, variant, "variant")
    assert _correct(a) and _correct(b), "the rewrite must still be a correct program"
    return a, b


def test_same_code_is_no_change(tmp_path, base_s):
    a, b = _pair(tmp_path, base_s, base_s)
    assert explain.classify_objects(a, b, ["count_bits", "main"]) == {"count_bits": [], "main": []}


def test_alignment_only_is_layout(tmp_path, base_s):
    variant = _rewrite(base_s, "\t.p2align 4,,10\n\t.p2align 3\n.L4:", "\t.p2align 6\n.L4:")
    a, b = _pair(tmp_path, base_s, variant)
    before, after = explain.function_code(a, "count_bits"), explain.function_code(b, "count_bits")
    assert before.raw != after.raw and after.padding > before.padding  # the bytes did change
    assert explain.classify(before, after) == ["layout"]
    # main's code moved nowhere: it is unchanged
    assert explain.classify_objects(a, b, ["main"]) == {"main": []}


def test_swapped_independent_instructions_are_scheduling(tmp_path, base_s):
    variant = _rewrite(base_s, "\tmovslq\t%esi, %rsi\n\txorl\t%edx, %edx\n",
                       "\txorl\t%edx, %edx\n\tmovslq\t%esi, %rsi\n")
    a, b = _pair(tmp_path, base_s, variant)
    assert explain.classify_objects(a, b, ["count_bits"]) == {"count_bits": ["scheduling"]}


def test_consistent_renaming_is_register_allocation(tmp_path, base_s):
    unit = _unit(base_s)
    # r10 is free here: main keeps nothing in it across its calls of count_bits (-fipa-ra)
    assert "%rcx" in unit and "%ecx" in unit and "%r10" not in unit
    variant = AsmFile.parse(base_s).join({"count_bits": unit.replace("%rcx", "%r10").replace("%ecx", "%r10d")})
    a, b = _pair(tmp_path, base_s, variant)
    before, after = explain.function_code(a, "count_bits"), explain.function_code(b, "count_bits")
    assert explain.classify(before, after) == ["register allocation"]
    assert explain.renaming(before, after) == {"c": "r10"}


def test_renaming_and_reordering_together(tmp_path, base_s):
    unit = _unit(base_s).replace("\tmovslq\t%esi, %rsi\n\txorl\t%edx, %edx\n",
                                 "\txorl\t%edx, %edx\n\tmovslq\t%esi, %rsi\n")
    variant = AsmFile.parse(base_s).join({"count_bits": unit.replace("%rcx", "%r11").replace("%ecx", "%r11d")})
    a, b = _pair(tmp_path, base_s, variant)
    assert explain.classify_objects(a, b, ["count_bits"])["count_bits"] == ["scheduling", "register allocation"]


def test_rewritten_loop_is_control_flow(tmp_path, base_s):
    # gcc's bottom-tested inner loop (test; je out; loop: ...; jne loop) becomes a top-tested
    # one (loop: test; je out; ...; jmp loop): the same operations, other branches.
    old = ("\tmovq\t(%rdi), %rax\n\ttestq\t%rax, %rax\n\tje\t.L3\n\t.p2align 4,,10\n\t.p2align 3\n.L4:\n"
           "\tmovq\t%rax, %rcx\n\tandl\t$1, %ecx\n\taddq\t%rcx, %rdx\n\tshrq\t%rax\n\tjne\t.L4\n")
    new = ("\tmovq\t(%rdi), %rax\n.L4:\n\ttestq\t%rax, %rax\n\tje\t.L3\n"
           "\tmovq\t%rax, %rcx\n\tandl\t$1, %ecx\n\taddq\t%rcx, %rdx\n\tshrq\t%rax\n\tjmp\t.L4\n")
    variant = _rewrite(base_s, old, new)
    a, b = _pair(tmp_path, base_s, variant)
    assert explain.classify_objects(a, b, ["count_bits"]) == {"count_bits": ["control flow"]}


def test_swar_popcount_is_instruction_selection(tmp_path, base_s):
    swar = (POPCOUNT / "candidates" / "count_bits.s").read_text()
    variant = AsmFile.parse(base_s).join({"count_bits": swar})
    a, b = _pair(tmp_path, base_s, variant)
    changes = explain.classify_objects(a, b, ["count_bits", "main"])
    # The bit loop is gone (one loop instead of two) and the operations are new.
    assert changes == {"count_bits": ["control flow", "instruction selection"], "main": []}


def test_text_and_bytes_inputs(base_s):
    swar = AsmFile.parse(base_s).join({"count_bits": (POPCOUNT / "candidates" / "count_bits.s").read_text()})
    assert "instruction selection" in explain.classify(base_s, swar, "count_bits")
    raw = explain.code_from_asm(base_s, "count_bits").raw
    assert explain.classify(raw, raw) == []
    assert explain.classify(raw, raw + b"\x0f\x1f\x00") == ["layout"]  # a trailing 3-byte nop
    assert explain.classify(raw, b"\x31\xc0" + raw) == ["instruction selection"]  # xorl %eax,%eax added


def test_unreadable_is_unknown_never_an_error(tmp_path, base_s):
    a = _build(tmp_path, base_s, "base")
    junk = tmp_path / "junk.o"
    junk.write_bytes(b"not an object")
    assert explain.classify_objects(a, a, ["no_such_function"]) == {"no_such_function": ["unknown"]}
    assert explain.classify_objects(a, junk, ["count_bits"]) == {"count_bits": ["unknown"]}


@pytest.mark.slow
def test_cli_report_names_the_change(tmp_path, sgcc_exe):
    out, rep = tmp_path / "prog", tmp_path / "report.json"
    r = subprocess.run([sgcc_exe, "optimize", str(POPCOUNT / "popcount.c"), "-O3", "--tests", str(POPCOUNT / "tests"),
                        "-o", str(out), "--candidates", str(POPCOUNT / "candidates"), "--report", str(rep),
                        "--generators", "replay", "--timing-rounds", "8", "--seed", "1", "--no-cache"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    data = json.loads(rep.read_text())
    accepted = [c for c in data["candidates"] if c["stage"] == "accepted"]
    # SWAR against a bit loop is several times faster: accepted, confirmed and shipped
    assert len(accepted) == 1 and data["shipped"] == [accepted[0]["id"]], r.stderr
    assert accepted[0]["changes"] == ["control flow", "instruction selection"]
    assert data["final"]["changes"] == {"count_bits": ["control flow", "instruction selection"]}
    assert data["change_summary"]["instruction selection"] == 1 and data["change_summary"]["layout"] == 0
    assert f"changed by {accepted[0]['id']} (replay): count_bits: control flow, instruction selection" in r.stderr


def test_whole_file_variant_lists_only_changed_functions(tmp_path):
    # What a whole-unit candidate (another compilation of the file) is explained with.
    src = POPCOUNT / "popcount.c"
    base, aligned = tmp_path / "base.o", tmp_path / "aligned.o"
    proc.run(["gcc", "-O3", "-c", str(src), "-o", str(base)], check=True)
    proc.run(["gcc", "-O3", "-falign-loops=32", "-c", str(src), "-o", str(aligned)], check=True)
    changes = explain.explain_objects(base, aligned)
    assert changes.get("count_bits") == ["layout"]  # its loops moved to 32-byte boundaries
    assert all(cats == ["layout"] for cats in changes.values())
    assert explain.explain_objects(base, base) == {}
