"""``sgcc bench DATASET``: the papers' evaluation, and sgcc's honest one, over many problems.

A dataset is a directory of problems laid out like ``examples/programs``: ``NAME/NAME.c``,
``NAME/tests/*.in`` (optional ``.out``), optional replay candidates in ``NAME/candidates/``
(and ``NAME/candidates-native/``, used with ``--isa native``). Every problem goes through
the engine (:func:`sgcc.engine.optimize`), problems in parallel for building and testing;
timing takes the machine-wide lock, so it stays serial.

Reported (see :mod:`sgcc.lab.metrics` for the definitions):

* the papers' row: compile pass %, test pass %, speedup p25/p50/p75 and average (best
  candidate per problem, clipped at 1);
* sgcc's honest figures: geometric mean of the shipped programs' re-measured, unclipped
  speedups with a bootstrap interval, and the share of problems with a significant gain;
* ``aa``: the noise floor, each baseline timed against a byte-identical copy, sgcc's way
  and the papers' way (:func:`sgcc.lab.studies.aa_study`);
* ``perturbation`` (papers section 5.5): best-of-N selection among layout-only
  perturbations of gcc's program, measured the papers' way and sgcc's way
  (:func:`sgcc.lab.studies.perturbation_study`);
* curves: best-of-N (N = 1, 2, 4, 8) and refinement rounds 0..K from the run's candidates.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from sgcc.errors import SgccError
from sgcc.lab import metrics, studies
from sgcc.stages import COMPILED, PASSED, REFUSED_BEFORE_LINK, Stage

BEST_OF = (1, 2, 4, 8)
#: Seconds without a line after which the bench says which problems are running and what
#: each engine is doing (a log must not go silent for minutes while problems run).
HEARTBEAT = 15.0


class Status:
    """One running problem's progress, as its engine reports it (a
    :class:`sgcc.progress.Progress` that keeps the latest line instead of printing it)."""

    def __init__(self) -> None:
        self.message = "starting"
        self.started = time.monotonic()

    def status(self, message: str) -> None:
        self.message = message

    line = status

    def tick(self, on: bool) -> None:
        pass

    def done(self) -> None:
        pass


@dataclass
class Problem:
    name: str
    dir: Path
    source: Path
    tests: Path
    replay: list[Path] = field(default_factory=list)


def discover(dataset: Path, *, only=None, candidates_dir: str = "candidates", isa: str = "flags") -> list[Problem]:
    """The problems of ``dataset`` (sorted by name): directories NAME with NAME/NAME.c and
    NAME/tests/. ``only`` keeps the named ones (an unknown name is an error)."""
    dataset = Path(dataset)
    if not dataset.is_dir():
        raise SgccError(f"no such dataset directory: {dataset}")
    found = []
    for d in sorted(p for p in dataset.iterdir() if p.is_dir()):
        src, tests = d / f"{d.name}.c", d / "tests"
        if not (src.is_file() and tests.is_dir()):
            continue
        replay = [d / candidates_dir] if (d / candidates_dir).is_dir() else []
        if isa == "native" and (d / "candidates-native").is_dir() and candidates_dir == "candidates":
            replay.append(d / "candidates-native")
        found.append(Problem(d.name, d, src, tests, replay))
    if only:
        names = {p.name for p in found}
        missing = [n for n in only if n not in names]
        if missing:
            raise SgccError(f"no problem named {', '.join(missing)} in {dataset}")
        found = [p for p in found if p.name in set(only)]
    if not found:
        raise SgccError(f"no problems in {dataset}", hint="a problem is NAME/NAME.c with NAME/tests/*.in")
    return found


@dataclass
class Options:
    flags: list[str] = field(default_factory=lambda: ["-O3", "-lm"])
    jobs: int = 2
    min_gain: float = 0.03
    timing_rounds: int = 20
    min_sample: float = 0.05
    test_timeout: float = 10.0
    seed: int | None = None
    perturbation: bool = False
    perturbations: int = 10
    aa: bool = False
    aa_max: int = 8
    output_dir: Path | None = None  # keep each problem's shipped program as DIR/NAME
    compiler: str = "gcc"


# --------------------------------------------------------------------------- one problem


def attempts(candidates) -> list[tuple[int, int, float | None]]:
    """(sample, round, speedup or None) of each built candidate, for the curves. An llm
    candidate carries its sample (1-based) and round; for others the sample is its place in
    its generator's offers for that function, the round 0."""
    out: list[tuple[int, int, float | None]] = []
    seen: dict[tuple[str, str], int] = {}
    for c in candidates:
        if c.id == "-":
            continue
        key = (c.generator, c.function)
        seen[key] = seen.get(key, 0) + 1
        sample = c.meta.get("sample") if isinstance(c.meta.get("sample"), int) else seen[key]
        rnd = c.meta.get("round") if isinstance(c.meta.get("round"), int) else 0
        ok = c.stage in PASSED
        out.append((sample, rnd, (c.speedup if c.speedup is not None else 1.0) if ok else None))
    return out


