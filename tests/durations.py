"""How long each test file and each slow test took in a run of the suite, for
tests/conftest.py: the order files run in, and which tests the fast subset leaves out.

pytest-xdist (``--dist loadfile``) hands out whole files in the order collected; with the
heaviest first, no long file starts last and keeps one worker busy while the other idles (the
longest-processing-time-first rule). A test that took :data:`SLOW_SECONDS` or more is marked
``slow`` (as are the tests that share a module fixture with it, which would otherwise pay for
building it), so ``-m "not slow"`` stays a fast subset as tests grow. Regenerate after the
suite's shape changes::

    .venv/bin/python -m pytest -q -n 3 --dist loadfile --junitxml=/tmp/suite.xml
    .venv/bin/python tests/durations.py /tmp/suite.xml
    .venv/bin/python tests/durations.py --groups /tmp/suite.xml   # the time by what it pays for

A file missing from the table (a new one) is placed as if it took :data:`UNKNOWN` seconds.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

TABLE = Path(__file__).with_name("durations.json")
#: Seconds assumed for a file the table does not list: early enough not to be the tail.
UNKNOWN = 60.0
#: A test that took this long (set-up, call and tear-down) is not in the fast subset.
SLOW_SECONDS = 2.0


def load() -> tuple[dict[str, float], frozenset[str]]:
    """The table: seconds per file (path relative to the repository), and the node ids of the
    slow tests; empty when unreadable."""
    try:
        data = json.loads(TABLE.read_text())
        files = {str(k): float(v) for k, v in data["files"].items()}
        return files, frozenset(str(n) for n in data["slow"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}, frozenset()


def from_junit(path: Path) -> tuple[dict[str, float], dict[str, float]]:
    """Seconds per test file and per test (node id) from a ``--junitxml`` report."""
    files: dict[str, float] = {}
    tests: dict[str, float] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        # classname is tests.test_x (or tests.test_x.Class): the file is up to the test_ part.
        parts = [p for p in case.get("classname", "").split(".") if p]
        cls = []
        while parts and not parts[-1].startswith("test_"):
            cls.insert(0, parts.pop())
        if not parts:
            continue
        name = "/".join(parts) + ".py"
        seconds = float(case.get("time", 0) or 0)
        files[name] = files.get(name, 0.0) + seconds
        tests["::".join([name, *cls, case.get("name", "")])] = seconds
    return files, tests


#: What a test file's time pays for (issue 36's table), by the first pattern its name matches.
GROUPS = (
    ("function-level test and footprint rule (emulator)", r"test_funcproof|test_footprint|test_funcstate|test_emulate"),
    ("SMT tier (angr, z3)", r"test_smt"),
    ("project mode end to end (make/CMake builds, PGO, LTO, races)", r"test_project|test_pgo|test_transplant"),
    ("Ray cluster", r"test_cluster"),
    ("Redis remote cache", r"test_remote_cache"),
    ("bench, dataset, reward (research runs)", r"test_bench|test_dataset|test_reward|test_halving"),
    ("LLM generators (llama.cpp, HTTP endpoint)", r"test_llm"),
    ("single-program optimize end to end", r"test_examples|test_explain|test_cache|test_newcomer|test_clang|"
     r"test_variants|test_select|test_optimize|test_edges|test_flagsearch|test_worlds|test_infoflow|"
     r"test_messages|test_cli_fuzz|test_dropin|test_screen"),
)
OTHER = "everything else (unit tests, docs, checks of files)"


def grouped(tests: dict[str, float]) -> list[tuple[str, int, int, float]]:
    """The tests' time by what it pays for: (group, tests, tests of SLOW_SECONDS or more,
    seconds), the largest first."""
    import re

    rows: dict[str, list] = {}
    for node, seconds in tests.items():
        name = next((g for g, pattern in GROUPS if re.search(pattern, node.split("::")[0])), OTHER)
        row = rows.setdefault(name, [0, 0, 0.0])
        row[0] += 1
        row[1] += seconds >= SLOW_SECONDS
        row[2] += seconds
    return sorted(((g, n, slow, t) for g, (n, slow, t) in rows.items()), key=lambda r: -r[3])


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--groups":
        _, tests = from_junit(Path(sys.argv[2]))
        print("| what it pays for | tests | of them 2 s or more | test time (min) |\n|---|---:|---:|---:|")
        for g, n, slow, t in grouped(tests):
            print(f"| {g} | {n} | {slow} | {t / 60:.1f} |")
        sys.exit(0)
    if len(sys.argv) != 2:
        sys.exit("usage: tests/durations.py [--groups] JUNIT_XML")
    files, tests = from_junit(Path(sys.argv[1]))
    table = {"files": {k: round(v, 1) for k, v in sorted(files.items(), key=lambda kv: -kv[1])},
             "slow": sorted(n for n, s in tests.items() if s >= SLOW_SECONDS)}
    TABLE.write_text(json.dumps(table, indent=1) + "\n")
    fast = sum(s for s in tests.values() if s < SLOW_SECONDS)
    print(f"{len(files)} files, {sum(files.values()) / 60:.1f} min in all; {len(table['slow'])} slow tests; "
          f"the rest {fast / 60:.1f} min -> {TABLE}")
