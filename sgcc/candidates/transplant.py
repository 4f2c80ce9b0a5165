"""Moving function units from another gcc compilation of the same file into the baseline.

The variant and profile-guided generators compile the translation unit again under other
flags and offer each function's unit from that compilation as a candidate for the
baseline's unit of the same name. A unit's text is not self-contained, and the two
compilations name things independently:

* local labels and constants (``.L5``, ``.LC3``): the numbers differ between compilations,
  so a variant's ``.LC3`` may be another constant than the baseline's ``.LC3``;
* compiler clones (``f.constprop.0``, ``f.isra.0``, ``f.part.0``): the same name may be a
  different specialization (other constants propagated, other parameters removed, another
  split), or not exist at all on the other side;
* functions inlined on one side and not the other, static functions removed;
* compiler-made read-only tables (``CSWTCH.12``) and numbered static locals (``buf.0``);
* interprocedural assumptions: with ``-fipa-ra`` a caller keeps values in caller-saved
  registers its callee (as compiled *there*) leaves alone, and with ``-fipa-stack-alignment``
  a caller may call a callee that needs no aligned stack with a misaligned one.

:func:`transplant` builds a candidate that needs no luck to link and keeps what both sides
assumed: the variant's unit, plus private copies (under fresh names) of everything it
relies on that the baseline does not provide with the same meaning -- constants the
variant shares between functions, compiler tables, clones, and callees whose baseline
version breaks an assumption the variant's caller made. References that mean the same on
both sides (user functions, global and static variables with unambiguous names, the C
library) are kept. When that is not possible (writable data the baseline lacks or names
ambiguously, a symbol the baseline does not have, baseline labels referenced from outside
the unit such as debug information, inline asm) the unit is not offered alone and the
generator may offer the whole variant translation unit instead.

Only gcc's own output is handled here (the generators compile it themselves); the engine
still screens, assembles, checks, links, tests and times every candidate.
"""

from __future__ import annotations

import hashlib
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from sgcc import proc
from sgcc.asm.units import AsmFile, _analyze, _section_name, _split_lines
from sgcc.candidates import WHOLE_UNIT, Candidate, Generator

#: Symbol references inside a statement: identifiers not part of a register (``%rax``), a
#: relocation operator (``@PLT``) or a number (``0x10``, ``1b``); ``$`` is the immediate
#: prefix (``movl $.LC0, %edi``), not part of the name.
_REF_RE = re.compile(r"(?<![%@\w.])([A-Za-z_.][\w.$]*)")
_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACES_RE = re.compile(r"\{[^}]*\}")
_PREFIXES = frozenset("lock rep repe repz repne repnz notrack bnd data16 addr32 rex64 cs ds es fs gs ss".split())
_DATA_DIRECTIVES = frozenset(
    ".byte .2byte .4byte .8byte .short .hword .value .word .int .long .quad .octa .zero .skip .space "
    ".string .ascii .asciz .float .single .double .sleb128 .uleb128 .dc.a .base64".split()
)
_ALIGN_DIRECTIVES = frozenset(".align .p2align .balign".split())
_DEFINERS = frozenset(".set .equ .equiv".split())
#: Directives whose arguments never name a symbol the code depends on.
_META_DIRECTIVES = frozenset(
    ".section .text .data .bss .previous .pushsection .popsection .file .ident .loc .type .size "
    ".globl .global .local .weak .hidden .protected .internal .string .ascii .asciz .p2align "
    ".align .balign".split()
)
#: Compiler-made read-only objects no C code can name: copying them privately is exact.
_COMPILER_DATA_RE = re.compile(r"^(?:\.L.*|CSWTCH\.\d+|C\.\d+(?:\.\d+)*|__func__\.\d+|__PRETTY_FUNCTION__\.\d+)$")
_NUMBERED_RE = re.compile(r"^(.+)\.(\d+)$")
_COLD_RE = re.compile(r"\.cold(?:\.\d+)?$")
_VECTOR_RE = re.compile(r"%[xyz]mm\d")
_STACK_MEM_RE = re.compile(r"\(%r[sb]p\b")
_ALIGNED_MOVE_RE = re.compile(r"^\s*v?mov(?:aps|apd|dqa|dqa32|dqa64|ntdq|ntps|ntpd)\b")


