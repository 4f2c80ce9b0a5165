"""Progress in a log (issue 41): a step that runs long is said again, so a log (CI, `| tee`)
never goes silent for minutes; the bench says what runs while no problem ends."""

from __future__ import annotations

import io
import time

from sgcc.lab import bench as benchmod
from sgcc.progress import Progress


def test_a_long_step_is_said_again_in_a_log():
    stream = io.StringIO()  # not a terminal: one line per status
    progress = Progress(stream, heartbeat=0.3)
    progress.tick(True)
    progress.status("racing 13 candidates for lcs (successive halving)")
    time.sleep(1.2)
    progress.done()
    lines = stream.getvalue().splitlines()
    assert lines[0].endswith("racing 13 candidates for lcs (successive halving)")
    again = [ln for ln in lines[1:] if "racing 13 candidates for lcs (successive halving) (still at it:" in ln]
    assert len(again) >= 2
    time.sleep(0.5)
    assert stream.getvalue().splitlines() == lines  # done: the clock stops


def test_the_bench_says_what_runs_when_nothing_ends():
    said: list[str] = []
    status = benchmod.Status()
    status.status("timing c003 (lcs, flags)")
    with benchmod._Heartbeat(said.append, lambda: f"running: lcs ({status.message})", every=0.3) as beat:
        time.sleep(0.8)
        beat.log("sgcc bench: lcs: done")
        n = len(said)
    assert said[0] == "running: lcs (timing c003 (lcs, flags))" and "sgcc bench: lcs: done" in said
    assert n >= 2
