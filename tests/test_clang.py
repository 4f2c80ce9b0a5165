"""The clang generator (sgcc.candidates.clang): LLVM's code for each function, with the real
clang of the ziglang wheel (the [clang] extra, which the [test] extra installs) and gcc.

What clang's code needs to fit gcc's unit is checked on real compilations: its assembly in
gcc's shape (units the splitter finds, text gcc's assembler takes), the meaning of gcc's
flags in clang's words, and the one transplant rule clang needs and gcc's variants do not:
a static function of clang's may be called otherwise than its C declaration says, so its
callers come along (run: the combined program prints gcc's answer). Then the generator in a
run: "not installed" said once, and (slow) clang's candidates built, tested and timed by
``sgcc optimize`` beside the reference of clang's whole program.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from sgcc import proc
from sgcc.asm.units import AsmFile
from sgcc.candidates import clang
from sgcc.candidates.transplant.build import transplant
from sgcc.candidates.transplant.generator import Variant
from sgcc.candidates.transplant.side import Side

ROOT = Path(__file__).resolve().parent.parent

SHAPES = r"""#include <stdio.h>
static const double weights[4] = {0.5, 1.5, 2.5, 3.5};
int pick(int k, int x)
{
    switch (k) {
    case 0: return x + 1; case 1: return x * 7; case 2: return x - 3; case 3: return x ^ 5;
    case 4: return x << 2; case 5: return -x; default: return 0;
    }
}
double blend(const double *a, int n) { double s = 0; for (int i = 0; i < n; i++) s += a[i] * weights[i & 3]; return s; }
int main(void) { double a[8] = {1, 2, 3, 4, 5, 6, 7, 8}; printf("%d %g\n", pick(3, 9), blend(a, 8)); return 0; }
"""


@pytest.fixture(scope="module")
def command():
    cmd, why = clang.locate()
    assert cmd is not None, f"the [test] extra installs the ziglang wheel's clang: {why}"
    return cmd


def _compile(command, src: Path, out: Path, flags=("-O3",)) -> str:
    base = clang.gcc_defaults("gcc", list(flags)) + clang.clang_flags(list(flags))
    proc.run([*command, "-target", "x86_64-linux-gnu", *base, "-g0", "-w", "-fno-addrsig", "-S", "-o", str(out),
              str(src)], check=True, timeout=120)
    return out.read_text()


def test_clang_s_assembly_in_gcc_s_shape(tmp_path, command):
    """Every function becomes a unit (clang ends them with `.Lfunc_endN`, which the splitter
    does not know); CFI registers by number, jump tables and constant pools assemble."""
    src = tmp_path / "s.c"
    src.write_text(SHAPES)
    raw = _compile(command, src, tmp_path / "raw.s")
    assert {u.name for u in AsmFile.parse(raw).units} == set()  # the splitter alone finds none
    shaped = clang.gcc_shaped(raw)
    assert {u.name for u in AsmFile.parse(shaped).units} == {"pick", "blend", "main"}
    assert "%r" not in "".join(ln for ln in shaped.splitlines() if ".cfi_" in ln)
    (tmp_path / "shaped.s").write_text(shaped)
    proc.run(["gcc", "-c", str(tmp_path / "shaped.s"), "-o", str(tmp_path / "shaped.o")], check=True)
    # A switch's jump table, which clang writes after the function, travels in its unit.
    table = clang.gcc_shaped(_compile(command, ROOT / "tests" / "asm_corpus" / "switch_table.c", tmp_path / "sw.s"))
    unit = AsmFile.parse(table).unit("dispatch")
    assert ".LJTI0_0:" in unit.text and ".long\t.LBB0_3-.LJTI0_0" in unit.text
    (tmp_path / "sw2.s").write_text(table)
    proc.run(["gcc", "-c", str(tmp_path / "sw2.s"), "-o", str(tmp_path / "sw2.o")], check=True)


def test_gcc_s_flags_in_clang_s_words():
    assert clang.clang_flags(["-O2", "-Wall", "-I", "inc", "-DX=1", "-lm", "-ftree-vectorize", "-g", "-std=c99"]) == \
        ["-O2", "-I", "inc", "-DX=1", "-std=c99", "-ffp-contract=off"]
    assert clang.clang_flags(["-Ofast"]) == ["-O3", "-ffast-math"]  # no added contraction rule
    assert clang.clang_flags(["-O3", "-ffp-contract=fast"]) == ["-O3", "-ffp-contract=fast"]
    assert clang.clang_flags(["-O3", "-march=native"], isa="native") == ["-O3", "-march=native", "-ffp-contract=off"]
    for flags, isa in ((["-O3", "-march=native"], "flags"), (["-O3", "-fsanitize=address"], "flags"),
                       (["-O3", "-fpatchable-function-entry=4"], "flags")):
        with pytest.raises(clang.Untranslatable):
            clang.clang_flags(flags, isa=isa)


STATIC = r"""#include <stdio.h>
static __attribute__((noinline)) long scale(long unused, long x) { return x * 3 + 1; }
__attribute__((noinline)) long twice(long a) { return scale(a + 100, a) + scale(a - 7, a + 1); }
int main(void) { long s = 0; for (long i = 0; i < 10; i++) s += twice(i); printf("%ld\n", s); return 0; }
"""


def test_a_static_function_of_clang_s_comes_with_its_callers(tmp_path, command):
    """LLVM drops scale's unused argument without renaming it: clang's scale takes x in %rdi,
    gcc's twice passes it in %rsi. Offered alone it computes from the wrong argument; so
    clang's twice comes along, and the combined program prints what gcc's does."""
    src = tmp_path / "st.c"
    src.write_text(STATIC)
    flags = ["-O3", "-fno-ipa-sra", "-fno-ipa-cp"]  # gcc keeps scale with its C signature
    proc.run(["gcc", *flags, "-S", str(src), "-o", str(tmp_path / "base.s")], check=True)
    proc.run(["gcc", "-c", str(tmp_path / "base.s"), "-o", str(tmp_path / "base.o")], check=True)
    base = Side((tmp_path / "base.s").read_text(), obj=tmp_path / "base.o")
    assert "scale" in base.units
    ctx = SimpleNamespace(program=SimpleNamespace(source=src, flags=flags, asm_flags=[], source_arg=None, compile_cwd=None),
                          compiler="gcc")
    v = clang.compile_clang(ctx, command, clang.gcc_defaults("gcc", flags) + clang.clang_flags(flags),
                            Variant("O3", ["-O3"]), tmp_path / "clang")
    assert v.side is not None, v.error
    t = transplant(base, v.side, "scale", "t")
    assert t.text is not None, t.reason
    assert set(t.also) == {"twice"}, t.also
    (tmp_path / "cand.s").write_text(base.asm.join({"scale": t.text, **t.also}))
    proc.run(["gcc", str(tmp_path / "cand.s"), "-o", str(tmp_path / "cand")], check=True)
    proc.run(["gcc", str(tmp_path / "base.s"), "-o", str(tmp_path / "gcc")], check=True)
    assert proc.run([str(tmp_path / "cand")]).stdout == proc.run([str(tmp_path / "gcc")]).stdout


def test_not_installed_is_said_once_and_nothing_is_offered(tmp_path):
    """A missing clang: the first source of a run says why, later ones stay silent."""
    src = ROOT / "examples" / "programs" / "popcount" / "popcount.c"
    proc.run(["gcc", "-O3", "-S", str(src), "-o", str(tmp_path / "p.s")], check=True)
    proc.run(["gcc", "-c", str(tmp_path / "p.s"), "-o", str(tmp_path / "p.o")], check=True)
    text = (tmp_path / "p.s").read_text()
    program = SimpleNamespace(source=src, flags=["-O3"], asm_text=text, asm=AsmFile.parse(text),
                              obj=tmp_path / "p.o", asm_flags=[])
    ctx = SimpleNamespace(program=program, isa="flags", compiler="gcc", workdir=tmp_path, jobs=1, note=None)
    gen = clang.ClangGenerator(setting=str(tmp_path / "no-such-clang"))
    said = []
    for _source in range(2):
        gen.prepare(ctx)
        for unit in program.asm.units:
            said += [c.skip for c in gen.propose(program, unit, 0, [])]
    assert len(said) == 1 and said[0].startswith("clang: not installed"), said


@pytest.mark.slow
def test_clang_candidates_in_a_run(tmp_path, sgcc_exe):
    """crc32's bit loop, as clang compiles it, goes through every stage as an untrusted
    candidate; the report tallies the generator and times clang's whole program beside
    sgcc's result. A missing clang (the `clang` setting naming nothing) is said once and the
    run goes on."""
    d = ROOT / "bench" / "heldout" / "crc32"
    tests = tmp_path / "tests"
    tests.mkdir()
    for t in sorted((d / "tests").glob("*.in"))[:2]:
        (tests / t.name).write_bytes(t.read_bytes())
    env = {**os.environ, "SGCC_CONFIG": str(tmp_path / "none.toml")}
    report = tmp_path / "r.json"
    r = proc.run([sgcc_exe, "optimize", str(d / "crc32.c"), "-O3", "--tests", str(tests), "-o", str(tmp_path / "out"),
                  "--generators", "clang", "--budget", "60s", "--timing-rounds", "6", "--report", str(report)],
                 timeout=900, env=env)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    data = json.loads(report.read_text())
    tally = data["per_generator"]["clang"]
    assert tally["built"] >= 1 and tally["passed"] >= 1, tally
    ref = data["references"]["clang_whole_program"]
    assert "speedup" in ref and ref["what"] == "clang -O3", ref
    assert re.search(rb"sgcc: clang: \d+ offered, \d+ built", r.stderr), r.stderr[-1500:]
    assert b"clang's whole program (clang -O3) " in r.stderr
    r = proc.run([sgcc_exe, "optimize", str(d / "crc32.c"), "-O3", "--tests", str(tests), "-o", str(tmp_path / "o2"),
                  "--generators", "layout,clang", "--budget", "20s", "--report", str(report), "-q"],
                 timeout=900, env={**env, "SGCC_CLANG": str(tmp_path / "no-clang")})
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    data = json.loads(report.read_text())
    said = [c["reason"] for c in data["candidates"] if c["generator"] == "clang"]
    assert len(said) == 1 and said[0].startswith("clang: not installed"), said
    assert "clang_whole_program" in data["references"] and "error" in data["references"]["clang_whole_program"]


def test_the_bench_table_has_clang_s_column():
    """`sgcc bench` (and bench/examples.py --clang) shows clang's whole program beside what
    sgcc shipped, and its geometric mean; without the clang generator, no column."""
    from sgcc.lab.bench import render

    def row(name, clang_ref):
        return {"name": name, "honest": {"speedup": 1.2, "ci_low": 1.1, "ci_high": 1.3, "functions": ["f"]},
                "candidates": 3, "built": 3, "compiled": True, "passed": True, "speedup": 1.2, "seconds": 9.0,
                "outcome": "shipped f", "clang": clang_ref}

    result = {"problems": [row("crc32", {"what": "clang -O3", "speedup": 1.69, "low": 1.66, "high": 1.70}),
                           row("lcs", {"what": "clang -O3", "error": "its output differs"})],
              "paper": {"problems": 2, "compile_pass": 100.0, "test_pass": 100.0, "p25": 1.2, "p50": 1.2,
                        "p75": 1.2, "average": 1.2},
              "honest": {"shipped": 2, "problems": 2, "geomean": 1.2, "ci_low": 1.1, "ci_high": 1.3,
                         "significant": 2, "significant_share": 100.0},
              "search_seconds": 18.0}
    text = render(result)
    header = text.splitlines()[0]
    assert header.split()[8] == "clang", header  # after "95% CI"
    assert " 1.690 " in text.splitlines()[1] and " - " in text.splitlines()[2]
    assert "clang's whole program against gcc's: geometric mean 1.690x over the 1 problems" in text
    for r in result["problems"]:
        r["clang"] = None
    assert "clang" not in render(result).splitlines()[0]


def test_the_search_key_names_which_clang(tmp_path, monkeypatch):
    """A verdict found without clang (or with another) is not this clang's: the generators'
    description, part of the cache's search key, says which clang would run."""
    from sgcc import config
    from sgcc.candidates import registry

    monkeypatch.setenv("SGCC_CONFIG", str(tmp_path / "none.toml"))
    with_clang = registry.describe(config.load({"generators": "clang"}))
    assert f"clang={clang.locate()[0][0]}:" in with_clang
    missing = registry.describe(config.load({"generators": "clang", "clang": str(tmp_path / "none")}))
    assert "clang=none|" in missing and missing != with_clang


