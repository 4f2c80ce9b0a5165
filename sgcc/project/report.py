"""What ``sgcc optimize --project`` found: per translation unit and function, the workload's
measured speedup over gcc's build, what the proof rests on, and what the budget cut."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from sgcc.stages import COMPILED, PASSED, Stage


@dataclass
class ProjectReport:
    root: str
    proof: str = ""  # what correctness rests on, in words
    workload: list[str] = field(default_factory=list)
    budget_seconds: float = 0.0
    budget_rule: str = ""
    budget_fixed_at: float = 0.0  # seconds into the run when the budget was fixed (0: --budget, at the start)
    budget_over: float = 0.0  # seconds past it at the end
    coverage: float = 0.0  # share of the project's executed instructions the functions chosen for the search hold
    searched_share: float = 0.0  # ... and the functions actually searched (the budget or an LTO baseline may cut)
    project_share: float = 0.0  # share of all the workload's instructions that are the project's code
    units: list[dict] = field(default_factory=list)
    not_searched: list[str] = field(default_factory=list)  # cut by the budget
    final: dict | None = None
    phases: dict = field(default_factory=dict)  # seconds per phase (build, tests, profiles, search, final)
    pgo: dict | None = None  # the whole project's profile: seconds, profiles found, error
    # Whole-project candidates (sgcc.project.whole): the field, the one adopted, its timing, why not.
    whole_project: dict | None = None
    references: dict = field(default_factory=dict)  # what else the user could have had, timed against gcc's
    # Where copies were built and tested (sgcc.project.place): the path, the tools shown read-only.
    placed: dict = field(default_factory=dict)
    # The shared libraries the build made, and those the tests and workload loaded (sgcc.project.libraries).
    libraries: dict = field(default_factory=dict)
    # What the searched functions are tested with (sgcc.project.plan): whether the workload counts as a
    # test, why, and the functions only it runs.
    evidence: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> str:
        from sgcc.engine import finite_json

        return json.dumps(finite_json(asdict(self)), indent=2)

    def summary(self) -> str:
        fixed = (f", fixed {self.budget_fixed_at / 60:.1f} min into the run for what followed"
                 if self.budget_fixed_at and self.budget_rule != "--budget" else "")
        over = f"; {self.budget_over:.0f} s over it" if self.budget_over > 1 else ""
        parts = sum(1 for u in self.units if u.get("partition"))
        searched = f"{len(self.units) - parts} translation unit(s)" + \
            (f" and {parts} LTO partition(s)" if parts else "")
        lines = [f"sgcc: project {self.root}: {searched} searched in "
                 f"{self.seconds / 60:.1f} min (budget {self.budget_seconds / 60:.0f} min: {self.budget_rule}{fixed}"
                 f"{over})",
                 f"sgcc: correctness rests on {self.proof}"]
        if self.workload:
            # What was searched, not what was chosen: an adopted LTO baseline or the budget may
            # leave chosen sources unsearched (cmark said "searched: 91%" beside "0 searched").
            cut = (f", of {self.coverage:.0%} chosen for the search" if self.searched_share < self.coverage - 0.005
                   else "")
            lines.append(f"sgcc: workload: {'; '.join(self.workload)} (the project's code: "
                         f"{self.project_share:.0%} of its instructions; searched: {self.searched_share:.0%} of "
                         f"those{cut})")
        if self.placed.get("at"):
            tools = f"; shown read-only: {', '.join(self.placed['tools'])}" if self.placed.get("tools") else ""
            lines.append(f"sgcc: every copy built, tested and timed at {self.placed['at']}, where the build put "
                         f"the project{tools}")
        if self.libraries.get("built"):
            lines.append("sgcc: the project's shared libraries, loaded from its tree by the tests and the workload "
                         "(checked): " + ", ".join(f"{k} ({v})" for k, v in self.libraries["built"].items()))
        if self.evidence:
            e = self.evidence
            only = e.get("workload_only") or []
            lines.append(f"sgcc: the workload {'counts' if e.get('workload_is_test') else 'does not count'} as a "
                         f"test ({e.get('why', '')})" + (f": {len(only)} searched function(s) rest on it alone ("
                                                         + ", ".join(f"{o['function']} {o['share']:.1%}"
                                                                     for o in only[:5]) + ")" if only else ""))
        if self.whole_project:
            lines += whole_project_lines(self.whole_project)
        for u in self.units:
            lines.append(f"  {u['source']}{' (' + u['modes'] + ')' if u.get('modes') else ''}: {u['tally']}")
            for fn in u["functions"]:
                lines.append(f"    {fn}")
        if self.not_searched:
            lines.append(f"sgcc: the budget cut {len(self.not_searched)} unit(s) before their search: "
                         + ", ".join(self.not_searched))
        if self.final:
            f = self.final
            how = f"timed as {f['timed_as']}" if f.get("timed_as") else "CPU, interleaved"
            lines.append(f"sgcc: rebuilt with the cache: the workload runs {f['speedup']:.3f}x "
                         f"[{f['low']:.3f}, {f['high']:.3f}] as fast as gcc's build ({how}), "
                         f"{'and its own tests pass' if f.get('tests_passed') else 'tests: see notes'}")
            w = self.whole_project or {}
            if w.get("adopted") and w.get("lowers") and not w.get("withdrawn"):
                lines.append(f"sgcc: what shipped is {w.get('variant')}, which {w['lowers']}")
        else:
            lines.append("sgcc: the project is built as plain gcc builds it (nothing proven faster)")
        lines += reference_lines(self.references, self.final)
        if self.phases:
            names = {"build": "recording build", "tests": "tests", "profile_workload": "profiling the workload",
                     "profile_tests": "profiling the tests", "pgo_profile": "whole-project profile",
                     "whole_project": "whole-project candidates",
                     "search": "search", "final": "final rebuild and timing"}
            lines.append("sgcc: time: " + ", ".join(f"{names.get(k, k)} {v:.0f} s" for k, v in self.phases.items()))
        # What every unit's run left out and why (the same words for each unit): said once.
        left_out = list(dict.fromkeys(n for u in self.units for n in ((u.get("report") or {}).get("notes") or [])
                                      if ": left out: " in n))
        lines += [f"sgcc: note: {n}" for n in [*left_out, *self.notes]]
        return "\n".join(lines)


def _fmt(e: dict) -> str:
    if e.get("same_code"):
        return "1 (the same code byte for byte: not timed against itself)"
    return f"{e['speedup']:.3f}x [{e['low']:.3f}, {e['high']:.3f}]"


def whole_project_lines(w: dict) -> list[str]:
    """The whole-project candidates: each one's fate, then which became the search's baseline
    and why (not)."""
    lines = []
    if w.get("field"):
        lines.append("sgcc: whole-project candidates (gcc's own builds; the project's tests, then raced on the "
                     "workload against gcc's build):")
        for e in w["field"]:
            if e.get("timing"):
                fate = f"{_fmt(e['timing'])} confirmed on {e['timing'].get('rounds', '?')} fresh rounds"
            elif e.get("race"):
                fate = f"{_fmt(e['race'])} in the race ({e['race'].get('rounds', '?')} rounds)"
            else:
                fate = "not timed"
            parts = [fate]
            if e.get("not_used") and e.get("tests_passed"):
                parts.append(f"{', '.join(e['not_used'][:3])} stayed gcc's (its cache key differs in every build: "
                             "its assembly changes, as with __DATE__)")
            if e.get("vs_pgo") and not e.get("why"):
                parts.append(f"{_fmt(e['vs_pgo'])} against PGO everywhere")
            if e.get("why"):
                parts.append(e["why"])
            lowered = f" ({e['lowers']})" if e.get("lowers") else ""
            lines.append(f"  {e['name']}{lowered}: " + "; ".join(parts))
    if w.get("adopted"):
        lowered = f", which {w['lowers']}," if w.get("lowers") else ""
        text = (f"sgcc: {w.get('variant', 'PGO everywhere')}{lowered} ({w.get('compiles', 0)} compiles) passed the "
                f"tests, {_fmt(w['timing'])} against gcc's build: "
                + ("the search started from the functions its links make (LTO partitions)" if w.get("lto") else
                   "the search started from it"))
        lines.append(text + (" (withdrawn: the rebuilt tree failed its tests)" if w.get("withdrawn") else ""))
    else:
        lines.append(f"sgcc: no whole-project candidate taken as the baseline: {w.get('why', '')}")
    return lines


def reference_lines(refs: dict, final: dict | None) -> list[str]:
    """sgcc's result beside the build it replaces, PGO everywhere and PGO + LTO, with intervals."""
    if not refs:
        return []

    fmt = _fmt
    pgo = refs.get("pgo_everywhere") or {}
    own = fmt(final) if final else "1.000x (gcc's build: nothing shipped)"
    ref = fmt(pgo) if "speedup" in pgo else f"not measured ({pgo.get('error', 'no profile')})"
    if pgo.get("timed_as"):
        ref += f" (timed as {pgo['timed_as']})"
    elif pgo.get("same_code_as_candidate") is False:
        ref += f" (not the candidate's code: {', '.join(pgo.get('differs_from_candidate', [])[:3])} differ)"
    lines = [f"sgcc: on the same workload, against gcc's build (CPU, interleaved): sgcc {own}; "
             f"PGO everywhere (the whole project built with -fprofile-use as a user builds it) {ref}"]
    if "sgcc_vs_pgo_everywhere" in refs:
        lines.append(f"sgcc: sgcc's build against PGO everywhere: {fmt(refs['sgcc_vs_pgo_everywhere'])}")
    lto = refs.get("pgo_lto")
    if lto is not None:
        lines.append("sgcc: PGO + LTO (the PGO build with -flto=auto -ffat-lto-objects on every compile and link) "
                     + (f"{fmt(lto)} against gcc's build" + (f" (timed as {lto['timed_as']})" if lto.get("timed_as")
                                                             else "") if "speedup" in lto
                        else f"not measured ({lto.get('error', '')})")
                     + (f"; sgcc's build against it: {fmt(refs['sgcc_vs_pgo_lto'])}" if "sgcc_vs_pgo_lto" in refs
                        else ""))
    flags = refs.get("flag_set") or {}
    if "speedup" in flags:
        lines.append(f"sgcc: the best whole-project flag set tried: {flags.get('what', '')} {fmt(flags)} against "
                     "gcc's build")
    else:
        lines.append(f"sgcc: whole-project flag sets: {flags.get('error', 'not tried')}")
    return lines


