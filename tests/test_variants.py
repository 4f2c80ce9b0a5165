"""Compiler-variant candidates: units of other gcc compilations made fit for the baseline.

The transplant logic runs on real gcc output of the tricky corpus (clones, constants merged
with .set, cold parts, jump tables, computed goto, static locals, -fipa-ra and
-fipa-stack-alignment assumptions): every unit offered on its own must pass the engine's
text screen, object check and clobber check, link, and print what the baseline prints. A
naive substitution (the variant's unit text as is) is shown to break, so these tests would
catch a wrong rename. Then the generator inside the engine: clones offered through their
callers, the budget, the CLI end to end, and wrong candidates still refused.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.candidates.transplant.asmtext import normalized, references
from sgcc.candidates.transplant.build import transplant
from sgcc.candidates.transplant.side import Side
from sgcc.candidates.variants import VariantsGenerator, needs_native, parse_variants
from sgcc.engine import Request, optimize
from sgcc.verify.static import clobbers, isa, objcheck, textscreen
from tests.conftest import EXAMPLES, TIMING_SAMPLE_SECONDS

CORPUS = Path(__file__).parent / "asm_corpus"
PROGRAMS = EXAMPLES / "programs"
FAST = dict(timing_rounds=6, min_sample=TIMING_SAMPLE_SECONDS, seed=1, test_timeout=5.0)
#: Harsh variants for the transplant logic: other inlining, other clones, other registers.
VARIANTS = {"O2": ["-O2"], "unroll": ["-funroll-loops"], "Os": ["-Os"]}


def _compile(src: Path, flags: list[str], where: Path, name: str) -> tuple[str, Path]:
    s, o = where / f"{name}.s", where / f"{name}.o"
    proc.run(["gcc", "-O3", *flags, "-S", "-o", str(s), str(src)], check=True, timeout=120)
    proc.run(["gcc", "-c", str(s), "-o", str(o)], check=True, timeout=120)
    return s.read_text(), o


def _run(binary: Path, stdin: bytes = b"") -> tuple[bytes, int]:
    r = proc.run([str(binary)], stdin=stdin, timeout=30)
    return r.stdout, r.returncode


def _check_offered(base: Side, base_obj: Path, function: str, t, where: Path, target, link: bool) -> Path | None:
    """Everything the engine does before the tests; the linked binary (or None for a library)."""
    replacements = {function: t.text, **t.also}
    for text in replacements.values():
        verdict = textscreen.screen_text(text, may_define=frozenset(base.units))
        assert verdict.ok, (function, verdict.reason)
    cand_s, cand_o = where / "cand.s", where / "cand.o"
    cand_s.write_text(base.asm.join(replacements))
    r = proc.run(["gcc", "-c", str(cand_s), "-o", str(cand_o)], timeout=120)
    assert r.ok, (function, r.stderr.decode()[-500:])
    verdict = objcheck.check_object(cand_o, base_obj, isa=target)
    assert verdict.ok, (function, verdict.reason)
    for name in replacements:
        assert clobbers.extra_clobbers(cand_o, base_obj, name, replaced=frozenset(replacements)) == [], (function, name)
    if not link:
        return None
    binary = where / "cand"
    r = proc.run(["gcc", str(cand_o), "-lm", "-o", str(binary)], timeout=120)
    assert r.ok, (function, r.stderr.decode()[-500:])
    return binary


@pytest.mark.slow
@pytest.mark.parametrize("stem", sorted(p.stem for p in CORPUS.glob("*.c")))
def test_every_offered_corpus_transplant_links_and_behaves(tmp_path, stem):
    src = CORPUS / f"{stem}.c"
    has_main = "int main" in src.read_text()
    base_text, base_obj = _compile(src, [], tmp_path, "base")
    base = Side(base_text, obj=base_obj)
    target = isa.target_from_flags("gcc", [])
    expected = None
    if has_main:
        proc.run(["gcc", str(base_obj), "-lm", "-o", str(tmp_path / "base")], check=True, timeout=120)
        expected = _run(tmp_path / "base")

    def one(item):
        vname, flags = item
        where = tmp_path / vname
        where.mkdir()
        var_text, var_obj = _compile(src, flags, where, "var")
        var = Side(var_text, obj=var_obj)
        offered = []
        for unit in base.asm.units:
            t = transplant(base, var, unit.name, vname)
            if t.text is None:
                assert t.reason
                continue
            offered.append((unit.name, t))
            binary = _check_offered(base, base_obj, unit.name, t, where, target, has_main)
            if binary is not None:
                assert _run(binary) == expected, (stem, vname, unit.name)
        return offered

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        offered = [x for batch in pool.map(one, VARIANTS.items()) for x in batch]
    for _name, t in offered:
        # Copies get fresh local names, never a clash with the baseline's symbols.
        for copied in t.copied:
            assert copied not in base.units or ".sg_" not in copied


def test_offered_candidates_cover_copies_and_callers(tmp_path):
    """Known cases, checked precisely, each run on its program's tests."""
    cases = [
        # unrolled count_bits uses %r8, which gcc's main keeps live across the call: the
        # variant's main (which knows) comes along.
        (PROGRAMS / "popcount" / "popcount.c", "-funroll-loops", "count_bits", "also", "main"),
        # the variant's main keeps registers live across its call to run that gcc's run
        # clobbers, so run is copied, and its label table (computed goto, read-only, used by
        # run only) travels with it under a fresh name.
        (CORPUS / "computed_goto.c", "-Os", "main", "copied", "ops."),
        # the variant's main calls clones whose names mean other things in the baseline:
        # they come along under fresh names.
        (PROGRAMS / "nqueens" / "nqueens.c", "-funroll-loops", "main", "copied", "place.constprop"),
        # gcc merged two constants with ".set .LC1,.LC0": the alias and its target come along.
        (PROGRAMS / "sieve" / "sieve.c", "-funroll-loops", "sieve", "text", ".set"),
    ]
    target = isa.target_from_flags("gcc", [])
    for src, flag, fn, what, detail in cases:
        where = tmp_path / f"{src.stem}{flag}"
        where.mkdir()
        base_text, base_obj = _compile(src, [], where, "base")
        var_text, var_obj = _compile(src, [flag], where, "var")
        base, var = Side(base_text, obj=base_obj), Side(var_text, obj=var_obj)
        t = transplant(base, var, fn, "x")
        if what == "refused":
            assert t.text is None and detail in t.reason, t.reason
            continue
        assert t.text is not None, t.reason
        if what == "also":
            assert detail in t.also
        elif what == "copied":
            assert any(c.startswith(detail) for c in t.copied), t.copied
            assert ".sg_main_x" in t.text
        else:
            assert detail in t.text
        binary = _check_offered(base, base_obj, fn, t, where, target, True)
        ref = _link(base_obj, where)
        for test in sorted((src.parent / "tests").glob("*.in")):
            assert _run(binary, test.read_bytes()) == _run(ref, test.read_bytes()), (src.stem, test.name)


