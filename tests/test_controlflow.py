"""The control-flow proof (sgcc.verify.static.controlflow): hostile candidates refused by the rule
they break, and gcc's own code never refused, over the corpus and every flag set.

Candidates are written the way an adversary who knows sgcc would write them: gcc's own
assembly for the program, with one function's body replaced. They are assembled by the real
assembler and the objects checked, exactly as the engine does.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.verify.static import controlflow

CORPUS = Path(__file__).parent / "asm_corpus"

FLAG_SETS = [
    ["-O2"], ["-O3"], ["-O3", "-fPIC"], ["-O3", "-fno-pie"], ["-O2", "-fno-omit-frame-pointer"],
    ["-O3", "-march=native"], ["-Ofast", "-funroll-loops"], ["-O3", "-fno-inline"],
    ["-O2", "-mavx2", "-fstack-protector-all"], ["-O3", "-g"], ["-O2", "-fno-if-conversion", "-fno-if-conversion2"],
    ["-O2", "-falign-functions=32", "-falign-loops=32"], ["-O3", "-fschedule-insns", "-fsched-pressure"],
]

PROGRAM = r"""#include <stdio.h>
#include <stdlib.h>
int work(int x) { return x * 3 + 1; }
int pick(int k, int x) {
    switch (k) {
    case 0: return x + 11;
    case 1: return x * 7;
    case 2: return x - 5;
    case 3: return x ^ 99;
    case 4: return x << 2;
    case 5: return x / 3;
    default: return 0;
    }
}
int main(void) {
    int x;
    if (scanf("%d", &x) != 1) return 1;
    printf("%d %d\n", work(x), pick(x & 7, x));
    return 0;
}
"""


def _compile(src: Path, flags: list[str], out: Path) -> Path | None:
    r = proc.run(["gcc", *flags, "-w", "-c", str(src), "-o", str(out)], timeout=120)
    return out if r.ok else None


@pytest.mark.parametrize("flags", FLAG_SETS, ids=[" ".join(f) for f in FLAG_SETS])
def test_gcc_code_always_passes(tmp_path, flags):
    """No false rejection: every object gcc makes of the corpus proves clean against itself."""
    checked = 0
    for src in sorted(CORPUS.glob("*.c")):
        obj = _compile(src, flags, tmp_path / f"{src.stem}.o")
        if obj is None:
            continue
        problems = controlflow.check(obj, obj)
        assert problems == [], f"{src.name} {flags}: {problems}"
        checked += 1
    assert checked >= 12


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("cf")
    (d / "p.c").write_text(PROGRAM)
    proc.run(["gcc", "-O2", "-S", "p.c", "-o", "base.s"], cwd=d, check=True)
    proc.run(["gcc", "-O2", "-c", "base.s", "-o", "base.o"], cwd=d, check=True)
    return d


def _with_body(program: Path, function: str, body: str, name: str) -> Path:
    """gcc's assembly with ``function``'s instructions replaced by ``body``."""
    text = (program / "base.s").read_text()
    pattern = re.compile(rf"(^{function}:\n)(.*?)(^\t\.size\t{function}, )", re.S | re.M)
    assert pattern.search(text), function
    new = pattern.sub(lambda m: m.group(1) + "\t.cfi_startproc\n" + body + "\t.cfi_endproc\n" + m.group(3), text,
                      count=1)
    src = program / f"{name}.s"
    src.write_text(new)
    obj = program / f"{name}.o"
    r = proc.run(["gcc", "-c", str(src), "-o", str(obj)], timeout=60)
    assert r.ok, r.stderr.decode()
    return obj


def _rules(program: Path, obj: Path) -> set[str]:
    return {p.rule for p in controlflow.check(obj, program / "base.o")}


def test_gcc_program_passes(program):
    assert controlflow.check(program / "base.o", program / "base.o") == []


def test_an_honest_rewrite_passes(program):
    obj = _with_body(program, "work", "\tleal\t1(%rdi,%rdi,2), %eax\n\tret\n", "honest")
    assert _rules(program, obj) == set()


def test_instructions_named_like_stack_operations_are_not_pushes(program):
    """popcnt is no pop, and pushf/popf balance: the stack height is right at ret."""
    body = "\tpopcntl\t%edi, %eax\n\tpushfq\n\tpopfq\n\tret\n"
    assert _rules(program, _with_body(program, "work", body, "popcnt")) == set()


def test_system_through_the_got_and_push_ret_is_refused(program):
    """The attack the issue describes: printf's GOT slot plus an offset, entered by push/ret."""
    body = ("\tmovq\tprintf@GOTPCREL(%rip), %rax\n\taddq\t$-74000, %rax\n\tpushq\t%rax\n\tret\n")
    rules = _rules(program, _with_body(program, "work", body, "got_ret"))
    assert "address" in rules and "ret" in rules


