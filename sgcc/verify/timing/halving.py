"""Racing candidates against each other: successive halving over interleaved timing rounds.

Timing each candidate against the baseline on its own (:func:`sgcc.verify.timing.rounds.measure`)
gives every candidate the same rounds whatever it shows, and the budget runs out with
candidates never timed. A race spends the rounds where they decide something:

* every candidate of one function gets a few rounds (``first`` rounds, :data:`FIRST_ROUNDS`);
  a round runs the baseline once and each candidate still in the race once, all in a random
  order, every run with a fresh environment padding, the worlds taking turns; each candidate's
  sample is paired with the baseline's sample of the same round, so a round costs ``alive + 1``
  samples instead of ``2 * alive``;
* after each *rung* the candidates whose interval's upper end is already below
  ``futile_below`` are dropped (nothing more could make them clear the minimum gain), and of
  the others the slower half (by the point estimate on all their rounds so far) is dropped;
* the survivors get twice as many new rounds in the next rung (at most ``min_rounds``), and so on until ``keep``
  remain with at least ``min_rounds`` rounds each (or their interval's lower end already
  clears ``settled_above``), or until the caller's ``afford`` refuses the next rung.

Each candidate's :class:`~sgcc.verify.timing.rounds.Estimate` uses every round it ran. That estimate
is biased upwards by the race itself (a survivor is the one whose early rounds looked best:
the winner's curse), so it is for *selection* only; a winner is believed after a
confirmation on fresh rounds that took no part in selecting it
(:func:`sgcc.engine.select.confirm`), and that confirmation's interval is what is reported.
Dropping a candidate never makes another one "faster": the race can only lose gains, never
invent them.
"""

from __future__ import annotations

import contextlib
import math
import random
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

from sgcc.verify.timing.rounds import (
    MAX_ENV_PAD,
    Estimate,
    OnWait,
    TimingRunFailed,
    calibrate,
    interval,
    timing_lock,
)

#: Rounds each candidate gets in the first rung.
FIRST_ROUNDS = 6
#: Most rungs (a race of 2**8 candidates; more are cut by the budget long before).
MAX_RUNGS = 8

RunFn = Callable[[int, int], float]


@dataclass
class Rung:
    """One rung of a race: the candidates that ran, the new rounds each got, who was
    dropped after it and why (``"futile"`` or ``"slower half"``), and its wall seconds."""

    number: int
    rounds: int
    ran: list[Hashable]
    dropped: dict[Hashable, str] = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        """The rung as a report keeps it (numbered from 1, as :func:`describe` says it)."""
        return {"rung": self.number + 1, "rounds": self.rounds, "ran": len(self.ran), "dropped": len(self.dropped)}


@dataclass
class Race:
    """The outcome of :func:`race`.

    ``estimates`` holds every candidate that ran at least two rounds, on all its rounds;
    ``survivors`` the candidates still in the race at the end (best first); ``dropped`` the
    rung after which each other candidate left and why; ``failed`` the candidates whose runs
    failed (:class:`~sgcc.verify.timing.rounds.TimingRunFailed`); ``untimed`` those the budget left
    out before the first rung; ``stopped`` why the race ended (``"decided"``, ``"budget"``,
    ``"rungs"`` or ``"empty"``)."""

    estimates: dict[Hashable, Estimate]
    rungs: list[Rung]
    survivors: list[Hashable]
    dropped: dict[Hashable, tuple[int, str]]
    failed: dict[Hashable, TimingRunFailed]
    untimed: list[Hashable]
    stopped: str
    reps: int
    seconds: float = 0.0  # wall seconds of the whole race (warm-up and calibration included)
    sample_seconds: float = 0.0  # wall seconds of one sample (``reps`` runs of one program)
    lock_wait: float = 0.0

    def schedule(self) -> list[dict]:
        """The rungs as the report keeps them."""
        return [r.to_dict() for r in self.rungs]