def _link(obj: Path, where: Path) -> Path:
    proc.run(["gcc", str(obj), "-lm", "-o", str(where / "base")], check=True, timeout=120)
    return where / "base"


NEGATIVE = r"""
#include <stdio.h>
__attribute__((noinline)) void h(float *a, int n) { for (int i = 0; i < n; i++) a[i] = i * 3.5f + 0.75f; }
__attribute__((noinline)) double f(double x) { return x * 1.25 + 0.5; }
__attribute__((noinline)) double g(double x) { return x * 0.5 - 1.25; }
int main(void) {
    float a[64]; h(a, 64);
    double s = 0;
    for (int i = 0; i < 64; i++) s += f(a[i]) + 3 * g(a[i]);
    printf("%.6f\n", s);
    return 0;
}
"""


def test_shared_constants_renumbered_between_compilations(tmp_path):
    """f and g share their constants (so they live outside both units); vectorizing h first
    under -O3 numbers them differently than -fno-tree-vectorize does. The variant's g taken
    as is refers to the baseline's .LC2/.LC3, other constants or none: it cannot be right.
    The transplant copies the constants it uses and gets the baseline's answer."""
    src = tmp_path / "q.c"
    src.write_text(NEGATIVE)
    base_text, base_obj = _compile(src, [], tmp_path, "base")
    var_text, var_obj = _compile(src, ["-fno-tree-vectorize"], tmp_path, "var")
    base, var = Side(base_text, obj=base_obj), Side(var_text, obj=var_obj)
    expected = _run(_link(base_obj, tmp_path))
    shared = {r for r in references(var.units["g"].text)[0] if r.startswith(".LC")}
    assert shared and not shared & {lab for lab in shared if f"{lab}:" in var.units["g"].text}

    def outcome(text: str):
        s = tmp_path / "j.s"
        s.write_text(base.asm.join({"g": text}))
        r = proc.run(["gcc", str(s), "-o", str(tmp_path / "j")], timeout=120)
        return _run(tmp_path / "j") if r.ok else "does not link"

    assert outcome(var.units["g"].text) != expected  # naive: wrong or unlinkable
    t = transplant(base, var, "g", "x")
    assert t.text is not None, t.reason
    assert outcome(t.text) == expected
    assert normalized(t.text) != normalized(var.units["g"].text)  # the constants came along


