"""Functions with their own label tables (computed goto, switch jump tables) are units that
can be searched, and the control-flow proof holds their tables to the function.

Real gcc and assembler throughout: two small bytecode interpreters (computed goto through a
read-only ``&&label`` table; a big switch gcc compiles to a jump table), their dispatch
function offered in gcc variants, each proven and run; then hostile candidates, each gcc's
own assembly with one edit to the table, refused by the ``table`` rule (or by the branch rule
for a target inside an instruction).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.candidates.transplant.build import transplant
from sgcc.candidates.transplant.side import Side
from sgcc.verify.static import controlflow, isa, objcheck

HERE = Path(__file__).parent / "label_tables"
VARIANTS = {"O2": ["-O2"], "Os": ["-Os"], "unroll": ["-funroll-loops"]}


def _compile(src: Path, flags: list[str], where: Path, name: str) -> tuple[Side, Path]:
    s, o = where / f"{name}.s", where / f"{name}.o"
    proc.run(["gcc", "-O3", *flags, "-S", "-o", str(s), str(src)], check=True, timeout=120)
    proc.run(["gcc", "-c", str(s), "-o", str(o)], check=True, timeout=120)
    return Side(s.read_text(), obj=o), o


def _assemble(text: str, where: Path, name: str) -> Path:
    s, o = where / f"{name}.s", where / f"{name}.o"
    s.write_text(text)
    r = proc.run(["gcc", "-c", str(s), "-o", str(o)], timeout=120)
    assert r.ok, r.stderr.decode()[-500:]
    return o


def _output(obj: Path, where: Path, name: str) -> bytes:
    proc.run(["gcc", str(obj), "-o", str(where / name)], check=True, timeout=120)
    r = proc.run([str(where / name)], stdin=b"1000\n", timeout=30)
    assert r.returncode == 0
    return r.stdout


@pytest.mark.parametrize("debug", ["", "-g"])
@pytest.mark.parametrize("program", ["goto_interp", "switch_interp"])
def test_dispatch_function_is_a_unit_and_its_variants_are_proven(tmp_path, program, debug):
    """The table travels with run (a piece of its unit, nothing outside refers to its labels);
    every gcc variant of run is offered, passes the object check and the control-flow proof
    (also held to the information-flow rule, as an untrusted candidate would be) and prints
    what gcc's build prints. On the old code the computed-goto run was refused ("labels of
    gcc's run are referenced from outside it"). With -g too: the table variable's DWARF
    location names the table (``DW_OP_addr table.0``), which kept it in the frame and Lua's
    luaV_execute out of the search in every -g build; the replacement's table has that name."""
    src = HERE / f"{program}.c"
    extra = [debug] if debug else []
    base, base_obj = _compile(src, extra, tmp_path, "base")
    assert base.escaping_labels("run") == set()
    if program == "goto_interp":
        unit = base.units["run"]
        assert len(unit.pieces) == 2 and "table" in unit.text and ".quad\t.L" in unit.text
    expected = _output(base_obj, tmp_path, "base")
    target = isa.target_from_flags("gcc", [])
    for vname, flags in VARIANTS.items():
        var, _ = _compile(src, [*flags, *extra], tmp_path, vname)
        t = transplant(base, var, "run", vname)
        assert t.text is not None, (vname, t.reason)
        cand = _assemble(base.asm.join({"run": t.text}), tmp_path, f"cand-{vname}")
        assert objcheck.check_object(cand, base_obj, isa=target).ok
        assert controlflow.check(cand, base_obj) == [], vname
        assert controlflow.check(cand, base_obj, untrusted=True) == [], vname
        assert _output(cand, tmp_path, f"cand-{vname}") == expected, vname


def test_a_writable_table_keeps_the_function_out(tmp_path):
    """A table the program writes (``.data.rel.local``) stays in the frame: run's labels are
    referenced from outside it and no variant is offered, with that reason."""
    src = HERE / "goto_writable.c"
    base, _ = _compile(src, [], tmp_path, "base")
    var, _ = _compile(src, ["-O2"], tmp_path, "var")
    assert base.escaping_labels("run")
    t = transplant(base, var, "run", "x")
    assert t.text is None and "referenced from outside" in t.reason


@pytest.fixture(scope="module", params=["", "-g"])
def goto(tmp_path_factory, request):
    """gcc's computed-goto interpreter, without and with -g (under -g the table's static
    variable has a DWARF location naming it, and the table still travels with run: every
    hostile table below must be refused there too)."""
    where = tmp_path_factory.mktemp("goto")
    base, obj = _compile(HERE / "goto_interp.c", [request.param] if request.param else [], where, "base")
    assert controlflow.check(obj, obj) == []
    return where, base.text, obj


