"""The papers' prompt for one function unit, reading the answer, and refinement feedback.

The prompt is the papers' template (SuperCoder, appendix A.3) with the C source of the
translation unit and the ``gcc -O3`` text of one function unit. The answer must hold exactly
one block of assembly, in ``<assembly>`` tags or a fenced ``` block, and nothing else: the
prompt asks for no other text, and an answer that does not comply is a candidate refused
at ``screen`` with the reason (:func:`parse_answer`).

Iterative refinement continues the conversation with the previous answer and what the
engine found out about it (:func:`feedback`): the assembler's error pointing at the exact
line of the answer that failed, the reason a check refused it, the first failing test
(input, expected and actual output, truncated), or, for a correct attempt, its measured
speed. Feedback quotes only the answer's own lines, gcc's code, and the engine's messages,
which are already reduced to the candidate's own ``file:line: Error`` lines: nothing a
candidate tried to read (``.incbin``, ``.include``) can reach a model.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from sgcc.stages import Stage

#: The instructions that end the papers' prompt (and every refinement request).
RULES = ("Only output the optimized assembly code. Do not include any other text. "
         "Do not write any comments in the assembly code. Wrap the assembly code in assembly tags.")

#: The papers' prompt template (appendix A.3), verbatim.
TEMPLATE = ("Given the following C code and assembly code, your task is to generate highly optimized "
            "x86-64 assembly code.\n\nC Code:\n\n{c_code}\n\nAssembly Code:\n\n{assembly}\n\n"
            + RULES + "\n\nOptimized Assembly Code:\n")

#: Most characters of the model's text quoted back in a reason.
QUOTE = 80


def initial_prompt(c_source: str, unit_text: str) -> str:
    """The papers' prompt for one function unit."""
    return TEMPLATE.format(c_code=c_source.strip("\n"), assembly=unit_text.strip("\n"))


def messages_for(c_source: str, unit_text: str, previous_answer: str | None = None,
                 feedback_text: str | None = None) -> list[dict]:
    """Chat messages: the prompt, and for a refinement the last answer and the feedback on it."""
    messages = [{"role": "user", "content": initial_prompt(c_source, unit_text)}]
    if previous_answer is not None and feedback_text is not None:
        messages.append({"role": "assistant", "content": previous_answer})
        messages.append({"role": "user", "content": feedback_text})
    return messages


# --------------------------------------------------------------------------- the answer


@dataclass
class Parsed:
    """The assembly of an answer, or why there is none (``problem``)."""

    assembly: str | None
    problem: str = ""

    @property
    def ok(self) -> bool:
        return self.assembly is not None


_OPEN = re.compile(r"<\s*assembly\s*>", re.I)
_CLOSE = re.compile(r"<\s*/\s*assembly\s*>", re.I)
_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+.#-]*)[ \t]*\r?\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)
#: Languages a fenced block may be marked with that are certainly not assembly.
NOT_ASSEMBLY = frozenset("c h cpp c++ cc cxx hpp python py python3 sh bash shell zsh console json yaml toml java "
                         "javascript js typescript ts rust rs go golang ruby rb perl pl php lua sql html xml "
                         "csharp cs kotlin swift scala haskell llvm llvm-ir ir wasm diff".split())
_FENCE_OPEN = re.compile(r"^[ \t]*```", re.M)


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return repr(text[:QUOTE] + ("..." if len(text) > QUOTE else ""))


def _normalize(asm: str) -> str:
    lines = asm.replace("\r\n", "\n").split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""


def _one_fence(text: str, where: str, cut: bool) -> Parsed:
    blocks = list(_FENCE.finditer(text))
    if not blocks:
        if cut and _FENCE_OPEN.search(text):
            return Parsed(None, "the answer was cut off at the token limit before its ``` block closed")
        return Parsed(None, f"no assembly {where}: no <assembly> tags and no ``` block")
    if len(blocks) > 1:
        return Parsed(None, f"{len(blocks)} ``` blocks {where}; expected exactly one")
    block = blocks[0]
    outside = text[: block.start()] + text[block.end():]
    if outside.strip():
        return Parsed(None, f"prose around the assembly {where}: {_quote(outside)}")
    language = block.group(1).lower()
    if language in NOT_ASSEMBLY:
        return Parsed(None, f"the ``` block {where} is marked as {block.group(1)} code, not assembly")
    return _finish(block.group(2))


