"""Split gcc's x86-64 AT&T assembly into per-function units, and join it back.

A file is a *frame* plus *units*. A unit is one function, as gcc emits it:

* its head: the section switch, alignment and symbol directives (``.globl``, ``.type``...)
  and the ``.LCOLDB<n>``/``.LHOTB<n>`` labels gcc puts right before ``NAME:``;
* its body, from ``NAME:`` to ``.size NAME, .-NAME``, with everything gcc puts inside:
  local labels, CFI, jump tables in ``.rodata``, ``#APP`` inline asm, and the cold
  partition ``NAME.cold`` in ``.text.unlikely``;
* its tail: the ``.size NAME.cold``/``.LCOLDE<n>``/``.LHOTE<n>`` lines after the body;
* extra pieces: read-only ``.LC<n>`` constants in the frame that only this function uses.

Everything else (data, shared constants, debug sections, ``.ident``...) is the frame.
``AsmFile.parse(text).join()`` gives back ``text`` byte for byte, whatever ``text`` is;
``join`` with replacements swaps units for other text, keeping the frame's sections intact.

Lines are read by :mod:`sgcc.asm.lex`; finding the units is :mod:`sgcc.asm.splitter`'s work.
This module is on the compile path of every intercepted file: standard library only, a few
linear passes over the lines (each distinct line analyzed once), regular expressions compiled
once.
"""

from __future__ import annotations

import bisect
import os

from sgcc.asm import lex
from sgcc.asm.splitter import DEFINERS, Splitter, type_args

__all__ = ["AsmFile", "Unit", "parse_file"]


class Unit:
    """One function of an assembly file and every line that belongs to it.

    ``pieces`` are ranges of line indices into :attr:`AsmFile.lines`, in file order;
    ``pieces[main]`` is the head, body and tail of the function, the others are private
    read-only constants (``.LC<n>`` blocks). ``text`` is the self-contained text of the unit:
    its pieces in file order, each preceded by the section directive in force there unless
    it starts with one. It is what a replacement for the unit looks like.
    """

    # A plain class, not a dataclass: the compile path imports this module on every cache
    # hit, and importing dataclasses costs ~5 ms.
    __slots__ = ("name", "pieces", "main", "text")

    def __init__(self, name: str, pieces: list[range], main: int, text: str = ""):
        self.name, self.pieces, self.main, self.text = name, pieces, main, text

    def __eq__(self, other) -> bool:
        return isinstance(other, Unit) and (self.name, self.pieces, self.main, self.text) == \
            (other.name, other.pieces, other.main, other.text)

    def __repr__(self) -> str:
        return f"Unit(name={self.name!r}, pieces={self.pieces!r}, main={self.main!r})"

    @property
    def lines(self) -> int:
        """Number of lines of :attr:`text`."""
        return self.text.count("\n")

    @property
    def span(self) -> range:
        """The main piece: head, body (with any cold partition) and tail of the function."""
        return self.pieces[self.main]


