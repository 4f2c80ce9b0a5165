"""One candidate through the stages: ``screen`` (text screen), ``assemble``, ``check``
(object checks, instruction set), ``control`` (the control-flow proof, with the
information-flow rule for untrusted units), ``check`` (registers callers rely on), ``link``,
``test`` (the sandbox), ``time`` (paired, interleaved rounds against the baseline), then
:meth:`Pipeline.prove`, the function-level proof of what timing accepted
(:mod:`sgcc.engine.funcproof`).

Building and testing are safe to run in parallel; timing takes the machine-wide lock
(:mod:`sgcc.verify.timing.rounds`), so one measurement runs at a time.
"""

from __future__ import annotations

import hashlib
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from sgcc import proc
from sgcc.candidates import WHOLE_UNIT, Candidate
from sgcc.engine.report import CandidateResult
from sgcc.engine.request import Program, Request
from sgcc.gcc import args as gccargs
from sgcc.stages import Stage

if TYPE_CHECKING:  # imported when the engine makes one (it brings the emulator's modules)
    from collections.abc import Callable

    from sgcc.engine.funcproof import FunctionProof
    from sgcc.verify.box.sandbox import Sandbox, TestCase


class Pipeline:
    """Builds, tests and times candidates for one request, each in its own numbered
    directory under ``workdir`` (``c001``, ``c002``...)."""

    def __init__(self, request: Request, workdir: Path | None = None):
        self.req = request
        self.workdir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="sgcc-opt-"))
        self._counter = 0
        self._lock = threading.Lock()
        # Tests a candidate must also pass before it is accepted, which the search never shows
        # (sgcc.engine.proof); set by the driver. Counts of candidates that failed them.
        self.hidden_tests: list = []
        self.hidden_failures = {"held_out": 0, "generated": 0}
        # The function-level proof of candidates timing accepted (sgcc.engine.funcproof); set by the driver.
        self.functions: FunctionProof | None = None
        # The progress display (set by the driver), and every wait for the timing lock this
        # run made: (when it began, time.perf_counter(); seconds; who held the lock).
        self.note: Callable[[str], None] = lambda message: None
        self.lock_waits: list[tuple[float, float, str]] = []

    def new_candidate_dir(self) -> tuple[str, Path]:
        """A fresh candidate id and its private directory (thread-safe)."""
        with self._lock:
            self._counter += 1
            cid = f"c{self._counter:03d}"
        path = self.workdir / cid
        path.mkdir()
        return cid, path

    def build_candidate(self, program: Program, replacements: dict[str, str], where: Path,
                        result: CandidateResult, untrusted: frozenset | None = None) -> Path | None:
        """Substitute, assemble, check and link; return the binary or None (result says why).
        ``untrusted``: the replaced units an untrusted generator wrote, which the control-flow
        proof also holds to the information-flow rule; None (the default): all of them."""
        from sgcc.verify.static import assembler, controlflow, objcheck, textscreen

        for name, text in replacements.items():
            # The program's own function names may look like C library ones (read, send...);
            # a whole file defines the file's variables (the object check holds them to gcc's).
            verdict = textscreen.screen_text(text, may_define=program.defined, writable_data=name == WHOLE_UNIT)
            if not verdict.ok:
                result.stop(Stage.SCREEN, verdict.reason, verdict.detail)
                return None
        try:
            if WHOLE_UNIT in replacements:
                asm_text = replacements[WHOLE_UNIT]
            else:
                asm_text = program.asm.join(replacements)
        except KeyError as exc:
            result.stop(Stage.SCREEN, f"no function named {exc.args[0]} in the program")
            return None
        asm = where / "cand.s"
        asm.write_text(asm_text, encoding="utf-8", errors="surrogateescape")
        obj = where / "cand.o"
        verdict = assembler.assemble(asm, obj, gcc=self.req.compiler, flags=program.asm_flags)
        if not verdict.ok:
            result.stop(Stage.ASSEMBLE, verdict.reason, verdict.detail)
            return None
        verdict = objcheck.check_object(obj, program.obj, isa=program.target)
        if not verdict.ok:
            result.stop(Stage.CHECK, verdict.reason, verdict.detail)
            return None
        if untrusted is None:
            untrusted = frozenset(replacements)
        verdict = controlflow.verdict(obj, program.obj, True if WHOLE_UNIT in untrusted else untrusted)
        if not verdict.ok:
            result.stop(Stage.CONTROL, verdict.reason, verdict.detail)
            return None
        if "-fno-ipa-ra" not in self.req.flags and WHOLE_UNIT not in replacements:
            from sgcc.verify.static import clobbers

            # Only gcc's callers that stay count: a candidate may bring its callers along
            # (and a whole-unit candidate brings all of them).
            replaced = frozenset(replacements)
            for name in replacements:
                extra = clobbers.extra_clobbers(obj, program.obj, name, replaced=replaced)
                if extra:
                    result.stop(Stage.CHECK, f"{name} changes {clobbers.describe(extra)}, which gcc's version "
                                             "leaves alone and its callers here may rely on (-fipa-ra)")
                    return None
        binary = where / "cand"
        if program.link is not None:
            linked, error = program.link(asm_text, obj, where, replacements)
            if linked is None:
                # A project's candidate is built and its own test command run in that build.
                failed = error.startswith("the test command")
                result.stop(Stage.LINK, "the project's tests fail with it" if failed else
                            "the project does not build with it", error[:800])
            return linked
        r = proc.run(gccargs.link_argv(self.req.compiler, self.req.flags, [str(obj)], str(binary)), timeout=120,
                     limits=proc.Limits(cpu=60, file_size=256 << 20))
        if not r.ok:
            lines = [ln for ln in r.stderr.decode(errors="replace").splitlines()
                     if "error" in ln.lower() or "undefined reference" in ln or "multiple definition" in ln]
            result.stop(Stage.LINK, "does not link", "\n".join(lines[:5])[:800])
            return None
        return binary

    def check_hidden(self, sandbox: Sandbox, binary: Path) -> str | None:
        """Run ``binary`` on the tests the search does not see (held out, generated); None if
        it matches gcc's program on all, else which kind failed (never what it printed)."""
        from sgcc.engine.proof import GENERATED_PREFIX

        if not self.hidden_tests:
            return None
        outcome = sandbox.check(binary, self.hidden_tests)
        if outcome.first_failure is None:
            return None
        generated = outcome.first_failure.test.startswith(GENERATED_PREFIX)
        with self._lock:
            self.hidden_failures["generated" if generated else "held_out"] += 1
        return "a generated input" if generated else "a held-out test"

    def evaluate(self, program: Program, candidate: Candidate, sandbox: Sandbox,
                 tests: list[TestCase]) -> tuple[CandidateResult, Path | None]:
        """Everything but timing for one candidate (safe to run in parallel): its result, and
        its binary when it passed every test."""
        cid, where = self.new_candidate_dir()
        candidate.id = cid
        result = CandidateResult(id=cid, function=candidate.function, generator=candidate.generator,
                                 origin=candidate.origin, meta=dict(candidate.meta))
        started = time.perf_counter()
        binary = None
        if candidate.invalid:  # the generator knows it is no assembly (a model's answer without any)
            result.stop(Stage.SCREEN, candidate.invalid)
        else:
            binary = self.build_candidate(program, candidate.replacements(), where, result,
                                          untrusted=untrusted_units(candidate))
        if binary is not None:
            outcome = sandbox.check(binary, tests)
            result.tests_passed, result.tests_total = outcome.passed, outcome.total
            if outcome.first_failure is not None:
                f = outcome.first_failure
                result.stop(Stage.TEST, f"test {f.test} failed: {f.reason}", failure_detail(f))
                binary = None
            else:
                hidden = self.check_hidden(sandbox, binary)
                if hidden is not None:
                    # No detail: what the hidden tests hold must not reach a generator's feedback.
                    result.stop(Stage.TEST, f"differs from gcc's program on {hidden}")
                    binary = None
        result.seconds = time.perf_counter() - started
        return result, binary

    def prove(self, res: CandidateResult, cand: Candidate) -> bool:
        """The function-level proof of an accepted candidate (sgcc.engine.funcproof): False,
        with ``res`` stopped and the failing state in its detail, when it does not hold."""
        if self.functions is None:
            return True
        return self.functions.check(res, self.workdir / res.id / "cand.o", cand.replacements(), untrusted_units(cand))

    def measure(self, sandbox: Sandbox, tests: list[TestCase], base: Path, cand: Path, *, screening: bool = False,
                rounds: int | None = None):
        """Time ``cand`` against ``base`` on new rounds: (accepted?, estimate). ``screening``
        (a search candidate, not a winner being confirmed) stops a comparison early once it
        clearly cannot clear the minimum gain, or clearly does (a screening acceptance is
        only a candidate for re-measurement on full, fresh rounds). Rounds are spread over
        the sandbox's worlds; a re-measurement (not ``screening``) runs full rounds in each
        world and must clear the minimum gain in each (:mod:`sgcc.verify.box.worlds`). Raises
        :class:`sgcc.verify.timing.rounds.TimingRunFailed` when a timed run fails. ``rounds``
        (default: the ``timing_rounds`` setting) is what a confirmation the budget can afford
        more of asks for (:meth:`sgcc.engine.budget.Budget.confirm_rounds`)."""
        from sgcc.verify.timing import rounds as timing

        on_wait, done = self.lock_waiter()
        est = timing.measure(
            timing.runner(sandbox, base, tests),
            timing.runner(sandbox, cand, tests),
            rounds=rounds or self.req.timing_rounds,
            min_sample_seconds=self.req.min_sample,
            seed=self.req.seed,
            futile_below=(1 + self.req.min_gain) if screening else None,
            settled_above=(1 + self.req.min_gain) if screening else None,
            worlds=len(sandbox.worlds) or 1,
            each_world=not screening,
            on_wait=on_wait,
        )
        done(est.lock_wait)
        return timing.decide(est, self.req.min_gain, each_world=not screening), est

    def lock_waiter(self) -> tuple[Callable[[str], Callable[[float], None]], Callable[[float], None]]:
        """``(on_wait, done)`` for one timing: ``on_wait(holder)`` (the timing lock is busy)
        says on the progress display who holds it, and once the lock is taken, after how
        long; ``done(seconds)``, when the timing is over, records the wait, if there was
        one, in :attr:`lock_waits` (the report's ``budget.lock_wait``)."""
        heard: list[tuple[float, str]] = []

        def on_wait(holder: str) -> Callable[[float], None]:
            heard.append((time.perf_counter(), holder))
            self.note(waiting_message(holder))
            return lambda seconds: self.note(f"took the timing lock after waiting {seconds:.1f} s; timing")

        def done(seconds: float) -> None:
            if heard:
                with self._lock:
                    self.lock_waits.append((heard[0][0], seconds, heard[0][1]))

        return on_wait, done

    def explain(self, program: Program, res: CandidateResult, cand: Candidate) -> None:
        """Record what an accepted candidate changed (sgcc.engine.explain); never fails the run."""
        per_fn = changes(program, self.workdir / res.id / "cand.o", cand.replacements())
        from sgcc.engine.explain import merge

        res.changes = merge(per_fn) if per_fn else []
        if set(per_fn) != {res.function}:
            res.meta["changes_by_function"] = per_fn


