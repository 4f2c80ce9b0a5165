"""The references' figures (sgcc.project.references): one build, one figure. With real
programs built by gcc and compared by the code the loader maps; no workload is run, and a
timing asked for where the code is sgcc's own fails the test."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from sgcc import proc
from sgcc.project import references
from sgcc.project.report import reference_lines


def _tree(root: Path, name: str, body: str) -> Path:
    tree = root / name
    tree.mkdir()
    (tree / "main.c").write_text(f"int main(void) {{ {body} }}\n")
    assert proc.run(["gcc", "-O2", "main.c", "-o", "run"], cwd=tree, timeout=60).ok
    return tree


def _run(final: dict):
    def never(*_args, **_kwargs):
        pytest.fail("timed a build against its own code")

    return SimpleNamespace(workload_runs=lambda: (None, never, lambda tree: never),
                           tmpl=SimpleNamespace(timing_rounds=4, min_sample=0.01, seed=0),
                           report=SimpleNamespace(final=final), note=lambda _m: None, budget=None)


def test_a_reference_that_is_sgcc_s_build_carries_its_figure_and_is_not_timed_against_it(tmp_path):
    # wren: PGO + LTO adopted at 1.171x [1.128, 1.210] and, the same code, timed again as the
    # PGO + LTO reference at 1.106x [1.053, 1.165]; sgcc's build timed against itself.
    shipped = _tree(tmp_path, "final", "return 0;")
    ref = tmp_path / "ref"
    shutil.copytree(shipped, ref)
    (ref / "main.c").write_text("/* another path, another comment: the same code */\n" + (ref / "main.c").read_text())
    final = {"speedup": 1.171, "low": 1.128, "high": 1.210, "rounds": 18, "tests_passed": True}
    refs: dict = {}
    run = _run(final)
    out = references._timed(run, "the PGO + LTO reference", run.workload_runs()[1], ref, shipped, "sgcc_vs_pgo_lto",
                            refs)
    assert (out["speedup"], out["low"], out["high"], out["rounds"]) == (1.171, 1.128, 1.210, 18)
    assert "code byte for byte" in out["timed_as"]
    assert refs["sgcc_vs_pgo_lto"]["same_code"] is True
    lines = reference_lines({"pgo_everywhere": {"error": "not built"}, "pgo_lto": out, **refs}, final)
    assert any("1.171x [1.128, 1.210] against gcc's build (timed as sgcc's build" in ln for ln in lines)
    assert any("sgcc's build against it: 1 (the same code byte for byte: not timed against itself)" in ln
               for ln in lines)


def test_a_reference_with_other_code_is_timed(tmp_path):
    shipped = _tree(tmp_path, "final", "return 0;")
    other = _tree(tmp_path, "ref", "return 1;")
    assert not references.same_code(other, shipped)[0]
    run = _run({"speedup": 1.2, "low": 1.1, "high": 1.3})
    with pytest.raises(pytest.fail.Exception, match="timed a build"):
        references._timed(run, "the PGO + LTO reference", run.workload_runs()[1], other, shipped, "sgcc_vs_pgo_lto",
                          {})
