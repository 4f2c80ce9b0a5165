"""The index of winners lets a compile skip sgcc's own steps only when no full lookup could find
a winner: an entry with winners always has its mark, whatever happened to the cache, and a
compile that would find a winner always takes the full path (real gcc, real sgcc processes)."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.asm.units import AsmFile
from sgcc.cache import keys, lookup
from sgcc.cache import store as cache
from sgcc.cache.entry import Applied, Entry

SRC = Path(__file__).parent / "dropin_src"


def _marked_iff_winners(store: cache.Store) -> None:
    """The invariant: every entry that has winners is in its context's index."""
    for key in store.keys():
        entry = store.get(key)
        if entry is not None and entry.has_winners:
            assert key in lookup.winners(store.root, keys.key_context_id(key)), key


def _withdrawn(old: Entry | None) -> Entry:
    entry = old or Entry()
    entry.applied = None  # winners withdrawn
    return entry


def test_the_index_never_misses_an_entry_with_winners_through_any_sequence(tmp_path):
    store = cache.Store(tmp_path, max_bytes=40_000)
    rng = random.Random(7)
    all_keys = [keys.entry_key({"ctx": c}, f"{n:064x}") for c in range(3) for n in range(6)]
    for _step in range(300):
        key = rng.choice(all_keys)
        action = rng.random()
        if action < 0.45:
            store.update(key, lambda old: Entry(extra={"pad": "x" * 800}, applied=Applied({"f": "\tret\n"})))
        elif action < 0.7:
            store.update(key, _withdrawn)
        elif action < 0.8:
            store.delete(key)
        elif action < 0.9 and os.path.exists(store.path(key)):
            path = Path(store.path(key))
            path.write_bytes(path.read_bytes()[:-7])  # corrupt: the next read removes it
            assert store.get(key) is None
        else:
            store.trim(20_000)
        _marked_iff_winners(store)
    # And no mark outlives its entry's winners (marks only cost a full lookup, but are kept exact).
    for key in all_keys:
        entry = store.get(key)
        has = entry is not None and entry.has_winners
        assert (key in lookup.winners(store.root, keys.key_context_id(key))) == has


def test_a_copied_entries_directory_carries_its_index(tmp_path):
    store = cache.Store(tmp_path / "a")
    key = keys.entry_key({"ctx": 1}, "0" * 64)
    store.update(key, lambda old: Entry(applied=Applied({"f": "\tret\n"})))
    shutil.copytree(tmp_path / "a" / "entries", tmp_path / "b" / "entries")
    assert key in lookup.winners(str(tmp_path / "b"), keys.key_context_id(key))


def _has_m32(gcc: str, tmp: Path) -> bool:
    (tmp / "probe.c").write_text("#include <stdio.h>\nint f(void){return 0;}\n")
    return proc.run([gcc, "-m32", "-c", "probe.c", "-o", "probe.o"], cwd=tmp).returncode == 0


FLAG_SETS = [["-O3"], ["-O2"], ["-O3", "-g"], ["-O3", "-fPIC"], ["-O3", "-march=native"],
             ["-O3", "-Wa,--noexecstack"], ["-O2", "-Wall", "-DSCALE_BIAS=2.5", "-Iinc", "-MMD"],
             ["-Ofast", "-funroll-loops"], ["-O3", "-m32"]]