def test_push_ret_to_a_label_is_refused(program):
    body = "\tleaq\t.Lsneak(%rip), %rax\n\tpushq\t%rax\n\tret\n.Lsneak:\n\tleal\t1(%rdi,%rdi,2), %eax\n\tret\n"
    assert "ret" in _rules(program, _with_body(program, "work", body, "push_ret_label"))


def test_indirect_call_where_gcc_has_none_is_refused(program):
    body = "\tmovq\t%rsi, %rax\n\tsubq\t$8, %rsp\n\tcall\t*%rax\n\taddq\t$8, %rsp\n\tret\n"
    assert "indirect" in _rules(program, _with_body(program, "work", body, "indirect_call"))


def test_indirect_jump_where_gcc_has_none_is_refused(program):
    body = "\tmovq\t%rsi, %rax\n\tjmp\t*%rax\n"
    assert "indirect" in _rules(program, _with_body(program, "work", body, "indirect_jump"))


def test_writing_the_return_address_is_refused(program):
    body = "\tmovq\t%rsi, (%rsp)\n\tleal\t1(%rdi,%rdi,2), %eax\n\tret\n"
    assert "return-slot" in _rules(program, _with_body(program, "work", body, "write_ret"))


def test_writing_the_return_address_through_the_frame_pointer_is_refused(program):
    body = ("\tpushq\t%rbp\n\tmovq\t%rsp, %rbp\n\tmovq\t%rsi, 8(%rbp)\n\tleal\t1(%rdi,%rdi,2), %eax\n"
            "\tpopq\t%rbp\n\tret\n")
    assert "return-slot" in _rules(program, _with_body(program, "work", body, "write_ret_rbp"))


def test_reading_the_return_address_is_refused(program):
    body = "\tmovq\t(%rsp), %rax\n\tret\n"
    assert "return-slot" in _rules(program, _with_body(program, "work", body, "read_ret"))


def test_unbalanced_stack_at_ret_is_refused(program):
    body = "\tpushq\t%rbx\n\tleal\t1(%rdi,%rdi,2), %eax\n\tret\n"
    assert "ret" in _rules(program, _with_body(program, "work", body, "unbalanced"))


def test_popping_the_return_address_then_jumping_is_refused(program):
    body = "\tpopq\t%rcx\n\taddq\t$5, %rcx\n\tpushq\t%rcx\n\tret\n"
    assert "ret" in _rules(program, _with_body(program, "work", body, "pop_ret"))


def test_calling_a_function_gcc_does_not_call_is_refused(program):
    body = "\tsubq\t$8, %rsp\n\tcall\tsystem@PLT\n\taddq\t$8, %rsp\n\tret\n"
    assert "call" in _rules(program, _with_body(program, "work", body, "system_call"))


def test_changing_the_call_form_is_refused(program):
    """gcc calls printf through the PLT; a call through its GOT slot (-fno-plt's form) is
    another construct: an indirect call and a GOT load gcc's code does not have."""
    body = "\tsubq\t$8, %rsp\n\tcall\t*printf@GOTPCREL(%rip)\n\taddq\t$8, %rsp\n\tret\n"
    assert _rules(program, _with_body(program, "work", body, "call_form")) & {"indirect", "address"}


def test_taking_a_function_address_gcc_does_not_take_is_refused(program):
    body = "\tleaq\tmain(%rip), %rax\n\tret\n"
    assert "address" in _rules(program, _with_body(program, "work", body, "take_main"))


def test_taking_an_external_function_address_is_refused(program):
    body = "\tleaq\tprintf(%rip), %rax\n\tret\n"
    assert "address" in _rules(program, _with_body(program, "work", body, "take_printf"))


def test_jumping_into_another_function_is_refused(program):
    body = "\tjmp\tmain+4\n"
    assert "branch" in _rules(program, _with_body(program, "work", body, "into_main"))


