"""The function-level proof of accepted candidates (docs/proof.md).

After a candidate passed every test and timing accepted it, its functions are run against
gcc's on captured and mutated entry states (:mod:`sgcc.verify.function.funcdiff`); a difference
refuses it with the state in the report. The capture (a build of gcc's program that dumps
each function's entry state, run on the visible tests) happens at the first candidate that
needs it, so a run with no winner pays nothing; gcc's outcome on each state is remembered
for every later candidate. Running after timing keeps its cost on winners only.

Each accepted candidate records how it was proven (``CandidateResult.proof``): "tested on N
function states (M mutated)", or "whole-program tests only" and why (the tests never call the
function; an instruction or relocation the emulator lacks). The ``proof`` setting asks for
more: ``tested`` refuses a candidate any of whose functions went untested; ``bounded`` and
``equivalent`` also need the SMT tier (:mod:`sgcc.verify.function.smt`, the ``proof`` extra): every
replaced function must be "proven equivalent" (``equivalent``), or at least "equivalent up to
bound k" or equivalent under a stated assumption (``bounded``); a function the tier cannot
decide refuses the candidate with the reason, a solver's counterexample with the failing state.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from sgcc.candidates import WHOLE_UNIT
from sgcc.errors import SgccError
from sgcc.stages import Stage

if TYPE_CHECKING:
    from sgcc.verify.box.sandbox import Sandbox, TestCase
    from sgcc.verify.function.funcdiff import FunctionTester

LEVELS = ("default", "tested", "bounded", "equivalent")

#: The candidate's refusal for each rule a function-level difference breaks
#: (:data:`sgcc.verify.function.emulate.RULES`): the report's reason, the state in its detail.
REFUSALS = {
    "footprint": "footprint: touches memory gcc's function does not touch, or does not finish under the rule, "
                 "on a function state",
    "cost": "cost: slower than gcc's function beyond the sizes that were timed",
    "undecided": "undecided: a function state every candidate is tested on was not decided "
                 "(the machine kept the emulator off the CPU)",
    "differs": "differs from gcc's function on a function state",
}


def footprint_unavailable(request, program) -> str | None:
    """Why the footprint rule cannot run for ``program`` at all (None: it can, on the function
    states its tests give): project mode has no capture build of a project's binaries yet, and
    ``function_states = 0`` turns the function-level test off."""
    if program.link is not None:
        return "project mode has no function states yet"
    if request.function_states <= 0:
        return "function-level testing is off (function_states = 0)"
    return None


class FunctionProof:
    """Function-level tests for one engine run."""

    def __init__(self, request, program, sandbox: Sandbox, tests: list[TestCase], workdir, note=None):
        self.req = request
        self.program = program
        self.sandbox = sandbox
        self.tests = tests
        self.workdir = workdir
        self.note = note
        self._lock = threading.Lock()
        self._tester: FunctionTester | None = None
        self._failed: str | None = None
        self.summary: dict = {"capture_seconds": 0.0, "states": {}, "candidates": 0, "seconds": 0.0}
        if request.proof in ("bounded", "equivalent"):
            from sgcc.verify.function import smt  # light: angr itself is imported only when a candidate is proven

            smt.require()  # "needs the proof extra", at the CLI, before any candidate is built
            self.summary["smt_seconds"] = 0.0

    @property
    def enabled(self) -> bool:
        return footprint_unavailable(self.req, self.program) is None

    def _get_tester(self):
        if self._tester is not None or self._failed is not None:
            return self._tester
        from sgcc.verify.function import funcdiff, funcstate

        names = [u.name for u in self.program.asm.units]
        if self.note is not None:
            self.note("capturing function entry states")
        started = time.perf_counter()
        try:
            capture = funcstate.capture(self.program, self.sandbox, self.tests, self.workdir / "funcstate",
                                        self.req.compiler, names)
            self._tester = funcdiff.FunctionTester(
                capture, self.program.obj, self.program.source_text, states=self.req.function_states,
                seconds=self.req.function_seconds, seed=self.req.seed or 0, declarations=self._declarations())
            self.summary["states"] = {k: len(v) for k, v in capture.states.items()}
        except (SgccError, OSError) as exc:
            self._failed = f"no function states: {exc.message if isinstance(exc, SgccError) else exc}"
        except ImportError as exc:  # unicorn missing: the default install has it; say so
            self._failed = f"no function states: the emulator is not installed ({exc.name})"
        self.summary["capture_seconds"] = round(time.perf_counter() - started, 3)
        if self._failed:
            self.summary["failed"] = self._failed
        return self._tester

    def _declarations(self) -> str:
        """The source preprocessed with its own flags: the prototypes of the externals its
        functions call (the function-level test compares the arguments they declare)."""
        from sgcc import proc

        r = proc.run([self.req.compiler, *self.program.flags, "-E", "-P", str(self.program.source)], timeout=120,
                     cwd=self.program.compile_cwd)
        return r.stdout.decode(errors="replace") if r.ok else ""

    def check(self, res, cand_obj, replacements, untrusted: frozenset = frozenset()) -> bool:
        """Prove ``res``'s functions (its object ``cand_obj``, replacing ``replacements``; the
        units of ``untrusted`` were not written by gcc and are held to the footprint rule too);
        on a difference, or when the proof level asks for more than could be done, stop ``res``
        and return False. Records ``res.proof``."""
        if not self._test(res, cand_obj, replacements, untrusted):
            return False
        if self.req.proof in ("bounded", "equivalent"):
            return self._smt(res, cand_obj, replacements)
        return True

    def _smt(self, res, cand_obj, replacements) -> bool:
        """The SMT tier for ``res``'s functions at the levels ``bounded`` and ``equivalent``."""
        from sgcc.verify.function import smt

        level = self.req.proof
        names = sorted(u.name for u in self.program.asm.units) if WHOLE_UNIT in replacements else sorted(replacements)
        verdicts = []
        for name in names:
            try:
                v = smt.prove(self.program.obj, cand_obj, name, self.program.source_text,
                              bound=self.req.proof_bound, seconds=self.req.proof_seconds)
            except Exception as exc:  # noqa: BLE001 - the tier must never end a run; the candidate is refused
                v = smt.SmtVerdict(name, "undecided", reason=f"the SMT tier failed: {exc}"[:200])
            verdicts.append(v)
            self.summary["smt_seconds"] = round(self.summary.get("smt_seconds", 0.0) + v.seconds, 3)
            if v.status != "proven" or v.assumptions:
                break  # the first function short of the level decides the candidate
        res.meta["smt"] = [v.to_dict() for v in verdicts]
        tested = res.proof
        levels = [v.level() for v in verdicts]
        text = levels[0] if len(set(levels)) == 1 and len(verdicts) == 1 else \
            "; ".join(f"{v.function}: {v.level()}" for v in verdicts)
        last = verdicts[-1] if verdicts else None
        short = last is None or last.status in ("refuted", "undecided") or (
            level == "equivalent" and (last.status != "proven" or last.assumptions))
        # Accepted: the SMT verdict first (the strongest claim); refused: what held, then why not.
        res.proof = (f"{tested}; SMT tier: {text}" if short else f"{text}; {tested}") if tested else text
        if last is None:
            res.stop(Stage.PROVE, f"proof = {level}, but the candidate replaces no function the SMT tier can check")
            return False
        if last.status == "refuted":
            res.stop(Stage.PROVE, "differs from gcc's function on a solver's counterexample",
                     last.render_counterexample())
            return False
        if last.status == "undecided":
            res.stop(Stage.PROVE, f"proof = {level}, but {last.function} is not decided by the SMT tier "
                                 f"({last.reason}); it is {tested or 'tested only'}")
            return False
        if level == "equivalent" and (last.status != "proven" or last.assumptions):
            res.stop(Stage.PROVE, f"proof = equivalent, but {last.function} is only {last.level()}")
            return False
        return True

    def _test(self, res, cand_obj, replacements, untrusted: frozenset = frozenset()) -> bool:
        """The function-level differential test (the levels default and tested, and the first
        step of bounded and equivalent), with the footprint rule for the ``untrusted`` units:
        a function gcc did not write is accepted only once the rule held on its states."""
        level = self.req.proof
        why_not = footprint_unavailable(self.req, self.program)
        if why_not is not None:
            # Project mode (no capture build of a project's binaries yet) or function_states = 0:
            # no function states, so the footprint rule cannot run (docs/proof.md, what remains).
            res.proof = f"whole-program tests only ({why_not})"
            if untrusted and not self._waived(res, why_not):
                return False
            return self._require(res, level, why_not)
        with self._lock:
            tester = self._get_tester()
            if tester is None:
                res.proof = f"whole-program tests only ({self._failed})"
                if untrusted and not self._waived(res, self._failed or ""):
                    return False
                return self._require(res, level, self._failed or "")
            names = sorted(tester.capture.states) if WHOLE_UNIT in replacements else sorted(replacements)
            held = frozenset(names) if WHOLE_UNIT in untrusted else frozenset(untrusted) & frozenset(names)
            try:
                verdict = tester.check(cand_obj, names, untrusted=held)
            except Exception as exc:  # noqa: BLE001 - the emulator must never end a run; the candidate is refused
                res.proof = "whole-program tests only"
                res.stop(Stage.PROVE, f"the function-level test could not run: {exc}")
                return False
        self.summary["candidates"] += 1
        self.summary["seconds"] = round(self.summary["seconds"] + verdict.seconds, 3)
        res.meta["function_test"] = verdict.to_dict()
        res.proof = verdict.level()
        if not verdict.ok:
            m = verdict.mismatch
            res.stop(Stage.PROVE, REFUSALS[m.rule], m.render())
            return False
        unchecked = {f: w for f, w in verdict.untested.items() if f in held}
        if unchecked:
            # The rule is positive: what could not be held to it is refused, never assumed.
            res.stop(Stage.PROVE, "footprint: not checked, and gcc did not write this code ("
                     + "; ".join(f"{f}: {w}" for f, w in unchecked.items()) + ")")
            return False
        if verdict.untested or not verdict.tested:
            why = "; ".join(f"{f}: {w}" for f, w in verdict.untested.items()) or "no function tested"
            return self._require(res, level, why)
        return True

    def _waived(self, res, why: str) -> bool:
        """Code gcc did not write, where the footprint rule could not run (``why``): refused
        (the rule is positive: accepted only once it held), unless ``footprint = waived``,
        which accepts it on the tests alone and says so in its proof."""
        if self.req.footprint != "waived":
            res.stop(Stage.PROVE, f"footprint: not checked, and gcc did not write this code ({why}; "
                                  "footprint = waived accepts it on the tests alone)")
            return False
        res.proof += "; the footprint rule did not run (footprint = waived)"
        return True

    @staticmethod
    def _require(res, level: str, why: str) -> bool:
        if level == "tested":
            res.stop(Stage.PROVE, f"proof = tested, but not every function was tested on function states ({why})")
            return False
        return True
