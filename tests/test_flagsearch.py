"""The flag search: an allow-list of output-preserving options, seeded choices, and mutations
that start from what the engine timed fastest; inside the engine, later rounds really come
and what ships is correct."""

from __future__ import annotations

import re

import pytest

from sgcc import proc
from sgcc.candidates import Attempt, Candidate, Generator
from sgcc.candidates.flagsearch import GENES, NATIVE_GENES, PORTABLE_GENES, FlagSearchGenerator, known_options
from sgcc.candidates.variants import needs_native
from sgcc.engine import Request, optimize
from sgcc.engine.report import CandidateResult
from tests.conftest import EXAMPLES, TIMING_SAMPLE_SECONDS

FAST = dict(timing_rounds=6, min_sample=TIMING_SAMPLE_SECONDS, seed=1, test_timeout=5.0)

#: Options that change what a program computes (floating-point results, errno, what
#: overflow or a null pointer means, the ABI): none may ever be searched.
SEMANTIC = re.compile(
    r"^-(Ofast|ffast-math|funsafe-math|fassociative-math|freciprocal-math|ffinite-math|fno-signed-zeros"
    r"|fno-trapping-math|fno-math-errno|fcx-limited-range|fexcess-precision=fast|fwrapv|ftrapv"
    r"|fno-strict|fstrict-overflow|fno-delete-null|fallow-store-data-races|fpack-struct|fshort-"
    r"|mregparm|fno-ipa-ra|fipa-stack-alignment|ffp-contract=fast|fsched-spec-load-dangerous)"
)


def _all_options():
    for genes in (GENES, NATIVE_GENES, PORTABLE_GENES):
        for values in genes.values():
            for v in values:
                yield from v


def test_allow_list_has_no_semantics_changing_option():
    opts = list(_all_options())
    assert opts
    bad = [o for o in opts if SEMANTIC.match(o)]
    assert not bad, bad
    # FMA contraction comes only with its own opt-out; portable genes never change the ISA.
    for values in NATIVE_GENES.values():
        for v in values:
            if "-march=native" in v:
                assert "-ffp-contract=off" in v, v
    assert not any(needs_native(v) for values in PORTABLE_GENES.values() for v in values)
    for genes in (GENES, NATIVE_GENES, PORTABLE_GENES):
        assert all(values[0] == [] for values in genes.values())  # index 0 is -O3's own choice


def test_the_checker_refuses_a_semantic_option():
    """SEMANTIC would catch these (so the test above can fail)."""
    for o in ("-ffast-math", "-Ofast", "-funsafe-math-optimizations", "-ffp-contract=fast", "-fwrapv"):
        assert SEMANTIC.match(o), o


def test_every_option_is_known_to_this_gcc_and_unknown_ones_are_dropped():
    known = known_options("gcc")
    assert known is not None
    gen = FlagSearchGenerator()
    space = dict(gen.space("native", known))
    assert set(space) == set(GENES) | set(NATIVE_GENES)
    fake = ({"-funroll-loops"}, set())  # a gcc that knows one flag and no parameter
    small = dict(gen.space("flags", fake))
    assert set(small) == {"unroll", "target"}
    assert small["unroll"] == [[], ["-funroll-loops"]]


def test_population_and_mutations_are_deterministic_given_the_seed():
    def make(seed):
        g = FlagSearchGenerator(seed=seed)
        g.genes = g.space("flags")
        return g

    a, b, c = make(7), make(7), make(8)
    assert a.initial_population() == b.initial_population()
    assert a.initial_population() != c.initial_population()
    pop = a.initial_population()
    assert len(pop) == a.population and len(set(pop)) == len(pop)
    assert all(1 <= sum(1 for x in g if x) <= 3 for g in pop)
    assert a.mutate(pop[0], a._rng("f", 1), 2) == b.mutate(pop[0], b._rng("f", 1), 2)


def _attempt(gen, genome, speedup):
    cand = Candidate("f", "flags", "x", meta={"flags": gen.flags(genome), "genome": list(genome)})
    res = CandidateResult(id="c1", function="f", generator="flags", speedup=speedup)
    return Attempt(cand, res)


def test_the_parent_is_the_fastest_timed_flag_set():
    gen = FlagSearchGenerator(seed=3)
    gen.genes = gen.space("flags")
    g1, g2, g3 = gen.initial_population()[:3]
    history = [_attempt(gen, g1, 1.02), _attempt(gen, g2, 1.15), _attempt(gen, g3, None)]
    assert gen.parent(history) == g2
    # Another function with nothing faster than -O3 starts from the best found anywhere.
    assert gen.parent([_attempt(gen, g3, 0.9)]) == g2
    fresh = FlagSearchGenerator(seed=3)
    fresh.genes = gen.genes
    assert fresh.parent([]) == tuple(0 for _ in gen.genes)  # -O3 itself
    child = gen.mutate(g2, gen._rng("f", 1), 1)
    assert sum(1 for x, y in zip(child, g2) if x != y) == 1