def compiler_made(name: str) -> bool:
    """C identifiers have no dots: a dotted function name is a clone or part gcc made."""
    return "." in name


def _statements(line: str) -> list[str]:
    """Statements of a line without comments, labels kept (strings blanked)."""
    text = _STRING_RE.sub('""', line)
    if "#" in text:
        text = text[: text.index("#")]
    return [s.strip() for s in text.split(";") if s.strip()]


def _strip_labels(stmt: str) -> str:
    while True:
        m = re.match(r"([A-Za-z_.$][\w.$]*|\d+)[ \t]*:(?!=)", stmt)
        if not m:
            return stmt
        stmt = stmt[m.end():].lstrip()


def references(text: str) -> tuple[set[str], set[str], set[str]]:
    """Symbols ``text`` refers to: (all references, direct call targets, tail-call targets).

    Instruction operands and data directives (``.long .L5-.L4``, ``.quad f``) count;
    mnemonics, registers, relocation operators, section names and the symbols named by
    bookkeeping directives (``.type``, ``.size``, ``.globl``...) do not.
    """
    refs: set[str] = set()
    calls: set[str] = set()
    tails: set[str] = set()
    for line in _split_lines(text):
        for stmt in _statements(line):
            stmt = _strip_labels(stmt)
            if not stmt:
                continue
            if stmt.startswith("."):
                name = stmt.split(None, 1)[0].lower()
                if name in _META_DIRECTIVES or name.startswith(".cfi_"):
                    continue
                if name in _DEFINERS:
                    args = stmt.split(None, 1)[1] if " " in stmt or "\t" in stmt else ""
                    refs.update(_REF_RE.findall(args.partition(",")[2]))
                    continue
                rest = stmt[len(name):]
                refs.update(_REF_RE.findall(rest))
                continue
            words = stmt.split(None, 1)
            while words and words[0].lower() in _PREFIXES and len(words) > 1:
                words = words[1].split(None, 1)
            if not words:
                continue
            mnemonic = words[0].lower()
            # AVX-512 decorations ({%k1}, {z}, {1to8}, {sae}) name no symbol.
            operands = _BRACES_RE.sub("", words[1]) if len(words) > 1 else ""
            found = _REF_RE.findall(operands)
            refs.update(found)
            if found and not operands.lstrip().startswith("*"):
                if mnemonic in ("call", "callq"):
                    calls.add(found[0])
                elif mnemonic in ("jmp", "jmpq"):
                    tails.add(found[0])
    return refs, calls, {t for t in tails if not t.startswith(".L")}


def defined_labels(text: str) -> set[str]:
    """Every label and ``.set``-style symbol ``text`` defines."""
    out: set[str] = set()
    for line in _split_lines(text):
        labels, ops = _analyze(line)
        out.update(labels)
        for name, args in ops:
            if name in _DEFINERS:
                out.add(args.partition(",")[0].strip())
            elif name == "=":
                out.add(args)
    return out


def normalized(text: str) -> str:
    """``text`` with local labels renumbered by first appearance and bookkeeping dropped:
    two units that only differ in gcc's label numbering compare equal."""
    mapping: dict[str, str] = {}

    def sub(m: re.Match) -> str:
        return mapping.setdefault(m.group(0), f".L_{len(mapping)}")

    out = []
    for line in _split_lines(text):
        s = line.strip()
        if not s or s.startswith(("#", ".cfi_", ".loc", ".file")):
            continue
        out.append(re.sub(r"\.L[\w.$]+", sub, s))
    return "\n".join(out)


# --------------------------------------------------------------------------- alignment

def needs_aligned_stack(text: str, *, tables: bool = False) -> bool:
    """Over-approximation: may this code need a 16-byte aligned stack on entry?

    Calls (the callee or the C library may need it), tail jumps to other functions (they
    pass the stack on), vector accesses to the stack, a pointer into the stack next to any
    vector memory access, and stack realignment all count. An indirect ``jmp *`` counts as
    a tail call unless ``tables`` says the code dispatches through label tables (switch
    jump tables, computed goto).
    """
    lea_stack = False
    vector_mem = False
    for line in _split_lines(text):
        s = line.strip()
        if not s or s[0] in ".#" or s.endswith(":"):
            continue
        word = s.split(None, 1)[0].lower()
        if word in _PREFIXES:
            word = (s.split(None, 2) + [""])[1].lower()
        if word.startswith("call") or (word.startswith("jmp") and "*" in s and not tables):
            return True
        if word.startswith("jmp") and "*" not in s:
            target = s.split(None, 1)[1].strip() if " " in s or "\t" in s else ""
            if target and not target.startswith(".L"):
                return True
        if "%rsp" in s and word.startswith("and"):
            return True
        if _VECTOR_RE.search(s) and "(" in s:
            if _STACK_MEM_RE.search(s):
                return True
            if "(%rip)" not in s:
                vector_mem = True
        if word.startswith("lea") and _STACK_MEM_RE.search(s):
            lea_stack = True
    return lea_stack and vector_mem


