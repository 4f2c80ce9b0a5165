"""Property: no command line, however odd, makes sgcc print a traceback (issue 16).

Random argv are drawn from sgcc's own commands, their options, hostile values and gcc flags,
and run through the real ``sgcc`` program. Whatever sgcc makes of them, it answers with its
own output or an ``sgcc: error:`` line, never a Python traceback, and never hangs. Paths
named in the draws do not exist or are odd files (a FIFO, /dev/zero), so no draw starts a
real search.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")  # in the test extra; skipped only outside the set-up
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sgcc import proc  # noqa: E402

pytestmark = pytest.mark.slow  # dozens of real sgcc runs

COMMANDS = {
    "functions": ["--json", "--show", "--extract"],
    "optimize": ["--tests", "-o", "--report", "--candidates", "--generators", "--budget", "--model", "--endpoint",
                 "--samples", "--rounds", "--temperature", "--max-tokens", "--context", "--threads", "--isa",
                 "--min-gain", "--timing-rounds", "--test-timeout", "--jobs", "-j", "--seed", "--keep-temps",
                 "--no-cache", "--refresh", "--quiet", "-q", "--project", "--build", "--binary", "--"],
    "stats": ["--json", "--zero"],
    "cache": ["list", "show", "clear", "trim", "verify", "--max-size", "--json"],
    "config": ["--json"],
    "models": ["--json"],
    "bench": ["--generators", "--perturbation", "--aa", "--curves", "--json", "--only", "--budget", "-j",
              "--timing-rounds"],
    "dataset": ["build", "export", "--out", "--force", "--keep-top", "--seed"],
    "help": ["optimize", "cache", "nosuch"],
    "version": [],
}

VALUES = ["", "-1", "0", "1", "nan", "inf", "1e300", "abc", "-5", "300s,40", "auto,-pgo", "native", "flags",
          "/proc/nope", "/dev/zero", "FIFO", "missing.c", "t.c", "dir/", "--", "-", "\xe9", "a" * 300]

GCC_FLAGS = ["-O3", "-O2", "-march=x86-64-v2", "-ffast-math", "-Wshadow", "-pthread", "-I/usr/include/x",
             "-funroll-loops", "-Dnoisy=1", "-lm", "-Wl,--as-needed", "--param", "max-unroll-times=4", "-c",
             "-S", "-E", "-o", "-h", "--help", "-x", "c"]


@st.composite
def argv(draw):
    command = draw(st.sampled_from(sorted(COMMANDS)))
    words = COMMANDS[command] + VALUES + GCC_FLAGS
    rest = draw(st.lists(st.sampled_from(words), max_size=8))
    return [command, *rest]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("fuzz")
    os.mkfifo(d / "FIFO")
    (d / "dir").mkdir()
    return d


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=argv())
def test_no_command_line_makes_a_traceback(sgcc_exe, workdir, args):
    result = proc.run([sgcc_exe, *args], cwd=workdir, timeout=120,
                      env={**os.environ, "SGCC_TEST_TIMEOUT": "5", "SGCC_BUDGET": "1"})
    assert not result.timed_out, args
    assert b"Traceback" not in result.stderr, (args, result.stderr[-2000:])
    assert b"Traceback" not in result.stdout, (args, result.stdout[-2000:])
