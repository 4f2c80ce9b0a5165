"""The engine: prove each candidate correct and faster, safely, or drop it.

For one C program (the papers' setting) and its tests:

1. build the baseline exactly as gcc does with the user's flags (``-S``, assemble, link) and
   split its assembly into function units;
2. record expected outputs the tests lack by running the baseline (and check it passes the
   ones it has);
3. for every candidate from every generator: screen its text (``check``), substitute it into
   the baseline assembly and assemble (``assemble``), compare the object with the baseline's
   and apply the instruction-set policy (``check``), link (``link``), run all tests in the
   sandbox (``test``), then time it against the baseline on paired, interleaved rounds
   (``time``); only a lower confidence bound above the minimum gain is ``accepted``;
4. per function, re-measure the best accepted candidate on fresh rounds before believing it
   (when fresh rounds do not confirm it, the next best, up to ``MAX_CONFIRMATIONS``);
5. combine the winners, validate and time the combined program once more, and ship it, or
   the baseline when anything is in doubt.

Builds and tests run in parallel; timing runs one at a time, machine-wide.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from sgcc import proc
from sgcc.dropin import gccargs
from sgcc.lab import metrics
from sgcc.candidates import WHOLE_UNIT, Attempt, Candidate, Context
from sgcc.errors import SgccError
from sgcc.engine.report import CandidateResult, Report, estimate_dict
from sgcc.verify.timing import TimingRunFailed

STAGES = ("skipped", "check", "assemble", "link", "test", "time", "accepted")


@dataclass
class Request:
    """What the user asked ``sgcc optimize`` to do."""

    source: Path
    flags: list[str]
    tests: Path
    output: Path
    generators: list = field(default_factory=list)
    isa: str = "flags"
    min_gain: float = 0.03
    timing_rounds: int = 20
    min_sample: float = 0.05
    test_timeout: float = 10.0
    jobs: int = 0
    keep_temps: bool = False
    max_generator_rounds: int = 1
    compiler: str = "gcc"
    seed: int | None = None
    budget_seconds: float | None = None  # search time for the whole program (None: unbounded)
    budget_candidates: int | None = None  # candidates built for the whole program (None: unbounded)
    profile: bool = True  # weigh functions by where the tests spend instructions
    cache_dir: str | None = None  # verdict cache (None: no cache)
    cache_max_bytes: int = 256 << 20
    refresh: bool = False  # search again even where the cache has a verdict for this search
    generator_config: str = ""  # identifies how candidates were made (part of the search key)


@dataclass
class Program:
    """The baseline: the source, its flags, its assembly split into units, its binary."""

    source: Path
    source_text: str
    flags: list[str]
    asm: object  # sgcc.asm.units.AsmFile
    asm_text: str
    obj: Path
    binary: Path
    target: object  # sgcc.verify.isa.Target
    asm_flags: list[str] = field(default_factory=list)  # flags that assemble any variant of it
    weights: dict[str, float] | None = None  # function -> share of the tests' instructions
    # Whole projects (sgcc.project.optimize): how a candidate's assembly becomes the program to test,
    # ``link(asm_text, obj, where) -> (binary or None, error)``, and the cache key the
    # project's own compile of this unit has (recorded by the drop-in).
    link: object = None
    cache_key: str | None = None

    @property
    def defined(self) -> frozenset[str]:
        """Names of the baseline's function units (a candidate may define these)."""
        return frozenset(u.name for u in self.asm.units)


