"""The whole-project candidates' field (sgcc.project.whole): which variants each generator
offers, and what they are called in reports and cache entries. The builds, tests and race are
tested end to end in tests/test_project_pgo_baseline.py."""

from __future__ import annotations

from pathlib import Path

from sgcc.project import whole


def test_the_field_follows_the_generators_and_the_isa_policy():
    assert whole.field(set(), "flags") == []
    # PGO + LTO: what the distributions build with, on top of a user's PGO (Lua 1.24x against 1.15x).
    assert whole.field({"pgo"}, "flags") == [whole.PGO, whole.Variant(whole.LTO, profile=True)]
    names = [v.name for v in whole.field({"pgo", "flags"}, "flags")]
    lto = "-flto=auto -ffat-lto-objects"
    assert names[:2] == ["PGO everywhere", f"PGO everywhere + {lto}"]  # the largest levers: cut last
    assert "PGO everywhere + -O3" in names and "-O3 everywhere" in names and f"{lto} everywhere" in names
    assert not any("native" in n for n in names)  # isa = flags: no instruction the flags do not allow
    native = whole.field({"pgo", "flags"}, "native")
    assert any(v.flags[:1] == ("-O3",) and "-march=native" in v.flags for v in native)
    # -march=native brings FMA: contraction would change floating-point results.
    assert all("-ffp-contract=off" in v.flags for v in native if "-march=native" in v.flags)
    assert [v.name for v in whole.field({"flags"}, "flags")] == \
        ["-O3 everywhere", f"{lto} everywhere", "-O2 everywhere", "-O3 -funroll-loops everywhere"]
    assert [v.lto for v in whole.field({"pgo", "flags"}, "flags")] == [False, True, False, True, False, False, False]
    # lto = false in [project]: no variant with link-time optimisation.
    assert not any(v.lto for v in whole.field({"pgo", "flags"}, "native", lto=False))
    assert len(whole.field({"pgo", "flags"}, "native", lto=False)) == len(native) - 2


def test_cache_entries_name_the_variant():
    assert whole.PGO.generator == "pgo-everywhere"
    assert whole.Variant(("-O3",), profile=True).generator == "pgo-everywhere -O3"
    assert whole.Variant(("-O3", "-funroll-loops")).generator == "flags-everywhere -O3 -funroll-loops"


def test_a_set_the_build_already_has_is_the_same_as_gcc_s_build_also_with_debug_information(tmp_path):
    """With -g gcc's assembly spells the command line's flags (DW_AT_producer): -O2 added to an
    -O2 build changed that string only, and Lua's -O2 build then built, tested and raced an
    "-O2 everywhere" that was gcc's own code."""
    from sgcc import proc
    from sgcc.project.record import Compile

    (tmp_path / "k.c").write_text("int sum(const int *a, int n) { int s = 0; for (int i = 0; i < n; i++) "
                                  "s += a[i] * a[i]; return s; }\n")
    args = ["gcc", "-O2", "-g", "-c", "k.c", "-o", "k.o"]
    assert proc.run(["gcc", "-O2", "-g", "-S", "k.c", "-o", "k.s"], cwd=tmp_path).ok
    c = Compile(key="k" * 64, source=tmp_path / "k.c", cwd=tmp_path, args=args, asm_path=tmp_path / "k.s",
                output=tmp_path / "k.o")
    same, failed = whole.compile_all("gcc", [c], whole.Variant(("-O2",)), tmp_path / "work", tmp_path)
    assert not failed and same[c.key] != (tmp_path / "k.s").read_text()  # the producer string differs
    assert whole.changed([c], same) == set()
    o3, _ = whole.compile_all("gcc", [c], whole.Variant(("-O3",)), tmp_path / "work", tmp_path)
    assert whole.changed([c], o3) == {c.key}  # -O3 vectorizes the loop


def test_an_lto_variant_s_compiles_are_the_intermediate_language_the_link_optimises(tmp_path):
    """gcc's assembly under -flto=auto holds the compile's intermediate language in .gnu.lto_
    sections: what the drop-in substitutes for the compile, and what the project's own link (no
    -flto on it) hands to gcc's LTO through the linker plugin. Fat: a link without the plugin
    links the objects' ordinary code instead of failing (slim objects fail it: "plugin needed
    to handle lto object")."""
    from sgcc import proc
    from sgcc.project.record import Compile

    (tmp_path / "w.c").write_text("unsigned weight(unsigned x) { return (x * 2654435761u) >> 7; }\n")
    (tmp_path / "m.c").write_text("unsigned weight(unsigned);\nint main(int c, char **v) { (void)v; "
                                  "return (int)(weight((unsigned)c) & 1); }\n")
    compiles = []
    for name in ("w", "m"):
        args = ["gcc", "-O2", "-c", f"{name}.c", "-o", f"{name}.o"]
        assert proc.run(["gcc", "-O2", "-S", f"{name}.c", "-o", f"{name}.s"], cwd=tmp_path).ok
        compiles.append(Compile(key=name * 64, source=tmp_path / f"{name}.c", cwd=tmp_path, args=args,
                                asm_path=tmp_path / f"{name}.s", output=tmp_path / f"{name}.o"))
    texts, failed = whole.compile_all("gcc", compiles, whole.Variant(whole.LTO), tmp_path / "work", tmp_path)
    assert not failed and whole.changed(compiles, texts) == {c.key for c in compiles}
    assert all(".gnu.lto_" in t for t in texts.values())
    for c in compiles:  # as the drop-in does: the text assembled in place of gcc's
        (tmp_path / f"{c.source.stem}.lto.s").write_text(texts[c.key])
        assert proc.run(["gcc", "-c", f"{c.source.stem}.lto.s", "-o", f"{c.source.stem}.o"], cwd=tmp_path).ok
    assert proc.run(["ar", "rcs", "libw.a", "w.o"], cwd=tmp_path).ok
    link = proc.run(["gcc", "-O2", "m.o", "libw.a", "-o", "prog"], cwd=tmp_path)  # the build's link, as it is
    assert link.ok, link.stderr.decode()
    dump = proc.run(["objdump", "-d", str(tmp_path / "prog")]).stdout.decode()
    assert "<weight>:" not in dump  # inlined across sources at link time
    plain = proc.run(["gcc", "-O2", "-fno-use-linker-plugin", "m.o", "libw.a", "-o", "plain"], cwd=tmp_path)
    assert plain.ok, plain.stderr.decode()  # no plugin: the fat objects' own code, linked as usual
    assert "<weight>:" in proc.run(["objdump", "-d", str(tmp_path / "plain")]).stdout.decode()