def _table(text: str) -> tuple[str, list[str]]:
    """The name of run's label table and its entries (``.quad .Lx`` lines)."""
    m = re.search(r"^(table\.\d+):\n((?:\t\.quad\t\.L\d+\n)+)", text, re.M)
    assert m, "gcc -O3 should have put run's label table after it"
    return m.group(1), m.group(2).splitlines(keepends=True)


def _rules(goto, text: str, name: str) -> set[str]:
    where, _, base_obj = goto
    return {p.rule for p in controlflow.check(_assemble(text, where, name), base_obj)}


def test_a_table_entry_outside_the_function_is_refused(goto):
    """An entry that points at a label of main (an instruction start): the jump through run's
    table could reach main's code. The old proof counted it as one of main's targets."""
    _, text, _ = goto
    _name, entries = _table(text)
    main = text[text.index("\nmain:"):]
    label = re.search(r"^(\.L\d+):", main, re.M).group(1)
    bad = text.replace(entries[0], f"\t.quad\t{label}\n", 1)
    assert "table" in _rules(goto, bad, "outside")


def test_a_table_entry_inside_an_instruction_is_refused(goto):
    _, text, _ = goto
    _name, entries = _table(text)
    bad = text.replace(entries[1], entries[1].rstrip("\n") + "+1\n", 1)
    assert "table" in _rules(goto, bad, "middle")


def test_a_writable_table_is_refused(goto):
    """gcc's table is read-only once relocated (.data.rel.ro); the candidate's in .data could
    be rewritten before the jump reads it. The old proof accepted it."""
    _, text, _ = goto
    name, _ = _table(text)
    bad = re.sub(rf'\t\.section\t\.data\.rel\.ro\.local,"aw"\n(\t\.align \d+\n\t\.type\t{re.escape(name)})',
                 r"\t.data\n\1", text)
    assert bad != text
    assert "table" in _rules(goto, bad, "writable")


def test_a_table_used_by_two_functions_is_refused(goto):
    """main takes the table's address too: the table no longer belongs to run alone."""
    _, text, _ = goto
    name, _ = _table(text)
    bad = re.sub(r"^(main:\n(?:\t\.cfi_startproc\n)?)", rf"\1\tleaq\t{name}(%rip), %rax\n", text, count=1, flags=re.M)
    assert bad != text
    assert "table" in _rules(goto, bad, "shared")


SPLIT = """\t.text
\t.globl\tf
\t.type\tf, @function
f:
.L1:
\tleaq\tTABLE(%rip), %rax
\tjmp\t*(%rax,%rdi,8)
.L2:
\tret
\t.size\tf, .-f
\t.globl\tg
\t.type\tg, @function
g:
.L3:
\tUSE
\tret
\t.size\tg, .-g
\t.section\tSECTION
\t.align 8
\t.type\ttab.0, @object
\t.size\ttab.0, 16
tab.0:
\t.quad\t.L1
\t.quad\tSECOND
"""


@pytest.mark.parametrize("case, travels", [
    ("private", True),
    ("entry of another function", False),
    ("used by two functions", False),
    ("writable", False),
    ("global", False),
])
def test_which_tables_travel_with_their_function(case, travels):
    """The splitter's rule, on assembly written for each case: only a read-only table of one
    function's labels that only that function refers to becomes a piece of its unit; the
    file joins back byte for byte either way."""
    from sgcc.asm.units import AsmFile

    text = SPLIT.replace("TABLE", "tab.0").replace("SECTION", '.data.rel.ro.local,"aw"')
    text = text.replace("SECOND", ".L3" if case == "entry of another function" else ".L2")
    text = text.replace("USE", "leaq\ttab.0(%rip), %rax" if case == "used by two functions" else "nop")
    if case == "writable":
        text = text.replace('.data.rel.ro.local,"aw"', '.data.rel.local,"aw"')
    if case == "global":
        text = text.replace("\t.align 8\n", "\t.globl\ttab.0\n\t.align 8\n")
    asm = AsmFile.parse(text)
    assert asm.join() == text
    f = asm.unit("f")
    assert (len(f.pieces) == 2 and "tab.0:" in f.text) == travels, case
    assert "tab.0:" not in asm.unit("g").text


def test_a_table_reached_only_through_a_pointer_in_data_is_refused(goto):
    """run's labels in a table no code refers to, whose address another object holds: any
    function could load it and jump through it, so no one function's walk covers it. The old
    proof counted its entries as run's targets."""
    _, text, _ = goto
    _name, entries = _table(text)
    label = entries[0].split()[-1]
    bad = text + ('\t.section\t.data.rel.ro.hidden,"aw"\n\t.align 8\nhidden_tab:\n'
                  f"\t.quad\t{label}\n"
                  '\t.section\t.data.rel.ro.ptr,"aw"\n\t.align 8\nptr_to_tab:\n\t.quad\thidden_tab\n')
    assert "table" in _rules(goto, bad, "hidden")