def test_clang_s_call_where_gcc_inlined_brings_clang_s_callee(tmp_path, command):
    """gcc inlined dispatch into main; clang's main calls it. An untrusted main may call only
    what gcc's main reaches, so clang's dispatch comes along as a private copy (not gcc's),
    and the information-flow rule lets the candidate through."""
    from sgcc.verify.static import controlflow

    src = ROOT / "tests" / "asm_corpus" / "switch_table.c"
    proc.run(["gcc", "-O3", "-S", str(src), "-o", str(tmp_path / "base.s")], check=True)
    proc.run(["gcc", "-c", str(tmp_path / "base.s"), "-o", str(tmp_path / "base.o")], check=True)
    base = Side((tmp_path / "base.s").read_text(), obj=tmp_path / "base.o")
    assert "dispatch" in base.units and "dispatch" not in base.reaches("main")
    ctx = SimpleNamespace(program=SimpleNamespace(source=src, flags=["-O3"], asm_flags=[], source_arg=None,
                                                 compile_cwd=None), compiler="gcc")
    v = clang.compile_clang(ctx, command, clang.gcc_defaults("gcc", ["-O3"]) + clang.clang_flags(["-O3"]),
                            Variant("O3", ["-O3"]), tmp_path / "clang")
    t = transplant(base, v.side, "main", "t")
    assert t.text is not None and "dispatch" in t.copied, (t.reason, t.copied, t.kept)
    (tmp_path / "cand.s").write_text(base.asm.join({"main": t.text, **t.also}))
    proc.run(["gcc", "-c", str(tmp_path / "cand.s"), "-o", str(tmp_path / "cand.o")], check=True)
    assert controlflow.check(tmp_path / "cand.o", tmp_path / "base.o", frozenset({"main", *t.also})) == []


