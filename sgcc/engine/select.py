"""After the search: believe a winner only after fresh rounds agree, combine the confirmed
winners into one program, validate and time that once more, and ship it (or the baseline
when anything is in doubt)."""

from __future__ import annotations

import os
from pathlib import Path

from sgcc.candidates import WHOLE_UNIT
from sgcc.engine.pipeline import Pipeline, changes
from sgcc.engine.report import CandidateResult, Report, estimate_dict
from sgcc.engine.request import Program
from sgcc.engine.search import Winner
from sgcc.fsutil import atomic_write
from sgcc.stages import Stage
from sgcc.verify.timing import TimingRunFailed

#: Accepted candidates re-measured per function, best first, until one is confirmed.
MAX_CONFIRMATIONS = 3


def confirm(pipeline: Pipeline, program: Program, winners: dict[str, list[Winner]], sandbox, tests,
            note=None) -> dict[str, Winner]:
    """Per function, the best accepted candidate that fresh rounds confirm.

    The best of several accepted candidates is the one whose first measurement most likely
    erred high: when it is not confirmed, the next best gets its own fresh rounds (up to
    :data:`MAX_CONFIRMATIONS`)."""
    confirmed: dict[str, Winner] = {}
    for fn, ranked in winners.items():
        for res, binary, cand in ranked[:MAX_CONFIRMATIONS]:
            if note is not None:
                note(f"re-measuring {res.id}, the best remaining candidate for {fn}")
            try:
                accepted, est = pipeline.measure(sandbox, tests, program.binary, binary)
            except TimingRunFailed as exc:
                res.stop(Stage.TEST, f"failed while being re-measured: {exc.message}")
                continue
            res.confirm = estimate_dict(est)
            if accepted:
                confirmed[fn] = (res, binary, cand)
                break
            res.stop(Stage.TIME, f"not confirmed on fresh rounds ({est.speedup:.3f}x, lower bound {est.low:.3f})")
    return confirmed


def combine(pipeline: Pipeline, program: Program, confirmed: dict[str, Winner], sandbox, tests, report: Report,
            note=None) -> tuple[Path, list[CandidateResult]]:
    """Validate and time the program with every confirmed winner; fall back to each winner
    alone, best first, then to the baseline. Returns the binary to ship and the results of
    the candidates in it (``report.final`` describes it)."""
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
        if note is not None:
            note(f"validating the combined program ({len(attempt)} function(s))")
        _, where = pipeline.new_candidate_dir()
        res = CandidateResult(id="combined", function="+".join(r.function for r, _, _ in attempt),
                              generator="+".join(sorted({r.generator for r, _, _ in attempt})))
        replacements: dict[str, str] = {}
        for _, _, c in attempt:
            replacements.update(c.replacements())
        binary = pipeline.build_candidate(program, replacements, where, res)
        if binary is None:
            report.notes.append(f"combination {res.function} refused at {res.stage}: {res.reason}")
            continue
        outcome = sandbox.check(binary, tests)
        if outcome.first_failure is not None:
            report.notes.append(f"combination {res.function} fails test {outcome.first_failure.test}")
            continue
        hidden = pipeline.check_hidden(sandbox, binary)
        if hidden is not None:
            report.notes.append(f"combination {res.function} differs from gcc's program on {hidden}")
            continue
        try:
            accepted, est = pipeline.measure(sandbox, tests, program.binary, binary)
        except TimingRunFailed as exc:
            report.notes.append(f"combination {res.function} failed while being timed: {exc.message}")
            continue
        if not accepted:
            report.notes.append(f"combination {res.function} not significantly faster ({est.speedup:.3f}x)")
            continue
        report.final = {"functions": [r.function for r, _, _ in attempt], **estimate_dict(est),
                        "tests_passed": outcome.passed + len(pipeline.hidden_tests),
                        "tests_total": outcome.total + len(pipeline.hidden_tests),
                        "changes": changes(program, where / "cand.o", replacements)}
        return binary, [r for r, _, _ in attempt]
    return program.binary, []


def ship(binary: Path, output: Path) -> None:
    """Write ``binary`` to ``output`` atomically (a reader never sees half a program)."""
    with open(binary, "rb") as fh:
        data = fh.read()
    atomic_write(os.fspath(output), data, mode=0o755)
