"""The one reader of GNU assembler (x86-64, AT&T) text: lines, statements, labels, directives.

Everything in sgcc that looks inside assembly text goes through here: splitting files into
function units (:mod:`sgcc.asm.units`), screening hostile candidates
(:mod:`sgcc.verify.static.textscreen`), transplanting units between compilations and editing their
layout (:mod:`sgcc.candidates`). One reading means one answer to the questions where they
used to drift apart: where a comment starts, where a statement ends, what is a label.

How gas reads a line on x86-64:

* only ``\\n`` ends a line (:func:`split_lines`);
* ``;`` separates statements, ``#`` starts a comment anywhere outside a string, and ``/`` at
  the start of a line makes the whole line a comment;
* ``"..."`` is a string with backslash escapes (``;`` and ``#`` inside it are text);
* ``'c`` (and ``'\\c``) is a character constant, so ``'#`` and ``';`` are no comment and no
  separator.

:func:`scan` gives the raw split of a line and flags the places where a stricter reader
must refuse rather than guess (a *hazard*: a character outside strings whose meaning
depends on gas details, or a string left open). :func:`statements` and :func:`analyze` are
the everyday views built on it.

This module is on the compile path of every intercepted file: standard library only,
regular expressions compiled once, a fast path for the plain instruction lines that make
up most of gcc's output.
"""

from __future__ import annotations

import re

__all__ = [
    "Scan", "analyze", "analyze_lines", "blank_strings", "rename_tokens", "scan", "section_name",
    "split_args", "split_labels", "split_lines", "statements", "strip_labels",
]

#: A symbol's name as gas reads it: letters, digits, ``_``, ``.``, ``$`` and every character
#: outside ASCII (gas takes each byte >= 0x80 as a name character, first ones included:
#: ``é:`` defines ``é``), not starting with a digit. A pattern, for the expressions built on it.
SYMBOL = r"[A-Za-z_.$\x80-\U0010ffff][A-Za-z0-9_.$\x80-\U0010ffff]*"
#: A label at the start of a statement: a symbol or a local number, then ``:``. As in gas,
#: whatever follows the colon does not matter: ``f::`` and ``f:=1`` define ``f`` (gas then
#: refuses the rest as junk), so a reader that saw no label there would see less than gas.
LABEL_RE = re.compile(rf"({SYMBOL}|[0-9]+)[ \t]*:")
#: ``symbol = expression`` (not ``==``).
ASSIGN_RE = re.compile(rf"({SYMBOL})[ \t]*=(?!=)")
_DIRECTIVE_RE = re.compile(r"\.[A-Za-z0-9_.$]*")
#: A double-quoted string; one left open runs to the end of the text.
_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"?')
#: A symbol-like token (``.L5``, ``f.cold``, ``1b``); never starting with ``$``, the immediate
#: prefix (``movl $.LC0, %edi``).
TOKEN_RE = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.$]*")
# Strings, character constants and comments are matched whole so renaming never edits them.
_RENAME_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"?|\'\\?.|#[^\n]*|[A-Za-z0-9_.][A-Za-z0-9_.$]*')
# Most lines are an indented instruction with nothing that needs a closer look.
_PLAIN_INSTRUCTION_RE = re.compile(r"[ \t]+[a-z][^:=\"#;'\n]*\n?\Z")
_INSTRUCTION: tuple[tuple[str, ...], tuple[tuple[str, str], ...]] = ((), (("", ""),))

#: Characters outside strings that a strict reader refuses: ``'`` (character constants),
#: ``\\``, ``/`` (a comment at line start, a prefix separator elsewhere) and the backquote.
HAZARDS = "'\\/`"


def split_lines(text: str) -> list[str]:
    """Cut ``text`` after each newline, keeping it; a last line without one is kept as is.

    Only ``\\n`` ends a line for the assembler, so unlike ``str.splitlines`` this never cuts
    at form feeds, ``\\x1c`` or ``\\u2028`` that might sit in a comment or inline asm.
    """
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


class Scan:
    """One line as gas splits it.

    ``parts``: the statement texts between ``;`` separators, unstripped, without the comment
    (possibly empty strings); ``comment``: the text after the ``#`` that starts a comment, or
    None; ``hazard``: the first character of :data:`HAZARDS` met outside strings (``"/"`` for a
    line that is a ``/`` comment), or None; ``open_string``: ``"string"`` when a string is not
    closed on the line, ``"escape"`` when a backslash is its last character, else None.
    """

    # A plain class, not a NamedTuple or dataclass: this module is imported on every cache
    # hit of the compile path, and importing typing or dataclasses costs milliseconds.
    __slots__ = ("parts", "comment", "hazard", "open_string")

    def __init__(self, parts: list[str], comment: str | None, hazard: str | None, open_string: str | None):
        self.parts, self.comment, self.hazard, self.open_string = parts, comment, hazard, open_string

    def __eq__(self, other) -> bool:
        return isinstance(other, Scan) and (self.parts, self.comment, self.hazard, self.open_string) == \
            (other.parts, other.comment, other.hazard, other.open_string)

    def __repr__(self) -> str:
        return (f"Scan(parts={self.parts!r}, comment={self.comment!r}, hazard={self.hazard!r}, "
                f"open_string={self.open_string!r})")


