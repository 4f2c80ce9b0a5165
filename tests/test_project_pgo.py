"""Whole-project profile guidance and -g in project mode (real make, gcc, valgrind, the
isolated runner): tests/projects/twomains built with ``-O3 -g``, searched with the pgo and
variants generators. Before, every pgo candidate failed ("undefined reference to main": each
source was instrumented and linked as a program of its own) and every -g transplant was
refused ("labels ... referenced from outside it")."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from sgcc import proc

pytestmark = pytest.mark.slow  # builds, profiles and searches a project

TWOMAINS = Path(__file__).parent / "projects" / "twomains"


@pytest.fixture(scope="module")
def searched(tmp_path_factory, sgcc_exe):
    work = tmp_path_factory.mktemp("twomains-g")
    tree = work / "twomains"
    shutil.copytree(TWOMAINS, tree, ignore=shutil.ignore_patterns("build", "candidates"))
    # lto = false: an adopted LTO build (PGO + LTO wins here) ships without the function search
    # these tests are about.
    toml = (tree / "sgcc.toml").read_text().replace('build = "make"', "build = \"make CFLAGS='-O3 -g'\"\nlto = false")
    (tree / "sgcc.toml").write_text(toml)
    env = dict(os.environ, SGCC_CACHE_DIR=str(work / "cache"))
    env.pop("CC", None)
    r = proc.run([sgcc_exe, "optimize", "--project", str(tree), "--generators", "pgo,variants",
                  "--budget", "4m", "--timing-rounds", "4", "--report", str(work / "r.json")], env=env, timeout=900)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    return tree, json.loads((work / "r.json").read_text()), r.stderr.decode()


def _candidates(report):
    return [c for u in report["units"] for c in u["report"]["candidates"]]


def test_one_instrumented_build_profiles_every_compile_the_workload_ran(searched):
    tree, report, stderr = searched
    assert report["pgo"]["error"] == "" and report["pgo"]["profiles"] >= 2, report["pgo"]
    pgo = [c for c in _candidates(report) if c["generator"] == "pgo" and c["id"] != "-"]
    assert pgo, report["units"][0]["tally"]
    passed = [c for c in pgo if c["function"] == "count_bits" and c["stage"] not in ("screen", "check", "link")]
    assert passed, [(c["origin"], c["stage"], c["reason"]) for c in pgo]
    assert not any("undefined reference" in c.get("reason", "") for c in _candidates(report))


def test_g_builds_get_per_function_variants(searched):
    tree, report, stderr = searched
    cands = _candidates(report)
    assert not any("referenced from outside" in c.get("reason", "") for c in cands)
    # Per function, -g is no obstacle. A whole PGO file of a -g build may be refused for a
    # debug section gcc's object lacks (hot/cold splitting adds .debug_rnglists): the object
    # check holds a whole file to gcc's sections, and project mode now offers it first.
    assert not any(".debug" in c.get("reason", "") for c in cands if c["function"] != "<translation-unit>")
    transplanted = [c for c in cands if c["generator"] in ("variants", "pgo") and c["id"] != "-"
                    and c["function"] == "count_bits"]
    assert transplanted
    # The tree is left built with debug information, and its tests pass.
    assert b".debug_info" in proc.run(["readelf", "-S", str(tree / "build" / "prog_a")], timeout=30).stdout
    assert proc.run(["make", "check"], cwd=tree, timeout=300).ok


def test_the_report_shows_the_references_and_where_the_time_went(searched):
    tree, report, stderr = searched
    assert "expected duration: about 4 min (--budget)" in stderr.split("clean build")[0]
    pgo = report["references"]["pgo_everywhere"]
    assert pgo.get("low", 0) > 0 and pgo["low"] <= pgo["speedup"] <= pgo["high"], pgo
    assert "PGO everywhere (the whole project built with -fprofile-use as a user builds it)" in stderr
    # And what LTO adds on top (issue 40): the same PGO build with -flto=auto, timed likewise.
    lto = report["references"]["pgo_lto"]
    assert lto.get("low", 0) > 0 and lto["low"] <= lto["speedup"] <= lto["high"], lto
    assert "sgcc: PGO + LTO (the PGO build with -flto=auto -ffat-lto-objects on every compile and link) " in stderr
    assert {"build", "tests", "profile_workload", "profile_tests", "search", "final"} <= set(report["phases"])
    assert "sgcc: time: recording build" in stderr
