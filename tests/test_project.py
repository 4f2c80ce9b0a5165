"""`sgcc optimize --project`: a make project optimized as a whole, then rebuilt from the cache
by a plain `CC=sgcc make` to the same bytes, without searching (real make, gcc, sgcc)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES

from sgcc import proc
from sgcc.verify.box.sandbox import load_tests

pytestmark = pytest.mark.slow  # builds and searches whole projects

BITSTATS = EXAMPLES / "bitstats"


def _env(cache_dir: Path) -> dict:
    env = dict(os.environ, SGCC_CACHE_DIR=str(cache_dir))
    env.pop("CC", None)
    return env


def _passes(binary: Path, tests_dir: Path) -> bool:
    for t in load_tests(tests_dir):
        r = proc.run([str(binary)], stdin=t.stdin, timeout=60)
        if r.returncode != 0 or r.stdout != t.expected_stdout:
            return False
    return True


@pytest.fixture(scope="module")
def optimized_project(tmp_path_factory, sgcc_exe):
    work = tmp_path_factory.mktemp("project")
    tree = work / "bitstats"
    shutil.copytree(BITSTATS, tree, ignore=shutil.ignore_patterns("build"))
    cache_dir = work / "cache"
    r = proc.run([sgcc_exe, "optimize", "--project", str(tree), "--candidates", str(tree / "candidates"),
                  "--generators", "replay", "--footprint", "waived", "--timing-rounds", "8",
                  "--report", str(work / "r.json")],
                 env=_env(cache_dir), timeout=900)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    return work, tree, cache_dir, json.loads((work / "r.json").read_text()), r.stderr.decode()


def test_project_is_optimized_and_left_built_from_the_cache(optimized_project):
    work, tree, cache_dir, report, stderr = optimized_project
    by_source = {u["source"]: u for u in report["units"]}
    assert by_source["src/bits.c"]["honest"]["functions"] == ["count_bits"]
    assert report["final"]["significant"] is True and report["final"]["low"] > 1.03
    assert report["final"]["tests_passed"] is True
    assert "the stdin tests in" in report["proof"]
    assert _passes(tree / "build" / "bitstats", tree / "tests")
    assert "rebuilt with the cache" in stderr


def test_clean_rebuild_with_sgcc_make_reproduces_the_bytes_without_searching(optimized_project, sgcc_exe):
    work, tree, cache_dir, report, _ = optimized_project
    optimized = (tree / "build" / "bitstats").read_bytes()
    env = _env(cache_dir)
    before = json.loads(proc.run([sgcc_exe, "stats", "--json"], env=env, timeout=60).stdout)["counters"]
    assert proc.run(["make", "clean"], cwd=tree, env=env, timeout=120).returncode == 0
    r = proc.run(["make", f"CC={sgcc_exe}"], cwd=tree, env=env, timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    assert (tree / "build" / "bitstats").read_bytes() == optimized
    after = json.loads(proc.run([sgcc_exe, "stats", "--json"], env=env, timeout=60).stdout)["counters"]
    # Three compiles, one a cache hit with a winner; the others are gcc's code (searched and
    # kept, or outside the 90% of the workload that was searched); nothing stored: no search.
    assert after["eligible"] - before.get("eligible", 0) == 3
    assert after["tu_hits"] - before.get("tu_hits", 0) == 1
    plain = sum(after.get(k, 0) - before.get(k, 0) for k in ("tu_hits_no_winner", "tu_misses"))
    assert plain == 2
    assert after.get("stores", 0) == before.get("stores", 0)
    assert proc.run(["make", "check"], cwd=tree, env=env, timeout=300).returncode == 0
    # Plain gcc builds something else (the optimization is really in the cache).
    assert proc.run(["make", "clean"], cwd=tree, env=env, timeout=120).returncode == 0
    assert proc.run(["make", "CC=gcc"], cwd=tree, env=env, timeout=300).returncode == 0
    assert (tree / "build" / "bitstats").read_bytes() != optimized


def test_a_second_optimize_reuses_the_verdicts(optimized_project, sgcc_exe):
    work, tree, cache_dir, _, _ = optimized_project
    r = proc.run([sgcc_exe, "optimize", "--project", str(tree), "--candidates", str(tree / "candidates"),
                  "--generators", "replay", "--footprint", "waived", "--timing-rounds", "6",
                  "--report", str(work / "r2.json"), "-q"],
                 env=_env(cache_dir), timeout=900)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    report = json.loads((work / "r2.json").read_text())
    bits = next(u for u in report["units"] if u["source"] == "src/bits.c")["report"]
    # The cached winner is re-validated; the replay generator is not asked again.
    assert {c["generator"] for c in bits["candidates"] if c["id"] != "-"} == {"cache"}
    assert bits["cache"]["found"] is True


def test_candidates_gcc_did_not_write_are_left_out_where_the_footprint_rule_cannot_run(tmp_path, sgcc_exe):
    """Project mode has no function states, so the footprint rule cannot hold a candidate gcc
    did not write there: by default its generators are left out with a note (none of their
    candidates could be accepted), and gcc's code ships; `--footprint waived` (the fixture
    above) accepts them on the tests alone."""
    tree = tmp_path / "bitstats"
    shutil.copytree(BITSTATS, tree, ignore=shutil.ignore_patterns("build"))
    r = proc.run([sgcc_exe, "optimize", "--project", str(tree), "--candidates", str(tree / "candidates"),
                  "--generators", "replay", "--timing-rounds", "4", "--report", str(tmp_path / "r.json")],
                 env=_env(tmp_path / "cache"), timeout=900)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    searched = [u["report"] for u in report["units"] if u.get("report")]
    assert searched, report["units"]
    for run in searched:
        assert not [c for c in run["candidates"] if c["id"] != "-"], run["candidates"]
        assert any(n.startswith("replay: left out: candidates gcc did not write are accepted only once the "
                                "footprint rule held") and "project mode has no function states yet" in n
                   and "footprint = waived" in n for n in run["notes"]), run["notes"]
    assert "replay: left out" in r.stderr.decode()


def test_cached_winners_are_not_revalidated_where_the_footprint_rule_cannot_run(optimized_project, sgcc_exe,
                                                                                 tmp_path):
    """The fixture's winners (replayed, footprint = waived) are in its cache; a run that requires
    the footprint rule neither ships nor re-offers them (cached winners are never trusted) and
    says so, and leaves the replay generator out."""
    work, _, cache_dir, _, _ = optimized_project
    tree, cache = tmp_path / "bitstats", tmp_path / "cache"
    shutil.copytree(BITSTATS, tree, ignore=shutil.ignore_patterns("build"))
    shutil.copytree(cache_dir, cache)
    r = proc.run([sgcc_exe, "optimize", "--project", str(tree), "--candidates", str(tree / "candidates"),
                  "--generators", "replay", "--timing-rounds", "4", "--report", str(tmp_path / "r.json")],
                 env=_env(cache), timeout=900)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    bits = next(u for u in report["units"] if u["source"] == "src/bits.c")["report"]
    assert bits["cache"]["found"] is True
    assert not [c for c in bits["candidates"] if c["id"] != "-"], bits["candidates"]
    assert any(n.startswith("1 cached winner(s) left out: gcc's own code or not, a cached candidate is accepted "
                            "only once the footprint rule held") for n in bits["notes"]), bits["notes"]
    assert not bits["honest"]["functions"]


def test_project_errors_are_clear(tmp_path, sgcc_exe):
    (tmp_path / "Makefile").write_text("all:\n\ttrue\nclean:\n\ttrue\n")
    gens = ["--generators", "replay", "--candidates", str(BITSTATS / "candidates")]
    r = proc.run([sgcc_exe, "optimize", "--project", str(tmp_path), *gens], env=_env(tmp_path / "c"), timeout=120)
    assert r.returncode == 1 and b"binary is not named" in r.stderr
    (tmp_path / "sgcc.toml").write_text('[project]\nbinary = "prog"\n')
    r = proc.run([sgcc_exe, "optimize", "--project", str(tmp_path), *gens], env=_env(tmp_path / "c"), timeout=120)
    assert r.returncode == 1 and b"tests does not exist" in r.stderr  # checked before building
    (tmp_path / "tests").mkdir()
    r = proc.run([sgcc_exe, "optimize", "--project", str(tmp_path), *gens], env=_env(tmp_path / "c"), timeout=120)
    assert r.returncode == 1 and b"compiled nothing through sgcc" in r.stderr
    assert r.stderr.count(b"sgcc: error:") == 1
    # A build with -flto: its compiles are gcc's GIMPLE, its code is made at the link, whose
    # partitions are recorded: the build is taken (no "compiled nothing"), and the next thing
    # missing is what is said, once (an empty tests directory).
    (tmp_path / "prog.c").write_text("int main(void) { return 0; }\n")
    (tmp_path / "Makefile").write_text("prog: prog.c\n\t$(CC) -O2 -flto -c prog.c -o prog.o\n"
                                       "\t$(CC) -O2 -flto prog.o -o prog\nclean:\n\trm -f prog prog.o\n")
    r = proc.run([sgcc_exe, "optimize", "--project", str(tmp_path), *gens], env=_env(tmp_path / "c"), timeout=120)
    assert r.returncode == 1 and b"compiled nothing" not in r.stderr and b"no test" in r.stderr.lower(), r.stderr
    assert r.stderr.count(b"sgcc: error:") == 1


def test_the_report_times_pgo_everywhere_beside_the_result(optimized_project):
    """Stdin-test projects too: the whole project's profile from the workload, the PGO build
    timed against gcc's, and sgcc's shipped build against it."""
    work, tree, cache_dir, report, stderr = optimized_project
    refs = report["references"]
    pgo = refs["pgo_everywhere"]
    assert 0 < pgo["low"] <= pgo["speedup"] <= pgo["high"], refs
    own = refs["sgcc_vs_pgo_everywhere"]  # measured because something shipped
    assert 0 < own["low"] <= own["speedup"] <= own["high"], refs
    # PGO + LTO likewise (issue 40), and sgcc's build against it.
    lto, own = refs["pgo_lto"], refs["sgcc_vs_pgo_lto"]
    assert 0 < lto["low"] <= lto["speedup"] <= lto["high"] and 0 < own["low"] <= own["speedup"] <= own["high"], refs
    assert "sgcc's build against it: " in stderr
    assert "PGO everywhere (the whole project built with -fprofile-use as a user builds it)" in stderr