def tally(candidates: list[dict]) -> str:
    """'N offered, B built, T passed the tests, M timed, A accepted' of one unit's candidates."""
    stages = [Stage(c["stage"]) for c in candidates if c.get("id") != "-"]
    # Never built, or built and not timed, because the time was up.
    skipped = sum(1 for c in candidates if "budget" in c.get("reason", ""))
    built = sum(1 for s in stages if s in COMPILED)
    passed = sum(1 for s in stages if s in PASSED)
    timed = sum(1 for c in candidates if c.get("id") != "-" and c.get("speedup") is not None)
    accepted = sum(1 for s in stages if s is Stage.ACCEPTED)
    text = f"{len(stages)} tried, {built} built, {passed} passed the tests, {timed} timed, {accepted} accepted"
    return text + (f"; {skipped} cut by the budget" if skipped else "")


#: What a function's candidates were tested with (sgcc.project.plan.Target.evidence), as the report says it.
EVIDENCE = {"tests": "the test command and the workload", "workload": "the workload alone"}


def function_lines(unit_report: dict, evidence: dict[str, str] | None = None) -> list[str]:
    """Per searched function: its share of the workload, what its candidates were tested
    with (``evidence``: function -> ``tests`` or ``workload``), and its gain or gcc's code kept."""
    honest = unit_report.get("honest") or {}
    shipped = set(honest.get("functions") or [])
    weights = unit_report.get("weights") or {}
    by_fn: dict[str, dict] = {}
    for c in unit_report.get("candidates", []):
        if c.get("stage") == Stage.ACCEPTED.value:
            best = by_fn.get(c["function"])
            if best is None or (c.get("speedup") or 0) > (best.get("speedup") or 0):
                by_fn[c["function"]] = c
    lines = []
    for fn, w in sorted(weights.items(), key=lambda kv: -kv[1]):
        if w <= 0:
            continue
        c = by_fn.get(fn)
        tested = f", tested by {EVIDENCE[evidence[fn]]}" if evidence and fn in evidence else ""
        if fn in shipped and c is not None:
            lines.append(f"{fn} ({w:.1%}{tested}): {c['speedup']:.3f}x [{c['ci_low']:.3f}, {c['ci_high']:.3f}] "
                         f"({c['generator']}), shipped")
        else:
            lines.append(f"{fn} ({w:.1%}{tested}): gcc's code kept")
    return lines
