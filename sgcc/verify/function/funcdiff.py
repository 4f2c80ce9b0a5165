"""Prove the function, not only the program: a candidate's functions against gcc's, on the
entry states the tests really produce (:mod:`sgcc.verify.function.funcstate`) and on many mutations
of them, in an emulator (:mod:`sgcc.verify.function.emulate`).

:class:`FunctionTester` is made once per program (after the capture) and asked once per
candidate. gcc's outcome on each state is remembered, so each later candidate of a function
costs only its own runs. The verdict says how many states each function was tested on, or
why it could not be (no state captured: the tests never call it; an object the emulator
cannot load; an instruction it lacks), and on a difference, the state.
"""

from __future__ import annotations

import gc
import random
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sgcc.errors import SgccError

if TYPE_CHECKING:  # the emulator (unicorn) is imported only when a test runs
    from sgcc.verify.function.emulate import Machine, Mismatch, Outcome

#: Default states per function and candidate (captured + mutated), and seconds.
DEFAULT_STATES = 600
DEFAULT_SECONDS = 4.0
#: Where each kind of state's share of the time ends (fractions of the seconds): as captured,
#: cheap mutations, sizes far beyond the tests', random mutations.
PHASE_ENDS = (0.2, 0.45, 0.85, 1.0)
#: Mutations with sizes far beyond the tests' per function (on the smallest state; they cost most).
MAX_LARGE = 16
#: Other states a size beyond the tests' is moved to when gcc's function faults on it.
MAX_MOVES = 3
#: The states every candidate is tested on whatever the load (as captured, each kind of cheap
#: value once, sizes beyond the tests') may take up to this many times the seconds.
GUARANTEED_FACTOR = 5.0
#: The sizes far beyond the tests' get, all together, this many times gcc's longest run on a
#: state as captured, and at least LARGE_SHARE times the seconds (seconds on the CPU, as every
#: share: _cpu), so a busy machine tests as many sizes as a quiet one, and a function whose work per
#: element is large (bitrev's 32 steps a word: 12 s a size) does not spend minutes on them.
LARGE_FACTOR = 40.0
LARGE_SHARE = 0.25
#: ... and at most LARGE_MOST times the seconds: a captured state near gcc's one-second limit
#: (isqrt's 0..500000, 0.7-0.9 s a run) made that 30-35 s, all of it spent on one size on which
#: gcc's function never finishes (its whole range of 2.8e9 roots). Smallest first, the sizes
#: just beyond the tests' (where a wrong region hides: popcount's 4/3 of the largest count)
#: come first and are reached within it.
LARGE_MOST = 1.5
#: Most seconds gcc's function may take on one guaranteed size far beyond the tests'.
LARGE_SECONDS = 60.0
#: gcc's function gets at most this many times its run on the same state as captured (and at
#: least MUTATION_FLOOR seconds) on a mutation that is not a size far beyond the tests'. Such a
#: mutation changes values, not the scale of the work; one that makes the work explode (matmul's
#: n set to 2007, collatz from 0, a long n of 2^40) would otherwise cost GCC_SECONDS each, only
#: to be dropped.
MUTATION_FACTOR = 20.0
#: gcc's outcomes that say the work was too much for the emulator, not what the function does.
DID_NOT_FINISH = ("timeout", "unsupported: too much memory")
MUTATION_FLOOR = 0.02
#: The cost rule (FunctionTester._cost): the reference is a state as captured gcc's function runs
#: in at most COST_SECONDS; a candidate whose instruction count against gcc's grows, on that
#: state scaled 2x and 4x, past COST_GROWTH times its ratio there, and past COST_FLOOR, is refused.
COST_SECONDS = 0.2
#: The pass with the footprint hook gets this many times ``seconds`` of its own (and, for the
#: states as captured and the base's cheap mutations, up to GUARANTEED_FACTOR times that).
FOOTPRINT_SHARE = 1.0
#: Most bytes of one read span repeated past its end for a scaled state.
COST_TILE = 8 << 20
COST_GROWTH = 2.0
COST_FLOOR = 1.25


def _cpu() -> float:
    """The clock every share of the test's time is counted on: this thread's CPU time (the
    emulator runs in it). On the wall clock a neighbour's load shrank which states were tried:
    a candidate wrong past 2^24 words was accepted at a load of 8 on 2 CPUs, its sizes dropped
    as "gcc's function does not finish in time", and under `pytest -n 4` a wrong candidate's
    runs on the state that shows it were dropped as kept off the CPU. Counted on the CPU, what
    is decided is the same on a busy machine as on a quiet one; the wall clock only bounds the
    wait (emulate.WALL_PER_CPU), and a guaranteed state left undecided by it refuses."""
    return time.thread_time()


#: Most seconds a candidate's run on one state may take (a longer allowance leaves it undecided).
CANDIDATE_SECONDS = 15.0
#: A run that reached its wall-clock ceiling with little of its limit on the CPU (an Outcome
#: ``starved``: another process had the CPU) is run again, at most PREEMPTED_RUNS times in all,
#: and then counted undecided: on a state every candidate is tested on, that refuses the
#: candidate. Only a limit the run used up on the CPU is the code's own doing.
PREEMPTED_RUNS = 3
#: gcc's runs under the footprint hook at least this long tell the candidate's slowdown there.
RATIO_MIN_SECONDS = 0.01
#: States gcc's function takes longer than this on (as captured) are run as captured only.
EXPENSIVE = 0.05
#: Seconds (at least) for the run that watches whether gcc's function reads what it writes.
OVERLAP_SECONDS = 2.0
#: Separate written ranges watched one by one; past them, their whole span.
MAX_WATCHED = 16
#: Most bytes watched in all (two bytes of bookkeeping each).
MAX_WATCHED_BYTES = 64 << 20