def generator_counts(candidates, shipped_ids) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for c in candidates:
        g = out.setdefault(c.generator, {"offered": 0, "built": 0, "compiled": 0, "passed": 0, "accepted": 0,
                                         "shipped": 0})
        g["offered"] += 1
        if c.id == "-":
            continue
        g["built"] += 1
        g["compiled"] += c.stage in COMPILED
        g["passed"] += c.stage in PASSED
        g["accepted"] += c.stage == Stage.ACCEPTED or bool(c.confirm)
        g["shipped"] += c.id in shipped_ids
    return out


def run_problem(problem: Problem, make_request: Callable, opts: Options, workdir: Path,
                status: Status | None = None) -> dict:
    """The engine on one problem; the row the bench keeps about it (``status`` hears the
    engine's progress)."""
    from sgcc.engine import optimize

    out = (opts.output_dir or workdir) / problem.name
    started = time.perf_counter()
    row: dict = {"name": problem.name, "replay": [str(p) for p in problem.replay]}
    try:
        request = make_request(problem, out)
        report = optimize(request, status)
    except SgccError as exc:
        row.update({"error": exc.message, "outcome": f"error: {exc.message}", "compiled": False, "passed": False,
                    "speedup": 1.0,
                    "honest": {"speedup": 1.0, "ci_low": 1.0, "ci_high": 1.0, "functions": [], "generators": {}},
                    "candidates": 0, "attempts": [], "generators": {}, "stages": {}, "search_seconds": 0.0,
                    "seconds": time.perf_counter() - started})
        return row
    failed = [f"{g.name}: {g.error.message}" for g in request.generators if g.error is not None]
    row.update(report.paper)  # the papers' per-problem figures (sgcc.engine.figures.problem_figures)
    # Why it shipped what it did (nothing: no candidates, none passed, none proven faster...).
    outcome = report.outcome() + (f"; {'; '.join(failed)}" if failed else "")
    if not report.candidates and not problem.replay:
        outcome += f" ({problem.name} has no directory of replay candidates)"
    row.update({"honest": report.honest, "candidates": len(report.candidates), "stages": report.stage_counts(),
                "outcome": outcome, "built": sum(c.id != "-" for c in report.candidates),
                # Refused by sgcc's own checks before linking (text screen, object check, control
                # flow): the papers would count the assembled ones compiled; none linked here.
                "refused": sum(c.id != "-" and c.stage in REFUSED_BEFORE_LINK for c in report.candidates),
                "attempts": attempts(report.candidates),
                "generators": generator_counts(report.candidates, set(report.shipped)),
                # What the accepted candidates changed (sgcc.engine.explain), and per shipped function.
                "changes": report.change_summary(),
                "shipped_changes": (report.final or {}).get("changes") or {},
                "shipped": str(out), "notes": report.notes + failed, "search_seconds": report.seconds,
                # clang's whole program against gcc's, when the clang generator ran (sgcc.engine.references)
                "clang": report.references.get("clang_whole_program"),
                "seconds": time.perf_counter() - started})
    return row


# --------------------------------------------------------------------------- the whole bench


