"""Whole-project candidates built, tested and raced; the winner adopted as the search's baseline.

The field (:func:`sgcc.project.whole.field`: PGO everywhere, whole-project flag sets) is gcc's
own output for every compile. Each variant's compiles are made by gcc; a copy of the built
tree is cleaned and rebuilt by the drop-in with those texts as its overlay (so what is tested
and timed is exactly what the cache will substitute), and the project's tests must pass in it
(:func:`build`). The field races on the workload against gcc's build
(:func:`sgcc.verify.timing.halving.race`); a winner other than PGO everywhere must be
significantly faster than PGO everywhere on fresh rounds (else PGO everywhere is the winner);
the winner is confirmed on fresh rounds against gcc's build and adopted when the interval's
lower end is above 1 + :data:`WHOLE_MIN_GAIN`. gcc's own output is trusted as gcc's build is:
no per-function proof, the tests and the timing decide. Then the tree is the baseline of every
source's search (candidates are built on it, substituted into its texts and timed against it)
and :func:`sgcc.project.store.store_whole` stores each compile's text, its winners joined in,
as a whole unit under the compile's key. The variants' preparation may take
:data:`WHOLE_SHARE` of the budget (the first always runs). The race and the confirmations
after it may go past that share when it cannot hold them, into the search's time and the
references' spare rounds (:meth:`sgcc.project.budget.ProjectBudget.for_decisions`), with the
confirmations cut to the rounds that fit (at least :data:`CONFIRM_FEWEST`): candidates built
and never timed decide nothing.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc.project import partitions, record, whole, workload
from sgcc.project.state import Adopted

if TYPE_CHECKING:
    from collections.abc import Hashable

    from sgcc.project.budget import ProjectBudget
    from sgcc.project.state import ProjectRun, Runner
    from sgcc.project.whole import Variant

    #: Each variant built: its tree, its compiles' texts (key -> assembly), its report entry.
    Built = dict[Variant, tuple[Path, dict[str, str], dict]]

#: A whole-project candidate becomes the baseline when its workload's interval clears 1 + this:
#: gcc's own output, its gain on the whole workload measured (not a function's share of it).
WHOLE_MIN_GAIN = 0.01
#: Fewest interleaved rounds the whole-project winner is confirmed with.
PGO_ROUNDS = 30
#: Share of the budget the whole-project candidates' compiles, builds and tests may take (the
#: first candidate is always tried): the function search has found nothing on real projects
#: that these do not (docs/results.md), so they come first.
WHOLE_SHARE = 0.35
#: Fewest rounds a confirmation after the race is cut to when the budget has no room for
#: ``max(PGO_ROUNDS, 2 * timing_rounds)``: a wider interval, judged by its lower end as ever.
CONFIRM_FEWEST = 10


def confirm_rounds(wanted: int, seconds: float, sample: float, timings: int = 1) -> int:
    """Rounds for each of ``timings`` interleaved confirmations (a round: two runs of about
    ``sample`` seconds; three more for the warm-up and the calibration) within ``seconds``:
    at most ``wanted``, at least :data:`CONFIRM_FEWEST`."""
    fit = int(seconds / max(1, timings) / (2 * max(sample, 1e-3))) - 3
    return max(CONFIRM_FEWEST, min(wanted, fit))


def race_affordable(alive: int, rungs: int, sample: float, *, share_left: float, decisions_left: float,
                    rounds: int, confirmations: int) -> bool:
    """Whether the race's next rung (``rungs`` rounds of ``alive`` candidates and the baseline)
    fits: with ``confirmations`` confirmations of ``rounds`` rounds after it in what is left of
    the whole-project share, or, past the share, with those cut to :data:`CONFIRM_FEWEST`
    rounds in the time the budget keeps for decisions."""
    rung = rungs * (alive + 1) * sample
    if rung + confirmations * 2 * rounds * sample <= share_left:
        return True
    return rung + confirmations * 2 * CONFIRM_FEWEST * sample <= decisions_left


def whole_project(run: ProjectRun, budget: ProjectBudget) -> Path | None:
    """The adopted whole-project candidate's tree (``run.adopted`` set), or None (the reason
    in ``run.report.whole_project``); see the module docstring."""
    info: dict = {"adopted": False, "field": []}
    run.report.whole_project = info
    if not run.tmpl.cache_dir:
        info["why"] = "no cache: the build could not substitute it"
        return None
    started = time.monotonic()
    cap = WHOLE_SHARE * budget.total
    built = _build_field(run, info, started, cap)
    if not built:
        info["why"] = "; ".join(f"{e['name']}: {e['why']}" for e in info["field"] if e.get("why")) or \
            "no whole-project candidate"
        return None
    _case, base_run, run_of = run.workload_runs()
    runs: dict[Hashable, Runner] = {v: run_of(t) for v, (t, _, _) in built.items()}
    wanted = max(PGO_ROUNDS, 2 * run.tmpl.timing_rounds)
    # Each confirmation after the race (against PGO everywhere, then against gcc's build) gets
    # the rounds wanted, or those that fit the time left for decisions.
    sample = max(run.workload_seconds, run.tmpl.min_sample)

    def rounds(timings: int) -> int:
        left = max(cap - (time.monotonic() - started), budget.for_decisions())
        n = confirm_rounds(wanted, left, sample, timings)
        if n < wanted:
            run.say(f"the budget leaves room for {n} confirming rounds, not {wanted}")
        return n

    confirmations = 1 + (whole.PGO in built and len(built) > 1)
    winner = next(iter(built))
    if len(built) > 1:
        survivor = _race(run, info, built, base_run, runs, wanted, started, cap, budget, confirmations)
        if survivor is None:
            return None
        winner = survivor
    if winner != whole.PGO and whole.PGO in built:
        winner = _against_pgo(run, built, runs, winner, rounds(2))
    pgo_lto = whole.Variant(whole.LTO, profile=True)
    lto_entry = built[pgo_lto][2] if pgo_lto in built else {}
    if winner == whole.PGO and lto_entry and "vs_pgo" not in lto_entry and \
            not lto_entry.get("why", "").startswith("its workload did not behave"):
        # PGO + LTO is what a user adds to PGO, and the race's first rungs (a few rounds each)
        # can drop it on a noisy workload: on Lua it went at rung 1 (1.152x [1.003, 1.373] on
        # 6 rounds) while the same build measured 1.171x [1.118, 1.230] as the report's
        # reference. So it meets PGO everywhere head-to-head on fresh rounds whatever the race said.
        winner = _against_pgo(run, built, runs, pgo_lto, rounds(2), raced=False)
    return _confirm(run, info, built, base_run, runs[winner], winner, rounds(1))


def _build_field(run: ProjectRun, info: dict, started: float, cap: float) -> Built:
    """Each variant of the field compiled and built (within ``cap`` seconds from ``started``,
    the first always; the next only when the longest preparation so far still fits)."""
    variants = whole.field(run.generator_names(), run.tmpl.isa, run.spec.lto)
    prof = run.profile
    built: Built = {}
    compiled: dict[Variant, dict[str, str]] = {}  # every variant compiled, built or not
    prep = 0.0
    for n, v in enumerate(variants):
        e: dict = {"name": v.name, "flags": list(v.flags), "profile": v.profile}
        info["field"].append(e)
        lowered = whole.lowers(run.compiles, v)
        if lowered:
            e["lowers"] = lowered
        if n and time.monotonic() - started + prep > cap:
            e["why"] = f"cut by the budget (the whole-project candidates may take {cap:.0f} s)"
            continue
        if v.profile and (prof is None or prof.error or not prof.gcda):
            e["why"] = f"no whole-project profile ({prof.error if prof else 'not made'})"
            continue
        same = whole.same_as(run.compiles, v, prof.gcda if prof is not None else None)
        if same:
            # PGO + -O3 on an -O3 build is PGO everywhere's own compiles: not compiled, not built.
            e["why"] = f"the same as {same}: every compile has {' '.join(v.flags)} already"
            continue
        t0 = time.monotonic()
        run.note(f"{v.name} as a candidate: compiling"
                 + (f" {len(prof.gcda)} profiled source(s)" if v.profile and prof else " every source"))
        run.tick(True)
        try:
            texts, failed = whole.compile_all(run.tmpl.compiler, run.compiles, v, run.workdir, run.root, prof,
                                              run.tmpl.jobs)
        finally:
            run.tick(False)
        e.update({"compiles": len(texts), "failed": failed[:5]})
        if not texts:
            e["why"] = "no source compiled: " + "; ".join(failed[:2])
            continue
        differ = whole.changed(run.compiles, texts)
        e["compiles_changed"] = len(differ)
        if not differ:
            e["why"] = "the same as gcc's build (every compile's assembly unchanged)"
            continue
        twin = next((w for w, t in compiled.items() if whole.same_texts(t, texts)), None)
        compiled[v] = dict(texts)
        if twin is not None:
            e["why"] = f"the same as {twin.name} (every compile's assembly the same): not built twice"
            continue
        run.say(f"{v.name}{' (' + lowered + ')' if lowered else ''}: {len(texts)} compiles, {len(differ)} of "
                "them changed; building and testing the project with them")
        tree = build(run, v, texts, differ, e)
        prep = max(prep, time.monotonic() - t0)
        run.say(f"{v.name}: " + (f"built, the project's tests pass ({time.monotonic() - t0:.0f} s)"
                                 if tree is not None else e.get("why", "not built")))
        if tree is not None:
            built[v] = (tree, texts, e)
            if v == whole.PGO:
                run.pgo_tree = tree
    return built


def _race(run: ProjectRun, info: dict, built: Built, base_run: Runner, runs: dict[Hashable, Runner], rounds: int,
          started: float, cap: float, budget: ProjectBudget, confirmations: int) -> Variant | None:
    """The field raced on the workload against gcc's build: the survivor, or None (why in ``info``)."""
    from sgcc.engine import estimate_dict
    from sgcc.verify.timing import halving
    from sgcc.verify.timing import rounds as timing

    run.say(f"racing {len(built)} whole-project candidates on the workload against gcc's build "
            f"(successive halving: {', '.join(v.name for v in built)})")
    run.note("racing the whole-project candidates")  # the status line: not the last build's step

    def afford(alive: int, rungs: int, sample: float) -> bool:
        return race_affordable(alive, rungs, sample, share_left=cap - (time.monotonic() - started),
                               decisions_left=budget.for_decisions(), rounds=rounds,
                               confirmations=confirmations)

    try:
        r = halving.race(base_run, runs, keep=1, min_rounds=run.tmpl.timing_rounds,
                         min_sample_seconds=run.tmpl.min_sample, seed=run.tmpl.seed,
                         worlds=len(run.sandbox.worlds), futile_below=1.0, afford=afford,
                         note=lambda m: run.say(f"whole-project race: {m}"))
    except timing.TimingRunFailed as exc:
        info["why"] = f"gcc's build's workload failed while racing: {exc}"
        return None
    for v, (_, _, e) in built.items():
        if v in r.estimates:
            e["race"] = estimate_dict(r.estimates[v])
        if v in r.failed:
            e["why"] = f"its workload did not behave as gcc's build's: {r.failed[v]}"
        elif v in r.untimed:
            e["why"] = "not timed: the budget"
        elif v in r.dropped:
            e["why"] = halving.describe(r, v)
    if not r.survivors:
        if not r.estimates:
            info["why"] = ("no whole-project candidate was timed: " +
                           ("the budget left no time for the race" if r.untimed else
                            "; ".join(f"{v.name}: {e.get('why', '')}" for v, (_, _, e) in built.items())))
        else:
            info["why"] = "no whole-project candidate survived the race"
        return None
    survivor = r.survivors[0]
    assert isinstance(survivor, whole.Variant)
    return survivor