class Engine:
    """Runs one optimization request; see the module docstring."""

    def __init__(self, request: Request, progress=None, program: Program | None = None):
        self.req = request
        self.progress = progress
        self._given_program = program
        self.workdir = Path(tempfile.mkdtemp(prefix="sgcc-opt-"))
        self._counter = 0
        self._lock = threading.Lock()
        self.jobs = request.jobs or os.cpu_count() or 1

    # -- building -------------------------------------------------------------------------

    def _note(self, message: str) -> None:
        if self.progress is not None:
            self.progress.status(message)

    def _gcc(self, args: list[str], *, timeout: float = 300) -> proc.Result:
        return proc.run([self.req.compiler, *args], timeout=timeout)

    def build_baseline(self) -> Program:
        from sgcc.verify import isa
        from sgcc.asm.units import AsmFile

        src = self.req.source
        if not src.is_file():
            raise SgccError(f"no such source file: {src}")
        inv = gccargs.parse([*self.req.flags, "-c", str(src)])
        # The flags for assembling any variant of this program: derived once, used by every
        # candidate (the parse would give the same answer each time).
        self.asm_flags = inv.flags_without_inputs(drop_dependency_flags=True)
        if inv.opt_level not in gccargs.ELIGIBLE_OPT_LEVELS:
            raise SgccError(f"sgcc optimizes -O2/-O3/-Ofast builds; the flags say -O{inv.opt_level}",
                            hint="add -O3 (or leave the optimization level out: -O3 is the default)")
        base_s = self.workdir / "base.s"
        r = self._gcc([*self.req.flags, "-S", "-o", str(base_s), str(src)])
        if not r.ok:
            raise SgccError(f"gcc cannot compile {src}:\n{r.stderr.decode(errors='replace').strip()}")
        asm_text = base_s.read_text(encoding="utf-8", errors="surrogateescape")
        obj = self.workdir / "base.o"
        self._assemble_trusted(base_s, obj)
        binary = self.workdir / "base"
        r = proc.run(gccargs.link_argv(self.req.compiler, self.req.flags, [str(obj)], str(binary)), timeout=300)
        if not r.ok:
            raise SgccError(f"gcc cannot link {src}:\n{r.stderr.decode(errors='replace').strip()}")
        if self.req.isa == "native":
            target = isa.native_target(self.req.compiler)
        else:
            target = isa.target_from_flags(self.req.compiler, inv.target_flags)
        return Program(src, src.read_text(errors="replace"), list(self.req.flags), AsmFile.parse(asm_text),
                       asm_text, obj, binary, target, asm_flags=list(self.asm_flags))

    def _assemble_trusted(self, asm: Path, obj: Path) -> None:
        r = self._gcc([*self.asm_flags, "-c", "-x", "assembler", str(asm), "-o", str(obj)])
        if not r.ok:
            raise SgccError(f"gcc's own assembly for {self.req.source} does not assemble:\n"
                            f"{r.stderr.decode(errors='replace')[-2000:]}")

    # -- one candidate, up to the tests -----------------------------------------------------

    def _new_dir(self) -> tuple[str, Path]:
        with self._lock:
            self._counter += 1
            cid = f"c{self._counter:03d}"
        path = self.workdir / cid
        path.mkdir()
        return cid, path

    def build_candidate(self, program: Program, replacements: dict[str, str], where: Path,
                        result: CandidateResult) -> Path | None:
        """Substitute, assemble, check and link; return the binary or None (result says why)."""
        from sgcc.verify import screen

        for name, text in replacements.items():
            # The program's own function names may look like C library ones (read, send...).
            verdict = screen.screen_text(text, may_define=program.defined)
            if not verdict.ok:
                result.stop("check", verdict.reason, verdict.detail)
                return None
        try:
            if WHOLE_UNIT in replacements:
                asm_text = replacements[WHOLE_UNIT]
            else:
                asm_text = program.asm.join(replacements)
        except KeyError as exc:
            result.stop("check", f"no function named {exc.args[0]} in the program")
            return None
        asm = where / "cand.s"
        asm.write_text(asm_text, encoding="utf-8", errors="surrogateescape")
        obj = where / "cand.o"
        verdict = screen.assemble(asm, obj, gcc=self.req.compiler, flags=self.asm_flags)
        if not verdict.ok:
            result.stop("assemble", verdict.reason, verdict.detail)
            return None
        verdict = screen.check_object(obj, program.obj, isa=program.target)
        if not verdict.ok:
            result.stop("check", verdict.reason, verdict.detail)
            return None
        if "-fno-ipa-ra" not in self.req.flags and WHOLE_UNIT not in replacements:
            from sgcc.verify import clobbers

            # Only gcc's callers that stay count: a candidate may bring its callers along
            # (and a whole-unit candidate brings all of them).
            replaced = frozenset(replacements)
            for name in replacements:
                extra = clobbers.extra_clobbers(obj, program.obj, name, replaced=replaced)
                if extra:
                    result.stop("check", f"{name} changes {clobbers.describe(extra)}, which gcc's version "
                                         "leaves alone and its callers here may rely on (-fipa-ra)")
                    return None
        binary = where / "cand"
        if program.link is not None:
            binary, error = program.link(asm_text, obj, where)
            if binary is None:
                result.stop("link", "the project does not build with it", error[:800])
            return binary
        r = proc.run(gccargs.link_argv(self.req.compiler, self.req.flags, [str(obj)], str(binary)), timeout=120,
                     limits=proc.Limits(cpu=60, file_size=256 << 20))
        if not r.ok:
            lines = [ln for ln in r.stderr.decode(errors="replace").splitlines()
                     if "error" in ln.lower() or "undefined reference" in ln or "multiple definition" in ln]
            result.stop("link", "does not link", "\n".join(lines[:5])[:800])
            return None
        return binary

    def evaluate(self, program: Program, candidate: Candidate, sandbox, tests) -> tuple[CandidateResult, Path | None]:
        """Everything but timing for one candidate (safe to run in parallel)."""
        cid, where = self._new_dir()
        candidate.id = cid
        result = CandidateResult(id=cid, function=candidate.function, generator=candidate.generator,
                                 origin=candidate.origin, meta=dict(candidate.meta))
        started = time.perf_counter()
        binary = None
        if candidate.invalid:  # the generator knows it is no assembly (a model's answer without any)
            result.stop("check", candidate.invalid)
        else:
            binary = self.build_candidate(program, candidate.replacements(), where, result)
        if binary is not None:
            outcome = sandbox.check(binary, tests)
            result.tests_passed, result.tests_total = outcome.passed, outcome.total
            if outcome.first_failure is not None:
                f = outcome.first_failure
                result.stop("test", f"test {f.test} failed: {f.reason}", _failure_detail(f))
                binary = None
        result.seconds = time.perf_counter() - started
        return result, binary

    # -- timing ---------------------------------------------------------------------------

    def measure(self, sandbox, tests, base: Path, cand: Path, *, screening: bool = False):
        """Time ``cand`` against ``base`` on new rounds: (accepted?, estimate). ``screening``
        (a search candidate, not a winner being confirmed) stops a comparison halfway when
        it clearly cannot clear the minimum gain."""
        from sgcc.verify import timing

        est = timing.measure(
            timing.runner(sandbox, base, tests),
            timing.runner(sandbox, cand, tests),
            rounds=self.req.timing_rounds,
            min_sample_seconds=self.req.min_sample,
            seed=self.req.seed,
            futile_below=(1 + self.req.min_gain) if screening else None,
        )
        return timing.decide(est, self.req.min_gain), est

    # -- the whole run --------------------------------------------------------------------

    def run(self) -> Report:
        from sgcc.verify import sandbox as sandboxmod

        req = self.req
        started = time.perf_counter()
        self._note("building the baseline")
        program = self._given_program or self.build_baseline()
        if self._given_program is not None:
            self.asm_flags = program.asm_flags
        report = Report(source=str(req.source), flags=list(req.flags), isa=program.target.name,
                        min_gain=req.min_gain, functions=[u.name for u in program.asm.units])
        tests = sandboxmod.load_tests(req.tests)
        with sandboxmod.Sandbox(timeout=req.test_timeout, keep=req.keep_temps) as sandbox:
            self._note(f"recording expected outputs ({len(tests)} tests)")
            tests = sandbox.record(program.binary, tests)
            base_outcome = sandbox.check(program.binary, tests)
            if base_outcome.first_failure is not None:
                f = base_outcome.first_failure
                raise SgccError(f"the baseline program fails its own test {f.test}: {f.reason}",
                                hint="the tests' .out files must be what the program prints")
            report.tests = len(tests)

            # Candidates for functions the program does not have are refused up front.
            names = {u.name for u in program.asm.units}
            for gen in req.generators:
                for cand in getattr(gen, "unmatched", lambda _: [])(names):
                    res = CandidateResult(id="-", function=cand.function, generator=gen.name, origin=cand.origin)
                    res.stop("check", f"no function named {cand.function} in {req.source.name}")
                    report.candidates.append(res)

            self._weigh(program, sandbox, tests, report)
            cached = self._cache_lookup(program, tests, report)
            context = Context(program=program, sandbox=sandbox, tests=tests, workdir=self.workdir,
                              compiler=req.compiler, isa=req.isa, note=self._note, jobs=self.jobs)
            prepared = time.perf_counter()
            for gen in req.generators:
                if hasattr(gen, "prepare"):
                    self._note(f"preparing {gen.name}")
                    gen.prepare(context)
            winners = self._search(program, sandbox, tests, report, cached,
                                   overhead=time.perf_counter() - prepared)

            # Believe a winner only after fresh rounds agree. The best of several accepted
            # candidates is the one whose first measurement most likely erred high: when it
            # is not confirmed, the next best gets its own fresh rounds (a few at most).
            confirmed: dict[str, tuple[CandidateResult, Path, Candidate]] = {}
            for fn, ranked in winners.items():
                for res, binary, cand in ranked[:MAX_CONFIRMATIONS]:
                    self._note(f"re-measuring {res.id}, the best remaining candidate for {fn}")
                    try:
                        accepted, est = self.measure(sandbox, tests, program.binary, binary)
                    except TimingRunFailed as exc:
                        res.stop("test", f"failed while being re-measured: {exc.message}")
                        continue
                    res.confirm = estimate_dict(est)
                    if accepted:
                        confirmed[fn] = (res, binary, cand)
                        break
                    res.stop("time", f"not confirmed on fresh rounds ({est.speedup:.3f}x, "
                                     f"lower bound {est.low:.3f})")

            final_binary = program.binary
            shipped: list[CandidateResult] = []
            if confirmed:
                final_binary, shipped = self._combine(program, confirmed, sandbox, tests, report)
            report.paper = metrics.problem_figures(report.candidates)
            if shipped:
                report.shipped = [r.id for r in shipped]
            self._cache_store(program, report, shipped, {fn: w[2] for fn, w in confirmed.items()})
            self._ship(final_binary)
        report.seconds = time.perf_counter() - started
        return report

    # -- the search ---------------------------------------------------------------------

    def _weigh(self, program: Program, sandbox, tests, report: Report) -> None:
        """Find where the tests spend their instructions; functions they never run are not
        searched (no test could tell a wrong candidate from a right one)."""
        report.generators = [g.name for g in self.req.generators]
        if not self.req.profile or not self.req.generators:
            return
        from sgcc.engine import profile

        if program.weights is not None:
            weights = program.weights  # profiled already (a project profiles its binary once)
        else:
            self._note("profiling the baseline on the tests")
            weights = profile.function_weights(program.binary, tests, sandbox=sandbox,
                                               names=[u.name for u in program.asm.units])
        if weights is None:
            report.notes.append("no profile (valgrind unavailable or failed): every function is searched, "
                                "in file order")
            return
        program.weights = report.weights = weights
        for unit in program.asm.units:
            if weights.get(unit.name, 0.0) <= 0.0:
                report.skipped_functions[unit.name] = "not executed by the tests"

    def _units_in_order(self, program: Program, report: Report) -> list:
        """The units worth searching, hottest first."""
        units = [u for u in program.asm.units if u.name not in report.skipped_functions]
        if program.weights:
            units.sort(key=lambda u: -program.weights.get(u.name, 0.0))
        return units

    # -- the verdict cache ------------------------------------------------------------------

    def _cache_key(self, program: Program) -> str:
        from sgcc.cache import store as cache

        if program.cache_key:
            return program.cache_key
        compiler = shutil.which(self.req.compiler) or self.req.compiler
        ctx = cache.context(compiler, program.asm_flags, self.req.isa)
        return cache.entry_key(ctx, cache.tu_digest(program.asm_text))

    def _cache_lookup(self, program: Program, tests, report: Report) -> list[Candidate]:
        """Seed the search from the cache: functions this very search already settled are not
        searched again; cached winners are offered again (re-validated, never trusted)."""
        from sgcc.cache import store as cache

        self._search_key = cache.search_key(cache.tests_digest(tests), self.req.generator_config,
                                            self.req.min_gain)
        self._settled: set[str] = set()
        if not self.req.cache_dir:
            return []
        store = cache.Store(self.req.cache_dir)
        self._entry_key = self._cache_key(program)
        report.cache = {"key": self._entry_key, "search": self._search_key, "dir": store.root}
        entry = store.read(self._entry_key, touch=True)
        if entry is None:
            report.cache["found"] = False
            return []
        report.cache["found"] = True
        seeded: list[Candidate] = []
        texts: set[tuple[str, str]] = set()
        for fn, record in entry.get("functions", {}).items():
            verdicts = record.get("verdicts", {}) if isinstance(record, dict) else {}
            for skey, verdict in verdicts.items():
                if not isinstance(verdict, dict):
                    continue
                winner = verdict.get("winner")
                if skey == self._search_key and not self.req.refresh and verdict.get("complete"):
                    if winner:
                        self._settled.add(fn)  # its cached winner is re-validated, nothing else searched
                    else:
                        report.skipped_functions.setdefault(
                            fn, f"cached verdict from {verdict.get('date', '?')}: no candidate proven faster "
                                "(--refresh searches again)")
                if isinstance(winner, str) and (fn, winner) not in texts:
                    texts.add((fn, winner))
                    also = verdict.get("also") if isinstance(verdict.get("also"), dict) else {}
                    seeded.append(Candidate(fn, "cache", winner, also={k: v for k, v in also.items()
                                                                       if isinstance(k, str) and isinstance(v, str)},
                                            origin=f"cache {self._entry_key[:12]} ({verdict.get('generator', '?')})",
                                            meta={"cached_speedup": verdict.get("speedup"),
                                                  "cached_from": verdict.get("generator", "?")}))
        return seeded

    def _cache_store(self, program: Program, report: Report, shipped: list, confirmed: dict) -> None:
        """Record this search's verdicts and what to substitute (the validated combination)."""
        if not self.req.cache_dir:
            return
        from sgcc.cache import store as cache

        store = cache.Store(self.req.cache_dir, max_bytes=self.req.cache_max_bytes)
        now = time.strftime("%Y-%m-%dT%H:%M:%S")
        shipped_fns = {r.function for r in shipped}
        by_fn = {r.function: r for r in shipped}
        searched = getattr(self, "_searched", {})

        def change(old):
            entry = old or {"functions": {}}
            entry["source"] = str(self.req.source)
            entry["updated"] = now
            functions = entry.setdefault("functions", {})
            for fn in sorted(set(searched) | shipped_fns):
                complete = searched.get(fn, True)
                if fn in shipped_fns:
                    res = by_fn[fn]
                    generator = res.meta.get("cached_from", res.generator) if res.generator == "cache" else res.generator
                    verdict = {"winner": confirmed[fn].text, "also": dict(confirmed[fn].also or {}),
                               "generator": generator, "speedup": res.speedup,
                               "low": res.ci_low, "high": res.ci_high, "complete": complete}
                else:
                    verdict = {"winner": None, "complete": complete}
                verdict.update({"date": now, "min_gain": self.req.min_gain, "generators": self.req.generator_config})
                functions.setdefault(fn, {}).setdefault("verdicts", {})[self._search_key] = verdict
            if shipped:
                # A winner may replace its callers too (Candidate.also): apply all of it.
                units = {k: v for fn in shipped_fns for k, v in confirmed[fn].replacements().items()}
                entry["apply"] = {"units": units, "search": self._search_key,
                                  "date": now, **{k: report.final.get(k) for k in ("speedup", "low", "high")}}
            else:
                entry.pop("apply", None)  # the latest search decides: nothing proven, nothing applied
            return entry

        store.update(self._entry_key, change)
        report.cache["stored"] = True

    def _search(self, program: Program, sandbox, tests, report: Report, cached=(), overhead: float = 0.0) -> dict:
        """Ask every generator, round by round, within the budget; build, test and time what
        they propose. Returns the accepted winner per function.

        The budget is checked before each candidate is queued (candidates and seconds) and
        again before each group of builds and each timing (seconds), so a search ends within
        about one candidate's cost of its budget; ``overhead`` (the generators' preparation:
        compiling variants, a profiling run) counts against it too."""
        req = self.req
        units = self._units_in_order(program, report)
        budget = _Budget(req.budget_seconds, req.budget_candidates, units, program.weights)
        budget.overhead = overhead
        report.budget = budget.describe()
        winners: dict[str, list[tuple[CandidateResult, Path, Candidate]]] = {}  # accepted, per function
        history: dict[tuple[str, str], list[Attempt]] = {}
        seen: dict[tuple[str, str], CandidateResult] = {}
        baseline_text = {u.name: u.text for u in program.asm.units}
        baseline_text[WHOLE_UNIT] = program.asm_text
        self._searched = {u.name: True for u in units}
        settled = getattr(self, "_settled", set())

        def skipped(cand: Candidate, reason: str, unit_name: str | None = None) -> None:
            if unit_name in self._searched and reason == BUDGET_REACHED:
                self._searched[unit_name] = False  # cut short: no "nothing faster" verdict
            res = CandidateResult(id="-", function=cand.function, generator=cand.generator, origin=cand.origin,
                                  meta=dict(cand.meta))
            res.stop("skipped", reason)
            report.candidates.append(res)
            history.setdefault((cand.generator, cand.function), []).append(Attempt(cand, res))

        for round_no in range(max(1, req.max_generator_rounds)):
            batch: list[tuple[str, Candidate]] = []  # (the unit it is charged to, the candidate)
            pending: set[tuple[str, str]] = set()

            def offer(cand: Candidate, unit_name: str, budgeted: bool = True) -> None:
                res = self._triage(cand, baseline_text, seen)
                if res is not None:
                    report.candidates.append(res)
                    history.setdefault((cand.generator, cand.function), []).append(Attempt(cand, res))
                elif _key(cand) in pending:
                    skipped(cand, "same text as another candidate of this round")
                elif budgeted and not budget.allows(unit_name):
                    skipped(cand, BUDGET_REACHED, unit_name)
                else:
                    pending.add(_key(cand))
                    batch.append((unit_name, cand))
                    budget.count(unit_name)

            if round_no == 0:
                for cand in cached:
                    offer(cand, cand.function, budgeted=False)  # re-validating earlier winners
            for unit in units:
                if unit.name in settled:
                    continue
                proposals: list[list[Candidate]] = []
                for gen in req.generators:
                    if not budget.allows(unit.name):
                        self._searched[unit.name] = False  # cut short: no "nothing faster" verdict
                        continue
                    past = history.setdefault((gen.name, unit.name), [])
                    t0 = time.perf_counter()
                    proposals.append(list(gen.propose(program, unit, round_no, past)))
                    budget.spend(unit.name, time.perf_counter() - t0)
                # Take the generators' candidates in turn (each lists its most promising
                # first), so that a tight budget is shared among them, not spent on the first.
                for k in range(max((len(p) for p in proposals), default=0)):
                    for proposed in proposals:
                        if k < len(proposed):
                            offer(proposed[k], unit.name)
            if not batch:
                # Nothing new this round (every generator done, or only repeats): stop early.
                break
            self._note(f"round {round_no}: building and testing {len(batch)} candidates")
            done = 0
            with ThreadPoolExecutor(max_workers=self.jobs) as pool:
                while batch:
                    # Build and test a few in parallel, then time them one at a time (alone on
                    # the machine); the seconds budget is checked in between.
                    chunk: list[tuple[str, Candidate]] = []
                    while batch and len(chunk) < self.jobs:
                        charge, cand = batch.pop(0)
                        if budget.time_left(charge):
                            chunk.append((charge, cand))
                        else:
                            skipped(cand, BUDGET_REACHED, charge)
                    evaluated = list(pool.map(lambda t: (t[0], t[1], *self.evaluate(program, t[1], sandbox, tests)),
                                              chunk))
                    for charge, cand, res, binary in evaluated:
                        done += 1
                        report.candidates.append(res)
                        seen[_key(cand)] = res
                        budget.spend(charge, res.seconds)
                        if binary is not None and not budget.time_left(charge):
                            res.stop("time", f"not timed: {BUDGET_REACHED}")
                            if charge in self._searched:
                                self._searched[charge] = False
                        elif binary is not None:
                            self._note(f"timing {res.id} ({res.function}, {res.generator}) [{done}]")
                            t0 = time.perf_counter()
                            try:
                                accepted, est = self.measure(sandbox, tests, program.binary, binary,
                                                             screening=True)
                            except TimingRunFailed as exc:
                                # It passed the tests, then failed on a timing run (another
                                # environment size, so another stack alignment): wrong, not slow.
                                accepted, est = False, None
                                res.stop("test", f"failed while being timed: {exc.message}")
                            budget.spend(charge, time.perf_counter() - t0)
                            if est is not None:
                                res.set_estimate(est)
                                if accepted:
                                    res.stage, res.reason = "accepted", f"{est.speedup:.3f}x faster"
                                    winners.setdefault(res.function, []).append((res, binary, cand))
                                    self._explain(program, res, cand)
                                else:
                                    res.stop("time", f"not significantly faster (lower bound {est.low:.3f} "
                                                     f"<= {1 + req.min_gain:.3f})")
                        history.setdefault((cand.generator, cand.function), []).append(Attempt(cand, res))
        if budget.exhausted:
            report.notes.append(f"search budget reached ({budget.spent_summary()})")
        if any(getattr(g, "incomplete", False) for g in req.generators):
            # A generator could not do its part (a model that did not load, failed requests):
            # no "nothing faster" verdict may be cached for this search.
            self._searched = {name: False for name in self._searched}
        # Per function (and for the whole unit), accepted candidates best first; a whole-unit
        # winner and per-function ones are never combined (see _combine).
        for ranked in winners.values():
            ranked.sort(key=lambda w: -w[0].speedup)
        return winners

    def _triage(self, cand: Candidate, baseline_text: dict, seen: dict) -> CandidateResult | None:
        """A result for a candidate that needs no build (skipped, unchanged, a repeat), or None."""
        res = None
        if cand.skip:
            res = CandidateResult(id="-", function=cand.function, generator=cand.generator, origin=cand.origin,
                                  meta=dict(cand.meta))
            res.stop("skipped", cand.skip)
        elif cand.text == baseline_text.get(cand.function) and \
                all(baseline_text.get(k) == v for k, v in cand.also.items()):
            res = CandidateResult(id="-", function=cand.function, generator=cand.generator, origin=cand.origin,
                                  meta=dict(cand.meta))
            res.stop("skipped", "identical to gcc's unit")
        else:
            earlier = seen.get(_key(cand))
            if earlier is not None:
                res = CandidateResult(id="-", function=cand.function, generator=cand.generator, origin=cand.origin,
                                      meta=dict(cand.meta))
                res.stop("skipped", f"same text as {earlier.id}")
        return res

    def _combine(self, program, confirmed, sandbox, tests, report):
        """Validate and time the program with every confirmed winner; fall back to the best one."""
        ordered = sorted(confirmed.values(), key=lambda t: -t[0].speedup)
        # Winners that replace the same unit (one came with its callers) cannot both go in:
        # the faster one does.
        together, taken = [], set()
        for w in ordered:
            units = set(w[2].replacements())
            whole = WHOLE_UNIT in units or WHOLE_UNIT in taken
            if not (units & taken) and not (whole and taken):
                together.append(w)
                taken |= units
        attempts = [together] if len(together) > 1 else []
        attempts += [[w] for w in ordered]
        for attempt in attempts:
            self._note(f"validating the combined program ({len(attempt)} function(s))")
            _, where = self._new_dir()
            res = CandidateResult(id="combined", function="+".join(r.function for r, _, _ in attempt),
                                  generator="+".join(sorted({r.generator for r, _, _ in attempt})))
            replacements: dict[str, str] = {}
            for _, _, c in attempt:
                replacements.update(c.replacements())
            binary = self.build_candidate(program, replacements, where, res)
            if binary is None:
                report.notes.append(f"combination {res.function} refused at {res.stage}: {res.reason}")
                continue
            outcome = sandbox.check(binary, tests)
            if outcome.first_failure is not None:
                report.notes.append(f"combination {res.function} fails test {outcome.first_failure.test}")
                continue
            try:
                accepted, est = self.measure(sandbox, tests, program.binary, binary)
            except TimingRunFailed as exc:
                report.notes.append(f"combination {res.function} failed while being timed: {exc.message}")
                continue
            if not accepted:
                report.notes.append(f"combination {res.function} not significantly faster ({est.speedup:.3f}x)")
                continue
            report.final = {"functions": [r.function for r, _, _ in attempt], **estimate_dict(est),
                            "tests_passed": outcome.passed, "tests_total": outcome.total,
                            "changes": _changes(program, where / "cand.o", replacements)}
            return binary, [r for r, _, _ in attempt]
        return program.binary, []

    def _explain(self, program: Program, res: CandidateResult, cand: Candidate) -> None:
        """Record what an accepted candidate changed (sgcc.engine.explain); never fails the run."""
        per_fn = _changes(program, self.workdir / res.id / "cand.o", cand.replacements())
        from sgcc.engine.explain import merge

        res.changes = merge(per_fn) if per_fn else []
        if set(per_fn) != {res.function}:
            res.meta["changes_by_function"] = per_fn

    def _ship(self, binary: Path) -> None:
        out = self.req.output
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.sgcc-tmp")
        shutil.copyfile(binary, tmp)
        os.chmod(tmp, 0o755)
        os.replace(tmp, out)

    def close(self) -> None:
        for gen in self.req.generators:
            if hasattr(gen, "close"):
                try:
                    gen.close()
                except Exception:  # a generator's cleanup must not hide the run's outcome
                    pass
        if self.req.keep_temps:
            return
        shutil.rmtree(self.workdir, ignore_errors=True)


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _key(cand: Candidate) -> tuple[str, str]:
    """What makes two candidates the same: the units they replace and their texts."""
    text = cand.text + "".join(f"\0{k}\0{v}" for k, v in sorted(cand.also.items()))
    return cand.function, _digest(text)


