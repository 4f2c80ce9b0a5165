"""Debug information across a transplant: a function from another compilation, under ``-g``.

With ``-g`` gcc's assembly carries two kinds of debug information for each function:

* the *line table*, which the assembler builds from the function's own ``.loc`` directives
  (numbered by the ``.file N "path"`` table of the file);
* the *DWARF entries* in the frame's ``.debug_*`` sections (the function's extent, its
  variables' locations, inlined calls, lexical blocks, call sites), which refer to labels
  and location views inside the function (``.LFB5``, ``.LVL12``, ``.LBB7``, ``.LVU3``).

A unit from another compilation brings its own ``.loc`` lines, but its labels and views
are another compilation's, and the baseline's DWARF entries still name the baseline's. So
the transplanted unit is stitched (:func:`stitch`):

* its ``.loc`` lines are renumbered to the baseline's file table (by path); a line whose
  file the baseline does not list is dropped (those instructions belong to the row before),
  and location views are dropped (they only refine the location lists rewritten below);
  the ``.file`` lines that lived in the baseline's unit are kept (later units use them);
* a label table of the function that the debug sections name (its static variable's
  location) names the new code's own table (``.set table.1, table.1.sg_run_O2``);
* the baseline's labels that its debug sections refer to are defined again in the new
  code: the function's begin label (``.LFB<n>``) at its first instruction, every other one
  at its end, and every view symbol as view 0. The function's extent is then exactly the
  new code, and every location, lexical block and inlined call of gcc's version describes
  an empty range: a debugger steps through the new code by its line table, shows the
  function, its callers and its source, and reports the variables as optimized out rather
  than showing where gcc's version kept them. (A variable gcc kept at one fixed frame
  offset for the whole function, ``DW_OP_fbreg``, has no range to empty; see
  docs/project-mode.md.)

Debug sections are never loaded: the object check holds them to the baseline's flags (no
``SHF_ALLOC``), so nothing a candidate writes there can run.
"""

from __future__ import annotations

import re

from sgcc.asm import lex

_FILE_RE = re.compile(r"^\s*\.file\s+(\d+)\s+(.*?)\s*$")
_LOC_RE = re.compile(r"^(\s*\.loc\s+)(\d+)(\s.*?)?(\n?)$")
_VIEW_RE = re.compile(r"\s+view\s+\S+")
_VIEW_SYM_RE = re.compile(r"\bview\s+(\.L[\w.$]+)")
_BEGIN_RE = re.compile(r"^\.LFB\d+$")


def file_table(lines) -> dict[str, str]:
    """``.file N "path"`` lines of a compilation: number -> what follows it (the path)."""
    table: dict[str, str] = {}
    for line in lines:
        m = _FILE_RE.match(line) if ".file" in line else None
        if m:
            table.setdefault(m.group(1), m.group(2))
    return table


def file_lines(text: str) -> list[str]:
    """The numbered ``.file`` lines of ``text``, in order."""
    return [ln if ln.endswith("\n") else ln + "\n" for ln in lex.split_lines(text)
            if ".file" in ln and _FILE_RE.match(ln)]


def view_symbols(text: str) -> set[str]:
    """Location-view symbols ``text``'s ``.loc`` directives define (``view .LVU3``)."""
    return {m.group(1) for ln in lex.split_lines(text) if ".loc" in ln for m in _VIEW_SYM_RE.finditer(ln)}


def has_debug(text: str) -> bool:
    """Whether gcc emitted line information in ``text`` (a ``-g`` compilation)."""
    return "\t.loc " in text or "\n.loc " in text


def renumber_lines(text: str, var_files: dict[str, str], base_files: dict[str, str]) -> str:
    """``text`` with its ``.loc`` lines in the baseline's file numbering, views dropped, its
    numbered ``.file`` lines removed; lines of a file the baseline lacks are dropped."""
    by_path = {path: num for num, path in base_files.items()}
    out = []
    for line in lex.split_lines(text):
        if ".file" in line and _FILE_RE.match(line):
            continue
        if ".loc" in line:
            m = _LOC_RE.match(line)
            if m:
                num = by_path.get(var_files.get(m.group(2), ""))
                if num is None:
                    continue
                rest = _VIEW_RE.sub("", m.group(3) or "")
                line = f"{m.group(1)}{num}{rest}{m.group(4)}"
        out.append(line)
    return "".join(out)


def stitch(text: str, function: str, debug_labels: set[str], base_unit_text: str,
           var_files: dict[str, str], base_files: dict[str, str]) -> str:
    """The transplanted ``text`` of ``function`` made consistent with the baseline's debug
    information (see the module docstring). ``debug_labels`` are the labels and views of
    gcc's unit that its debug sections refer to."""
    from sgcc.candidates.transplant.asmtext import defined_labels, rename

    text = renumber_lines(text, var_files, base_files)
    taken = defined_labels(text)
    # An object of gcc's unit the debug sections name (a label table's static variable, whose
    # location is DW_OP_addr table.1) names the replacement's own table: the transplant's
    # copy of it (table.1.sg_run_O2, or the variant's number for it), else the function's end.
    aliases: dict[str, str] = {}
    for lab in sorted(lab for lab in debug_labels if not lab.startswith(".L")):
        if lab in taken:
            aliases[lab] = lab
            continue
        stem = re.escape(lab.rpartition(".")[0] or lab)
        same = [t for t in taken if t.startswith(lab + ".sg_")] or \
            [t for t in taken if re.fullmatch(stem + r"(\.\d+)?(\.sg_[\w.]+)?", t)]
        if len(same) == 1:
            aliases[lab] = same[0]
    debug_labels = {lab for lab in debug_labels if lab not in aliases}
    # A name gcc's debug sections mean must name the spot defined below, not the variant's.
    clash = {lab: f"{lab}_sgv" for lab in debug_labels if lab in taken}
    text = rename(text, clash)
    base_views = view_symbols(base_unit_text)  # once: luaV_execute has thousands of labels
    views = sorted(lab for lab in debug_labels if lab in base_views)
    begin = sorted(lab for lab in debug_labels if _BEGIN_RE.match(lab) and lab not in views)
    end = sorted(lab for lab in debug_labels if lab not in views and lab not in begin)
    out = file_lines(base_unit_text)
    placed_begin = placed_end = False
    for line in lex.split_lines(text):
        labels, ops = lex.analyze(line)
        if not placed_end and ops and ops[0][0] == ".size" and \
                ops[0][1].partition(",")[0].strip() == function:
            out += [f"{lab}:\n" for lab in end]
            placed_end = True
        out.append(line if line.endswith("\n") else line + "\n")
        if not placed_begin and function in labels:
            out += [f"{lab}:\n" for lab in begin]
            placed_begin = True
    if not (placed_begin and placed_end):
        raise ValueError(f"{function}: no label or .size line to place gcc's debug labels at")
    out += [f"\t.set\t{lab}, 0\n" for lab in views]
    out += [f"\t.set\t{lab}, {new}\n" for lab, new in sorted(aliases.items()) if lab != new]
    return "".join(out)
