"""A variant as a whole translation unit, with the baseline's writable data in place of its own.

A whole-file candidate replaces every function of the file at once (profile-guided layout
works across functions), so it must also define the file's variables. They must be the
*same* variables: the rest of the program (other files, the C library through pointers it
was given) sees gcc's ``.data``/``.bss``, and the candidate's functions must read and write
exactly those. So the variant's writable data is taken out and the baseline's, text for
text, is put in its place; the candidate's code refers to it by the same names. That is
sound only when both compilations mean the same object by each name, which is checked:

* every writable object the variant defines, gcc's file defines too, with the same text
  (size, alignment, initial value, binding); objects only gcc's file has stay (unused here,
  or used by other files);
* no name of gcc's variables is something else in the variant (a constant gcc made
  read-only there, a function);
* no numbered static local (``count.1``) whose number could mean another function's static
  in the other compilation;
* what gcc's data points at means the same in the variant: its local constants (``.LC3``)
  have the same contents, compiler-made symbols are not referenced, and functions it names
  exist in the variant;
* no aliases (``.set``) among the data, and no thread-local storage.

The object check then holds the result to gcc's writable sections byte for byte
(:mod:`sgcc.verify.static.writable`).
"""

from __future__ import annotations

import re

from sgcc.asm import lex
from sgcc.candidates.transplant.asmtext import DEFINERS, NUMBERED_RE, compiler_made, references
from sgcc.candidates.transplant.side import Side

_BINDING = frozenset(".globl .global .local .weak .hidden .protected .internal .type .size".split())
_SWITCHES = frozenset(".text .data .bss .section .pushsection .popsection .previous".split())


def writable_section(name: str) -> bool:
    """gcc's sections for the program's variables (not RELRO tables, not thread-local)."""
    return re.match(r"^\.(data|bss)(\.|$)", name) is not None and not name.startswith(".data.rel.ro")


class _Refuse(Exception):
    pass


def _split(side: Side) -> tuple[list[str], list[str], set[str], dict[str, str]]:
    """(lines that stay, lines of writable data, the writable objects' names, .comm lines by
    name) of one compilation."""
    names = set(side.commons) | {n for n, d in side.data.items() if writable_section(d.section)}
    kept: list[str] = []
    data: list[str] = []
    comms: dict[str, str] = {}
    cur, prev, stack = ".text", ".text", []
    for i, line in enumerate(side.lines):
        labels, ops = lex.analyze(line)
        before = cur
        switches = False
        for op, args in ops:
            if op in (".text", ".data", ".bss"):
                prev, cur = cur, op
                switches = True
            elif op in (".section", ".pushsection"):
                if op == ".pushsection":
                    stack.append(cur)
                prev, cur = cur, lex.section_name(args)
                switches = True
            elif op == ".popsection":
                cur = stack.pop() if stack else cur
                switches = True
            elif op == ".previous":
                prev, cur = cur, prev
                switches = True
            elif op.startswith(".tls") or (op == ".section" and re.match(r"^\.t(data|bss)", args)):
                raise _Refuse("thread-local storage")
        if cur.startswith((".tdata", ".tbss")):
            raise _Refuse("thread-local storage")
        if i in side.owned:
            if writable_section(before) or writable_section(cur):
                raise _Refuse("a function's code switches to a writable section")
            kept.append(line)
            continue
        ops_names = {op for op, _ in ops}
        if switches:
            if writable_section(cur) and ops_names & {".previous", ".popsection"}:
                raise _Refuse("a return to a writable section by .previous or .popsection")
            (data if writable_section(cur) else kept).append(line)
        elif ops_names & {".comm", ".lcomm"}:
            for op, args in ops:
                if op in (".comm", ".lcomm"):
                    comms[args.partition(",")[0].strip()] = line.strip()
            data.append(line)
        elif ops and all(op in _BINDING for op, _ in ops) and \
                all(args.partition(",")[0].strip() in names for _op, args in ops):
            data.append(line)
        elif writable_section(before):
            if ops_names & (DEFINERS | {"="}):
                raise _Refuse("an alias among the writable data")
            data.append(line)
        else:
            kept.append(line)
    return kept, data, names, comms


def whole_file_text(base: Side, var: Side) -> tuple[str | None, str]:
    """The variant's text with the baseline's writable data in place of its own, or None
    and why that would not be the same program's variables (see the module docstring)."""
    try:
        return _whole(base, var), ""
    except _Refuse as exc:
        return None, f"writable data: {exc}"


def _whole(base: Side, var: Side) -> str:
    vkept, vdata, vnames, vcomms = _split(var)
    _bkept, bdata, bnames, bcomms = _split(base)
    if not vdata and not bdata:
        return var.text
    for name in sorted(vnames):
        if name not in bnames:
            raise _Refuse(f"the variant defines {name}, which gcc's file does not")
        if name in vcomms or name in bcomms:
            if vcomms.get(name) != bcomms.get(name):
                raise _Refuse(f"{name} is defined otherwise than in gcc's file")
            continue
        vb, bb = var.object_block(name), base.object_block(name)
        if vb is None or bb is None or vb != bb:
            raise _Refuse(f"{name} is defined otherwise than in gcc's file (size, alignment or value)")
    other = ({n for n in var.data if n not in vnames} | var.functions | var.aliases) & bnames
    if other:
        raise _Refuse(f"{sorted(other)[0]} is a variable in gcc's file and something else in the variant")
    for name in sorted(vnames | bnames):
        m = NUMBERED_RE.match(name)
        if m and (base.numbered_siblings(m.group(1)) > 1 or var.numbered_siblings(m.group(1)) > 1):
            raise _Refuse(f"static locals named {m.group(1)}.N are ambiguous between the two compilations")
    extract = "".join(ln if ln.endswith("\n") else ln + "\n" for ln in bdata)
    for ref in sorted(references(extract)[0] - bnames):
        if ref.startswith(".L"):
            if ref in base.alias_lines or var.data_block(ref) is None or var.data_block(ref) != base.data_block(ref):
                raise _Refuse(f"gcc's data points at {ref}, which the variant does not define the same way")
        elif compiler_made(ref):
            raise _Refuse(f"gcc's data points at {ref}, which is compiler-made")
        elif base.defines(ref) and not var.defines(ref):
            raise _Refuse(f"gcc's data points at {ref}, which the variant does not define")
    text = "".join(ln if ln.endswith("\n") else ln + "\n" for ln in vkept)
    return text + extract
