"""What the user could have had instead, printed beside sgcc's result in every report.

Timed on the same workload, interleaved with gcc's build: the whole project built with gcc's
own profile-guided optimization from the same workload, made the ordinary way (PGO
everywhere: the instrumented copy of the tree, trained on the workload, cleaned and rebuilt
with ``-fprofile-use``, :func:`sgcc.project.pgo.pgo_everywhere`), sgcc's result against it,
the same PGO build with link-time optimisation (PGO + LTO: :data:`sgcc.project.whole.LTO` on every compile and
link, what the distributions build their packages with), sgcc's result against that, and the
best whole-project flag set the whole-project candidates timed. When the PGO-everywhere
*candidate* (its compiles substituted by the drop-in, :mod:`sgcc.project.adopt`) was timed and
its programs and libraries are that build's code byte for byte (:func:`same_code`), its
timing is the reference's; otherwise the reference is timed itself. One build, one figure:
a reference whose programs and libraries are sgcc's result's code byte for byte (PGO + LTO
adopted, nothing added by the search) carries sgcc's figure, and sgcc's result is not timed
against it (1 by identity, said so). Also when nothing shipped; a reference never fails the run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc.project import pgo, whole, workload

if TYPE_CHECKING:
    from sgcc.project.report import ProjectReport
    from sgcc.project.state import ProjectRun


def references(run: ProjectRun) -> None:
    """``run.report.references``: gcc's build, the best flag set, PGO everywhere, PGO + LTO,
    and sgcc's result against each of the last two."""
    from sgcc.verify.timing import rounds as timing

    report = run.report
    refs: dict = {"build": {"speedup": 1.0, "low": 1.0, "high": 1.0, "what": "gcc's build (the one replaced)"}}
    report.references = refs
    refs["flag_set"] = flag_set_reference(report, run.generator_names())
    if run.profile is None:
        pgo.profile_project(run, for_reference=True)
    tree, why = _built(run, "the PGO-everywhere reference (the whole project with -fprofile-use, as a user builds it)")
    if tree is None:
        refs["pgo_everywhere"] = {"error": why}
        return
    ref_tree = workload.copy_tree(tree, run.workdir / "pgo-reference", writable=False)
    _, base_run, _ = run.workload_runs()
    final = run.workdir / "final" if report.final else None
    what = "the whole project with -fprofile-use from the same workload, built as a user builds it"
    same, differ = (same_code(run.pgo_tree, ref_tree) if run.pgo_tree is not None else (False, []))
    try:
        if run.pgo_confirmed is not None and same:
            # Timed already, interleaved with gcc's build, as the confirmed whole-project candidate.
            refs["pgo_everywhere"] = {**run.pgo_confirmed, "what": what, "same_code_as_candidate": True,
                                      "timed_as": "the PGO-everywhere candidate, whose programs and libraries are "
                                                  "this build's code byte for byte"}
            refs.update(_timed(run, "the PGO-everywhere reference", None, ref_tree, final, "sgcc_vs_pgo_everywhere"))
        else:
            refs["pgo_everywhere"] = {**_timed(run, "the PGO-everywhere reference", base_run, ref_tree, final,
                                               "sgcc_vs_pgo_everywhere", refs), "what": what}
            if run.pgo_tree is not None:
                refs["pgo_everywhere"]["same_code_as_candidate"] = same
                if differ:
                    refs["pgo_everywhere"]["differs_from_candidate"] = differ[:5]
    except timing.TimingRunFailed as exc:
        refs["pgo_everywhere"] = {"error": f"the PGO build's workload did not behave as gcc's: {exc}"}
    refs["pgo_lto"] = _pgo_lto(run, ref_tree, base_run, final, refs)


def _built(run: ProjectRun, what: str, extra: list[str] | None = None):
    """The PGO build of the profile's tree (:func:`sgcc.project.pgo.pgo_everywhere`, with
    ``extra`` flags), said and ticked: (tree, '') or (None, why)."""
    run.note(f"building {what}")
    run.tick(True)
    try:
        assert run.profile is not None
        return pgo.pgo_everywhere(run.builder, run.spec, run.tmpl.compiler, run.profile, run.workdir, extra)
    finally:
        run.tick(False)


