"""Building a benchmark dataset of C problems, the papers' way (``sgcc dataset build``).

The papers evaluate on CodeNet programs whose tests are *recorded*: each program runs on its
inputs and what it prints becomes the expected output. A program only belongs in such a
dataset if those outputs can judge a candidate, so :func:`build`

1. finds the problems in a source directory (:func:`discover`), reading every file
   defensively (sizes capped, no symlinks, no special files: the sources may come from
   anywhere);
2. compiles each at ``-O0`` and ``-O3`` (real gcc, ``-lm``) and runs both on every input in
   the sgcc :class:`~sgcc.verify.box.sandbox.Sandbox`; the ``-O0`` binary runs twice with different
   environment sizes, and its output becomes the expected output. A problem is *dropped*,
   with its reason recorded, when it does not compile, exits non-zero, crashes, times out,
   prints different output on the two runs (non-determinism), or when ``-O3`` prints
   something else than ``-O0`` (undefined behaviour: no single "right" output exists);
3. measures line and branch coverage of the inputs with gcov (``--coverage -O0``);
4. times ``-O0`` against ``-O3`` on the heaviest input with :func:`sgcc.verify.timing.rounds.measure`
   (paired, interleaved CPU time) and, with ``keep_top``, keeps the problems where ``-O3``
   gained most (the papers' selection of programs with room for optimization);
5. writes the dataset atomically: ``OUT/NAME/NAME.c``, ``OUT/NAME/tests/T.in`` and ``T.out``
   (the layout of ``examples/programs``, so ``sgcc optimize`` can use it directly), any
   ``candidates/`` and ``candidates-native/`` directories, and ``OUT/dataset.json`` with the
   statistics.

Building and testing run in parallel (``jobs`` threads, each driving subprocesses); timing
runs serially and takes the machine-wide timing lock.

The work is split by job: :mod:`sgcc.lab.dataset_inputs` reads the source directory (1),
:mod:`sgcc.lab.dataset_checks` compiles, runs, measures and times (2-4),
:mod:`sgcc.lab.dataset_model` holds the records and limits; this module drives the build
and writes the dataset (5).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sgcc import proc
from sgcc.errors import SgccError
from sgcc.lab.dataset_checks import prepare_problem, time_problem
from sgcc.lab.dataset_inputs import discover, read_capped, read_problem
from sgcc.lab.dataset_model import (
    FORMAT,
    FORMAT_VERSION,
    MAX_CANDIDATE,
    MAX_CANDIDATE_FILES,
    MAX_OUTPUT,
    NAME,
    Coverage,
    Dropped,
    Outcome,
    Problem,
)
from sgcc.verify.box.sandbox import Sandbox

# --------------------------------------------------------------------------- writing


def _check_destination(out: Path, force: bool) -> None:
    """Refuse to replace anything but an earlier dataset, and that only with ``force``."""
    if not os.path.lexists(out):
        return
    if out.is_symlink() or not out.is_dir():
        raise SgccError(f"{out} exists and is not a directory", hint="choose another --out")
    if not any(out.iterdir()):
        return
    if not is_dataset(out):
        raise SgccError(f"{out} exists and is not an sgcc dataset (no dataset.json of ours): not replacing it",
                        hint="choose another --out, or remove that directory yourself")
    if not force:
        raise SgccError(f"dataset {out} already exists", hint="pass --force to replace it")


def is_dataset(path: Path) -> bool:
    """Whether ``path`` holds a dataset written by :func:`build` (its dataset.json says so)."""
    try:
        data = json.loads(read_capped(Path(path) / "dataset.json", 64 << 20, "dataset file"))
    except (SgccError, ValueError):
        return False
    return isinstance(data, dict) and data.get("format") == FORMAT


def _copy_tree(src: Path, dst: Path, budget: list[int]) -> None:
    """Copy a candidates directory: regular files and directories only, capped in size and count."""
    dst.mkdir()
    for entry in sorted(os.scandir(src), key=lambda e: e.name):
        if entry.name.startswith(".") or not NAME.match(entry.name):
            continue
        if entry.is_dir(follow_symlinks=False):
            _copy_tree(Path(entry.path), dst / entry.name, budget)
        elif entry.is_file(follow_symlinks=False):
            budget[0] -= 1
            if budget[0] < 0:
                raise SgccError(f"too many candidate files under {src} (limit {MAX_CANDIDATE_FILES})")
            (dst / entry.name).write_bytes(read_capped(Path(entry.path), MAX_CANDIDATE, "candidate"))


def _write_problem(outcome: Outcome, root: Path) -> None:
    """DATASET/NAME/NAME.c, tests/T.in and T.out, and the candidate directories."""
    d = root / outcome.name
    (d / "tests").mkdir(parents=True)
    (d / f"{outcome.name}.c").write_bytes(outcome.source_text)
    for test in outcome.tests:
        assert test.expected_stdout is not None  # a kept problem's tests were recorded (Sandbox.record)
        (d / "tests" / f"{test.name}.in").write_bytes(test.stdin)
        (d / "tests" / f"{test.name}.out").write_bytes(test.expected_stdout)
    budget = [MAX_CANDIDATE_FILES]
    for sub, src in sorted(outcome.extras.items()):
        _copy_tree(src, d / sub, budget)


def _speedup(o: Outcome) -> float:
    """A kept problem's -O0/-O3 speedup (time_problem drops one it cannot time)."""
    assert o.speedup is not None
    return o.speedup.speedup