class AsmFile:
    """An assembly file split into a frame and function units.

    Build one with :meth:`parse`; ``lines`` is the text cut after every ``\\n`` (the only line
    end the assembler knows; a ``\\r`` before it stays part of the line), ``units`` the
    functions in file order.
    """

    def __init__(self, lines: list[str], units: list[Unit], *, _restore=None, _defs=None):
        self.lines = lines
        self.units = units
        self._index = {u.name: k for k, u in enumerate(units)}
        # Per unit: the directive line that restores the section in force after its main piece.
        self._restore: list[str] = _restore or []
        # ".L..." symbol -> lines of this file that define it (labels, .set and friends).
        self._defs: dict[str, list[int]] = _defs or {}

    def __repr__(self) -> str:
        return f"AsmFile({len(self.lines)} lines, units={[u.name for u in self.units]})"

    @classmethod
    def parse(cls, text: str) -> AsmFile:
        """Split ``text`` into units; never raises.

        Whatever cannot be split with confidence (overlapping functions, a label defined
        twice, a ``.previous`` that reaches across a function boundary, input that is not
        assembly at all) gives a file with no units: everything is frame and ``join`` still
        reproduces the input exactly.
        """
        lines = lex.split_lines(text)
        try:
            found, restore, defs = Splitter(lines).split()
        except Exception:  # noqa: BLE001 - the contract is "never raises": unsure means no units
            return cls(lines, [])
        return cls(lines, [Unit(*u) for u in found], _restore=restore, _defs=defs)

    def unit(self, name: str) -> Unit:
        """The unit called ``name``; :class:`KeyError` if there is none."""
        return self.units[self._index[name]]

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def join(self, replacements: dict[str, str] | None = None) -> str:
        """The file text, with the named units swapped for replacement text.

        Without replacements this is the original text, byte for byte. A replaced unit loses
        all its pieces; its replacement goes where its main piece began, followed by the
        directive that restores the section the frame was in after it. ``.L`` labels that the
        replacement defines and that are also defined elsewhere in the result (the kept
        lines, or another replacement) are renamed to fresh ``.Lsg_<unit>_<name>`` labels,
        throughout the replacement and whole tokens only, so the result still assembles.
        Labels only the replacement defines keep their names, so references from the frame
        (debug info, label-address tables) still resolve; when several replacements define
        one label, the one whose unit defined it originally keeps it (else the first).
        Unknown unit names raise :class:`KeyError`.
        """
        if not replacements:
            return "".join(self.lines)
        chosen: dict[int, str] = {}
        for name, text in replacements.items():
            chosen[self._index[name]] = text
        spans: list[tuple[int, int, int, bool]] = []
        for k in chosen:
            unit = self.units[k]
            for p, piece in enumerate(unit.pieces):
                spans.append((piece.start, piece.stop, k, p == unit.main))
        spans.sort()
        starts = [s[0] for s in spans]

        def dropped_by(line: int) -> int:
            """The replaced unit whose pieces hold ``line``, or -1 if the line is kept."""
            at = bisect.bisect_right(starts, line) - 1
            return spans[at][2] if at >= 0 and line < spans[at][1] else -1

        defined = {k: _defined_local_labels(chosen[k]) for k in sorted(chosen)}
        definers: dict[str, int] = {}  # label -> number of replacements defining it
        keeper: dict[str, int] = {}  # label -> the replacement that keeps it when several define it
        for k, labels in defined.items():
            for label in labels:
                definers[label] = definers.get(label, 0) + 1
                keeper.setdefault(label, k)
        for label, count in definers.items():
            if count > 1:
                # The unit that defined the label originally keeps it: frame references to it
                # (debug info, label tables) mean that unit's label.
                for i in self._defs.get(label, ()):
                    k = dropped_by(i)
                    if k != -1 and label in defined[k]:
                        keeper[label] = k
                        break
        fresh_names: set[str] = set()
        texts: dict[int, str] = {}
        for k, text in chosen.items():
            clashes = sorted(
                label
                for label in defined[k]
                if (definers[label] > 1 and keeper[label] != k)
                or any(dropped_by(i) == -1 for i in self._defs.get(label, ()))
            )
            if clashes:
                tokens = set(lex.TOKEN_RE.findall(text))
                mapping = {}
                for label in clashes:
                    fresh = base = f".Lsg_{k}_{label[2:]}"
                    n = 1
                    while fresh in self._defs or fresh in definers or fresh in tokens or fresh in fresh_names:
                        n += 1
                        fresh = f"{base}_{n}"
                    fresh_names.add(fresh)
                    mapping[label] = fresh
                text = lex.rename_tokens(text, mapping.get)
            if not text.endswith("\n"):
                text += "\n"
            texts[k] = text

        out: list[str] = []
        pos = 0
        for start, stop, k, is_main in spans:
            out.append("".join(self.lines[pos:start]))
            if is_main:
                out.append(texts[k])
                out.append(self._restore[k])
            pos = stop
        out.append("".join(self.lines[pos:]))
        return "".join(out)


def parse_file(path: str | os.PathLike) -> AsmFile:
    """Read an assembly file (bytes kept as they are, via surrogate escapes) and parse it."""
    with open(path, "rb") as f:
        data = f.read()
    return AsmFile.parse(data.decode("utf-8", errors="surrogateescape"))


# --------------------------------------------------------------------------- symbols defined in text


def _defined_local_labels(text: str) -> set[str]:
    """``.L`` symbols that ``text`` defines (labels, ``.set``-style and ``=`` assignments)."""
    found: set[str] = set()
    for line in lex.split_lines(text):
        if ".L" not in line:
            continue
        labels, ops = lex.analyze(line)
        found.update(label for label in labels if label.startswith(".L"))
        for name, args in ops:
            sym = args if name == "=" else type_args(args)[0] if name in DEFINERS else ""
            if sym.startswith(".L"):
                found.add(sym)
    return found