def waiting_message(holder: str) -> str:
    """The progress line of a timing that waits for the timing lock (``holder``: who has it)."""
    import os

    if holder.startswith(f"pid {os.getpid()} "):  # sgcc bench: another problem of this very run
        return "waiting for the timing lock: another problem of this run is timing"
    return ("waiting for the timing lock: another sgcc run is timing (" + (holder or "holder unknown")
            + "); timings take turns on a machine, and the budget's clock keeps running")


def untrusted_units(cand: Candidate) -> frozenset:
    """The units of ``cand`` the information-flow rule applies to: all, unless gcc wrote them."""
    return frozenset() if cand.trusted else frozenset(cand.replacements())


def candidate_key(cand: Candidate) -> tuple[str, str, bool]:
    """What makes two candidates the same: the units they replace, their texts, and whether
    gcc wrote them (a cached winner re-offered as untrusted and refused by the information-flow
    rule is still tried when a trusted generator proposes the same text)."""
    text = cand.text + "".join(f"\0{k}\0{v}" for k, v in sorted(cand.also.items()))
    return cand.function, hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest(), cand.trusted


def changes(program: Program, cand_obj: Path, replacements: dict) -> dict[str, list[str]]:
    """Per replaced function, what changed in its machine code against the baseline's
    (sgcc.engine.explain categories; a whole-unit candidate: every function that changed)."""
    try:
        from sgcc.engine import explain

        if WHOLE_UNIT in replacements:
            return explain.explain_objects(program.obj, cand_obj)
        return explain.classify_objects(program.obj, cand_obj, sorted(replacements))
    except Exception:  # noqa: BLE001 - explaining must never fail a run
        return {name: ["unknown"] for name in replacements}


def failure_detail(f) -> str:
    """Excerpts of a failed test (sgcc.verify.box.sandbox.Failure), one repr per line (never what it printed)."""
    parts = [f"input: {f.stdin!r}"]
    if f.expected:
        parts.append(f"expected: {f.expected!r}")
    return "\n".join(parts)