@pytest.mark.slow
def test_flag_search_learns_over_rounds_and_ships_a_correct_program(tmp_path):
    d = EXAMPLES / "programs" / "collatz"
    gen = FlagSearchGenerator(seed=1, population=2, children=1, generations=2)
    report = optimize(Request(source=d / "collatz.c", flags=["-O3"], tests=d / "tests", output=tmp_path / "out",
                              generators=[gen], **FAST))
    mine = [c for c in report.candidates if c.generator == "flags"]
    rounds = {c.meta.get("round") for c in mine}
    assert rounds == {0, 1}, [(c.function, c.stage, c.reason, c.meta.get("round")) for c in mine]
    built = [c for c in mine if c.id != "-"]
    assert built
    for c in built:
        # gcc's own code under allow-listed options: it builds and passes every test.
        assert c.stage in ("time", "accepted"), (c.function, c.stage, c.reason, c.origin)
    # A round-1 candidate descends from a round-0 flag set (or from -O3).
    for c in mine:
        if c.meta.get("round") == 1 and "genome" in c.meta:
            parents = [p.meta["genome"] for p in mine if p.meta.get("round") == 0 and "genome" in p.meta]
            parents.append([0] * len(c.meta["genome"]))
            assert any(sum(1 for x, y in zip(c.meta["genome"], p) if x != y) <= 2 for p in parents), c.origin
    ref = tmp_path / "ref"
    proc.run(["gcc", "-O3", str(d / "collatz.c"), "-o", str(ref)], check=True)
    for t in sorted((d / "tests").glob("*.in")):
        want = proc.run([str(ref)], stdin=t.read_bytes(), timeout=60)
        got = proc.run([str(tmp_path / "out")], stdin=t.read_bytes(), timeout=60)
        assert (got.stdout, got.returncode) == (want.stdout, want.returncode), t.name


class _Recorder(Generator):
    """Records the rounds it is asked in; proposes a harmless new text per round (its own
    alignment padding after the function) for the hottest unit only."""

    trusted = True

    def __init__(self, name: str, rounds: int, propose: bool):
        self.name, self.rounds, self._propose = name, rounds, propose
        self.asked: list[int] = []

    def propose(self, program, unit, round_no, history):
        self.asked.append(round_no)
        if not self._propose or unit.name != "collatz_steps":
            return []
        return [Candidate(unit.name, self.name, unit.text + "\t.p2align 4\n" * (round_no + 1), origin=f"r{round_no}")]


@pytest.mark.slow
def test_a_generator_is_asked_for_its_own_rounds_and_others_only_for_theirs(tmp_path):
    d = EXAMPLES / "programs" / "collatz"
    learner = _Recorder("variants", rounds=3, propose=True)
    other = _Recorder("layout", rounds=0, propose=False)
    optimize(Request(source=d / "collatz.c", flags=["-O3"], tests=d / "tests", output=tmp_path / "out",
                     generators=[learner, other], max_generator_rounds=1, timing_rounds=2, min_sample=0.01,
                     seed=1, test_timeout=5.0, mutants=0))
    assert sorted(set(learner.asked)) == [0, 1, 2]
    assert set(other.asked) == {0}  # --rounds 0: asked once, however long another searches


def test_each_text_is_offered_once_per_function(tmp_path):
    """Flag sets that give a function the same code as one offered before yield nothing new."""
    from types import SimpleNamespace

    from sgcc.engine.baseline import build_baseline

    d = EXAMPLES / "programs" / "collatz"
    req = Request(source=d / "collatz.c", flags=["-O3"], tests=d / "tests", output=tmp_path / "out")
    program = build_baseline(req, tmp_path)
    gen = FlagSearchGenerator(seed=1)
    ctx = SimpleNamespace(program=program, compiler="gcc", isa="flags", workdir=tmp_path, note=None, jobs=1)
    gen.prepare(ctx)
    assert gen.base is not None, gen.notes
    unit = next(u for u in program.asm.units if u.name == "collatz_steps")
    names = [n for n, _v in gen.genes]
    g = tuple(1 if n == "align" else 0 for n in names)  # 32-byte alignment: collatz_steps changes
    first = [c for c in gen._offer([g], program, unit, 1) if not c.skip]
    assert first and first[0].meta["genome"] == list(g)
    # The same flag set again (as another genome would give the same code): nothing new.
    gen._tried[unit.name].discard(g)
    assert [c for c in gen._offer([g], program, unit, 1) if not c.skip] == []
    assert len({c.text for c in first}) == len(first)


