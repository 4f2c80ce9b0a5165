"""`sgcc functions`: the command-line view of function units, on real gcc output."""

from __future__ import annotations

import json

from sgcc import proc
from tests.conftest import EXAMPLES


def _asm(tmp_path):
    s = tmp_path / "p.s"
    proc.run(["gcc", "-O3", "-S", str(EXAMPLES / "programs" / "popcount" / "popcount.c"), "-o", str(s)], check=True)
    return s


def test_lines_json_show_extract(tmp_path, sgcc_exe):
    s = _asm(tmp_path)
    lines = proc.run([sgcc_exe, "functions", str(s)], check=True).stdout.decode().splitlines()
    names = [ln.split()[0] for ln in lines]
    assert "count_bits" in names and "main" in names
    assert all(ln.split()[1].isdigit() for ln in lines)
    data = json.loads(proc.run([sgcc_exe, "functions", str(s), "--json"], check=True).stdout)
    assert [d["name"] for d in data] == names and all(d["lines"] > 0 for d in data)
    shown = proc.run([sgcc_exe, "functions", str(s), "--show", "count_bits"], check=True).stdout.decode()
    assert "count_bits:" in shown and ".size\tcount_bits, .-count_bits" in shown
    assert len(shown.splitlines()) == dict(zip(names, (d["lines"] for d in data)))["count_bits"]
    out = tmp_path / "units"
    proc.run([sgcc_exe, "functions", str(s), "--extract", str(out)], check=True)
    assert (out / "count_bits.s").read_text() == shown


def test_unknown_unit_and_missing_file_are_clear_errors(tmp_path, sgcc_exe):
    s = _asm(tmp_path)
    r = proc.run([sgcc_exe, "functions", str(s), "--show", "nope"])
    assert r.returncode == 1 and b"sgcc: error: no function unit named 'nope'" in r.stderr
    r = proc.run([sgcc_exe, "functions", str(tmp_path / "missing.s")])
    assert r.returncode == 2 and b"does not exist" in r.stderr