def test_auto_may_leave_clang_out_where_runs_are_not_boxed(tmp_path, monkeypatch):
    """Chosen by `auto`, clang is optional (the engine leaves it out, with a note, where the
    isolated runner is incomplete); named, it is asked for (the run then needs isolation or
    --accept-isolation-risk, as for any untrusted generator)."""
    from sgcc import config
    from sgcc.candidates import registry

    monkeypatch.setenv("SGCC_CONFIG", str(tmp_path / "none.toml"))
    by_name = {g.name: g for g in registry.build(config.load({"generators": "auto"}))}
    assert by_name["clang"].optional and not by_name["clang"].trusted
    assert not any(g.optional for n, g in by_name.items() if n != "clang")
    [named] = registry.build(config.load({"generators": "clang"}))
    assert not named.optional


def _three_sides(tmp_path, command, src, flags):
    """gcc's compilation of ``src`` (the baseline), gcc's under -fno-ipa-ra (the callers that
    may come along) and clang's -O3: the sides a transplant with ``abi`` sees."""

    def side(name, extra):
        proc.run(["gcc", *flags, *extra, "-S", str(src), "-o", str(tmp_path / f"{name}.s")], check=True)
        proc.run(["gcc", "-c", str(tmp_path / f"{name}.s"), "-o", str(tmp_path / f"{name}.o")], check=True)
        return Side((tmp_path / f"{name}.s").read_text(), obj=tmp_path / f"{name}.o")

    base, abi = side("base", []), side("abi", ["-fno-ipa-ra"])
    abi.no_ipa_ra = True
    ctx = SimpleNamespace(program=SimpleNamespace(source=src, flags=flags, asm_flags=[], source_arg=None,
                                                 compile_cwd=None), compiler="gcc")
    v = clang.compile_clang(ctx, command, clang.gcc_defaults("gcc", flags) + clang.clang_flags(flags),
                            Variant("O3", ["-O3"]), tmp_path / "clang")
    assert v.side is not None, v.error
    return base, abi, v.side