def _against_pgo(run: ProjectRun, built: Built, runs: dict[Hashable, Runner], winner: Variant,
                 rounds: int, raced: bool = True) -> Variant:
    """PGO everywhere is what a user compares with: another variant replaces it only when
    fresh rounds show it faster than PGO itself (a race among near-equals picks noise).
    ``raced``: ``winner`` won the race (else it is PGO + LTO, timed against PGO whatever the
    race said)."""
    from sgcc.engine import estimate_dict
    from sgcc.verify.timing import rounds as timing

    w_entry = built[winner][2]
    run.say(f"{winner.name} {'won the race' if raced else 'meets PGO everywhere head-to-head'}: timing it "
            f"against PGO everywhere on {rounds} fresh rounds")
    run.note(f"timing {winner.name} against PGO everywhere")
    try:
        vs = timing.measure(runs[whole.PGO], runs[winner], rounds=rounds, min_sample_seconds=run.tmpl.min_sample,
                            seed=run.tmpl.seed, worlds=len(run.sandbox.worlds), futile_below=1.0)
        w_entry["vs_pgo"] = estimate_dict(vs)
        better = timing.decide(vs, WHOLE_MIN_GAIN)
        why = f"{vs.speedup:.3f}x [{vs.low:.3f}, {vs.high:.3f}] against PGO everywhere"
    except timing.TimingRunFailed as exc:
        better, why = False, f"its workload did not behave as PGO everywhere's: {exc}"
    if not better:
        w_entry["why"] = (f"{'won the race' if raced else 'timed against PGO everywhere after the race'}, but not "
                          f"significantly faster than PGO everywhere ({why})")
        # PGO everywhere goes on to its confirmation: its "dropped from the race" no longer holds.
        built[whole.PGO][2].pop("why", None)
        return whole.PGO
    w_entry.pop("why", None)  # a drop by the race no longer holds
    return winner