def _finish(asm: str) -> Parsed:
    asm = _normalize(asm)
    if not asm:
        return Parsed(None, "the assembly block in the answer is empty")
    return Parsed(asm)


def parse_answer(text: str, finish_reason: str = "") -> Parsed:
    """The assembly in a model's answer, or the reason it has none.

    Accepted: exactly one ``<assembly>...</assembly>`` (whose content may itself be one
    fenced block), or exactly one fenced ``` block, with nothing but white space around it.
    """
    cut = finish_reason == "length"
    if not text.strip():
        return Parsed(None, "the answer is empty")
    opens, closes = list(_OPEN.finditer(text)), list(_CLOSE.finditer(text))
    if opens:
        if not closes or closes[-1].start() < opens[0].end():
            if cut:
                return Parsed(None, "the answer was cut off at the token limit before </assembly>")
            return Parsed(None, "<assembly> is never closed by </assembly>")
        if len(opens) > 1 or len(closes) > 1:
            return Parsed(None, f"{max(len(opens), len(closes))} assembly blocks in the answer; expected exactly one")
        inner = text[opens[0].end(): closes[0].start()]
        outside = text[: opens[0].start()] + text[closes[0].end():]
        if outside.strip():
            return Parsed(None, f"prose around the assembly: {_quote(outside)}")
        if _FENCE_OPEN.search(inner):
            return _one_fence(inner, "inside the assembly tags", cut=False)
        return _finish(inner)
    if closes:
        return Parsed(None, "</assembly> without <assembly>")
    return _one_fence(text, "in the answer", cut)


# --------------------------------------------------------------------------- feedback


_LINE_REASON = re.compile(r"^line (\d+): ")
_AS_LINE = re.compile(r"^(?:[^:\s]*\.s):(\d+): (Error|Warning|Fatal error): (.*)$")
_TEST_FIELD = re.compile(r"^(input|expected|actual): (.*)$")
_TMP_PATH = re.compile(r"(?:/[^\s:'\"`]*)?/(c\d+|combined)/(cand\.[os])")


def unit_line_offset(asm_file, function: str, text: str) -> int | None:
    """How many lines of the assembled file come before the candidate's first line.

    The engine assembles ``asm_file.join({function: text})``; the candidate's line ``k``
    is then line ``offset + k`` of that file. None if it cannot be worked out.
    """
    marker = "# sgcc: candidate starts below\n"
    try:
        joined = asm_file.join({function: marker + text})
    except Exception:  # noqa: BLE001 - an unknown unit or odd text: no mapping, no harm
        return None
    at = joined.find(marker)
    if at < 0:
        return None
    return joined.count("\n", 0, at)


def _code_line(text: str, k: int) -> str | None:
    lines = text.split("\n")
    if 1 <= k <= len(lines):
        return lines[k - 1].strip()[:160]
    return None


