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

This module is on the compile path of every intercepted file: standard library only, a few
linear passes over the lines (each distinct line analyzed once), regular expressions compiled
once.
"""

from __future__ import annotations

import bisect
import os
import re

from sgcc.asm import lex

__all__ = ["AsmFile", "Unit", "parse_file"]

# Directives that name the section to switch to. .pushsection/.popsection/.previous also
# move between sections but depend on assembler state, so they are never part of a unit's
# head or tail (where a replacement could lose them) and are only followed, not copied.
_SECTION_SETTERS = frozenset({".text", ".data", ".bss", ".section"})
_SECTION_STATEFUL = frozenset({".pushsection", ".popsection", ".previous"})
_ALIGN = frozenset({".align", ".p2align", ".balign", ".p2alignw", ".p2alignl", ".balignw", ".balignl"})
_SYMBOL = frozenset({".globl", ".global", ".weak", ".hidden", ".protected", ".internal", ".local"})
_FUNCTION_TYPES = frozenset({"@function", "%function", '"function"', "STT_FUNC"})
# Directives that put bytes at the current location (what a constant is made of).
_DATA = frozenset(
    {
        ".byte", ".2byte", ".4byte", ".8byte", ".short", ".hword", ".value", ".word", ".int",
        ".long", ".quad", ".octa", ".zero", ".skip", ".space", ".fill", ".string", ".string8",
        ".string16", ".string32", ".string64", ".ascii", ".asciz", ".float", ".single",
        ".double", ".tfloat", ".sleb128", ".uleb128", ".dc", ".dc.a", ".dc.b", ".dc.d",
        ".dc.l", ".dc.s", ".dc.w", ".dc.x", ".base64",
    }
)
# Directives that emit nothing at the current location: they may follow a constant without
# making it ambiguous where the constant ends.
_SILENT = frozenset(
    {
        ".set", ".equ", ".equiv", ".eqv", "=", ".globl", ".global", ".weak", ".hidden",
        ".protected", ".internal", ".local", ".type", ".size", ".ident", ".comm", ".lcomm",
        ".file", ".loc", ".symver", ".weakref", ".cfi_sections",
    }
)
_DEFINERS = frozenset({".set", ".equ", ".equiv", ".eqv"})

# A symbol never starts with "$": that is the immediate prefix (``movl $.LC0, %edi``).
_TOKEN_RE = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.$]*")
_SIZE_SELF_RE = re.compile(r"([^\s,]+)\s*,\s*\.\s*-\s*([^\s,]+)$")
_COLD_RE = re.compile(r"\.cold(?:\.\d+)?$")
_HEAD_LABEL_RE = re.compile(r"\.L(?:COLDB|HOTB)\d+$")
_TAIL_LABEL_RE = re.compile(r"\.L(?:COLDE|HOTE)\d+$")
_LC_RE = re.compile(r"\.LC\d+$")


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
    def parse(cls, text: str) -> "AsmFile":
        """Split ``text`` into units; never raises.

        Whatever cannot be split with confidence (overlapping functions, a label defined
        twice, a ``.previous`` that reaches across a function boundary, input that is not
        assembly at all) gives a file with no units: everything is frame and ``join`` still
        reproduces the input exactly.
        """
        lines = lex.split_lines(text)
        try:
            return _Splitter(lines).build(cls)
        except Exception:  # noqa: BLE001 - the contract is "never raises": unsure means no units
            return cls(lines, [])

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
                tokens = set(_TOKEN_RE.findall(text))
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


def _type_args(args: str) -> tuple[str, str]:
    name, _, kind = args.partition(",")
    return name.strip(), kind.strip()


def _defined_local_labels(text: str) -> set[str]:
    """``.L`` symbols that ``text`` defines (labels, ``.set``-style and ``=`` assignments)."""
    found: set[str] = set()
    for line in lex.split_lines(text):
        if ".L" not in line:
            continue
        labels, ops = lex.analyze(line)
        found.update(label for label in labels if label.startswith(".L"))
        for name, args in ops:
            sym = args if name == "=" else _type_args(args)[0] if name in _DEFINERS else ""
            if sym.startswith(".L"):
                found.add(sym)
    return found


class _Section:
    """A section the assembler can be in, and the directive line that switches to it."""

    __slots__ = ("name", "text")

    def __init__(self, name: str, text: str):
        self.name = name
        self.text = text


_DEFAULT_SECTION = _Section(".text", "\t.text\n")


class _Unsure(Exception):
    """The file does not look like something this module can split safely."""


# --------------------------------------------------------------------------- splitting


class _Splitter:
    """One parse: line analysis, section tracking, then units and their pieces."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.n = len(lines)
        analyzed = lex.analyze_lines(lines)
        self.labels = [a[0] for a in analyzed]
        self.ops = [a[1] for a in analyzed]
        self.owner = [-1] * self.n  # unit whose main piece holds the line, or -1 for frame
        self._track_sections()

    # ------------------------------------------------------------------ sections

    def _track_sections(self) -> None:
        """Record the section in force before every line (and after the last).

        ``.previous`` swaps the current section with the one before it, so a unit that is
        replaced could change what a later ``.previous`` returns to; every ``.previous`` is
        recorded with the line that made its target "previous" for :meth:`_check_previous`.
        """
        lines, labels, ops = self.lines, self.labels, self.ops
        before: list[_Section] = [_DEFAULT_SECTION] * (self.n + 1)
        self.is_setter = [False] * self.n
        self.previous_uses: list[tuple[int, int]] = []
        flagged: dict[str, str] = {}  # section name -> arguments of its first full declaration
        cur, prev, prev_at = _DEFAULT_SECTION, None, -1
        stack: list[tuple[_Section, _Section | None, int]] = []
        for i in range(self.n):
            before[i] = cur
            line_ops = ops[i]
            if not line_ops:
                continue
            single = len(line_ops) == 1 and not labels[i]
            for name, args in line_ops:
                if name in (".text", ".data", ".bss"):
                    text = _own_line(lines[i]) if single else f"\t{name}\t{args}\n"
                    new = _Section(name, text)
                elif name in (".section", ".pushsection"):
                    sname = lex.section_name(args)
                    if "," in args:
                        flagged.setdefault(sname, args)
                    if single and name == ".section" and ("," in args or sname not in flagged):
                        text = _own_line(lines[i])
                    else:
                        # Re-entries without flags (gcc's `.section .text.unlikely`) name the
                        # flags of the first declaration, so the synthesized line stands alone.
                        text = f"\t.section\t{flagged.get(sname, args)}\n"
                    new = _Section(sname, text)
                    if name == ".pushsection":
                        stack.append((cur, prev, prev_at))
                elif name == ".popsection":
                    if stack:
                        cur, prev, prev_at = stack.pop()
                    continue
                elif name == ".previous":
                    if prev is not None:
                        self.previous_uses.append((i, prev_at))
                        cur, prev, prev_at = prev, cur, i
                    continue
                else:
                    continue
                prev, prev_at, cur = cur, i, new
                self.is_setter[i] = single and name in _SECTION_SETTERS
        before[self.n] = cur
        self.before = before

    # ------------------------------------------------------------------ units

    def build(self, cls):
        lines, labels, ops, n = self.lines, self.labels, self.ops, self.n
        functions: dict[str, int] = {}
        label_at: dict[str, list[int]] = {}
        sizes: dict[str, list[int]] = {}
        defs: dict[str, list[int]] = {}
        for i in range(n):
            for label in labels[i]:
                label_at.setdefault(label, []).append(i)
                if label.startswith(".L"):
                    defs.setdefault(label, []).append(i)
            for name, args in ops[i]:
                if name == ".type":
                    sym, kind = _type_args(args)
                    if kind in _FUNCTION_TYPES:
                        functions.setdefault(sym, i)
                elif name == ".size":
                    m = _SIZE_SELF_RE.match(args)
                    if m and m.group(1) == m.group(2):
                        sizes.setdefault(m.group(1), []).append(i)
                elif name in _DEFINERS or name == "=":
                    sym = args if name == "=" else _type_args(args)[0]
                    if sym.startswith(".L"):
                        defs.setdefault(sym, []).append(i)

        # Bodies: from NAME: to the first `.size NAME, .-NAME` after it.
        bodies: list[tuple[int, int, str]] = []
        for fname in functions:
            if _COLD_RE.search(fname):
                continue
            where = label_at.get(fname)
            if not where:
                continue
            if len(where) > 1:
                raise _Unsure(f"{fname} defined twice")
            start = where[0]
            end = next((s for s in sizes.get(fname, ()) if s > start), None)
            if end is not None:
                bodies.append((start, end, fname))
        bodies.sort()
        for (_, end0, _), (start1, _, _) in zip(bodies, bodies[1:]):
            if start1 <= end0:
                raise _Unsure("functions overlap")
        body_starts = [b[0] for b in bodies]

        def body_holding(line: int) -> int:
            at = bisect.bisect_right(body_starts, line) - 1
            return at if at >= 0 and line <= bodies[at][1] else -1

        # A function label inside another body, or a cold part outside its parent's body,
        # would be cut apart by a replacement.
        for fname in functions:
            for line in label_at.get(fname, ()):
                holder = body_holding(line)
                if _COLD_RE.search(fname):
                    parent = _COLD_RE.sub("", fname)
                    owner = bodies[holder][2] if holder >= 0 else None
                    if owner != parent and (owner is not None or any(b[2] == parent for b in bodies)):
                        raise _Unsure(f"{fname} is not inside {parent}")
                elif holder >= 0 and bodies[holder][2] != fname:
                    raise _Unsure(f"{fname} is inside {bodies[holder][2]}")

        owner = self.owner
        spans: list[list[int]] = []
        for k, (start, end, fname) in enumerate(bodies):
            for i in range(start, end + 1):
                owner[i] = k
            spans.append([start, end + 1])
        for k, (start, end, fname) in enumerate(bodies):
            stop = self._tail(end + 1, fname)
            for i in range(end + 1, stop):
                owner[i] = k
            spans[k][1] = stop
        for k, (start, end, fname) in enumerate(bodies):
            head = self._head(start, fname)
            for i in range(head, start):
                owner[i] = k
            spans[k][0] = head
        self._check_previous(spans)

        extra = self._private_constants(label_at, len(bodies))
        units: list[Unit] = []
        restore: list[str] = []
        for k, (start, end, fname) in enumerate(bodies):
            main = range(spans[k][0], spans[k][1])
            pieces = sorted(extra.get(k, []) + [main], key=lambda r: r.start)
            text = "".join(self._piece_text(r, pieces[p - 1] if p else None) for p, r in enumerate(pieces))
            units.append(Unit(fname, pieces, pieces.index(main), text))
            restore.append(self.before[main.stop].text)
        return cls(lines, units, _restore=restore, _defs=defs)

    def _head(self, start: int, fname: str) -> int:
        """First line of the function's head, walking back from its label."""
        j = start - 1
        switched = False
        while j >= 0 and self.owner[j] == -1 and self._is_head_line(j, fname, switched):
            switched = switched or self.is_setter[j]
            j -= 1
        return j + 1

    def _is_head_line(self, j: int, fname: str, switched: bool) -> bool:
        labels, ops = self.labels[j], self.ops[j]
        if labels:
            return not ops and all(_HEAD_LABEL_RE.match(label) for label in labels)
        if len(ops) != 1:
            return False
        name, args = ops[0]
        if name in _SECTION_SETTERS:
            return True
        if name in _ALIGN:
            # An alignment before the function's section switch pads the section the frame
            # was in, not the function: it stays in the frame.
            return not switched
        if name in _SYMBOL:
            return args == fname
        if name == ".type":
            sym, kind = _type_args(args)
            return sym == fname and kind in _FUNCTION_TYPES
        return False

    def _tail(self, j: int, fname: str) -> int:
        """End (exclusive) of the cold-part bookkeeping gcc emits after ``.size fname``.

        Section switches belong to the tail only when one of its items follows them; a
        trailing switch leading to anything else (the next function, data) stays in the frame.
        """
        stop = j
        while j < self.n and self.owner[j] == -1:
            labels, ops = self.labels[j], self.ops[j]
            if self.is_setter[j]:
                j += 1
                continue
            if labels and not ops and all(_TAIL_LABEL_RE.match(label) for label in labels):
                item = True
            elif not labels and len(ops) == 1 and ops[0][0] == ".size":
                m = _SIZE_SELF_RE.match(ops[0][1])
                item = bool(
                    m
                    and m.group(1) == m.group(2)
                    and _COLD_RE.search(m.group(1))
                    and _COLD_RE.sub("", m.group(1)) == fname
                )
            else:
                item = False
            if not item:
                break
            j += 1
            stop = j
        return stop

    def _check_previous(self, spans: list[list[int]]) -> None:
        """Refuse files where a ``.previous`` depends on a section set across a unit boundary.

        A replaced unit ends with a restoring ``.section`` line, which changes what
        "previous" means for the frame after it; the same holds inside a unit whose text
        starts with a synthesized directive.
        """
        if not self.previous_uses:
            return
        starts = sorted(s[0] for s in spans)
        for at, since in self.previous_uses:
            if since < 0:
                raise _Unsure(".previous without a known previous section")
            if self.owner[at] != self.owner[since]:
                raise _Unsure(".previous across a unit boundary")
            if self.owner[at] == -1 and bisect.bisect_right(starts, at) != bisect.bisect_right(starts, since):
                raise _Unsure(".previous across a unit")

    def _private_constants(self, label_at: dict[str, list[int]], count: int) -> dict[int, list[range]]:
        """``.LC<n>`` blocks in read-only frame sections that exactly one unit refers to."""
        owner, labels, ops = self.owner, self.labels, self.ops
        candidates: dict[str, int] = {}
        for label, where in label_at.items():
            if len(where) == 1 and _LC_RE.match(label):
                i = where[0]
                if owner[i] == -1 and labels[i] == (label,) and not ops[i] and self.before[i].name.startswith(".rodata"):
                    candidates[label] = i
        if not candidates or not count:
            return {}
        users: dict[str, set[int]] = {label: set() for label in candidates}
        for i, line in enumerate(self.lines):
            if ".LC" not in line:
                continue
            for stmt in lex.statements(line):
                for token in _TOKEN_RE.findall(lex.blank_strings(stmt)):
                    if token in users and i != candidates[token]:
                        users[token].add(owner[i])  # -1: a frame line refers to it
        extra: dict[int, list[range]] = {}
        for label, i in candidates.items():
            who = users[label]
            if len(who) != 1 or -1 in who:
                continue
            block = self._constant_block(i)
            if block is not None:
                extra.setdefault(next(iter(who)), []).append(block)
        return extra

    def _constant_block(self, i: int) -> range | None:
        """Alignment + label + data of the constant labelled at line ``i``, if unambiguous."""
        owner, labels, ops, n = self.owner, self.labels, self.ops, self.n

        def alignment(j: int) -> bool:
            return owner[j] == -1 and not labels[j] and len(ops[j]) == 1 and ops[j][0][0] in _ALIGN

        start = i
        while start > 0 and alignment(start - 1):
            start -= 1
        # A bare label right before names the same bytes; moving them would strand it.
        if start > 0 and labels[start - 1] and not ops[start - 1]:
            return None
        stop = i + 1
        while stop < n and owner[stop] == -1 and not labels[stop] and ops[stop] and all(o[0] in _DATA for o in ops[stop]):
            stop += 1
        if stop == i + 1:
            return None
        # What follows must start something else (a label, a section switch, the end of the
        # file); more data in between would belong to this constant without being in its block.
        j = stop
        while j < n:
            if labels[j] or self.is_setter[j]:
                break
            if owner[j] != -1:
                return None
            if ops[j] and any(o[0] in _SECTION_STATEFUL for o in ops[j]):
                break
            if ops[j] and not all(o[0] in _SILENT or o[0] in _ALIGN for o in ops[j]):
                return None
            j += 1
        return range(start, stop)

    def _piece_text(self, piece: range, before: range | None) -> str:
        text = "".join(self.lines[piece.start : piece.stop])
        if not text.endswith("\n"):
            text += "\n"
        # A piece that continues the one before it is already in the right section.
        if not self.is_setter[piece.start] and not (before is not None and before.stop == piece.start):
            text = self.before[piece.start].text + text
        return text


def _own_line(line: str) -> str:
    return line if line.endswith("\n") else line + "\n"
