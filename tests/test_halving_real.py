"""Successive halving for real: collatz's candidates for ``collatz_steps`` race each other
in the engine (real gcc, as, sandbox and timing), and the race's schedule is reported.

The field: ``shortcut.s`` (about 2.2x faster than gcc's, examples/programs/README.md),
``cmov.s`` (about 1.5x) and gcc's own unit with a ``nop`` (as fast as gcc's). What is
asserted is where each candidate ended and what the report says, not a time: a 2.2x
candidate losing a race to gcc's own code would be a defect of the race, not noise."""

from __future__ import annotations

import shutil
from pathlib import Path

from sgcc import proc
from sgcc.asm.units import AsmFile
from sgcc.candidates.replay import ReplayGenerator
from sgcc.engine import Request
from sgcc.engine.driver import Engine
from sgcc.stages import Stage
from tests.conftest import EXAMPLES, TIMING_SAMPLE_SECONDS

COLLATZ = EXAMPLES / "programs" / "collatz"


def _field(tmp_path: Path) -> Path:
    d = tmp_path / "cands" / "collatz_steps"
    shutil.copytree(COLLATZ / "candidates" / "collatz_steps", d)
    asm = proc.run(["gcc", "-O3", "-S", "-o", "-", str(COLLATZ / "collatz.c")], check=True).stdout.decode()
    own = AsmFile.parse(asm).unit("collatz_steps").text
    (d / "nop.s").write_text(own.replace("collatz_steps:\n", "collatz_steps:\n\tnop\n", 1))
    return d.parent


def test_the_clearly_faster_candidate_survives_the_race_and_the_schedule_is_reported(tmp_path):
    req = Request(source=COLLATZ / "collatz.c", flags=["-O3"], tests=COLLATZ / "tests", output=tmp_path / "out",
                  generators=[ReplayGenerator(_field(tmp_path))], seed=1, timing_rounds=8, min_sample=TIMING_SAMPLE_SECONDS,
                  mutants=0, profile=False, function_states=50)
    engine = Engine(req)
    try:
        report = engine.run()
    finally:
        engine.close()
    by_origin = {Path(c.origin).stem: c for c in report.candidates if c.function == "collatz_steps"}
    assert set(by_origin) == {"shortcut", "cmov", "nop"}, [(c.origin, c.stage, c.reason) for c in report.candidates]
    (race,) = [r for r in report.budget["races"] if r["function"] == "collatz_steps"]
    assert race["candidates"] == 3 and race["untimed"] == 0
    # The schedule: all three in the first rung, then the survivors; rounds reported per rung.
    assert race["rungs"][0] == {"rung": 1, "rounds": 6, "ran": 3, "dropped": race["rungs"][0]["dropped"]}
    assert race["rungs"][0]["dropped"] >= 1 and all(r["rounds"] >= 2 for r in race["rungs"])
    assert race["survivors"] == [by_origin["shortcut"].id]
    fast = by_origin["shortcut"]
    assert fast.meta["race"]["rounds"] == sum(r["rounds"] for r in race["rungs"])
    # It ran timing_rounds in all, or its interval cleared the bar at a rung's end (settled).
    assert fast.meta["race"]["rounds"] >= req.timing_rounds or fast.ci_low > 1 + req.min_gain
    assert fast.rounds == fast.meta["race"]["rounds"]  # its estimate uses every round it ran
    assert fast.stage == Stage.ACCEPTED or fast.stage == Stage.TIME and "confirmed" in fast.reason, fast.reason
    for loser in ("cmov", "nop"):
        c = by_origin[loser]
        assert c.stage == Stage.TIME and c.reason.startswith("dropped from the race"), (loser, c.reason)
        assert c.meta["race"]["rounds"] <= fast.meta["race"]["rounds"]
    # gcc's own code (with a nop) leaves after the first rung: futile, or the slower half of three.
    assert by_origin["nop"].meta["race"]["rounds"] == 6
    assert "after rung 1" in by_origin["nop"].reason
    # The claim is the confirmation's, on fresh rounds that took no part in the race.
    if report.shipped:
        assert fast.confirm is not None and report.final["rounds"] == fast.confirm["rounds"]
