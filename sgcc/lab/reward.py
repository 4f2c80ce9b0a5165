"""The papers' training rewards, computed by sgcc's own engine (for VERL PPO/GRPO).

A *problem* is a directory in the layout of ``examples/programs`` and of ``sgcc dataset
build`` (``NAME/NAME.c`` and ``NAME/tests/T.in`` with optional ``T.out``) plus the name of
one function of its ``gcc -O3`` assembly. A *solution* is a model's raw answer to the papers'
prompt for that function (:mod:`sgcc.llm.prompt`). Validation is exactly the engine's
(:class:`sgcc.engine.Engine`), so a model is trained against the judge it will face:

1. the baseline is built once per problem and process (``gcc -S``, assemble, link), its
   tests' expected outputs recorded from it, and kept in an in-process cache;
2. the answer is parsed (:func:`sgcc.llm.prompt.parse_answer`: exactly one assembly block);
3. the assembly replaces the function's unit in the baseline's file, is screened (hostile
   directives, sections, symbols, instructions beyond the target ISA, registers its callers
   rely on under ``-fipa-ra``), assembled under limits, checked against the baseline object
   and linked (:meth:`sgcc.engine.Pipeline.build_candidate`);
4. *every* test runs in the sandbox (not stopping at the first failure: partial credit needs
   the count);
5. when all pass, the candidate is timed against the baseline with
   :func:`sgcc.verify.timing.rounds.measure` (paired, interleaved CPU time, machine-wide lock):
   ``speedup = t(P) / t(P')``, the point estimate, unclipped.

The two rewards (SuperCoder section 3.3 and its ablation):

* Speedup-Only (``speedup_only``, the papers' best): ``r = speedup`` if every test passes,
  else ``0`` (an answer with no assembly, one refused by the screen or that does not build
  all get 0);
* Correctness-Guided (``correctness_guided``): ``r = -1`` if the answer fails to compile
  (no assembly in it, refused by the screen, does not assemble, link or pass the object
  checks), the fraction of tests passed if some fail, ``1 + alpha * speedup`` if all pass.
  The papers tried alpha = 5 and 10 against their default ("negligible effect") without
  stating the default; sgcc's is :data:`DEFAULT_ALPHA` = 1.

:func:`compute_score` has the signature VERL calls a custom reward function with
(``custom_reward_function.path`` / ``.name``); see ``docs/training.md``.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc.errors import SgccError
from sgcc.stages import Stage

if TYPE_CHECKING:
    from sgcc.verify.box.sandbox import Sandbox

SPEEDUP_ONLY = "speedup_only"
CORRECTNESS_GUIDED = "correctness_guided"
REWARDS = (SPEEDUP_ONLY, CORRECTNESS_GUIDED)
#: alpha of the Correctness-Guided reward when neither extra_info nor SGCC_REWARD_ALPHA sets it.
DEFAULT_ALPHA = 1.0
#: A solution's stage beyond the engine's (sgcc.stages.Stage): no usable assembly in the
#: answer, and every test passed.
ANSWER, PASSED = "answer", "passed"
#: Stages at which a solution "failed to compile" (Correctness-Guided reward -1).
NOT_COMPILED = (ANSWER, Stage.SCREEN, Stage.ASSEMBLE, Stage.CHECK, Stage.LINK)


@dataclass
class Verdict:
    """What the engine found out about one solution.

    ``stage``: ``answer`` (no usable assembly in the text), ``screen`` (refused by the
    text screen), ``assemble``, ``check`` (refused by the object checks), ``link``, ``test`` (built, some tests fail)
    or ``passed`` (every test passes; ``speedup`` is then measured unless timing was off).
    """

    stage: str
    reason: str = ""
    tests_passed: int = 0
    tests_total: int = 0
    speedup: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None

    @property
    def compiled(self) -> bool:
        return self.stage not in NOT_COMPILED

    @property
    def passed(self) -> bool:
        return self.stage == PASSED

    @property
    def fraction(self) -> float:
        return self.tests_passed / self.tests_total if self.tests_total else 0.0


def speedup_only(v: Verdict) -> float:
    """The papers' Speedup-Only reward: the speedup if every test passes, else 0. A correct
    solution that was not timed counts as no faster (1.0)."""
    if not v.passed:
        return 0.0
    s = v.speedup if v.speedup is not None else 1.0
    return s if math.isfinite(s) and s > 0 else 0.0


def correctness_guided(v: Verdict, alpha: float = DEFAULT_ALPHA) -> float:
    """The papers' Correctness-Guided reward: -1 if it fails to compile, the fraction of
    tests passed if some fail, 1 + alpha * speedup if all pass."""
    if not v.compiled:
        return -1.0
    if not v.passed:
        return v.fraction
    s = v.speedup if v.speedup is not None else 1.0
    return 1.0 + alpha * (s if math.isfinite(s) and s > 0 else 0.0)


def reward(v: Verdict, kind: str = SPEEDUP_ONLY, alpha: float = DEFAULT_ALPHA) -> float:
    if kind == SPEEDUP_ONLY:
        return speedup_only(v)
    if kind == CORRECTNESS_GUIDED:
        return correctness_guided(v, alpha)
    raise SgccError(f"unknown reward {kind!r}", hint=f"one of {', '.join(REWARDS)}")


# --------------------------------------------------------------------------- problems


def problem_source(directory: Path) -> Path:
    """The C source of a problem directory: ``NAME/NAME.c``, else its only ``*.c``."""
    directory = Path(directory)
    named = directory / f"{directory.name}.c"
    if named.is_file():
        return named
    sources = sorted(p for p in directory.glob("*.c") if p.is_file())
    if len(sources) != 1:
        raise SgccError(f"{directory} is not a problem directory (expected {directory.name}.c or one .c file)")
    return sources[0]


def default_flags(source_text: str) -> list[str]:
    """``-O3``, and libm when the source includes math.h."""
    flags = ["-O3"]
    if "<math.h>" in source_text:
        flags += ["-lm"]
    return flags


class Problem:
    """One problem's baseline, built once, and the engine that judges solutions for it.

    Thread-safe: solutions are built and tested in parallel; timing takes the machine-wide
    timing lock, so one measurement runs at a time.
    """

    def __init__(self, directory: Path, function: str, flags: list[str] | None = None, *, compiler: str = "gcc",
                 isa: str = "flags", timing_rounds: int = 10, min_sample: float = 0.05, test_timeout: float = 10.0,
                 seed: int | None = None):
        from sgcc.engine import Engine, Request
        from sgcc.verify.box import sandbox as sandboxmod

        self.directory = Path(directory).resolve()
        self.function = function
        source = problem_source(self.directory)
        self.flags = list(flags) if flags else default_flags(source.read_text(errors="replace"))
        tests_dir = self.directory / "tests"
        if not tests_dir.is_dir():
            raise SgccError(f"problem {self.directory} has no tests/ directory")
        self.engine = Engine(Request(source=source, flags=self.flags, tests=tests_dir,
                                     output=self.directory / ".sgcc-reward-unused", isa=isa, compiler=compiler,
                                     timing_rounds=timing_rounds, min_sample=min_sample, test_timeout=test_timeout,
                                     seed=seed, profile=False))
        self.sandbox: Sandbox | None = None  # None once closed
        try:
            self.program = self.engine.build_baseline()
            if function not in self.program.defined:
                raise SgccError(f"no function {function} in the -O3 assembly of {source}",
                                hint=f"functions: {', '.join(sorted(self.program.defined))}")
            self.sandbox = sandboxmod.Sandbox(timeout=test_timeout)
            self.tests = self.sandbox.record(self.program.binary, sandboxmod.load_tests(tests_dir))
            if not self.tests:
                raise SgccError(f"problem {self.directory} has no tests")
            base = self.sandbox.check(self.program.binary, self.tests)
            if base.first_failure is not None:
                raise SgccError(f"the baseline of {self.directory} fails its own test {base.first_failure.test}")
        except BaseException:
            self.close()
            raise
        self.unit_text = self.program.asm.unit(function).text

    def evaluate(self, solution: str, *, timing: bool = True, parsed: bool = False) -> Verdict:
        """Judge a model's raw answer (or, with ``parsed=True``, bare assembly text)."""
        from sgcc.engine import CandidateResult
        from sgcc.llm.prompt import parse_answer
        from sgcc.verify.timing.rounds import TimingRunFailed

        if parsed:
            assembly = solution
        else:
            answer = parse_answer(solution)
            if answer.assembly is None:
                return Verdict(ANSWER, answer.problem)
            assembly = answer.assembly
        sandbox = self.sandbox
        if sandbox is None:
            raise SgccError(f"the problem {self.directory} is closed", hint="evaluate before close()")
        pipeline = self.engine.pipeline
        cid, where = pipeline.new_candidate_dir()
        try:
            res = CandidateResult(id=cid, function=self.function, generator="reward")
            binary = pipeline.build_candidate(self.program, {self.function: assembly}, where, res)
            if binary is None:
                return Verdict(res.stage, res.reason)
            outcome = sandbox.check(binary, self.tests, stop_on_first_failure=False)
            v = Verdict(Stage.TEST, "", outcome.passed, outcome.total)
            if outcome.first_failure is not None:
                v.reason = f"test {outcome.first_failure.test} failed: {outcome.first_failure.reason}"
                return v
            v.stage = PASSED
            if timing:
                try:
                    _, est = pipeline.measure(sandbox, self.tests, self.program.binary, binary)
                except TimingRunFailed as exc:
                    # Correct on the tests, wrong on a timing run (another environment size):
                    # one failed run out of the tests.
                    return Verdict(Stage.TEST, f"failed while being timed: {exc.message}",
                                   max(0, outcome.total - 1), outcome.total)
                v.speedup, v.ci_low, v.ci_high = est.speedup, est.low, est.high
            return v
        finally:
            shutil.rmtree(where, ignore_errors=True)

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None
        self.engine.close()