@dataclass
class RequestMaker:
    """Each problem's engine request, from the command's settings. Picklable: with
    ``--cluster`` it travels to the node that runs the problem and is called there."""

    options: dict
    generators: str
    flags: list[str]
    jobs: int

    def __call__(self, problem: Problem, out: Path):
        from sgcc.engine import request_from_options

        given = dict(self.options)
        if not problem.replay:  # a problem without replay candidates: the other generators only
            given["generators"] = f"{self.generators},-replay"
        _, request = request_from_options(given, source=problem.source, flags=self.flags, tests=problem.tests,
                                          output=out, replay_dirs=problem.replay)
        # Problems run in parallel: each engine builds and tests with its share of the cores.
        request.jobs = self.jobs
        return request


#: The work the bench does per problem: the engine, the A-vs-A study, the perturbation study.
KINDS = ("engine", "aa", "perturb")


def run_one(kind: str, problem: Problem, make_request: Callable, opts: Options, workdir: Path,
            status: Status | None = None) -> dict:
    """One piece of work on one problem (on this machine or a cluster node); a study's
    failure is a row with ``error``, never the end of the bench."""
    if kind == "engine":
        return run_problem(problem, make_request, opts, workdir / "out", status)
    try:
        if kind == "aa":
            return studies.aa_study(problem, opts, workdir / problem.name)
        return studies.perturbation_study(problem, opts, workdir / problem.name)
    except SgccError as exc:
        return {"name": problem.name, "error": exc.message}


def cluster_task(kind: str, blob: bytes, name: str, replay: list[str], make_request: Callable, opts: Options,
                 keep_output: bool) -> dict:
    """:func:`run_one` as a Ray task on a node: the problem arrives as a tar
    (:func:`sgcc.lab.cluster.pack`) and is unpacked into scratch space removed afterwards; the
    row records the node, and carries the shipped program back when the driver keeps it."""
    from dataclasses import replace

    from sgcc.lab import cluster

    def work(scratch: Path) -> dict:
        cluster.unpack(blob, scratch / "p")
        d = scratch / "p" / name
        problem = Problem(name, d, d / f"{name}.c", d / "tests", [d / r for r in replay])
        (scratch / "out").mkdir()
        row = run_one(kind, problem, make_request, replace(opts, output_dir=None), scratch)
        row["node"] = cluster.here()
        if keep_output and "error" not in row:
            shipped = Path(row.get("shipped", ""))
            row["shipped_bytes"] = shipped.read_bytes() if shipped.is_file() else None
        return row

    return cluster.in_scratch(work)


def _progress(kind: str, row: dict) -> str:
    where = f" [node {row['node']['host']} {row['node']['id'][:8]}]" if "node" in row else ""
    if "error" in row:
        what = {"engine": "", "aa": "A-vs-A ", "perturb": "perturbing "}[kind]
        return f"sgcc bench: {what}{row['name']}: error: {row['error']}{where}"
    if kind == "engine":
        return (f"sgcc bench: {row['name']}: {row['candidates']} candidate(s), papers {row['speedup']:.3f}x, "
                f"shipped {row['honest']['speedup']:.3f}x ({row['seconds']:.1f} s){where}: {_outcome(row)}")
    if kind == "aa":
        return f"sgcc bench: A-vs-A {row['name']}: {row['speedup']:.3f}x{where}"
    return f"sgcc bench: perturbing {row['name']}: {row['valid']} valid variant(s){where}"