def test_callers_needed_only_for_ipa_ra_are_gcc_s_own_under_no_ipa_ra(tmp_path, command):
    """clang's crc32_bits changes registers gcc's main keeps live across the call (-fipa-ra).
    The caller that must come along is gcc's own main compiled under -fno-ipa-ra, not clang's
    (which read a stale stack slot after a failed scanf and was refused by the footprint
    rule, so clang's 2x crc32_bits never shipped); where that compilation is missing,
    clang's main comes as before. The combined program prints gcc's answers, and the engine's
    register check passes only with main replaced."""
    from sgcc.verify.static import clobbers

    src = ROOT / "bench" / "heldout" / "crc32" / "crc32.c"
    flags = ["-O3"]

    base, abi, theirs_side = _three_sides(tmp_path, command, src, flags)
    theirs = transplant(base, theirs_side, "crc32_bits", "t")
    assert theirs.text is not None and set(theirs.also) == {"main"} and theirs.abi_callers == [], theirs.reason
    ours = transplant(base, theirs_side, "crc32_bits", "t", abi=lambda: abi)
    assert ours.text is not None and ours.abi_callers == ["main"] and set(ours.also) == {"main"}
    assert "crc32_bits" in ours.also["main"] and ours.also["main"] != theirs.also["main"]
    # Here gcc's main under -fno-ipa-ra is its main: the static liveness of the registers after
    # the call was cautious, and gcc's own compilation is what shows main assumes only the ABI.
    assert ours.also["main"] == abi.units["main"].text
    missing = transplant(base, theirs_side, "crc32_bits", "t", abi=lambda: None)
    assert missing.also == theirs.also and missing.abi_callers == []
    gold = tmp_path / "gcc"
    proc.run(["gcc", str(tmp_path / "base.s"), "-o", str(gold)], check=True)
    for name, parts in {"alone": {"crc32_bits": ours.text},
                        "with": {"crc32_bits": ours.text, **ours.also}}.items():
        (tmp_path / f"{name}.s").write_text(base.asm.join(parts))
        proc.run(["gcc", "-c", str(tmp_path / f"{name}.s"), "-o", str(tmp_path / f"{name}.o")], check=True)
        extra = clobbers.extra_clobbers(tmp_path / f"{name}.o", tmp_path / "base.o", "crc32_bits",
                                        replaced=frozenset(parts))
        assert bool(extra) == (name == "alone"), (name, extra)
    proc.run(["gcc", str(tmp_path / "with.o"), "-o", str(tmp_path / "cand")], check=True)
    for test in sorted((src.parent / "tests").glob("*.in")):
        want = proc.run([str(gold)], stdin=test.read_bytes(), timeout=60).stdout
        assert proc.run([str(tmp_path / "cand")], stdin=test.read_bytes(), timeout=60).stdout == want, test.name