_PROBLEMS: dict[tuple, Problem] = {}
_LOCKS: dict[tuple, threading.Lock] = {}
_GUARD = threading.Lock()


def problem(directory: Path | str, function: str, flags: list[str] | None = None, **settings) -> Problem:
    """The cached :class:`Problem` (built on first use in this process)."""
    key = (str(Path(directory).resolve()), function, tuple(flags or ()), tuple(sorted(settings.items())))
    with _GUARD:
        found = _PROBLEMS.get(key)
        if found is not None:
            return found
        lock = _LOCKS.setdefault(key, threading.Lock())
    with lock:
        with _GUARD:
            found = _PROBLEMS.get(key)
        if found is None:
            found = Problem(Path(directory), function, flags, **settings)
            with _GUARD:
                _PROBLEMS[key] = found
        return found


@atexit.register
def close_all() -> None:
    """Close every cached problem (sandboxes, scratch directories)."""
    with _GUARD:
        problems = list(_PROBLEMS.values())
        _PROBLEMS.clear()
    for p in problems:
        try:
            p.close()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


# --------------------------------------------------------------------------- VERL


def parse_ground_truth(ground_truth) -> dict:
    """The problem a dataset row names: ``{"problem": DIR, "function": NAME, ...}`` (a dict
    or its JSON text, as :mod:`sgcc.lab.export` writes it). With ``SGCC_DATASET_ROOT`` set, the
    problem is ``$SGCC_DATASET_ROOT/<name>`` (a dataset copied to another machine)."""
    if isinstance(ground_truth, (bytes, bytearray)):
        ground_truth = ground_truth.decode()
    if isinstance(ground_truth, str):
        try:
            ground_truth = json.loads(ground_truth)
        except ValueError as exc:
            raise SgccError("the ground truth is not sgcc's (JSON with problem and function)", cause=exc) from exc
    if not isinstance(ground_truth, dict) or not ground_truth.get("function") or \
            not (ground_truth.get("problem") or ground_truth.get("name")):
        raise SgccError("the ground truth must name a problem directory and a function")
    gt = dict(ground_truth)
    root = os.environ.get("SGCC_DATASET_ROOT")
    if root and gt.get("name"):
        gt["problem"] = str(Path(root) / gt["name"])
    return gt


