"""`sgcc bench` on the bundled dataset's replay candidates, whose outcomes are known.

examples/dataset-src/README.md lists every candidate of the six problems that carry some and
what must happen to it; the counts of the papers' row and of the replay generator follow
from that table alone (they do not depend on timing), so they are checked exactly here.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.conftest import EXAMPLES

pytestmark = pytest.mark.slow  # replays the bundled dataset

DATASET = EXAMPLES / "dataset"
WITH_CANDIDATES = ["bubble_sort", "edit_distance", "gray_code", "lis", "min_rotation", "triangles"]


def test_replay_counts_on_the_bundled_dataset(tmp_path, sgcc_exe):
    have = sorted(p.parent.name for p in DATASET.glob("*/candidates"))
    assert have == WITH_CANDIDATES  # the README's table describes exactly these
    only = [a for name in WITH_CANDIDATES for a in ("--only", name)]
    js = tmp_path / "bench.json"
    env = dict(os.environ)
    r = subprocess.run([sgcc_exe, "bench", str(DATASET), *only, "--generators", "replay", "--timing-rounds", "3",
                        "--seed", "1", "-j", "2", "--json", str(js), "--output-dir", str(tmp_path / "out")],
                       capture_output=True, timeout=900, env=env)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    res = json.loads(js.read_text())
    by = {p["name"]: p for p in res["problems"]}
    # Every problem has a candidate that assembles and links (its wrong_output.s).
    assert all(by[n]["compiled"] for n in WITH_CANDIDATES), {n: (by[n]["outcome"], by[n]["stages"])
                                                             for n in WITH_CANDIDATES if not by[n]["compiled"]}
    # Only the three correct, faster candidates pass every test (gcc's own lis unit is
    # skipped as identical before it is built).
    assert sorted(n for n in WITH_CANDIDATES if by[n]["passed"]) == ["bubble_sort", "gray_code", "min_rotation"]
    paper = res["paper"]
    assert (paper["problems"], paper["compiled"], paper["passed"]) == (6, 6, 3)
    assert paper["compile_pass"] == 100.0 and paper["test_pass"] == 50.0
    replay = res["generators"]["replay"]
    assert (replay["offered"], replay["built"], replay["compiled"], replay["passed"]) == (16, 15, 9, 3)
    # Nothing wrong is ever shipped: the three wrong-only problems ship gcc's program.
    for n in ("edit_distance", "lis", "triangles"):
        assert by[n]["honest"]["functions"] == []