def surely_aligns_calls(text: str, local_functions) -> bool:
    """Under-approximation: did gcc surely give this function a 16-byte preferred stack
    boundary (so its callers align the stack for it)? True when it calls a function whose
    body gcc did not know (the C library, a pointer) or keeps 16-byte aligned vectors on the
    stack."""
    _refs, calls, _tails = references(text)
    if any(c not in local_functions for c in calls):
        return True
    for line in _split_lines(text):
        s = line.strip()
        if re.match(r"^(?:call|callq)\s+\*", s):
            return True
        if _ALIGNED_MOVE_RE.match(s) and _STACK_MEM_RE.search(s):
            return True
    return False


def _table_refs(text: str) -> set[str]:
    """Labels named by data directives in ``text`` (jump tables: ``.long .L5-.L4``)."""
    out: set[str] = set()
    for line in _split_lines(text):
        s = line.strip()
        if s.startswith((".long", ".quad", ".4byte", ".8byte")) and ".L" in s:
            out.update(_REF_RE.findall(s.split(None, 1)[1]))
    return out


# --------------------------------------------------------------------------- one file's symbols

@dataclass
class DataSymbol:
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
        self._clobbers = None
        self._clobber_cache: dict[str, frozenset] = {}
        self._escaping: dict[str, set[str]] = {}
        self.same_as_base: dict[str, bool] = {}  # memo of _same_in_base (a variant's side)

    def _scan(self) -> None:
        owned = set()
        for u in self.asm.units:
            for piece in u.pieces:
                owned.update(range(piece.start, piece.stop))
        self.owned = owned
        decl: dict[str, str] = {}
        cur = (".text", "\t.text\n")
        prev = cur
        stack = []
        for i, line in enumerate(self.lines):
            labels, ops = _analyze(line)
            if i not in owned:
                for lab in labels:
                    self.data.setdefault(lab, DataSymbol(lab, i, cur[0], cur[1]))
            for name, args in ops:
                if name in (".text", ".data", ".bss"):
                    prev, cur = cur, (name, f"\t{name}\n")
                elif name in (".section", ".pushsection"):
                    sname = _section_name(args)
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
                elif name in _DEFINERS:
                    sym = args.partition(",")[0].strip()
                    self.aliases.add(sym)
                    if i not in owned and len(ops) == 1 and not labels:
                        self.alias_lines.setdefault(sym, line if line.endswith("\n") else line + "\n")
                elif name == "=":
                    self.aliases.add(args)
            for stmt in _statements(line):
                self.tokens.update(_REF_RE.findall(stmt))
        for f in self.functions:
            self.data.pop(f, None)

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
        compilation assumed it writes (erring low); see :meth:`sgcc.verify.clobbers._Object.direct`."""
        if self.obj is None:
            return None
        key = (name, assumed)
        if key not in self._clobber_cache:
            from sgcc.verify import clobbers

            try:
                if self._clobbers is None:
                    self._clobbers = clobbers._Object(self.obj)
                if name not in self._clobbers.functions:
                    return None
                self._clobber_cache[key] = self._clobbers.clobbers(name, assumed)
            except Exception:  # noqa: BLE001 - unsure means "cannot tell"
                return None
        return self._clobber_cache[key]

    def escaping_labels(self, name: str) -> set[str]:
        """Labels of unit ``name`` that something outside the unit refers to (debug info,
        label tables of another function)."""
        if name not in self._escaping:
            unit = self.units[name]
            inside = set()
            for piece in unit.pieces:
                inside.update(range(piece.start, piece.stop))
            mine = {lab for lab in defined_labels(unit.text) if lab.startswith(".L")}
            outside: set[str] = set()
            if mine:
                for i, line in enumerate(self.lines):
                    if i in inside or ".L" not in line:
                        continue
                    for stmt in _statements(line):
                        outside.update(t for t in _REF_RE.findall(_strip_labels(stmt)) if t in mine)
            self._escaping[name] = outside
        return self._escaping[name]

    def needs_aligned_stack(self, name: str) -> bool:
        """:func:`needs_aligned_stack` for unit ``name``, knowing its label tables."""
        text = self.units[name].text
        refs = references(text)[0]
        tables = any(r.startswith(".L") and r not in self.data for r in _table_refs(text))
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
            labels, ops = _analyze(lines[start - 1])
            if labels or len(ops) != 1:
                break
            op, args = ops[0]
            if op in _ALIGN_DIRECTIVES or (op in (".type", ".size", ".local") and args.partition(",")[0].strip() == name):
                start -= 1
                continue
            break
        labels, ops = _analyze(lines[d.line])
        if labels != (name,) or any(op not in _DATA_DIRECTIVES for op, _ in ops):
            return None
        on_label_line = bool(ops)
        stop = d.line + 1
        while stop < len(lines) and stop not in self.owned:
            labels, ops = _analyze(lines[stop])
            if labels or not ops or any(op not in _DATA_DIRECTIVES for op, _ in ops):
                break
            stop += 1
        if stop == d.line + 1 and not on_label_line:
            return None  # a label with no data of its own (another label names the bytes)
        return d.decl + "".join(lines[start:stop])


# --------------------------------------------------------------------------- the transplant

@dataclass
class Transplant:
    """A unit of the variant made fit for the baseline, or why it cannot be."""

    function: str
    text: str | None = None
    reason: str = ""
    also: dict[str, str] = field(default_factory=dict)  # callers that must come along (name -> text)
    copied: list[str] = field(default_factory=list)  # private copies (variant names)
    kept: list[str] = field(default_factory=list)  # the baseline's functions it calls


class _Refuse(Exception):
    pass


class _NeedCallers(Exception):
    """The variant's unit is only right next to the variant's versions of these callers."""

    def __init__(self, callers: list[str], why: str):
        super().__init__(why)
        self.callers = callers


#: Most units one candidate may replace (the function and callers that must come along).
MAX_GROUP = 4


def _fresh(name: str, suffix: str) -> str:
    if _COLD_RE.search(name):
        return _COLD_RE.sub("", name) + f".{suffix}" + _COLD_RE.search(name).group(0)
    return f"{name}.{suffix}"


def transplant(base: Side, var: Side, function: str, tag: str, *, ipa_ra: bool = True,
               max_group: int = MAX_GROUP) -> Transplant:
    """The variant's unit for the baseline's ``function``, with private copies of whatever
    it relies on that the baseline does not provide with the same meaning (see the module
    docstring). When gcc's callers of ``function`` rely on something the variant's version
    breaks (registers kept live across the call, the stack alignment at the call), the
    variant's versions of those callers come along (:attr:`Transplant.also`), up to
    ``max_group`` units in all. ``tag`` makes the copies' names unique to this candidate."""
    result = Transplant(function)
    members = [function]
    while True:
        try:
            texts, copied, kept = _build(base, var, members, tag, ipa_ra)
        except _NeedCallers as exc:
            new = [c for c in exc.callers if c not in members]
            if not new or len(members) + len(new) > max_group:
                result.reason = f"{exc} and too many of them would have to come along" if new else str(exc)
                return result
            members += new
            continue
        except _Refuse as exc:
            result.reason = str(exc)
            return result
        result.text = texts[function]
        result.also = {m: texts[m] for m in members[1:]}
        result.copied, result.kept = copied, kept
        return result


