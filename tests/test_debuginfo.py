"""-g is no obstacle: gcc variants are transplanted into a -g build as into a -g0 one, the
result keeps a line table and function extents a debugger can use, and debug sections
stay unable to carry code (real gcc, gas, ld and gdb)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.candidates.transplant.build import transplant
from sgcc.candidates.transplant.side import Side
from sgcc.verify.static import isa, objcheck, textscreen

CORPUS = Path(__file__).parent / "asm_corpus"
VARIANTS = {"unroll": ["-funroll-loops"], "O2": ["-O2"]}

HOT = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) unsigned count_bits(unsigned long v) {
    unsigned n = 0;
    while (v) { n += v & 1; v >>= 1; }
    return n;
}
__attribute__((noinline)) unsigned long work(int n) {
    unsigned long s = 0;
    for (int i = 0; i < n; i++) s += count_bits(i * 2654435761u) * (unsigned long)(i & 7);
    return s;
}
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    printf("%lu\n", work(n));
    return 0;
}
"""


def _side(src: Path, flags: list[str], where: Path, name: str) -> tuple[Side, Path]:
    s, o = where / f"{name}.s", where / f"{name}.o"
    proc.run(["gcc", "-O3", *flags, "-S", "-o", str(s), str(src)], check=True, timeout=120)
    proc.run(["gcc", "-c", str(s), "-o", str(o)], check=True, timeout=120)
    return Side(s.read_text(), obj=o), o


def _offered(base: Side, var: Side, tag: str) -> dict[str, object]:
    return {u.name: t for u in base.asm.units if (t := transplant(base, var, u.name, tag)).text is not None}


def _assemble_checked(base: Side, base_obj: Path, replacements: dict[str, str], where: Path) -> Path:
    for text in replacements.values():
        verdict = textscreen.screen_text(text, may_define=frozenset(base.units))
        assert verdict.ok, verdict.reason
    cand_s, cand_o = where / "cand.s", where / "cand.o"
    cand_s.write_text(base.asm.join(replacements))
    r = proc.run(["gcc", "-c", str(cand_s), "-o", str(cand_o)], timeout=120)
    assert r.ok, r.stderr.decode()[-800:]
    verdict = objcheck.check_object(cand_o, base_obj, isa=isa.target_from_flags("gcc", []))
    assert verdict.ok, verdict.reason
    return cand_o


@pytest.mark.parametrize("stem", ["clones", "static_funcs", "switch_table", "recursion", "cold_paths"])
def test_g_and_g0_builds_offer_the_same_transplants(tmp_path, stem):
    """Old code: every -g transplant was refused ("labels ... referenced from outside it")."""
    src = CORPUS / f"{stem}.c"
    for vname, flags in VARIANTS.items():
        offered = {}
        for g in ("-g0", "-g"):
            where = tmp_path / vname / g.strip("-")
            where.mkdir(parents=True)
            base, base_obj = _side(src, [g], where, "base")
            var, _ = _side(src, [g, *flags], where, "var")
            offered[g] = _offered(base, var, vname)
            for name, t in offered[g].items():
                _assemble_checked(base, base_obj, {name: t.text, **t.also}, where)
        assert offered["-g"].keys() == offered["-g0"].keys(), (stem, vname)
        if stem in ("clones", "static_funcs"):
            assert offered["-g"], (stem, vname)


def test_debugger_steps_through_a_substituted_function(tmp_path):
    if shutil.which("gdb") is None:
        pytest.skip("gdb is not installed")
    src = tmp_path / "hot.c"
    src.write_text(HOT)
    base, base_obj = _side(src, ["-g"], tmp_path, "base")
    var, _ = _side(src, ["-g", "-funroll-loops", "-fno-tree-vectorize"], tmp_path, "var")
    t = transplant(base, var, "count_bits", "unroll")
    assert t.text is not None, t.reason
    assert t.text != base.units["count_bits"].text
    obj = _assemble_checked(base, base_obj, {"count_bits": t.text, **t.also}, tmp_path)
    binary = tmp_path / "hot"
    proc.run(["gcc", str(obj), "-o", str(binary)], check=True, timeout=120)
    proc.run(["gcc", str(base_obj), "-o", str(tmp_path / "hot-gcc")], check=True, timeout=120)
    assert proc.run([str(binary), "5000"], timeout=30).stdout == proc.run([str(tmp_path / "hot-gcc"), "5000"],
                                                                           timeout=30).stdout
    r = proc.run(["gdb", "-batch", "-nx", "-ex", "break count_bits", "-ex", "run", "-ex", "bt", "-ex", "list",
                  "-ex", "next", "-ex", "next", "-ex", "info frame", str(binary)], timeout=120)
    out = r.stdout.decode(errors="replace")
    assert "Breakpoint 1, count_bits" in out, out
    assert "hot.c:" in out, out  # the line table places the new code in the source
    assert "in work (" in out and "in main (" in out, out  # bt: the callers, through the new code's CFI
    assert "while (v)" in out or "n += v & 1" in out, out  # list shows the function's source
    assert "Cannot" not in out and "DW_" not in out, out  # no complaint about the debug information
    # The new code's extent is the function's: every pc of it resolves to count_bits.
    nm = proc.run(["nm", "-S", str(binary)], timeout=30).stdout.decode()
    start, size = next((int(a, 16), int(s, 16)) for a, s, _k, name in (ln.split() for ln in nm.splitlines()
                                                                       if ln.endswith(" count_bits")))
    r = proc.run(["gdb", "-batch", "-nx", "-ex", f"info symbol {start + size - 1:#x}",
                  "-ex", f"info line *{start + size - 1:#x}", str(binary)], timeout=60)
    assert "count_bits" in r.stdout.decode(), r.stdout.decode()


