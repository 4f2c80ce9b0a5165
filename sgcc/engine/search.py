"""The search: which functions to search, and asking every generator, round by round and
within the budget, for candidates that the pipeline builds, tests and times.

Functions the tests never execute are not searched (no test could tell a wrong candidate
from a right one there); the others are searched hottest first, and the budget is shared
among them by weight (:mod:`sgcc.engine.budget`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc.candidates import WHOLE_UNIT, Attempt, Candidate
from sgcc.engine import inlining, rank
from sgcc.engine.budget import BUDGET_REACHED, Budget
from sgcc.engine.pipeline import Pipeline, candidate_key
from sgcc.engine.report import CandidateResult, Report
from sgcc.engine.request import Program, Request
from sgcc.stages import Stage
from sgcc.verify.timing import halving
from sgcc.verify.timing import rounds as timing
from sgcc.verify.timing.rounds import TimingLockBusy, TimingRunFailed

if TYPE_CHECKING:
    from sgcc.verify.box.sandbox import Sandbox, TestCase

#: Most of the budget's seconds the profile may take (it runs at least one test).
PROFILE_SHARE = 0.1
#: Most of the search time left that ranking candidates under valgrind may take.
RANK_SHARE = 0.15

#: An undecided race survivor may get up to this many times ``timing_rounds`` rounds in all
#: while the budget lasts (sgcc.verify.timing.halving.race's ``extend_to``).
EXTEND_FACTOR = 4

#: A race's rounds are planned at this many times what its samples so far took: under a
#: moving load a first rung (which nothing can cut short) took 42 s where its calibration
#: foretold 27 s (lcs, --budget 120s, a loaded machine: 19 s over the budget).
RACE_MARGIN = 1.25

#: An accepted candidate: its result, its binary and the candidate itself.
Winner = tuple[CandidateResult, Path, Candidate]


def weigh(request: Request, program: Program, sandbox: Sandbox, tests: list[TestCase], report: Report,
          note=None) -> None:
    """Find where the tests spend their instructions (``program.weights``, ``report.weights``);
    functions they never run go to ``report.skipped_functions`` (only when the profile saw
    every test: one cut short ranks the functions it did not see last instead)."""
    report.generators = [g.name for g in request.generators]
    if not request.profile or not request.generators:
        return
    from sgcc.engine import profile

    weights: dict[str, float] | None
    scope = "the tests"
    complete = True  # the profile saw every test: a function it never saw is never executed
    if program.weights is not None:
        weights = program.weights  # profiled already (a project profiles its binary once)
        scope, complete = program.weights_scope, program.weights_complete
    else:
        if note is not None:
            note("profiling the baseline on the tests")
        # Profiling is part of the budget's wall time: a tenth of it at most (one test always).
        seconds = profile.PROFILE_SECONDS
        if request.budget_seconds is not None:
            seconds = min(seconds, PROFILE_SHARE * request.budget_seconds)
        found = profile.profile_tests(program.binary, tests, sandbox=sandbox,
                                      names=[u.name for u in program.asm.units], seconds=seconds)
        weights = None if found is None else found.weights
        if found is not None:
            scope = found.scope()
            complete = found.profiled >= found.total
            cut = found.cut_note(seconds)
            if cut:
                report.notes.append(cut)
    if weights is None:
        report.notes.append("no profile (valgrind unavailable or failed): every function is searched, "
                            "in file order")
        return
    program.weights = report.weights = weights
    cold = [u.name for u in program.asm.units if weights.get(u.name, 0.0) <= 0.0]
    if cold and not complete:
        # A profile cut short (a loaded machine, slow tests) cannot say a function is never
        # executed: the tests it left out may be the very ones that run it (often the large
        # one, where a program's hot loop lives). Such functions are searched last, from the
        # time the profiled ones leave, never skipped on the profile's word.
        report.notes.append(f"not executed by {scope}, so searched last: {', '.join(cold)}")
        return
    inlined = inlining.for_program(request, program) if cold else {}
    for name in cold:
        why = f"not executed by {scope}"
        if inlined.get(name):
            # Its code ran, inside the units gcc inlined it into: this copy is for other callers.
            why += (f": {inlining.describe(name, inlined[name])}, where the tests run its code "
                    f"(a candidate for that unit can speed it up); this copy of {name} serves other callers")
        report.skipped_functions[name] = why


def full_length(seconds: float, est, rounds: int) -> float:
    """About how long a timing that took ``seconds`` and stopped after ``est.rounds`` of
    ``rounds`` rounds would have taken at full length: the rounds it skipped at the wall
    time its rounds took (the warm-up and the calibration are paid once, so they are not
    scaled up; for short programs starting the boxed runs costs more than the runs), less
    the time it waited for the timing lock."""
    seconds -= est.lock_wait  # another sgcc's timing is no part of this one's cost
    if est.rounds >= rounds or est.rounds <= 0:
        return seconds
    per_round = est.round_seconds / est.rounds
    return seconds + (rounds - est.rounds) * per_round


def cuts(candidates, names: list[str], settled=frozenset(), searched: dict[str, bool] | None = None) -> dict:
    """What the budget cut, from the candidates' results: how many were offered but not built
    and built but not timed; the functions (of ``names``) of which no candidate was built
    (``unsearched``: their candidates refused, or their generators never asked), and those
    of which some were built but others cut (``cut_short``). A function whose candidates
    were built and tested but not timed was searched in part, not "not searched"."""
    searched = searched or {}
    cut_reasons = (BUDGET_REACHED, f"not timed: {BUDGET_REACHED}")
    cut = [c for c in candidates if c.reason in cut_reasons]
    built = {c.function for c in candidates if c.id != "-"}  # built, and tested if it linked
    cut_fns = {c.function for c in cut}
    unsearched = [n for n in names if n not in settled and n not in built
                  and (n in cut_fns or not searched.get(n, True))]
    partly = [n for n in names if n in cut_fns and n in built]
    return {"not_built": sum(c.reason == BUDGET_REACHED for c in cut),
            "built_not_timed": sum(c.reason != BUDGET_REACHED for c in cut),
            "unsearched": unsearched, "cut_short": partly}


def units_in_order(program: Program, report: Report) -> list:
    """The units worth searching, hottest first."""
    units = [u for u in program.asm.units if u.name not in report.skipped_functions]
    weights = program.weights
    if weights:
        units.sort(key=lambda u: -weights.get(u.name, 0.0))
    return units


def triage(cand: Candidate, baseline_text: dict, seen: dict) -> CandidateResult | None:
    """A result for a candidate that needs no build (skipped, unchanged, a repeat), or None."""
    res = None
    if cand.skip:
        res = CandidateResult(id="-", function=cand.function, generator=cand.generator, origin=cand.origin,
                              meta=dict(cand.meta))
        res.stop(Stage.SKIPPED, cand.skip)
    elif cand.text == baseline_text.get(cand.function) and \
            all(baseline_text.get(k) == v for k, v in cand.also.items()):
        res = CandidateResult(id="-", function=cand.function, generator=cand.generator, origin=cand.origin,
                              meta=dict(cand.meta))
        res.stop(Stage.SKIPPED, "identical to gcc's unit")
    else:
        earlier = seen.get(candidate_key(cand))
        if earlier is not None:
            res = CandidateResult(id="-", function=cand.function, generator=cand.generator, origin=cand.origin,
                                  meta=dict(cand.meta))
            res.stop(Stage.SKIPPED, f"same text as {earlier.id}")
    return res


class Search:
    """One program's search. After :meth:`run`, ``searched`` says per searched function
    whether its search was complete (``False``: cut short by the budget, or a generator could
    not do its part), which decides whether a "nothing faster" verdict may be cached."""

    def __init__(self, request: Request, pipeline: Pipeline, program: Program, sandbox: Sandbox,
                 tests: list[TestCase], report: Report, *, jobs: int, note=None):
        self.req, self.pipeline, self.program = request, pipeline, program
        self.sandbox, self.tests, self.report = sandbox, tests, report
        self.jobs = jobs
        self.note = note or (lambda message: None)
        self.searched: dict[str, bool] = {}
        self.budget: Budget | None = None
        self.ranker: rank.Ranker | None = None
        self.predictions: list[tuple[CandidateResult, float]] = []
        self.sample_seconds = 0.0  # what one timing sample took in the last race (0: none yet)

    def run(self, cached: Sequence[Candidate] = (), settled: AbstractSet[str] = frozenset(),
            started: float | None = None) -> dict[str, list[Winner]]:
        """Ask every generator, round by round, within the budget; build, test and time what
        they propose. Returns the accepted candidates per function (and for the whole unit),
        best first. ``cached`` winners are offered again in round 0 outside the budget;
        ``settled`` functions are not searched.

        Each round builds and tests the candidates (in parallel), ranks those that passed
        by predicted gain (:mod:`sgcc.engine.rank`), and times them best predicted first.
        The budget (:mod:`sgcc.engine.budget`) is checked before each candidate is queued
        (candidates and seconds), before each group of builds and before each timing
        (seconds); its clock starts at ``started`` (``time.perf_counter()`` when the run
        began: the baseline, the profile and the generators' preparation count), and it
        keeps a reserve for confirming the winners afterwards (``self.budget``)."""
        req, program, report = self.req, self.program, self.report
        units = units_in_order(program, report)
        budget = self.budget = Budget(req.budget_seconds, req.budget_candidates, units, program.weights,
                                      started=started, confirm_factor=timing.confirm_rounds(
                                          req.timing_rounds, len(self.sandbox.worlds) or 1)
                                      / req.timing_rounds)
        budget.begin_search()
        report.budget = budget.describe()
        winners: dict[str, list[Winner]] = {}
        history: dict[tuple[str, str], list[Attempt]] = {}
        seen: dict[tuple[str, str, bool], CandidateResult] = {}
        baseline_text = {u.name: u.text for u in program.asm.units}
        baseline_text[WHOLE_UNIT] = program.asm_text
        self.searched = {u.name: True for u in units}

        def skipped(cand: Candidate, reason: str, unit_name: str | None = None) -> None:
            if unit_name in self.searched and reason == BUDGET_REACHED:
                self.searched[unit_name] = False  # cut short: no "nothing faster" verdict
            res = CandidateResult(id="-", function=cand.function, generator=cand.generator, origin=cand.origin,
                                  meta=dict(cand.meta))
            res.stop(Stage.SKIPPED, reason)
            report.candidates.append(res)
            history.setdefault((cand.generator, cand.function), []).append(Attempt(cand, res))

        batch: list[tuple[str, Candidate]] = []  # this round's: (the unit it is charged to, the candidate)
        pending: set[tuple[str, str, bool]] = set()  # this round's candidate keys

        def offer(cand: Candidate, unit_name: str, budgeted: bool = True) -> None:
            res = triage(cand, baseline_text, seen)
            if res is not None:
                report.candidates.append(res)
                history.setdefault((cand.generator, cand.function), []).append(Attempt(cand, res))
            elif candidate_key(cand) in pending:
                skipped(cand, "same text as another candidate of this round")
            elif budgeted and not budget.allows(unit_name):
                skipped(cand, BUDGET_REACHED, unit_name)
            else:
                pending.add(candidate_key(cand))
                batch.append((unit_name, cand))
                budget.count(unit_name)

        asked = {id(g): max(req.max_generator_rounds, g.rounds) for g in req.generators}
        # A generator that ``leads`` (project mode's pgo: the whole project's profile, the
        # measured gain) is asked first; the others keep their order (cheap ones first).
        generators = sorted(req.generators, key=lambda g: not g.leads)
        for round_no in range(max(1, req.max_generator_rounds, *asked.values())):
            batch.clear()
            pending.clear()
            budget.reopen()
            if round_no == 0:
                for cand in cached:
                    offer(cand, cand.function, budgeted=False)  # re-validating earlier winners
            for unit in units:
                if unit.name in settled:
                    continue
                proposals: list[list[Candidate]] = []
                for gen in (g for g in generators if round_no < asked[id(g)]):
                    if not budget.allows(unit.name):
                        self.searched[unit.name] = False  # cut short: no "nothing faster" verdict
                        continue
                    past = history.setdefault((gen.name, unit.name), [])
                    t0 = time.perf_counter()
                    proposed = list(gen.propose(program, unit, round_no, past))
                    for cand in proposed:
                        cand.trusted = gen.trusted  # the engine's word, never the generator's candidate
                    proposals.append(proposed)
                    budget.spend(unit.name, time.perf_counter() - t0)
                # Take the generators' candidates in turn (each lists its most promising
                # first), so that a tight budget is shared among them, not spent on the first.
                for k in range(max((len(p) for p in proposals), default=0)):
                    for proposed in proposals:
                        if k < len(proposed):
                            offer(proposed[k], unit.name)
            if not batch:
                # Nothing new this round (every generator done, or only repeats): stop early,
                # unless a generator has variants it compiles in later rounds.
                if any(g.waiting() for g in generators if round_no + 1 < asked[id(g)]) and \
                        any(budget.allows(u.name) for u in units if u.name not in settled):
                    continue
                break
            for name in budget.share:
                if all(charge != name for charge, _ in batch):
                    budget.finish(name)  # nothing to build this round: its share is slack
            self.note(f"round {round_no}: building and testing {len(batch)} candidates")
            # Work the budget refused while hotter functions still claimed their shares is
            # offered again once they are done (their unused time is slack then).
            while batch:
                deferred: list[tuple[str, Candidate]] = []
                built = self._build(batch, budget, deferred, history, seen)
                built = self._rank(built, budget)
                self._time(built, budget, winners, history)
                if not built or not deferred or not budget._search_left(budget.candidate_cost()):
                    for charge, cand in deferred:
                        skipped(cand, BUDGET_REACHED, charge)
                    break
                batch = deferred
                budget.new_pass()
        self._record_left_over(units, settled, skipped)
        if budget.exhausted:
            report.notes.append(f"search budget reached ({budget.spent_summary()})")
        self._record_cuts(units, settled)
        if self.predictions:
            timed = [(r.id, p, r.speedup) for r, p in self.predictions if r.speedup is not None]
            report.ranking = {**rank.agreement(timed), "ranked": len(self.predictions),
                              "valgrind_seconds": round(self.ranker.seconds, 1) if self.ranker else 0.0}
        if any(g.incomplete for g in req.generators):
            # A generator could not do its part (a model that did not load, failed requests):
            # no "nothing faster" verdict may be cached for this search.
            self.searched = {name: False for name in self.searched}
        # Per function (and for the whole unit), accepted candidates best first; a whole-unit
        # winner and per-function ones are never combined (see sgcc.engine.select.combine).
        for ranked in winners.values():
            ranked.sort(key=lambda w: -(w[0].speedup or 0.0))  # accepted: each has a speedup
        return winners

    # ------------------------------------------------------------------ a round's three phases

    def _build(self, batch, budget: Budget, deferred: list, history, seen) -> list[tuple]:
        """Build and test the round's candidates in parallel; (charge, candidate, result,
        binary) of those that passed. Builds stop at half the search time, so that timing
        keeps the rest (a few hundred candidates must not spend it all on building); what
        the budget refuses goes to ``deferred``."""
        built: list[tuple] = []
        total, done = len(batch), 0
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            while batch:
                chunk: list[tuple[str, Candidate]] = []
                while batch and len(chunk) < self.jobs:
                    charge, cand = batch.pop(0)
                    if budget.time_left(charge, budget.build_cost()) and budget.building_allowed():
                        chunk.append((charge, cand))
                    else:
                        deferred.append((charge, cand))
                chunk_started = time.perf_counter()
                futures = [pool.submit(lambda t: (t[0], t[1], *self.pipeline.evaluate(self.program, t[1], self.sandbox,
                                                                                      self.tests)), t) for t in chunk]
                for future in as_completed(futures):
                    # One line per candidate as it ends (a round of dozens takes minutes).
                    _, _, res, binary = future.result()
                    done += 1
                    outcome = "passed the tests" if binary is not None else f"stopped at {res.stage}"
                    self.note(f"built and tested {done}/{total}: {res.id} ({res.function}, {res.generator}) "
                              f"{outcome}")
                evaluated = [f.result() for f in futures]  # in the order offered
                # A function's share is charged the wall time the chunk took, split by each
                # candidate's own seconds: builds run ``jobs`` at a time, so charging their
                # sum spent a share jobs times over (lcs, 120 s, a loaded machine: 8 built in
                # 52 s charged 96 s, and the function's share refused every timing).
                wall = time.perf_counter() - chunk_started
                own = sum(res.seconds for _, _, res, _ in evaluated) or 1.0
                for charge, cand, res, binary in evaluated:
                    self.report.candidates.append(res)
                    seen[candidate_key(cand)] = res
                    budget.spend(charge, wall * res.seconds / own)
                    budget.record_build(res.seconds)
                    if binary is not None:
                        built.append((charge, cand, res, binary))
                    else:
                        history.setdefault((cand.generator, cand.function), []).append(Attempt(cand, res))
        return built

    def _rank(self, built: list[tuple], budget: Budget) -> list[tuple]:
        """``built`` in the order to time them: best predicted gain first (unchanged when
        there is nothing to choose between, or no valgrind)."""
        if len(built) < 2:
            return built
        # Ranking may take RANK_SHARE of the search time left: what it saves is timings, so
        # it must cost a fraction of them.
        allowed = None if budget.seconds is None else \
            RANK_SHARE * max(0.0, budget.seconds - budget.elapsed() - budget.reserve())
        if self.ranker is None:
            if allowed is not None and allowed < rank.RANK_SECONDS * (1 + 2 / self.jobs):
                self.report.notes.append("candidates not ranked: the budget leaves too little time for valgrind")
                return built
            self.note("ranking: counting the baseline's instructions and cache misses")
            t0 = time.perf_counter()
            per_count = rank.RANK_SECONDS if allowed is None else \
                min(rank.RANK_SECONDS, allowed / (1 + len(built) / self.jobs))
            self.ranker = rank.Ranker(self.sandbox, self.program.binary, self.tests, seconds=per_count)
            if allowed is not None:
                allowed -= time.perf_counter() - t0
            if not self.ranker.ok:
                self.report.notes.append(f"candidates not ranked: {self.ranker.note}")
        if not self.ranker.ok:
            return built
        # As many as fit (in the order offered: hottest function and most promising first);
        # a candidate costs about what the baseline did.
        ranker = self.ranker
        assert ranker is not None  # made above
        fit = len(built)
        if allowed is not None:
            fit = min(fit, int(max(0.0, allowed) * self.jobs / max(ranker.base_seconds, 0.05)))
        if fit < 2:
            self.report.notes.append("candidates not ranked: counting them would cost more than valgrind's "
                                     "share of the budget")
            return built
        todo = built[:fit]
        self.note(f"ranking {len(todo)} of {len(built)} candidates (valgrind)")
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            futures = [pool.submit(ranker.predict, t[3]) for t in todo]
            for done, _ in enumerate(as_completed(futures), 1):
                self.note(f"ranking {len(todo)} of {len(built)} candidates (valgrind): {done}/{len(todo)} counted")
            predicted = [f.result() for f in futures]
        for (_, _, res, _), p in zip(todo, predicted):
            if p is not None:
                res.meta["predicted"] = round(p, 4)
                self.predictions.append((res, p))
        if fit < len(built):
            self.report.notes.append(f"ranked {fit} of {len(built)} candidates (valgrind's share of the budget)")
        # Unranked ones (no time left for them, valgrind failed) count as no change; stable.
        return sorted(built, key=lambda t: -t[2].meta.get("predicted", 1.0))

    def _time(self, built: list[tuple], budget: Budget, winners: dict, history) -> None:
        """Time the built candidates within the budget, in order: a function with one
        candidate is timed against the baseline alone; several candidates of one function
        race each other (successive halving, :mod:`sgcc.verify.timing.halving`), so the rounds go
        to the ones that look fastest and the futile ones stop early."""
        left: dict[str, int] = {}
        for charge, *_ in built:
            left[charge] = left.get(charge, 0) + 1
        for name in budget.share:
            if name not in left:
                budget.finish(name)  # nothing of its own to time this round: its share is slack
        groups: dict[str, list[tuple]] = {}
        for item in built:
            groups.setdefault(item[2].function, []).append(item)
        done = 0
        for group in groups.values():
            if not self.req.race:
                for item in group:
                    done += 1
                    self._time_one(item, budget, winners, done, len(built))
            else:
                self._race(group, budget, winners)
                done += len(group)
            for charge, cand, res, _ in group:
                history.setdefault((cand.generator, cand.function), []).append(Attempt(cand, res))
                left[charge] -= 1
                if not left[charge]:
                    budget.finish(charge)

    def _time_one(self, item: tuple, budget: Budget, winners: dict, done: int, total: int) -> None:
        """One candidate against the baseline (screening: it stops early once decided)."""
        req, program = self.req, self.program
        charge, cand, res, binary = item
        if not budget.time_left(charge, budget.typical_timing()):  # built already: a timing's cost
            res.stop(Stage.TIME, f"not timed: {BUDGET_REACHED}")
            if charge in self.searched:
                self.searched[charge] = False
            return
        self.note(f"timing {res.id} ({res.function}, {res.generator}) [{done}/{total}]")
        t0 = time.perf_counter()
        try:
            accepted, est = self.pipeline.measure(self.sandbox, self.tests, program.binary, binary, screening=True)
        except TimingRunFailed as exc:
            # It passed the tests, then failed on a timing run (another
            # environment size, so another stack alignment): wrong, not slow.
            res.stop(Stage.TEST, f"failed while being timed: {exc.message}")
            budget.spend(charge, time.perf_counter() - t0)
            return
        spent = time.perf_counter() - t0
        budget.spend(charge, spent)
        budget.record_timing(spent, full_length(spent, est, req.timing_rounds))
        res.set_estimate(est)
        self._judge(item, est, accepted, budget, winners)

    def _judge(self, item: tuple, est, accepted: bool, budget: Budget, winners: dict, short: str = "") -> None:
        """A timed candidate: accepted (then proven function by function) or not faster
        (``short``: said of a timing the budget cut short, e.g. " on the 6 rounds the budget allowed")."""
        req, program = self.req, self.program
        charge, cand, res, binary = item
        if accepted:
            res.stage, res.reason = Stage.ACCEPTED, f"{est.speedup:.3f}x faster"
            # Faster and correct on the tests: now its functions on their own states.
            t1 = time.perf_counter()
            accepted = self.pipeline.prove(res, cand)
            budget.spend(charge, time.perf_counter() - t1)
        if accepted:
            if res.function not in winners:
                budget.winners += 1
                budget.combinable += res.function != WHOLE_UNIT
            winners.setdefault(res.function, []).append((res, binary, cand))
            self.pipeline.explain(program, res, cand)
        elif res.stage not in (Stage.TEST, Stage.PROVE):
            res.stop(Stage.TIME, f"not significantly faster{short} (lower bound {est.low:.3f} "
                                 f"<= {1 + req.min_gain:.3f})")

    def _race(self, group: list[tuple], budget: Budget, winners: dict) -> None:
        """Several candidates of one function race each other (:func:`sgcc.verify.timing.halving.race`);
        the survivor is judged like a single candidate on all its rounds (a screening: the
        engine confirms it on fresh rounds before believing it). The schedule is recorded
        in each candidate's ``meta["race"]`` and in ``report.budget["races"]``."""
        req, program = self.req, self.program
        charge = group[0][0]
        by_id = {item[2].id: item for item in group}
        fn = group[0][2].function
        # They are built: what is asked is a timing's cost, not a whole candidate's (with its
        # build, that refused a race of 9 built candidates with 18 s left: lcs, --budget 120s,
        # a loaded machine): one candidate's first rung at the last race's sample cost.
        first_rung = 2 * halving.FIRST_ROUNDS * self.sample_seconds * RACE_MARGIN
        if not budget.time_left(charge, max(budget.typical_timing(), first_rung)):
            # Not even one candidate's timing fits: time none (the race's warm-up and
            # calibration would be spent for nothing).
            for _, _, res, _ in group:
                res.stop(Stage.TIME, f"not timed: {BUDGET_REACHED}")
            if charge in self.searched:
                self.searched[charge] = False
            return
        what = f"racing {len(group)} candidates for {fn}" if len(group) > 1 else \
            f"timing {group[0][2].id} ({fn}, {group[0][2].generator})"
        self.note(f"{what} (successive halving)" if len(group) > 1 else what)
        on_wait, waited = self.pipeline.lock_waiter()

        def afford(alive: int, rounds: int, sample_seconds: float) -> bool:
            return budget.time_left(charge, RACE_MARGIN * rounds * (alive + 1) * sample_seconds)

        t0 = time.perf_counter()
        try:
            r = halving.race(timing.runner(self.sandbox, program.binary, self.tests),
                             {rid: timing.runner(self.sandbox, item[3], self.tests) for rid, item in by_id.items()},
                             min_rounds=req.timing_rounds, min_sample_seconds=req.min_sample, seed=req.seed,
                             worlds=len(self.sandbox.worlds) or 1, futile_below=1 + req.min_gain,
                             settled_above=1 + req.min_gain, afford=afford,
                             # Only a bounded budget has time that would otherwise go unused.
                             extend_to=EXTEND_FACTOR * req.timing_rounds if budget.seconds is not None else 0,
                             note=lambda message: self.note(f"{what}: {message}"), on_wait=on_wait,
                             # No timing may start after the budget: its wait for the lock is bounded.
                             lock_timeout=None if budget.left() is None else max(0.0, budget.left() or 0.0))
        except TimingLockBusy as exc:
            # Another run timed until the budget ran out: nothing was measured here.
            waited(time.perf_counter() - t0)
            for _, _, res, _ in group:
                res.stop(Stage.TIME, f"not timed: {BUDGET_REACHED}")
            if charge in self.searched:
                self.searched[charge] = False
            self.report.notes.append(f"{len(group)} candidate(s) for {fn} not timed: the timing lock was held by "
                                     f"another run ({exc.holder or 'holder unknown'}) until the budget ran out")
            return
        except TimingRunFailed as exc:
            # gcc's own program failed a timed run (the candidates' failures are caught in
            # the race): nothing measured here can be believed.
            budget.spend(charge, time.perf_counter() - t0)
            for _, _, res, _ in group:
                res.stop(Stage.TEST, f"not timed: gcc's program failed while being timed: {exc.message}")
            return
        waited(r.lock_wait)
        if r.sample_seconds > 0:
            self.sample_seconds = r.sample_seconds
        spent = time.perf_counter() - t0 - r.lock_wait
        budget.spend(charge, spent)
        ran = [rid for rid in by_id if rid in r.estimates]
        # What one candidate timed alone at full length would cost (the reserve counts on it).
        full = 2 * req.timing_rounds * r.sample_seconds + (r.seconds - sum(g.seconds for g in r.rungs))
        for _ in ran:
            budget.record_timing(spent / max(1, len(ran)), full)
        summary = {"function": fn, "candidates": len(group), "rungs": r.schedule(), "stopped": r.stopped,
                   "survivors": list(r.survivors), "untimed": len(r.untimed), "seconds": round(spent, 1)}
        self.report.budget.setdefault("races", []).append(summary)
        for rid, item in by_id.items():
            _, _, res, _ = item
            est = r.estimates.get(rid)
            if est is not None:
                res.set_estimate(est)
                res.meta["race"] = {"field": len(group), "rounds": halving.rounds_of(r, rid),
                                    "rungs": [g.rounds for g in r.rungs if rid in g.ran]}
            if rid in r.failed:
                res.stop(Stage.TEST, f"failed while being timed: {r.failed[rid].message}")
            elif rid in r.untimed or est is None:
                res.stop(Stage.TIME, f"not timed: {BUDGET_REACHED}")
                if charge in self.searched:
                    self.searched[charge] = False
            elif rid in r.dropped:
                res.stop(Stage.TIME, halving.describe(r, rid))
            else:
                # A survivor is judged on every round it ran, with the usual lower-bound rule,
                # also when the budget stopped the race early: like every race result this is
                # a screening (few rounds make a bootstrap interval less reliable, not only
                # wider), so an acceptance ships only after its confirmation on fresh, full
                # rounds (sgcc.engine.select.confirm), as every winner's does.
                short = f" on the {est.rounds} rounds the budget allowed" if r.stopped == "budget" else ""
                self._judge(item, est, timing.decide(est, req.min_gain), budget, winners, short)
        # A survivor the proof of its functions refused leaves the race without a winner it
        # earned: the runners-up (dropped as the slower half, not as futile) are judged on the
        # rounds they ran, best first, and proven in turn, until one holds (each is still
        # confirmed on fresh rounds before it ships).
        if not any(item[2].stage == Stage.ACCEPTED for item in group) \
                and any(item[2].stage == Stage.PROVE for item in group):
            runners = sorted((item for rid, item in by_id.items() if rid in r.dropped and rid in r.estimates),
                             key=lambda item: -r.estimates[item[2].id].speedup)
            for item in runners:
                est = r.estimates[item[2].id]
                if not timing.decide(est, req.min_gain):
                    continue
                item[2].meta.setdefault("race", {})["after_refused_survivor"] = True
                self._judge(item, est, True, budget, winners)
                if item[2].stage == Stage.ACCEPTED:
                    break

    def _record_left_over(self, units, settled, skipped) -> None:
        """Variants a generator named but never compiled (the search ended first): one
        candidate cut by the budget each, charged to the hottest function searched, so the
        report counts them as cut rather than losing them."""
        hottest = next((u.name for u in units if u.name not in settled), None)
        if hottest is None:
            return
        for gen in self.req.generators:
            for variant in gen.left_over():
                shown = variant.shown if variant.shown is not None else variant.flags
                cand = Candidate(hottest, gen.name, "", origin=f"{gen.name} {variant.name}: {' '.join(shown)} "
                                 "(not compiled)", meta={"flags": list(shown), "variant": variant.name})
                skipped(cand, BUDGET_REACHED, hottest)

    def _record_cuts(self, units, settled) -> None:
        """What the budget cut, in ``report.budget["cut"]``: candidates offered but never
        timed, and the functions it left unsearched or searched only in part."""
        self.report.budget["cut"] = cuts(self.report.candidates, [u.name for u in units], settled, self.searched)
        self.report.budget["timed"] = sum(c.speedup is not None for c in self.report.candidates)
        budget = self.budget
        assert budget is not None  # set by run() before it records cuts
        self.report.budget["search_seconds"] = round(budget.elapsed() - budget.overhead, 1)
        self.report.budget["before_search_seconds"] = round(budget.overhead, 1)
