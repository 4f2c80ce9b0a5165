"""The drop-in inside LTO links (sgcc/dropin/ltrans.py), with the real gcc, lto-wrapper and as.

A three-file program compiled with ``-flto``: ``helper`` (a global function), and two static
functions named ``twice`` that LTO renames ``twice.lto_priv.N``. Winners are stored as
``sgcc optimize`` stores them: under the key of the partition's assembly (gcc's own, from a
``-save-temps`` link) in the link's context. The program's exit status is its answer.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sgcc.asm.units import AsmFile
from sgcc.cache import keys
from sgcc.cache import store as cache
from sgcc.cache.entry import Applied, Entry
from sgcc.dropin import ltrans
from sgcc.gcc import args as gccargs

SOURCES = {
    "a.c": "int helper(int); int callt(int); int callc(int);\n"
           "int main(int argc, char **argv) { (void)argv; unsigned s = 0;\n"
           "  for (int i = 0; i < argc * 1000; i++) s += helper(i) + callt(i) + callc(i);\n"
           "  return s % 199; }\n",
    "b.c": "__attribute__((noinline)) int helper(int x) { return (x * x) ^ (x >> 3); }\n"
           "__attribute__((noinline)) static int twice(int y) { return y * 2 + 1; }\n"
           "int callt(int z) { return twice(z) + twice(z + 1); }\n",
    "c.c": "__attribute__((noinline)) static int twice(int y) { return y * 3; }\n"
           "int callc(int z) { return twice(z); }\n",
}


def _run(argv, cwd, env=None, check=True):
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=check, timeout=120)


@pytest.fixture(scope="module")
def objects(tmp_path_factory, real_gcc):
    """The program's LTO objects (compiled once; the links are what the tests vary)."""
    d = tmp_path_factory.mktemp("lto")
    for name, text in SOURCES.items():
        (d / name).write_text(text)
    _run([real_gcc, "-O2", "-flto", "-c", *SOURCES], d)
    return d


