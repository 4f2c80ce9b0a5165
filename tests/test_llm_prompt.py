"""The llm's prompt, answer parsing and refinement feedback (pure functions, no model)."""

from __future__ import annotations

import pytest

from sgcc import proc
from sgcc.asm.units import AsmFile
from sgcc.engine.report import CandidateResult
from sgcc.llm import prompt
from tests.conftest import EXAMPLES

POPCOUNT = EXAMPLES / "programs" / "popcount"
UNIT = "\t.text\n\t.globl\tf\n\t.type\tf, @function\nf:\n\tleal\t(%rdi,%rdi), %eax\n\tret\n\t.size\tf, .-f\n"


def test_initial_prompt_is_the_papers_template():
    text = prompt.initial_prompt("int f(int x) { return 2 * x; }\n", UNIT)
    assert text == (
        "Given the following C code and assembly code, your task is to generate highly optimized x86-64 "
        "assembly code.\n\nC Code:\n\nint f(int x) { return 2 * x; }\n\nAssembly Code:\n\n" + UNIT.rstrip("\n")
        + "\n\nOnly output the optimized assembly code. Do not include any other text. Do not write any "
        "comments in the assembly code. Wrap the assembly code in assembly tags.\n\nOptimized Assembly Code:\n")
    first = prompt.messages_for("int x;", UNIT)
    assert [m["role"] for m in first] == ["user"]
    again = prompt.messages_for("int x;", UNIT, "my answer", "it failed")
    assert [m["role"] for m in again] == ["user", "assistant", "user"]
    assert again[1]["content"] == "my answer" and again[2]["content"] == "it failed"


@pytest.mark.parametrize("answer", [
    f"<assembly>\n{UNIT}</assembly>",
    f"  <assembly>{UNIT}</assembly>\n\n",
    f"<ASSEMBLY>\n{UNIT}</Assembly>",
    f"```asm\n{UNIT}```",
    f"```\n{UNIT}```\n",
    f"```x86asm\n{UNIT}```",
    f"<assembly>\n```asm\n{UNIT}```\n</assembly>",
    f"\n\n<assembly>\n\n{UNIT}\n\n</assembly>",
])
def test_answers_with_exactly_one_block_parse(answer):
    parsed = prompt.parse_answer(answer)
    assert parsed.ok, parsed.problem
    assert parsed.assembly == UNIT


@pytest.mark.parametrize("answer, finish, words", [
    ("", "stop", "the answer is empty"),
    ("   \n", "stop", "the answer is empty"),
    (UNIT, "stop", "no assembly in the answer"),
    ("I cannot optimize this further.", "stop", "no assembly in the answer"),
    (f"Here is the faster code:\n<assembly>\n{UNIT}</assembly>", "stop",
     "prose around the assembly: 'Here is the faster"),
    (f"<assembly>\n{UNIT}</assembly>\nThis uses lea.", "stop", "prose around the assembly: 'This uses lea.'"),
    (f"Sure!\n```asm\n{UNIT}```", "stop", "prose around the assembly in the answer: 'Sure!'"),
    (f"<assembly>\n{UNIT}", "length", "cut off at the token limit before </assembly>"),
    (f"<assembly>\n{UNIT}", "stop", "<assembly> is never closed"),
    (f"```asm\n{UNIT}", "length", "cut off at the token limit before its ``` block closed"),
    (f"<assembly>{UNIT}</assembly><assembly>{UNIT}</assembly>", "stop", "2 assembly blocks in the answer"),
    (f"```\n{UNIT}```\n```\n{UNIT}```", "stop", "2 ``` blocks in the answer"),
    ("<assembly>\n\n</assembly>", "stop", "the assembly block in the answer is empty"),
    ("```c\nint f(int x) { return x + x; }\n```", "stop", "marked as c code, not assembly"),
    (f"</assembly>{UNIT}", "stop", "</assembly> without <assembly>"),
    (f"<assembly>\nNote:\n```\n{UNIT}```\n</assembly>", "stop", "prose around the assembly inside the assembly tags"),
])
def test_answers_without_usable_assembly_say_why(answer, finish, words):
    parsed = prompt.parse_answer(answer, finish)
    assert not parsed.ok
    assert words in parsed.problem, parsed.problem


def _result(stage, reason="", detail="", **kw):
    r = CandidateResult(id="c001", function="count_bits", generator="llm")
    r.stop(stage, reason, detail)
    for k, v in kw.items():
        setattr(r, k, v)
    return r


def _baseline():
    asm = proc.run(["gcc", "-O3", "-S", "-o", "-", str(POPCOUNT / "popcount.c")], check=True).stdout.decode()
    return AsmFile.parse(asm)