def _problem_dict(o: Outcome) -> dict:
    est = o.speedup
    return {
        "name": o.name,
        "tests": [t.name for t in o.tests],
        "input_bytes": sum(len(t.stdin) for t in o.tests),
        "heaviest": o.heaviest,
        "o3_cpu_seconds": round(o.o3_cpu.get(o.heaviest, 0.0), 4),
        "speedup_o0_o3": None if est is None else {
            "estimate": round(est.speedup, 3), "low": round(est.low, 3), "high": round(est.high, 3),
            "confidence": est.confidence, "rounds": est.rounds, "reps": est.reps,
        },
        "coverage": o.coverage.to_dict() if o.coverage else None,
        "candidates": sorted(o.extras),
        **({"node": o.node} if o.node else {}),
    }


def summarize(kept: list[Outcome], dropped: list[Outcome], unselected: list[Outcome]) -> dict:
    """Totals over the kept problems: coverage pooled and per-problem mean, speedup spread."""
    covered = [o.coverage for o in kept if o.coverage is not None]  # every kept problem's (else: dropped)
    speedups = sorted(o.speedup.speedup for o in kept if o.speedup)
    cov = Coverage()
    for c in covered:
        cov.lines_executed += c.lines_executed
        cov.lines_total += c.lines_total
        cov.branches_taken += c.branches_taken
        cov.branches_total += c.branches_total
    return {
        "kept": len(kept),
        "dropped": len(dropped),
        "not_selected": len(unselected),
        "tests": sum(len(o.tests) for o in kept),
        "coverage": cov.to_dict(),
        # The papers' figures are most likely means over programs; both are given.
        "coverage_mean": {
            "line_pct": round(statistics.fmean(c.line_pct for c in covered), 2) if covered else 0.0,
            "branch_pct": round(statistics.fmean(c.branch_pct for c in covered), 2) if covered else 0.0,
        },
        "speedup_o0_o3": {
            "min": round(speedups[0], 3), "median": round(statistics.median(speedups), 3),
            "max": round(speedups[-1], 3), "geomean": round(statistics.geometric_mean(speedups), 3),
        } if speedups else None,
    }


def _compiler_version(compiler: str) -> str:
    try:
        result = proc.run([compiler, "--version"], timeout=30)
    except SgccError:
        return ""
    return result.stdout.decode("utf-8", "replace").splitlines()[0] if result.ok and result.stdout else ""


# --------------------------------------------------------------------------- the whole build


def cluster_task(name: str, source: bytes, inputs: dict[str, bytes], compiler: str, timeout: float, rounds: int,
                 min_sample: float, seed: int | None) -> Outcome:
    """One problem, built, tested, covered and timed on a cluster node (a Ray task): its files
    arrive as data and are written to scratch space removed afterwards. The outcome comes
    back without binaries and with the node recorded in ``node``."""
    from sgcc.lab import cluster

    def work(scratch: Path) -> Outcome:
        os.chmod(scratch, 0o711)  # as root, coverage builds run as nobody (see build)
        (scratch / "in").mkdir()
        (scratch / "in" / f"{name}.c").write_bytes(source)
        for test, data in inputs.items():
            (scratch / "in" / f"{test}.in").write_bytes(data)
        problem = Problem(name, scratch / "in" / f"{name}.c", {t: scratch / "in" / f"{t}.in" for t in inputs})
        (scratch / "work").mkdir(mode=0o711)
        os.chmod(scratch / "work", 0o711)
        with Sandbox(timeout=timeout, output_limit=MAX_OUTPUT) as sandbox:
            outcome = prepare_problem(problem, compiler, sandbox, scratch / "work", timeout)
            if not outcome.dropped:
                time_problem(outcome, sandbox, rounds, min_sample, seed)
        outcome.binaries = None
        outcome.node = cluster.here()
        return outcome

    return cluster.in_scratch(work)