def _build(base: Side, var: Side, members: list[str], tag: str, ipa_ra: bool):
    function = members[0]
    for m in members:
        if m not in base.units:
            raise _Refuse(f"the baseline has no unit {m}")
        if compiler_made(m):
            raise _Refuse(f"{m} is a compiler-made clone" + (": offered through its callers" if m == function else ""))
        if m not in var.units:
            raise _Refuse(f"{m} is not a function of its own in this variant (inlined or removed)")
        if base.escaping_labels(m):
            raise _Refuse(f"labels of gcc's {m} are referenced from outside it "
                          f"({', '.join(sorted(base.escaping_labels(m))[:3])}, e.g. debug information)")
    suffix = "sg_" + re.sub(r"[^\w]", "_", function) + "_" + tag
    include = list(members)  # variant units in the candidate
    copies: dict[str, str] = {}  # variant symbol -> fresh name (functions and named data)
    data_blocks: dict[str, str] = {}  # variant data symbol -> block text
    kept: set[str] = set()
    todo = list(members)
    seen_units: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen_units:
            continue
        seen_units.add(name)
        text = var.units[name].text if name in var.units else data_blocks[name]
        if "#APP" in text:
            raise _Refuse(f"{name} contains inline asm, which the screen refuses")
        refs, calls, tails = references(text)
        own = defined_labels(text)
        for sym in sorted(refs - own):
            parent = _COLD_RE.sub("", sym)
            if sym.startswith(".L") and sym in var.alias_lines:
                # gcc merges constants: ".set .LC1,.LC0" names part of another one.
                if sym not in data_blocks:
                    data_blocks[sym] = var.alias_lines[sym]
                    todo.append(sym)
                continue
            if sym.startswith(".L"):
                block = var.data_block(sym)
                if block is None:
                    raise _Refuse(f"{name} refers to {sym}, which is not a read-only constant of the variant")
                if sym not in data_blocks:
                    data_blocks[sym] = block
                    todo.append(sym)
                continue
            if parent in members or sym in seen_units or sym in copies:
                continue  # the variant's own versions, consistent with each other
            if parent in var.units or sym in var.functions:
                unit_name = parent if parent in var.units else sym
                if unit_name in var.units and _same_in_base(base, var, unit_name):
                    kept.add(unit_name)  # byte for byte the same code, calling the same code
                    continue
                keep = (not compiler_made(unit_name) and unit_name in base.units
                        and sym not in tails)
                if keep and sym in calls:
                    keep = _compatible_callee(base, var, unit_name, ipa_ra)
                if keep:
                    kept.add(unit_name)
                    continue
                if unit_name not in var.units:
                    raise _Refuse(f"{name} refers to {sym}, which is not a unit of the variant")
                if sym not in calls and sym not in tails and not compiler_made(unit_name):
                    raise _Refuse(f"{name} takes the address of {sym}, which the baseline lacks")
                copies[unit_name] = _fresh(unit_name, suffix)
                include.append(unit_name)
                todo.append(unit_name)
                continue
            if sym in var.aliases:
                if not base.defines(sym):
                    raise _Refuse(f"{name} refers to {sym}, an alias the baseline lacks")
                continue
            if sym in var.data or sym in var.commons:
                if _COMPILER_DATA_RE.match(sym) and not var.writable(sym):
                    block = var.data_block(sym)
                    if block is None:
                        raise _Refuse(f"cannot cut {sym} out of the variant")
                    copies[sym] = _fresh(sym, suffix)
                    data_blocks[sym] = block
                    todo.append(sym)
                    continue
                if not base.defines(sym):
                    raise _Refuse(f"{name} uses {sym}, which the baseline does not define")
                block = var.object_block(sym) if sym in var.data else ""
                if block is None or any(r.startswith(".L") and r not in var.data and r not in var.alias_lines
                                        for r in references(block)[0]):
                    # A table of label addresses (computed goto) belongs to one compilation.
                    raise _Refuse(f"{name} uses {sym}, whose contents refer to code of this compilation")
                if base.writable(sym) != var.writable(sym) or (sym in base.globals) != (sym in var.globals):
                    raise _Refuse(f"{sym} is a different kind of object in the baseline")
                m = _NUMBERED_RE.match(sym)
                if m and (base.numbered_siblings(m.group(1)) != 1 or var.numbered_siblings(m.group(1)) != 1):
                    raise _Refuse(f"{name} uses {sym}; static locals named {m.group(1)}.N are ambiguous "
                                  "between the two compilations")
                continue
            # Not defined in the variant: the C library or another file.
            if sym not in base.tokens:
                from sgcc.verify.screen import DEFAULT_ALLOWED_EXTERNALS

                if sym not in DEFAULT_ALLOWED_EXTERNALS:
                    raise _Refuse(f"{name} refers to {sym}, which the baseline does not use")
    # What gcc's remaining callers of each member assumed about it must still hold.
    needs = any(var.needs_aligned_stack(n) for n in include if n in var.units)
    for m in members:
        direct, tail = base.callers(m)
        outside = [c for c in direct + tail if c not in members]
        # -fipa-stack-alignment: a caller may call a function that needs no aligned stack
        # with a misaligned one.
        if needs and not surely_aligns_calls(base.units[m].text, base.functions):
            if [c for c in tail if c not in members] or \
                    not all(surely_aligns_calls(base.units[c].text, base.functions) for c in outside):
                raise _NeedCallers(outside, f"the variant's {m} may need an aligned stack, and gcc's callers "
                                            "may call it with a misaligned one (-fipa-stack-alignment)")
        # -fipa-ra: callers keep values in registers gcc's version leaves alone.
        if ipa_ra:
            extra = _extra_clobbers(base, var, m, frozenset(members))
            if extra:
                raise _NeedCallers(outside, f"the variant's {m} changes {', '.join(extra)}, which gcc's callers "
                                            "keep live across the call (-fipa-ra)")
    texts = {}
    for m in members:
        text = _rename(var.units[m].text, copies)
        if m == function:
            parts = [text] + [_rename(_make_local(var.units[n].text, n), copies) for n in include if n not in members]
            parts += [_rename(block, copies) for _sym, block in sorted(data_blocks.items())]
            text = "".join(p if p.endswith("\n") else p + "\n" for p in parts)
        texts[m] = text
    clash = set(copies.values()) & (base.tokens | set(base.units))
    if clash:
        raise _Refuse(f"fresh names clash with the baseline's: {', '.join(sorted(clash))}")
    return texts, sorted(copies), sorted(kept)