def _map(kind: str, problems: list[Problem], make_request: Callable, opts: Options, workdir: Path, *, log,
         session=None, journal=None) -> list[dict]:
    """``kind`` work on every problem: threads on this machine, or one Ray task per problem
    with ``session``; problems ``journal`` already holds are taken from it, not run again."""
    rows: list = [None] * len(problems)
    todo = []
    for i, p in enumerate(problems):
        earlier = journal.get(kind, p.name) if journal is not None else None
        if earlier is not None:
            rows[i] = earlier
            log(f"sgcc bench: {'' if kind == 'engine' else kind + ' '}{p.name}: finished in an earlier run "
                f"({journal.path})")
        else:
            todo.append(i)
    lock = threading.Lock()
    running: dict[str, Status] = {}

    def heartbeat() -> str:
        done = sum(r is not None for r in rows)
        now = time.monotonic()
        doing = ", ".join(f"{name} ({st.message[:90]}; {now - st.started:.0f} s)"
                          for name, st in list(running.items()))
        return f"sgcc bench: {done} of {len(problems)} done; running: {doing or 'none'}"

    beat = _Heartbeat(log, heartbeat)
    log = beat.log

    def finish(i: int, row: dict) -> None:
        with lock:
            rows[i] = row
            if journal is not None:
                journal.add(kind, problems[i].name, row)
            log(_progress(kind, row))

    if session is None:
        def one(i: int) -> None:
            status = running[problems[i].name] = Status()
            try:
                row = run_one(kind, problems[i], make_request, opts, workdir, status)
            finally:
                running.pop(problems[i].name, None)
            finish(i, row)

        # Each running problem's engine reports what it is doing; a quiet stretch gets a line.
        with beat, ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
            list(pool.map(one, todo))
        return rows
    from sgcc.lab import cluster

    out_dir = opts.output_dir if kind == "engine" else None  # where shipped programs are kept
    keep = out_dir is not None

    def landed(j: int, row: dict) -> None:
        i = todo[j]
        p = problems[i]
        data = row.pop("shipped_bytes", None)
        if kind == "engine":
            row["replay"] = [str(r) for r in p.replay]  # the driver's paths, not the node's scratch
            row["shipped"] = str(out_dir / p.name) if out_dir is not None and data is not None else None
        if out_dir is not None and data is not None:
            from sgcc.fsutil import atomic_write

            atomic_write(out_dir / p.name, data, mode=0o755)
        finish(i, row)

    def items():
        for i in todo:
            p = problems[i]
            yield (kind, cluster.pack(p.dir), p.name, [str(r.relative_to(p.dir)) for r in p.replay], make_request,
                   opts, keep)

    session.map(cluster_task, items(), landed)
    return rows


