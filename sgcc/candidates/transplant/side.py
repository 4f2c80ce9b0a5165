"""One compilation of a translation unit, as the transplant sees it: units, symbols, data
blocks, the callers of each function and what each may clobber."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc.asm import lex
from sgcc.asm.units import AsmFile
from sgcc.candidates.transplant.asmtext import (
    ALIGN_DIRECTIVES,
    DATA_DIRECTIVES,
    DEFINERS,
    REF_RE,
    compiler_made,
    defined_labels,
    needs_aligned_stack,
    references,
    statements,
    table_refs,
)

if TYPE_CHECKING:
    from sgcc.verify.static.clobbers import ClobberAnalysis

_BOOKKEEPING = frozenset(".type .size .globl .global .weak .local .hidden .protected .internal".split())
_OBJECT_RE = re.compile(r"^\s*\.type\s+([^\s,]+)\s*,\s*@object", re.M)


@dataclass
class DataSymbol:
    """A label of the frame (data, not a function) and the section it is in."""

    name: str
    line: int  # the label's line
    section: str  # section name
    decl: str  # a directive line that switches to the section standalone


class Side:
    """One compilation of the translation unit: its text, units, symbols and object."""

    def __init__(self, text: str, *, obj: Path | None = None, asm: AsmFile | None = None):
        self.text = text
        self.asm = asm if asm is not None else AsmFile.parse(text)
        self.lines = self.asm.lines
        self.obj = obj
        self.units = {u.name: u for u in self.asm.units}
        self.functions: set[str] = set()
        self.globals: set[str] = set()
        self.commons: set[str] = set()
        self.aliases: set[str] = set()
        self.alias_lines: dict[str, str] = {}  # ".set X, Y" lines of the frame, by X
        self.data: dict[str, DataSymbol] = {}
        self.tokens: set[str] = set()
        self._scan()
        self._clobbers: ClobberAnalysis | None = None
        self._clobber_cache: dict[tuple[str, bool], frozenset[str]] = {}
        self._escaping: dict[str, tuple[set[str], set[str]]] = {}
        self.same_as_base: dict[str, bool] = {}  # memo of _same_in_base (a variant's side)
        #: Whether this compilation's functions of internal linkage may have a calling
        #: convention of their own under their source name (clang: LLVM drops dead arguments
        #: and unused results and promotes pointer arguments without renaming; gcc makes a
        #: dotted clone instead). See :meth:`own_convention`.
        self.local_abi = False
        #: Whether this compilation's callers assume nothing of a callee but the ABI (clang:
        #: no interprocedural register allocation, the stack aligned at every call), so any
        #: callee that keeps the ABI may stand in for its own.
        self.callers_assume_abi = False
        #: Whether this compilation's callers keep no register live across a call beyond what
        #: the ABI preserves (gcc under ``-fno-ipa-ra``): unlike :attr:`callers_assume_abi`, its
        #: callers may still call a callee that needs no aligned stack with a misaligned one.
        self.no_ipa_ra = False
        self._address_taken: set[str] | None = None
        from sgcc.candidates.transplant import debuginfo

        #: ``.file N "path"`` numbers of a -g compilation (number -> path), and whether it is one
        self.file_table = debuginfo.file_table(self.lines)
        self.has_debug = bool(self.debug_lines) or debuginfo.has_debug(text)

    def _scan(self) -> None:
        owned: set[int] = set()
        for u in self.asm.units:
            for piece in u.pieces:
                owned.update(range(piece.start, piece.stop))
        self.owned = owned
        self.debug_lines: set[int] = set()  # frame lines in .debug_* sections
        decl: dict[str, str] = {}
        cur = (".text", "\t.text\n")
        prev = cur
        stack = []
        for i, line in enumerate(self.lines):
            labels, ops = lex.analyze(line)
            if i not in owned:
                for lab in labels:
                    self.data.setdefault(lab, DataSymbol(lab, i, cur[0], cur[1]))
            for name, args in ops:
                if name in (".text", ".data", ".bss"):
                    prev, cur = cur, (name, f"\t{name}\n")
                elif name in (".section", ".pushsection"):
                    sname = lex.section_name(args)
                    if "," in args:
                        decl.setdefault(sname, f"\t.section\t{args}\n")
                    if name == ".pushsection":
                        stack.append(cur)
                    prev, cur = cur, (sname, decl.get(sname, f"\t.section\t{args}\n"))
                elif name == ".popsection":
                    if stack:
                        cur = stack.pop()
                elif name == ".previous":
                    prev, cur = cur, prev
                elif name == ".type":
                    sym, _, kind = args.partition(",")
                    if kind.strip() in ("@function", "%function"):
                        self.functions.add(sym.strip())
                elif name in (".globl", ".global", ".weak"):
                    self.globals.add(args.strip())
                elif name in (".comm", ".lcomm"):
                    self.commons.add(args.partition(",")[0].strip())
                elif name in DEFINERS:
                    sym = args.partition(",")[0].strip()
                    self.aliases.add(sym)
                    if i not in owned and len(ops) == 1 and not labels:
                        self.alias_lines.setdefault(sym, line if line.endswith("\n") else line + "\n")
                elif name == "=":
                    self.aliases.add(args)
            if i not in owned and cur[0].startswith((".debug", ".zdebug")):
                self.debug_lines.add(i)
            for stmt in statements(line):
                self.tokens.update(REF_RE.findall(stmt))
        for f in self.functions:
            self.data.pop(f, None)

    def own_convention(self, name: str) -> bool:
        """Whether function ``name`` may be called otherwise than its C declaration says: a
        compiler-made clone, or (:attr:`local_abi`) a function of internal linkage whose
        address this compilation never takes (a function reached through a pointer keeps
        the C convention)."""
        if compiler_made(name):
            return True
        return self.local_abi and name not in self.globals and name not in self.address_taken()

    def address_taken(self) -> set[str]:
        """Functions whose address something in this compilation takes (anything but a
        direct call or tail jump naming it: ``lea f(%rip)``, ``.quad f``)."""
        if self._address_taken is None:
            taken: set[str] = set()
            for line in self.lines:
                for stmt in statements(line):
                    stmt = lex.strip_labels(stmt)
                    if not stmt:
                        continue
                    parts = stmt.split(None, 1)
                    word, rest = parts[0].lower(), parts[1] if len(parts) > 1 else ""
                    if word in _BOOKKEEPING or word.startswith(".cfi"):
                        continue
                    found = set(REF_RE.findall(rest)) & self.functions
                    if word in ("call", "callq", "jmp", "jmpq") and not rest.lstrip().startswith("*"):
                        found -= {rest.strip().split("@")[0]}
                    taken |= found
            self._address_taken = taken
        return self._address_taken

    def reaches(self, name: str) -> set[str]:
        """The functions of this compilation unit ``name`` calls or tail-jumps to, directly or
        through the ones it reaches (by the text: calls through pointers are not followed)."""
        if not hasattr(self, "_reaches"):
            self._reaches: dict[str, set[str]] = {}
        if name not in self._reaches:
            seen: set[str] = set()
            todo = [name]
            while todo:
                unit = self.units.get(todo.pop())
                if unit is None:
                    continue
                _refs, calls, tails = references(unit.text)
                for callee in (calls | tails) - seen:
                    parent = re.sub(r"\.cold(?:\.\d+)?$", "", callee)
                    if parent in self.units:
                        seen.add(parent)
                        todo.append(parent)
            self._reaches[name] = seen
        return self._reaches[name]

    def defines(self, name: str) -> bool:
        return name in self.functions or name in self.data or name in self.commons or name in self.aliases

    def writable(self, name: str) -> bool:
        if name in self.commons:
            return True
        d = self.data.get(name)
        return d is not None and not d.section.startswith(".rodata")

    def numbered_siblings(self, base: str) -> int:
        pat = re.compile(re.escape(base) + r"\.\d+$")
        names = set(self.data) | self.commons
        return sum(1 for n in names if pat.match(n))

    def clobbers(self, name: str, assumed: bool = False) -> frozenset | None:
        """Transitive caller-saved clobber set of function ``name`` (None: cannot tell):
        what its code may write (erring high), or with ``assumed`` what gcc's callers in this
        compilation assumed it writes (erring low); see :meth:`sgcc.verify.static.clobbers.ClobberAnalysis.direct`."""
        if self.obj is None:
            return None
        key = (name, assumed)
        if key not in self._clobber_cache:
            from sgcc.verify.static import clobbers

            try:
                if self._clobbers is None:
                    self._clobbers = clobbers.ClobberAnalysis(self.obj)
                analysis = self._clobbers
                if name not in analysis.functions:
                    return None
                self._clobber_cache[key] = analysis.clobbers(name, assumed)
            except Exception:  # noqa: BLE001 - unsure means "cannot tell"
                return None
        return self._clobber_cache[key]

    @property
    def clobber_analysis(self) -> ClobberAnalysis | None:
        """The object's clobber analysis, once :meth:`clobbers` has made it (None before,
        or where it could not be made)."""
        return self._clobbers

    def escaping_labels(self, name: str) -> set[str]:
        """Labels of unit ``name`` that something outside the unit other than debug
        information refers to (label tables of another function, a ``.set`` alias)."""
        return self._outside_refs(name)[0]

    def debug_labels(self, name: str) -> set[str]:
        """Labels and location views of unit ``name`` that the debug sections refer to (the
        function's extent, variable locations, lexical blocks...): see
        :mod:`sgcc.candidates.transplant.debuginfo`."""
        return self._outside_refs(name)[1]

    def _outside_refs(self, name: str) -> tuple[set[str], set[str]]:
        if name not in self._escaping:
            from sgcc.candidates.transplant.debuginfo import view_symbols

            unit = self.units[name]
            inside: set[int] = set()
            for piece in unit.pieces:
                inside.update(range(piece.start, piece.stop))
            mine = {lab for lab in defined_labels(unit.text) | view_symbols(unit.text) if lab.startswith(".L")}
            # Objects that travel with the unit (its label tables): under -g the static
            # variable's DWARF location names them (DW_OP_addr table.1).
            objects = set(_OBJECT_RE.findall(unit.text)) & defined_labels(unit.text)
            mine |= objects
            outside: set[str] = set()
            debug: set[str] = set()
            if mine:
                for i, line in enumerate(self.lines):
                    if i in inside or (".L" not in line and not any(o in line for o in objects)):
                        continue
                    found = (debug if i in self.debug_lines else outside)
                    for stmt in statements(line):
                        found.update(t for t in REF_RE.findall(lex.strip_labels(stmt)) if t in mine)
            self._escaping[name] = (outside, debug)
        return self._escaping[name]

    def needs_aligned_stack(self, name: str) -> bool:
        """:func:`needs_aligned_stack` for unit ``name``, knowing its label tables."""
        text = self.units[name].text
        refs = references(text)[0]
        tables = any(r.startswith(".L") and r not in self.data for r in table_refs(text))
        if not tables:
            for r in refs:
                block = self.object_block(r) if r in self.data and not r.startswith(".L") else None
                if block and any(x.startswith(".L") and x not in self.data for x in references(block)[0]):
                    tables = True
                    break
        return needs_aligned_stack(text, tables=tables)

    def callers(self, name: str) -> tuple[list[str], list[str]]:
        """Units that call ``name`` directly, and units that reach it by a tail jump (it then
        runs on the stack its tail caller was given). Calls through a pointer (its address
        taken here, or calls from other files) know nothing of the callee and keep the ABI's
        alignment and registers, so they need no list."""
        direct, tail = [], []
        for u in self.asm.units:
            if u.name == name:
                continue
            _refs, calls, tails = references(u.text)
            if name in calls:
                direct.append(u.name)
            if name in tails:
                tail.append(u.name)
        return direct, tail

    def data_block(self, name: str) -> str | None:
        """The text of read-only object ``name`` (section directive, alignment, bookkeeping,
        label and data), or None when it cannot be cut out unambiguously."""
        d = self.data.get(name)
        if d is None or not d.section.startswith(".rodata"):
            return None
        return self.object_block(name)

    def object_block(self, name: str) -> str | None:
        """Like :meth:`data_block` for an object in any section."""
        d = self.data.get(name)
        if d is None:
            return None
        lines = self.lines
        start = d.line
        while start > 0 and (start - 1) not in self.owned:
            labels, ops = lex.analyze(lines[start - 1])
            if labels or len(ops) != 1:
                break
            op, args = ops[0]
            own = op in (".type", ".size", ".local") and args.partition(",")[0].strip() == name
            if op in ALIGN_DIRECTIVES or own:
                start -= 1
                continue
            break
        labels, ops = lex.analyze(lines[d.line])
        if labels != (name,) or any(op not in DATA_DIRECTIVES for op, _ in ops):
            return None
        on_label_line = bool(ops)
        stop = d.line + 1
        while stop < len(lines) and stop not in self.owned:
            labels, ops = lex.analyze(lines[stop])
            if labels or not ops or any(op not in DATA_DIRECTIVES for op, _ in ops):
                break
            stop += 1
        if stop == d.line + 1 and not on_label_line:
            return None  # a label with no data of its own (another label names the bytes)
        return d.decl + "".join(lines[start:stop])