def _same_in_base(base: Side, var: Side, name: str) -> bool:
    """Whether the baseline's unit ``name`` is the variant's, text for text, and so is
    everything it reaches (functions, constants): then calling the baseline's is calling
    the variant's, whatever the name means (clones included)."""
    if name not in var.same_as_base:
        var.same_as_base[name] = _closure_identical(base, var, name)
    return var.same_as_base[name]


def _closure_identical(base: Side, var: Side, name: str) -> bool:
    todo, seen = [name], set()
    while todo:
        unit = todo.pop()
        if unit in seen:
            continue
        seen.add(unit)
        if unit not in base.units or unit not in var.units or base.units[unit].text != var.units[unit].text:
            return False
        text = var.units[unit].text
        for ref in sorted(references(text)[0] - defined_labels(text)):
            parent = _COLD_RE.sub("", ref)
            if ref.startswith(".L") and ref in var.alias_lines:
                if var.alias_lines[ref] != base.alias_lines.get(ref):
                    return False
                targets = [r for r in references(var.alias_lines[ref])[0] if r.startswith(".L")]
                if any(var.data_block(r) is None or var.data_block(r) != base.data_block(r) for r in targets):
                    return False
            elif ref.startswith(".L") or (ref in var.data and _COMPILER_DATA_RE.match(ref)):
                block = var.data_block(ref)
                if block is None or block != base.data_block(ref):
                    return False
            elif parent in var.units:
                todo.append(parent)
    return True


