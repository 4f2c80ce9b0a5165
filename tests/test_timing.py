"""Tests of sgcc.verify.timing.rounds with real programs run in a real sandbox.

No assertion here depends on how fast the machine is or how loaded it is: they check the
procedure's structure (interleaving, calibration, the interval's shape) and verdicts with
wide margins (identical binaries are not "faster"; twice the work is about twice the time).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.errors import SgccError
from sgcc.verify.box.sandbox import Sandbox, TestCase
from sgcc.verify.timing.rounds import (
    MAX_ENV_PAD,
    Estimate,
    TimingRunFailed,
    decide,
    measure,
    runner,
    timing_lock,
    timing_lock_path,
)

REPO = Path(__file__).resolve().parent.parent

# A CPU-bound loop whose length is read from stdin.
WORK = r"""
#include <stdio.h>
int main(void) {
    long n;
    if (scanf("%ld", &n) != 1) return 2;
    unsigned long x = 1;
    for (long i = 0; i < n; i++) { x = x * 6364136223846793005UL + 1442695040888963407UL; x ^= x >> 29; }
    printf("%lu\n", x);
    return 0;
}
"""
#: About 10 ms of CPU per run on this kind of machine (the tests do not depend on it).
N = 5_000_000


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("timing")
    (d / "work.c").write_text(WORK)
    proc.run(["gcc", "-O3", "-o", str(d / "work"), str(d / "work.c")], timeout=60, check=True)
    return d / "work"


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(timeout=30) as sb:
        yield sb


@pytest.fixture(autouse=True)
def private_lock(tmp_path, monkeypatch):
    # Each test times under its own lock file, so concurrent test runs do not queue here.
    monkeypatch.setenv("SGCC_TIMING_LOCK", str(tmp_path / "timing.lock"))


def _tests(sandbox, work, n):
    return sandbox.record(work, [TestCase(f"n{n}", f"{n}\n".encode())])


def test_a_vs_a_is_not_faster(sandbox, work):
    tests = _tests(sandbox, work, N)
    run = runner(sandbox, work, tests)
    est = measure(run, runner(sandbox, work, tests), rounds=12, min_sample_seconds=0.03, seed=1)
    assert est.low <= est.speedup <= est.high
    # Identical binaries: the interval must not clear the 3% bar.
    assert est.low <= 1.03
    assert not decide(est)
    assert len(est.samples_a) == len(est.samples_b) == est.rounds == 12


def test_twice_the_work_is_about_twice_as_slow(sandbox, work):
    slow = _tests(sandbox, work, 2 * N)
    fast = _tests(sandbox, work, N)
    est = measure(runner(sandbox, work, slow), runner(sandbox, work, fast), rounds=10, min_sample_seconds=0.03, seed=2)
    assert decide(est)
    assert est.low <= est.speedup <= est.high
    # Loose on purpose (this is a correctness check, not a benchmark): process start-up and
    # the sandbox's set-up are in every sample and dilute the ratio below 2, more so when
    # other jobs share the machine (1.47 seen under load). A broken timer gives ~1.0 or
    # the ratio inverted, which this still catches.
    assert 1.25 <= est.speedup <= 2.6

    # The other way round it is slower, never accepted.
    est = measure(runner(sandbox, work, fast), runner(sandbox, work, slow), rounds=6, min_sample_seconds=0.03, seed=3)
    assert est.high < 1 and not decide(est)


def test_rounds_are_interleaved_in_random_order_with_fresh_padding(sandbox, work):
    tests = _tests(sandbox, work, N // 10)  # short runs, so calibration must repeat them
    calls: list[tuple[str, int]] = []

    def logged(tag, fn):
        def run(env_pad, world=0):
            calls.append((tag, env_pad))
            return fn(env_pad, world)

        return run

    run = runner(sandbox, work, tests)
    min_sample = 0.02
    est = measure(logged("A", run), logged("B", run), rounds=16, min_sample_seconds=min_sample, seed=7)

    # Calibration reached the target sample length, which took several runs per sample.
    assert est.calibration >= min_sample
    assert est.reps > 1
    assert all(s > 0 for s in est.samples_a + est.samples_b)

    # The last rounds * 2 * reps calls are the measured ones, in samples of `reps` runs,
    # each round one sample of A and one of B, in the order the estimate reports.
    measured = calls[-est.rounds * 2 * est.reps :]
    samples = [measured[i : i + est.reps] for i in range(0, len(measured), est.reps)]
    assert all(len({tag for tag, _ in s}) == 1 for s in samples)
    tags = "".join(s[0][0] for s in samples)
    assert [tags[i : i + 2] for i in range(0, len(tags), 2)] == est.order
    assert set(est.order) == {"AB", "BA"}

    # Every run got its own padding, drawn from the whole range.
    pads = [pad for _, pad in calls]
    assert all(0 <= p <= MAX_ENV_PAD for p in pads)
    assert len(set(pads)) > len(pads) // 2

    # The order depends on the seed only, not on the calibration.
    again = measure(run, run, rounds=16, min_sample_seconds=min_sample / 2, seed=7)
    assert again.order == est.order


def test_runner_rejects_runs_that_misbehave(sandbox, work):
    wrong = [TestCase("t", b"1000\n", b"not what it prints\n", 0)]
    with pytest.raises(TimingRunFailed, match="wrong output"):
        runner(sandbox, work, wrong)(0)
    crash = [TestCase("t", b"garbage\n", None, 0)]  # exits 2 on bad input
    with pytest.raises(TimingRunFailed, match="exit status 2"):
        runner(sandbox, work, crash)(0)
    with pytest.raises(SgccError):
        runner(sandbox, work, [])


def test_decide_needs_the_lower_bound_above_the_margin():
    def est(low):
        return Estimate(speedup=1.2, low=low, high=1.4, rounds=20, reps=1, samples_a=[], samples_b=[])

    assert decide(est(1.031))
    assert not decide(est(1.03))
    assert not decide(est(1.05), min_gain=0.05)
    assert decide(est(1.051), min_gain=0.05)


def test_timing_lock_is_exclusive_across_processes_and_reentrant(tmp_path):
    probe = (
        "import sys\n"
        "from sgcc.verify.timing.rounds import timing_lock\n"
        "from sgcc.errors import SgccError\n"
        "try:\n"
        "    with timing_lock(timeout=0.2):\n"
        "        pass\n"
        "except SgccError:\n"
        "    sys.exit(3)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def other_process_gets_lock() -> bool:
        result = proc.run([sys.executable, "-c", probe], env=env, timeout=60)
        assert result.returncode in (0, 3), result.stderr
        return result.returncode == 0

    assert timing_lock_path() == tmp_path / "timing.lock"
    with timing_lock():
        with timing_lock():  # re-entrant in one thread
            pass
        assert not other_process_gets_lock()
    assert other_process_gets_lock()