class _Heartbeat:
    """While open, ``log(say())`` whenever :data:`HEARTBEAT` seconds pass without a line from
    ``log`` (``log`` is wrapped: the lines it writes reset the clock)."""

    def __init__(self, log, say: Callable[[], str], every: float = HEARTBEAT):
        self.say, self.every = say, every
        self.last = time.monotonic()
        self.stop = threading.Event()
        self._log = log
        self.thread = threading.Thread(target=self._loop, name="sgcc-bench-heartbeat", daemon=True)

    def log(self, message: str) -> None:
        """Write a line (and restart the quiet clock)."""
        self.last = time.monotonic()
        self._log(message)

    def _loop(self) -> None:
        while not self.stop.wait(min(1.0, self.every / 4)):
            if time.monotonic() - self.last >= self.every:
                self.log(self.say())

    def __enter__(self) -> _Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def run(problems: list[Problem], make_request: Callable, opts: Options, *, log=None, session=None,
        journal=None) -> dict:
    """Run the bench; returns everything as a JSON-ready dict (see :func:`render`).

    ``session`` (a :class:`sgcc.lab.cluster.Session`) runs each problem as a task on a Ray
    cluster instead of in threads here; ``journal`` (a :class:`sgcc.lab.journal.Journal`)
    records each finished problem and supplies those an earlier run finished."""
    log = log or (lambda msg: None)
    started = time.perf_counter()
    where = f"on {session.address}" if session is not None else f"{max(1, opts.jobs)} at a time"
    log(f"sgcc bench: {len(problems)} problem(s), {where}; a line as each ends"
        + ("" if session is not None else f", and what the running ones do after {HEARTBEAT:.0f} s without one"))
    workdir = Path(tempfile.mkdtemp(prefix="sgcc-bench-"))
    try:
        (workdir / "out").mkdir()
        if opts.output_dir is not None:
            opts.output_dir.mkdir(parents=True, exist_ok=True)
        kw = {"log": log, "session": session, "journal": journal}
        rows = _map("engine", problems, make_request, opts, workdir, **kw)
        search_wall = time.perf_counter() - started
        result: dict = {"problems": rows, "paper": metrics.paper_row(rows),
                        "honest": metrics.honest_row(rows, opts.min_gain, seed=opts.seed or 0),
                        "generators": _sum_generators(rows), "changes": _sum_changes(rows),
                        "search_seconds": search_wall,
                        "settings": {"flags": opts.flags, "timing_rounds": opts.timing_rounds,
                                     "min_gain": opts.min_gain, "jobs": opts.jobs, "seed": opts.seed}}
        result["curves"] = curves(rows)
        if session is not None:
            result["cluster"] = {"address": session.address, "nodes": session.nodes}
        if journal is not None:
            result["resume"] = {"file": str(journal.path)}
        ok = [p for p, r in zip(problems, rows, strict=True) if "error" not in r]
        if opts.aa:
            t0 = time.perf_counter()
            sample = ok if len(ok) <= opts.aa_max else random.Random(opts.seed).sample(ok, opts.aa_max)
            done = _map("aa", sample, make_request, opts, workdir, **kw)
            result["aa"] = {"runs": [d for d in done if "error" not in d],
                            **metrics.noise_floor([d for d in done if "error" not in d], opts.min_gain),
                            "failed": [d for d in done if "error" in d], "seconds": time.perf_counter() - t0}
        if opts.perturbation:
            t0 = time.perf_counter()
            # Building and testing the variants overlaps; their timing takes the lock.
            done = _map("perturb", ok, make_request, opts, workdir, **kw)
            finished = [s for s in done if "error" not in s]
            prows = [{"compiled": s["valid"] > 0, "passed": s["valid"] > 0, "speedup": s["papers_best"],
                      "honest": s["honest"]} for s in finished]
            result["perturbation"] = {"count": opts.perturbations, "problems": finished,
                                      "failed": [s for s in done if "error" in s],
                                      "papers": metrics.paper_row(prows),
                                      "sgcc": {**metrics.honest_row(prows, opts.min_gain, seed=opts.seed or 0),
                                               "accepted": sum(s["accepted"] > 0 for s in finished)},
                                      "seconds": time.perf_counter() - t0}
        result["seconds"] = time.perf_counter() - started
        return result
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _sum_generators(rows) -> dict:
    total: dict[str, dict[str, int]] = {}
    for r in rows:
        for g, counts in r.get("generators", {}).items():
            t = total.setdefault(g, {k: 0 for k in counts})
            for k, v in counts.items():
                t[k] = t.get(k, 0) + v
    return total


def _sum_changes(rows) -> dict:
    """Accepted candidates per kind of change, over all problems (sgcc.engine.explain categories)."""
    total: dict[str, int] = {}
    for r in rows:
        for kind, n in (r.get("changes") or {}).items():
            total[kind] = total.get(kind, 0) + n
    return total


def curves(rows) -> dict:
    """Best-of-N and refinement-round curves from the problems' attempts."""
    per_problem = [[tuple(a) for a in r.get("attempts", [])] for r in rows]
    max_round = max((a[1] for p in per_problem for a in p), default=0)
    return {"best_of": metrics.curve(per_problem, BEST_OF, by="sample"),
            "rounds": metrics.curve(per_problem, list(range(max_round + 1)), by="round")}


def write_curves(result: dict, directory: Path) -> list[Path]:
    """The curves as PNG charts (papers' average speedup and test pass % against N / rounds)."""
    from sgcc.lab import plot

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for key, title, xlabel in (("best_of", "best of N", "N samples"), ("rounds", "refinement", "rounds")):
        pts = result["curves"][key]
        xs = [p["x"] for p in pts]
        speed = plot.line_chart({"avg speedup": [(p["x"], p["average"]) for p in pts if p["average"] is not None]},
                                title=f"{title}: avg speedup (papers)", xlabel=xlabel, xticks=xs)
        passed = plot.line_chart({"test pass %": [(p["x"], p["pass"]) for p in pts if p["pass"] is not None]},
                                 title=f"{title}: test pass %", xlabel=xlabel, xticks=xs)
        for suffix, data in (("speedup", speed), ("pass", passed)):
            path = directory / f"{key}-{suffix}.png"
            path.write_bytes(data)
            written.append(path)
    return written