def _env(tmp: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGCC_") or k == "SGCC_CONFIG"}
    env.update(SGCC_CACHE_DIR=str(tmp / "cache"), SGCC_LOGFILE=str(tmp / "sgcc.log"), **extra)
    return env


def _link(exe: str, d: Path, out: Path, flags: list[str], env: dict | None = None) -> bytes:
    _run([exe, *flags, "a.o", "b.o", "c.o", "-o", str(out)], d, env)
    return out.read_bytes()


def _partitions(real_gcc: str, d: Path, flags: list[str], work: Path) -> list[str]:
    """gcc's assembly of each ltrans partition of this link (``-save-temps``, in ``work``)."""
    work.mkdir()
    _run([real_gcc, *flags, *(str(d / o) for o in ("a.o", "b.o", "c.o")), "-save-temps", "-o", "p"], work)
    found = sorted(glob.glob(str(work / "p.ltrans*.ltrans.s")))
    assert found, os.listdir(work)
    return [Path(p).read_text() for p in found]


def _seed(cache_dir: Path, real_gcc: str, flags: list[str], asm: str, units: dict[str, str]) -> str:
    """Store ``units`` as winners for the partition whose gcc assembly is ``asm``, in the
    context of a link with ``flags``, as ``sgcc optimize`` stores winners. Returns the key."""
    inv = gccargs.parse([*flags, "a.o", "b.o", "c.o", "-o", "p"])
    key = keys.entry_key(keys.context(real_gcc, ltrans.context_flags(inv), "flags"), keys.tu_digest(asm))
    cache.Store(cache_dir).update(key, lambda old: Entry(applied=Applied(units)))
    return key


def _with_nop(asm: str, name: str) -> str:
    unit = next(u for u in AsmFile.parse(asm).units if u.name == name)
    new = unit.text.replace("\t.cfi_startproc\n", "\t.cfi_startproc\n\tnop\n", 1)
    assert new != unit.text
    return new


def _first_insn(binary: Path, name: str) -> str:
    text = _run(["objdump", "-d", "--no-show-raw-insn", str(binary)], binary.parent).stdout.decode()
    lines = text.split(f"<{name}>:\n", 1)[1].splitlines()
    return lines[0].split("\t", 1)[1].split()[0]


def _status(binary: Path) -> int:
    return _run([str(binary)], binary.parent, check=False).returncode


def test_which_links_are_routed_and_their_context():
    def inv(*argv):
        return gccargs.parse(list(argv))

    assert ltrans.lto_link(inv("-O2", "-flto", "a.o", "-o", "p"))
    assert ltrans.lto_link(inv("-flto=auto", "a.o", "b.o"))  # the level from the objects
    assert ltrans.lto_link(inv("-O2", "-flto", "x.c", "-o", "p"))  # compiled and linked at once
    assert ltrans.lto_link(inv("-O2", "-flto", "-shared", "-fPIC", "a.o", "-o", "libx.so"))
    assert not ltrans.lto_link(inv("-O2", "-flto", "-fno-lto", "a.o", "-o", "p"))
    # No -flto: LTO still runs through the linker plugin when the objects hold its language.
    assert ltrans.lto_link(inv("-O2", "a.o", "-o", "p")) and ltrans.lto_link(inv("a.o", "libx.a", "-lm"))
    assert not ltrans.lto_link(inv("-O2", "-fno-use-linker-plugin", "a.o", "-o", "p"))
    assert not ltrans.lto_link(inv("-O2", "-fno-lto", "a.o", "-o", "p"))
    assert not ltrans.lto_link(inv("-O2", "-flto", "-c", "x.c"))  # a compile: GIMPLE, not code
    assert not ltrans.lto_link(inv("-O2", "-flto", "-save-temps", "a.o"))  # gcc's temps as gcc writes them
    assert not ltrans.lto_link(inv("-O2", "-flto", "-r", "a.o", "-o", "r.o"))
    assert not ltrans.lto_link(inv("-O2", "-flto", "-wrapper", "x", "a.o"))
    # The job count is not the code's: -flto=4 and -flto share a context; the partitioning is.
    same = ltrans.context_flags(inv("-O2", "-flto=4", "a.o", "-lm", "-o", "p"))
    assert keys.key_flags(same) == keys.key_flags(ltrans.context_flags(inv("-O2", "-flto", "b.o", "-o", "q")))
    other = ltrans.context_flags(inv("-O2", "-flto", "-flto-partition=max", "a.o", "-o", "p"))
    assert keys.key_flags(same) != keys.key_flags(other)
    assert keys.key_flags(same)[-1] == "-fltrans"  # never an ordinary compile's context


def test_an_lto_link_is_gcc_s_own_with_no_winner_in_its_context(objects, tmp_path, sgcc_exe, real_gcc):
    flags = ["-O2", "-flto"]
    gcc = _link(real_gcc, objects, tmp_path / "gcc", flags)
    # Empty cache: one exec of gcc.
    assert _link(sgcc_exe, objects, tmp_path / "sgcc", flags, _env(tmp_path)) == gcc
    assert "lto link, nothing to substitute" in (tmp_path / "sgcc.log").read_text()
    # A winner in the context, for another program's partition: the front runs on every
    # partition, finds nothing for this one, and the link is still gcc's byte for byte.
    asm = _partitions(real_gcc, objects, flags, tmp_path / "temps")[0]
    _seed(tmp_path / "cache", real_gcc, flags, asm.replace("imull", "imul"), {"helper": "\tret\n"})
    (tmp_path / "sgcc.log").unlink()
    assert _link(sgcc_exe, objects, tmp_path / "sgcc2", flags, _env(tmp_path)) == gcc
    log = (tmp_path / "sgcc.log").read_text()
    assert "routing the ltrans assembly through sgcc" in log and "substituted" not in log, log
    stats = _run([sgcc_exe, "stats", "--json"], tmp_path, _env(tmp_path)).stdout.decode()
    assert '"ltrans": 1' in stats and '"tu_misses": 1' in stats, stats


def test_a_partition_s_winner_ships_in_every_link_of_that_context(objects, tmp_path, sgcc_exe, real_gcc):
    flags = ["-O2", "-flto"]
    gcc = tmp_path / "gcc"
    _link(real_gcc, objects, gcc, flags)
    asm = _partitions(real_gcc, objects, flags, tmp_path / "temps")
    assert len(asm) == 1
    key = _seed(tmp_path / "cache", real_gcc, flags, asm[0], {"helper": _with_nop(asm[0], "helper")})
    # The job count (-flto=2: two ltrans jobs through lto-wrapper's make) and compiling the
    # sources in the same command do not change the partition: the key is met each time.
    for how, argv in [("objects", ["-flto", "a.o", "b.o", "c.o"]),
                      ("jobs", ["-flto=2", "a.o", "b.o", "c.o"]),
                      ("sources", ["-flto", "a.c", "b.c", "c.c"])]:
        out = tmp_path / f"sgcc-{how}"
        _run([sgcc_exe, "-O2", *argv, "-o", str(out)], objects, _env(tmp_path))
        assert _first_insn(out, "helper") == "nop", how
        assert _first_insn(gcc, "helper") != "nop"
        assert _status(out) == _status(gcc), how
    log = (tmp_path / "sgcc.log").read_text()
    assert log.count(f"cache hit {key[:16]}") == 3, log
    # Another context (the partitioning changed by -flto-partition=max): nothing of it is used.
    other = ["-O2", "-flto", "-flto-partition=max"]
    assert _link(sgcc_exe, objects, tmp_path / "max", other, _env(tmp_path)) == \
        _link(real_gcc, objects, tmp_path / "max-gcc", other)


def test_a_link_without_flto_of_lto_objects_gets_its_partitions_winners(objects, tmp_path, sgcc_exe, real_gcc):
    # A project's own link of an LTO variant's objects (project mode's LTO candidates change
    # the compiles only): no -flto on the command line, gcc's linker plugin runs LTO because
    # the objects hold its language. Its partitions are keyed in that link's own context.
    flags = ["-O2"]
    gcc = _link(real_gcc, objects, tmp_path / "gcc", flags)
    assert _link(sgcc_exe, objects, tmp_path / "empty", flags, _env(tmp_path)) == gcc
    assert "pass-through" in (tmp_path / "sgcc.log").read_text()
    asm = _partitions(real_gcc, objects, flags, tmp_path / "temps")
    assert len(asm) == 1 and "\nhelper:\n" in asm[0]
    _seed(tmp_path / "cache", real_gcc, flags, asm[0], {"helper": _with_nop(asm[0], "helper")})
    out = tmp_path / "sgcc"
    _link(sgcc_exe, objects, out, flags, _env(tmp_path))
    assert _first_insn(out, "helper") == "nop" and _first_insn(tmp_path / "gcc", "helper") != "nop"
    assert _status(out) == _status(tmp_path / "gcc")
    # The same objects linked with -flto are another context: nothing of this one is used.
    explicit = ["-O2", "-flto"]
    assert _link(sgcc_exe, objects, tmp_path / "explicit", explicit, _env(tmp_path)) == \
        _link(real_gcc, objects, tmp_path / "explicit-gcc", explicit)


def test_lto_priv_names_are_stable_and_each_partition_is_its_own_unit(objects, tmp_path, sgcc_exe, real_gcc):
    # -flto-partition=max: a partition per function. The two static `twice` become
    # twice.lto_priv.0 and .1, the same in every link (here: two links, different job counts).
    flags = ["-O2", "-flto=2", "-flto-partition=max"]
    first = _partitions(real_gcc, objects, flags, tmp_path / "t1")
    again = _partitions(real_gcc, objects, ["-O2", "-flto=4", "-flto-partition=max"], tmp_path / "t2")
    assert sorted(first) == sorted(again)
    named = [a for a in first if "twice.lto_priv.0:" in a]
    assert len(first) >= 3 and len(named) == 1, [a[:200] for a in first]
    _seed(tmp_path / "cache", real_gcc, flags, named[0], {"twice.lto_priv.0": _with_nop(named[0], "twice.lto_priv.0")})
    out = tmp_path / "sgcc"
    _link(sgcc_exe, objects, out, flags, _env(tmp_path))
    gcc = tmp_path / "gcc"
    _link(real_gcc, objects, gcc, flags)
    assert _first_insn(out, "twice.lto_priv.0") == "nop"
    assert _first_insn(out, "twice.lto_priv.1") == _first_insn(gcc, "twice.lto_priv.1")
    assert _status(out) == _status(gcc)


def test_a_winner_the_assembler_refuses_leaves_the_partition_gcc_s(objects, tmp_path, sgcc_exe, real_gcc):
    # A cache entry is an adversary's text: one that does not assemble (or that names a
    # function the partition does not have) costs the link nothing but gcc's own code.
    flags = ["-O2", "-flto"]
    gcc = _link(real_gcc, objects, tmp_path / "gcc", flags)
    asm = _partitions(real_gcc, objects, flags, tmp_path / "temps")[0]
    helper = _with_nop(asm, "helper")
    _seed(tmp_path / "cache", real_gcc, flags, asm, {"helper": helper.replace("\tnop\n", "\tnot_an_insn %zz\n")})
    assert _link(sgcc_exe, objects, tmp_path / "sgcc", flags, _env(tmp_path)) == gcc
    assert "as on the substituted assembly" in (tmp_path / "sgcc.log").read_text()
    _seed(tmp_path / "cache", real_gcc, flags, asm, {"no_such_function": helper})
    assert _link(sgcc_exe, objects, tmp_path / "sgcc2", flags, _env(tmp_path)) == gcc


def test_the_front_is_as_for_every_other_assembly(tmp_path):
    # Run without the link's word (SGCC_LTRANS), or for an assembly that is not an ltrans
    # partition, or with a command it does not read, it is the real `as`, arguments untouched.
    (tmp_path / "x.s").write_text("\t.text\nf:\n\tret\n")
    front = [sys.executable, "-P", "-m", "sgcc.dropin.ltrans"]
    env = {k: v for k, v in os.environ.items() if k not in (ltrans.ENV, "COLLECT_GCC_OPTIONS")}
    _run([*front, "--64", "-o", "plain.o", "x.s"], tmp_path, env)
    _run(["as", "--64", "-o", "ref.o", "x.s"], tmp_path)
    assert (tmp_path / "plain.o").read_bytes() == (tmp_path / "ref.o").read_bytes()
    bad = _run([*front, "--64", "-o", "bad.o", "missing.s"], tmp_path, env, check=False)
    assert bad.returncode != 0 and b"missing.s" in bad.stderr  # as's own message
    assert ltrans._io(["--64", "-o", "o.o", "in.s"]) == (3, "o.o")
    assert ltrans._io(["--64", "-o", "o.o", "in.s", "more.s"]) is None
    assert ltrans._io(["--64", "in.s"]) is None


def test_a_recorded_lto_build_lists_its_partitions_and_an_overlay_build_uses_them(objects, tmp_path, sgcc_exe,
                                                                                  real_gcc):
    # What `sgcc optimize --project` needs of an LTO build: the recording build (cache off)
    # writes each partition's key and gcc's assembly beside the compiles' record; a build from
    # an overlay keyed by a partition's key assembles the overlay's text and notes the key used.
    flags = ["-O2", "-flto", "-flto-partition=max"]
    gcc = tmp_path / "gcc"
    _link(real_gcc, objects, gcc, flags)
    record = tmp_path / "rec" / "compiles.jsonl"
    record.parent.mkdir()
    env = _env(tmp_path, SGCC_CACHE="0", SGCC_RECORD=str(record))
    assert _link(sgcc_exe, objects, tmp_path / "recorded", flags, env) == gcc.read_bytes()
    import json

    parts = [json.loads(line) for line in (record.parent / ltrans.LTRANS_RECORD).read_text().splitlines()]
    # Each names the program its link made (its profile is the one it is charged to).
    assert {p["output"] for p in parts} == {str(tmp_path / "recorded")}
    texts = sorted(_partitions(real_gcc, objects, flags, tmp_path / "temps"))
    assert sorted(Path(p["asm"]).read_text() for p in parts) == texts
    (helper,) = [p for p in parts if "\nhelper:\n" in Path(p["asm"]).read_text()]
    asm = Path(helper["asm"]).read_text()
    assert helper["key"] == keys.entry_key(helper["context"], keys.tu_digest(asm))
    overlay = tmp_path / "overlay.json"
    overlay.write_text(json.dumps({helper["key"]: AsmFile.parse(asm).join({"helper": _with_nop(asm, "helper")})}))
    used = tmp_path / "overlay.used"
    out = tmp_path / "overlaid"
    _link(sgcc_exe, objects, out, flags,
          _env(tmp_path, SGCC_CACHE="0", SGCC_OVERLAY=str(overlay), SGCC_OVERLAY_USED=str(used)))
    assert _first_insn(out, "helper") == "nop" and _status(out) == _status(gcc)
    assert used.read_text().split() == [helper["key"]]


def test_a_winner_that_breaks_the_final_link_leaves_the_link_gcc_s(objects, tmp_path, sgcc_exe, real_gcc):
    # A hostile entry whose partition assembles but whose text breaks the link itself: it
    # defines a global another partition defines too (-flto-partition=max: a partition per
    # function). The front cannot see that; the link through it fails, and sgcc
    # then runs gcc's own link, which succeeds, with nothing of sgcc's printed.
    flags = ["-O2", "-flto", "-flto-partition=max"]
    theirs = _run([real_gcc, *flags, "a.o", "b.o", "c.o", "-o", str(tmp_path / "gcc")], objects)
    gcc = (tmp_path / "gcc").read_bytes()
    parts = _partitions(real_gcc, objects, flags, tmp_path / "temps")
    (asm,) = [a for a in parts if "\nhelper:\n" in a]
    other = next(u.name for a in parts if a is not asm for u in AsmFile.parse(a).units
                 if f"\t.globl\t{u.name}\n" in a)  # a global of another partition
    clash = _with_nop(asm, "helper") + f"\t.globl\t{other}\n\t.type\t{other}, @function\n{other}:\n\tret\n"
    _seed(tmp_path / "cache", real_gcc, flags, asm, {"helper": clash})
    out = tmp_path / "sgcc"
    r = _run([sgcc_exe, *flags, "a.o", "b.o", "c.o", "-o", str(out)], objects, _env(tmp_path))
    # gcc's own diagnostics (lto-wrapper's note on serial jobs), once; nothing of the failed link.
    assert out.read_bytes() == gcc and (r.stdout, r.stderr) == (theirs.stdout, theirs.stderr), r.stderr
    log = (tmp_path / "sgcc.log").read_text()
    assert "substituted helper" in log and "linking with plain gcc" in log, log


@pytest.mark.parametrize("keep_signature", [True, False], ids=["signature kept", "signature dropped"])
def test_a_resigned_partition_entry_never_reaches_an_lto_link(objects, tmp_path, sgcc_exe, real_gcc, keep_signature):
    # The cache's trust holds at the link as at a compile: an entry whose winner was swapped
    # (its checksum recomputed, the signature kept or dropped) is ignored, and the link is gcc's.
    from tests.test_cache import _forge

    flags = ["-O2", "-flto"]
    gcc = _link(real_gcc, objects, tmp_path / "gcc", flags)
    asm = _partitions(real_gcc, objects, flags, tmp_path / "temps")[0]
    key = _seed(tmp_path / "cache", real_gcc, flags, asm, {"helper": _with_nop(asm, "helper")})

    def hostile(entry):
        entry["apply"]["units"] = {"helper": _with_nop(asm, "helper").replace("\tnop\n", "\tint3\n")}

    _forge(Path(cache.Store(tmp_path / "cache").path(key)), hostile, schema="2", keep_signature=keep_signature)
    assert _link(sgcc_exe, objects, tmp_path / "sgcc", flags, _env(tmp_path)) == gcc
    log = (tmp_path / "sgcc.log").read_text()
    assert "ignored" in log and "substituted" not in log, log


def test_a_recorded_build_alone_adds_the_variant_flags_to_lto_compiles(tmp_path, sgcc_exe, real_gcc):
    # Project mode's variants of an LTO build's partitions: each function keeps the flags of
    # its compile, so the variant's flags go on the -flto compiles (SGCC_LTO_COMPILE_FLAGS),
    # and only in a recorded project build; anywhere else the variable changes nothing.
    (tmp_path / "x.c").write_text("int f(const int *a, int n) { int s = 0;\n"
                                  "  for (int i = 0; i < n; i++) s += a[i] * 3; return s; }\n")
    base = ["-O2", "-flto", "-frandom-seed=1", "-c", "x.c"]  # (a fixed seed: comparable objects)
    _run([real_gcc, *base, "-o", "gcc.o"], tmp_path)
    _run([real_gcc, *base, "-funroll-loops", "-o", "unrolled.o"], tmp_path)
    assert (tmp_path / "gcc.o").read_bytes() != (tmp_path / "unrolled.o").read_bytes()
    asked = _env(tmp_path, SGCC_LTO_COMPILE_FLAGS="-funroll-loops")
    _run([sgcc_exe, *base, "-o", "plain.o"], tmp_path, asked)
    assert (tmp_path / "plain.o").read_bytes() == (tmp_path / "gcc.o").read_bytes()
    (tmp_path / "rec").mkdir()
    recorded = {**asked, "SGCC_CACHE": "0", "SGCC_RECORD": str(tmp_path / "rec" / "compiles.jsonl")}
    _run([sgcc_exe, *base, "-o", "variant.o"], tmp_path, recorded)
    assert (tmp_path / "variant.o").read_bytes() == (tmp_path / "unrolled.o").read_bytes()
    assert "lto compile, with -funroll-loops added for a variant" in (tmp_path / "sgcc.log").read_text()


def test_the_variant_partition_is_the_one_holding_most_of_the_searched_functions():
    from sgcc.candidates.ltovariants import best_partition

    one, two = "\t.text\nmain:\n\tret\n", "\t.text\nf.lto_priv.0:\n\tret\ng:\n\tret\n"
    assert best_partition([one, two], {"f.lto_priv.0", "g", "h"}) == (two, 2)
    assert best_partition([one, two], {"main"}) == (one, 1)
    assert best_partition([one, two], {"nowhere"}) == (None, 0)
