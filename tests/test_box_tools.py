"""The isolated runner has what a project's test suite calls (compilers and other commands
that Debian names through /etc/alternatives), read-only, and still nothing of the user's
(real runner, real shell, gcc and awk)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from sgcc.verify.box.sandbox import Sandbox

SCRIPT = r"""#!/bin/sh
printf 'int main(void){return 0;}\n' > /tmp/t.c
cc -o /tmp/t /tmp/t.c && /tmp/t && echo cc-ok
echo 'a b' | awk '{print $2 "-awk-ok"}'
touch /etc/alternatives/sgcc-probe 2>/dev/null && echo alternatives-writable
ls -a /root /home 2>/dev/null | sed 's/^/visible: /'
cat /etc/hostname 2>/dev/null && echo hostname-visible
"""


@pytest.mark.skipif(not os.path.islink("/usr/bin/cc") or not os.path.isdir("/etc/alternatives"),
                    reason="no /etc/alternatives-managed cc on this host")
def test_alternatives_commands_work_read_only_in_the_box(tmp_path):
    """Old box: cc and awk dangled (their links go through /etc/alternatives)."""
    script = tmp_path / "probe.sh"
    script.write_text(SCRIPT)
    script.chmod(0o755)
    os.chmod(tmp_path, 0o755)
    with Sandbox(timeout=60) as sb:
        r = sb.run(script, b"")
    out = r.stdout.decode(errors="replace")
    assert "cc-ok" in out, (out, r.stderr.decode(errors="replace"))
    if shutil.which("awk") and Path(shutil.which("awk")).is_symlink():
        assert "b-awk-ok" in out, out
    assert "alternatives-writable" not in out
    # Nothing of the host's homes (the box's own home holds only the program it runs).
    seen = {ln[len("visible: "):] for ln in out.splitlines() if ln.startswith("visible: ")}
    for home in ("/root", "/home"):
        host = set(os.listdir(home)) if os.path.isdir(home) and os.access(home, os.R_OK) else set()
        assert not (host - {"prog"}) & seen, (home, host & seen)
    # The box has a host name of its own (each world draws one), never the machine's.
    import socket

    real = socket.gethostname()
    shown = out.split("hostname-visible")[0].splitlines()[-1] if "hostname-visible" in out else ""
    assert shown != real, (shown, real)
