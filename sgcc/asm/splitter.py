"""Finding the function units of an assembly file: the line-level work behind
:meth:`sgcc.asm.units.AsmFile.parse`.

One pass analyses every line (:mod:`sgcc.asm.lex`), follows the section in force before each
line, then finds each function's body (``NAME:`` to ``.size NAME, .-NAME``), its head (section
switch, alignment, symbol directives, ``.LCOLDB``/``.LHOTB`` labels), its tail (the cold
partition's bookkeeping) and the read-only ``.LC`` constants only it uses. Whatever cannot be
split with confidence raises :class:`Unsure`; the caller then keeps the whole file as frame.

Standard library only, like :mod:`sgcc.asm.units` (the compile path imports both).
"""

from __future__ import annotations

import bisect
import re

from sgcc.asm import lex

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
DEFINERS = frozenset({".set", ".equ", ".equiv", ".eqv"})

_SIZE_SELF_RE = re.compile(r"([^\s,]+)\s*,\s*\.\s*-\s*([^\s,]+)$")
_COLD_RE = re.compile(r"\.cold(?:\.\d+)?$")
_HEAD_LABEL_RE = re.compile(r"\.L(?:COLDB|HOTB)\d+$")
_TAIL_LABEL_RE = re.compile(r"\.L(?:COLDE|HOTE)\d+$")
_LC_RE = re.compile(r"\.LC\d+$")


def type_args(args: str) -> tuple[str, str]:
    """``"sym, kind"`` (``.type``, ``.set`` arguments) -> ``("sym", "kind")``."""
    name, _, kind = args.partition(",")
    return name.strip(), kind.strip()


class _Section:
    """A section the assembler can be in, and the directive line that switches to it."""

    __slots__ = ("name", "text")

    def __init__(self, name: str, text: str):
        self.name = name
        self.text = text


_DEFAULT_SECTION = _Section(".text", "\t.text\n")


class Unsure(Exception):
    """The file does not look like something this module can split safely."""


# --------------------------------------------------------------------------- splitting