def plan(n: int, first: int = FIRST_ROUNDS, keep: int = 1, min_rounds: int = 20) -> list[tuple[int, int]]:
    """The schedule of a race of ``n`` candidates in which nothing is dropped as futile:
    ``(candidates running, new rounds each)`` per rung. ``sum(rounds)`` is what a survivor
    ran in all."""
    out: list[tuple[int, int]] = []
    alive, rounds, total = n, first, 0
    while alive > 0 and len(out) < MAX_RUNGS:
        out.append((alive, rounds))
        total += rounds
        if alive > keep:
            alive = max(keep, math.ceil(alive / 2))
        if alive <= keep:
            if total >= min_rounds:
                break
            rounds = max(first, min_rounds - total)
        else:
            rounds = min(rounds * 2, max(first, min_rounds))
    return out


def race(
    run_base: RunFn,
    runs: dict[Hashable, RunFn],
    *,
    first: int = FIRST_ROUNDS,
    keep: int = 1,
    min_rounds: int = 20,
    min_sample_seconds: float = 0.05,
    confidence: float = 0.95,
    seed: int | None = None,
    lock: bool = True,
    worlds: int = 1,
    futile_below: float | None = None,
    settled_above: float | None = None,
    afford: Callable[[int, int, float], bool] | None = None,
    extend_to: int = 0,
    clock: Callable[[], float] = time.perf_counter,
    note: Callable[[str], None] | None = None,
    on_wait: OnWait | None = None,
    lock_timeout: float | None = None,
) -> Race:
    """Race the candidates ``runs`` (key -> run function, most promising first) against the
    baseline ``run_base`` by successive halving (see the module docstring).

    Run functions are those of :func:`sgcc.verify.timing.rounds.measure` (``run(env_pad, world)``
    -> CPU seconds). ``afford(alive, rounds, sample_seconds)`` is asked before each rung
    whether ``rounds`` new rounds of ``alive`` candidates (``rounds * (alive + 1)`` samples
    of about ``sample_seconds`` wall seconds each) fit the budget; before the first rung the
    field shrinks from the back (the least promising are left ``untimed``) until it fits.
    Only the baseline and the most promising candidate are warmed up and calibrated before
    that; the others are warmed up once they are in the first rung (a candidate the budget
    leaves untimed costs nothing). A race the budget stops after a rung keeps what it
    measured: the survivors' estimates on all their rounds so far (``stopped`` ``"budget"``).
    ``note(message)`` hears what each rung did (progress lines); ``on_wait`` is
    :func:`~sgcc.verify.timing.rounds.timing_lock`'s, and ``lock_timeout`` its ``timeout``
    (:class:`~sgcc.verify.timing.rounds.TimingLockBusy` when the lock stays busy that long:
    a search has no use for a timing that would start after its budget).
    A candidate whose run raises :class:`~sgcc.verify.timing.rounds.TimingRunFailed` leaves the
    race (``failed``); the baseline's failure propagates. ``seed`` makes the orders, the
    paddings, the worlds and the bootstrap reproducible.

    ``extend_to``: survivors whose estimate clears ``settled_above`` but whose interval does
    not yet (nor falls below ``futile_below``) after ``min_rounds`` get more rounds (their total doubling each rung, up
    to ``extend_to`` in all) while ``afford`` allows: a real gain of a few percent needs more
    rounds than a large one, and time the budget would leave unused buys them. Like every
    screening look, this can make the survivor's own estimate more optimistic; its
    confirmation on fresh rounds is what decides.
    """
    if first < 2:
        raise ValueError("a race needs at least 2 rounds in its first rung")
    if worlds < 1:
        raise ValueError("a race needs at least one world")
    keys = list(runs)
    base_rng = random.Random(seed)
    order_rng, pad_rng, boot_rng, world_rng = (random.Random(base_rng.getrandbits(64)) for _ in range(4))
    samples_a: dict[Hashable, list[float]] = {k: [] for k in keys}
    samples_b: dict[Hashable, list[float]] = {k: [] for k in keys}
    world_log: dict[Hashable, list[int]] = {k: [] for k in keys}
    failed: dict[Hashable, TimingRunFailed] = {}
    dropped: dict[Hashable, tuple[int, str]] = {}
    rungs: list[Rung] = []
    untimed: list[Hashable] = []
    worlds_left: list[int] = []
    stopped = "empty"
    reps, sample_seconds, waited = 1, 0.0, 0.0
    started = clock()

    def next_world() -> int:
        if not worlds_left:
            worlds_left.extend(world_rng.sample(range(worlds), worlds))
        return worlds_left.pop()

    def sample(run: RunFn, world: int) -> float:
        return sum(run(pad_rng.randint(0, MAX_ENV_PAD), world) for _ in range(reps))

    def estimate(k: Hashable) -> Estimate | None:
        a, b = samples_a[k], samples_b[k]
        if len(a) < 2:
            return None
        speedup, low, high = interval(a, b, confidence, random.Random(boot_rng.random()))
        return Estimate(speedup=speedup, low=low, high=high, rounds=len(a), reps=reps, samples_a=list(a),
                        samples_b=list(b), confidence=confidence,
                        worlds=list(world_log[k]) if worlds > 1 else [])

    alive = [k for k in keys]
    say = note or (lambda message: None)
    warm: set[Hashable] = set()

    def warm_up(k: Hashable) -> bool:
        # The first run of a binary pays for page cache and cold caches: one run, discarded.
        try:
            runs[k](pad_rng.randint(0, MAX_ENV_PAD), 0)
        except TimingRunFailed as exc:
            failed[k] = exc
            alive.remove(k)
            return False
        warm.add(k)
        return True

    wait_from = clock()
    with timing_lock(on_wait=on_wait, timeout=lock_timeout) if lock else contextlib.nullcontext():
        waited = clock() - wait_from
        if alive:
            # Warm-up of the baseline and the most promising candidate, then reps from those
            # two (the others run in the same programs' range); the rest are warmed up once
            # the budget has said how many of them the first rung takes.
            run_base(pad_rng.randint(0, MAX_ENV_PAD), 0)
            while alive and not warm_up(alive[0]):
                pass
        if alive:
            probe = alive[0]
            walls: list[float] = []  # wall seconds of each calibration sample

            def calib_sample(run: RunFn, n: int) -> float:
                t = clock()
                cpu = sum(run(pad_rng.randint(0, MAX_ENV_PAD), 0) for _ in range(n))
                walls.append(clock() - t)
                return cpu

            try:
                reps, _ = calibrate(calib_sample, run_base, runs[probe], min_sample_seconds, pad_rng)
            except TimingRunFailed as exc:
                failed[probe] = exc
                alive.remove(probe)
                reps, _ = calibrate(calib_sample, run_base, run_base, min_sample_seconds, pad_rng)
            # The calibration's last pass ran one sample of each at ``reps``: what a sample costs.
            sample_seconds = max(1e-6, max(walls[-2:], default=0.0))
        rounds, total, number = first, 0, 0
        while alive:
            if afford is not None:
                if number == 0:
                    while alive and not afford(len(alive), rounds, sample_seconds):
                        untimed.insert(0, alive.pop())
                    if untimed:
                        say(f"the budget has room for {len(alive)} of {len(keys)} candidates' first rounds")
                    if not alive:
                        stopped = "budget"
                        break
                elif not afford(len(alive), rounds, sample_seconds):
                    say(f"the budget stops the race after rung {number}: {len(alive)} left, judged on "
                        f"their {total} rounds")
                    stopped = "budget"
                    break
            if number == 0:
                for k in [k for k in alive if k not in warm]:
                    warm_up(k)
                if not alive:
                    break
            rung = Rung(number=number, rounds=rounds, ran=list(alive))
            t0 = clock()
            cut = False
            for n in range(rounds):
                # A later rung (every candidate already has its first rounds) ends early, on
                # the rounds it ran, when the budget has no room for another (a rung's rounds
                # can take longer than the samples before it foretold: the machine's load moves).
                if n and number and afford is not None and \
                        not afford(len(alive), 1, max(sample_seconds, (clock() - t0) / (n * (len(alive) + 1)))):
                    rung.rounds, cut = n, True
                    say(f"the budget ends rung {number + 1} after {n} of its {rounds} rounds")
                    break
                world = next_world()
                lineup: list[Hashable | None] = [None, *alive]  # None: the baseline
                order_rng.shuffle(lineup)
                base_sample: float | None = None
                got: dict[Hashable, float] = {}
                for k in lineup:
                    if k is None:
                        base_sample = sample(run_base, world)
                    elif k in alive:
                        try:
                            got[k] = sample(runs[k], world)
                        except TimingRunFailed as exc:
                            failed[k] = exc
                            alive.remove(k)
                assert base_sample is not None
                for k, b in got.items():
                    if k in alive:
                        samples_a[k].append(base_sample)
                        samples_b[k].append(b)
                        world_log[k].append(world)
            rounds = rung.rounds
            rung.seconds = clock() - t0
            done = rounds * (len(rung.ran) + 1)
            if done:
                sample_seconds = max(1e-6, rung.seconds / done)
            rungs.append(rung)
            total += rounds
            current = {k: estimate(k) for k in alive}
            if futile_below is not None:
                for k in list(alive):
                    est = current[k]
                    if est is not None and est.high < futile_below:
                        alive.remove(k)
                        rung.dropped[k] = "futile"
            speed = {k: (e.speedup if e is not None else -math.inf) for k, e in current.items()}
            alive.sort(key=lambda k: -speed[k])  # fastest first; no estimate last
            if len(alive) > keep:
                stay = max(keep, math.ceil(len(alive) / 2))
                for k in alive[stay:]:
                    rung.dropped[k] = "slower half"
                del alive[stay:]
            for k, why in rung.dropped.items():
                dropped[k] = (number, why)
            say(f"rung {number + 1}: {len(rung.ran)} candidate(s) x {rounds} rounds in {rung.seconds:.0f} s; "
                f"{len(alive)} left")
            if cut:
                stopped = "budget"
                break
            if len(alive) <= keep:
                settled = settled_above is not None and bool(alive) and \
                    all((current[k] or _never).low > settled_above for k in alive)
                # Undecided (not settled, not futile): more rounds while the budget lasts, up
                # to ``extend_to`` in all, rather than leave the time unused.
                # Only a promising one: its estimate clears the bar, its interval not yet.
                extend = settled_above is not None and bool(alive) and not settled and total < extend_to and \
                    all((current[k] or _never).speedup > settled_above for k in alive)
                if settled or (total >= min_rounds and not extend):
                    stopped = "decided"
                    break
                # The survivors' rounds up to ``min_rounds``; past it, doubling their total.
                rounds = max(first, min_rounds - total) if total < min_rounds else min(total, extend_to - total)
            else:
                # Doubling, up to ``min_rounds`` a rung: selection needs no more (the
                # confirmation that follows is where the budget's left-over rounds go).
                rounds = min(rounds * 2, max(first, min_rounds))
            number += 1
            if number >= MAX_RUNGS:
                stopped = "rungs"
                break
        else:
            stopped = "decided" if rungs else stopped
    estimates = {k: e for k in keys if (e := estimate(k)) is not None}
    for e in estimates.values():
        e.lock_wait = waited
    return Race(estimates=estimates, rungs=rungs, survivors=list(alive), dropped=dropped, failed=failed,
                untimed=untimed, stopped=stopped, reps=reps, seconds=clock() - started - waited,
                sample_seconds=sample_seconds, lock_wait=waited)


class _Never:
    low = speedup = -math.inf


_never = _Never()


def rounds_of(race_: Race, key: Hashable) -> int:
    """Rounds ``key`` ran in ``race_`` (0 if it never ran)."""
    return sum(r.rounds for r in race_.rungs if key in r.ran and key not in race_.failed)


def describe(race_: Race, key: Hashable, names: Sequence[str] | None = None) -> str:
    """Why ``key`` left the race, in words (for a candidate's ``reason``)."""
    if key in race_.dropped:
        number, why = race_.dropped[key]
        est = race_.estimates.get(key)
        shown = f"{est.speedup:.3f}x [{est.low:.3f}, {est.high:.3f}] on {est.rounds} rounds" if est else "no estimate"
        if why == "futile":
            return f"dropped from the race after rung {number + 1}: cannot clear the minimum gain ({shown})"
        return f"dropped from the race after rung {number + 1}: in the slower half of {len(race_.rungs[number].ran)} " \
               f"({shown})"
    return "still in the race"