def _compatible_callee(base: Side, var: Side, callee: str, ipa_ra: bool) -> bool:
    """Whether the variant's callers may call the baseline's ``callee`` in its place."""
    if base.needs_aligned_stack(callee) and not surely_aligns_calls(var.units[callee].text, var.functions):
        return False
    if ipa_ra:
        # What the baseline's callee may write must be within what the variant's callers
        # assumed their callee writes.
        b, v = base.clobbers(callee), var.clobbers(callee, assumed=True)
        if b is None or v is None or not b <= v:
            return False
    return True


def _extra_clobbers(base: Side, var: Side, function: str, replaced=frozenset()) -> list[str]:
    """Registers the variant's ``function`` may change that gcc's does not and that a
    caller in the baseline (other than ``replaced``) may need after the call: the engine's
    own check, done early."""
    from sgcc.verify import clobbers

    b, v = base.clobbers(function, assumed=True), var.clobbers(function)
    if b is None:
        return []  # the engine decides
    if v is None:
        v = clobbers.ALL_CALLER_SAVED
    extra = set(v - b)
    if extra:
        try:
            extra = clobbers._live_after_calls(base._clobbers, function, extra, replaced)
        except Exception:  # noqa: BLE001 - unsure: leave it to the engine
            return []
    return sorted(extra)


