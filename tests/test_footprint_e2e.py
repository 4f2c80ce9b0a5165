"""The footprint rule end to end (issues 35 and 43): the red team's candidates offered to
``sgcc optimize`` as replay files, with the honest candidate among them, as the caller and (when
root) as user nobody. Before the rule, each of them shipped (the environment tell at 3.18x).

Now every hostile candidate that reaches the proof is refused there by the footprint rule, a
refused race survivor hands the race to the runners-up (issue 35 item 6), the honest candidate
ships, and the shipped program behaves as gcc's in an ordinary shell with a variable no box has.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sgcc import proc
from tests import footprint_attacks as fa

#: The function-level test is these tests' subject: its default share of time (tests/conftest.py).
pytestmark = [pytest.mark.slow, pytest.mark.function_test]

HOSTILE = ("env_tell", "rop_chain", "cpu_tell", "memo", "static_counter", "same_value_write")


def _as_nobody_or_skip() -> None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root (and setpriv) to run as user nobody")
    r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
                        os.sys.executable, "-c", "import sgcc"], capture_output=True)
    if r.returncode != 0:
        pytest.skip("user nobody cannot run this checkout's Python")


@pytest.mark.parametrize("who", ["caller", "nobody"])
def test_hostile_candidates_are_refused_by_the_footprint_rule_and_the_honest_one_ships(who):
    if who == "nobody":
        _as_nobody_or_skip()
    tmp = Path("/tmp") / f"sgcc-footprint-e2e-{who}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(mode=0o777)
    pwned = tmp / "pwned"
    try:
        shutil.copy(fa.STACKBITS, tmp / "stackbits.c")
        shutil.copytree(fa.STACKBITS_TESTS, tmp / "tests")
        cands = tmp / "cands" / "count_bits"
        cands.mkdir(parents=True)
        offsets = fa.libc_offsets(tmp / "probe")
        for name in (*HOSTILE, "honest"):
            defines = dict(offsets, PWNED_FILE=f'"{pwned}"') if name == "rop_chain" else None
            (cands / f"{name}.s").write_text(fa.unit(name, tmp / "src", defines=defines))
        for p in [tmp, *tmp.rglob("*")]:
            os.chmod(p, 0o777 if p.is_dir() else 0o666)
        out, report_path = tmp / "prog", tmp / "r.json"
        sgcc = str(Path(os.sys.executable).with_name("sgcc"))
        argv = [sgcc, "optimize", str(tmp / "stackbits.c"), "-O3", "--tests", str(tmp / "tests"), "-o", str(out),
                "--candidates", str(tmp / "cands"), "--generators", "replay", "--timing-rounds", "6",
                "--report", str(report_path)]
        env = dict(os.environ, HOME=str(tmp), XDG_CACHE_HOME=str(tmp / "cache"), TMPDIR=str(tmp),
                   SGCC_CACHE_DIR=str(tmp / "cache"), SGCC_TIMING_LOCK=str(tmp / "timing.lock"),
                   SGCC_CONFIG=str(tmp / "no-config.toml"))
        if who == "nobody":
            argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", *argv]
        r = subprocess.run(argv, capture_output=True, timeout=1200, env=env, cwd=tmp)
        assert r.returncode == 0, r.stderr.decode()[-3000:]
        report = json.loads(report_path.read_text())
        by_name = {Path(c["origin"]).stem if c.get("origin") else c["id"]: c for c in report["candidates"]}
        proven = [c for c in report["candidates"] if c["stage"] in ("prove", "accepted")]
        assert proven, [(c["id"], c["stage"], c["reason"]) for c in report["candidates"]]
        for c in report["candidates"]:
            hostile = any(h in (c.get("origin") or "") for h in HOSTILE)
            assert not (hostile and c["stage"] == "accepted"), c
            if hostile and c["stage"] == "prove":
                assert c["reason"].startswith("footprint: "), c["reason"]
                assert "footprint: the candidate " in (c.get("detail") or ""), c.get("detail")
        honest = next(c for c in report["candidates"] if "honest" in (c.get("origin") or ""))
        assert honest["stage"] == "accepted", (honest, sorted(by_name))
        assert report["honest"]["speedup"] > 1.5, report["honest"]
        # Outside the box, with a variable no box world has: the shipped program counts as gcc's.
        gcc_bin = tmp / "gcc_prog"
        proc.run(["gcc", "-O3", str(tmp / "stackbits.c"), "-o", str(gcc_bin)], check=True)
        shell = {"PATH": "/usr/bin:/bin", "HOME": str(tmp), "SGCC_REDTEAM_OUTSIDE": "1"}
        for line in ("1024 7 300", "777 5 100", "1000 99 1200"):
            got = subprocess.run([str(out)], input=f"{line}\n".encode(), capture_output=True, env=shell, timeout=60)
            want = subprocess.run([str(gcc_bin)], input=f"{line}\n".encode(), capture_output=True, env=shell,
                                  timeout=60)
            assert (got.returncode, got.stdout) == (want.returncode, want.stdout), line
        assert not pwned.exists()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
