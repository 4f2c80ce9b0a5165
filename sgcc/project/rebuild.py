"""The real tree rebuilt from the cache, tested, and its workload timed against gcc's build.

The project's own tree is cleaned and rebuilt with ``CC=sgcc``, which substitutes the winners
from the cache (``make CC=sgcc`` later rebuilds the same bytes). When anything shipped, the
result is tested (the test command, or the stdin tests against gcc's outputs) and its workload
timed against gcc's build (interleaved, CPU of the whole process tree). If it failed a test,
the winners are withdrawn (:func:`sgcc.project.store.withdraw`) and the tree rebuilt plainly.
When the rebuilt tree's programs and libraries are the adopted whole-project candidate's code
byte for byte (the search added nothing to it), its figure is that candidate's confirmation:
the same code is not timed twice, and one build does not get two figures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sgcc.errors import SgccError
from sgcc.project import libraries, references, store, workload

if TYPE_CHECKING:
    from sgcc.project.state import ProjectRun


def rebuild_and_check(run: ProjectRun) -> dict | None:
    """The rebuilt project's timing against gcc's build (``report.final``), or None when
    nothing shipped or it failed its tests (then withdrawn and rebuilt with gcc's code)."""
    from sgcc.engine import estimate_dict
    from sgcc.verify.timing import rounds as timing

    spec, report, sb, builder = run.spec, run.report, run.sandbox, run.builder
    shipped = [u for u in report.units if u["honest"].get("functions")] or bool(run.adopted and run.adopted.texts)
    run.note("rebuilding the project with the cache")
    builder.run(spec.clean, run.root, builder.env(), "clean")
    builder.run(spec.build, run.root, builder.env(SGCC_CACHE="1"), "build")
    final = workload.copy_tree(run.root, run.workdir / "final", writable=False)
    if not shipped:
        return None
    if spec.command_mode:
        run.note(f"running the project's tests on the rebuilt tree: {spec.test}")
        final_test = workload.copy_tree(run.root, run.workdir / "final-test")
        trace = libraries.trace_dir(run.workdir / "trace-final")
        tests_passed, why = run.run_tests(final_test, trace=trace)
        if tests_passed:
            # What was tested is what sgcc built: the shipped libraries too.
            try:
                libraries.check(trace, run.made_libraries, run.where.root or final_test, "the rebuilt tree's tests")
            except SgccError as exc:
                tests_passed, why = False, exc.message
    case, base_run, run_of = run.workload_runs()
    runs = (base_run, run_of(final))
    if not spec.command_mode:
        outcome = sb.check(final / spec.binary, case)
        tests_passed, why = outcome.first_failure is None, str(outcome.first_failure)
    if not tests_passed:
        # Cannot happen when every candidate build passed them, but never leave a wrong tree.
        store.withdraw(run)
        builder.run(spec.clean, run.root, builder.env(), "clean")
        builder.run(spec.build, run.root, builder.env(SGCC_CACHE="0"), "build")
        report.notes.append(f"the rebuilt project failed its tests ({why}); its winners were withdrawn and "
                            "the project rebuilt with gcc's code")
        return None
    tmpl = run.tmpl
    adopted = run.adopted
    if adopted is not None and adopted.tree is not None and adopted.timing and \
            references.same_code(adopted.tree, final)[0]:
        # wren, --budget 6m: 30 s of the budget timed the adopted PGO build again as the
        # rebuilt tree (1.090x [1.024, 1.144] beside its confirmation's 1.091x [1.043, 1.135]).
        confirmed = adopted.timing
        result = {**confirmed, "tests_passed": True, "significant": confirmed["low"] > 1 + tmpl.min_gain,
                  "timed_as": f"{adopted.variant.name}, whose programs and libraries are this tree's code "
                              "byte for byte"}
        if not result["significant"]:
            report.notes.append(_not_significant(confirmed, tmpl.min_gain))
        return result
    run.note("timing the rebuilt project's workload against gcc's build (interleaved)")
    # The final timing, then the reference's two: they share what the budget has left.
    rounds = run.budget.rounds(tmpl.timing_rounds, timings=3) if run.budget is not None else tmpl.timing_rounds
    est = timing.measure(*runs, rounds=rounds, min_sample_seconds=tmpl.min_sample,
                         seed=tmpl.seed, worlds=len(sb.worlds))
    result = {**estimate_dict(est), "tests_passed": True, "significant": timing.decide(est, tmpl.min_gain)}
    if not result["significant"]:
        report.notes.append(_not_significant(result, tmpl.min_gain))
    return result


def _not_significant(est: dict, min_gain: float) -> str:
    # Said with the figure and the rule: a whole-project candidate is adopted at 1% (wren: PGO
    # everywhere 1.091x [1.043, 1.135]), and the same tree was "not significantly faster"
    # against the functions' 3% with nothing to say so.
    return (f"the rebuilt project's workload, {est['speedup']:.3f}x [{est['low']:.3f}, {est['high']:.3f}] against "
            f"gcc's build, does not clear the {min_gain:.0%} a function's winner must show, as a whole")