def _on_cluster(session, problems: list[Problem], compiler: str, timeout: float, rounds: int, min_sample: float,
                seed: int | None, status) -> list[Outcome]:
    """Every problem as a task on the cluster; a problem whose files cannot be read is dropped here."""
    outcomes: list = [None] * len(problems)
    todo = []
    for i, p in enumerate(problems):
        try:
            source, tests = read_problem(p)
        except Dropped as exc:
            outcomes[i] = Outcome(p.name, extras=dict(p.extras)).drop(exc.stage, exc.reason)
            continue
        todo.append((i, source, {t.name: t.stdin for t in tests}))
    done = [0]

    def landed(j: int, outcome: Outcome) -> None:
        i = todo[j][0]
        outcome.extras = dict(problems[i].extras)  # copied from here when the dataset is written
        outcomes[i] = outcome
        done[0] += 1
        host = outcome.node["host"] if outcome.node else "?"  # cluster_task records its node
        status(f"built, tested and timed {done[0]}/{len(todo)}: {outcome.name} on {host}")

    session.map(cluster_task, ((problems[i].name, source, inputs, compiler, timeout, rounds, min_sample, seed)
                               for i, source, inputs in todo), landed)
    return outcomes


def _locally(problems: list[Problem], compiler: str, timeout: float, rounds: int, min_sample: float,
             seed: int | None, jobs: int, work: Path, status) -> list[Outcome]:
    """Build and test in ``jobs`` threads, then time one problem after another."""
    with Sandbox(timeout=timeout, output_limit=MAX_OUTPUT) as sandbox:
        done = [0]

        def prepare(problem: Problem) -> Outcome:
            outcome = prepare_problem(problem, compiler, sandbox, work, timeout)
            done[0] += 1
            status(f"built and tested {done[0]}/{len(problems)}: {problem.name}")
            return outcome

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            outcomes = list(pool.map(prepare, problems))
        ready = [o for o in outcomes if not o.dropped]
        for i, o in enumerate(ready, 1):
            status(f"timing -O0 vs -O3 {i}/{len(ready)}: {o.name}")
            time_problem(o, sandbox, rounds, min_sample, seed)
    return outcomes