TRANSITIVE = r"""#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) int F(const int *a, int n) {
    int s = 0; for (int i = 0; i < n; i++) s += (a[i] * a[i]) ^ i; return s; }
__attribute__((noinline)) int C(const int *a, int n, int k) { int r = F(a, n); return r + k * n; }
__attribute__((noinline)) double D(const int *a, int n, double x) {
    if (n < 0) abort(); double y = x * 3.0; int r = C(a, n, 7); return y + r; }
int main(int argc, char **argv) { int a[64]; for (int i = 0; i < 64; i++) a[i] = i * argc;
    printf("%g\n", D(a, 64, argc)); return 0; }
"""


def test_gcc_s_no_ipa_ra_caller_whose_own_callers_rely_on_it_is_not_brought(tmp_path, command):
    """gcc's D keeps x in %xmm0 across its call to C (-fipa-ra: gcc's C, calling gcc's F,
    leaves it alone); clang's vectorised F writes %xmm0. gcc's C under -fno-ipa-ra calls
    clang's F, so what it changes is clang's F's, not what its compilation says: D would lose
    x (the program printed 86400 where gcc's prints 86403; found by a review). The transplant
    falls back to clang's callers, which the engine's register check passes."""
    from sgcc.verify.static import clobbers

    src = tmp_path / "t.c"
    src.write_text(TRANSITIVE)
    flags = ["-O2"]

    base, abi, theirs_side = _three_sides(tmp_path, command, src, flags)

    def engine_refuses(t, label):
        parts = {"F": t.text, **t.also}
        (tmp_path / f"{label}.s").write_text(base.asm.join(parts))
        proc.run(["gcc", "-c", str(tmp_path / f"{label}.s"), "-o", str(tmp_path / f"{label}.o")], check=True)
        return {n: e for n in parts if (e := clobbers.extra_clobbers(tmp_path / f"{label}.o", tmp_path / "base.o",
                                                                    n, replaced=frozenset(parts)))}

    theirs = transplant(base, theirs_side, "F", "t")
    assert theirs.text is not None and engine_refuses(theirs, "theirs") == {}
    ours = transplant(base, theirs_side, "F", "t", abi=lambda: abi)
    assert ours.text is not None, ours.reason
    assert engine_refuses(ours, "ours") == {}, (sorted(ours.also), ours.abi_callers)
    assert ours.abi_callers == []