@dataclass
class FunctionVerdict:
    """The function-level test of one candidate."""

    tested: dict = field(default_factory=dict)  # function -> (states, of which mutated)
    untested: dict = field(default_factory=dict)  # function -> why
    mismatch: Mismatch | None = None
    seconds: float = 0.0
    dropped: dict = field(default_factory=dict)  # function -> {why: mutated states dropped}
    cost: dict = field(default_factory=dict)  # function -> the cost rule's counts (FunctionTester._cost)
    results_only: dict = field(default_factory=dict)  # function -> sizes compared without the footprint hook

    @property
    def ok(self) -> bool:
        return self.mismatch is None

    def level(self) -> str:
        """How the candidate's functions were proven, in the report's words."""
        if self.mismatch is not None:
            if self.mismatch.rule == "undecided":
                return "refused: a state every candidate is tested on was not decided"
            return "refused: differs from gcc's function on a function state"
        if not self.tested:
            if self.untested:
                return "whole-program tests only (" + "; ".join(f"{f}: {why}" for f, why in self.untested.items()) + ")"
            return "whole-program tests only"
        n = sum(t for t, _ in self.tested.values())
        m = sum(k for _, k in self.tested.values())
        text = f"tested on {n} function states ({m} mutated)"
        d = sum(sum(v.values()) for v in self.dropped.values())
        if d:
            text += f"; {d} mutated states dropped (" + ", ".join(
                sorted({why for v in self.dropped.values() for why in v})) + ")"
        k = sum(self.results_only.values())
        if k:
            text += (f"; {k} size(s) beyond the tests' compared for results only (the footprint rule's "
                     "time for them ran out)")
        if self.untested:
            text += "; " + ", ".join(f"{f}: whole-program tests only ({why})" for f, why in self.untested.items())
        return text

    def to_dict(self) -> dict:
        return {"level": self.level(), "tested": {f: {"states": t, "mutated": m} for f, (t, m) in self.tested.items()},
                "untested": dict(self.untested), "seconds": round(self.seconds, 3),
                "dropped": {f: dict(v) for f, v in self.dropped.items() if v},
                "mismatch": self.mismatch.render() if self.mismatch is not None else None,
                "cost": {f: c for f, c in self.cost.items() if c},
                "results_only": dict(self.results_only)}