def _make_local(text: str, name: str) -> str:
    """``text`` without the directives that make ``name`` global (a private copy must not
    define a global symbol: it would clash with the original)."""
    out = []
    for line in _split_lines(text):
        _labels, ops = _analyze(line)
        if len(ops) == 1 and ops[0][0] in (".globl", ".global", ".weak", ".protected") and ops[0][1] == name:
            continue
        out.append(line)
    return "".join(out)


def _rename(text: str, mapping: dict[str, str]) -> str:
    if not mapping:
        return text
    full: dict[str, str] = {}

    def lookup(token: str) -> str | None:
        if token in mapping:
            return mapping[token]
        parent = _COLD_RE.sub("", token)
        if parent != token and parent in mapping:
            return mapping[parent] + _COLD_RE.search(token).group(0)
        return None

    def sub(m: re.Match) -> str:
        tok = m.group(0)
        if tok not in full:
            full[tok] = lookup(tok) or tok
        return full[tok]

    return re.sub(r'"(?:[^"\\\n]|\\.)*"?|#[^\n]*|[A-Za-z0-9_.][A-Za-z0-9_.$]*',
                  lambda m: m.group(0) if m.group(0)[0] in '"#' else sub(m), text)


# --------------------------------------------------------------------------- compiled variants

@dataclass
class Variant:
    """One compilation of the program's source under other flags."""

    name: str  # short, for origins and fresh names ("unroll", "pgo")
    flags: list[str]  # flags added to the baseline's
    side: Side | None = None
    error: str = ""
    shown: list[str] | None = None  # the flags as reports show them (without temporary paths)
    #: function -> transplant, filled lazily
    transplants: dict[str, Transplant] = field(default_factory=dict)


def tag_for(name: str) -> str:
    return re.sub(r"[^\w]", "_", name)[:24] + hashlib.sha1(name.encode()).hexdigest()[:4]


def compile_variant(context, variant: Variant, directory: Path, *, stem: str | None = None,
                    timeout: float = 300) -> Variant:
    """``gcc <baseline flags> <variant flags> -S`` of the program, then its object (for the
    clobber analysis). Sets ``variant.side`` or ``variant.error``. ``stem`` names the output
    (``-fprofile-use`` finds the profile by it)."""
    program = context.program
    directory.mkdir(parents=True, exist_ok=True)
    asm = directory / f"{stem or tag_for(variant.name)}.s"
    obj = asm.with_suffix(".o")
    r = proc.run([context.compiler, *program.flags, *variant.flags, "-S", "-o", str(asm), str(program.source)],
                 timeout=timeout)
    if not r.ok:
        lines = [ln for ln in r.stderr.decode(errors="replace").splitlines() if "error" in ln.lower()]
        variant.error = "gcc failed: " + ("; ".join(lines[:2])[:300] or f"exit {r.returncode}")
        return variant
    text = asm.read_text(encoding="utf-8", errors="surrogateescape")
    r = proc.run([context.compiler, *program.asm_flags, "-c", "-x", "assembler", str(asm), "-o", str(obj)],
                 timeout=timeout)
    variant.side = Side(text, obj=obj if r.ok else None)
    return variant


def compile_all(context, variants: list[Variant], directory: Path) -> list[Variant]:
    """Compile every variant, ``context.jobs`` at a time."""
    with ThreadPoolExecutor(max_workers=max(1, context.jobs)) as pool:
        return list(pool.map(lambda v: compile_variant(context, v, directory), variants))


