"""The engine: prove each candidate correct and faster, safely, or drop it.

For one C program (the papers' setting) and its tests, :class:`Engine` runs the stages in
the order of the modules that hold them:

1. build the baseline exactly as gcc does with the user's flags (``-S``, assemble, link) and
   split its assembly into function units (:mod:`sgcc.engine.baseline`);
2. record expected outputs the tests lack by running the baseline (and check it passes the
   ones it has), then weigh the functions by where the tests spend instructions
   (:func:`sgcc.engine.search.weigh`);
3. seed the search from the verdict cache (:mod:`sgcc.engine.verdicts`), prepare the
   generators, and search (:mod:`sgcc.engine.search`): every candidate from every generator
   goes through the pipeline (:mod:`sgcc.engine.pipeline`): screen its text (``screen``),
   substitute it into the baseline assembly and assemble (``assemble``), compare the object
   with the baseline's and apply the instruction-set policy (``check``), link (``link``),
   run all tests in the sandbox (``test``), then time it against the baseline on paired,
   interleaved rounds (``time``); only a lower confidence bound above the minimum gain is
   ``accepted``; the budget (:mod:`sgcc.engine.budget`) bounds it all;
4. per function, re-measure the best accepted candidate on fresh rounds before believing it
   (when fresh rounds do not confirm it, the next best, up to ``MAX_CONFIRMATIONS``);
5. combine the winners, validate and time the combined program once more, and ship it; when
   it is not confirmed, the next most promising combinations while the budget lasts, else
   the baseline (:mod:`sgcc.engine.select`); record the verdicts.

``--budget`` seconds are the run's wall time, from the start (:mod:`sgcc.engine.budget`).

Builds and tests run in parallel; timing runs one at a time, machine-wide.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from sgcc.candidates import Context
from sgcc.engine import inlining, select
from sgcc.engine.baseline import build_baseline
from sgcc.engine.budget import account
from sgcc.engine.figures import problem_figures
from sgcc.engine.pipeline import Pipeline
from sgcc.engine.proof import prepare as prepare_proof
from sgcc.engine.report import CandidateResult, Report
from sgcc.engine.request import Program, Request
from sgcc.engine.search import Search, weigh
from sgcc.engine.verdicts import Verdicts
from sgcc.errors import SgccError
from sgcc.stages import Stage


class Engine:
    """Runs one optimization request; see the module docstring.

    ``program`` is a baseline built elsewhere (one translation unit of a project); by
    default :meth:`run` builds ``request.source`` itself. ``pipeline`` builds, tests and
    times single candidates (what :mod:`sgcc.lab.reward` uses to judge one answer);
    ``workdir`` is the run's private directory, removed by :meth:`close` unless
    ``request.keep_temps``."""

    def __init__(self, request: Request, progress=None, program: Program | None = None):
        self.req = request
        self.progress = progress
        self.given_program = program
        self.pipeline = Pipeline(request)
        self.pipeline.note = self.note
        self.workdir: Path = self.pipeline.workdir
        self.jobs = request.jobs or os.cpu_count() or 1

    def note(self, message: str) -> None:
        """Show ``message`` on the progress display, if any."""
        if self.progress is not None:
            self.progress.status(message)

    def build_baseline(self) -> Program:
        """gcc's program for the request's source, built in the run's directory."""
        return build_baseline(self.req, self.workdir)

    def run(self) -> Report:
        """The whole run: search, confirm, combine, ship (``request.output`` is always
        written: the optimized program, or the baseline) and record the verdicts."""
        from sgcc.verify.box import sandbox as sandboxmod

        req = self.req
        started = time.perf_counter()
        self.note("building the baseline")
        program = self.given_program or self.build_baseline()
        report = Report(source=str(req.source), flags=list(req.flags), isa=program.target.name,
                        min_gain=req.min_gain, functions=[u.name for u in program.asm.units])
        tests = sandboxmod.load_tests(req.tests)
        from sgcc.verify.box.isolation_level import isolation_report, require_isolation

        isolation = isolation_report()
        report.isolation = {"level": isolation.describe(), **isolation.to_dict()}
        left_out = [g for g in req.generators if not g.trusted and g.optional]
        if left_out and not isolation.complete and not req.accept_isolation_risk:
            # 'auto' chose them: the run goes on with gcc's own generators, and says why.
            req.generators = [g for g in req.generators if g not in left_out]
            report.notes.append(f"{', '.join(g.name for g in left_out)}: left out: test runs here lack "
                                f"{', '.join(isolation.missing)} (--accept-isolation-risk runs them)")
        from sgcc.engine.funcproof import footprint_unavailable

        why_not = footprint_unavailable(req, program)
        unchecked = [g for g in req.generators if not g.trusted]
        if unchecked and why_not is not None and req.footprint != "waived":
            # None of their candidates could be accepted (the footprint rule is required of
            # code gcc did not write, and cannot run here): none is built, timed and refused.
            req.generators = [g for g in req.generators if g.trusted]
            report.notes.append(f"{', '.join(sorted({g.name for g in unchecked}))}: left out: candidates gcc did "
                                f"not write are accepted only once the footprint rule held on their function "
                                f"states, and {why_not} (footprint = waived accepts them on the tests alone)")
        untrusted = sorted({g.name for g in req.generators if not g.trusted})
        if untrusted:
            require_isolation(f"{', '.join(untrusted)} candidates", accept_risk=req.accept_isolation_risk,
                              report=isolation)
        with sandboxmod.Sandbox(timeout=req.test_timeout, keep=req.keep_temps, expose=program.expose,
                                worlds=req.worlds, world_seed=req.world_seed) as sandbox:
            self.note(f"recording expected outputs ({len(tests)} tests)")
            tests = sandbox.record(program.binary, tests)
            base_outcome = sandbox.check(program.binary, tests)
            if base_outcome.first_failure is not None:
                f = base_outcome.first_failure
                raise SgccError(f"the baseline program fails its own test {f.test}: {f.reason}",
                                hint="the tests' .out files must be what the program prints")
            report.tests = len(tests)
            proof = prepare_proof(tests, sandbox, program.binary, mutants=req.mutants, seed=req.seed,
                                  note=self.note)
            self.pipeline.hidden_tests = proof.hidden
            from sgcc.engine.funcproof import FunctionProof

            self.pipeline.functions = FunctionProof(req, program, sandbox, proof.visible, self.workdir, self.note)
            all_tests, tests = tests, proof.visible

            # Candidates for functions the program does not have are refused up front.
            names = {u.name for u in program.asm.units}
            for gen in req.generators:
                for cand in gen.unmatched(names):
                    res = CandidateResult(id="-", function=cand.function, generator=gen.name, origin=cand.origin)
                    why = f"no function named {cand.function} in {req.source.name}"
                    held = inlining.for_program(req, program).get(cand.function)
                    if held:  # in the C source, but gcc left no unit of its own: say where its code is
                        why += (f": {inlining.describe(cand.function, held)} and kept no copy of its own; "
                                f"a candidate for {held[0][0]} replaces that code")
                    res.stop(Stage.SCREEN, why)
                    report.candidates.append(res)

            weigh(req, program, sandbox, all_tests, report, self.note)
            verdicts = Verdicts(req, program, all_tests)
            cached = verdicts.lookup(report)
            dropped = []
            if why_not is not None and req.footprint != "waived":
                dropped = [c for c in cached if not c.trusted]
            if dropped:
                # Cached winners are never trusted (docs/cache.md) and the footprint rule cannot
                # hold them here: not re-offered only to be refused; their functions are
                # searched afresh by gcc's own generators (which may propose the same code).
                cached = [c for c in cached if c.trusted]
                verdicts.settled -= {c.function for c in dropped}
                report.notes.append(f"{len(dropped)} cached winner(s) left out: gcc's own code or not, a cached "
                                    f"candidate is accepted only once the footprint rule held, and {why_not} "
                                    "(footprint = waived re-validates them on the tests alone)")
            context = Context(program=program, sandbox=sandbox, tests=tests, workdir=self.workdir,
                              compiler=req.compiler, isa=req.isa, note=self.note, jobs=self.jobs)
            for gen in req.generators:
                self.note(f"preparing {gen.name}")
                gen.prepare(context)
            search = Search(req, self.pipeline, program, sandbox, tests, report, jobs=self.jobs, note=self.note)
            winners = search.run(cached, verdicts.settled, started=started)
            search_end = time.perf_counter() - started

            confirmed = select.confirm(self.pipeline, program, winners, sandbox, tests, self.note,
                                       budget=search.budget)
            final_binary = program.binary
            shipped: list[CandidateResult] = []
            if winners:
                final_binary, shipped = select.combine(self.pipeline, program, confirmed, sandbox, tests, report,
                                                       self.note, winners=winners, budget=search.budget)
            report.function_proof = self.pipeline.functions.summary
            report.proof = {**proof.summary(), **{f"failed_{k}": v for k, v in self.pipeline.hidden_failures.items()}}
            report.paper = problem_figures(report.candidates)
            if shipped:
                report.shipped = [r.id for r in shipped]
            # What was shipped per function (a combination may use a function's next-best candidate).
            by_result = {id(r): c for ranked in winners.values() for r, _, c in ranked}
            verdicts.store(report, shipped, {r.function: by_result[id(r)] for r in shipped}, search.searched)
            select.ship(final_binary, req.output)
            if req.object_output is not None:
                # The shipped combination's object lies beside its binary (Pipeline.build_candidate).
                select.ship(final_binary.with_name("cand.o") if shipped else program.obj, req.object_output)
            from sgcc.engine.references import clang_whole_program

            clang_ref = clang_whole_program(self.pipeline, program, sandbox, tests, all_tests, req.generators,
                                            self.workdir, req.compiler, self.note)
            if clang_ref is not None:
                report.references["clang_whole_program"] = clang_ref
        report.seconds = time.perf_counter() - started
        report.budget.update(account(report.seconds, req.budget_seconds, search_end, self.pipeline.lock_waits,
                                     started))
        return report

    def close(self) -> None:
        """Close every generator and remove the run's directory (unless ``keep_temps``)."""
        for gen in self.req.generators:
            try:
                gen.close()
            except Exception:  # noqa: BLE001 - a generator's cleanup must not hide the run's outcome
                pass
        if self.req.keep_temps:
            return
        shutil.rmtree(self.workdir, ignore_errors=True)


def optimize(request: Request, progress=None, program: Program | None = None) -> Report:
    """Run the engine for one program and return its report (the output is always written:
    the optimized program, or the baseline). ``program`` is a baseline built elsewhere (one
    translation unit of a project); by default the engine builds ``request.source`` itself."""
    engine = Engine(request, progress, program)
    try:
        return engine.run()
    finally:
        engine.close()