class FunctionTester:
    """Differential tests of candidates against gcc's object ``base_obj`` on ``capture``'s states."""

    def __init__(self, capture, base_obj, source_text: str, *, states: int = DEFAULT_STATES,
                 seconds: float = DEFAULT_SECONDS, seed: int = 0, declarations: str = ""):
        from sgcc.asm.obj import read_object

        self.capture = capture
        self.base_path = base_obj
        self.base = read_object(base_obj)
        self.source_text = source_text
        # How many arguments each external takes, from its prototype (``declarations``: the
        # source preprocessed, so the C library's headers are in it): the call comparison
        # compares exactly those (emulate.ARG_COUNT where no prototype was found).
        from sgcc.verify.function.emulate import declared_arity

        self.arity = declared_arity(declarations or source_text)
        self.states = states
        self.seconds = seconds
        self.seed = seed
        self._gcc: dict[tuple, Outcome] = {}  # (function, state index, mutation) -> gcc's Outcome
        self._base_vex: str | None = None
        self._overlap: dict[tuple, str] = {}  # same key -> "overlap", "clean" or "undecided"
        self._bounds: dict[tuple, bool] = {}  # same key -> gcc's function touched a heap header
        #: function -> the cost rule's counts for the last candidate checked (timed state, beyond)
        self.cost: dict[str, dict] = {}
        #: function -> sizes beyond the tests' the last candidate was compared on without the
        #: footprint hook (its own time was spent)
        self.results_only: dict[str, int] = {}

    def check(self, cand_obj, functions, *, untrusted: frozenset | bool = True) -> FunctionVerdict:
        """Test every function of ``functions`` that has captured states. The functions of
        ``untrusted`` (True: all) are also held to the footprint rule
        (:mod:`sgcc.verify.function.footprint`): gcc's own variants need not be, and run
        several times faster without its memory hook."""

        return self._check(cand_obj, functions, untrusted)

    def _check(self, cand_obj, functions, untrusted: frozenset | bool) -> FunctionVerdict:
        from sgcc.asm.obj import read_object

        verdict = FunctionVerdict()
        started = time.perf_counter()
        cand = read_object(cand_obj, remember=False)
        from sgcc.verify.function import emulate

        if self._base_vex is None:
            self._base_vex = emulate.vex_encoded(self.base) or ""
        vex = self._base_vex or emulate.vex_encoded(cand)
        if vex:
            # The emulator would run such code wrongly or not at all (emulate.vex_encoded): say so
            # rather than count states it did not really test.
            for name in sorted(functions):
                verdict.untested[name] = f"untested: AVX ({vex}; Unicorn runs no VEX-encoded code faithfully)"
            verdict.seconds = time.perf_counter() - started
            return verdict
        for name in sorted(functions):
            if name not in self.capture.states:
                verdict.untested[name] = "the tests never call it"
                continue
            footprint = untrusted if isinstance(untrusted, bool) else name in untrusted
            unlike = self._unlike_the_cpu(cand, name) if footprint else None
            if unlike is not None:
                # Evidence from an emulator that computes this code otherwise than the CPU is no
                # evidence (issue 35): untested, which refuses an untrusted candidate.
                verdict.untested[name] = unlike
                continue
            try:
                mismatch, tested, mutated, why = self._check_function(name, cand, verdict.dropped.setdefault(name, {}),
                                                                      footprint)
            except SgccError as exc:
                verdict.untested[name] = exc.message if hasattr(exc, "message") else str(exc)
                continue
            if name in self.cost:
                verdict.cost[name] = self.cost.pop(name)
            if name in self.results_only:
                verdict.results_only[name] = self.results_only.pop(name)
            if mismatch is not None:
                verdict.mismatch = mismatch
                break
            if tested:
                verdict.tested[name] = (tested, mutated)
            else:
                verdict.untested[name] = why or "no state gcc's function runs on in the emulator"
        # An emulator's hooks (bound methods) and its engine make a reference cycle; collected
        # now, the memory the engines mapped (gigabytes for sizes far beyond the tests') is
        # gone before the search forks its next timed runs.
        gc.collect()
        verdict.seconds = time.perf_counter() - started
        return verdict

    def _unlike_the_cpu(self, cand, name: str) -> str | None:
        """Why the emulator's runs of ``name`` in ``cand`` (with the private copies it brings)
        are not evidence: an instruction form it computes otherwise than this CPU
        (:mod:`sgcc.verify.function.forms`), or None."""
        from sgcc.verify.function import forms

        own = {n for n in cand.extents if n not in self.base.extents}
        try:
            unlike = forms.emulator_differs(forms.forms_of(cand, {name} | own))
        except SgccError as exc:
            return f"the emulator could not be compared with the CPU ({exc.message})"
        if not unlike:
            return None
        key, what = sorted(unlike.items())[0]
        return f"the emulator runs `{key}` unlike this CPU ({what})"

    def _overlap_of(self, machine, entry: int, key: tuple, mut, g) -> str:
        """Whether gcc's function, on the state ``key`` (outcome ``g``), reads a byte it also
        writes (outside its own frame): "overlap", "clean" or "undecided" (the watched run did
        not finish). Remembered per state, like gcc's outcome."""
        got = self._overlap.get(key)
        if got is not None:
            return got
        if not g.memory:
            got = "clean"  # it changed no memory: nothing it reads can be its own output
        else:
            ranges: list[list[int]] = []
            for addr in sorted(g.memory):
                end = addr + len(g.memory[addr])
                if ranges and addr <= ranges[-1][1]:
                    ranges[-1][1] = max(ranges[-1][1], end)
                else:
                    ranges.append([addr, end])
            while len(ranges) > MAX_WATCHED:  # join the two closest neighbours
                k = min(range(len(ranges) - 1), key=lambda i: ranges[i + 1][0] - ranges[i][1])
                ranges[k:k + 2] = [[ranges[k][0], ranges[k + 1][1]]]
            if sum(b - a for a, b in ranges) > MAX_WATCHED_BYTES:
                got = "undecided"  # too far apart to watch byte by byte (the stack and the heap)
            else:
                w = machine.run(entry, mut, max(OVERLAP_SECONDS, 10 * g.cpu), watch=[tuple(r) for r in ranges])
                got = "overlap" if w.status == "overlap" else "clean" if w.status == g.status else "undecided"
        self._overlap[key] = got
        return got

    def _out_of_bounds(self, machine, name: str, key: tuple, mut, g) -> bool:
        """Whether gcc's function, on the state ``key``, touches the heap chunk header just
        below an object one of its arguments points into (remembered per state)."""
        from sgcc.verify.function import emulate

        got = self._bounds.get(key)
        if got is None:
            regs = {**machine.state.regs, **mut.regs}
            guard = emulate.heap_headers(machine.state, [regs[r] for r in emulate.ARG_REGS])
            got = False
            if guard:
                run = machine.run(machine.images[0].entries[name], mut, max(OVERLAP_SECONDS, 10 * g.cpu),
                                  guard=guard)
                got = run.status == "out of bounds"
            self._bounds[key] = got
        return got

    def _check_function(self, name: str, cand, dropped: dict, footprint: bool):
        from sgcc.verify.function import emulate

        kind = emulate.return_kind(self.source_text, name)
        consts = emulate.constants(self.base, name) | emulate.constants(cand, name)
        states = self.capture.states[name]
        per_state = max(8, self.states // len(states))
        largest = {r: max(st.regs[r] & 0xFFFFFFFF for st in states) for r in emulate.ARG_REGS}
        args = emulate.integer_args(self.source_text, name)
        alias = not emulate.restrict_params(self.source_text, name)
        plans = []
        for si, state in enumerate(states):
            rng = random.Random(f"{self.seed}:{name}:{si}")
            plans.append(emulate.mutations(state, consts, rng, budget=per_state - 1, largest=largest, args=args,
                                           alias=alias))
        # Order: every state as captured; then, on the state gcc's function was quickest on as
        # captured (the base), its cheap mutations and the sizes far beyond the tests'; the other
        # states' cheap mutations in turn; then random ones. The base is chosen once the states
        # as captured have run: the first state captured may be the tests' largest (hashmix:
        # n = 1,000,001, 0.3 s a run, 21 states in 14 s).
        captured = [(si, emulate.Mutation("as captured", fill="random"), False, 0) for si in range(len(states))]
        cheap = [[m for m in plan if not m.large and not m.what.startswith("random")] for plan in plans]
        rand = [[m for m in plan if m.what.startswith("random")] for plan in plans]

        def rest(cost: dict, sizes: bool = True) -> tuple[list, int]:
            """The order after the states as captured, and how much of it is guaranteed
            (``sizes``: with the sizes far beyond the tests')."""
            finished = [si for si in range(len(states)) if cost.get(si, float("inf")) != float("inf")]
            base = min(finished, key=lambda si: (cost[si], si)) if finished else 0
            # Guaranteed: every state as captured, each kind of cheap value once (the base's),
            # and the sizes far beyond the tests'. These run whatever the clock says, up to a
            # hard limit, so what a candidate is tested on does not shrink when the machine is
            # busy (a narrow region missed under load would be a candidate accepted under
            # load); the rest fills the time that is left.
            order = [(base, m, True, 1) for m in cheap[base]]
            # The code's own constants first (a threshold shows up as one), then multiples of
            # the largest size seen, then boundaries; then run smallest first: each size costs
            # more than the one before, and the time for them (LARGE_FACTOR) ends where gcc's
            # function stops finishing; what is not reached is counted as dropped.
            large = [m for m in plans[base] if m.large][:MAX_LARGE]
            large.sort(key=lambda m: max(min(v & 0xFFFFFFFF, 2**32 - (v & 0xFFFFFFFF)) for v in m.regs.values())
                       if m.regs else 0)
            if sizes:
                order += [(base, m, True, 2) for m in large]
            guaranteed = len(order)
            others = [si for si in range(len(states)) if si != base]
            order += [(others[k], m, True, 1) for k, m in _round_robin([cheap[si] for si in others])]
            order += [(si, m, True, 3) for si, m in _round_robin(rand)]
            return order, guaranteed

        # Never skipped as larger work: the code's own constants (a threshold shows up as one)
        # and the values where an int's 2n wraps (past them gcc's work can vanish).
        exempt = frozenset({2**30 - 1, 2**30, 2**30 + 1}) | {w for c in consts for w in (c - 1, c, c + 1, 2 * c)}
        shared: dict = {"machines": {}, "done": set(), "timed": [], "sizes": [],
                        "footprint": footprint}
        tested = mutated = 0
        why = None
        if footprint:
            # First with the footprint hook, in a time of its own: every state as captured and the
            # base's cheap mutations guaranteed, then the rest as the time allows. The hook sends
            # every memory access through Unicorn's slow path, so the differential test then goes
            # on without it, on the states not yet run, in exactly the time and order it has
            # without the rule (its reach, a region wrong only past 2^24 words, does not
            # shrink); the sizes far beyond the tests' are held to the rule last, in a time of
            # their own (_footprint_beyond).
            seconds = FOOTPRINT_SHARE * self.seconds
            started = _cpu()
            mismatch, tested, mutated, why = self._loop(
                name, cand, kind, states, captured, rest, started, started + GUARANTEED_FACTOR * seconds, dropped,
                exempt, seconds, True, shared)
            if mismatch is not None:
                return mismatch, tested, mutated, why
        started = _cpu()
        mismatch, t2, m2, why2 = self._loop(name, cand, kind, states, captured, rest, started,
                                            started + GUARANTEED_FACTOR * self.seconds, dropped, exempt,
                                            self.seconds, False, shared)
        tested, mutated, why = tested + t2, mutated + m2, why or why2
        if mismatch is not None:
            return mismatch, tested, mutated, why
        if footprint:
            mismatch, unchecked = self._footprint_beyond(name, shared, states)
            if unchecked:
                self.results_only[name] = unchecked
            if mismatch is not None:
                return mismatch, tested, mutated, why
            mismatch = self._cost(name, shared["machines"], states, shared["timed"])
            if mismatch is not None:
                return mismatch, tested, mutated, why
        return None, tested, mutated, why

    def _machine(self, machines: dict, si: int, states, cand, name: str, footprint: bool):
        machine = machines.get(si)
        if machine is None:
            from sgcc.verify.function import emulate

            machine = machines[si] = emulate.Machine(states[si], self.capture, [self.base, cand],
                                                     fill_seed=self.seed ^ si, footprint=footprint)
            machine.arity = self.arity
            if name not in machine.images[0].entries or name not in machine.images[1].entries:
                raise emulate.Unsupported(f"{name} is not a function of both objects")
        return machine

    def _loop(self, name, cand, kind, states, captured, rest, started, hard_deadline, dropped, exempt, seconds,
              hooked, shared):
        """One pass over the states in order within ``seconds`` (what is guaranteed up to
        ``hard_deadline``): with ``hooked``, each candidate run held to the footprint rule too.
        ``shared`` carries what the passes share: the emulators, the states already run, the
        states the cost rule counts, and the sizes beyond the tests' each pass compared."""
        from sgcc.verify.function import emulate

        machines: dict[int, Machine] = shared["machines"]
        deadline = started + seconds  # (the CPU clock, _cpu)
        # The wall clock bounds the wait for the states not guaranteed (past it they are not
        # tried). The guaranteed ones have no such bound: each run has its own (a starved run of
        # one refuses the candidate), and a bound on the pass would count the candidate's own
        # runs, which are its right however slow, as the machine's doing.
        wall_deadline = time.perf_counter() + emulate.WALL_PER_CPU * seconds + emulate.WALL_SLACK
        tested = mutated = 0
        why = None
        done: set = shared["done"]
        timed: list = shared["timed"]  # (state, mutation, gcc's seconds): the states as captured gcc finished
        cost: dict[int, float] = shared.setdefault("cost", {})  # gcc's seconds on each state as captured
        strikes: dict[int, int] = {}  # slow mutations of an expensive state
        per_phase: dict[int, int] = {}
        too_long: dict[int, list] = {}  # state -> integer settings gcc's function did not finish on
        # The time for sizes beyond the tests' is charged with gcc's runs only: charged with the
        # wall clock, a candidate slow on the small sizes (its right) ate the time of the larger
        # ones, where its wrong region lay (4,000,001 words dropped for a 0.04 s allowance while
        # gcc needs 0.11 s). A candidate cannot steer which sizes are compared.
        large_left: float | None = None
        moved: dict[str, set] = {}  # a size beyond the tests' -> the states it was tried on
        own = 0.0  # seconds the candidate's runs took in this pass
        order, guaranteed = list(captured), len(captured)
        position, extended = -1, False
        while True:
            position += 1
            if position == len(captured) and not extended:
                extended = True  # every state as captured has run: the base is known
                more, more_guaranteed = rest(cost, sizes=not hooked)
                order += more
                guaranteed += more_guaranteed
            if position >= len(order):
                break
            si, mut, is_mutated, phase = order[position]
            now = _cpu()
            if position < guaranteed:
                # The hard limit of the states every candidate is tested on is charged with
                # everything but the candidate's own runs: charged with those, a candidate slow
                # on the cheap mutations (a delay on inputs no test has) used it up before the
                # sizes beyond the tests', and was accepted on what had been tested. Its runs
                # are bounded one by one (20 times gcc's, at least 1 s after a retry).
                if now - own > hard_deadline:
                    left = guaranteed - position
                    reason = "states every candidate is tested on, not reached in time (gcc's own runs took it)"
                    dropped[reason] = dropped.get(reason, 0) + left
                    why = why or "the guaranteed states did not finish in time"
                    break
            else:
                if now > deadline or time.perf_counter() > wall_deadline or (phase == 3 and tested >= self.states):
                    break
                if now > started + PHASE_ENDS[phase] * self.seconds:
                    continue  # this kind of state has had its share of the time
            if phase == 1 and per_phase.get(1, 0) >= 0.7 * self.states:
                continue  # the cheap mutations' share of the states: leave room for sizes beyond
            per_phase[phase] = per_phase.get(phase, 0) + 1
            if is_mutated and phase != 2 and cost.get(si, 0.0) > EXPENSIVE:
                # A state gcc's function takes long on: only mutations that make every integer
                # they set small (a size, most likely), until two of those are slow as well.
                small = mut.regs and all(min(v & 0xFFFFFFFF, 2**32 - (v & 0xFFFFFFFF)) < 1024
                                         for v in mut.regs.values())
                if not small or strikes.get(si, 0) >= 2:
                    continue
            key = _key(name, si, mut)
            if key in done:
                continue  # run by the pass with the footprint hook
            g = self._gcc.get(key)
            if hooked and g is not None and g.footprint is None and (g.status == "ret" or
                                                                    g.status.startswith("noreturn")):
                g = None  # remembered from a trusted candidate's test: run again, recording what it touches
            if phase == 2 and large_left is None:
                large_left = _large_time(self.seconds, cost)
            if g is None and phase != 2 and _dominated(mut, too_long.get(si, ()), exempt):
                # gcc's function did not finish on this state with every size set here no
                # larger: more work is not going to finish either. Like a state gcc's function
                # cannot run on, it is not tested (decided by gcc's runs only). The code's
                # constants and 2^30 +- 1 are always run: past an overflow the work can vanish
                # (palindromes' 2n - 1 wraps at n = 2^30 and gcc's loop runs no time at all).
                why = why or "gcc's function: timeout"
                continue
            machine = self._machine(machines, si, states, cand, name, shared["footprint"])
            if g is None:
                # (The hard limit is not charged with the candidate's own runs: ``own``.)
                allowance = _gcc_allowance(phase, position < guaranteed, cost, si, hard_deadline + own)
                if phase == 2 and large_left is not None:
                    # The time for sizes beyond the tests', smallest first, each later one kept
                    # at least the floor: a boundary past an overflow costs gcc next to nothing.
                    later = sum(1 for p in range(position + 1, len(order)) if order[p][3] == 2)
                    allowance = min(allowance, max(MUTATION_FLOOR, large_left - MUTATION_FLOOR * later))
                g = _gcc_run(machine, name, mut, allowance, hooked)
                if phase == 2 and large_left is not None:
                    large_left -= g.cpu
            if g.starved:
                if position < guaranteed:
                    return _undecided(name, states[si], mut, "gcc's function kept off the CPU"), tested, mutated, why
                reason = "states the machine kept the emulator from deciding (another process had the CPU)"
                dropped[reason] = dropped.get(reason, 0) + 1
                continue
            if phase == 2 and g.status in DID_NOT_FINISH and not hooked:  # (the pass without the hook retries it)
                reason = "sizes beyond the tests' that gcc's function does not finish in the emulator in time"
                dropped[reason] = dropped.get(reason, 0) + 1
            if phase == 2 and g.status.startswith("fault"):
                # No room past this state's buffer (another mapping lies beyond it: popcount's
                # second call in its largest test): the size is run on the next quickest state
                # instead. Skipped as "gcc's function cannot run here", every size beyond the
                # tests' was silently lost on such a base, and a candidate wrong past 4,000,000
                # words was accepted when timing noise made that state the quickest.
                tried = moved.setdefault(mut.what, {si})
                other = next((sj for sj in sorted((k for k in cost if cost[k] != float("inf")),
                                                  key=lambda k: (cost[k], k)) if sj not in tried), None)
                if other is not None and len(tried) <= MAX_MOVES:
                    tried.add(other)
                    order.insert(position + 1, (other, emulate.Mutation(mut.what, dict(mut.regs), fill=mut.fill,
                                                                        large=True), True, 2))
                    guaranteed += 1
                else:
                    reason = "sizes beyond the tests' on which gcc's function faults (no room past its buffers)"
                    dropped[reason] = dropped.get(reason, 0) + 1
            if g.status != "timeout":  # wall time on a shared machine: a timeout may not recur
                self._gcc[key] = g
            if is_mutated and g.status in DID_NOT_FINISH and mut.regs and not mut.patches:
                too_long.setdefault(si, []).append(mut.regs)
            if is_mutated and cost.get(si, 0.0) > EXPENSIVE and g.cpu > EXPENSIVE:
                strikes[si] = strikes.get(si, 0) + 1
            if not is_mutated:
                cost[si] = g.cpu if g.status == "ret" or g.status.startswith("noreturn") else float("inf")
            if g.status != "ret" and not g.status.startswith("noreturn"):
                why = f"gcc's function: {g.status}" if why is None else why
                if g.status not in DID_NOT_FINISH:
                    done.add(key)  # decided by gcc's run (a fault): not run again without the hook
                continue  # a state gcc's own function cannot run on: not the candidate's fault
            if is_mutated and g.memory and not mut.alias:
                # (Arguments made to alias on purpose are a call C allows: kept, issue 35.)
                # A mutation (a size beyond the captured buffers, most often) can make gcc's
                # function read memory it also writes, where as captured its inputs and outputs
                # were apart: matmul reading past A and B into the C it writes. No real call can
                # make that state when the function's buffers do not overlap (C says nothing of
                # what either side computes then), so it is dropped, and counted. The decision
                # rests on gcc's runs only: a candidate cannot steer which states are dropped.
                entry = machine.images[0].entries[name]
                if self._overlap_of(machine, entry, key, mut, g) != "clean":
                    # In place as captured (a sort): overlap is its nature, keep the state. This
                    # state's own capture first; where gcc's run of it did not finish, the others'.
                    as_captured = "undecided"
                    for sj in [si, *(k for k in range(len(states)) if k != si and k in machines)]:
                        base_key = (name, sj, "as captured", (), ())
                        base = self._gcc.get(base_key)
                        if base is not None:
                            as_captured = self._overlap_of(machines[sj], machines[sj].images[0].entries[name],
                                                           base_key, emulate.Mutation("as captured", fill="random"),
                                                           base)
                        if as_captured == "overlap":
                            break
                    if as_captured != "overlap":
                        reason = ("aliasing created by the mutation" if self._overlap[key] == "overlap"
                                  else "aliasing not decided in time")
                        dropped[reason] = dropped.get(reason, 0) + 1
                        done.add(key)
                        continue
            cap = max(CANDIDATE_SECONDS, 3 * g.cpu) if position < guaranteed else CANDIDATE_SECONDS
            if hooked:
                cap = _rule_cap(cap, g, shared)
            c, ended, spent = _candidate_run(machine, name, mut, g, cap, g.footprint if hooked else None)
            own += spent
            if hooked:
                _note_ratio(c, g, shared)
            if ended == "preempted":
                if position < guaranteed:
                    # Dropped, this let a wrong candidate through on a busy machine (the state
                    # past palindromes' overflow, under `pytest -n 4`): not decided is not passed.
                    return _undecided(name, states[si], mut, "the candidate's runs kept off the CPU"), tested, \
                        mutated, why
                reason = "states the machine kept the emulator from deciding (another process had the CPU)"
                dropped[reason] = dropped.get(reason, 0) + 1
                continue
            if ended == "capped" and hooked:
                # Under the footprint rule, where gcc's function finished under the same hook: left
                # undecided, a candidate slow under the hook alone (accesses of its own frame, each a
                # hook call) kept this state from the rule, compared for results only.
                regs = {**states[si].regs, **mut.regs}
                return emulate.Mismatch(name, states[si].origin, mut.what, regs, _too_slow(c, g)), tested, mutated, why
            if ended == "capped" and position < guaranteed:
                # A state every candidate is tested on, where gcc's function finished: left
                # undecided, a candidate that runs on and on there (a size beyond the tests',
                # where gcc takes 0.15 s or more) hid it from the test and from the footprint
                # rule's sizes alike.
                regs = {**states[si].regs, **mut.regs}
                return emulate.Mismatch(name, states[si].origin, mut.what, regs,
                                        f"the candidate did not finish in {c.cpu:.1f} s on the CPU, where gcc's "
                                        f"function took {g.cpu:.2f} s"), tested, mutated, why
            if ended == "capped":
                why = why or "a state too long to decide in the emulator"
                continue  # its allowance was cut to the cap: undecided, not a failure
            if c.status == "unsupported: an instruction the emulator lacks":
                raise emulate.Unsupported(c.status.split(": ", 1)[-1])
            # A limit gcc's run on the same state did not reach (memory, a memory routine's
            # size) is the candidate's own doing: compared as an outcome, so it fails; left
            # undecided, it would let a candidate hide a state from the test.
            diff = emulate.compare(kind, g, c, machine, mut)
            if diff is not None and is_mutated and self._out_of_bounds(machine, name, key, mut, g):
                # On this state gcc's own function touches malloc's header just below an object
                # it was given (knapsack with a weight made negative reads dp[-1]): no call of
                # a correct program makes it, so a difference there says nothing of the
                # candidate (which may rely on what the caller guarantees). Decided by gcc's
                # run only, and only once a difference is found: a guarded run is slow.
                reason = "outside the objects gcc's function was given (a heap chunk's header touched)"
                dropped[reason] = dropped.get(reason, 0) + 1
                done.add(key)
                continue
            tested += 1
            mutated += mut.what != "as captured"
            if diff is not None:
                regs = dict(states[si].regs)
                regs.update(mut.regs)
                return emulate.Mismatch(name, states[si].origin, mut.what, regs, diff), tested, mutated, why
            done.add(key)
            if phase == 2:
                shared["sizes"].append((si, mut))
            if g.status == "ret" and phase == 0:
                timed.append((si, mut, g.cpu))  # what the timing saw: the cost rule's reference
        return None, tested, mutated, why

    def _footprint_beyond(self, name, shared, states):
        """The footprint rule on the sizes far beyond the tests' (``shared["sizes"]``, compared
        without it; ``shared`` is the passes' state, funcdiff._loop): smallest
        first, gcc's runs in ``FOOTPRINT_SHARE`` times ``seconds``. Returns a mismatch (the first
        access outside the rule, or a candidate that does not finish where gcc's function did) or
        None, and how many could not be held to it in that time."""
        from sgcc.verify.function import emulate

        # Only gcc's runs are charged to the time (as for the sizes themselves, in _loop), as
        # they took, remembered or not: which sizes are held to the rule is gcc's doing alone,
        # the same for every candidate. Charged with the wall clock, a candidate slow on the
        # smallest size left every larger one unchecked.
        left = FOOTPRINT_SHARE * self.seconds
        machines = shared["machines"]
        order = sorted(shared["sizes"], key=lambda s: _size(s[1]))
        unchecked = 0
        for k, (si, mut) in enumerate(order):
            if left <= 0:
                return None, unchecked + len(order) - k
            machine = machines[si]
            key = ("footprint", *_key(name, si, mut))
            g = self._gcc.get(key)
            if g is None:
                g = _gcc_run(machine, name, mut, left, True)
                if g.status != "timeout":
                    self._gcc[key] = g
            left -= g.cpu
            if g.starved:
                unchecked += 1  # the machine's doing: this size undecided, counted; the next may be
                continue
            if g.footprint is None:
                # Not finished in the time left; larger sizes would not either.
                return None, unchecked + len(order) - k
            c, ended, _ = _candidate_run(machine, name, mut, g,
                                         _rule_cap(max(CANDIDATE_SECONDS, 3 * g.cpu), g, shared), g.footprint)
            _note_ratio(c, g, shared)
            regs = {**states[si].regs, **mut.regs}
            if c.status == "footprint" and c.violation is not None:
                return emulate.Mismatch(name, states[si].origin, mut.what, regs,
                                        f"footprint: the candidate {c.violation.describe()} ({c.where})"), 0
            if ended in ("timeout", "capped"):
                # Its own doing (it had the CPU), where gcc's function finished under the same
                # hook. Counted undecided at the cap, as before, a candidate slow under the hook
                # alone (a dozen pushes and pops of its own frame per word: nothing natively, a
                # hook call each here) kept every large size from the rule, and its read below
                # the buffer past 4,000,000 words was accepted.
                return emulate.Mismatch(name, states[si].origin, mut.what, regs, _too_slow(c, g)), 0
            if ended == "preempted":
                unchecked += 1  # the machine's doing, not the candidate's: undecided, counted
        return None, unchecked

    def _cost(self, name, machines, states, timed):
        """The cost rule (issue 43): an untrusted candidate's speed must hold beyond the inputs
        that were timed. Instructions are counted (a block hook) on the reference: of the states
        as captured gcc's function finishes in at most ``COST_SECONDS``, the one where it runs
        the most instructions (what the timing saw). Then on the same state made larger: each
        integer argument that works as a size multiplied by 2 and 4, and the bytes gcc's
        function read there repeated past their end, so the data stay like the tests' (zeros
        past a buffer would favour gcc's bit loops, and a size that makes no more work says
        nothing). A candidate whose count against gcc's grows past ``COST_GROWTH`` times its
        ratio on the reference, and past ``COST_FLOOR``, is refused: its figure holds only for
        the sizes that were timed. The counts are kept in :attr:`cost` per function."""
        from sgcc.verify.function import emulate

        info: dict = {"timed": None, "beyond": []}
        self.cost[name] = info

        def counts(si, mut, key_what):
            machine = machines.get(si)
            if machine is None:
                return None
            key = ("cost", key_what, *_key(name, si, mut))
            g = self._gcc.get(key)
            if g is None:
                g = _again_if_starved(lambda: machine.run(machine.images[0].entries[name], mut, COST_SECONDS * 20,
                                                          count=True))
                if not g.starved:  # (a busy moment is not this state's outcome for later candidates)
                    self._gcc[key] = g
            if g.status != "ret" or not g.instructions:
                return None
            c = _again_if_starved(lambda: machine.run(machine.images[1].entries[name], mut,
                                                      max(1.0, emulate.SLOWDOWN * g.cpu), count=True))
            if c.status != "ret":
                return None
            return g.instructions, c.instructions

        candidates = sorted((s for s in timed if s[2] <= COST_SECONDS), key=lambda s: -s[2])[:3]
        measured = [(got, si) for si, mut, _ in candidates if (got := counts(si, mut, "as captured")) is not None]
        if not measured:
            info["note"] = "no state as captured cheap enough to count instructions on"
            return None
        (g0, c0), si = max(measured, key=lambda m: m[0][0])
        reference = c0 / g0
        info["timed"] = {"state": states[si].origin, "gcc": g0, "candidate": c0, "ratio": round(reference, 3)}
        state = states[si]
        record = self._gcc.get(_key(name, si, emulate.Mutation("as captured", fill="random")))
        from sgcc.verify.function.footprint import Spans

        read = [] if record is None or record.footprint is None else Spans.unpack(record.footprint.touched)
        args = emulate.integer_args(self.source_text, name)
        sizes = [r for r in emulate.ARG_REGS[:args if args is not None else 6]
                 if state.region_at(state.regs[r]) is None and 0 < state.regs[r] & 0xFFFFFFFF <= 1 << 24]
        for r in sizes:
            for k in (2, 4):
                v = state.regs[r] & 0xFFFFFFFF
                patches = []
                for lo, hi in read:
                    region = state.region_at(lo)
                    if region is None or hi > region.end or hi - lo > COST_TILE:
                        continue
                    data = region.data[lo - region.start:hi - region.start]
                    patches.append((hi, data * (k - 1)))
                probe = emulate.Mutation(f"{r}={v * k:#x} ({k}x the timed state's), its data repeated",
                                         {r: v * k}, patches=patches, fill="random")
                got = counts(si, probe, "scaled")
                if got is None or got[0] < 1.5 * g0:
                    continue  # not more work: not a size
                ratio = got[1] / got[0]
                info["beyond"].append({"state": f"{state.origin}; {probe.what}", "gcc": got[0], "candidate": got[1],
                                       "ratio": round(ratio, 3)})
                if ratio > max(COST_FLOOR, COST_GROWTH * reference):
                    regs = dict(state.regs)
                    regs.update(probe.regs)
                    return emulate.Mismatch(
                        name, state.origin, probe.what, regs,
                        f"cost: the candidate runs {got[1]:,} instructions where gcc's function runs {got[0]:,} "
                        f"({ratio:.2f}x) on a size beyond the tests', but {reference:.2f}x on the tests' largest "
                        "state that was timed: its speed does not hold beyond the inputs that were timed")
        if not info["beyond"]:
            info["note"] = "no integer argument works as a size here"
        return None


def _rule_cap(cap: float, g, shared: dict) -> float:
    """The most a candidate's run under the footprint rule may take on a state where gcc's run
    under the same hook took ``g``: ``cap``, or twice the candidate's own slowdown under the
    hook so far (``shared["ratio"]``) times gcc's run, up to ``LARGE_SECONDS``. An honest
    candidate that makes several times gcc's accesses (SWAR's constants: 6 times gcc's time
    at 24,000,000 words) finishes; one slow under the hook only where it is never timed does
    not, and is refused."""
    return max(cap, min(LARGE_SECONDS, 2.0 * shared.get("ratio", 0.0) * g.cpu))


def _note_ratio(c, g, shared: dict) -> None:
    """Remember the candidate's slowdown under the hook (runs long enough to say)."""
    if c.status != "timeout" and g.cpu >= RATIO_MIN_SECONDS:
        shared["ratio"] = max(shared.get("ratio", 0.0), c.cpu / max(g.cpu, 1e-6))


def _again_if_starved(run, spent: list[float] | None = None):
    """``run()``'s outcome, run again while it was starved (kept off the CPU), at most
    PREEMPTED_RUNS times in all; each run's CPU seconds added to ``spent``."""
    for _ in range(PREEMPTED_RUNS):
        out = run()
        if spent is not None:
            spent.append(out.cpu)
        if not out.starved:
            break
    return out


def _gcc_run(machine, name: str, mut, allowance: float, record: bool):
    """gcc's run on ``mut`` (``allowance`` seconds on the CPU), run again while starved."""
    return _again_if_starved(lambda: machine.run(machine.images[0].entries[name], mut, allowance, record=record))


def _undecided(name: str, state, mut, what: str) -> Mismatch:
    """The refusal of a candidate whose test could not decide a guaranteed state."""
    from sgcc.verify.function import emulate

    return emulate.Mismatch(name, state.origin, mut.what, {**state.regs, **mut.regs},
                            f"undecided: a state every candidate is tested on was not decided ({what})")


def _candidate_run(machine, name: str, mut, g, cap: float, allowed) -> tuple:
    """The candidate's run on ``mut``, allowed ``SLOWDOWN`` times gcc's run ``g`` on the same
    state (at least 0.05 s), a timeout confirmed with five times that (at least 1 s); never
    more than ``cap`` seconds. Seconds on the CPU (emulate.Machine.run): a run that was kept
    off the CPU until its wall-clock ceiling (``starved``) is run again.

    Returns the outcome, how it ended: "done" (not a timeout), "timeout" (it used up a limit
    below the cap: its own doing), "capped" (it used up the cap), "preempted" (starved
    ``PREEMPTED_RUNS`` times), and the CPU seconds its runs took."""
    from sgcc.verify.function import emulate

    entry = machine.images[1].entries[name]
    spent: list[float] = []
    limit = max(0.05, emulate.SLOWDOWN * g.cpu)
    for attempt in range(2):
        allowance = min(limit, cap)
        c = _again_if_starved(lambda a=allowance: machine.run(entry, mut, a, allowed=allowed), spent)
        if c.starved:
            return c, "preempted", sum(spent)
        if c.status != "timeout":
            return c, "done", sum(spent)
        if limit >= cap or attempt:
            return c, ("capped" if limit >= cap else "timeout"), sum(spent)
        limit = max(1.0, 5 * limit)
    raise AssertionError("unreachable")


def _too_slow(c, g) -> str:
    """The difference of a candidate that did not finish under the footprint rule."""
    return (f"footprint: the candidate did not finish in {c.seconds:.1f} s under the rule ({c.cpu:.1f} s on the "
            f"CPU), where gcc's function took {g.cpu:.2f} s on the CPU")


def _size(mut) -> int:
    """How large a size mutation makes the work (its largest integer, as an int's magnitude)."""
    return max((min(v & 0xFFFFFFFF, 2**32 - (v & 0xFFFFFFFF)) for v in mut.regs.values()), default=0)


def _key(name: str, si: int, mut) -> tuple:
    """What gcc's outcome is remembered under: the function, the state and the mutation."""
    return (name, si, mut.what, tuple(sorted(mut.regs.items())), tuple(mut.patches))


def _gcc_allowance(phase: int, guaranteed: bool, cost: dict, si: int, hard_deadline: float) -> float:
    """Seconds gcc's function gets on a state ``si`` of ``phase`` (0 as captured, 1 cheap
    mutations, 2 sizes far beyond the tests', 3 random), given its seconds on the states as
    captured (``cost``)."""
    from sgcc.verify.function import emulate

    allowance = emulate.GCC_SECONDS * (10 if phase == 2 else 1)
    if phase in (1, 3) and cost.get(si, float("inf")) != float("inf"):
        # Values, not sizes (those are phase 2's, with their own time): the scale of this
        # state's own work. A value that makes the work explode (collatz from 0, n = 2^40)
        # costs the floor, not a second, and the larger ones after it are not run (_dominated).
        allowance = min(allowance, max(MUTATION_FLOOR, MUTATION_FACTOR * cost[si]))
    if guaranteed and phase == 2:
        # A size far beyond the tests' is slow to emulate, slower on a busy machine: dropping
        # it for gcc's time would leave exactly the region untested.
        allowance = max(allowance, min(LARGE_SECONDS, hard_deadline - _cpu()))
    return allowance


def _large_time(seconds: float, cost: dict) -> float:
    """The seconds the sizes beyond the tests' get, all together: LARGE_FACTOR times gcc's
    longest finished run on a state as captured (``cost``: state -> seconds, inf where it did
    not finish), between LARGE_SHARE and LARGE_MOST times ``seconds``."""
    finite = [c for c in cost.values() if c != float("inf")]
    return min(LARGE_MOST * seconds, max(LARGE_SHARE * seconds, LARGE_FACTOR * max(finite, default=0.0)))


def _dominated(mut, too_long, exempt=frozenset()) -> bool:
    """Whether ``mut`` sets only integer registers, each to a value at least the one a setting
    gcc's function did not finish on (``too_long``) gave it, both positive and on the same side
    of 2^31 (a value past it is a negative ``int`` or a huge ``long``: compared only with its
    like), and none of them a value of ``exempt`` (boundaries, the code's constants)."""
    if mut.patches or not mut.regs or not all(0 < v < 2**63 and v not in exempt for v in mut.regs.values()):
        return False
    return any(set(prev) == set(mut.regs)
               and all(0 < prev[r] <= mut.regs[r] and (prev[r] < 2**31) == (mut.regs[r] < 2**31) for r in prev)
               for prev in too_long)


def _round_robin(lists: list) -> list:
    out = []
    for k in range(max((len(x) for x in lists), default=0)):
        out += [(si, x[k]) for si, x in enumerate(lists) if k < len(x)]
    return out
