"""Every measured speedup in README.md, docs/ and examples/ says how to reproduce it and the
commit it was measured at (issue 41: docs/results.md quoted the main job at 1.755x when a run
gave 2.825x, and examples/programs/README.md quoted lcs at 1.5x, measured at 0.61x, with no
command beside either).

A figure is a ratio such as ``1.543x`` or ``2.8×`` in prose (code spans and blocks are output
formats and examples); its section, or a section above it, must hold a ``Reproduce`` command
and ``at <commit>``. A figure quoted from elsewhere says ``not measured here`` on its line.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RATIO = re.compile(r"\b\d+\.\d+ ?[x×](?!\w)")
COMMIT = re.compile(r"\bat [0-9a-f]{7,40}\b")


def unsourced(path: Path) -> list[str]:
    """The figures of ``path`` whose section (with the sections above it) names no command
    and no commit."""
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    text = re.sub(r"`[^`]*`", "", text)
    found, stack = [], []  # stack: (level, has a command, has a commit) of the enclosing sections
    for section in re.split(r"\n(?=#{1,6} )", text):
        heading = section.splitlines()[0] if section else ""
        level = len(heading) - len(heading.lstrip("#")) if heading.startswith("#") else 0
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, "Reproduce" in section, bool(COMMIT.search(section))))
        sourced = any(s[1] for s in stack) and any(s[2] for s in stack)
        for line in section.splitlines():
            if not sourced and "not measured here" not in line:
                found += [f"{path.relative_to(ROOT)}: {heading[:60]!r}: {m.group(0)}" for m in RATIO.finditer(line)]
    return found


def test_every_figure_has_its_command_and_commit():
    paths = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "examples").rglob("*.md"))]
    assert [f for p in paths for f in unsourced(p)] == []