def test_generator_offers_clone_callers_and_skips_identical(tmp_path):
    """Inside the generator: a clone of the baseline is offered through its callers; a
    variant that changes nothing offers nothing; -march sets wait for --isa native."""
    from sgcc.candidates import Context
    from sgcc.engine import Engine

    d = PROGRAMS / "nqueens"
    req = Request(source=d / "nqueens.c", flags=["-O3"], tests=d / "tests", output=tmp_path / "out")
    engine = Engine(req)
    try:
        program = engine.build_baseline()
        gen = VariantsGenerator([("same", ["-O3"]), ("unroll", ["-funroll-loops"]), ("native", ["-march=native"])])
        ctx = Context(program=program, sandbox=None, tests=[], workdir=engine.workdir, compiler="gcc",
                      isa="flags", jobs=2)
        gen.prepare(ctx)
        assert gen.variants == [] and gen.rounds == 1  # compiled as the search asks, 2 (jobs) a round
        clone = next(u for u in program.asm.units if ".constprop." in u.name)
        cands = gen.propose(program, clone, 0, [])
        assert [v.name for v in gen.variants] == ["same", "unroll"]  # no -march under --isa flags
        real = [c for c in cands if not c.skip]
        assert real and all(c.function == "main" and c.meta["variant"] == "unroll" for c in real)
        assert all(".constprop." not in c.function for c in cands)
        assert gen.propose(program, clone, 0, []) == []  # offered once, not again for each clone
        assert gen.propose(program, program.asm.unit("main"), 1, []) == []  # one round
        # A compilation identical to the baseline offers nothing at all (no A-vs-A builds).
        same = VariantsGenerator([("same", ["-O3"])])
        same.prepare(ctx)
        assert all(same.propose(program, u, 0, []) == [] for u in program.asm.units)
    finally:
        engine.close()
    assert needs_native(["-march=native"]) and not needs_native(["-mtune=native", "-O2"])
    assert parse_variants("-funroll-loops; -O2 -fno-tree-vectorize") == [
        ("funroll-loops", ["-funroll-loops"]), ("O2_fno-tree-vectorize", ["-O2", "-fno-tree-vectorize"])]


@pytest.mark.slow
def test_budget_in_candidates_is_respected(tmp_path):
    d = PROGRAMS / "bitrev"
    tests = _small_tests(d, tmp_path / "tests")
    report = optimize(Request(source=d / "bitrev.c", flags=["-O3"], tests=tests, output=tmp_path / "out",
                              generators=[VariantsGenerator()], budget_candidates=3, **FAST))
    built = [c for c in report.candidates if c.id != "-"]
    assert 1 <= len(built) <= 3
    assert any(c.reason == "search budget reached" for c in report.candidates)
    assert any("search budget reached" in n for n in report.notes)


@pytest.mark.slow
def test_budget_in_seconds_stops_the_search(tmp_path):
    d = PROGRAMS / "histogram"
    from sgcc.candidates.layout import LayoutGenerator

    # Two workers: the first group of builds is the first candidate of each generator (the
    # engine takes them in turn), so both are built before the seconds budget is checked again.
    # The budget's clock starts with the run (baseline, profile, preparation), which takes 2-5 s
    # here depending on the machine's load: a run whose preparation used the whole budget is
    # retried with that overhead added, so the test is about the search, not the machine.
    seconds = 4.0
    for _ in range(3):
        report = optimize(Request(source=d / "histogram.c", flags=["-O3"], tests=d / "tests",
                                  output=tmp_path / "out", generators=[VariantsGenerator(), LayoutGenerator()],
                                  budget_seconds=seconds, jobs=2, **FAST))
        built = [c for c in report.candidates if c.id != "-"]
        skipped = [c for c in report.candidates if c.reason.endswith("search budget reached")]
        assert skipped, report.summary()  # the budget stops the search, whatever the overhead
        if built:
            break
        seconds = report.budget["before_search_seconds"] + 4.0
    assert built and skipped, report.summary()
    assert any("search budget reached" in n for n in report.notes)
    # Round-robin: the layout generator got its turn before the budget ran out.
    assert {c.generator for c in built} == {"variants", "layout"}, report.summary()