def _unit(name, body, glob=True):
    return ((f"\t.globl\t{name}\n" if glob else "") + f"\t.type\t{name}, @function\n{name}:\n"
            + "".join(f"\t{ln}\n" for ln in body.strip().splitlines()) + f"\t.size\t{name}, .-{name}\n")


def test_gcc_s_caller_that_would_reach_a_copy_of_the_function_is_not_brought():
    """gcc's -fno-ipa-ra C calls F and a clone of its own that tail-jumps to F: the clone's
    private copy takes F along, and the renaming points C's call at the copy too, so the
    shipped C would never call the candidate's F (found by a review)."""
    from sgcc.candidates.transplant.build import _abi_callers

    h = _unit("H", "movl\t$1, %eax\nret")
    base = Side("\t.text\n" + _unit("F", "call\tH\naddl\t$1, %eax\nret") + h
                + _unit("C", "call\tF\naddl\t$2, %eax\nret"))
    abi = Side("\t.text\n" + _unit("F", "pushq\t%rbx\ncall\tH\naddl\t$1, %eax\npopq\t%rbx\nret") + h
               + _unit("C.part.0", "jmp\tF", glob=False) + _unit("C", "call\tF\ncall\tC.part.0\naddl\t$2, %eax\nret"))
    abi.no_ipa_ra = True
    fitted = _abi_callers(base, abi, "F", ["C"], "t", True, 4, {"F"}, False)
    assert isinstance(fitted, str) or "call\tF\n" in fitted["C"], fitted
