"""Deciding honestly whether a candidate binary is faster than the baseline.

The papers time the baseline, then the candidate (hyperfine: 3 warm-ups, 10 runs, mean wall
time), clip each ratio at 1 and pick the best of N on those numbers. On a shared machine that
"finds" speedups in byte-identical binaries. sgcc instead:

* measures per-process CPU time (user + system, from ``wait4``), far steadier than wall time;
* makes every sample long enough (``reps`` consecutive runs summed, calibrated so a sample
  lasts at least ``min_sample_seconds``), so that short programs are not all loader noise;
* interleaves A and B in a random order within each of many rounds, so drifts in machine
  state (frequency, a noisy neighbour) hit both alike, and pairs the two samples of a round;
* gives every single run a fresh random environment size, because stack alignment alone
  moves timings by a few percent and would otherwise be "gained" or "lost" once for all;
* spreads the rounds over the sandbox's worlds (:mod:`sgcc.verify.box.worlds`: other
  environments, paths, ``argv[0]``), and a winner's confirmation must clear the minimum
  gain on each world's rounds alone (``each_world``): a program fast only where it
  recognises its surroundings is not faster;
* puts a bootstrap confidence interval on the ratio and accepts a candidate only if the
  *lower* end clears a minimum gain (:func:`decide`); the engine (:mod:`sgcc.engine`) then
  calls :func:`measure` again on fresh rounds before believing a winner, because the best of
  N screened candidates is biased upwards by selection alone;
* times one thing at a time on the machine (:func:`timing_lock`); building and testing do not
  take the lock and can run in parallel.

``bench/aa_timing.py`` checks the whole procedure against A-vs-A comparisons.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sgcc.errors import SgccError

#: Largest environment padding (bytes) drawn for a run; a page, so all stack alignments occur.
MAX_ENV_PAD = 4096
#: Fraction trimmed from *each* end of the paired log-ratios before averaging.
TRIM = 0.2
#: Bootstrap resamples for the interval.
RESAMPLES = 10000
#: Upper bound on ``reps`` (a program that takes no measurable CPU at all).
MAX_REPS = 10000
#: ``futile_below``: the first round after which a comparison may stop, and how often after.
FUTILE_FIRST = 5
FUTILE_EVERY = 3
#: Fewest rounds a confirmation gives each world (:func:`measure` with ``each_world``).
MIN_WORLD_ROUNDS = 6


@dataclass
class Estimate:
    """How much faster B is than A, with an interval.

    ``speedup`` is t(A)/t(B) (above 1 means B is faster): the exponential of the 20%-trimmed
    mean of the per-round log ratios log(a_i / b_i), i.e. a robust geometric mean of the
    paired ratios. ``low``/``high`` bound a ``confidence`` (e.g. 95%) two-sided percentile
    bootstrap interval for it: resampling the rounds, the statistic fell below ``low`` in
    2.5% of resamples and above ``high`` in 2.5%. Read it as "on this machine, under this
    load, with these inputs, B's CPU time is between 1/high and 1/low of A's", with about
    the stated confidence; ``low > 1 + gain`` is then a one-sided test at 97.5% that B is
    more than ``gain`` faster. The interval covers measurement noise between rounds, not
    systematic effects shared by all rounds (another CPU, other inputs, a layout effect that
    the environment padding does not reach, such as code alignment fixed at link time).

    ``samples_a``/``samples_b`` are CPU seconds per sample (``reps`` runs each), round by
    round; ``order`` says which ran first in each round ("AB" or "BA"); ``calibration`` is
    the shorter of the last calibration samples of A and B, at least ``min_sample_seconds``
    unless ``reps`` hit its cap.
    """

    speedup: float
    low: float
    high: float
    rounds: int
    reps: int
    samples_a: list[float]
    samples_b: list[float]
    order: list[str] = field(default_factory=list)
    calibration: float = 0.0
    confidence: float = 0.95
    round_seconds: float = 0.0  # wall seconds the rounds took (not the warm-up and calibration)
    lock_wait: float = 0.0  # wall seconds spent waiting for the timing lock (another sgcc was timing)
    worlds: list[int] = field(default_factory=list)  # the world of each round (empty: one world)
    per_world: list[tuple[float, float, float]] = field(default_factory=list)  # (speedup, low, high) by world

    @property
    def ratios(self) -> list[float]:
        """Per-round paired ratios a_i / b_i."""
        return [a / b for a, b in zip(self.samples_a, self.samples_b)]

    def __str__(self) -> str:
        pct = round(self.confidence * 100)
        return (
            f"{self.speedup:.3f}x [{self.low:.3f}, {self.high:.3f}] ({pct}% CI, "
            f"{self.rounds} rounds x {self.reps} reps)"
        )


# --------------------------------------------------------------------------- the lock



def timing_lock_path() -> Path:
    """Where the machine-wide timing lock lives: ``$SGCC_TIMING_LOCK``, else the user cache dir."""
    override = os.environ.get("SGCC_TIMING_LOCK")
    if override:
        return Path(override)
    from sgcc import dirs

    return Path(dirs.user_cache_dir()) / "timing.lock"


#: What the holder of the timing lock writes into the lock file, for those who wait on it.
_HOLDER_LIMIT = 400


def lock_holder(path: Path | None = None) -> str:
    """Who holds the timing lock, as its holder wrote it into the lock file (``pid N in DIR:
    COMMAND, timing since HH:MM:SS``); ``""`` when unknown (a holder that could not write,
    or an sgcc from before holders said so)."""
    try:
        with open(path or timing_lock_path(), encoding="utf-8", errors="replace") as fh:
            return fh.read(_HOLDER_LIMIT).strip()
    except OSError:
        return ""


def _write_holder(path: Path, text: str) -> None:
    """Say who holds the lock (best effort: a lock file of another user may not be writable)."""
    try:
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return
    try:
        os.ftruncate(fd, 0)
        if text:
            os.write(fd, text.encode("utf-8", "replace")[:_HOLDER_LIMIT])
    except OSError:
        pass
    finally:
        os.close(fd)


def _me() -> str:
    import sys

    command = " ".join(["sgcc" if os.path.basename(sys.argv[0]) in ("sgcc", "__main__.py") else sys.argv[0],
                        *sys.argv[1:]]) if sys.argv and sys.argv[0] else "python"
    try:
        where = os.getcwd()
    except OSError:  # a directory removed under the run
        where = "?"
    return f"pid {os.getpid()} in {where}: {command}, timing since {time.strftime('%H:%M:%S')}"


class TimingLockBusy(SgccError):
    """The timing lock stayed busy for the whole ``timeout`` (``holder``: who had it)."""

    def __init__(self, message: str, *, hint: str | None = None, holder: str = ""):
        super().__init__(message, hint=hint)
        self.holder = holder


#: ``on_wait(holder)``: told the timing lock is busy (and who holds it); it may return a
#: function that is told the seconds waited once the lock is taken.
OnWait = Callable[[str], "Callable[[float], None] | None"]


@contextlib.contextmanager
def timing_lock(timeout: float | None = None, on_wait: OnWait | None = None) -> Iterator[None]:
    """Hold the timing lock: only one sgcc process (or thread) times anything at a time.

    Timings taken while another benchmark runs are noise, so every measurement takes it;
    compiling and testing do not. The lock is per user and machine by default
    (``timing.lock`` in the user cache directory, whatever ``SGCC_CACHE_DIR`` says): two
    projects' runs, or a CI job beside a developer, time one after the other, which is
    right (their timings would disturb each other), and slower. Re-entrant within a thread.
    ``timeout`` (seconds) raises :class:`SgccError` if the lock is not free in time; ``None``
    waits as long as needed. ``on_wait(holder)`` is called once, before waiting, when the
    lock is busy (``holder``: :func:`lock_holder`, what the other run wrote), so that a
    caller can say why nothing moves; what it returns, if anything, is called with the
    seconds waited once the lock is taken. The holder writes itself into the lock file.
    """
    from sgcc.fsutil import file_lock

    path = timing_lock_path()
    lock = file_lock(path)  # one object per path in this process: re-entrant per thread
    try:
        taken = lock.acquire(0)
        if not taken and timeout != 0:
            then = on_wait(lock_holder(path)) if on_wait is not None else None
            began = time.monotonic()
            taken = lock.acquire(timeout)
            if taken and then is not None:
                then(time.monotonic() - began)
    except OSError as exc:
        raise SgccError(f"cannot take the timing lock {path}", cause=exc) from exc
    if not taken:
        holder = lock_holder(path)
        raise TimingLockBusy(
            f"the timing lock {path} is busy" + (f" ({holder})" if holder else ""),
            hint="another sgcc is timing programs; wait, or set SGCC_TIMING_LOCK to a different file",
            holder=holder,
        )
    outer = lock.depth() == 1
    if outer:
        _write_holder(path, _me())
    try:
        yield
    finally:
        if outer:
            _write_holder(path, "")
        lock.release()


# --------------------------------------------------------------------------- measuring


def measure(
    run_a: Callable[[int, int], float],
    run_b: Callable[[int, int], float],
    *,
    rounds: int = 20,
    min_sample_seconds: float = 0.05,
    confidence: float = 0.95,
    seed: int | None = None,
    lock: bool = True,
    futile_below: float | None = None,
    settled_above: float | None = None,
    worlds: int = 1,
    each_world: bool = False,
    on_wait: OnWait | None = None,
) -> Estimate:
    """Estimate t(A)/t(B) from interleaved, paired, randomly padded runs.

    ``run_a(env_pad, world)`` / ``run_b(env_pad, world)`` run the program once on all its
    timing inputs with ``env_pad`` bytes of environment padding in world number ``world``
    and return the CPU seconds it used (see :func:`runner`). With ``worlds`` above 1, each
    round runs A and B in the same world, the worlds taking turns in a random order within
    each block of ``worlds`` rounds; ``each_world`` shares the rounds among the worlds (at
    least :data:`MIN_WORLD_ROUNDS` each) and gives the estimate one interval per world
    (:attr:`Estimate.per_world`): a winner's confirmation, where :func:`decide` with
    ``each_world`` asks every world's interval to clear the gain.

    After one discarded warm-up run each, ``reps`` is calibrated so that a sample (``reps``
    consecutive runs, CPU summed) of either lasts at least ``min_sample_seconds``; then
    ``rounds`` rounds each take one sample of A and one of B, in a random order, every run
    with a fresh padding in 0..4096 bytes. See
    :class:`Estimate` for what the result means. ``seed`` makes the order and the padding
    (and the bootstrap) reproducible. ``lock=False`` skips :func:`timing_lock` (for callers
    already holding it or timing on purpose under load).

    ``futile_below`` stops early a comparison that cannot succeed (racing each candidate
    against the minimum gain): after 5 rounds and every :data:`FUTILE_EVERY` rounds after,
    if the interval's *upper* end is already below it, the remaining rounds are not run (the
    estimate then has fewer rounds). Stopping can only turn an acceptance into a rejection,
    never the reverse, so it costs no false "faster"; the repeated looks only make a
    wrong early rejection of a barely faster candidate a little more likely.

    ``settled_above`` stops early, at the same looks, a comparison whose interval's *lower*
    end is already above it. Repeated looks make a false "faster" more likely than the
    stated confidence, so this is for *screening* only (a search ordering its candidates),
    where every acceptance is re-measured on fresh, full-length rounds before anything
    is believed (:func:`sgcc.engine.select.confirm`); never for that re-measurement.

    ``on_wait(holder)``: called when the timing lock is busy, before waiting for it
    (:func:`timing_lock`); the time waited is the estimate's ``lock_wait``.
    """
    if rounds < 2:
        raise ValueError("measure needs at least 2 rounds")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    # Separate streams, so that the order of the rounds depends on the seed alone and not
    # on how many draws a (timing-dependent) calibration happened to take.
    if worlds < 1:
        raise ValueError("measure needs at least one world")
    base = random.Random(seed)
    order_rng, pad_rng, boot_rng = (random.Random(base.getrandbits(64)) for _ in range(3))
    world_rng = random.Random(base.getrandbits(64))  # drawn after the others: their streams stay as they were
    total = confirm_rounds(rounds, worlds) if each_world else rounds
    world_of: list[int] = []
    while len(world_of) < total:
        world_of += world_rng.sample(range(worlds), worlds)
    world_of = world_of[:total]
    current = [0]  # the world of the round being sampled

    def sample(run: Callable[[int, int], float], reps: int) -> float:
        return sum(run(pad_rng.randint(0, MAX_ENV_PAD), current[0]) for _ in range(reps))

    waited = time.perf_counter()
    with timing_lock(on_wait=on_wait) if lock else contextlib.nullcontext():
        waited = time.perf_counter() - waited
        # Warm-up: the first run of a binary pays for page cache and cold caches.
        run_a(pad_rng.randint(0, MAX_ENV_PAD), 0)
        run_b(pad_rng.randint(0, MAX_ENV_PAD), 0)

        reps, shortest = calibrate(sample, run_a, run_b, min_sample_seconds, pad_rng)

        samples_a: list[float] = []
        samples_b: list[float] = []
        order: list[str] = []
        rounds_started = time.perf_counter()
        checkpoints = set(range(FUTILE_FIRST, total - 1, FUTILE_EVERY)) \
            if (futile_below is not None or settled_above is not None) and total >= 8 else set()
        for n in range(total):
            current[0] = world_of[n]
            if n in checkpoints:
                _, low, high = interval(samples_a, samples_b, confidence, random.Random(boot_rng.random()))
                if futile_below is not None and high < futile_below:
                    break
                if settled_above is not None and low > settled_above:
                    break
            if order_rng.random() < 0.5:
                order.append("AB")
                a = sample(run_a, reps)
                b = sample(run_b, reps)
            else:
                order.append("BA")
                b = sample(run_b, reps)
                a = sample(run_a, reps)
            samples_a.append(a)
            samples_b.append(b)
        round_seconds = time.perf_counter() - rounds_started

    speedup, low, high = interval(samples_a, samples_b, confidence, boot_rng)
    used = world_of[:len(samples_a)] if worlds > 1 or each_world else []
    per_world = []
    # One interval per world where a decision needs them (a bootstrap costs about 0.1 s).
    for w in range(worlds if each_world else 0):
        mine = [i for i, x in enumerate(used) if x == w]
        if len(mine) >= 2:
            per_world.append(interval([samples_a[i] for i in mine], [samples_b[i] for i in mine], confidence,
                                       boot_rng))
        else:  # stopped early before this world had two rounds: it proved nothing
            per_world.append((1.0, 0.0, math.inf))
    return Estimate(
        speedup=speedup,
        low=low,
        high=high,
        rounds=len(samples_a),
        reps=reps,
        samples_a=samples_a,
        samples_b=samples_b,
        order=order,
        calibration=shortest,
        confidence=confidence,
        round_seconds=round_seconds,
        lock_wait=waited,
        worlds=used,
        per_world=per_world,
    )


def confirm_rounds(rounds: int, worlds: int) -> int:
    """Rounds of a confirmation over ``worlds`` worlds: ``rounds`` shared among them, at least
    :data:`MIN_WORLD_ROUNDS` each (evidence from every world for about the time one world's
    rounds took before worlds)."""
    return max(math.ceil(rounds / worlds), MIN_WORLD_ROUNDS) * worlds


def calibrate(sample, run_a, run_b, min_sample_seconds: float, rng: random.Random) -> tuple[int, float]:
    """Smallest-ish ``reps`` whose samples of both A and B last ``min_sample_seconds``.

    Grows ``reps`` from 1 by the observed shortfall (with a 20% margin, so that later
    samples, which vary a little, stay above the target) until one pass meets it.
    """
    reps = 1
    while True:
        if rng.random() < 0.5:
            ta, tb = sample(run_a, reps), sample(run_b, reps)
        else:
            tb, ta = sample(run_b, reps), sample(run_a, reps)
        shortest = min(ta, tb)
        if shortest >= min_sample_seconds or reps >= MAX_REPS:
            return reps, shortest
        if shortest <= 0:
            grown = reps * 10  # below the clock's resolution: nothing to extrapolate from
        else:
            grown = math.ceil(reps * min_sample_seconds * 1.2 / shortest)
        reps = min(MAX_REPS, max(reps + 1, grown))


def _trimmed_mean(values: Sequence[float], trim: float = TRIM) -> float:
    xs = sorted(values)
    k = int(len(xs) * trim)
    kept = xs[k : len(xs) - k] or xs
    return sum(kept) / len(kept)


def interval(
    samples_a: Sequence[float], samples_b: Sequence[float], confidence: float, rng: random.Random
) -> tuple[float, float, float]:
    """Point estimate and percentile-bootstrap interval of the trimmed mean of log ratios.

    Why this statistic: per-round ratios are paired (A and B of a round share the machine's
    state), logs make "2x faster" and "2x slower" symmetric, and the noise is heavy-tailed
    (a round where a neighbour woke up inflates one sample a lot). Trimming 20% from each
    end discards those rounds whichever side they hit, which the random order makes equally
    likely, so it does not bias the estimate. The plain mean would let one bad round move
    the interval; the median's bootstrap distribution is lumpy with 20 rounds (it can only
    take a few order statistics), which makes percentile intervals ragged. The percentile
    bootstrap needs no normality assumption.
    """
    # A zero sample would be a clock failure; the floor only keeps the logs finite.
    logs = [math.log(max(a, 1e-9) / max(b, 1e-9)) for a, b in zip(samples_a, samples_b)]
    point = _trimmed_mean(logs)
    n = len(logs)
    stats = sorted(_trimmed_mean(rng.choices(logs, k=n)) for _ in range(RESAMPLES))
    alpha = (1 - confidence) / 2
    lo = stats[int(math.floor(alpha * (RESAMPLES - 1)))]
    hi = stats[int(math.ceil((1 - alpha) * (RESAMPLES - 1)))]
    # The percentile interval nearly always contains the point estimate; make it always.
    lo, hi = min(lo, point), max(hi, point)
    return math.exp(point), math.exp(lo), math.exp(hi)


def decide(est: Estimate, min_gain: float = 0.03, *, each_world: bool = False) -> bool:
    """Accept B as faster only if the interval's lower end exceeds ``1 + min_gain``.

    Requiring the *lower* bound to clear a margin (not the point estimate to exceed 1)
    is what keeps layout and scheduling noise from being shipped as a speedup.
    ``each_world`` (a winner's confirmation, measured with ``each_world``) also asks it
    of every world's own interval: a program faster in one environment and not in another
    is not faster.
    """
    if each_world and any(low <= 1 + min_gain for _, low, _ in est.per_world):
        return False
    return est.low > 1 + min_gain


# --------------------------------------------------------------------------- run functions


class TimingRunFailed(SgccError):
    """A binary being timed did not behave as in its tests (crash, timeout, other output)."""


def runner(sandbox, binary: Path, tests) -> Callable[[int, int], float]:
    """A run function for :func:`measure`: ``binary`` on every test input, CPU summed.

    ``sandbox`` is a :class:`sgcc.verify.box.sandbox.Sandbox`, ``tests`` a list of
    :class:`sgcc.verify.box.sandbox.TestCase`. Every timed run is also checked against the test's
    expectations where known, and a mismatch raises :class:`TimingRunFailed`: a run that
    crashed or printed something else took a different path, so its time means nothing, and
    since each run sees a different environment size these runs double as extra tests
    (reads of uninitialised stack often change with it).

    The CPU time of a run is that of every process of the run, descendants included even if
    detached (the box's init reaps and counts them all, see :mod:`sgcc.verify.box.isolate`), so
    work hidden in a child counts. It includes the box's set-up in the main process between
    fork and exec (rlimits, seccomp: about 2-3 ms here) and the dynamic loader. Both are the
    same for A and B, so they dilute a ratio towards 1: conservative (never a false
    "faster"), but a program whose own work is a few milliseconds shows a smaller speedup
    than it has. Time on inputs that make runs last well beyond that.
    """
    binary = Path(binary)
    cases = list(tests)
    if not cases:
        raise SgccError("nothing to time: no test inputs")

    def run(env_pad: int, world: int = 0) -> float:
        total = 0.0
        for test in cases:
            result = sandbox.run(binary, test.stdin, env_pad=env_pad, world=world)
            problem = None
            if result.timed_out or result.truncated or result.returncode < 0:
                problem = result.describe()
            elif test.expected_status is not None and result.returncode != test.expected_status:
                problem = f"exit status {result.returncode}, expected {test.expected_status}"
            elif test.expected_stdout is not None and result.stdout != test.expected_stdout:
                problem = "wrong output"
            if problem is not None:
                raise TimingRunFailed(
                    f"{binary.name} failed while being timed on test {test.name} "
                    f"(world {world + 1}, environment padding {env_pad} bytes): {problem}"
                )
            total += result.cpu
        return total

    return run