def test_debug_sections_cannot_carry_code(tmp_path):
    """A debug section is never loaded; one asking to be (SHF_ALLOC, executable) is refused
    by the screen and, spelled so the screen lets it through, by the object check."""
    src = tmp_path / "hot.c"
    src.write_text(HOT)
    base, base_obj = _side(src, ["-g"], tmp_path, "base")
    unit = base.units["count_bits"].text
    for flags in ('"ax"', '"a"', '"wa"'):
        smuggled = unit + f"\t.section\t.debug_sg,{flags},@progbits\n\t.byte 0x0f, 0x05\n\t.text\n"
        assert not textscreen.screen_text(smuggled, may_define=frozenset(base.units)).ok
        # Past the screen (a cache entry written by someone else is re-checked at the object).
        cand_s, cand_o = tmp_path / "evil.s", tmp_path / "evil.o"
        cand_s.write_text(base.asm.join({"count_bits": smuggled}))
        proc.run(["gcc", "-c", str(cand_s), "-o", str(cand_o)], check=True, timeout=120)
        verdict = objcheck.check_object(cand_o, base_obj, isa=isa.target_from_flags("gcc", []))
        assert not verdict.ok and ".debug_sg" in verdict.reason, verdict.reason
    # gcc's own debug section, opened first by the candidate with other flags: gas keeps the
    # first flags it sees (the frame's later "" is ignored with a warning), so .debug_info
    # itself would be loaded and executable. The object check compares it with gcc's.
    reopened = unit + '\t.section\t.debug_info,"ax",@progbits\n\t.byte 0x0f, 0x05\n\t.text\n'
    assert not textscreen.screen_text(reopened, may_define=frozenset(base.units)).ok
    cand_s.write_text(base.asm.join({"count_bits": reopened}))
    proc.run(["gcc", "-c", str(cand_s), "-o", str(cand_o)], check=True, timeout=120)
    verdict = objcheck.check_object(cand_o, base_obj, isa=isa.target_from_flags("gcc", []))
    assert not verdict.ok and ".debug_info" in verdict.reason, verdict.reason


def test_a_name_of_gcc_s_file_left_undefined_is_refused(tmp_path):
    """A unit that drops the definition of a local object of gcc's file the frame still names
    (here the debug sections' DW_OP_addr of a label table, as a transplant did before its
    table kept that name) leaves an undefined symbol: the object passed the check and the
    link failed ("undefined reference to `table.1'"), so a cache entry shaped so would break
    the user's build. The object check refuses it."""
    src = Path(__file__).parent / "label_tables" / "goto_interp.c"
    base, base_obj = _side(src, ["-g"], tmp_path, "base")
    unit = base.units["run"].text
    name = next(n for n in ("table.0", "table.1", "table.2") if f"\n{n}:" in unit)
    dropped = unit.replace(f"\n{name}:", f"\n{name}_x:").replace(f"{name}(%rip)", f"{name}_x(%rip)")
    dropped = dropped.replace(f".type\t{name},", f".type\t{name}_x,").replace(f".size\t{name},", f".size\t{name}_x,")
    assert dropped != unit
    cand_s, cand_o = tmp_path / "evil.s", tmp_path / "evil.o"
    cand_s.write_text(base.asm.join({"run": dropped}))
    proc.run(["gcc", "-c", str(cand_s), "-o", str(cand_o)], check=True, timeout=120)
    assert not proc.run(["gcc", str(cand_o), "-o", str(tmp_path / "evil")], timeout=120).ok  # the link fails
    verdict = objcheck.check_object(cand_o, base_obj, isa=isa.target_from_flags("gcc", []))
    assert not verdict.ok and name in verdict.reason, verdict.reason


def test_whole_file_of_a_g_variant_keeps_its_own_debug_sections(tmp_path):
    """A trusted variant as a whole file (-g): its own DWARF, consistent by construction, passes
    the screen and the object check; the same sections marked loadable do not."""
    from sgcc.candidates.transplant.wholefile import whole_file_text

    src = tmp_path / "hot.c"
    src.write_text(HOT)
    base, base_obj = _side(src, ["-g"], tmp_path, "base")
    var, _ = _side(src, ["-g", "-funroll-loops"], tmp_path, "var")
    text, why = whole_file_text(base, var)
    assert text is not None, why
    assert textscreen.screen_text(text, may_define=frozenset(base.units), writable_data=True).ok
    cand_s, cand_o = tmp_path / "whole.s", tmp_path / "whole.o"
    cand_s.write_text(text)
    proc.run(["gcc", "-c", str(cand_s), "-o", str(cand_o)], check=True, timeout=120)
    assert objcheck.check_object(cand_o, base_obj, isa=isa.target_from_flags("gcc", [])).ok
    loaded = text.replace('.section\t.debug_info,""', '.section\t.debug_info,"a"')
    assert loaded != text
    assert not textscreen.screen_text(loaded, may_define=frozenset(base.units), writable_data=True).ok
    # Outside a whole file, debug sections stay gcc's: a unit may not bring any.
    assert not textscreen.screen_text(base.units["count_bits"].text + '\t.section\t.debug_str,"MS",@progbits,1\n',
                                      may_define=frozenset(base.units)).ok
