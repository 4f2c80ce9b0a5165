"""What an optimization run found: per candidate, per run, as JSON for tools and a summary for people."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

from sgcc.stages import Stage


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
        """Record a timing estimate (sgcc.verify.timing.Estimate)."""
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
    isolation: dict = field(default_factory=dict)  # which layers boxed the runs (sgcc.verify.isolation_level)
    candidates: list[CandidateResult] = field(default_factory=list)
    paper: dict = field(default_factory=dict)
    final: dict | None = None
    shipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
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
        return finite_json(data)

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
        from sgcc.engine.explain import CATEGORIES, UNKNOWN  # noqa: PLC0415 - light: no capstone import at module level

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
        h = self.honest
        if h["functions"]:
            named = [f"{fn} ({h['generators'][fn]})" if fn in h["generators"] else fn for fn in h["functions"]]
            lines.append(f"sgcc: shipped {', '.join(named)}: {h['speedup']:.3f}x "
                         f"[{h['ci_low']:.3f}, {h['ci_high']:.3f}] over the baseline (re-measured)")
        else:
            lines.append("sgcc: shipped the baseline (no candidate proven correct and faster)")
        for c in self.candidates:
            if c.stage == Stage.ACCEPTED and c.changes:
                by_fn = c.meta.get("changes_by_function") or {c.function: c.changes}
                for fn, cats in by_fn.items():
                    if cats:
                        lines.append(f"sgcc: changed by {c.id} ({c.generator}): {fn}: {', '.join(cats)}")
        p = self.paper
        if p:
            lines.append(f"sgcc: papers' figures: compiled {'yes' if p['compiled'] else 'no'}, "
                         f"passed {'yes' if p['passed'] else 'no'}, speedup {p['speedup']:.3f} (clipped, best-of-N)")
        for gen, t in self.throughput().items():
            per_fn = ", ".join(f"{fn} {v['seconds']:.1f} s" for fn, v in t["functions"].items())
            rate = f" ({t['tokens_per_s']:.1f} tokens/s)" if t["tokens_per_s"] else ""
            lines.append(f"sgcc: {gen}: {t['answers']} answer(s), {t['tokens']} tokens in {t['seconds']:.1f} s"
                         f"{rate}; per function: {per_fn}")
        b = self.budget
        if b.get("seconds") is not None or b.get("candidates") is not None:
            limit = ", ".join(x for x in (f"{b['seconds']:g} s" if b.get("seconds") is not None else "",
                                          f"{b['candidates']} candidates" if b.get("candidates") is not None
                                          else "") if x)
            line = f"sgcc: budget {limit}: {self.seconds:.0f} s in all, {b.get('timed', 0)} candidate(s) timed"
            cut = b.get("cut") or {}
            if cut.get("not_built") or cut.get("built_not_timed"):
                line += (f"; cut {cut.get('not_built', 0)} offered but not built, "
                         f"{cut.get('built_not_timed', 0)} built but not timed")
            lines.append(line)
            if cut.get("unsearched"):
                lines.append(f"sgcc: budget: not searched: {', '.join(cut['unsearched'])}")
            if cut.get("cut_short"):
                lines.append(f"sgcc: budget: searched in part: {', '.join(cut['cut_short'])}")
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


def estimate_dict(est) -> dict:
    """The summary of a timing estimate that reports keep (not the raw samples)."""
    return {"speedup": est.speedup, "low": est.low, "high": est.high, "rounds": est.rounds, "reps": est.reps}


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