def _test_fields(detail: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in (detail or "").splitlines():
        m = _TEST_FIELD.match(line)
        if m:
            try:
                value = ast.literal_eval(m.group(2))
            except (ValueError, SyntaxError):
                value = m.group(2)
            fields[m.group(1)] = str(value)
    return fields


def _fmt_speed(result) -> str:
    s = f"{result.speedup:.3f}x"
    if result.ci_low is not None and result.ci_high is not None:
        s += f" (95% interval {result.ci_low:.3f}x to {result.ci_high:.3f}x)"
    return s


def _assembler_lines(result, text: str, offset: int | None, base_lines: list[str] | None) -> list[str]:
    messages = [ln for ln in (result.detail or "").splitlines() if _AS_LINE.match(ln)] or [result.reason]
    out: list[str] = []
    for message in messages[:5]:
        m = _AS_LINE.match(message)
        if not m:
            out.append(message)
            continue
        line_no, kind, what = int(m.group(1)), m.group(2), m.group(3)
        k = line_no - offset if offset is not None else None
        code = _code_line(text, k) if k is not None else None
        if code is not None and k is not None and k >= 1:
            out.append(f"line {k} of your answer: `{code}`\n  {kind}: {what}")
        elif base_lines is not None and 1 <= line_no <= len(base_lines):
            out.append(f"in gcc's code next to your function (`{base_lines[line_no - 1].strip()[:160]}`)\n"
                       f"  {kind}: {what}")
        else:
            out.append(f"{kind}: {what}")
    extra = re.search(r"; \d+ message\(s\) about other files withheld$", result.reason or "")
    if extra:
        out.append(extra.group(0)[2:])
    return out


def feedback(result, text: str, *, invalid: bool = False, offset: int | None = None,
             base_lines: list[str] | None = None) -> str:
    """The refinement request after an attempt whose engine result is ``result``.

    ``text`` is the attempt's assembly (what the engine built); ``invalid`` says the answer
    had no usable assembly (``result.reason`` says why); ``offset`` maps the assembler's line
    numbers to the answer's (:func:`unit_line_offset`), ``base_lines`` are the lines of the
    file the engine assembled without the candidate in it, for errors outside it.
    """
    stage, reason, detail = result.stage, result.reason or "", result.detail or ""
    if invalid:
        body = f"Your answer could not be used: {reason}."
    elif stage == Stage.SKIPPED:
        if "identical to gcc" in reason:
            body = "Your answer is exactly gcc's assembly, so it cannot be faster. Write a faster version."
        elif reason.startswith("same text as"):
            body = "Your answer repeats an earlier attempt. Try a different optimization."
        else:
            body = f"Your answer was not tried: {reason}."
    elif stage in (Stage.SCREEN, Stage.CHECK):
        m = _LINE_REASON.match(reason)
        code = _code_line(text, int(m.group(1))) if m else None
        if m and code is not None:
            body = (f"Your assembly was refused before it ran: line {m.group(1)} of your answer: `{code}`\n"
                    f"  {reason[m.end():]}")
        else:
            body = f"Your assembly was refused before it ran: {reason}"
            more = [ln for ln in detail.splitlines() if ln.strip() and ln.strip() != reason][:4]
            if more:
                body += "\n" + "\n".join(more)
        body += "\nUse only ordinary instructions and the same symbols as gcc's version."
    elif stage == Stage.ASSEMBLE:
        body = "Your assembly does not assemble. The assembler reports:\n" + \
            "\n".join(_assembler_lines(result, text, offset, base_lines))
    elif stage == Stage.LINK:
        lines = [_TMP_PATH.sub(r"\2", ln) for ln in detail.splitlines() if ln.strip()][:5]
        body = "Your assembly assembles but does not link" + (":\n" + "\n".join(lines) if lines else f": {reason}")
    elif stage == Stage.TEST:
        f = _test_fields(detail)
        body = f"Your assembly builds but is wrong: {reason}."
        if "input" in f:
            body += f"\nInput:\n{f['input']}"
        if "expected" in f:
            # Never what the candidate printed: it could be a host file's contents, and with an
            # endpoint the prompt leaves the machine. The reason says where it went wrong.
            body += f"\nExpected output:\n{f['expected']}"
        body += "\nFix it so that it computes exactly what the C code computes."
    elif stage == Stage.PROVE:
        # The reason only: the detail holds values the candidate computed and memory it read.
        body = (f"Your assembly passes the tests, but the proof of its functions refused it: {reason}. "
                "Compute exactly what the C code computes on every input, and touch only the memory gcc's "
                "version touches.")
    elif stage == Stage.TIME:
        total = f"all {result.tests_total} tests" if result.tests_total else "all tests"
        if result.speedup is not None:
            body = (f"Your assembly is correct (it passes {total}) but not measurably faster than gcc -O3: "
                    f"measured {_fmt_speed(result)}. Make it faster.")
        else:
            body = (f"Your assembly is correct (it passes {total}) but not faster than gcc -O3: {reason}. "
                    "Make it faster.")
    elif stage == Stage.ACCEPTED:
        total = f"all {result.tests_total} tests" if result.tests_total else "all tests"
        body = (f"Your assembly is correct (it passes {total}) and measured {_fmt_speed(result)} "
                f"as fast as gcc -O3. Make it even faster.")
    else:
        body = f"Your last attempt stopped at {stage}: {reason}."
    return body + "\n\n" + RULES + "\n\nOptimized Assembly Code:\n"