def _setting(name: str, extra_info: dict, kwargs: dict, env: str, default, cast):
    for source in (extra_info, kwargs):
        if isinstance(source, dict) and source.get(name) is not None:
            return cast(source[name])
    value = os.environ.get(env)
    return cast(value) if value not in (None, "") else default


def _flag(value) -> bool:
    from sgcc.config import parse_bool

    return parse_bool(value)  # an unknown value is an error, as in every other setting


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """VERL's custom reward function: the reward of one model answer.

    ``ground_truth`` names the problem (see :func:`parse_ground_truth`); ``solution_str``
    is the model's raw answer. Settings come from ``extra_info`` (per row), then keyword
    arguments (VERL's ``custom_reward_function.reward_kwargs``), then the environment:

    * ``reward`` / ``SGCC_REWARD``: ``speedup_only`` (default) or ``correctness_guided``;
    * ``alpha`` / ``SGCC_REWARD_ALPHA``: Correctness-Guided alpha (default 1);
    * ``timing`` / ``SGCC_REWARD_TIMING``: time correct solutions (default on; off: a
      correct solution counts as speedup 1);
    * ``timing_rounds`` / ``SGCC_REWARD_ROUNDS`` (default 10), ``test_timeout`` /
      ``SGCC_REWARD_TEST_TIMEOUT`` seconds per test run (default 10), ``isa`` /
      ``SGCC_REWARD_ISA`` (``flags`` or ``native``);
    * ``return_dict`` / ``SGCC_REWARD_DICT``: return ``{"score": r, ...}`` with the pass
      fraction, speedup and whether it compiled (VERL logs the extra keys), not a float.

    A problem whose baseline cannot be built raises :class:`~sgcc.errors.SgccError`: the
    dataset is broken, which no reward should hide.
    """
    extra = extra_info if isinstance(extra_info, dict) else {}
    kind = _setting("reward", extra, kwargs, "SGCC_REWARD", SPEEDUP_ONLY, str)
    if kind not in REWARDS:
        raise SgccError(f"unknown reward {kind!r}", hint=f"one of {', '.join(REWARDS)}")
    alpha = _setting("alpha", extra, kwargs, "SGCC_REWARD_ALPHA", DEFAULT_ALPHA, float)
    timing = _setting("timing", extra, kwargs, "SGCC_REWARD_TIMING", True, _flag)
    rounds = _setting("timing_rounds", extra, kwargs, "SGCC_REWARD_ROUNDS", 10, int)
    timeout = _setting("test_timeout", extra, kwargs, "SGCC_REWARD_TEST_TIMEOUT", 10.0, float)
    isa = _setting("isa", extra, kwargs, "SGCC_REWARD_ISA", "flags", str)
    as_dict = _setting("return_dict", extra, kwargs, "SGCC_REWARD_DICT", False, _flag)
    gt = parse_ground_truth(ground_truth)
    prob = problem(gt["problem"], gt["function"], gt.get("flags"), isa=isa, timing_rounds=rounds,
                   test_timeout=timeout)
    verdict = prob.evaluate(solution_str if isinstance(solution_str, str) else str(solution_str), timing=timing)
    score = reward(verdict, kind, alpha)
    if not as_dict:
        return score
    return {"score": score, "pass_fraction": verdict.fraction, "compiled": float(verdict.compiled),
            "passed": float(verdict.passed), "speedup": float(verdict.speedup or 0.0)}


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, **kwargs) -> list:
    """VERL's batch reward function (``reward_model.reward_manager=batch``): the rewards of
    many answers, in order, each as :func:`compute_score` computes it.

    With a cluster (the ``cluster`` keyword or ``$SGCC_CLUSTER``: ``HOST:PORT``,
    ``ray://HOST:PORT`` or ``auto``; inside VERL, which runs on Ray, its connection is
    reused), every answer is a Ray task: nodes judge answers in parallel, each timing one at
    a time under its own timing lock (docs/cluster.md). The problem directories the ground
    truths name must then exist at the same path on every node (shared storage). Without
    one, answers are judged one after another here.
    """
    n = len(solution_strs)
    extras = list(extra_infos) if extra_infos is not None else [None] * n
    address = str(kwargs.pop("cluster", None) or os.environ.get("SGCC_CLUSTER", "")).strip()
    args = [(data_sources[i], solution_strs[i], ground_truths[i], extras[i], kwargs) for i in range(n)]
    if address in ("", "none"):
        return [_score_task(*a) for a in args]
    from sgcc.lab import cluster

    scores: list = [None] * n
    cluster.shared_session(address).map(_score_task, args, scores.__setitem__)
    return scores


def _score_task(data_source, solution_str, ground_truth, extra_info, kwargs):
    """One answer's reward (on a cluster node, a Ray task)."""
    return compute_score(data_source, solution_str, ground_truth, extra_info, **kwargs)
