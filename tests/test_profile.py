"""Where the tests spend their instructions (sgcc.engine.profile): real valgrind, real
sandboxed runs. The quickest tests are profiled first, a test whose callgrind run would not
fit the profile's seconds is left out, and what the weights speak for is said."""

from __future__ import annotations

import shutil

import pytest

from sgcc import proc
from sgcc.engine import profile
from sgcc.stages import COMPILED
from sgcc.verify.box import sandbox as sandboxmod

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")

# `small` runs on every input; `big` only on an input that asks for many rounds (the large test).
PROGRAM = r"""
#include <stdio.h>
__attribute__((noinline)) long small(long x) { return x * 3 + 1; }
__attribute__((noinline)) long big(long n) { long s = 0; for (long i = 0; i < n; i++) s += (i ^ (s >> 3)) & 7; return s; }
int main(void) {
    long n = 0;
    if (scanf("%ld", &n) != 1) return 1;
    long r = small(n);
    if (n > 1000) r += big(n);
    printf("%ld\n", r);
    return 0;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("prof")
    (d / "p.c").write_text(PROGRAM)
    proc.run(["gcc", "-O2", "-o", str(d / "p"), str(d / "p.c")], check=True)
    # Named so that the large test comes first in the tests' own order.
    tests = [sandboxmod.TestCase("a_large", b"60000000\n"), sandboxmod.TestCase("t1", b"3\n"),
             sandboxmod.TestCase("t2", b"5\n")]
    return d / "p", tests


def test_the_quickest_tests_are_profiled_and_a_large_one_left_out_when_it_would_not_fit(program):
    binary, tests = program
    with sandboxmod.Sandbox(timeout=60) as sb:
        found = profile.profile_tests(binary, tests, sandbox=sb, names=["small", "big", "main"], seconds=4.0)
    assert found is not None
    # 60M rounds: about 0.1 s natively, several seconds under callgrind: predicted past 4 s.
    assert (found.profiled, found.total) == (2, 3), found
    assert found.weights["small"] > 0 and found.weights["main"] > 0
    assert found.weights["big"] == 0.0  # only the large test runs it
    assert found.skipped_seconds > 4.0
    assert found.scope() == "the 2 quickest of the 3 tests (the profiled ones)"


def test_with_time_enough_every_test_is_profiled(program):
    binary, tests = program
    with sandboxmod.Sandbox(timeout=60) as sb:
        found = profile.profile_tests(binary, tests, sandbox=sb, names=["small", "big"], seconds=120.0)
    assert found is not None and (found.profiled, found.total) == (3, 3)
    assert found.weights["big"] > 0.5 > found.weights["small"] > 0
    assert found.scope() == "the tests" and found.skipped_seconds == 0.0


def test_the_quickest_test_is_profiled_even_past_the_seconds(program):
    binary, tests = program
    with sandboxmod.Sandbox(timeout=60) as sb:
        found = profile.profile_tests(binary, tests[:1], sandbox=sb, names=["big"], seconds=0.0)
    assert found is not None and found.profiled == 1 and found.weights["big"] > 0.5


def test_the_engine_says_which_tests_the_profile_speaks_for(program, tmp_path, monkeypatch):
    """A function only a test left out of the profile runs is 'not executed by the 2 quickest
    of the 3 tests', never 'by the tests', and a note says the profile was cut. It is searched
    all the same (last): on a loaded machine the profile fits fewer tests, and skipping what
    it did not see once skipped a dataset problem's hot function (CI, stop 49)."""
    from sgcc.candidates.replay import ReplayGenerator
    from sgcc.engine import Request, optimize

    binary, tests = program
    d = tmp_path / "prog"
    (d / "tests").mkdir(parents=True)
    shutil.copy(binary.parent / "p.c", d / "p.c")
    for t in tests:
        (d / "tests" / f"{t.name}.in").write_bytes(t.stdin)
    cands = tmp_path / "cands"
    cands.mkdir()
    asm = proc.run(["gcc", "-O3", "-S", "-o", "-", str(d / "p.c")], check=True).stdout.decode()
    from sgcc.asm.units import AsmFile

    (cands / "big.s").write_text(AsmFile.parse(asm).unit("big").text.replace("\tret", "\tnop\n\tret", 1))
    monkeypatch.setattr(profile, "PROFILE_SECONDS", 4.0)
    req = Request(source=d / "p.c", flags=["-O3"], tests=d / "tests", output=tmp_path / "out",
                  generators=[ReplayGenerator(cands)], seed=1, mutants=0, timing_rounds=2, min_sample=0.01)
    report = optimize(req)
    assert "big" not in report.skipped_functions
    assert "not executed by the 2 quickest of the 3 tests (the profiled ones), so searched last: big" \
        in report.notes, report.notes
    assert any(n.startswith("profiled on the 2 quickest of the 3 tests") for n in report.notes), report.notes
    built = [c for c in report.candidates if c.function == "big" and c.id != "-"]
    assert built and built[0].stage in COMPILED, report.candidates
    assert report.weights["small"] > 0
