"""A small sample of the external differential harness (bench/differential.py): random
csmith programs through sgcc and gcc byte for byte, and one through `sgcc optimize` against
a gcc -O0 build. Skipped, saying why, where csmith is not installed (it is a Debian package,
not a pip one: `apt-get install csmith libcsmith-dev`)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    shutil.which("csmith") is None or not Path("/usr/include/csmith").is_dir(),
    reason="csmith is not installed (Debian: csmith libcsmith-dev); the differential sample needs it",
)

HARNESS = Path(__file__).resolve().parent.parent / "bench" / "differential.py"


def _harness():
    spec = importlib.util.spec_from_file_location("differential", HARNESS)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["differential"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_csmith_programs_compile_identically(tmp_path):
    diff = _harness()
    progs = diff.csmith_programs(3, seed=7, out=tmp_path)
    assert progs, "csmith made no usable program"
    result = diff.dropin(progs, tmp_path, diff.FLAG_SETS[:4])
    assert result["compiles"] == len(progs) * 4
    assert result["differences"] == []


@pytest.mark.slow
def test_an_optimized_csmith_program_prints_what_gcc_O0_prints(tmp_path):
    diff = _harness()
    progs = diff.csmith_programs(1, seed=11, out=tmp_path)
    result = diff.optimize(progs, tmp_path, "20s")
    assert result["programs"] == 1 and result["failures"] == []
    assert result["output_differences"] == []
