"""Flag-search candidates: an evolutionary search, per function, over gcc's optimisation
flags and ``--param`` values.

The variants generator tries a fixed list of flag sets. This one searches the space around
``-O3`` the way OpenTuner and CompilerGym do, within the budget: round 0 offers each
function's unit from a small seeded population of random flag sets (compiled once for the
whole file and shared by every function), and more random ones until the function has
``CHILDREN`` new texts (most options leave a given function's code as ``-O3`` has it; these
come from one seeded sequence per parent and round, so a flag set compiled for one function
serves the next); every
later round starts, per function, from the
flag set whose candidate the engine timed fastest for that function so far (or the fastest
for any function, or ``-O3`` itself) and offers mutations of it (a flag switched on or off,
a parameter changed). What the engine reports back (:class:`sgcc.candidates.Attempt`) is
the fitness: the timed speedup; a candidate that failed a test (or was refused) has none.
Units are made to fit the baseline by :mod:`sgcc.candidates.transplant`, like the variants'.

Every choice is from :data:`GENES`, an explicit allow-list of *output-preserving* options:
each changes how gcc optimises (what it unrolls, inlines, vectorises, schedules, aligns), never
what the program means. Excluded on purpose: ``-Ofast``, ``-ffast-math`` and its parts
(``-funsafe-math-optimizations``, ``-fassociative-math``, ``-freciprocal-math``,
``-ffinite-math-only``, ``-fno-signed-zeros``, ``-fno-trapping-math``, ``-fno-math-errno``):
they change floating-point results or errno; ``-ffp-contract=fast`` with FMA (contraction
rounds once where the source rounds twice); ``-fwrapv``/``-ftrapv``, ``-fno-strict-*`` and
``-fno-delete-null-pointer-checks`` (they change what undefined or defined behaviour means);
``-fallow-store-data-races`` (a store a thread did not make); ABI options (``-fpack-struct``,
``-fshort-enums``, ``-mregparm``...); ``-fno-ipa-ra``/``-fipa-stack-alignment`` (the transplant
relies on gcc's interprocedural assumptions being the baseline's). Options gcc does not know
(another version) are dropped at preparation.

Deterministic given the seed (``--seed``; 0 when none): each function's random choices come
from a generator seeded by the seed, the function's name and the round, so the order in
which the engine asks does not matter.
"""

from __future__ import annotations

import hashlib
import random
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc import proc
from sgcc.candidates.transplant.asmtext import normalized
from sgcc.candidates.transplant.generator import (
    TransplantGenerator,
    Variant,
    compile_each,
    compile_variant,
    parallel,
)

if TYPE_CHECKING:
    from sgcc.asm.units import Unit
    from sgcc.candidates import Attempt, Candidate, Context, ProgramView
    from sgcc.config import Config

#: The search space: gene -> the values it may take, each a list of options; ``[]`` (always
#: the first value) is ``-O3``'s own choice. Why each is output-preserving is said per group.
GENES: dict[str, list[list[str]]] = {
    # Loop unrolling and peeling: the same iterations, more of them per loop trip.
    "unroll": [[], ["-funroll-loops"], ["-funroll-all-loops"]],
    "peel": [[], ["-fno-peel-loops"]],
    "unroll-times": [[], ["--param=max-unroll-times=2"], ["--param=max-unroll-times=4"],
                     ["--param=max-unroll-times=16"]],
    "unrolled-insns": [[], ["--param=max-unrolled-insns=100"], ["--param=max-unrolled-insns=400"]],
    "variable-expansion": [[], ["-fvariable-expansion-in-unroller"]],
    "complete-peel": [[], ["--param=max-completely-peeled-insns=100"],
                      ["--param=max-completely-peeled-insns=400"]],
    # Vectorisation: integer and floating-point vector code gcc proves equivalent (without
    # -ffast-math gcc never reassociates floating-point reductions).
    "vectorize": [[], ["-fno-tree-vectorize"], ["-fno-tree-loop-vectorize"], ["-fno-tree-slp-vectorize"]],
    "vect-cost": [[], ["-fvect-cost-model=cheap"], ["-fvect-cost-model=very-cheap"],
                  ["-fvect-cost-model=unlimited"]],
    # Inlining and cloning: the same calls, made or not made.
    "inline": [[], ["-fno-inline-functions"], ["--param=max-inline-insns-auto=30"],
               ["--param=max-inline-insns-auto=60"]],
    "inline-single": [[], ["--param=max-inline-insns-single=100"], ["--param=max-inline-insns-single=400"]],
    "ipa-cp-clone": [[], ["-fno-ipa-cp-clone"]],
    "ipa-pta": [[], ["-fipa-pta"]],
    # Loop transformations gcc proves legal.
    "unswitch": [[], ["-fno-unswitch-loops"]],
    "split-loops": [[], ["-fno-split-loops"]],
    "interchange": [[], ["-fno-loop-interchange"]],
    "unroll-jam": [[], ["-fno-loop-unroll-and-jam"]],
    "distribute": [[], ["-fno-tree-loop-distribution"], ["-fno-tree-loop-distribute-patterns"]],
    "ivopts": [[], ["-fno-ivopts"]],
    "loop-im": [[], ["-fno-move-loop-invariants"]],
    "prefetch": [[], ["-fprefetch-loop-arrays"]],  # prefetches are hints, never faults
    # Branches: conditional moves or jumps, the same values either way.
    "if-conversion": [[], ["-fno-if-conversion", "-fno-if-conversion2"], ["-fno-if-conversion2"]],
    "tracer": [[], ["-ftracer"]],
    "crossjump": [[], ["-fno-crossjumping"]],
    # Redundancy elimination: fewer or more recomputations of the same value.
    "gcse": [[], ["-fno-gcse"], ["-fgcse-sm", "-fgcse-las"]],
    "pre": [[], ["-fno-tree-pre"]],
    "hoist": [[], ["-fno-code-hoisting"]],
    # Scheduling and register allocation: the same instructions in another order or registers.
    "sched": [[], ["-fschedule-insns", "-fsched-pressure"], ["-fno-schedule-insns2"],
              ["-fsched2-use-superblocks"]],
    "ira": [[], ["-fira-region=one"], ["-fira-region=all"], ["-fira-algorithm=priority"]],
    "rename": [[], ["-frename-registers"]],
    # Code placement: the same code at other addresses.
    "align": [[], ["-falign-functions=32", "-falign-loops=32"], ["-falign-loops=64"],
              ["-fno-align-loops", "-fno-align-jumps"]],
    "blocks": [[], ["-freorder-blocks-algorithm=simple"], ["-fno-reorder-blocks-and-partition"]],
}

