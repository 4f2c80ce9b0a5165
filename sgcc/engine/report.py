"""What an optimization run found: per candidate, per run, as JSON for tools and a summary for people."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from sgcc.stages import COMPILED, PASSED, REFUSED_BEFORE_LINK, Stage

if TYPE_CHECKING:
    from sgcc.verify.timing.rounds import Estimate


@dataclass
class CandidateResult:
    """The fate of one candidate: where it stopped, why, and what was measured."""

    id: str
    function: str
    generator: str
    origin: str = ""
    stage: Stage = Stage.PENDING  # where it is, or where it stopped (sgcc.stages)
    reason: str = ""
    detail: str = ""
    tests_passed: int | None = None
    tests_total: int | None = None
    speedup: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    rounds: int | None = None
    reps: int | None = None
    confirm: dict | None = None
    seconds: float = 0.0
    meta: dict = field(default_factory=dict)  # what the generator says about it (tokens/s, flags...)
    changes: list[str] = field(default_factory=list)  # what it changed (sgcc.engine.explain), if accepted
    proof: str = ""  # how its functions were proven (sgcc.engine.funcproof), once timing accepted it

    def stop(self, stage: Stage, reason: str, detail: str = "") -> None:
        """Record where the candidate stopped and why."""
        self.stage, self.reason, self.detail = stage, reason, detail

    def set_estimate(self, est) -> None:
        """Record a timing estimate (sgcc.verify.timing.rounds.Estimate)."""
        self.speedup, self.ci_low, self.ci_high = est.speedup, est.low, est.high
        self.rounds, self.reps = est.rounds, est.reps


@dataclass
class Report:
    """One ``sgcc optimize`` run."""

    source: str
    flags: list[str]
    isa: str
    min_gain: float
    functions: list[str] = field(default_factory=list)
    weights: dict[str, float] | None = None  # share of the tests' instructions per function
    skipped_functions: dict[str, str] = field(default_factory=dict)  # not searched, and why
    generators: list[str] = field(default_factory=list)
    budget: dict = field(default_factory=dict)  # shares, and what it cut (see sgcc.engine.budget)
    # How well the ranking signal predicted timed results (sgcc.engine.rank.agreement).
    ranking: dict = field(default_factory=dict)
    # Combinations validated after the search, in order, and how each ended (sgcc.engine.select).
    selection: list = field(default_factory=list)
    cache: dict = field(default_factory=dict)  # entry key, search key, found, stored
    tests: int = 0
    # What acceptance rests on besides the visible tests (sgcc.engine.proof): tests held
    # out, inputs generated and kept, candidates that failed them.
    proof: dict = field(default_factory=dict)
    # The function-level test (sgcc.engine.funcproof): capture time, states per function, cost.
    function_proof: dict = field(default_factory=dict)
    isolation: dict = field(default_factory=dict)  # which layers boxed the runs (sgcc.verify.box.isolation_level)
    candidates: list[CandidateResult] = field(default_factory=list)
    paper: dict = field(default_factory=dict)
    final: dict | None = None
    shipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # What else the user could have had, timed against gcc's program (sgcc.engine.references):
    # clang's whole program when the clang generator ran.
    references: dict = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def honest(self) -> dict:
        """The shipped program's re-measured speedup, unclipped, with its interval."""
        if self.final:
            return {"speedup": self.final["speedup"], "ci_low": self.final["low"], "ci_high": self.final["high"],
                    "functions": self.final["functions"], "generators": self.shipped_generators()}
        return {"speedup": 1.0, "ci_low": 1.0, "ci_high": 1.0, "functions": [], "generators": {}}

    def shipped_generators(self) -> dict[str, str]:
        """Which generator produced each shipped unit (function -> generator)."""
        by_id = {c.id: c for c in self.candidates if c.id != "-"}
        return {by_id[i].function: by_id[i].generator for i in self.shipped if i in by_id}

    def to_dict(self) -> dict:
        data = asdict(self)
        data["honest"] = self.honest
        data["stages"] = self.stage_counts()
        data["throughput"] = self.throughput()
        data["change_summary"] = self.change_summary()
        data["per_generator"] = self.per_generator()
        return finite_json(data)

    def per_generator(self) -> dict[str, dict[str, int]]:
        """Per generator: candidates offered (built or refused: not skipped), built (tested),
        passed the tests, timed and accepted."""
        out: dict[str, dict[str, int]] = {}
        for c in self.candidates:
            if c.id == "-" or c.stage == Stage.SKIPPED:
                continue
            t = out.setdefault(c.generator, {"offered": 0, "built": 0, "passed": 0, "timed": 0, "accepted": 0})
            t["offered"] += 1
            t["built"] += c.stage in COMPILED
            t["passed"] += c.stage in PASSED
            t["timed"] += c.speedup is not None
            t["accepted"] += c.stage == Stage.ACCEPTED
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def stage_counts(self) -> dict[str, int]:
        """Candidates per stage they reached (or stopped at)."""
        counts: dict[str, int] = {}
        for c in self.candidates:
            counts[c.stage] = counts.get(c.stage, 0) + 1
        return counts

    def change_summary(self) -> dict[str, int]:
        """How many accepted candidates made each kind of change (sgcc.engine.explain categories,
        and "unknown"); one candidate counts once per category."""
        from sgcc.engine.explain import CATEGORIES, UNKNOWN  # light: no capstone import at module level

        counts = {c: 0 for c in (*CATEGORIES, UNKNOWN)}
        for c in self.candidates:
            if c.stage == Stage.ACCEPTED:
                for cat in set(c.changes):
                    counts[cat] = counts.get(cat, 0) + 1
        return counts

    def throughput(self) -> dict:
        """Per generator that reports generation cost (``meta`` tokens and gen_seconds, e.g. the
        llm): answers, tokens, seconds, tokens/s, and seconds and tokens per function."""
        out: dict[str, dict] = {}
        for c in self.candidates:
            tokens, seconds = c.meta.get("tokens"), c.meta.get("gen_seconds")
            if not isinstance(seconds, (int, float)):
                continue
            t = out.setdefault(c.generator, {"answers": 0, "tokens": 0, "seconds": 0.0, "tokens_per_s": None,
                                             "functions": {}})
            f = t["functions"].setdefault(c.function, {"answers": 0, "tokens": 0, "seconds": 0.0})
            for d in (t, f):
                d["answers"] += 1
                d["tokens"] += tokens if isinstance(tokens, int) else 0
                d["seconds"] += seconds
        for t in out.values():
            t["tokens_per_s"] = round(t["tokens"] / t["seconds"], 2) if t["seconds"] > 0 and t["tokens"] else None
            t["seconds"] = round(t["seconds"], 3)
            for f in t["functions"].values():
                f["seconds"] = round(f["seconds"], 3)
        return out

    def outcome(self) -> str:
        """One line: what was shipped, or why gcc's program was (no candidates, none built,
        none compiled, none passed the tests, none proven faster, a winner not confirmed)."""
        h = self.honest
        if h["functions"]:
            return "shipped " + ", ".join(f"{fn} ({h['generators'][fn]})" if fn in h["generators"] else fn
                                          for fn in h["functions"])
        why = _why_nothing_shipped(self.candidates, self.min_gain)
        if not self.candidates and self.generators:
            why += f" (generators: {', '.join(self.generators)})"
        return f"gcc's program: {why}"

    def summary(self) -> str:
        """A few lines for stderr."""
        lines = [f"sgcc: {self.source}: {len(self.functions)} function(s), {self.tests} test(s), "
                 f"{len(self.candidates)} candidate(s), isa {self.isa}"]
        for c in self.candidates:
            timing = ""
            if c.speedup is not None:
                timing = f" {c.speedup:.3f}x [{c.ci_low:.3f}, {c.ci_high:.3f}]"
            if isinstance(c.meta.get("predicted"), (int, float)):
                timing += f" (predicted {c.meta['predicted']:.3f}x)"
            tests = f" tests {c.tests_passed}/{c.tests_total}" if c.tests_total is not None else ""
            lines.append(f"  {c.id:>8} {c.function:24} {c.generator:10} {c.stage:9}{tests}{timing}"
                         + (f"  {c.reason}" if c.reason else ""))
        if self.proof:
            pr = self.proof
            lines.append(f"sgcc: proof: {pr.get('visible', 0)} visible test(s), {pr.get('held_out', 0)} held out, "
                         f"{pr.get('kept', 0)} of {pr.get('generated', 0)} generated inputs kept; failed by "
                         f"{pr.get('failed_held_out', 0)} + {pr.get('failed_generated', 0)} candidate(s)")
        fp = self.function_proof
        if fp.get("candidates") or fp.get("failed"):
            cost = (f"{fp.get('candidates', 0)} candidate(s) in {fp.get('seconds', 0.0):.1f} s, capture "
                    f"{fp.get('capture_seconds', 0.0):.1f} s")
            if "smt_seconds" in fp:
                cost += f", SMT tier {fp['smt_seconds']:.1f} s"
            lines.append(f"sgcc: function-level test: {cost}" + (f"; {fp['failed']}" if fp.get("failed") else ""))
        for c in self.candidates:
            if c.stage == Stage.ACCEPTED and c.proof:
                lines.append(f"sgcc: proven {c.id} ({c.function}): {c.proof}")
        h = self.honest
        if h["functions"]:
            named = [f"{fn} ({h['generators'][fn]})" if fn in h["generators"] else fn for fn in h["functions"]]
            lines.append(f"sgcc: shipped {', '.join(named)}: {h['speedup']:.3f}x "
                         f"[{h['ci_low']:.3f}, {h['ci_high']:.3f}] over the baseline (re-measured)")
            lines.append(self._where_it_holds())
        else:
            lines.append(f"sgcc: shipped the baseline: {_why_nothing_shipped(self.candidates, self.min_gain)}")
        for c in self.candidates:
            if c.stage == Stage.ACCEPTED and c.changes:
                by_fn = c.meta.get("changes_by_function") or {c.function: c.changes}
                for fn, cats in by_fn.items():
                    if cats:
                        lines.append(f"sgcc: changed by {c.id} ({c.generator}): {fn}: {', '.join(cats)}")
        for gen, t in self.per_generator().items():
            lines.append(f"sgcc: {gen}: {t['offered']} offered, {t['built']} built, {t['passed']} passed the tests, "
                         f"{t['timed']} timed, {t['accepted']} accepted")
        ref = self.references.get("clang_whole_program")
        if ref:
            mine = f"{h['speedup']:.3f}x [{h['ci_low']:.3f}, {h['ci_high']:.3f}]" if h["functions"] else "1.000x"
            theirs = (f"{ref['speedup']:.3f}x [{ref['low']:.3f}, {ref['high']:.3f}]" if "speedup" in ref
                      else f"not timed ({ref.get('error', '?')})")
            lines.append(f"sgcc: against gcc's program on the same tests: sgcc {mine}; clang's whole program "
                         f"({ref.get('what', 'clang')}) {theirs}")
        p = self.paper
        if p:
            refused = any(c.id != "-" and c.stage in REFUSED_BEFORE_LINK for c in self.candidates)
            lines.append(paper_line(p, shipped=bool(h["functions"]), refused=refused))
        for gen, t in self.throughput().items():
            per_fn = ", ".join(f"{fn} {v['seconds']:.1f} s" for fn, v in t["functions"].items())
            rate = f" ({t['tokens_per_s']:.1f} tokens/s)" if t["tokens_per_s"] else ""
            lines.append(f"sgcc: {gen}: {t['answers']} answer(s), {t['tokens']} tokens in {t['seconds']:.1f} s"
                         f"{rate}; per function: {per_fn}")
        b = self.budget
        if b.get("seconds") is not None or b.get("candidates") is not None:
            lines += self._budget_lines(b)
        if b.get("lock_wait"):
            lines.append(lock_wait_line(b["lock_wait"]))
        r = self.ranking
        if r.get("timed"):
            rho = "n/a (fewer than 3 timed or no spread)" if r.get("spearman") is None else f"{r['spearman']:+.2f}"
            lines.append(f"sgcc: ranking ({r.get('ranked', 0)} ranked by valgrind counts): Spearman rho {rho} "
                         f"over {r['timed']} timed")
        for name, why in self.skipped_functions.items():
            lines.append(f"sgcc: not searched: {name}: {why}")
        for note in self.notes:
            lines.append(f"sgcc: note: {note}")
        return "\n".join(lines)


    def _where_it_holds(self) -> str:
        """Where the shipped figure holds: inputs like the timed tests (their sizes), and what the
        cost rule counted beyond them (issue 43: a speed claim is only as wide as what was timed)."""
        sizes = (self.final or {}).get("timed_sizes") or {}
        line = "sgcc: the figure holds for inputs like the timed tests"
        if sizes:
            lo, hi = min(sizes.values()), max(sizes.values())
            line += f" ({len(sizes)} test(s), stdin of {_bytes(lo)}" + (f" to {_bytes(hi)})" if hi != lo else ")")
        counted = []
        for c in self.candidates:
            if c.stage != Stage.ACCEPTED or c.function not in (self.final or {}).get("functions", []):
                continue
            for fn, cost in ((c.meta.get("function_test") or {}).get("cost") or {}).items():
                if cost.get("timed") and cost.get("beyond"):
                    ratios = [b["ratio"] for b in cost["beyond"]]
                    counted.append(f"{fn} {cost['timed']['ratio']:.2f}x gcc's instructions on the largest timed "
                                   f"state, {min(ratios):.2f}x-{max(ratios):.2f}x on larger ones")
        if counted:
            line += "; beyond them the function-level test counted: " + "; ".join(counted)
        return line

    def _budget_lines(self, b: dict) -> list[str]:
        """What the budget allowed and where the run's time went: one figure for the whole
        run, split into before, during and after the search (the note "search budget reached"
        gives the moment the search stopped, which is not the run's end)."""
        limit = " and ".join(x for x in (
            f"{b['seconds']:g} s of wall time for the whole run" if b.get("seconds") is not None else "",
            f"{b['candidates']} candidates built" if b.get("candidates") is not None else "") if x)
        built = sum(c.id != "-" for c in self.candidates)
        line = f"sgcc: budget {limit}: used {self.seconds:.0f} s in all"
        if "search_seconds" in b:
            before, search = b.get("before_search_seconds", 0.0), b["search_seconds"]
            after = max(0.0, self.seconds - before - search)
            line += (f" ({before:.1f} s before the search: baseline, tests, profile, generators; "
                     f"{search:.1f} s searching; {after:.1f} s after: re-measuring winners, shipping)")
        line += f", {built} candidate(s) built, {b.get('timed', 0)} timed"
        cut = b.get("cut") or {}
        if cut.get("not_built") or cut.get("built_not_timed"):
            line += (f"; cut {cut.get('not_built', 0)} offered but not built, "
                     f"{cut.get('built_not_timed', 0)} built but not timed")
        lines = [line]
        over = b.get("over")
        if over:
            remeasured = [c.id for c in self.candidates if c.confirm]
            why = []
            if over["search_seconds"] >= 0.5:
                why.append(f"{over['search_seconds']:.1f} s past the budget in search work that began within it "
                           "(a build, a timing, a winner's function-level proof)")
            if over["after_search_seconds"] >= 0.5:
                if remeasured:
                    what = f"re-measuring {', '.join(remeasured)}" + \
                        (" and validating the combined program" if self.selection else "") + \
                        " (the first re-measurement of a winner always runs)"
                else:
                    what = "shipping"
                why.append(f"{over['after_search_seconds']:.1f} s after the search, {what}")
            if over["lock_wait_seconds"]:
                # Not a third part of the overrun: a cause, in the parts above or before them.
                why.append(f"the run waited {b.get('lock_wait', {}).get('seconds', 0.0):.1f} s in all for the timing "
                           "lock (see below)")
            lines.append(f"sgcc: budget: over by {over['seconds']:.1f} s: " + "; ".join(why))
        if cut.get("unsearched"):
            lines.append(f"sgcc: budget: not searched: {', '.join(cut['unsearched'])} "
                         "(the budget ran out before any candidate of theirs was built)")
        if cut.get("cut_short"):
            lines.append(f"sgcc: budget: searched in part: {', '.join(cut['cut_short'])} "
                         "(some candidates built and tested, others cut by the budget)")
        return lines