def test_falling_off_the_end_after_a_returning_call_is_refused(program):
    body = "\tsubq\t$8, %rsp\n\tcall\tputs@PLT\n"
    # puts is not called by gcc's program: call the function gcc does call, which returns.
    body = "\tpushq\t%rax\n\tcall\tprintf@PLT\n"
    assert "fall-through" in _rules(program, _with_body(program, "work", body, "fall_off"))


def test_code_in_a_writable_section_is_refused(program):
    text = (program / "base.s").read_text()
    text += '\t.section\t.wx,"awx",@progbits\nsneaky:\n\tret\n'
    src = program / "wx.s"
    src.write_text(text)
    proc.run(["gcc", "-c", str(src), "-o", str(program / "wx.o")], check=True)
    assert "section" in _rules(program, program / "wx.o")


def test_jump_table_into_another_function_is_refused(program):
    """A table entry (.long target-base) that leaves the function using the table."""
    text = (program / "base.s").read_text()
    # gcc's pick() jumps through .L4 (PIC-style .long .Lx-.L4 entries): point one entry at main.
    m = re.search(r"(\.L\d+):\n\t\.long\t(\.L\d+)-\1\n", text)
    assert m, "gcc -O2 should have made a jump table for pick()"
    table = m.group(1)
    text = text.replace(f"\t.long\t{m.group(2)}-{table}\n", f"\t.long\tmain+9-{table}\n", 1)
    src = program / "table.s"
    src.write_text(text)
    proc.run(["gcc", "-c", str(src), "-o", str(program / "table.o")], check=True)
    assert _rules(program, program / "table.o") & {"table", "branch"}


def test_layout_change_of_a_switch_passes(program):
    """gcc torture pr48809's shape: only alignment moved in a function with a jump table."""
    text = (program / "base.s").read_text().replace("\t.p2align 4\n", "\t.p2align 6\n")
    src = program / "aligned.s"
    src.write_text(text)
    proc.run(["gcc", "-c", str(src), "-o", str(program / "aligned.o")], check=True)
    assert controlflow.check(program / "aligned.o", program / "base.o") == []


def test_a_syscall_instruction_is_refused(program):
    body = "\tmovl\t$60, %eax\n\tsyscall\n\tret\n"
    assert "instruction" in _rules(program, _with_body(program, "work", body, "syscall"))


def test_system_call_bytes_in_a_function_that_jumps_through_registers_are_refused(program):
    """With a register-indirect jump (pick's switch), the target is computed at run time: the
    function may not hide kernel-entry bytes that gcc's version does not have."""
    text = (program / "base.s").read_text()
    text = re.sub(r"(pick:\n.*?\t\.cfi_startproc\n)", lambda m: m.group(1) + "\tmovl\t$0x050f, %r11d\n", text,
                  count=1, flags=re.S)
    src = program / "hidden.s"
    src.write_text(text)
    proc.run(["gcc", "-c", str(src), "-o", str(program / "hidden.o")], check=True)
    assert "hidden" in _rules(program, program / "hidden.o")
    # The same bytes where nothing jumps through a register cannot be reached: no refusal.
    body = "\tmovl\t$0x050f, %eax\n\tleal\t1(%rdi,%rdi,2), %eax\n\tret\n"
    assert _rules(program, _with_body(program, "work", body, "hidden_ok")) == set()


def test_garbage_is_refused_not_crashing(tmp_path, program):
    bad = tmp_path / "bad.o"
    bad.write_bytes(b"\x7fELF" + b"\x00" * 60)
    with pytest.raises(Exception) as info:
        controlflow.check(bad, program / "base.o")
    assert "not" in str(info.value)


CALLBACK = r"""typedef int (*F)(void *, int);
static int f_call(void *p, int x) { return x * 3 + (p != 0); }
static int other(void *p, int x) { return x - (p != 0); }
int run(F f, void *p, int x);
int use_other(void *p, int x) { return other(p, x) * 5; }
int pcall(void *p, int x) { return run(f_call, p, x) + 1; }
"""


@pytest.fixture(scope="module")
def callback(tmp_path_factory):
    d = tmp_path_factory.mktemp("cb")
    (d / "p.c").write_text(CALLBACK)
    proc.run(["gcc", "-O2", "-fno-inline", "-S", "p.c", "-o", "base.s"], cwd=d, check=True)
    proc.run(["gcc", "-O2", "-c", "base.s", "-o", "base.o"], cwd=d, check=True)
    return d


