"""What project mode stores for the adopted whole-project candidate (sgcc.project.store): its
texts, with the winners the search proved against them, so that a plain ``make CC=sgcc``
builds what the report says shipped. With a real cache directory."""

from __future__ import annotations

import functools
from pathlib import Path
from types import SimpleNamespace

from sgcc.asm import WHOLE_UNIT
from sgcc.cache.entry import Applied
from sgcc.engine.request import Request
from sgcc.project import store as projstore
from sgcc.project import whole
from sgcc.project.state import Adopted

GCC = "\t.text\n\t.globl\tf\nf:\n\tret\n"
PGO = "\t.text\n\t.p2align 4\n\t.globl\tf\nf:\n\tret\n"
WINNER = "\t.text\n\t.p2align 5\n\t.globl\tf\nf:\n\tret\n"


def _run(tmp_path: Path):
    asm = tmp_path / "x.s"
    asm.write_text(GCC)
    c = SimpleNamespace(key="k" * 64, source=tmp_path / "x.c", asm_path=asm, context={"flags": ["-O2"]},
                        args=["-O2", "-c", "x.c"])
    req = Request(source=tmp_path / "x.c", flags=["-O2"], tests=tmp_path, output=tmp_path / "out",
                  cache_dir=tmp_path / "cache")
    return SimpleNamespace(adopted=Adopted({c.key: PGO}, whole.PGO, {c.key: "d" * 64}), tmpl=req, compiles=[c],
                           report=SimpleNamespace(whole_project={"timing": {"speedup": 1.2, "low": 1.1, "high": 1.3}}))


def _stored_after(tmp_path: Path, searched_against: str) -> Applied:
    """What store_whole leaves under the compile's key when the cache held a whole-unit winner
    proven against ``searched_against``."""
    run = _run(tmp_path)
    key = run.compiles[0].key
    run.tmpl.cache_store().update(key, functools.partial(projstore._applying, "x.c", Applied(
        {WHOLE_UNIT: WINNER}, baseline=searched_against, context={"flags": ["-O2"]})))
    projstore.store_whole(run)
    return run.tmpl.cache_store().get(key).applied


def test_a_whole_unit_winner_found_on_the_adopted_build_is_what_is_stored(tmp_path):
    # pgowin: the search shipped a whole-unit candidate (the pgo generator's layout, 1.083x
    # [1.063, 1.102] against PGO everywhere) and the report said so, but only per-function
    # winners were joined: the cache held PGO everywhere's text, and the rebuilt tree was
    # PGO everywhere's code byte for byte.
    stored = _stored_after(tmp_path, PGO)
    assert stored.units == {WHOLE_UNIT: WINNER} and stored.functions == [WHOLE_UNIT]
    assert stored.generator == whole.PGO.generator and stored.baseline == GCC


def test_the_adopted_text_is_stored_when_the_search_found_nothing_on_it(tmp_path):
    # A whole unit proven against another text (gcc's, an earlier run's) is not joined.
    assert _stored_after(tmp_path, GCC).units == {WHOLE_UNIT: PGO}
