"""After the search: believe a winner only after fresh rounds agree, combine the confirmed
winners into one program, validate and time that once more, and ship it. When the
combination is not confirmed, try the next most promising ones (drop the weakest member,
or take a function's next-best accepted candidate) while the budget lasts; ship the
baseline when none is confirmed: never a combination that was not validated and timed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc.candidates import WHOLE_UNIT
from sgcc.engine.pipeline import Pipeline, changes, untrusted_units
from sgcc.engine.report import CandidateResult, Report, estimate_dict
from sgcc.engine.request import Program
from sgcc.engine.search import Winner
from sgcc.fsutil import atomic_write
from sgcc.stages import Stage
from sgcc.verify.timing.rounds import TimingRunFailed

if TYPE_CHECKING:
    from sgcc.verify.box.sandbox import Sandbox, TestCase

#: Accepted candidates re-measured per function, best first, until one is confirmed.
MAX_CONFIRMATIONS = 3
#: Combinations validated and timed at most after the search (the budget may stop sooner).
MAX_COMBINATIONS = 6
#: Candidates per function a combination may choose from, and functions combined at most.
MAX_OPTIONS = 4
MAX_COMBINED_FUNCTIONS = 8


def _affordable(budget, tried: int) -> bool:
    """Whether the budget leaves time for one more timing after ``tried`` (the first is
    always run: the search kept a reserve for it)."""
    if budget is None or tried == 0 or budget.left() is None:
        return True
    return budget.left() > budget.confirm_cost()


def confirm(pipeline: Pipeline, program: Program, winners: dict[str, list[Winner]], sandbox: Sandbox,
            tests: list[TestCase], note=None, budget=None) -> dict[str, Winner]:
    """Per function, the best accepted candidate that fresh rounds confirm.

    The best of several accepted candidates is the one whose first measurement most likely
    erred high: when it is not confirmed, the next best gets its own fresh rounds (up to
    :data:`MAX_CONFIRMATIONS`, and while the ``budget``, a :class:`sgcc.engine.budget.Budget`,
    has time left; each function's first re-measurement always runs)."""
    confirmed: dict[str, Winner] = {}
    combinable = sum(fn != WHOLE_UNIT for fn in winners) > 1
    for done, (fn, ranked) in enumerate(winners.items()):
        for tried, (res, binary, cand) in enumerate(ranked[:MAX_CONFIRMATIONS]):
            if not _affordable(budget, tried):
                break
            # The time the search left is shared among the confirmations still to come (and
            # the combination's timing): more rounds, a narrower interval for the claim.
            rounds = budget.confirm_rounds(pipeline.req.timing_rounds, len(winners) - done + combinable) \
                if budget is not None and tried == 0 else None
            if note is not None:
                note(f"re-measuring {res.id}, the best remaining candidate for {fn}"
                     + (f" ({rounds} rounds)" if rounds else ""))
            try:
                accepted, est = pipeline.measure(sandbox, tests, program.binary, binary, rounds=rounds)
            except TimingRunFailed as exc:
                res.stop(Stage.TEST, f"failed while being re-measured: {exc.message}")
                continue
            res.confirm = estimate_dict(est)
            if accepted:
                confirmed[fn] = (res, binary, cand)
                break
            res.stop(Stage.TIME, not_confirmed(est, pipeline.req.min_gain))
    return confirmed


def not_confirmed(est, min_gain: float) -> str:
    """Why a re-measurement did not confirm a gain: too small overall, or not in every world."""
    worse = [(i, w) for i, w in enumerate(est.per_world) if w[1] <= 1 + min_gain]
    if est.low > 1 + min_gain and worse:
        i, (speedup, low, _) = worse[0]
        return (f"not confirmed in every environment ({est.speedup:.3f}x overall; world {i + 1} of "
                f"{len(est.per_world)}: {speedup:.3f}x, lower bound {low:.3f})")
    return f"not confirmed on fresh rounds ({est.speedup:.3f}x, lower bound {est.low:.3f})"


def _strength(w: Winner) -> float:
    """How promising a member is: its confirmed speedup, or half the gain its (selection-
    biased) search measurement showed when it was never confirmed."""
    res = w[0]
    if res.confirm:
        return res.confirm["speedup"]
    return 1 + ((res.speedup or 1.0) - 1) / 2


def combinations(confirmed: dict[str, Winner], winners: dict[str, list[Winner]] | None = None,
                 limit: int = MAX_COMBINATIONS) -> list[list[Winner]]:
    """The combinations worth validating, most promising first (at most ``limit``).

    Per function the options are its confirmed winner and its other accepted candidates
    (never one that failed its re-measurement); a combination takes at most one option per
    function, and never two that replace the same unit (a whole-unit candidate goes alone).
    They are ordered by the product of their members' strengths (:func:`_strength`), so
    the first is every confirmed winner together; when it fails, the next ones drop the
    weakest member or use the next-best candidate of a function."""
    options: dict[str, list[Winner]] = {}
    for fn, w in confirmed.items():
        options[fn] = [w]
    for fn, ranked in (winners or {}).items():
        for w in ranked:
            if w[0].stage == Stage.ACCEPTED and all(w[0] is not o[0] for o in options.get(fn, [])):
                options.setdefault(fn, []).append(w)
    for fn in options:
        options[fn] = options[fn][:MAX_OPTIONS]
    fns = sorted(options, key=lambda f: -_strength(options[f][0]))[:MAX_COMBINED_FUNCTIONS]
    found: list[tuple[float, int, list[Winner]]] = []

    def walk(i: int, chosen: list[Winner], taken: set, score: float) -> None:
        if i == len(fns):
            if chosen and score > 1.0:
                found.append((score, len(found), list(chosen)))
            return
        walk(i + 1, chosen, taken, score)  # without this function
        for w in options[fns[i]]:
            units = set(w[2].replacements())
            whole = WHOLE_UNIT in units or WHOLE_UNIT in taken
            if units & taken or (whole and taken):
                continue
            chosen.append(w)
            walk(i + 1, chosen, taken | units, score * _strength(w))
            chosen.pop()

    walk(0, [], set(), 1.0)
    found.sort(key=lambda t: (-t[0], t[1]))
    return [c for _, _, c in found[:limit]]


def combine(pipeline: Pipeline, program: Program, confirmed: dict[str, Winner], sandbox: Sandbox,
            tests: list[TestCase], report: Report, note=None, *, winners: dict[str, list[Winner]] | None = None,
            budget=None) -> tuple[Path, list[CandidateResult]]:
    """Validate and time combinations (:func:`combinations`) until one is correct and
    significantly faster on fresh rounds; fall back to the baseline. Never ships a
    combination that was not validated and timed here. Returns the binary to ship and the
    results of the candidates in it (``report.final`` describes it; ``report.selection``
    lists every combination tried and how it ended). A single candidate confirmed by
    :func:`confirm` needs no timing here: its re-measurement was its validation. Stops when
    the ``budget`` leaves no time for another timing (the first combination always runs)."""
    for tried, attempt in enumerate(combinations(confirmed, winners)):
        entry: dict[str, object] = {"candidates": [r.id for r, _, _ in attempt],
                                    "functions": [r.function for r, _, _ in attempt]}
        if not _affordable(budget, tried):
            report.notes.append(f"budget reached: {len(report.selection)} combination(s) validated")
            break
        report.selection.append(entry)
        if note is not None:
            note(f"validating the combined program ({len(attempt)} function(s))")
        _, where = pipeline.new_candidate_dir()
        res = CandidateResult(id="combined", function="+".join(r.function for r, _, _ in attempt),
                              generator="+".join(sorted({r.generator for r, _, _ in attempt})))
        replacements: dict[str, str] = {}
        untrusted: set[str] = set()
        for _, _, c in attempt:
            replacements.update(c.replacements())
            untrusted |= untrusted_units(c)
        binary = pipeline.build_candidate(program, replacements, where, res, untrusted=frozenset(untrusted))
        if binary is None:
            entry["outcome"] = f"refused at {res.stage}: {res.reason}"
            report.notes.append(f"combination {res.function} refused at {res.stage}: {res.reason}")
            continue
        outcome = sandbox.check(binary, tests)
        if outcome.first_failure is not None:
            entry["outcome"] = f"fails test {outcome.first_failure.test}"
            report.notes.append(f"combination {res.function} fails test {outcome.first_failure.test}")
            continue
        hidden = pipeline.check_hidden(sandbox, binary)
        if hidden is not None:
            entry["outcome"] = f"differs from gcc's program on {hidden}"
            report.notes.append(f"combination {res.function} differs from gcc's program on {hidden}")
            continue
        if len(attempt) == 1 and attempt[0][0].confirm:
            # One candidate alone, confirmed on fresh rounds just now: that re-measurement of
            # the same replacements is its validation (a third timing would only spend the
            # budget, and a noisy one would throw a confirmed gain away).
            measured = dict(attempt[0][0].confirm)
            entry["outcome"] = "shipped (its re-measurement on fresh rounds)"
        else:
            rounds = budget.confirm_rounds(pipeline.req.timing_rounds, 1) if budget is not None else None
            try:
                accepted, est = pipeline.measure(sandbox, tests, program.binary, binary, rounds=rounds)
            except TimingRunFailed as exc:
                entry["outcome"] = f"failed while being timed: {exc.message}"
                report.notes.append(f"combination {res.function} failed while being timed: {exc.message}")
                continue
            measured = estimate_dict(est)
            if not accepted:
                entry.update(measured, outcome="not significantly faster")
                report.notes.append(f"combination {res.function} {not_confirmed(est, pipeline.req.min_gain)}")
                continue
            entry["outcome"] = "shipped"
        entry.update(measured)
        report.final = {"functions": [r.function for r, _, _ in attempt], **measured,
                        "tests_passed": outcome.passed + len(pipeline.hidden_tests),
                        "tests_total": outcome.total + len(pipeline.hidden_tests),
                        # What the speedup was timed on: the tests the search saw (not the held-out
                        # ones), so that an outside measurement can time the same mix of inputs.
                        "timed_on": [t.name for t in tests],
                        # ... and how large they are: the figure holds for inputs like these.
                        "timed_sizes": {t.name: len(t.stdin) for t in tests},
                        "changes": changes(program, where / "cand.o", replacements)}
        return binary, [r for r, _, _ in attempt]
    return program.binary, []


def ship(binary: Path, output: Path) -> None:
    """Write ``binary`` to ``output`` atomically (a reader never sees half a program)."""
    with open(binary, "rb") as fh:
        data = fh.read()
    atomic_write(os.fspath(output), data, mode=0o755)
