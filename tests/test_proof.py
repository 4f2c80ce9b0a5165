"""Tests a candidate cannot game (sgcc.engine.proof): held-out tests and generated inputs.

The attack is the papers' reward hacking: a candidate that answers the visible tests from a
table. It is built from C the way an adversary would (gcc's own code for a function that
returns the recorded answers), offered as a replay candidate, and must stop at ``test``
without being timed, while an honest candidate of the same function is still accepted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sgcc import proc
from sgcc.asm.units import AsmFile
from sgcc.candidates.replay import ReplayGenerator
from sgcc.engine import Request, optimize
from sgcc.engine.proof import GENERATED_PREFIX, split
from sgcc.verify.box.sandbox import TestCase
from tests.conftest import TIMING_SAMPLE_SECONDS

PROGRAM = r"""#include <stdio.h>
__attribute__((noinline)) long total(const long *a, int n) {
    long s = 0;
    for (int i = 0; i < n; i++) s += a[i] * (i + 1);
    return s;
}
int main(void) {
    int n;
    static long a[1000];
    if (scanf("%d", &n) != 1 || n < 0 || n > 1000) return 1;
    for (int i = 0; i < n; i++) if (scanf("%ld", &a[i]) != 1) return 2;
    printf("%ld\n", total(a, n));
    return 0;
}
"""

# The visible tests' answers, learnt by heart: right on them, wrong on anything else.
HARD_CODED = r"""long total(const long *a, int n) {
    if (n == 5 && a[0] == 3) return 46;
    if (n == 3 && a[0] == 10) return 140;
    return 0;
}
"""

HONEST = r"""long total(const long *a, int n) {
    long s = 0;
    for (int i = n - 1; i >= 0; i--) s += a[i] * (i + 1);
    return s;
}
"""


def _unit(tmp_path: Path, c_text: str, name: str) -> str:
    src = tmp_path / f"{name}.c"
    src.write_text(c_text)
    asm = proc.run(["gcc", "-O3", "-S", "-o", "-", str(src)], check=True).stdout.decode()
    return AsmFile.parse(asm).unit("total").text


@pytest.fixture
def project(tmp_path):
    d = tmp_path / "p"
    (d / "tests").mkdir(parents=True)
    (d / "p.c").write_text(PROGRAM)
    (d / "tests" / "a.in").write_text("5\n3 1 4 1 5\n")
    (d / "tests" / "b.in").write_text("3\n10 20 30\n")
    return d


def _run(project: Path, tmp_path: Path, text: str, **kw):
    cands = tmp_path / "cands"
    cands.mkdir(exist_ok=True)
    (cands / "total.s").write_text(text)
    req = Request(source=project / "p.c", flags=["-O3"], tests=project / "tests", output=tmp_path / "out",
                  generators=[ReplayGenerator(cands)], seed=1, timing_rounds=6, min_sample=TIMING_SAMPLE_SECONDS, **kw)
    return optimize(req)


def test_the_hard_coded_candidate_passes_the_visible_tests(project, tmp_path):
    """The premise: without hidden tests, the table of answers passes every visible test."""
    report = _run(project, tmp_path, _unit(tmp_path, HARD_CODED, "hard"), mutants=0)
    (cand,) = report.candidates
    assert cand.stage != "test", cand.reason


def test_generated_inputs_stop_the_hard_coded_candidate(project, tmp_path):
    report = _run(project, tmp_path, _unit(tmp_path, HARD_CODED, "hard"))
    (cand,) = report.candidates
    assert cand.stage == "test"
    assert "differs from gcc's program on" in cand.reason
    assert cand.speedup is None  # never timed
    assert cand.detail == ""  # nothing of the hidden tests reaches feedback
    assert report.proof["generated"] == 16 and report.proof["kept"] >= 8
    assert report.proof["failed_generated"] + report.proof["failed_held_out"] == 1
    assert (tmp_path / "out").exists()


def test_an_honest_candidate_passes_the_hidden_tests(project, tmp_path):
    report = _run(project, tmp_path, _unit(tmp_path, HONEST, "honest"))
    (cand,) = report.candidates
    assert cand.stage in ("time", "accepted"), cand.reason
    assert report.proof["failed_generated"] == 0 and report.proof["failed_held_out"] == 0


def test_split_holds_out_a_third_deterministically():
    tests = [TestCase(name=f"t{i}", stdin=b"") for i in range(6)]
    visible, held = split(tests)
    assert [t.name for t in held] == ["t1", "t4"] and len(visible) == 4
    assert split(tests) == (visible, held)
    one = [TestCase(name="only", stdin=b"")]
    assert split(one) == (one, [])
    two = tests[:2]
    assert [t.name for t in split(two)[1]] == ["t1"]
    assert not any(t.name.startswith(GENERATED_PREFIX) for t in visible + held)


def test_untrusted_candidates_need_every_isolation_layer(project, tmp_path, monkeypatch):
    """Where runs cannot be fully boxed, a model's answers and replay files are refused unless
    the user accepts the risk; gcc's own variants still run."""
    from sgcc.errors import SgccError
    from sgcc.verify.box import isolation_level

    partial = isolation_level.IsolationReport({name: name != "seccomp filter" for name in isolation_level.LAYERS})
    monkeypatch.setattr(isolation_level, "_report", partial)
    with pytest.raises(SgccError, match="refusing to run replay candidates"):
        _run(project, tmp_path, _unit(tmp_path, HONEST, "honest"))
    report = _run(project, tmp_path, _unit(tmp_path, HONEST, "honest"), accept_isolation_risk=True)
    assert report.isolation["complete"] is False and "seccomp" in report.isolation["level"]
    from sgcc.candidates.layout import LayoutGenerator

    req = Request(source=project / "p.c", flags=["-O3"], tests=project / "tests", output=tmp_path / "out2",
                  generators=[LayoutGenerator()], seed=1, timing_rounds=6, min_sample=TIMING_SAMPLE_SECONDS, budget_candidates=1)
    assert optimize(req).isolation["complete"] is False
