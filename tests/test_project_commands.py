"""`sgcc optimize --project` with the project's own test command and workload (real make,
gcc, valgrind, the isolated runner): tests/projects/twomains has two programs that both
define ``main``; only prog_a is run by the tests and the workload. Its library source is
compiled twice (static and PIC for a shared library)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from sgcc import proc

pytestmark = pytest.mark.slow  # builds, profiles and searches a project

TWOMAINS = Path(__file__).parent / "projects" / "twomains"


def _env(cache_dir: Path) -> dict:
    env = dict(os.environ, SGCC_CACHE_DIR=str(cache_dir))
    env.pop("CC", None)
    return env


@pytest.fixture(scope="module")
def optimized(tmp_path_factory, sgcc_exe):
    work = tmp_path_factory.mktemp("twomains")
    tree = work / "twomains"
    shutil.copytree(TWOMAINS, tree, ignore=shutil.ignore_patterns("build"))
    cache_dir = work / "cache"
    # Replay offers a (wrong) main too: it must never be tried on b.c's main.
    r = proc.run([sgcc_exe, "optimize", "--project", str(tree), "--candidates", str(tree / "candidates"),
                  "--generators", "replay", "--footprint", "waived", "--timing-rounds", "8",
                  "--report", str(work / "r.json")],
                 env=_env(cache_dir), timeout=900)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    return work, tree, cache_dir, json.loads((work / "r.json").read_text()), r.stderr.decode()


def test_only_code_the_workload_and_tests_run_is_searched(optimized):
    work, tree, cache_dir, report, stderr = optimized
    sources = {u["source"] for u in report["units"]}
    assert "src/bits.c" in sources
    assert "src/b.c" not in sources  # prog_b's main never ran: never searched
    for u in report["units"]:
        for c in u["report"]["candidates"]:
            if c["id"] != "-":
                assert c["function"] != "main" or u["source"] == "src/a.c"
    assert "the project's own test command ('make check')" in report["proof"]
    assert "correctness rests on the project's own test command" in stderr


def test_the_winner_is_proven_in_every_mode_and_the_tree_is_left_passing(optimized):
    work, tree, cache_dir, report, stderr = optimized
    bits = next(u for u in report["units"] if u["source"] == "src/bits.c")
    assert bits["honest"]["functions"] == ["count_bits"]
    assert len(bits["keys"]) == 2  # the static and the PIC compile: searched once
    assert report["final"]["tests_passed"] is True and report["final"]["low"] > 1.0
    assert "rebuilt with the cache: the workload runs" in stderr
    assert proc.run(["make", "check"], cwd=tree, env=_env(cache_dir), timeout=300).returncode == 0


def test_a_plain_rebuild_gives_the_same_bytes_in_every_mode_and_nothing_in_the_other_program(optimized, sgcc_exe):
    work, tree, cache_dir, report, _ = optimized
    build = tree / "build"
    optimized_bytes = {n: (build / n).read_bytes() for n in ("prog_a", "libbits.so", "prog_b")}
    env = _env(cache_dir)
    assert proc.run(["make", "clean"], cwd=tree, env=env, timeout=120).returncode == 0
    assert proc.run(["make", f"CC={sgcc_exe}"], cwd=tree, env=env, timeout=300).returncode == 0
    assert {n: (build / n).read_bytes() for n in optimized_bytes} == optimized_bytes
    assert proc.run(["make", "clean"], cwd=tree, env=env, timeout=120).returncode == 0
    assert proc.run(["make", "CC=gcc"], cwd=tree, env=env, timeout=300).returncode == 0
    assert (build / "prog_a").read_bytes() != optimized_bytes["prog_a"]
    assert (build / "libbits.so").read_bytes() != optimized_bytes["libbits.so"]  # the PIC mode got it too
    assert (build / "prog_b").read_bytes() == optimized_bytes["prog_b"]  # nothing shipped into prog_b