@pytest.mark.parametrize("flags", FLAG_SETS, ids=[" ".join(f) for f in FLAG_SETS])
def test_a_compile_that_a_full_lookup_would_serve_takes_the_full_path(tmp_path, sgcc_exe, real_gcc, flags):
    if "-m32" in flags and not _has_m32(real_gcc, tmp_path):
        pytest.skip("no 32-bit multilib")
    work = tmp_path / "w"
    shutil.copytree(SRC, work)
    cache_dir = tmp_path / "cache"
    s_flags = [f for f in flags if f != "-MMD"]
    asm = proc.run([real_gcc, *s_flags, "-S", "a.c", "-o", "-"], cwd=work, check=True).stdout.decode()
    unit = AsmFile.parse(asm).units[0]
    # The key exactly as a full lookup computes it: the flags without inputs and dependency flags.
    key = keys.entry_key(keys.context(real_gcc, s_flags, "flags"), keys.tu_digest(asm))
    winner = unit.text.replace("\t.cfi_startproc\n", "\t.cfi_startproc\n\tnop\n", 1)
    assert winner != unit.text
    store = cache.Store(cache_dir)
    store.update(key, lambda old: Entry(applied=Applied({unit.name: winner})))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGCC_") or k == "SGCC_CONFIG"}
    env.update(SGCC_CACHE_DIR=str(cache_dir), SGCC_LOGFILE=str(tmp_path / "log"))
    r = proc.run([sgcc_exe, *flags, "-c", "a.c", "-o", "hit.o"], cwd=work, env=env, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    log = (tmp_path / "log").read_text()
    assert "cache hit" in log and "nothing to substitute" not in log, log
    plain = proc.run([real_gcc, *flags, "-c", "a.c", "-o", "plain.o"], cwd=work, timeout=120)
    assert plain.returncode == 0
    assert (work / "hit.o").read_bytes() != (work / "plain.o").read_bytes()  # the nop is in
    # Winners withdrawn: the same compile goes straight to gcc, and is gcc's to the byte.
    store.update(key, _withdrawn)
    (tmp_path / "log").unlink()
    r = proc.run([sgcc_exe, *flags, "-c", "a.c", "-o", "direct.o"], cwd=work, env=env, timeout=120)
    assert r.returncode == 0 and "nothing to substitute" in (tmp_path / "log").read_text()
    assert (work / "direct.o").read_bytes() == (work / "plain.o").read_bytes()


def test_winners_of_another_context_do_not_slow_this_one(tmp_path, sgcc_exe, real_gcc):
    work = tmp_path / "w"
    shutil.copytree(SRC, work)
    cache_dir = tmp_path / "cache"
    other = keys.entry_key(keys.context(real_gcc, ["-O2", "-fno-inline"], "flags"), "0" * 64)
    cache.Store(cache_dir).update(other, lambda old: Entry(applied=Applied({"f": "\tret\n"})))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGCC_") or k == "SGCC_CONFIG"}
    env.update(SGCC_CACHE_DIR=str(cache_dir), SGCC_LOGFILE=str(tmp_path / "log"))
    assert proc.run([sgcc_exe, "-O3", "-c", "a.c", "-o", "x.o"], cwd=work, env=env, timeout=120).returncode == 0
    assert "nothing to substitute" in (tmp_path / "log").read_text()


def test_a_repeated_hit_substitutes_the_same_and_never_a_stale_version(tmp_path, sgcc_exe, real_gcc):
    work = tmp_path / "w"
    shutil.copytree(SRC, work)
    cache_dir = tmp_path / "cache"
    asm = proc.run([real_gcc, "-O3", "-S", "a.c", "-o", "-"], cwd=work, check=True).stdout.decode()
    unit = AsmFile.parse(asm).units[0]
    key = keys.entry_key(keys.context(real_gcc, ["-O3"], "flags"), keys.tu_digest(asm))
    store = cache.Store(cache_dir)
    one = unit.text.replace("\t.cfi_startproc\n", "\t.cfi_startproc\n\tnop\n", 1)
    two = unit.text.replace("\t.cfi_startproc\n", "\t.cfi_startproc\n\tnop\n\tnop\n", 1)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGCC_") or k == "SGCC_CONFIG"}
    env.update(SGCC_CACHE_DIR=str(cache_dir), SGCC_LOGFILE=str(tmp_path / "log"))

    def build(name: str, src: str = "a.c") -> bytes:
        r = proc.run([sgcc_exe, "-O3", "-c", src, "-o", name], cwd=work, env=env, timeout=120)
        assert r.returncode == 0, r.stderr.decode()
        return (work / name).read_bytes()

    store.update(key, lambda old: Entry(applied=Applied({unit.name: one})))
    first = build("1.o")
    assert build("2.o") == first  # memoized
    # The same code in a file of another name: its own .file line, then the memoized substitution.
    shutil.copy(work / "a.c", work / "other.c")
    renamed = proc.run([real_gcc, "-O3", "-S", "other.c", "-o", "-"], cwd=work, check=True).stdout.decode()
    assert renamed != asm and keys.tu_digest(renamed) == keys.tu_digest(asm)
    memo_obj = build("3.o", "other.c")
    assert memo_obj != first  # the object's file symbol names other.c
    store.update(key, lambda old: Entry(extra={"note": "new version, same winner"}, applied=old.applied))  # memo dropped
    assert build("3b.o", "other.c") == memo_obj  # parsed and joined again: the same bytes
    log = (tmp_path / "log").read_text()
    assert log.count("memoized") == 2 and log.count("cache hit") == 4, log
    # A new version of the entry: the memo of the old one is never used.
    store.update(key, lambda old: Entry(applied=Applied({unit.name: two})))
    second = build("4.o")
    assert second != first
    assert build("5.o") == second
    log = (tmp_path / "log").read_text()
    assert log.count("memoized") == 3 and log.count("cache hit") == 6, log
    # The memo written by a compile that read an old version is refused.
    old_sum = store.get(key).version
    store.update(key, lambda old: Entry(applied=Applied({unit.name: one})))
    store.write_joined(key, old_sum, "stale", [unit.name])
    assert store.read_joined(key) is None
    assert build("6.o") == first


AS_FLAG_SETS = [["-O2"], ["-O3", "-g"], ["-O2", "-g3", "-gdwarf-4"], ["-O3", "-fPIC"], ["-O3", "-march=haswell"],
                ["-O3", "-Wa,--noexecstack"], ["-O2", "-Wa,-mrelax-relocations=no", "-Wa,--defsym,SGCC_X=1"],
                ["-O3", "-m32"], ["-O3", "-m32", "-g", "-march=i686"], ["-O2", "-mx32"], ["-O2", "-pipe", "-fno-asynchronous-unwind-tables"]]


@pytest.mark.parametrize("flags", AS_FLAG_SETS, ids=[" ".join(f) for f in AS_FLAG_SETS])
def test_as_run_directly_makes_the_drivers_object(tmp_path, real_gcc, flags):
    """The ``as`` command learnt from ``gcc -###`` makes the same object as gcc's own assemble
    step and as gcc's one-step compile (a source without includes: -m32 needs no multilib)."""
    from sgcc.dropin import assemble, driver

    (tmp_path / "t.c").write_text("static int sq(int x) { return x * x; }\n"
                                  "int f(int n) { int s = 0; for (int i = 0; i < n; i++) s += sq(i) ^ n; return s; }\n"
                                  "double g(double a, double b) { return a * b + 1.5; }\n")
    if proc.run([real_gcc, *flags, "-S", "t.c", "-o", "t.s"], cwd=tmp_path).returncode != 0:
        pytest.skip(f"gcc cannot compile for {flags}")
    env = dict(os.environ)
    argv = assemble.template(real_gcc, keys.compiler_id(real_gcc), flags, env, str(tmp_path / "cache"),
                             lambda a: driver._spawn(a, env, str(tmp_path)))
    assert argv is not None
    old = os.getcwd()
    os.chdir(tmp_path)  # the names as the driver gets them (a -g object may record them)
    try:
        status, _, err = driver._spawn(assemble.command(argv, "t.s", "direct.o"), env, str(tmp_path))
    finally:
        os.chdir(old)
    if status != 0 and b"not supported" in err:
        pytest.skip(err.decode())
    assert status == 0, err.decode()
    assert proc.run([real_gcc, *flags, "-c", "-x", "assembler", "t.s", "-o", "driver.o"], cwd=tmp_path).returncode == 0
    assert proc.run([real_gcc, *flags, "-c", "t.c", "-o", "one-step.o"], cwd=tmp_path).returncode == 0
    direct = (tmp_path / "direct.o").read_bytes()
    assert direct == (tmp_path / "driver.o").read_bytes() == (tmp_path / "one-step.o").read_bytes()
    # Learnt once: the second time it comes from the cache directory, without the driver.
    again = assemble.template(real_gcc, keys.compiler_id(real_gcc), flags, env, str(tmp_path / "cache"),
                              lambda a: pytest.fail("the driver ran again"))
    assert again == argv
