"""The man page renders cleanly and lists every command (issue 28).

groff checks the requests it knows (``-ww``: all warnings); a macro glued to the end of a
text line (``.IR DIR / NAME ..TP``) is no request to groff, only text, so it renders as
``NAME..TP`` and the entries after it run into the paragraph before. The rendered page is
therefore read back too: no man macro may show in it, and each command of sgcc.cli.COMMANDS
must start an entry of its own in the COMMANDS section.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.cli import COMMANDS

MAN = Path(__file__).resolve().parent.parent / "man" / "sgcc.1"

pytestmark = pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")

#: The man(7) macros; shown in the rendered text, one was not read as a request.
MACROS = re.compile(r"\.(?:TH|SH|SS|TP|PP|LP|IP|HP|RS|RE|BI|BR|IB|IR|RB|RI|SB|SM|B|I)\b")


def _render(path: Path, *extra: str) -> proc.Result:
    return proc.run(["groff", "-ww", "-man", "-Tutf8", "-P-cbou", *extra, str(path)], timeout=60,
                    env={"LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"})


def problems(path: Path) -> list[str]:
    """What is wrong with the page at ``path``: groff's warnings and leaked macros."""
    r = _render(path)
    found = [f"groff: {line}" for line in r.stderr.decode(errors="replace").splitlines() if line.strip()]
    if r.returncode != 0:
        found.append(f"groff exit status {r.returncode}")
    text = r.stdout.decode(errors="replace")
    found += [f"macro shown as text: {line.strip()}" for line in text.splitlines() if MACROS.search(line)]
    return found


def command_entries(path: Path) -> set[str]:
    """The first word of each entry's tag in the rendered COMMANDS section."""
    text = _render(path).stdout.decode(errors="replace")
    section = text.split("\nCOMMANDS\n", 1)[1]
    section = re.split(r"\n[A-Z][A-Z ]+\n", section, maxsplit=1)[0]
    return {m.group(1) for m in re.finditer(r"^ {7}(\w+)", section, re.M)}


def test_the_man_page_renders_without_warnings():
    assert problems(MAN) == []


def test_every_command_has_its_own_entry():
    entries = command_entries(MAN)
    assert COMMANDS - entries == {"version"}  # which shares the help entry:
    text = _render(MAN).stdout.decode(errors="replace")
    assert re.search(r"^ {7}help \[command\], -h, version$", text, re.M), "help and version are one entry"


def test_the_check_finds_a_glued_macro(tmp_path):
    """The defect of issue 28, put back: the check must see it (and groff alone does not)."""
    page = MAN.read_text()
    broken = tmp_path / "sgcc.1"
    # Glue the .TP that opens the help entry to the end of the line before it, as it was.
    glued = re.sub(r"\n\.TP\n(\.B help)", r".TP\n\1", page, count=1)
    broken.write_text(glued)
    assert broken.read_text() != page
    assert _render(broken).stderr == b""  # groff -ww is silent about it
    assert any("..TP" in p for p in problems(broken))
    assert "help" not in command_entries(broken)


def test_the_check_reports_groff_warnings(tmp_path):
    broken = tmp_path / "sgcc.1"
    broken.write_text(MAN.read_text().replace(".SH DESCRIPTION\n", ".SH DESCRIPTION\n.xx\n", 1))
    assert any(p.startswith("groff:") for p in problems(broken))
