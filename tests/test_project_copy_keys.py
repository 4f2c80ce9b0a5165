"""A project build's copy must use the candidate's assembly, -g or not (issue 26).

``sgcc optimize --project`` times each candidate (and PGO everywhere) on a copy of the tree,
built with ``SGCC_OVERLAY``: the assembly of each compile, found by the compile's cache key
as recorded in the tree. With -g, gcc's assembly spells the build's directory
(``.file 0 "/dir"``, DW_AT_comp_dir), so in the copy no key matched, the overlay silently did
not apply, and the tree timed as the candidate was gcc's build (Lua -g: "PGO everywhere"
1.007x, which was gcc against gcc). Real make, gcc and the drop-in; no project search.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

from sgcc import proc
from sgcc.project import record

PGOWIN = Path(__file__).parent / "projects" / "pgowin"
MARKER = "sgcc_overlay_marker"


def _recorded(tmp_path: Path, sgcc_exe: str, cflags: str):
    tree = tmp_path / "tree" / "pgowin"
    shutil.copytree(PGOWIN, tree, ignore=shutil.ignore_patterns("build"))
    rec = tmp_path / "record" / "compiles.jsonl"
    rec.parent.mkdir()
    env = dict(os.environ, CC=sgcc_exe, CFLAGS=cflags, SGCC_CACHE="0", SGCC_RECORD=str(rec))
    r = proc.run(["make"], cwd=tree, env=env, timeout=300)
    assert r.ok, r.stderr.decode()
    compiles = [json.loads(line) for line in rec.read_text().splitlines()]
    kern = next(c for c in compiles if c["source"].endswith("kern.c"))
    # The candidate: gcc's assembly of kern.c with a symbol the linked program shows.
    text = Path(kern["asm"]).read_text() + f"\n\t.globl\t{MARKER}\n\t.data\n{MARKER}:\n\t.long\t1\n"
    overlay = tmp_path / "kern.overlay.json"
    overlay.write_text(json.dumps({kern["key"]: text}))
    return tree, kern, overlay


def _build_copy(tmp_path: Path, tree: Path, overlay: Path, name: str, cflags: str, *, mapped: bool):
    copy = tmp_path / name / "pgowin"
    shutil.copytree(tree, copy, symlinks=True)
    assert proc.run(["make", "clean"], cwd=copy, timeout=60).ok
    spec = SimpleNamespace(root=tree, build_timeout=300)
    tmpl = SimpleNamespace(cache_dir="", isa="flags", signing_key="", trusted_keys="")
    env = record.Builder(spec, tmpl).overlay_env(overlay, copy)
    env["CFLAGS"] = cflags
    if not mapped:
        env.pop("SGCC_PREFIX_MAP")
    r = proc.run(["make"], cwd=copy, env=env, timeout=300)
    assert r.ok, r.stderr.decode()
    symbols = proc.run(["nm", str(copy / "build" / "run")], timeout=60).stdout.decode()
    return copy, MARKER in symbols


def test_without_the_prefix_map_a_debug_build_in_a_copy_misses_the_overlay(tmp_path, sgcc_exe):
    """The failure, written first: with -g the copy's compile has another key, the overlay
    is not used, and only the record of used keys (not the object's bytes, which differ by
    their debug paths anyway) tells."""
    tree, kern, overlay = _recorded(tmp_path, sgcc_exe, "-O2 -g")
    assert f'"{tree}' in Path(kern["asm"]).read_text()  # the directory is in gcc's assembly
    copy, marked = _build_copy(tmp_path, tree, overlay, "plain", "-O2 -g", mapped=False)
    assert not marked
    assert record.unused(overlay, [kern["key"]]) == [kern["key"]]
    assert (copy / "build" / "kern.o").read_bytes() != (tree / "build" / "kern.o").read_bytes()


def test_a_debug_build_in_a_copy_uses_the_overlay_and_the_tree_paths(tmp_path, sgcc_exe):
    tree, kern, overlay = _recorded(tmp_path, sgcc_exe, "-O2 -g")
    copy, marked = _build_copy(tmp_path, tree, overlay, "mapped", "-O2 -g", mapped=True)
    assert marked
    assert record.unused(overlay, [kern["key"]]) == []
    # The copy's program passes the project's tests; its debug information names the tree,
    # where the shipped build will be made (the copy is only timed).
    assert proc.run(["make", "check"], cwd=copy, timeout=300).ok
    info = proc.run(["readelf", "--debug-dump=info", str(copy / "build" / "main.o")], timeout=60).stdout.decode()
    assert str(tree) in info and str(copy) not in info


def test_without_debug_information_the_copy_matched_before_and_still_does(tmp_path, sgcc_exe):
    tree, kern, overlay = _recorded(tmp_path, sgcc_exe, "-O2")
    for name, mapped in (("plain", False), ("mapped", True)):
        used = record.used_file(overlay)
        used.unlink(missing_ok=True)
        _, marked = _build_copy(tmp_path, tree, overlay, name, "-O2", mapped=mapped)
        assert marked and record.unused(overlay, [kern["key"]]) == []