def test_a_static_callback_address_resolved_by_the_assembler_passes(callback):
    """``lea f_call(%rip)`` to a static function in the same section has no relocation (the
    assembler resolves it); gcc's code takes that address, so the candidate may too (Lua's
    ``lua_pcallk`` was refused for exactly this)."""
    base = callback / "base.o"
    out = proc.run(["objdump", "-dr", str(base)], check=True).stdout.decode()
    assert "f_call" in out and "R_X86_64_PC32\tf_call" not in out  # the premise: no relocation
    assert controlflow.check(base, base) == []
    recompiled = callback / "o3.o"
    proc.run(["gcc", "-O3", "-fno-inline", "-funroll-loops", "-c", "p.c", "-o", str(recompiled)], cwd=callback,
             check=True)
    assert controlflow.check(recompiled, base) == []


def test_a_static_function_address_gcc_takes_nowhere_is_still_refused(callback):
    """Taking the address of ``other``, which gcc's code only calls, stays refused."""
    body = "\tleaq\tother(%rip), %rax\n\tret\n"
    assert "address" in _rules(callback, _with_body(callback, "pcall", body, "take_other"))


def test_a_noreturn_local_call_resolved_by_the_assembler_ends_a_function(tmp_path):
    """gcc splits an inlined assert's failing branch into ``f.part.0`` and calls it as the last
    instruction of each caller, with no relocation; gcc's own object must prove clean."""
    obj = _compile(CORPUS / "assert_split.c", ["-O3"], tmp_path / "a.o")
    out = proc.run(["objdump", "-dr", str(obj)], check=True).stdout.decode()
    assert re.search(r"call\s+0 <flush_cache\.part\.0>", out)  # the premise: a local, resolved call
    assert controlflow.check(obj, obj) == []


def _assert_split_copy(tmp_path: Path, edit) -> tuple[Path, Path]:
    """gcc's -O3 object of assert_split.c, and a candidate whose ``flush_cache.part.0`` is a
    private copy (renamed, as a variant brings its own clone), edited by ``edit``."""
    base_s = tmp_path / "base.s"
    proc.run(["gcc", "-O3", "-S", str(CORPUS / "assert_split.c"), "-o", str(base_s)], check=True)
    base_o = tmp_path / "base.o"
    proc.run(["gcc", "-c", str(base_s), "-o", str(base_o)], check=True)
    text = edit(base_s.read_text().replace("flush_cache.part.0", "flush_cache.part.0.sg_copy"))
    cand_s = tmp_path / "cand.s"
    cand_s.write_text(text)
    cand_o = tmp_path / "cand.o"
    proc.run(["gcc", "-c", str(cand_s), "-o", str(cand_o)], check=True)
    return cand_o, base_o


def test_a_private_copy_that_cannot_return_may_end_a_function(tmp_path):
    """A variant's own copy of the assert split (no ret, no jump out) never returns, so its
    callers may end with the call, as gcc's do."""
    cand, base = _assert_split_copy(tmp_path, lambda t: t)
    assert controlflow.check(cand, base) == []


def test_a_private_copy_that_returns_does_not_end_a_function(tmp_path):
    """The same copy with a ``ret`` in front of its noreturn call: its callers would run off
    their ends into whatever follows, so they are refused."""
    def add_ret(text: str) -> str:
        head, sep, tail = text.partition("flush_cache.part.0.sg_copy:\n")
        assert sep
        return head + sep + "\tret\n" + tail
    cand, base = _assert_split_copy(tmp_path, add_ret)
    assert "fall-through" in {p.rule for p in controlflow.check(cand, base)}


def test_a_private_copy_that_tail_jumps_out_does_not_end_a_function(tmp_path):
    """No ``ret`` but a tail jump to a function that returns (``main``): the copy can return
    for it, so callers that end with the call are refused."""
    def add_jump(text: str) -> str:
        head, sep, tail = text.partition("flush_cache.part.0.sg_copy:\n")
        assert sep
        return head + sep + "\tjmp\tmain\n" + tail
    cand, base = _assert_split_copy(tmp_path, add_jump)
    assert "fall-through" in {p.rule for p in controlflow.check(cand, base)}