class Splitter:
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

    def split(self) -> tuple[list[tuple[str, list[range], int, str]], list[str], dict[str, list[int]]]:
        """The units, as (name, pieces, index of the main piece, text) in file order; per unit
        the directive line that restores the section after its main piece; and the lines
        that define each ``.L`` symbol. Raises :class:`Unsure`."""
        labels, ops, n = self.labels, self.ops, self.n
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
                    sym, kind = type_args(args)
                    if kind in _FUNCTION_TYPES:
                        functions.setdefault(sym, i)
                elif name == ".size":
                    m = _SIZE_SELF_RE.match(args)
                    if m and m.group(1) == m.group(2):
                        sizes.setdefault(m.group(1), []).append(i)
                elif name in DEFINERS or name == "=":
                    sym = args if name == "=" else type_args(args)[0]
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
                raise Unsure(f"{fname} defined twice")
            start = where[0]
            end = next((s for s in sizes.get(fname, ()) if s > start), None)
            if end is not None:
                bodies.append((start, end, fname))
        bodies.sort()
        for (_, end0, _), (start1, _, _) in zip(bodies, bodies[1:]):
            if start1 <= end0:
                raise Unsure("functions overlap")
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
                    around = bodies[holder][2] if holder >= 0 else None
                    if around != parent and (around is not None or any(b[2] == parent for b in bodies)):
                        raise Unsure(f"{fname} is not inside {parent}")
                elif holder >= 0 and bodies[holder][2] != fname:
                    raise Unsure(f"{fname} is inside {bodies[holder][2]}")

        owner = self.owner
        spans: list[list[int]] = []
        for k, (start, end, _fname) in enumerate(bodies):
            for i in range(start, end + 1):
                owner[i] = k
            spans.append([start, end + 1])
        for k, (_start, end, fname) in enumerate(bodies):
            stop = self._tail(end + 1, fname)
            for i in range(end + 1, stop):
                owner[i] = k
            spans[k][1] = stop
        for k, (start, _end, fname) in enumerate(bodies):
            head = self._head(start, fname)
            for i in range(head, start):
                owner[i] = k
            spans[k][0] = head
        self._check_previous(spans)

        extra = self._private_constants(label_at, len(bodies))
        for k, blocks in self._private_label_tables(label_at, bodies).items():
            extra.setdefault(k, []).extend(blocks)
        units: list[tuple[str, list[range], int, str]] = []
        restore: list[str] = []
        for k, (_start, _end, fname) in enumerate(bodies):
            main = range(spans[k][0], spans[k][1])
            pieces = sorted(extra.get(k, []) + [main], key=lambda r: r.start)
            text = "".join(self._piece_text(r, pieces[p - 1] if p else None) for p, r in enumerate(pieces))
            units.append((fname, pieces, pieces.index(main), text))
            restore.append(self.before[main.stop].text)
        return units, restore, defs

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
            sym, kind = type_args(args)
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
                raise Unsure(".previous without a known previous section")
            if self.owner[at] != self.owner[since]:
                raise Unsure(".previous across a unit boundary")
            if self.owner[at] == -1 and bisect.bisect_right(starts, at) != bisect.bisect_right(starts, since):
                raise Unsure(".previous across a unit")

    def _private_constants(self, label_at: dict[str, list[int]], count: int) -> dict[int, list[range]]:
        """``.LC<n>`` blocks in read-only frame sections that exactly one unit refers to."""
        owner, labels, ops = self.owner, self.labels, self.ops
        candidates: dict[str, int] = {}
        for label, where in label_at.items():
            if len(where) == 1 and _LC_RE.match(label):
                i = where[0]
                if (owner[i] == -1 and labels[i] == (label,) and not ops[i]
                        and self.before[i].name.startswith(".rodata")):
                    candidates[label] = i
        if not candidates or not count:
            return {}
        users: dict[str, set[int]] = {label: set() for label in candidates}
        for i, line in enumerate(self.lines):
            if ".LC" not in line:
                continue
            for stmt in lex.statements(line):
                for token in lex.TOKEN_RE.findall(lex.blank_strings(stmt)):
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

    def _private_label_tables(self, label_at: dict[str, list[int]],
                              bodies: list[tuple[int, int, str]]) -> dict[int, list[range]]:
        """Label-address tables (computed goto's ``static void *const t[] = {&&a, ...}``) in
        read-only frame sections (``.rodata*``, and ``.data.rel.ro*``, which the dynamic
        loader makes read-only after relocating it) whose entries all name ``.L`` labels of
        one function and whose name only that function's code refers to: they travel with
        the function, so a replacement brings its own table (its own labels). Writable
        tables, tables shared by two functions or referred to from anywhere else (a global,
        another table) stay in the frame; the function's labels are then referenced from
        outside it and it is not searched. Debug information naming the table (the static
        variable's location under ``-g``) does not keep it in the frame: the replacement's
        table has the same name, so the debugger finds the table the new code uses."""
        owner, labels, ops = self.owner, self.labels, self.ops
        unit_labels: dict[str, int] = {}
        for k, (start, end, _fname) in enumerate(bodies):
            for i in range(start, end + 1):
                for label in labels[i]:
                    if label.startswith(".L"):
                        unit_labels[label] = k
        found: dict[str, tuple[int, int]] = {}  # table name -> (its label line, the unit)
        for label, where in label_at.items():
            if len(where) != 1 or label.startswith(".L") or _LC_RE.match(label):
                continue
            i = where[0]
            section = self.before[i].name
            if owner[i] != -1 or labels[i] != (label,) or ops[i] or \
                    not (section.startswith(".rodata") or section.startswith(".data.rel.ro")):
                continue
            users: set[int] = set()
            j = i + 1
            while j < self.n and owner[j] == -1 and not labels[j] and ops[j] and all(o[0] in _DATA for o in ops[j]):
                for _name, args in ops[j]:
                    for token in lex.TOKEN_RE.findall(lex.blank_strings(args)):
                        users.add(unit_labels.get(token, -1))
                j += 1
            if j > i + 1 and len(users) == 1 and -1 not in users:
                found[label] = (i, next(iter(users)))
        if not found:
            return {}
        referrers: dict[str, set[int]] = {label: set() for label in found}
        for i, line in enumerate(self.lines):
            if not any(label in line for label in found):
                continue
            if owner[i] == -1 and self.before[i].name.startswith(".debug"):
                # The table variable's DWARF location (DW_OP_addr) under -g: debug sections
                # are never loaded, and the replacement's table keeps the name it names.
                continue
            for stmt in lex.statements(line):
                for token in lex.TOKEN_RE.findall(lex.blank_strings(lex.strip_labels(stmt))):
                    if token in referrers and not (owner[i] == -1 and self._own_bookkeeping(i, token)):
                        referrers[token].add(owner[i])
        extra: dict[int, list[range]] = {}
        for label, (i, k) in found.items():
            if referrers[label] != {k}:
                continue
            block = self._constant_block(i, own=label)
            if block is not None:
                extra.setdefault(k, []).append(block)
        return extra

    def _own_bookkeeping(self, i: int, name: str) -> bool:
        """Whether line ``i`` is only ``.type NAME``/``.size NAME``/``.local NAME``."""
        return not self.labels[i] and len(self.ops[i]) == 1 and self.ops[i][0][0] in (".type", ".size", ".local") \
            and type_args(self.ops[i][0][1])[0] == name

    def _constant_block(self, i: int, own: str = "") -> range | None:
        """Alignment + label + data of the constant labelled at line ``i``, if unambiguous."""
        owner, labels, ops, n = self.owner, self.labels, self.ops, self.n

        def alignment(j: int) -> bool:
            # A named object's own .type/.size/.local lines come with it.
            return owner[j] == -1 and not labels[j] and len(ops[j]) == 1 and (
                ops[j][0][0] in _ALIGN or (bool(own) and self._own_bookkeeping(j, own)))

        start = i
        while start > 0 and alignment(start - 1):
            start -= 1
        # A bare label right before names the same bytes; moving them would strand it.
        if start > 0 and labels[start - 1] and not ops[start - 1]:
            return None
        stop = i + 1
        while (stop < n and owner[stop] == -1 and not labels[stop] and ops[stop]
               and all(o[0] in _DATA for o in ops[stop])):
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