def build(src_dir: Path, out: Path, *, keep_top: int | None = None, jobs: int = 0, timeout: float = 10.0,
          rounds: int = 6, min_sample: float = 0.05, compiler: str = "gcc", force: bool = False,
          seed: int | None = None, progress=None, session=None) -> dict:
    """Build a dataset from ``src_dir`` into ``out``; return what dataset.json holds.

    ``keep_top`` keeps only the N kept problems with the largest -O0→-O3 speedup (by the
    point estimate); ``jobs`` parallel problems (0: one per core); ``timeout`` seconds per
    run; ``rounds`` paired timing rounds per problem (a handful: the O0/O3 gap is large);
    ``force`` replaces an existing dataset (never anything else); ``session`` (a
    :class:`sgcc.lab.cluster.Session`) builds, tests and times each problem as a task on a
    Ray cluster, one node per problem, and records which node timed it.
    """
    src_dir, out = Path(src_dir), Path(out)
    if keep_top is not None and keep_top < 1:
        raise SgccError("--keep-top must be at least 1")
    if rounds < 2:
        raise SgccError("timing needs at least 2 rounds")
    _check_destination(out, force)  # fail before minutes of work, and again before the rename
    if shutil.which(compiler) is None and not os.path.isfile(compiler):
        raise SgccError(f"compiler {compiler} not found")
    status = progress.status if progress else (lambda message: None)
    started = time.monotonic()

    problems, dropped = discover(src_dir)
    if not problems and not dropped:
        raise SgccError(f"no C programs in {src_dir}",
                        hint="put NAME.c with NAME.in (or NAME/NAME.c with NAME/tests/*.in) there")
    jobs = jobs or os.cpu_count() or 1
    work = Path(tempfile.mkdtemp(prefix="sgcc-dataset-"))
    # 0711 down to each coverage directory: as root, coverage builds run as nobody, who must
    # reach (not list) their own directory.
    os.chmod(work, 0o711)
    try:
        if session is not None:
            outcomes = _on_cluster(session, problems, compiler, timeout, rounds, min_sample, seed, status)
        else:
            outcomes = _locally(problems, compiler, timeout, rounds, min_sample, seed, jobs, work, status)
        dropped += [o for o in outcomes if o.dropped]
        kept = [o for o in outcomes if not o.dropped]
        unselected: list[Outcome] = []
        if keep_top is not None and len(kept) > keep_top:
            ranked = sorted(kept, key=lambda o: (-_speedup(o), o.name))
            kept, unselected = sorted(ranked[:keep_top], key=lambda o: o.name), ranked[keep_top:]
        status(f"writing {out}")
        data = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "source": str(src_dir),
            "compiler": _compiler_version(compiler),
            "settings": {"keep_top": keep_top, "timeout": timeout, "rounds": rounds, "min_sample": min_sample},
            "seconds": round(time.monotonic() - started, 1),
            "totals": summarize(kept, dropped, unselected),
            "problems": [_problem_dict(o) for o in kept],
            "dropped": [{"name": o.name, "stage": o.stage, "reason": o.reason}
                        for o in sorted(dropped, key=lambda o: o.name)],
            "not_selected": [
                {"name": o.name, "speedup_o0_o3": round(_speedup(o), 3)} for o in unselected
            ],
        }
        if session is not None:
            data["cluster"] = {"address": session.address, "nodes": session.nodes}
        _write_dataset(out, kept, data, force)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if progress:
        progress.done()
    return data


def _write_dataset(out: Path, kept: list[Outcome], data: dict, force: bool) -> None:
    """Write into a temporary directory beside ``out``, then rename it into place.

    Readers (a bench running meanwhile) see the old dataset or the new one, never half of
    one; an interrupted build leaves only a hidden ``.NAME.tmp-*`` directory.
    """
    parent = out.parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=parent))
    try:
        for o in kept:
            _write_problem(o, tmp)
        (tmp / "dataset.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        os.chmod(tmp, 0o755)
        _check_destination(out, force)
        if os.path.lexists(out):
            old = parent / f".{out.name}.old-{os.getpid()}"
            os.rename(out, old)
            os.rename(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, out)
    except OSError as exc:
        raise SgccError(f"cannot write the dataset {out}", cause=exc) from exc
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def format_summary(data: dict) -> str:
    """The human summary ``sgcc dataset build`` prints."""
    t = data["totals"]
    lines = [f"{t['kept']} problems kept, {t['dropped']} dropped"
             + (f", {t['not_selected']} not in the top {data['settings']['keep_top']}" if t["not_selected"] else "")
             + f"; {t['tests']} tests"]
    c, m = t["coverage"], t["coverage_mean"]
    lines.append(f"coverage: lines {c['line_pct']:.1f}% ({c['lines_executed']}/{c['lines_total']}), "
                 f"branches {c['branch_pct']:.1f}% ({c['branches_taken']}/{c['branches_total']}); "
                 f"mean per problem {m['line_pct']:.1f}% lines, {m['branch_pct']:.1f}% branches")
    if t["speedup_o0_o3"]:
        s = t["speedup_o0_o3"]
        lines.append(f"-O0 -> -O3 speedup (CPU time): min {s['min']:.2f}x, median {s['median']:.2f}x, "
                     f"max {s['max']:.2f}x, geomean {s['geomean']:.2f}x")
    width = max([len(p["name"]) for p in data["problems"]] + [len(d["name"]) for d in data["dropped"]] + [4])
    for p in data["problems"]:
        s, cv = p["speedup_o0_o3"], p["coverage"]
        lines.append(f"  {p['name']:<{width}}  {len(p['tests'])} tests  O0->O3 {s['estimate']:5.2f}x "
                     f"[{s['low']:.2f}, {s['high']:.2f}]  lines {cv['line_pct']:5.1f}%  "
                     f"branches {cv['branch_pct']:5.1f}%")
    for d in data["dropped"]:
        lines.append(f"  {d['name']:<{width}}  DROPPED ({d['stage']}): {d['reason']}")
    return "\n".join(lines)