def _timed(run: ProjectRun, what: str, base_run, ref_tree: Path, final: Path | None, versus: str,
           refs: dict | None = None) -> dict:
    """The reference built in ``ref_tree`` timed against gcc's build (``base_run``; None: timed
    already) and sgcc's result (the tree ``final``, when something shipped) against it,
    interleaved, within what the budget has left; sgcc's result is not timed against its own
    code (:func:`same_code`). Returns the first estimate ({} when not timed); the second goes
    to ``refs[versus]`` (or is returned under ``versus`` when ``refs`` is None)."""
    from sgcc.engine import estimate_dict
    from sgcc.verify.timing import rounds as timing

    _, _, run_of = run.workload_runs()
    ref_run = run_of(ref_tree)
    identical = final is not None and same_code(ref_tree, final)[0]
    against = final is not None and not identical
    tmpl, out, vs = run.tmpl, {}, {}
    shipped = run.report.final or {}
    if base_run is not None and identical and "speedup" in shipped:
        # sgcc's build is this reference's code byte for byte: one build, one figure (wren: the
        # adopted PGO + LTO confirmed at 1.171x [1.128, 1.210] and timed again as the
        # reference at 1.106x [1.053, 1.165]).
        out = {k: shipped[k] for k in ("speedup", "low", "high", "rounds", "reps") if k in shipped}
        out["timed_as"] = "sgcc's build, whose programs and libraries are this build's code byte for byte"
    elif base_run is not None:
        run.note(f"timing {what} against gcc's build (interleaved)")
        est = timing.measure(base_run, ref_run, rounds=_rounds(run, 2 if against else 1),
                             min_sample_seconds=tmpl.min_sample, seed=tmpl.seed)
        out = estimate_dict(est)
    if identical:
        vs = {versus: {"speedup": 1.0, "low": 1.0, "high": 1.0, "rounds": 0, "same_code": True}}
    elif final is not None:
        run.note(f"timing sgcc's result against {what} (interleaved)")
        est = timing.measure(ref_run, run_of(final), rounds=_rounds(run, 1), min_sample_seconds=tmpl.min_sample,
                             seed=tmpl.seed)
        vs = {versus: estimate_dict(est)}
    if refs is None:
        return vs
    refs.update(vs)
    return out


def _pgo_lto(run: ProjectRun, pgo_tree: Path, base_run, final: Path | None, refs: dict) -> dict:
    """PGO + LTO, as a user (and the distributions' package builds) would add it: the PGO
    build again with :data:`sgcc.project.whole.LTO` on every compile and link, timed against
    gcc's build, and sgcc's result against it (``refs["sgcc_vs_pgo_lto"]``). Never raises."""
    from sgcc.verify.timing import rounds as timing

    what = f"the PGO-everywhere build with {' '.join(whole.LTO)} on every compile and link"
    tree, why = _built(run, f"the PGO + LTO reference (the PGO build again with {' '.join(whole.LTO)})",
                       list(whole.LTO))
    if tree is None:
        return {"error": why, "what": what}
    lto_tree = workload.copy_tree(tree, run.workdir / "pgo-lto-reference", writable=False)
    if same_code(pgo_tree, lto_tree)[0]:
        return {"error": "-flto=auto changed no program or library of the PGO build", "what": what}
    try:
        return {**_timed(run, "the PGO + LTO reference", base_run, lto_tree, final, "sgcc_vs_pgo_lto", refs),
                "what": what}
    except timing.TimingRunFailed as exc:
        return {"error": f"the PGO + LTO build's workload did not behave as gcc's: {exc}", "what": what}


def _rounds(run: ProjectRun, timings: int) -> int:
    """Rounds for the next of ``timings`` timings within what the budget has left."""
    wanted = run.tmpl.timing_rounds
    return run.budget.rounds(wanted, timings) if run.budget is not None else wanted


def _programs(tree: Path) -> dict[str, Path]:
    """The programs and shared libraries of a built tree (ELF executables and shared objects,
    not objects): path in the tree -> file."""
    out: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = Path(dirpath, name)
            try:
                if path.is_symlink():
                    continue
                with open(path, "rb") as f:
                    head = f.read(18)
            except OSError:
                continue
            if head[:4] == b"\x7fELF" and len(head) == 18 and int.from_bytes(head[16:18], "little") in (2, 3):
                out[str(path.relative_to(tree))] = path
    return out


def same_code(a: Path, b: Path) -> tuple[bool, list[str]]:
    """Whether two built trees hold the same programs and libraries, each the same code and
    data (:func:`sgcc.asm.obj.loaded_digest`), and those that differ."""
    from sgcc.asm.obj import loaded_digest

    pa, pb = _programs(a), _programs(b)
    differ = sorted(set(pa) ^ set(pb))
    differ += [k for k in sorted(set(pa) & set(pb)) if loaded_digest(pa[k]) != loaded_digest(pb[k])]
    return bool(pa) and not differ, differ


def flag_set_reference(report: ProjectReport, generators: set[str]) -> dict:
    """The best whole-project flag set the whole-project candidates timed (confirmed, or
    its race estimate: the best of a race errs high, so it flatters the reference, not
    sgcc), or why there is none."""
    field = (report.whole_project or {}).get("field") or []
    flag_sets = [e for e in field if not e.get("profile")]
    if not flag_sets:
        return {"error": "not tried (the flags generator is off)" if "flags" not in generators else "not tried"}
    timed = [(e.get("timing") or e.get("race"), e) for e in flag_sets if e.get("timing") or e.get("race")]
    if not timed:
        return {"error": "; ".join(f"{e['name']}: {e.get('why', 'not timed')}" for e in flag_sets)}
    est, e = max(timed, key=lambda te: te[0]["speedup"])
    how = "confirmed" if e.get("timing") else f"race estimate, {est.get('rounds', '?')} rounds"
    return {**est, "what": f"{e['name']} ({how})", "flags": e["flags"]}
