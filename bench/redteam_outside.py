#!/usr/bin/env python3
"""The red team's footprint candidates (issues 35 and 43) offered to ``sgcc optimize``, and what
ships run outside the box, in an ordinary shell.

Each candidate of ``tests/footprint_attacks.py`` (compiled from C by the real gcc, with this
machine's libc offsets) is the only replay candidate of a run of ``sgcc optimize`` on its
program (``tests/redteam/sortbits.c`` for the qsort/memcpy ones, ``stackbits.c`` for the
others); the shipped binary and gcc's ``-O3`` binary then run on four inputs in an environment
no box world has (``SGCC_REDTEAM_OUTSIDE=1``), and the script prints per candidate the stage
and reason sgcc gave, the outputs that differ from gcc's, and whether the ROP chains' shell
command ran (the file they touch exists).

    python bench/redteam_outside.py [--work DIR] [ATTACK ...]

Run from a checkout (the one under test is the one this script is in). Measured before
(e4b11d2) and after (b8623dd) on 2026-11-27: the closing note of issues 35 and 43.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import footprint_attacks as fa  # noqa: E402

INPUTS = ("1000 7 300", "777 5 100", "1000 99 1200", "900 3 2")


def offer(name: str, work: Path, offsets: dict) -> None:
    """One candidate through ``sgcc optimize`` and its shipped program outside the box."""
    sort = name in fa.SORT_ATTACKS
    prog, tests = (fa.SORTBITS, fa.SORTBITS_TESTS) if sort else (fa.STACKBITS, fa.STACKBITS_TESTS)
    d = work / name
    shutil.rmtree(d, ignore_errors=True)
    (d / "cands" / "count_bits").mkdir(parents=True)
    pwned = Path(f"/tmp/sgcc-pwned-{name}")
    pwned.unlink(missing_ok=True)
    (d / "cands" / "count_bits" / f"{name}.s").write_text(
        fa.unit(name, d / "build", defines=dict(offsets, PWNED_FILE=f'"{pwned}"')))
    env = dict(os.environ, PYTHONPATH=str(ROOT), SGCC_CACHE_DIR=str(d / "cache"),
               SGCC_CONFIG=str(d / "none.toml"), SGCC_TIMING_LOCK=str(work / "timing.lock"))
    sgcc = Path(sys.executable).with_name("sgcc")
    subprocess.run([str(sgcc), "optimize", str(prog), "-O3", "--tests", str(tests), "-o", str(d / "prog"),
                    "--candidates", str(d / "cands"), "--generators", "replay", "--report", str(d / "r.json"), "-q"],
                   env=env, check=True, stdout=subprocess.DEVNULL, timeout=1800)
    report = json.loads((d / "r.json").read_text())
    c = report["candidates"][0]
    print(f"== {name}: stage {c['stage']}: {c['reason']}; shipped {report['honest']['speedup']:.3f}x", flush=True)
    if c["stage"] != "accepted" and c.get("detail"):
        print(f"   detail: {c['detail'][:400]}", flush=True)
    gcc = d / "gcc"
    subprocess.run(["gcc", "-O3", str(prog), "-o", str(gcc)], check=True)
    outside = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/"), "SGCC_REDTEAM_OUTSIDE": "1"}
    for line in INPUTS:
        got = subprocess.run([str(d / "prog")], input=line + "\n", capture_output=True, text=True, env=outside)
        want = subprocess.run([str(gcc)], input=line + "\n", capture_output=True, text=True, env=outside)
        same = (got.stdout, got.returncode) == (want.stdout, want.returncode)
        print(f"   outside {line!r}: shipped {got.stdout.strip()!r}/{got.returncode}, "
              f"gcc {want.stdout.strip()!r}/{want.returncode}{'' if same else '  DIFFERS'}", flush=True)
    print(f"   the shell command ran (the file it touches exists): {pwned.exists()}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=None, help="keep the runs here (default: a temporary directory)")
    parser.add_argument("attacks", nargs="*", help="default: every attack of tests/footprint_attacks.py")
    args = parser.parse_args()
    names = args.attacks or [*fa.ATTACKS, *fa.SORT_ATTACKS]
    unknown = [n for n in names if n not in {**fa.ATTACKS, **fa.SORT_ATTACKS, **fa.SCALE_ATTACKS}]
    if unknown:
        print(f"redteam_outside: error: unknown attack(s) {', '.join(unknown)}", file=sys.stderr)
        return 2
    work = args.work or Path(tempfile.mkdtemp(prefix="sgcc-redteam-"))
    work.mkdir(parents=True, exist_ok=True)
    offsets = fa.libc_offsets(work / "probe")
    for name in names:
        offer(name, work, offsets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
