"""What a unit's text refers to, defines and needs, for moving it between compilations.

Read with the one lexer (:mod:`sgcc.asm.lex`): statements, labels and strings are what gas
sees, character constants included.
"""

from __future__ import annotations

import re

from sgcc.asm import lex

#: Symbol references inside a statement: identifiers not part of a register (``%rax``), a
#: relocation operator (``@PLT``) or a number (``0x10``, ``1b``); ``$`` is the immediate
#: prefix (``movl $.LC0, %edi``), not part of the name.
REF_RE = re.compile(r"(?<![%@\w.])([A-Za-z_.][\w.$]*)")
_BRACES_RE = re.compile(r"\{[^}]*\}")
_PREFIXES = frozenset("lock rep repe repz repne repnz notrack bnd data16 addr32 rex64 cs ds es fs gs ss".split())
DATA_DIRECTIVES = frozenset(
    ".byte .2byte .4byte .8byte .short .hword .value .word .int .long .quad .octa .zero .skip .space "
    ".string .ascii .asciz .float .single .double .sleb128 .uleb128 .dc.a .base64".split()
)
ALIGN_DIRECTIVES = frozenset(".align .p2align .balign".split())
DEFINERS = frozenset(".set .equ .equiv".split())
#: Directives whose arguments never name a symbol the code depends on.
_META_DIRECTIVES = frozenset(
    ".section .text .data .bss .previous .pushsection .popsection .file .ident .loc .type .size "
    ".globl .global .local .weak .hidden .protected .internal .string .ascii .asciz .p2align "
    ".align .balign".split()
)
#: Compiler-made read-only objects no C code can name: copying them privately is exact.
COMPILER_DATA_RE = re.compile(r"^(?:\.L.*|CSWTCH\.\d+|C\.\d+(?:\.\d+)*|__func__\.\d+|__PRETTY_FUNCTION__\.\d+)$")
NUMBERED_RE = re.compile(r"^(.+)\.(\d+)$")
COLD_RE = re.compile(r"\.cold(?:\.\d+)?$")
_VECTOR_RE = re.compile(r"%[xyz]mm\d")
_STACK_MEM_RE = re.compile(r"\(%r[sb]p\b")
_ALIGNED_MOVE_RE = re.compile(r"^\s*v?mov(?:aps|apd|dqa|dqa32|dqa64|ntdq|ntps|ntpd)\b")


def compiler_made(name: str) -> bool:
    """C identifiers have no dots: a dotted function name is a clone or part gcc made."""
    return "." in name


def statements(line: str) -> list[str]:
    """Statements of a line without comments, labels kept, string contents blanked."""
    return [lex.blank_strings(s) for s in lex.statements(line)]


def references(text: str) -> tuple[set[str], set[str], set[str]]:
    """Symbols ``text`` refers to: (all references, direct call targets, tail-call targets).

    Instruction operands and data directives (``.long .L5-.L4``, ``.quad f``) count;
    mnemonics, registers, relocation operators, section names and the symbols named by
    bookkeeping directives (``.type``, ``.size``, ``.globl``...) do not.
    """
    refs: set[str] = set()
    calls: set[str] = set()
    tails: set[str] = set()
    for line in lex.split_lines(text):
        for stmt in statements(line):
            stmt = lex.strip_labels(stmt)
            if not stmt:
                continue
            if stmt.startswith("."):
                name = stmt.split(None, 1)[0].lower()
                if name in _META_DIRECTIVES or name.startswith(".cfi_"):
                    continue
                if name in DEFINERS:
                    args = stmt.split(None, 1)[1] if " " in stmt or "\t" in stmt else ""
                    refs.update(REF_RE.findall(args.partition(",")[2]))
                    continue
                rest = stmt[len(name):]
                refs.update(REF_RE.findall(rest))
                continue
            words = stmt.split(None, 1)
            while words and words[0].lower() in _PREFIXES and len(words) > 1:
                words = words[1].split(None, 1)
            if not words:
                continue
            mnemonic = words[0].lower()
            # AVX-512 decorations ({%k1}, {z}, {1to8}, {sae}) name no symbol.
            operands = _BRACES_RE.sub("", words[1]) if len(words) > 1 else ""
            found = REF_RE.findall(operands)
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
    for line in lex.split_lines(text):
        labels, ops = lex.analyze(line)
        out.update(labels)
        for name, args in ops:
            if name in DEFINERS:
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
    for line in lex.split_lines(text):
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
    for line in lex.split_lines(text):
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
    for line in lex.split_lines(text):
        s = line.strip()
        if re.match(r"^(?:call|callq)\s+\*", s):
            return True
        if _ALIGNED_MOVE_RE.match(s) and _STACK_MEM_RE.search(s):
            return True
    return False


def table_refs(text: str) -> set[str]:
    """Labels named by data directives in ``text`` (jump tables: ``.long .L5-.L4``)."""
    out: set[str] = set()
    for line in lex.split_lines(text):
        s = line.strip()
        if s.startswith((".long", ".quad", ".4byte", ".8byte")) and ".L" in s:
            out.update(REF_RE.findall(s.split(None, 1)[1]))
    return out


def make_local(text: str, name: str) -> str:
    """``text`` without the directives that make ``name`` global (a private copy must not
    define a global symbol: it would clash with the original)."""
    out = []
    for line in lex.split_lines(text):
        _labels, ops = lex.analyze(line)
        if len(ops) == 1 and ops[0][0] in (".globl", ".global", ".weak", ".protected") and ops[0][1] == name:
            continue
        out.append(line)
    return "".join(out)


def rename(text: str, mapping: dict[str, str]) -> str:
    if not mapping:
        return text
    full: dict[str, str] = {}

    def lookup(token: str) -> str | None:
        if token in mapping:
            return mapping[token]
        parent = COLD_RE.sub("", token)
        if parent != token and parent in mapping:
            return mapping[parent] + token[len(parent):]
        return None

    def cached(tok: str) -> str:
        if tok not in full:
            full[tok] = lookup(tok) or tok
        return full[tok]

    return lex.rename_tokens(text, cached)
