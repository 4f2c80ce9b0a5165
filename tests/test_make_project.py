"""A whole make project (ar archive, -MMD -MP, -Wall warnings) built through sgcc is gcc's build.

The project is examples/wordstats. Each way of using sgcc (plain CC=sgcc, prefix
CC="sgcc gcc", masquerade as gcc in PATH) must give the same objects, archive, binary,
dependency files and warnings as CC=gcc, a second make that does nothing, and passing tests.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from sgcc import proc
from tests.conftest import EXAMPLES

PROJECT = EXAMPLES / "wordstats"


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGCC_") and k not in ("MAKEFLAGS", "MFLAGS")}
    env.update(extra)
    return env


def _build(work: Path, make_args: list[str], env: dict) -> tuple[proc.Result, dict[str, bytes]]:
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(PROJECT, work, ignore=shutil.ignore_patterns("build"))
    result = proc.run(["make", "-s", *make_args], cwd=work, env=env, timeout=300)
    files = {str(p.relative_to(work)): p.read_bytes() for p in (work / "build").rglob("*") if p.is_file()}
    return result, files


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    work = tmp_path_factory.mktemp("ref") / "wordstats"
    result, files = _build(work, ["CC=gcc"], _env())
    assert result.returncode == 0, result.stderr.decode()
    return work, result, files


def _ways(sgcc_exe: str, masq: Path):
    return {
        "plain": (["CC=" + sgcc_exe], _env()),
        "prefix": ([f"CC={sgcc_exe} gcc"], _env()),
        "masquerade": (["CC=gcc"], _env(PATH=f"{masq}{os.pathsep}{os.environ['PATH']}")),
    }


@pytest.mark.parametrize("way", ["plain", "prefix", "masquerade"])
def test_make_project_is_identical(tmp_path_factory, reference, sgcc_exe, way):
    work, ref_result, ref_files = reference
    base = tmp_path_factory.mktemp(way)
    masq = base / "bin"
    masq.mkdir()
    (masq / "gcc").symlink_to(sgcc_exe)
    make_args, env = _ways(sgcc_exe, masq)[way]
    log = base / "sgcc.log"
    env["SGCC_LOGFILE"] = str(log)
    # Rebuilt in the reference's own path (_build starts afresh) so dependency files name
    # the same paths.
    result, files = _build(work, make_args, env)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr == ref_result.stderr
    assert b"unused variable" in result.stderr
    assert sorted(files) == sorted(ref_files)
    for name, data in ref_files.items():
        assert files[name] == data, f"{name} differs from gcc's"
    text = log.read_text()
    # Four compiles intercepted; the link has no C source and goes to gcc untouched.
    assert text.count("] eligible") == 4, text
    assert text.count("] pass-through (no-c-source") == 1, text
    # Nothing to do the second time round.
    again = proc.run(["make", "-q", *make_args], cwd=work, env=env, timeout=60)
    assert again.returncode == 0
    check = proc.run(["make", "-s", "check", *make_args], cwd=work, env=env, timeout=60)
    assert check.returncode == 0 and b"all tests passed" in check.stdout
