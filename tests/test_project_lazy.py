"""Project mode spends a source's share on candidates, not on preparing them (real make,
gcc, valgrind, the isolated runner; tests/projects/twomains with 120 flag sets to try).

Before, every generator compiled all its variants of a source before the first candidate
was built: on zlib and Lua that outlasted each source's share of the default budget and no
candidate was built at all. Now variants compile as the search asks (``jobs`` a round, most
promising first), candidates of the hottest function are built and timed after the first
two compiles, and the flag sets never compiled are reported as cut by the budget (the old
code never reports one: it compiled them all, whatever the budget)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from sgcc import proc

pytestmark = pytest.mark.slow  # builds, profiles and searches a project

TWOMAINS = Path(__file__).parent / "projects" / "twomains"


def test_the_hottest_source_gets_candidates_built_and_timed_within_a_small_budget(tmp_path, sgcc_exe):
    tree = tmp_path / "twomains"
    shutil.copytree(TWOMAINS, tree, ignore=shutil.ignore_patterns("build", "candidates"))
    # Many flag sets, each giving count_bits' loops another alignment (new code each): far
    # more than a 90-second budget can compile, build and time (about two sets in 4 s here,
    # the first timed 10 s into the run; 3 minutes before, which the assertions never needed).
    sets = [f"-falign-loops={n}" for n in range(3, 123)]
    env = dict(os.environ, SGCC_CACHE_DIR=str(tmp_path / "cache"), SGCC_VARIANTS="; ".join(sets))
    env.pop("CC", None)
    r = proc.run([sgcc_exe, "optimize", "--project", str(tree), "--generators", "variants",
                  "--budget", "90s", "--timing-rounds", "4", "--report", str(tmp_path / "r.json")],
                 env=env, timeout=900)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    hot = report["units"][0]
    assert hot["source"].endswith("bits.c"), [u["source"] for u in report["units"]]
    cands = hot["report"]["candidates"]
    timed = [c for c in cands if c["function"] == "count_bits" and c.get("speedup") is not None]
    assert timed, hot["tally"]
    # What the budget left uncompiled is reported as cut, never dropped silently.
    left = [c for c in cands if c["origin"].endswith("(not compiled)")]
    assert left and all(c["reason"] == "search budget reached" for c in left), hot["tally"]
    assert len(left) + len({c["meta"].get("variant") for c in cands if c["id"] != "-"}) <= len(sets)
    assert "cut by the budget" in hot["tally"]
    assert proc.run(["make", "check"], cwd=tree, timeout=300).ok  # the tree is left built and correct
