"""Ranking candidates before timing (sgcc.engine.rank): valgrind's counts predict the order;
they never accept anything."""

from __future__ import annotations

import shutil

import pytest

from sgcc import proc
from sgcc.engine import rank
from sgcc.verify.box import sandbox as sandboxmod
from tests.conftest import EXAMPLES

COLLATZ = EXAMPLES / "programs" / "collatz"


def test_spearman():
    assert rank.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert rank.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert rank.spearman([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    assert rank.spearman([1, 1, 2, 3], [5, 6, 7, 8]) == pytest.approx(0.9486832980505138)  # ties: mean ranks
    assert rank.spearman([1, 2], [1, 2]) is None  # too few
    assert rank.spearman([1, 1, 1], [1, 2, 3]) is None  # no spread


def test_cost_model_and_summary_parsing():
    text = "desc: I1 cache\ncmd: ./x\nevents: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw\nsummary: 1000 1 1 0 2 1 0 3 0\n"
    events = rank.parse_summary(text)
    assert events["Ir"] == 1000 and events["D1mw"] == 3
    assert rank.cost(events) == 1000 + 10 * (1 + 2 + 3) + 100 * (1 + 1 + 0)
    events = rank.parse_summary("events: Ir Bc Bcm Bi Bim\nsummary: 1000 100 7 10 3\n")
    assert rank.cost(events) == 1000 + 15 * (7 + 3)
    assert rank.parse_summary("events: Ir\n") is None and rank.parse_summary("summary: x\nevents: Ir\n") is None


def test_agreement_lists_each_prediction():
    a = rank.agreement([("c1", 1.2, 1.25), ("c2", 1.0, 0.99), ("c3", 1.1, 1.02)])
    assert a["spearman"] == pytest.approx(1.0) and a["timed"] == 3
    assert a["pairs"][0] == {"id": "c1", "predicted": 1.2, "measured": 1.25}


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_ranker_predicts_the_faster_binary_in_the_sandbox(tmp_path):
    fast, slow = tmp_path / "fast", tmp_path / "slow"
    proc.run(["gcc", "-O2", "-o", str(fast), str(COLLATZ / "collatz.c")], check=True)
    proc.run(["gcc", "-O0", "-o", str(slow), str(COLLATZ / "collatz.c")], check=True)
    tests = sandboxmod.load_tests(COLLATZ / "tests")
    with sandboxmod.Sandbox(timeout=60) as sandbox:
        ranker = rank.Ranker(sandbox, fast, tests)
        assert ranker.ok, ranker.note
        assert 1 <= len(ranker.tests) <= len(tests)
        sizes = sorted(len(t.stdin) for t in tests)
        assert len(ranker.tests[0].stdin) == sizes[len(sizes) // 2]  # the median input first
        same = ranker.predict(fast)
        worse = ranker.predict(slow)
    assert same == pytest.approx(1.0, abs=1e-3)  # the counts are exact: the same binary predicts no change
    assert worse is not None and worse < 0.9


def test_ranker_without_valgrind_ranks_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(rank, "valgrind", lambda: None)
    ranker = rank.Ranker(sandbox=None, baseline=tmp_path / "x", tests=[object()])
    assert not ranker.ok and "valgrind not found" in ranker.note
    assert ranker.predict(tmp_path / "x") is None


def test_the_summary_says_how_well_the_ranking_predicted():
    from sgcc.engine.report import Report

    report = Report(source="p.c", flags=["-O3"], isa="x86-64", min_gain=0.03)
    report.ranking = {**rank.agreement([("c1", 1.2, 1.25), ("c2", 1.0, 0.99), ("c3", 1.1, 1.02)]), "ranked": 5}
    assert "ranking (5 ranked by valgrind counts): Spearman rho +1.00 over 3 timed" in report.summary()
    report.ranking = rank.agreement([("c1", 1.2, 1.25)])
    assert "Spearman rho n/a" in report.summary()
    assert report.to_dict()["ranking"]["pairs"][0]["id"] == "c1"