def test_native_variant_changing_floating_point_is_refused_at_test(tmp_path):
    """-march=native lets gcc contract a*b+c into a fused multiply-add: other low bits. The
    tests see it, so the candidate stops at `test`, and what ships prints gcc -O3's digits."""
    src = tmp_path / "fma.c"
    src.write_text(r"""
#include <stdio.h>
__attribute__((noinline)) double dot(const double *a, const double *b, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s = a[i] * b[i] + s * 0.999999;
    return s;
}
int main(void) {
    int n; if (scanf("%d", &n) != 1 || n < 1 || n > 4096) return 1;
    double a[4096], b[4096];
    for (int i = 0; i < n; i++) { a[i] = 1.0 / (i + 3); b[i] = (i % 7) * 0.1 + 1e-9 * i; }
    printf("%.17g\n", dot(a, b, n));
    return 0;
}
""")
    tests = tmp_path / "tests"
    tests.mkdir()
    for k, n in enumerate((1, 17, 1000, 4096)):
        (tests / f"t{k}.in").write_text(f"{n}\n")
    report = optimize(Request(source=src, flags=["-O3"], tests=tests, output=tmp_path / "out", isa="native",
                              generators=[VariantsGenerator([("native", ["-march=native"])])], **FAST))
    dot = [c for c in report.candidates if c.function == "dot" and c.id != "-"]
    assert dot and dot[0].stage == "test", [(c.stage, c.reason) for c in report.candidates]
    ref = tmp_path / "ref"
    proc.run(["gcc", "-O3", str(src), "-o", str(ref)], check=True)
    for t in sorted(tests.glob("*.in")):
        assert _run(tmp_path / "out", t.read_bytes()) == _run(ref, t.read_bytes())


def _small_tests(d: Path, where: Path, heavy: str = "large") -> Path:
    """The program's tests without the heaviest (the profile and timing runs stay short)."""
    where.mkdir()
    for f in (d / "tests").iterdir():
        if not f.name.startswith(heavy + "."):
            (where / f.name).write_bytes(f.read_bytes())
    return where


@pytest.mark.slow
def test_cli_all_generators_ship_a_correct_program(tmp_path, sgcc_exe):
    """`sgcc optimize --generators variants,pgo,layout` end to end, with known-bad replay
    candidates in the same run: the bad ones are refused, the report names the generator of
    every candidate (and of what shipped), and the output passes every test."""
    d = PROGRAMS / "popcount"
    out, report_path = tmp_path / "popcount", tmp_path / "r.json"
    tests = _small_tests(d, tmp_path / "tests")
    bad = tmp_path / "bad" / "count_bits"
    bad.mkdir(parents=True)
    for f in (d / "bad").glob("*.s"):  # wrong output; breaks main through -fipa-ra
        (bad / f.name).write_text(f.read_text())
    env = {**os.environ, "SGCC_CONFIG": str(tmp_path / "none.toml")}
    r = proc.run([sgcc_exe, "optimize", str(d / "popcount.c"), "-O3", "--tests", str(tests), "-o", str(out),
                  "--candidates", str(bad.parent), "--generators", "replay,variants,pgo,layout",
                  "--budget", "7", "--timing-rounds", "6", "--seed", "1", "--report", str(report_path), "-q"],
                 timeout=900, env=env)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    data = json.loads(report_path.read_text())
    assert data["generators"] == ["replay", "variants", "pgo", "layout"]
    gens = {c["generator"] for c in data["candidates"] if c["id"] != "-"}
    assert {"replay", "variants", "pgo", "layout"} <= gens, gens  # the budget is shared in turn
    assert len([c for c in data["candidates"] if c["id"] != "-"]) <= 7
    replay = {Path(c["origin"]).stem: c["stage"] for c in data["candidates"] if c["generator"] == "replay"}
    assert replay == {"wrong_output": "test", "clobbers_r8": "check"}, replay
    by_id = {c["id"]: c for c in data["candidates"]}
    for cid in data["shipped"]:
        assert by_id[cid]["generator"] in ("variants", "pgo", "layout")
        assert by_id[cid]["stage"] == "accepted"
    for t in sorted((d / "tests").glob("*.in")):
        got = _run(out, t.read_bytes())
        assert got == (t.with_suffix(".out").read_bytes(), 0), t.name


