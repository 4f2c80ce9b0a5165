"""Layout candidates: gcc's own unit with other code alignment.

Where a hot loop starts relative to 16-, 32- and 64-byte boundaries decides how its
instructions are fetched and decoded (the decoded-instruction cache, fetch blocks, loop
buffers) and can move a tight loop's speed by several percent either way. gcc aligns loop
heads with ``.p2align 4,,10`` (to 16 bytes unless that costs more than 10 bytes of padding)
and functions to 16 bytes. This generator edits only those directives of gcc's unit, so
every candidate runs exactly gcc's instructions:

* ``loops32``: every loop head aligned to 32 bytes;
* ``loops16``: every loop head aligned to 16 bytes whatever the padding;
* ``loops-packed``: no loop alignment at all (denser code, no padding executed on entry);
* ``entry64``: the function's entry aligned to a 64-byte cache line.

A loop head is a label of the function's hot part that a later jump of the same part goes
back to. Functions without loops get only ``entry64``. Whether any of it helps is for the
timing to say: alignment effects are real but small, which is exactly what honest timing
with an A-vs-A-calibrated threshold is for.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sgcc.asm.lex import analyze, split_lines
from sgcc.candidates import Candidate, Generator

if TYPE_CHECKING:
    from sgcc.asm.units import Unit
    from sgcc.candidates import Attempt, ProgramView
    from sgcc.config import Config

_ALIGN = frozenset({".p2align", ".align", ".balign"})
_JUMP_RE = re.compile(r"^\s*j[a-z]+\s+(\.L[\w.$]+)\s*$")
_SECTION = frozenset({".section", ".text", ".pushsection", ".popsection", ".previous"})
_HEAD = frozenset({".globl", ".global", ".type", ".hidden", ".weak", ".protected", ".internal"})

EDITS = ("loops32", "loops16", "loops-packed", "entry64")


def loop_heads(lines: list[str], name: str) -> tuple[int, list[int]]:
    """(line of ``name:``, lines of the loop-head labels in the function's hot part)."""
    start = next((i for i, ln in enumerate(lines) if analyze(ln)[0][:1] == (name,)), -1)
    if start < 0:
        return -1, []
    label_at: dict[str, int] = {}
    heads: set[int] = set()
    for i in range(start + 1, len(lines)):
        labels, ops = analyze(lines[i])
        if any(op in _SECTION for op, _ in ops) or any(op == ".size" for op, _ in ops):
            break  # the hot part ends (a cold part, a jump table, the end)
        for lab in labels:
            label_at[lab] = i
        m = _JUMP_RE.match(lines[i])
        if m and m.group(1) in label_at:
            heads.add(label_at[m.group(1)])
    return start, sorted(heads)


def _alignment_before(lines: list[str], i: int) -> list[int]:
    """Indices of the alignment directives right before line ``i``."""
    out = []
    j = i - 1
    while j >= 0:
        labels, ops = analyze(lines[j])
        if labels or len(ops) != 1 or ops[0][0] not in _ALIGN:
            break
        out.append(j)
        j -= 1
    return out


def edit(text: str, name: str, kind: str) -> str | None:
    """gcc's unit ``text`` with the alignment edit ``kind``; None when it does not apply."""
    lines = split_lines(text)
    start, heads = loop_heads(lines, name)
    if start < 0:
        return None
    drop: set[int] = set()
    insert: dict[int, str] = {}
    if kind == "entry64":
        # The head: alignment, .globl/.type and gcc's .LHOTB labels before the name.
        aligns = []
        j = start - 1
        while j >= 0:
            labels, ops = analyze(lines[j])
            if labels and not ops and all(lab.startswith(".L") for lab in labels):
                pass
            elif not labels and len(ops) == 1 and ops[0][0] in _ALIGN:
                aligns.append(j)
            elif not (not labels and len(ops) == 1 and ops[0][0] in _HEAD):
                break
            j -= 1
        drop.update(aligns)
        insert[min(aligns) if aligns else start] = "\t.p2align 6\n"
    else:
        if not heads:
            return None
        for h in heads:
            drop.update(_alignment_before(lines, h))
            if kind == "loops32":
                insert[h] = "\t.p2align 5\n"
            elif kind == "loops16":
                insert[h] = "\t.p2align 4\n"
            elif kind != "loops-packed":
                raise ValueError(f"unknown layout edit {kind}")
    out = []
    for i, line in enumerate(lines):
        if i in insert:
            out.append(insert[i])
        if i not in drop:
            out.append(line)
    new = "".join(out)
    return new if new != text else None


class LayoutGenerator(Generator):
    """Offers the alignment edits of each searched unit of gcc's (see the module docstring)."""

    name = "layout"
    trusted = True  # gcc's own code

    def __init__(self, edits=EDITS):
        self.edits = tuple(edits)

    def propose(self, program: ProgramView, unit: Unit, round_no: int, history: list[Attempt]) -> list[Candidate]:
        if round_no > 0:
            return []
        try:
            return self._propose(unit)
        except Exception as exc:  # noqa: BLE001 - a generator's bug must not end the run
            return [Candidate(unit.name, self.name, "", origin="layout",
                              skip=f"layout failed on {unit.name}: {type(exc).__name__}: {exc}")]

    def _propose(self, unit: Unit) -> list[Candidate]:
        out = []
        lines = split_lines(unit.text)
        heads = len(loop_heads(lines, unit.name)[1])
        for kind in self.edits:
            text = edit(unit.text, unit.name, kind)
            if text is None:
                continue
            what = "function entry at 64 bytes" if kind == "entry64" else f"{heads} loop head(s)"
            out.append(Candidate(unit.name, self.name, text, origin=f"layout {kind}: {what}",
                                 meta={"edit": kind, "loop_heads": heads}))
        return out


def from_config(cfg: Config) -> LayoutGenerator:
    return LayoutGenerator()