# --------------------------------------------------------------------------- text


def _f(v, fmt="{:.3f}", none="-") -> str:
    return none if v is None else fmt.format(v)


def _outcome(row: dict) -> str:
    """The row's outcome (rows of older JSON files have none: what they say is rebuilt)."""
    if row.get("outcome"):
        return row["outcome"]
    if "error" in row:
        return f"error: {row['error']}"
    h = row["honest"]
    return "shipped " + ", ".join(h["functions"]) if h["functions"] else "gcc's program"


def render(result: dict) -> str:
    """The tables for people."""
    lines = []
    rows = result["problems"]
    # compiled/passed are the papers' per-problem figures; "-" where no candidate was built
    # (the papers' row counts that problem as neither). The outcome, last and never cut,
    # says what shipped or why gcc's program did.
    width = max([22, *(len(r["name"]) for r in rows)])
    # clang's whole program against gcc's, beside what sgcc shipped, when the clang generator ran.
    with_clang = any(r.get("clang") for r in rows)
    lines.append(f"{'problem':{width}} {'cands':>5} {'compiled':>8} {'passed':>6} {'papers':>7} {'shipped':>8} "
                 f"{'95% CI':>17}" + (f" {'clang':>6}" if with_clang else "") + f" {'secs':>6}  outcome")
    for r in rows:
        h = r["honest"]
        ci = f"[{h['ci_low']:.3f}, {h['ci_high']:.3f}]"
        built = r.get("built", r["candidates"])
        compiled = "yes" if r["compiled"] else "refused" if r.get("refused") else "no"
        passed = "yes" if r["passed"] else "no"
        if not built:
            compiled = passed = "-"
        clang = f" {_f((r.get('clang') or {}).get('speedup')):>6}" if with_clang else ""
        lines.append(f"{r['name']:{width}} {r['candidates']:5d} {compiled:>8} {passed:>6} "
                     f"{r['speedup']:7.3f} {h['speedup']:8.3f} {ci:>17}{clang} {r['seconds']:6.1f}  {_outcome(r)}")
    p, h = result["paper"], result["honest"]
    lines.append("compiled, passed, papers: the SuperCoder papers' per-problem figures (some candidate assembled "
                 "and linked; some passed every test; its best first measurement, clipped at 1); 'refused': "
                 "candidates were built but sgcc's static proof refused each one before linking; '-': none "
                 "was built. shipped: sgcc's program, re-measured (1.000: gcc's)")
    lines.append("")
    lines.append(f"papers' row ({p['problems']} problems): compile pass {_f(p['compile_pass'], '{:.1f}%')}  "
                 f"test pass {_f(p['test_pass'], '{:.1f}%')}  speedup p25/p50/p75 "
                 f"{_f(p['p25'], '{:.2f}')}/{_f(p['p50'], '{:.2f}')}/{_f(p['p75'], '{:.2f}')}  "
                 f"average {_f(p['average'])}x  (best candidate per problem, clipped at 1)")
    lines.append(f"sgcc's figures: shipped {h['shipped']} of {h['problems']}; geometric mean of the shipped "
                 f"programs' re-measured speedups {_f(h['geomean'])}x [{_f(h['ci_low'])}, {_f(h['ci_high'])}] "
                 f"(95% bootstrap over problems, unclipped); significant gain (lower bound > "
                 f"{1 + h.get('min_gain', 0.03):.2f}) in {h['significant']} of {h['problems']} "
                 f"({_f(h['significant_share'], '{:.1f}%')})")
    timed = [r["clang"]["speedup"] for r in rows if (r.get("clang") or {}).get("speedup")]
    if timed:
        import math

        geo = math.exp(sum(map(math.log, timed)) / len(timed))
        lines.append(f"clang's whole program against gcc's: geometric mean {geo:.3f}x over the {len(timed)} "
                     f"problems where it was timed (not timed, its output differing or clang failing, on "
                     f"{sum(1 for r in rows if r.get('clang') and 'speedup' not in r['clang'])})")
    aa = result.get("aa")
    if aa and aa.get("runs"):
        lines.append(f"A-vs-A noise floor ({len(aa['runs'])} baselines vs byte-identical copies): sgcc's estimates "
                     f"median {aa['median']:.3f}x, max {aa['max']:.3f}x, would accept {aa['accepted']} of "
                     f"{len(aa['runs'])} ({aa['accepted_share']:.0f}%); papers' method: clipped mean "
                     f"{aa['papers_clipped_mean']:.3f}x, max ratio {aa['papers_max']:.3f}x")
    pt = result.get("perturbation")
    if pt:
        pp, ps = pt["papers"], pt["sgcc"]
        lines.append(f"random perturbation, best of {pt['count']} (papers' method: sequential, 3 warm-up + 10 "
                     f"runs, mean wall, clipped): avg {_f(pp['average'])}x  p25/p50/p75 {_f(pp['p25'], '{:.2f}')}/"
                     f"{_f(pp['p50'], '{:.2f}')}/{_f(pp['p75'], '{:.2f}')}  test pass {_f(pp['test_pass'], '{:.1f}%')}")
        lines.append(f"random perturbation, best of {pt['count']} (sgcc's method: paired CPU time, best accepted "
                     f"re-measured): accepted in {ps['accepted']} of {ps['problems']}, shipped {ps['shipped']} of "
                     f"{ps['problems']}, geometric mean {_f(ps['geomean'])}x [{_f(ps['ci_low'])}, {_f(ps['ci_high'])}]")
        lines.append("  per problem (valid variants, papers' best-of-N, sgcc accepted/shipped): " + ", ".join(
            f"{s['name']} {s['valid']} {s['papers_best']:.2f}x {s['accepted']}/{'yes' if s['shipped'] else 'no'}"
            for s in pt["problems"]))
    for what, part in (("A-vs-A", aa), ("perturbation", pt)):
        for f in (part or {}).get("failed", []):
            lines.append(f"  {what} skipped for {f['name']}: {f['error']}")
    c = result.get("curves")
    if c:
        lines.append("best-of-N (papers' average speedup / test pass %): " + "  ".join(
            f"N={q['x']}: {_f(q['average'])}x/{_f(q['pass'], '{:.0f}%')}" for q in c["best_of"]))
        lines.append("refinement rounds: " + "  ".join(
            f"round<={q['x']}: {_f(q['average'])}x/{_f(q['pass'], '{:.0f}%')}" for q in c["rounds"]))
    gens = result.get("generators") or {}
    for g, t in gens.items():
        lines.append(f"generator {g}: offered {t['offered']}, built {t['built']}, compiled {t['compiled']}, "
                     f"passed {t['passed']}, accepted {t['accepted']}, shipped {t['shipped']}")
    changes = result.get("changes") or {}
    if any(changes.values()):
        lines.append("what accepted candidates changed (a candidate may count in several): " + ", ".join(
            f"{kind} {n}" for kind, n in changes.items() if n))
        shipped = [f"{r['name']}/{fn}: {', '.join(kinds)}" for r in rows
                   for fn, kinds in (r.get("shipped_changes") or {}).items() if kinds]
        if shipped:
            lines.append("  shipped: " + "; ".join(shipped))
    search = sum(r.get("search_seconds", 0.0) for r in rows)
    lines.append(f"search time: {search:.1f} s in the engine (summed over problems), "
                 f"{result['search_seconds']:.1f} s wall; whole bench {result.get('seconds', 0.0):.1f} s")
    cl = result.get("cluster")
    if cl:
        per: dict[str, int] = {}
        for r in rows:
            node = r.get("node")
            key = f"{node['host']} ({node['id'][:8]})" if node else "an earlier run"
            per[key] = per.get(key, 0) + 1
        kind = cl["nodes"][0] if cl["nodes"] else {"cpu": "?", "compiler": "?"}
        lines.append(f"cluster {cl['address']}: {len(cl['nodes'])} node(s), all {kind['cpu']} with "
                     f"{kind['compiler']}; problems timed per node: "
                     + ", ".join(f"{k} {n}" for k, n in sorted(per.items())))
    return "\n".join(lines)
