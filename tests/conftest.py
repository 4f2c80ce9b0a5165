"""Shared fixtures: the real sgcc executable, the real gcc, scratch directories."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="session")
def sgcc_exe() -> str:
    """Path of the installed ``sgcc`` console script (tests run the real program)."""
    exe = Path(sys.executable).parent / "sgcc"
    if not exe.exists():
        found = shutil.which("sgcc")
        if not found:
            pytest.fail("the sgcc console script is not installed; run the README's set-up command")
        exe = Path(found)
    return str(exe)


@pytest.fixture(scope="session")
def real_gcc() -> str:
    gcc = shutil.which("gcc")
    assert gcc, "gcc is required"
    return os.path.realpath(gcc)


@pytest.fixture
def masquerade_bin(tmp_path, sgcc_exe) -> Path:
    """A directory with ``gcc`` and ``cc`` symlinks to sgcc, to put first in PATH."""
    bindir = tmp_path / "masq-bin"
    bindir.mkdir()
    for name in ("gcc", "cc"):
        (bindir / name).symlink_to(sgcc_exe)
    return bindir


@pytest.fixture(scope="session", autouse=True)
def _private_sgcc_state(tmp_path_factory):
    """Every test run gets its own cache and configuration: the user's are never touched,
    and a developer's ~/.config/sgcc cannot change what the tests see. It also gets its own
    timing lock: the tests assert no timings that load could flip (only effects of several
    times), and must not wait an hour behind a benchmark holding the machine-wide lock."""
    state = tmp_path_factory.mktemp("sgcc-state")
    saved = {k: os.environ.get(k) for k in ("SGCC_CACHE_DIR", "SGCC_CONFIG", "SGCC_TIMING_LOCK")}
    os.environ["SGCC_CACHE_DIR"] = str(state / "cache")
    os.environ["SGCC_CONFIG"] = str(state / "no-user-config.toml")
    os.environ["SGCC_TIMING_LOCK"] = str(state / "timing.lock")
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