def _bytes(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MB"


def paper_line(p: dict, *, shipped: bool, refused: bool = False) -> str:
    """The papers' per-problem figures (SuperCoder, section 4: :mod:`sgcc.engine.figures`),
    said as what they are: a score of first measurements, not what sgcc shipped. ``refused``:
    some candidate assembled and sgcc's static proof refused it (not "compiled no")."""
    if p["speedup"] > 1.0:
        best = f"best first measurement {p['speedup']:.3f}x, clipped at 1"
    else:
        best = "best first measurement 1.000x (clipped at 1: none measured faster)"
    what = "the shipped program's speedup is the 'shipped' line's" if shipped else \
        "not a gain: gcc's program was shipped"
    compiled = "yes" if p["compiled"] else "no (refused by sgcc's static proof before linking)" if refused else "no"
    return (f"sgcc: the SuperCoder papers' scoring (best-of-N on first measurements; {what}): compiled "
            f"{compiled}, passed {'yes' if p['passed'] else 'no'}, {best}")


def lock_wait_line(w: dict) -> str:
    """What waiting for the timing lock cost the run, and why it is shared."""
    holders = "; ".join(w.get("holders") or []) or "holder unknown"
    return (f"sgcc: timing lock: waited {w['seconds']:.1f} s ({w['waits']} wait(s), "
            f"{w.get('after_search_seconds', 0.0):.1f} s of them after the search) while other sgcc runs timed "
            f"({holders}); every sgcc run of this user on this machine times in turn (the lock is "
            f"$SGCC_TIMING_LOCK, by default in ~/.cache/sgcc), since timings that overlap disturb each other")


def _why_nothing_shipped(candidates: list[CandidateResult], min_gain: float) -> str:
    """Why no candidate was shipped, from how far the best ones got."""
    from sgcc.stages import COMPILED, PASSED

    if not candidates:
        return "no candidates to try"
    built = [c for c in candidates if c.id != "-"]
    if not built:
        reasons = sorted({c.reason for c in candidates})
        return f"no candidate built ({len(candidates)} refused or skipped before building: {'; '.join(reasons[:2])})"
    compiled = [c for c in built if c.stage in COMPILED]
    if not compiled:
        stages = sorted({str(c.stage) for c in built})
        return f"none of {len(built)} built candidate(s) compiled (stopped at {', '.join(stages)})"
    passed = [c for c in compiled if c.stage in PASSED]
    if not passed and not any(c.stage == Stage.PROVE for c in compiled):
        first = compiled[0]
        return f"none of {len(compiled)} compiled candidate(s) passed the tests ({first.id}: {first.reason})"
    confirmed = [c for c in passed if c.confirm]
    if confirmed:  # accepted once; fresh rounds did not confirm it, or the combination failed
        best = max(confirmed, key=lambda c: (c.confirm or {}).get("speedup", 0.0))
        if best.stage == Stage.ACCEPTED:
            return f"{best.id} was proven faster, but the program combining the winners was not confirmed"
        return f"{best.id} was faster at first ({best.speedup:.3f}x) but {best.reason}"
    unconfirmed = [c for c in passed if c.stage == Stage.ACCEPTED]
    if unconfirmed:  # accepted in the search, never re-measured
        return f"{unconfirmed[0].id} was faster in the search, but no time was left to re-measure it"
    refused = [c for c in compiled if c.stage == Stage.PROVE]
    if refused:  # faster on the tests, but the proof of its functions refused it (and every runner-up)
        best = max(refused, key=lambda c: c.speedup or 0.0)
        more = f"; {len(refused) - 1} more refused likewise" if len(refused) > 1 else ""
        return (f"{best.id} was faster on the tests ({best.speedup or 1.0:.3f}x) but the proof of its functions "
                f"refused it ({best.reason}){more}")
    timed = [c for c in passed if c.ci_low is not None]
    if not timed:
        from sgcc.engine.budget import BUDGET_REACHED

        if all(BUDGET_REACHED in c.reason for c in passed):
            return (f"{len(passed)} candidate(s) passed the tests, and the budget ran out before any was timed "
                    "(a larger --budget times them)")
        return f"{len(passed)} candidate(s) passed the tests, none was timed ({passed[0].reason or 'no time left'})"
    best = max(timed, key=lambda c: c.ci_low or 0.0)
    return (f"{len(passed)} candidate(s) passed the tests, none proven faster (best {best.id}: {best.speedup:.3f}x, "
            f"lower bound {best.ci_low:.3f} <= {1 + min_gain:.3f})")


def estimate_dict(est: Estimate) -> dict:
    """The summary of a timing estimate that reports keep (not the raw samples); with
    several worlds, each world's (speedup, low, high) too."""
    summary: dict[str, object] = {"speedup": est.speedup, "low": est.low, "high": est.high, "rounds": est.rounds,
                                  "reps": est.reps}
    if est.per_world:
        summary["worlds"] = [{"speedup": s, "low": lo, "high": hi} for s, lo, hi in est.per_world]
    return summary


def finite_json(value):
    """``value`` (dicts and lists of plain values) with every NaN or infinity replaced by
    ``None``: JSON has no NaN/inf, so reports write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite_json(v) for v in value]
    return value