NON_PIE = r"""
#include <stdio.h>
__attribute__((noinline)) void h(float *a, int n) { for (int i = 0; i < n; i++) a[i] = i * 3.5f + 0.75f; }
__attribute__((noinline)) void f(double x) { printf("value %g\n", x * 1.25); }
__attribute__((noinline)) void g(double x) { printf("value %g\n", x - 1.25); }
int main(void) {
    float a[8]; h(a, 8);
    for (int i = 0; i < 8; i++) { f(a[i]); g(a[i]); }
    return 0;
}
"""


def test_non_pie_immediate_addresses_are_renamed_too(tmp_path):
    """Without -fpie gcc passes a string's address as an immediate, `movl $.LC2, %edi`:
    the `$` is no part of the name, so the constant is copied and renamed like any other."""
    src = tmp_path / "np.c"
    src.write_text(NON_PIE)
    base_text, base_obj = _compile(src, ["-fno-pie"], tmp_path, "base")
    var_text, var_obj = _compile(src, ["-fno-pie", "-fno-tree-vectorize"], tmp_path, "var")
    assert "$.LC" in var_text
    base, var = Side(base_text, obj=base_obj), Side(var_text, obj=var_obj)
    proc.run(["gcc", "-no-pie", str(base_obj), "-o", str(tmp_path / "base")], check=True)
    expected = _run(tmp_path / "base")
    t = transplant(base, var, "g", "x")
    assert t.text is not None, t.reason
    s = tmp_path / "j.s"
    s.write_text(base.asm.join({"g": t.text, **t.also}))
    proc.run(["gcc", "-no-pie", str(s), "-o", str(tmp_path / "j")], check=True)
    assert _run(tmp_path / "j") == expected


def test_variants_compile_one_step_at_a_time_as_the_search_asks(tmp_path):
    """Preparation compiles nothing; each round compiles the next ``jobs`` variants, most
    promising first; what was never asked for is left over (the engine reports it as cut).
    A generator prepared again for another program offers nothing of the first one's.
    Before, prepare compiled every variant (7 of Lua's lvm.c took 90 s before any build)."""
    from sgcc.candidates import Context
    from sgcc.engine import Engine

    sets = [("unroll", ["-funroll-loops"]), ("O2", ["-O2"]), ("novect", ["-fno-tree-vectorize"])]
    d = PROGRAMS / "nqueens"
    engine = Engine(Request(source=d / "nqueens.c", flags=["-O3"], tests=d / "tests", output=tmp_path / "out"))
    other = Engine(Request(source=PROGRAMS / "bitrev" / "bitrev.c", flags=["-O3"], tests=PROGRAMS / "bitrev" / "tests",
                           output=tmp_path / "out2"))
    try:
        program = engine.build_baseline()
        gen = VariantsGenerator(sets)
        ctx = Context(program=program, sandbox=None, tests=[], workdir=engine.workdir, compiler="gcc",
                      isa="flags", jobs=1)
        gen.prepare(ctx)
        assert gen.variants == [] and gen.rounds == 3 and gen.waiting()
        assert not list((Path(engine.workdir) / "variants").glob("*.s"))  # nothing compiled yet
        assert [v.name for v in gen.left_over()] == ["unroll", "O2", "novect"]
        main = program.asm.unit("main")
        gen.propose(program, main, 0, [])
        assert [v.name for v in gen.variants] == ["unroll"]  # the first, alone
        gen.propose(program, main, 1, [])
        assert [v.name for v in gen.variants] == ["unroll", "O2"]
        assert [v.name for v in gen.left_over()] == ["novect"] and gen.waiting()
        gen.propose(program, main, 2, [])
        assert not gen.waiting() and gen.left_over() == [] and gen.propose(program, main, 3, []) == []

        # The same generator, prepared for another program: only that program's compilations.
        prog2 = other.build_baseline()
        gen.prepare(Context(program=prog2, sandbox=None, tests=[], workdir=other.workdir, compiler="gcc",
                            isa="flags", jobs=3))
        assert gen.variants == [] and gen.rounds == 1
        unit = next(u for u in prog2.asm.units if u.name != "main")
        cands = gen.propose(prog2, unit, 0, [])
        assert [v.name for v in gen.variants] == ["unroll", "O2", "novect"]
        assert all(unit.name in v.side.units for v in gen.variants if v.side is not None)
        assert all(c.function in prog2.defined or c.function == "<translation-unit>" for c in cands)
    finally:
        engine.close()
        other.close()
