"""Profile-guided candidates: instrument, train on the tests in the sandbox, compile again.

The instrumented program runs as the sandbox's unprivileged user, so its profile must land
in the one directory it may write; the profile-guided compilation must really differ from
gcc -O3's; its candidates go through the engine like any other and what ships passes every
test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sgcc import proc
from sgcc.candidates.pgo import COMBINED, PgoGenerator
from sgcc.candidates.transplant.asmtext import normalized
from sgcc.candidates.transplant.side import Side
from sgcc.engine import Request, optimize
from sgcc.engine.proof import split
from sgcc.verify.box.sandbox import load_tests
from tests.conftest import EXAMPLES, TIMING_SAMPLE_SECONDS

pytestmark = pytest.mark.slow  # instrumented builds and training runs

FAST = dict(timing_rounds=6, min_sample=TIMING_SAMPLE_SECONDS, seed=1, test_timeout=5.0)


def _small_tests(d: Path, where: Path) -> Path:
    where.mkdir()
    for f in (d / "tests").iterdir():
        if not f.name.startswith("large."):
            (where / f.name).write_bytes(f.read_bytes())
    return where


def test_pgo_trains_in_the_sandbox_changes_code_and_ships_correct(tmp_path):
    d = EXAMPLES / "programs" / "insertion_sort"
    tests = _small_tests(d, tmp_path / "tests")
    gen = PgoGenerator()
    report = optimize(Request(source=d / "insertion_sort.c", flags=["-O3"], tests=tests, output=tmp_path / "out",
                              generators=[gen], **FAST))
    # Every test the search may see trained the instrumented program and left a profile (the
    # held-out ones are for acceptance only: sgcc.engine.proof).
    ok_runs, profiles = gen.trained["pgo"]
    visible, held = split(load_tests(tests))
    assert held and ok_runs == len(visible) and profiles >= 1
    assert gen.profile_dir is None  # removed when the run ended
    variant = gen.variants[0]
    assert variant.name == "pgo"
    assert variant.side is not None and "-fprofile-use" in variant.shown
    base = {u.name: normalized(u.text) for u in gen.base.asm.units}
    changed = [n for n, u in variant.side.units.items() if n in base and normalized(u.text) != base[n]]
    assert changed, "the profile changed nothing"
    built = [c for c in report.candidates if c.generator == "pgo" and c.id != "-"]
    assert built, report.summary()
    for c in built:
        # gcc's own code under a profile: it assembles, links and passes every test.
        assert c.stage in ("time", "accepted"), (c.function, c.stage, c.reason)
        assert c.meta["flags"][0] == "-fprofile-use"
    # PGO combined with other variants: each compiled with the same profile (found where gcc
    # looks for it: without it, gcc's code would be what an empty profile directory gives).
    combined = {v.name: v for v in gen.variants[1:]}
    assert set(combined) == {name for name, _b, _f in COMBINED}, gen.notes
    empty = tmp_path / "no-profile"
    empty.mkdir()
    for name, _base, extra in COMBINED:
        v = combined[name]
        assert v.side is not None and v.error == "", (name, v.error)
        assert v.shown[0] == "-fprofile-use" and v.shown[-len(extra):] == extra
        flags = [f"-fprofile-use={empty}" if f.startswith("-fprofile-use=") else f for f in v.flags]
        s = tmp_path / f"{name}-noprofile.s"
        proc.run(["gcc", "-O3", *flags, "-S", "-o", str(s), str(d / "insertion_sort.c")], check=True)
        without = Side(s.read_text())
        assert any(normalized(u.text) != normalized(without.units[n].text)
                   for n, u in v.side.units.items() if n in without.units), f"{name} did not use the profile"
    for t in sorted((d / "tests").glob("*.in")):
        ref = tmp_path / "ref"
        if not ref.exists():
            proc.run(["gcc", "-O3", str(d / "insertion_sort.c"), "-o", str(ref)], check=True)
        want = proc.run([str(ref)], stdin=t.read_bytes(), timeout=60)
        got = proc.run([str(tmp_path / "out")], stdin=t.read_bytes(), timeout=60)
        assert (got.stdout, got.returncode) == (want.stdout, want.returncode), t.name


def test_pgo_offers_the_whole_file_when_the_screen_allows_it(tmp_path):
    """Profile-guided layout works across functions: the whole file is a candidate too (here
    a program without writable data, which the text screen accepts whole)."""
    d = EXAMPLES / "programs" / "collatz"
    tests = _small_tests(d, tmp_path / "tests")
    report = optimize(Request(source=d / "collatz.c", flags=["-O3"], tests=tests, output=tmp_path / "out",
                              generators=[PgoGenerator()], budget_candidates=4, **FAST))
    whole = [c for c in report.candidates if c.function == "<translation-unit>" and c.meta.get("variant") == "pgo"]
    assert whole and whole[0].id != "-", [(c.function, c.stage, c.reason) for c in report.candidates]
    assert whole[0].stage in ("time", "accepted"), whole[0].reason