class TransplantGenerator(Generator):
    """Shared behaviour of generators that offer units of other compilations.

    Subclasses fill :attr:`variants` in ``prepare``. For a baseline unit the generator offers,
    from each variant, the transplanted unit when its code differs from gcc's; for a clone
    of the baseline (offered through its callers) the transplanted callers. When a searched
    unit cannot be transplanted, the whole variant translation unit is offered once (if it
    would pass the engine's text screen).
    """

    name = "variants"
    #: offer every variant as a whole translation unit too (not only as a fallback)
    whole_always = False

    def __init__(self):
        self.variants: list[Variant] = []
        self.base: Side | None = None
        self.notes: list[str] = []
        self._whole_offered: set[str] = set()
        self._ipa_ra = True

    def _setup_base(self, program) -> None:
        self.base = Side(program.asm_text, obj=Path(program.obj), asm=program.asm)
        self._ipa_ra = "-fno-ipa-ra" not in program.flags

    def _roots(self, unit_name: str) -> list[str]:
        """Non-clone units of the baseline whose code reaches clone ``unit_name``."""
        if not compiler_made(unit_name):
            return [unit_name]
        found, todo, seen = [], [unit_name], set()
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            for u in self.base.asm.units:
                if u.name != n and n in references(u.text)[0]:
                    (todo if compiler_made(u.name) else found).append(u.name)
        return sorted(set(found))

    def propose(self, program, unit, round_no, history):
        if round_no > 0:
            return []
        if self.base is None:  # preparation failed: say why, once
            notes, self.notes = self.notes, []
            return [Candidate(unit.name, self.name, "", origin=self.name, skip=n) for n in notes]
        try:
            return self._propose(program, unit)
        except Exception as exc:  # noqa: BLE001 - a generator's bug must not end the run
            return [Candidate(unit.name, self.name, "", origin=self.name,
                              skip=f"{self.name} failed on {unit.name}: {type(exc).__name__}: {exc}")]

    def _propose(self, program, unit) -> list[Candidate]:
        out: list[Candidate] = []
        base_norm = {}
        for root in self._roots(unit.name):
            if root not in self.base.units:
                continue
            base_norm[root] = normalized(self.base.units[root].text)
        offered: set[str] = set()
        for variant in self.variants:
            shown = variant.shown if variant.shown is not None else variant.flags
            if variant.side is None:
                if variant.error and variant.name not in self._whole_offered:
                    self._whole_offered.add(variant.name)  # say it once
                    out.append(Candidate(unit.name, self.name, "", origin=f"{self.name} {variant.name}: "
                                         f"{' '.join(shown)}", meta={"flags": list(shown)}, skip=variant.error))
                continue
            for root in base_norm:
                if root in variant.transplants:
                    continue  # offered (or explained) already, for this unit or another clone of it
                t = variant.transplants[root] = transplant(self.base, variant.side, root,
                                                           tag_for(variant.name), ipa_ra=self._ipa_ra)
                meta = {"flags": list(shown), "variant": variant.name}
                origin = f"{self.name} {variant.name}: {' '.join(shown)}"
                if t.text is None:
                    if root in variant.side.units and normalized(variant.side.units[root].text) == base_norm[root]:
                        continue
                    out.append(Candidate(root, self.name, "", origin=origin, meta=meta, skip=t.reason))
                    whole = self._whole(program, variant, meta, origin)
                    if whole is not None:
                        out.append(whole)
                    continue
                norm = normalized(t.text) + "".join(f"\0{k}\0{normalized(v)}" for k, v in sorted(t.also.items()))
                if (not t.also and norm == base_norm[root]) or norm in offered:
                    continue
                offered.add(norm)
                if t.copied:
                    meta["copied"] = t.copied
                if t.also:
                    meta["with"] = sorted(t.also)
                out.append(Candidate(root, self.name, t.text, origin=origin, meta=meta, also=dict(t.also)))
            if self.whole_always:
                whole = self._whole(program, variant, {"flags": list(shown), "variant": variant.name},
                                    f"{self.name} {variant.name}: {' '.join(shown)} (whole file)")
                if whole is not None:
                    out.append(whole)
        return out

    def _whole(self, program, variant: Variant, meta: dict, origin: str) -> Candidate | None:
        """The variant as a whole translation unit, once per variant; None when already
        offered or the engine's screen would refuse it anyway."""
        if variant.name in self._whole_offered:
            return None
        self._whole_offered.add(variant.name)
        from sgcc.verify import screen

        text = variant.side.text
        if text == program.asm_text:
            return None
        verdict = screen.screen_text(text, may_define=program.defined)
        meta = dict(meta, whole=True)
        origin = origin if origin.endswith("(whole file)") else origin + " (whole file)"
        if not verdict.ok:
            return Candidate(WHOLE_UNIT, self.name, "", origin=origin, meta=meta,
                             skip=f"whole file not offered: the screen refuses it ({verdict.reason})")
        return Candidate(WHOLE_UNIT, self.name, text, origin=origin, meta=meta)