#: Added under ``--isa native``: this CPU's instructions without FMA contraction (see
#: :data:`sgcc.candidates.variants.NATIVE`), and tuning for it.
NATIVE_GENES: dict[str, list[list[str]]] = {
    "target": [[], ["-march=native", "-ffp-contract=off"], ["-mtune=native"]],
}
#: Portable: tuning only (the instruction set stays the flags').
PORTABLE_GENES: dict[str, list[list[str]]] = {
    "target": [[], ["-mtune=native"]],
}

#: Flag sets in round 0's shared population, offered new ones per function in each later round,
#: and rounds in all.
POPULATION = 4
CHILDREN = 3
GENERATIONS = 4
#: Most compilations one unit's proposal may try to find flag sets that change its code.
MAX_TRIES = 3

Genome = tuple[int, ...]  # per gene of the run's gene list, the index of its value


def known_options(compiler: str) -> tuple[set[str], set[str]] | None:
    """The ``-f`` options and ``--param`` names ``compiler`` knows, or None when it cannot say."""
    r1 = proc.run([compiler, "-Q", "--help=optimizers"], timeout=60)
    r2 = proc.run([compiler, "-Q", "--help=params"], timeout=60)
    if not (r1.ok and r2.ok):
        return None
    flags = set(re.findall(r"^\s+(-f[\w-]+)", r1.stdout.decode(errors="replace"), re.M))
    params = set(re.findall(r"^\s+--param=([\w-]+)", r2.stdout.decode(errors="replace"), re.M))
    return flags, params


def _option_known(opt: str, known: tuple[set[str], set[str]]) -> bool:
    flags, params = known
    if opt.startswith("--param="):
        return opt[len("--param="):].partition("=")[0] in params
    if opt.startswith("-m"):
        return True  # target options: gcc checks them when compiling
    base = opt.partition("=")[0]
    stem = base.replace("-fno-", "-f", 1)
    return base in flags or stem in flags or base + "=" in flags or any(f.startswith(base + "=") for f in flags)