def _confirm(run: ProjectRun, info: dict, built: Built, base_run: Runner, winner_run: Runner, winner: Variant,
             rounds: int) -> Path | None:
    """The winner timed once more against gcc's build, and adopted when significantly faster."""
    from sgcc.engine import estimate_dict
    from sgcc.project import pgo
    from sgcc.verify.timing import rounds as timing

    tree, texts, e = built[winner]
    run.say(f"{winner.name}: confirming its gain on {rounds} fresh rounds against gcc's build (interleaved)")
    run.note(f"confirming {winner.name}")
    try:
        # The project's big lever, timed once more: at least PGO_ROUNDS to narrow the
        # interval on a noisy machine; stopped early only when it cannot win.
        est = timing.measure(base_run, winner_run, rounds=rounds, min_sample_seconds=run.tmpl.min_sample,
                             seed=run.tmpl.seed, worlds=len(run.sandbox.worlds), futile_below=1.0)
    except timing.TimingRunFailed as exc:
        e["why"] = info["why"] = f"{winner.name}: its workload did not behave as gcc's build's: {exc}"
        return None
    e["timing"] = estimate_dict(est)
    info.update({"variant": winner.name, "timing": e["timing"], "compiles": len(texts),
                 "compiles_used": e.get("compiles_used"), "tests_passed": True})
    if e.get("lowers"):
        info["lowers"] = e["lowers"]
    if winner.lto:
        info["lto"] = True
    run.say(f"{winner.name}: {est.speedup:.3f}x [{est.low:.3f}, {est.high:.3f}] against gcc's build on "
            f"{est.rounds} fresh rounds")
    if winner == whole.PGO:
        run.pgo_confirmed = e["timing"]
    if not timing.decide(est, WHOLE_MIN_GAIN):
        e["why"] = info["why"] = (f"{winner.name}: not significantly faster than gcc's build "
                                  f"({est.speedup:.3f}x [{est.low:.3f}, {est.high:.3f}])")
        return None
    info["adopted"] = True
    prof = run.profile
    digests = {k: pgo.profile_digest(prof.gcda[k]) for k in texts} if winner.profile and prof is not None else {}
    run.adopted = Adopted(texts, winner, digests, tree, e["timing"])
    run.say(f"{winner.name} adopted as the baseline" + (f" ({e['lowers']})" if e.get("lowers") else "")
            + f": {est.speedup:.3f}x [{est.low:.3f}, {est.high:.3f}] as fast "
            "as gcc's build, the project's tests pass" + ("" if winner.lto else "; the function search starts from it"))
    return tree