def test_assembler_feedback_points_at_the_answers_own_line():
    asm = _baseline()
    good = asm.unit("count_bits").text
    lines = good.split("\n")
    k = next(i for i, ln in enumerate(lines, 1) if ln.strip().startswith("ret"))
    bad = "\n".join(lines[: k - 1] + ["\tmovq\t%rax, %nosuchreg"] + lines[k - 1:])
    offset = prompt.unit_line_offset(asm, "count_bits", bad)
    joined = asm.join({"count_bits": bad}).split("\n")
    assert joined[offset + k - 1] == "\tmovq\t%rax, %nosuchreg"  # the mapping is exact
    result = _result("assemble", f"cand.s:{offset + k}: Error: bad register name `%nosuchreg'",
                     f"cand.s:{offset + k}: Error: bad register name `%nosuchreg'")
    text = prompt.feedback(result, bad, offset=offset, base_lines=joined)
    assert f"line {k} of your answer: `movq\t%rax, %nosuchreg`" in text
    assert "Error: bad register name `%nosuchreg'" in text
    assert text.endswith(prompt.RULES + "\n\nOptimized Assembly Code:\n")


def test_assembler_feedback_never_quotes_other_files():
    # The engine withholds messages about other files (an .include'd secret); the feedback
    # repeats only what the engine kept, and quotes only the answer's own text.
    secret = "SECRET-TOKEN-1234"
    answer = "\t.text\nf:\n\tmovq\t%rax, %nosuchreg\n\tret\n"
    result = _result("assemble", "cand.s:3: Error: bad register name `%nosuchreg'; 2 message(s) about other "
                     "files withheld", "cand.s:3: Error: bad register name `%nosuchreg'")
    text = prompt.feedback(result, answer, offset=0, base_lines=None)
    assert "line 3 of your answer: `movq\t%rax, %nosuchreg`" in text
    assert "2 message(s) about other files withheld" in text
    assert secret not in text


def test_check_feedback_quotes_the_refused_line():
    answer = '\t.text\nf:\n\t.incbin "/etc/passwd"\n\tret\n'
    text = prompt.feedback(_result("screen", "line 3: directive .incbin is not allowed (it reads a file)"), answer)
    assert 'line 3 of your answer: `.incbin "/etc/passwd"`' in text and "not allowed" in text
    text = prompt.feedback(_result("check", "new external symbol: system"), "\tcall\tsystem\n")
    assert "refused before it ran: new external symbol: system" in text


def test_test_failure_feedback_has_input_and_expected_never_what_it_printed():
    """What a candidate printed never reaches a prompt (it may be a host file read out); an
    "actual" field, even if a caller passed one, is not quoted."""
    detail = "input: '3000000 2024\\n'\nexpected: '48771765\\n27\\n'\nactual: 'root:x:0:0:root\\n'"
    reason = "test large failed: output differs from the expected at line 1"
    text = prompt.feedback(_result("test", reason, detail), UNIT)
    assert reason in text
    assert "Input:\n3000000 2024\n" in text
    assert "Expected output:\n48771765\n27\n" in text
    assert "root:x" not in text and "Actual output" not in text


def test_correct_attempts_get_their_measured_speed():
    slow = _result("time", "not significantly faster", speedup=0.991, ci_low=0.97, ci_high=1.01, tests_total=5)
    text = prompt.feedback(slow, UNIT)
    assert "correct (it passes all 5 tests)" in text and "0.991x" in text and "0.970x to 1.010x" in text
    assert "Make it faster" in text
    fast = _result("accepted", "2.1x faster", speedup=2.104, ci_low=2.05, ci_high=2.15, tests_total=5)
    text = prompt.feedback(fast, UNIT)
    assert "2.104x" in text and "as fast as gcc -O3" in text and "even faster" in text


def test_feedback_for_invalid_answers_repeats_and_links():
    text = prompt.feedback(_result("screen", "no assembly in the answer: no <assembly> tags and no ``` block"),
                           "I cannot", invalid=True)
    assert text.startswith("Your answer could not be used: no assembly in the answer")
    assert "Wrap the assembly code in assembly tags" in text
    assert "repeats an earlier attempt" in prompt.feedback(_result("skipped", "same text as c003"), UNIT)
    assert "exactly gcc's assembly" in prompt.feedback(_result("skipped", "identical to gcc's unit"), UNIT)
    link = _result("link", "does not link", "/usr/bin/ld: /tmp/sgcc-opt-abc/c007/cand.o: in function `main':\n"
                   "popcount.c:(.text+0x5): undefined reference to `count_bits'")
    text = prompt.feedback(link, UNIT)
    assert "undefined reference to `count_bits'" in text and "/tmp/sgcc-opt" not in text and "cand.o" in text
