"""Each test file's seconds in a run of the suite, for tests/conftest.py's order.

pytest-xdist (``--dist loadfile``) hands out whole files in the order collected; with the
heaviest first, no long file starts last and keeps one worker busy while the other idles (the
longest-processing-time-first rule). Regenerate after the suite's shape changes::

    .venv/bin/python -m pytest -q -n 2 --dist loadfile --junitxml=/tmp/suite.xml
    .venv/bin/python tests/durations.py /tmp/suite.xml

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


def load() -> dict[str, float]:
    """The table (file path relative to the repository -> seconds); empty when unreadable."""
    try:
        data = json.loads(TABLE.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def from_junit(path: Path) -> dict[str, float]:
    """Seconds per test file from a ``--junitxml`` report (setup, call and teardown)."""
    seconds: dict[str, float] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")
        # classname is tests.test_x or tests.test_x.Class: the file is the test_ part.
        parts = [p for p in module if p]
        while parts and not parts[-1].startswith("test_"):
            parts.pop()
        if not parts:
            continue
        name = "/".join(parts) + ".py"
        seconds[name] = seconds.get(name, 0.0) + float(case.get("time", 0) or 0)
    return seconds


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tests/durations.py JUNIT_XML")
    table = {k: round(v, 1) for k, v in sorted(from_junit(Path(sys.argv[1])).items(), key=lambda kv: -kv[1])}
    TABLE.write_text(json.dumps(table, indent=1) + "\n")
    print(f"{len(table)} files, {sum(table.values()) / 60:.1f} min in all -> {TABLE}")