def scan(line: str) -> Scan:
    """Split one line into statements the way gas does (see the module docstring)."""
    if line.lstrip().startswith("/"):
        return Scan([], None, "/", None)
    parts: list[str] = []
    comment = hazard = open_string = None
    start = i = 0
    end = n = len(line)
    while i < n:
        c = line[i]
        if c == '"':
            i += 1
            while i < n and line[i] != '"':
                if line[i] == "\\":
                    if i + 1 >= n:
                        open_string = "escape"
                    i += 2
                else:
                    i += 1
            if i >= n and open_string is None:
                open_string = "string"
            i += 1
        elif c == "'":
            hazard = hazard or c
            i += 3 if line[i + 1 : i + 2] == "\\" else 2
        elif c == "#":
            comment = line[i + 1 :]
            end = i
            break
        elif c == ";":
            parts.append(line[start:i])
            start = i = i + 1
        else:
            if hazard is None and c in HAZARDS:
                hazard = c
            i += 1
    parts.append(line[start:end])
    return Scan(parts, comment, hazard, open_string)


def statements(line: str) -> list[str]:
    """The statements on a line, stripped, without comments; [] for blank or comment lines."""
    if '"' not in line and "#" not in line and ";" not in line and "'" not in line:
        s = line.strip()
        return [s] if s and s[0] != "/" else []
    return [s for s in (p.strip() for p in scan(line).parts) if s]


def split_labels(stmt: str) -> tuple[list[str], str]:
    """The labels that start a statement, and the rest of it (``.L3: 1: movl ...`` ->
    ``([".L3", "1"], "movl ...")``): the one reading of labels, gas's."""
    labels: list[str] = []
    while ":" in stmt:
        m = LABEL_RE.match(stmt)
        if not m:
            break
        labels.append(m.group(1))
        stmt = stmt[m.end() :].lstrip()
    return labels, stmt


def strip_labels(stmt: str) -> str:
    """``stmt`` without the labels that start it (``.L3: movl ...`` -> ``movl ...``)."""
    return split_labels(stmt)[1]


def analyze(line: str) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Labels defined on a line and its other statements as ``(directive, arguments)``.

    The directive is lower-cased with its dot (``".section"``), ``"="`` for ``sym = expr``
    (arguments: the symbol), or ``""`` for an instruction (arguments: the statement).
    """
    labels: list[str] = []
    ops: list[tuple[str, str]] = []
    for stmt in statements(line):
        found, s = split_labels(stmt)
        labels += found
        if not s:
            continue
        m = ASSIGN_RE.match(s)
        if m:
            ops.append(("=", m.group(1)))
        elif s[0] == "." and (m := _DIRECTIVE_RE.match(s)):  # matches whenever s starts with "."
            ops.append((m.group(0).lower(), s[m.end() :].strip()))
        else:
            ops.append(("", s))
    return tuple(labels), tuple(ops)


def analyze_lines(lines: list[str]) -> list[tuple[tuple[str, ...], tuple[tuple[str, str], ...]]]:
    """:func:`analyze` of every line, each distinct line analyzed once (gcc repeats many
    lines verbatim: ``\\tret``, ``.p2align 4,,10``, CFI); plain instruction lines are not
    analyzed at all (their op is ``("", "")``: an instruction, text not kept)."""
    memo: dict[str, tuple] = {}
    out = []
    for line in lines:
        a = memo.get(line)
        if a is None:
            a = memo[line] = _INSTRUCTION if _PLAIN_INSTRUCTION_RE.match(line) else analyze(line)
        out.append(a)
    return out


def section_name(args: str) -> str:
    """The section a ``.section``/``.pushsection`` directive names, from its arguments."""
    args = args.strip()
    if args.startswith('"'):
        end = args.find('"', 1)
        return args[1:end] if end > 0 else args[1:]
    return re.split(r"[\s,]", args, maxsplit=1)[0]


def split_args(text: str) -> list[str]:
    """Split directive arguments at top-level commas (strings and parentheses respected),
    each stripped; [] for no arguments."""
    args, cur, depth, in_str, i = [], [], 0, False, 0
    while i < len(text):
        c = text[i]
        cur.append(c)
        if in_str:
            if c == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            cur.pop()
            args.append("".join(cur).strip())
            cur = []
        i += 1
    last = "".join(cur).strip()
    if args or last:
        args.append(last)
    return args


def blank_strings(text: str) -> str:
    """``text`` with every string's contents removed (``"a;b"`` -> ``""``), so that words in
    strings are never taken for symbols."""
    return _STRING_RE.sub('""', text)


def rename_tokens(text: str, lookup) -> str:
    """``text`` with each whole symbol-like token ``t`` replaced by ``lookup(t)`` (kept when
    that is None); strings, character constants and comments are left alone."""

    def sub(m: re.Match) -> str:
        tok = m.group(0)
        if tok[0] in "\"'#":
            return tok
        new = lookup(tok)
        return tok if new is None else new

    return _RENAME_RE.sub(sub, text)