class FlagSearchGenerator(TransplantGenerator):
    """Evolves flag sets per function from the engine's verdicts (see the module docstring)."""

    name = "flags"
    trusted = True  # gcc's own code
    rounds = GENERATIONS

    def __init__(self, *, seed: int | None = None, population: int = POPULATION, children: int = CHILDREN,
                 generations: int = GENERATIONS):
        super().__init__()
        self.seed = 0 if seed is None else int(seed)
        self.population, self.children = population, children
        self.rounds = generations
        self.genes: list[tuple[str, list[list[str]]]] = []
        self._compiled: dict[tuple[str, ...], Variant] = {}  # flag set -> its compilation
        self._lock = threading.Lock()
        self._tried: dict[str, set[Genome]] = {}  # function -> genomes offered
        self._texts: dict[str, set[str]] = {}  # function -> candidate texts offered (normalized)
        self._initial: list[Genome] = []
        self._sequences: dict[tuple[Genome, int], tuple[list[Genome | None], random.Random]] = {}
        self._whole_budget = population  # whole-file fallbacks offered at most this often

    # -- the space ------------------------------------------------------------------------

    def space(self, isa: str, known=None) -> list[tuple[str, list[list[str]]]]:
        """The run's genes: :data:`GENES` plus the target gene, without options gcc lacks."""
        genes = {**GENES, **(NATIVE_GENES if isa == "native" else PORTABLE_GENES)}
        out = []
        for name, values in genes.items():
            kept = [v for v in values if known is None or all(_option_known(o, known) for o in v)]
            if len(kept) > 1 and kept[0] == []:
                out.append((name, kept))
        return out

    def flags(self, genome: Genome) -> list[str]:
        """The options of ``genome``, in gene order."""
        return [o for (_n, values), i in zip(self.genes, genome) for o in values[i]]

    def describe(self, genome: Genome) -> str:
        return " ".join(self.flags(genome)) or "-O3"

    def mutate(self, genome: Genome, rng: random.Random, n: int) -> Genome:
        """``genome`` with ``n`` genes set to another of their values."""
        g = list(genome)
        for k in rng.sample(range(len(g)), min(n, len(g))):
            g[k] = rng.choice([i for i in range(len(self.genes[k][1])) if i != g[k]])
        return tuple(g)

    def initial_population(self) -> list[Genome]:
        """Round 0's flag sets: ``population`` random ones, one to three genes from ``-O3``."""
        rng = self._rng("initial")
        empty = tuple(0 for _ in self.genes)
        out: list[Genome] = []
        for _ in range(100):
            if len(out) >= self.population:
                break
            g = self.mutate(empty, rng, rng.randint(1, 3))
            if g not in out:
                out.append(g)
        return out

    def parent(self, history) -> Genome:
        """Where a later round's mutations start for a function: its fastest flag set timed
        so far (``history``), else the fastest for any function, else ``-O3``."""
        scores = self.fitness(history)
        self._best_anywhere(scores)
        best = max(scores, key=lambda g: (scores[g], g)) if scores else None
        if best is None or scores[best] <= 1.0:
            best = self._global_best or tuple(0 for _ in self.genes)
        return best

    def _rng(self, *parts) -> random.Random:
        return random.Random(":".join(str(p) for p in (self.seed, *parts)))

    # -- engine hooks ---------------------------------------------------------------------

    @property
    def _run(self) -> Context:
        """The run's context, kept by :meth:`prepare` (everything that compiles comes after it)."""
        assert self._context is not None, "prepare() first"
        return self._context

    def prepare(self, context: Context) -> None:
        try:
            self._setup_base(context.program)
            # A project's sources are prepared in turn with one generator: the last source's
            # compilations and offers are not this one's (its best flag set may seed this one).
            self._compiled, self._tried, self._texts, self._sequences = {}, {}, {}, {}
            self._context = context
            self.genes = self.space(context.isa, known_options(context.compiler))
            if not self.genes:
                raise RuntimeError("gcc knows none of the searched options")
            # The population compiles when the search first asks (round 0's first unit,
            # within the budget), not here: preparation is paid before any candidate is built.
            self._initial = self.initial_population()
        except Exception as exc:  # noqa: BLE001 - offer nothing, say why; the run goes on
            self.base, self.variants = None, []
            self.notes.append(f"flags: {type(exc).__name__}: {exc}")

    def _compile(self, genome: Genome) -> Variant:
        flags = tuple(self.flags(genome))
        with self._lock:
            v = self._compiled.get(flags)
            fresh = v is None
            if v is None:
                # Named by its flags, not by when it was compiled: the names go into the
                # candidates' text (fresh names of copies), which must not depend on thread timing.
                v = Variant("flags-" + hashlib.sha1(" ".join(flags).encode()).hexdigest()[:8], list(flags))
                self._compiled[flags] = v
        if fresh:
            compile_variant(self._run, v, Path(self._run.workdir) / "flags")
        return v

    def fitness(self, history: list[Attempt]) -> dict[Genome, float]:
        """Per flag set tried, the best speedup the engine timed for it (from ``history``)."""
        out: dict[Genome, float] = {}
        for attempt in history:
            genome = attempt.candidate.meta.get("genome")
            genome = tuple(genome) if isinstance(genome, list) and len(genome) == len(self.genes) else None
            speedup = attempt.result.speedup
            if genome is not None and speedup is not None:
                out[genome] = max(out.get(genome, 0.0), float(speedup))
        return out

    def propose(self, program: ProgramView, unit: Unit, round_no: int, history: list[Attempt]) -> list[Candidate]:
        if round_no >= self.rounds:
            return []
        if self.base is None:
            return super().propose(program, unit, 0, history)  # says once why nothing is offered
        try:
            return self._propose_round(program, unit, round_no, history)
        except Exception as exc:  # noqa: BLE001 - a generator's bug must not end the run
            from sgcc.candidates import Candidate

            return [Candidate(unit.name, self.name, "", origin=self.name,
                              skip=f"flags failed on {unit.name}: {type(exc).__name__}: {exc}")]

    def _propose_round(self, program: ProgramView, unit: Unit, round_no: int, history: list[Attempt]):
        tried = self._tried.setdefault(unit.name, set())
        if round_no == 0 and any(tuple(self.flags(g)) not in self._compiled for g in self._initial):
            if self._run.note:
                self._run.note(f"flags: compiling {len(self._initial)} random flag sets")
            compile_each(self._run, self._initial, self._compile)
        if round_no == 0:
            # The shared random flag sets, then (most options leave a given function's code
            # as -O3 has it) more random ones from -O3 until this function has new code.
            out = self._offer([g for g in self._initial if g not in tried], program, unit, round_no)
            parent = tuple(0 for _ in self.genes)
        else:
            out, parent = [], self.parent(history)
        # A mutation often leaves this function's code as it was (the option has nothing to
        # act on here): try a few more, at most MAX_TRIES per child wanted. The mutations of a
        # parent in a round are one sequence shared by every function with that parent, so a
        # flag set compiled for one function is offered to the next without compiling it again
        # (one compile of the file serves all its functions; lapi.c's six hot functions each
        # compiled their own, 80 s of a 120 s share), and the next ``jobs`` are compiled at once.
        limit, tries, i = MAX_TRIES * self.children, 0, 0
        while tries < limit and sum(1 for c in out if not c.skip) < self.children:
            g = self._mutation(parent, round_no, i)
            i += 1
            if g is None:
                break
            if g in tried:
                continue
            if tuple(self.flags(g)) not in self._compiled:
                jobs = parallel(self._run)
                ahead = [h for h in (self._mutation(parent, round_no, k) for k in range(i - 1, i - 1 + 2 * jobs))
                         if h is not None and h not in tried and tuple(self.flags(h)) not in self._compiled]
                compile_each(self._run, ahead[:min(jobs, limit - tries)], self._compile)
            out += self._offer([g], program, unit, round_no)
            tries += 1
        return out

    def _mutation(self, parent: Genome, round_no: int, i: int) -> Genome | None:
        """The ``i``-th mutation of ``parent`` in round ``round_no`` (None: no more new ones).
        Seeded by the parent and the round only, so the sequence does not depend on which
        function asks or in what order."""
        genomes, rng = self._sequences.setdefault((parent, round_no), ([], self._rng("mutations", parent, round_no)))
        while len(genomes) <= i and (not genomes or genomes[-1] is not None):
            g = None
            for _attempt in range(50):
                g = self.mutate(parent, rng, rng.choice((1, 1, 2)) if round_no else rng.randint(1, 3))
                if any(g) and g not in genomes and g not in self._initial:
                    break
                g = None
            genomes.append(g)
        return genomes[i] if i < len(genomes) else None

    def _offer(self, genomes: list[Genome], program: ProgramView, unit: Unit, round_no: int) -> list:
        """The unit's candidates from the compilations of ``genomes``."""
        tried = self._tried.setdefault(unit.name, set())
        texts = self._texts.setdefault(unit.name, set())
        out = []
        for g in genomes:
            tried.add(g)
            self.variants = [self._compile(g)]
            for cand in self._propose(program, unit):
                if not cand.skip:
                    # Another flag set often gives the same code: offer each text once, so a
                    # round's children are new code (the caller mutates again otherwise).
                    key = cand.function + "\0" + normalized(cand.text) + \
                        "".join(f"\0{k}\0{normalized(v)}" for k, v in sorted(cand.also.items()))
                    if key in texts:
                        continue
                    texts.add(key)
                cand.meta["round"] = round_no
                cand.meta["genome"] = list(g)
                cand.origin = f"flags round {round_no}: {self.describe(g)}" + \
                    (" (whole file)" if cand.meta.get("whole") else "")
                out.append(cand)
        return out

    _global_best: Genome | None = None
    _global_score: float = 1.0

    def _best_anywhere(self, scores: dict[Genome, float]) -> None:
        for g, s in scores.items():
            if s > self._global_score:
                self._global_best, self._global_score = g, s

    def _whole(self, program: ProgramView, variant, meta, origin):
        if self._whole_budget <= 0:
            return None
        whole = super()._whole(program, variant, meta, origin)
        if whole is not None and not whole.skip:
            self._whole_budget -= 1
        return whole


def from_config(cfg: Config) -> FlagSearchGenerator:
    return FlagSearchGenerator(seed=cfg.seed)