BUDGET_REACHED = "search budget reached"
#: Accepted candidates re-measured per function, best first, until one is confirmed.
MAX_CONFIRMATIONS = 3


class _Budget:
    """Bounded search: total seconds and candidates for the program, shared among the
    functions in proportion to their weight (each searched function gets at least half an
    equal share, so a flat profile still spreads the search)."""

    def __init__(self, seconds, candidates, units, weights):
        self.seconds, self.candidates = seconds, candidates
        names = [u.name for u in units]
        n = max(1, len(names))
        total = sum((weights or {}).get(k, 0.0) for k in names) if weights else 0.0
        self.share = {}
        for k in names:
            w = (weights[k] / total) if (weights and total > 0) else 1.0 / n
            self.share[k] = max(w, 0.5 / n)
        self.spent_s: dict[str, float] = {k: 0.0 for k in names}
        self.spent_n: dict[str, int] = {k: 0 for k in names}
        self.overhead = 0.0  # seconds spent for the whole program (the generators' preparation)
        self.exhausted = False

    def time_left(self, name: str) -> bool:
        """Whether the seconds budget still allows work for function ``name``."""
        if self.seconds is not None:
            if self.overhead + sum(self.spent_s.values()) >= self.seconds or \
               self.spent_s.get(name, 0.0) >= self.seconds * self.share.get(name, 1.0):
                self.exhausted = True
                return False
        return True

    def allows(self, name: str) -> bool:
        """Whether one more candidate for ``name`` fits (seconds and candidates)."""
        if not self.time_left(name):
            return False
        if self.candidates is not None:
            if sum(self.spent_n.values()) >= self.candidates or \
               self.spent_n.get(name, 0) >= max(1, round(self.candidates * self.share.get(name, 1.0))):
                self.exhausted = True
                return False
        return True

    def spend(self, name: str, seconds: float) -> None:
        self.spent_s[name] = self.spent_s.get(name, 0.0) + seconds

    def count(self, name: str) -> None:
        self.spent_n[name] = self.spent_n.get(name, 0) + 1

    def describe(self) -> dict:
        return {"seconds": self.seconds, "candidates": self.candidates,
                "share": {k: round(v, 4) for k, v in self.share.items()}}

    def spent_summary(self) -> str:
        return (f"{self.overhead + sum(self.spent_s.values()):.1f} s "
                f"(preparation {self.overhead:.1f} s), {sum(self.spent_n.values())} candidates")


def _changes(program: Program, cand_obj: Path, replacements: dict) -> dict[str, list[str]]:
    """Per replaced function, what changed in its machine code against the baseline's
    (sgcc.engine.explain categories; a whole-unit candidate: every function that changed)."""
    try:
        from sgcc.engine import explain

        if WHOLE_UNIT in replacements:
            return explain.explain_objects(program.obj, cand_obj)
        return explain.classify_objects(program.obj, cand_obj, sorted(replacements))
    except Exception:  # noqa: BLE001 - explaining must never fail a run
        return {name: ["unknown"] for name in replacements}


def _failure_detail(f) -> str:
    """Excerpts of a failed test (sgcc.verify.sandbox.Failure), one repr per line (never what it printed)."""
    parts = [f"input: {f.stdin!r}"]
    if f.expected:
        parts.append(f"expected: {f.expected!r}")
    return "\n".join(parts)


def optimize(request: Request, progress=None, program: Program | None = None) -> Report:
    """Run the engine for one program and return its report (the output is always written:
    the optimized program, or the baseline). ``program`` is a baseline built elsewhere (one
    translation unit of a project); by default the engine builds ``request.source`` itself."""
    engine = Engine(request, progress, program)
    try:
        return engine.run()
    finally:
        engine.close()
