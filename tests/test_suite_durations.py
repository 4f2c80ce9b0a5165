"""tests/durations.py: the table that orders the suite's files and picks the fast subset."""

from __future__ import annotations

import json
import os

import pytest

from tests import conftest, durations

REPORT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.test_a" name="test_quick" time="0.5" />
<testcase classname="tests.test_a" name="test_long[x-1]" time="12.0" />
<testcase classname="tests.test_b.TestGroup" name="test_in_class" time="3.0" />
<testcase classname="tests.test_b" name="test_edge" time="1.999" />
</testsuite></testsuites>"""


def test_seconds_per_file_and_per_test_from_a_junit_report(tmp_path):
    xml = tmp_path / "r.xml"
    xml.write_text(REPORT)
    files, tests = durations.from_junit(xml)
    assert files == {"tests/test_a.py": 12.5, "tests/test_b.py": pytest.approx(4.999)}
    assert tests["tests/test_a.py::test_long[x-1]"] == 12.0
    assert tests["tests/test_b.py::TestGroup::test_in_class"] == 3.0  # the node id pytest gives it
    slow = {n for n, s in tests.items() if s >= durations.SLOW_SECONDS}
    assert slow == {"tests/test_a.py::test_long[x-1]", "tests/test_b.py::TestGroup::test_in_class"}


def test_an_unreadable_table_orders_nothing_and_marks_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(durations, "TABLE", tmp_path / "missing.json")
    assert durations.load() == ({}, frozenset())
    (tmp_path / "old.json").write_text(json.dumps({"tests/test_a.py": 3.0}))  # the shape before "files"/"slow"
    monkeypatch.setattr(durations, "TABLE", tmp_path / "old.json")
    assert durations.load() == ({}, frozenset())


def test_the_table_in_the_repository_names_real_tests():
    files, slow = durations.load()
    assert files and slow
    for nodeid in list(slow)[:50]:
        path = nodeid.split("::")[0]
        assert path in files, nodeid
        assert (durations.TABLE.parent.parent / path).is_file(), nodeid


def test_the_time_is_grouped_by_what_it_pays_for():
    tests = {"tests/test_funcproof.py::test_a": 10.0, "tests/test_footprint_e2e.py::test_b[x]": 5.0,
             "tests/test_project_cmake.py::test_c": 12.0, "tests/test_lexer.py::test_d": 0.5}
    rows = {g: (n, slow, t) for g, n, slow, t in durations.grouped(tests)}
    assert rows == {"function-level test and footprint rule (emulator)": (2, 2, 15.0),
                    "project mode end to end (make/CMake builds, PGO, LTO, races)": (1, 1, 12.0),
                    durations.OTHER: (1, 0, 0.5)}
    assert durations.grouped(tests)[0][0].startswith("function-level")  # the largest first


def _tester_seconds(tmp_path) -> float:
    """The seconds a FunctionTester made with the setting's default gets in this test."""
    from sgcc import proc
    from sgcc.verify.function import funcdiff

    src = tmp_path / "f.c"
    src.write_text("int f(int x) { return x + 1; }\n")
    proc.run(["gcc", "-O2", "-c", str(src), "-o", str(tmp_path / "f.o")], check=True)
    return funcdiff.FunctionTester(None, tmp_path / "f.o", src.read_text()).seconds


def test_a_test_not_about_the_function_test_gets_its_small_share(tmp_path):
    # tests/conftest.py: sgcc run as a program reads the environment, the engine in this
    # process gets the share from the tester's maker.
    assert os.environ.get("SGCC_FUNCTION_SECONDS") == str(conftest.QUICK_FUNCTION_SECONDS)
    assert _tester_seconds(tmp_path) == conftest.QUICK_FUNCTION_SECONDS


@pytest.mark.function_test
def test_a_test_about_the_function_test_gets_the_setting_s_default(tmp_path):
    from sgcc.verify.function import funcdiff

    assert "SGCC_FUNCTION_SECONDS" not in os.environ
    assert _tester_seconds(tmp_path) == funcdiff.DEFAULT_SECONDS