def tree_name(v: Variant) -> str:
    """The name of the variant's tree (and overlay) in the run's work directory."""
    return "whole-" + ("pgo" if v.profile else "") + "".join(f.strip("-").replace("=", "_") for f in v.flags)


def partitions_dir(run: ProjectRun, v: Variant) -> Path:
    """Where the build of an LTO variant's tree recorded its links' partitions."""
    return run.workdir / f"{tree_name(v)}-record"


def build(run: ProjectRun, v: Variant, texts: dict[str, str], differ: set[str], e: dict) -> Path | None:
    """A copy of the built tree rebuilt by the drop-in with ``texts`` as its overlay, and
    the project's tests run on it: the tree, or None (the reason in ``e['why']``).
    ``differ``: the keys whose text is not gcc's. Compiles of the copy that did not use
    their text are dropped from ``texts`` (they stay gcc's, in the copy as in the shipped
    build)."""
    spec = run.spec
    slug = tree_name(v)
    overlay = run.workdir / f"{slug}.overlay.json"
    overlay.write_text(json.dumps(texts), encoding="utf-8", errors="surrogateescape")
    tree = run.workdir / slug
    shutil.copytree(run.built_tree, tree, symlinks=True)
    run.note(f"{v.name} as a candidate: building the project with its compiles")
    run.builder.run(spec.clean, tree, run.builder.env(), "clean", check=False)
    env = run.builder.overlay_env(overlay, tree)
    if v.lto:
        # Its code is made at the links: their partitions are what a function search reaches.
        env = partitions.record_env(env, partitions_dir(run, v))
    r = run.builder.run(spec.build, tree, env, "build", check=False)
    if not r.ok:
        e["why"] = "the project does not build with its compiles"
        return None
    missed = record.unused(overlay, texts)
    e["compiles_used"] = len(texts) - len(missed)
    if missed:
        # The overlay is keyed by each compile's cache key, which hashes gcc's assembly; a
        # compile of the copy with another key (a build that differs from the recorded one)
        # is gcc's. When none of the changed ones was used, the tree timed would be gcc's
        # build under the variant's name. One source whose assembly changes with every build
        # (berry.c spells __DATE__ and __TIME__) only stays gcc's, here as in a later
        # make CC=sgcc, where its key is new too.
        names = {c.key: c.source.name for c in run.compiles}
        e["not_used"] = sorted(names.get(k, k) for k in missed)
        if not differ - set(missed):
            e["why"] = (f"{len(missed)} of its {len(texts)} compiles were not used by the build of the copy "
                        "(their cache keys differ from the recorded build's), none of those it changes was")
            return None
        for k in missed:
            del texts[k]
    if spec.command_mode:
        run.note(f"{v.name} as a candidate: the project's tests: {spec.test}")
        ok, why = run.run_tests(workload.copy_tree(tree, tree.with_name(slug + "-test")))
        if not ok:
            e["why"] = f"the project's tests fail: {why}"
            return None
    else:
        outcome = run.sandbox.check(tree / spec.binary, run.stdin_tests())
        if outcome.first_failure is not None:
            e["why"] = f"its program fails a test: {outcome.first_failure}"
            return None
    e["tests_passed"] = True
    return tree
