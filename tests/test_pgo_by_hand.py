"""bench/pgo_by_hand.py, the PGO build made by hand that project mode's results are measured
against (issue 39), on the bundled pgowin project with the real gcc and make.

What it must get right besides the builds: every build is timed from a path of one length. The
path is the program's argv[0] and the shell's PWD; their length moves the stack, and named by
build, zlib-ng's identical copy of gcc's build ran 0.929x of it (2026-11-29)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PGOWIN = ROOT / "tests" / "projects" / "pgowin"


@pytest.mark.parametrize("layout", ["copy", "builddir"])
def test_every_build_is_timed_from_a_path_of_one_length(tmp_path, layout):
    tree = tmp_path / "pgowin"
    shutil.copytree(PGOWIN, tree)
    if layout == "copy":
        build, bench, left = 'make CFLAGS="-O2 {cflags}"', "echo 20000 5 | {dir}/build/run > /dev/null", "."
        subprocess.run(["make"], cwd=tree, check=True, capture_output=True)  # what "sgcc" left
        extra = ["--clean", "make clean", "--work", str(tmp_path / "work")]
    else:
        build, bench, left = 'make B={dir} CFLAGS="-O2 {cflags}"', "echo 20000 5 | {dir}/run > /dev/null", "build"
        subprocess.run(["make"], cwd=tree, check=True, capture_output=True)
        extra = []
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "pgo_by_hand.py"), "--tree", str(tree), "--layout", layout,
                        "--build", build, "--bench", bench, "--sgcc", left, "--versus", "pgo-by-hand,sgcc",
                        "--rounds", "2", *extra], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stderr.splitlines() if "timed from" in ln)
    places = dict(re.findall(r"(\S+) (\S+?)(?:,|$)", line.split("timed from ", 1)[1]))
    assert set(places) == {"gcc", "gcc-copy", "pgo-by-hand", "sgcc"}, line
    assert len({len(p) for p in places.values()}) == 1, places
    # What sgcc left is timed as it is: a copy, byte for byte.
    copied = tree / places["sgcc"] / ("build/run" if layout == "copy" else "run")  # (absolute in a copy)
    assert copied.read_bytes() == (tree / "build" / "run").read_bytes()
    for name in ("gcc-copy", "pgo-by-hand", "sgcc"):
        assert re.search(rf"^\s*{name}: \d\.\d{{3}}x \[", r.stdout, re.M), r.stdout