def test_prepared_again_for_another_program_compiles_that_program(tmp_path):
    """Project mode prepares one generator for each source in turn: the flag sets compile
    for the source being searched (before, the first source's compilations, cached by flag
    set, were offered for every later source), and not before the search asks (preparation
    compiles nothing)."""
    from types import SimpleNamespace

    from sgcc.engine.baseline import build_baseline

    gen = FlagSearchGenerator(seed=1)
    for stem, where in (("collatz", tmp_path / "a"), ("bitrev", tmp_path / "b")):
        where.mkdir()
        d = EXAMPLES / "programs" / stem
        req = Request(source=d / f"{stem}.c", flags=["-O3"], tests=d / "tests", output=where / "out")
        program = build_baseline(req, where)
        gen.prepare(SimpleNamespace(program=program, compiler="gcc", isa="flags", workdir=where, note=None, jobs=2))
        assert gen.base is not None, gen.notes
        assert gen._compiled == {}  # nothing compiled before the search asks
        unit = next(u for u in program.asm.units if u.name != "main")
        gen.propose(program, unit, 0, [])
        assert gen._compiled and all(v.side is not None and unit.name in v.side.units
                                     for v in gen._compiled.values())


_THREE = r"""
int sum(const int *a, int n) { int s = 0; for (int i = 0; i < n; i++) s += a[i] * 3; return s; }
void scale(float *a, int n, float k) { for (int i = 0; i < n; i++) a[i] = a[i] * k + 1.0f; }
long mix(const unsigned char *p, int n) { long h = 5381; for (int i = 0; i < n; i++) h = h * 33 + p[i]; return h; }
int main(void) { return 0; }
"""


def _flag_offers(tmp_path, order):
    """(function -> genomes offered, flag sets compiled) of round 0 asked in ``order``."""
    from sgcc.asm.units import AsmFile
    from sgcc.candidates import Context
    from sgcc.engine import target_for
    from sgcc.engine.request import Program

    src = tmp_path / "three.c"
    src.write_text(_THREE)
    work = tmp_path / ("w-" + "-".join(order))
    work.mkdir()
    s, o = work / "base.s", work / "base.o"
    proc.run(["gcc", "-O2", "-S", "-o", str(s), str(src)], check=True)
    proc.run(["gcc", "-c", str(s), "-o", str(o)], check=True)
    text = s.read_text()
    asm = AsmFile.parse(text)
    program = Program(source=src, source_text=_THREE, flags=["-O2"], asm=asm, asm_text=text, obj=o,
                      binary=tmp_path / "none", target=target_for("gcc", "flags", []), asm_flags=["-O2"])
    gen = FlagSearchGenerator(seed=5)
    gen.prepare(Context(program=program, sandbox=None, tests=[], workdir=work, compiler="gcc", isa="flags",
                        jobs=1))
    units = {u.name: u for u in asm.units}
    offered, walked = {}, {}
    real = gen._mutation

    def spy(parent, round_no, i):
        walked[current[0]] = max(walked.get(current[0], 0), i + 1)
        return real(parent, round_no, i)

    current = [""]
    gen._mutation = spy
    for name in order:
        current[0] = name
        offered[name] = [tuple(c.meta["genome"]) for c in gen.propose(program, units[name], 0, [])
                         if "genome" in c.meta]
    gen.walked = walked
    return offered, set(gen._compiled), gen


def test_functions_share_the_flag_sets_compiled_for_each_other_and_order_does_not_matter(tmp_path):
    """Round 0 tries more random flag sets per function until it has new code; one compile of
    the file serves every function, so those extra sets are one seeded sequence that each
    function walks: the next function reuses what the last compiled, and the candidates
    offered do not depend on which function is asked first."""
    forward, compiled, gen = _flag_offers(tmp_path, ["sum", "scale", "mix"])
    backward, compiled_back, _ = _flag_offers(tmp_path, ["mix", "scale", "sum"])
    assert {k: sorted(v) for k, v in forward.items()} == {k: sorted(v) for k, v in backward.items()}
    from sgcc.candidates.flagsearch import MAX_TRIES

    # More than one function walked the sequence beyond the shared population...
    assert sum(1 for n in gen.walked.values() if n) >= 2, gen.walked
    # ...and the file was compiled once per flag set, not once per function and flag set.
    # (each function's own sequence would have compiled up to MAX_TRIES * children each)
    assert len(compiled) <= gen.population + MAX_TRIES * gen.children < gen.population + sum(gen.walked.values())
    assert compiled == compiled_back