def test_the_producer_string_and_the_order_it_gives_the_debug_strings_are_not_a_change():
    """Lua's lctype.c: -O2 added to its -O2 -g compile lengthened the producer string, and gcc
    then placed it, and "short int", elsewhere in .debug_str. Which label names which string
    still counts."""
    a = ('\t.long\t.LASF8\n\t.section\t.debug_str,"MS",@progbits,1\n.LASF8:\n\t.string\t"short int"\n'
         '.LASF13:\n\t.string\t"GNU C99 12.2.0 -g -O2"\n.LASF2:\n\t.string\t"char"\n')
    b = ('\t.long\t.LASF8\n\t.section\t.debug_str,"MS",@progbits,1\n.LASF13:\n\t.string\t"GNU C99 12.2.0 -g -O2 -O2"\n'
         '.LASF2:\n\t.string\t"char"\n.LASF8:\n\t.string\t"short int"\n')
    swapped = a.replace('"short int"', '"x"').replace('"char"', '"short int"').replace('"x"', '"char"')
    assert whole._without_producer(a) == whole._without_producer(b)
    assert whole._without_producer(a) != whole._without_producer(swapped)


def _compiles(*flag_sets):
    from sgcc.project.record import Compile

    return [Compile(key=f"k{n}", source=Path(f"s{n}.c"), cwd=Path("."), args=["gcc", *flags, "-c", f"s{n}.c"],
                    asm_path=Path(f"s{n}.s"), output=Path(f"s{n}.o")) for n, flags in enumerate(flag_sets)]


def test_a_set_that_lowers_the_build_s_level_says_so():
    """brotli at -O3: "-O2 everywhere" shipped as a 1.064x gain, printed nowhere as a change of
    the user's optimisation level."""
    o3 = _compiles(["-O3", "-fPIC"], ["-O2", "-O3"], ["-O2"])
    assert whole.lowers(o3, whole.Variant(("-O2",))) == "lowers the build's -O3 to -O2 on 2 of 3 compiles"
    assert whole.lowers(o3, whole.Variant(("-O3",))) == ""
    assert whole.lowers(o3, whole.Variant(("-O3", "-funroll-loops"))) == ""
    assert whole.lowers(_compiles(["-Ofast"]), whole.Variant(("-O3",))) == \
        "lowers the build's -Ofast to -O3 on 1 of 1 compiles"
    assert whole.lowers(o3, whole.PGO) == ""


def test_a_set_every_compile_has_already_is_not_compiled_or_built():
    """PGO everywhere + -O3 on an -O3 build is PGO everywhere's own compiles: it was built,
    tested and raced (about 90 s on brotli) as if it were another candidate."""
    o3 = _compiles(["-O3", "-g"], ["-O2", "-O3"])
    assert whole.same_as(o3, whole.Variant(("-O3",), profile=True), {"k0", "k1"}) == "PGO everywhere"
    assert whole.same_as(o3, whole.Variant(("-O3",))) == "gcc's build"
    assert whole.same_as(o3, whole.Variant(("-O3", "-funroll-loops"))) == ""
    assert whole.same_as(_compiles(["-O3"], ["-O2"]), whole.Variant(("-O3",), profile=True), {"k0", "k1"}) == ""
    # Only the compiles the profile covers count for a profile-guided set.
    assert whole.same_as(_compiles(["-O3"], ["-O2"]), whole.Variant(("-O3",), profile=True), {"k0"}) == \
        "PGO everywhere"
    unrolled = _compiles(["-O3", "-funroll-loops"], ["-O3", "-fno-unroll-loops", "-funroll-loops"])
    assert whole.same_as(unrolled, whole.Variant(("-O3", "-funroll-loops"))) == "gcc's build"
    assert whole.same_as(_compiles(["-O3", "-funroll-loops", "-fno-unroll-loops"]),
                         whole.Variant(("-O3", "-funroll-loops"))) == ""
    # Compiled, two variants whose texts agree (but for the producer string) are one candidate.
    a = {"k0": '\t.string\t"GNU C17 -O3"\nf:\n\tret\n'}
    assert whole.same_texts(a, {"k0": a["k0"]}) and not whole.same_texts(a, {"k0": "f:\n\tnop\n\tret\n"})
