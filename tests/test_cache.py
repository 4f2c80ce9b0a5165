"""The verdict cache: keys, integrity, concurrency, eviction, statistics, and its use by the
drop-in compile (real gcc, real sgcc processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import EXAMPLES

from sgcc import proc
from sgcc.asm import WHOLE_UNIT
from sgcc.cache import keys
from sgcc.cache import store as cache
from sgcc.cache.entry import Applied, CacheError, Entry
from sgcc.verify.box.sandbox import load_tests

POPCOUNT = EXAMPLES / "programs" / "popcount"


def _env(cache_dir: Path, **extra) -> dict:
    env = dict(os.environ, SGCC_CACHE_DIR=str(cache_dir))
    env.update(extra)
    return env


# -- keys and entries ---------------------------------------------------------------------

def test_key_flags_keep_what_shapes_code_and_drop_the_rest():
    flags = ["-O3", "-Wall", "-Wa,--noexecstack", "-Isrc", "-I", "inc", "-DX=1", "-MMD", "-MF", "a.d",
             "-march=native", "-g", "-lm", "-L/x", "-fPIC", "-Wl,-z,now"]
    assert keys.key_flags(flags) == ["-O3", "-Wa,--noexecstack", "-march=native", "-g", "-fPIC"]


def test_tu_digest_ignores_only_the_source_name_line():
    a = '\t.file\t"prog.c"\n\t.text\nf:\n\tret\n'
    b = '\t.file\t"/abs/path/prog.c"\n\t.text\nf:\n\tret\n'
    c = '\t.file\t"prog.c"\n\t.text\nf:\n\tnop\n\tret\n'
    assert keys.tu_digest(a) == keys.tu_digest(b) != keys.tu_digest(c)


def test_entry_integrity_detects_every_corruption():
    from sgcc.cache.trust import Keyring

    ring = Keyring(b"test-key")
    raw = Entry(source="x.c", functions={"f": {}}).encode(ring)
    assert Entry.decode(raw, ring).source == "x.c"
    for bad in (raw[:-5], raw[:10], b"", raw.replace(b"x.c", b"y.c"), b"garbage\n{}",
                raw.replace(b"sgcc-cache 2", b"sgcc-cache 9")):
        with pytest.raises(CacheError):
            Entry.decode(bad, ring)


def _encode_as_before(data: dict, keyring) -> bytes:
    """sgcc.cache.store.encode_entry before sgcc.cache.entry owned the format (verbatim): the
    oracle for entries already in users' local and remote caches."""
    body = json.dumps(data, sort_keys=True, indent=1).encode("utf-8", "surrogateescape")
    return f"sgcc-cache 2 {keys.sha256(body).hexdigest()} {keyring.sign(body)}\n".encode() + body


#: Entries as the engine and project mode shaped them by hand before (every field set): a
#: search's winner and a "nothing faster", the engine's substitution, and project mode's
#: whole-unit substitution and another mode's copy of a winner.
_OLD_FUNCTIONS = {
    "f": {"verdicts": {"s1": {"winner": "\tret\n", "also": {"g": "\tnop\n"}, "generator": "llm", "speedup": 1.2,
                              "low": 1.1, "high": 1.3, "complete": True, "date": "2026-01-02T03:04:05",
                              "min_gain": 0.03, "generators": "llm:x"}}},
    "g": {"verdicts": {"s1": {"winner": None, "complete": False, "date": "2026-01-02T03:04:05", "min_gain": 0.03,
                              "generators": "llm:x"}}},
}
_OLD_SHAPES = {
    "engine": {"functions": _OLD_FUNCTIONS, "source": "/src/x.c", "updated": "2026-01-02T03:04:05", "apply": {
        "units": {"f": "\tret\n", "g": "\tnop\n"}, "search": "s1", "date": "2026-01-02T03:04:05", "speedup": 1.2,
        "low": 1.1, "high": 1.3, "baseline": "\t.text\nf:\n\tret\n", "context": {"schema": 2, "flags": ["-O2"]},
        "asm_flags": ["-O2"]}},
    "project whole unit": {"functions": {}, "source": "/p/a.c", "apply": {
        "units": {WHOLE_UNIT: "\t.text\n"}, "generator": "pgo", "flags": ["-O3"], "profile_sha256": "ab" * 32,
        "functions": ["f"], "baseline": "\t.text\n", "context": {"isa": "flags"}, "asm_flags": ["-O2", "-fPIC"],
        "speedup": 1.1, "low": 1.0, "high": 1.2}},
    "project other mode": {"functions": {}, "source": "/p/a.c", "apply": {
        "units": {"f": "\tret\n"}, "search": "s1", "date": "d", "speedup": 1.2, "low": 1.1, "high": 1.3,
        "baseline": "\t.text\n", "context": {}, "asm_flags": ["-O2"], "mode_of": "cd" * 32}},
    "a field of a later sgcc": {"functions": {}, "source": "x.c", "note": {"kept": [1, 2]}},
}


@pytest.mark.parametrize("shape", list(_OLD_SHAPES))
def test_entries_written_before_read_and_write_back_byte_for_byte(shape):
    """What users' caches hold keeps working: an entry in the format written before the typed
    entry reads back whole, and writing it again gives the very same bytes (so the signature
    and the remote copy are unchanged too)."""
    from sgcc.cache.trust import Keyring

    ring = Keyring(b"test-key")
    key = "ab" * 32
    raw = _encode_as_before({**_OLD_SHAPES[shape], "schema": 2, "key": key}, ring)
    entry = Entry.decode(raw, ring, key=key)
    assert entry.encode(ring) == raw
    assert entry.key == key and entry.source == _OLD_SHAPES[shape]["source"]
    if shape == "engine":
        f, g = entry.functions["f"]["s1"], entry.functions["g"]["s1"]
        assert (f.winner, f.also, f.generator, f.speedup, f.complete) == ("\tret\n", {"g": "\tnop\n"}, "llm", 1.2, True)
        assert (g.winner, g.complete) == (None, False)
        assert entry.substitution() == {"f": "\tret\n", "g": "\tnop\n"} and entry.applied.asm_flags == ["-O2"]


def test_a_signed_entry_with_malformed_parts_reads_them_as_absent():
    """The signer may be a teammate's older or broken sgcc: malformed parts are no winner,
    never an error later (units that are not text, a verdict that is not one, no baseline)."""
    from sgcc.cache.entry import sign_body
    from sgcc.cache.trust import Keyring

    ring = Keyring(b"test-key")
    body = {"key": "k", "functions": {"f": {"verdicts": {"s": "junk", "t": {"winner": 3, "also": ["x"]}}}, "g": 7},
            "apply": {"units": {"f": 1}, "baseline": "b"}, "source": 5}
    entry = Entry.decode(sign_body(body, ring), ring, key="k")
    assert entry.source == "" and entry.applied is None and not entry.has_winners
    assert set(entry.functions["f"]) == {"t"} and entry.functions["f"]["t"].winner is None
    assert entry.functions["g"] == {}
    junk_context = {**body, "apply": {"units": {"f": "x"}, "context": [1], "asm_flags": "-O2"}}
    applied = Entry.decode(sign_body(junk_context, ring), ring).applied
    assert applied.units == {"f": "x"} and applied.context is None and applied.asm_flags is None


def test_an_entry_made_for_another_key_is_refused():
    from sgcc.cache.entry import UntrustedEntry
    from sgcc.cache.trust import Keyring

    ring = Keyring(b"test-key")
    raw = Entry("ab" * 32, applied=Applied({"f": "x"})).encode(ring)
    assert Entry.decode(raw, ring, key="ab" * 32).has_winners
    with pytest.raises(UntrustedEntry, match="another key"):
        Entry.decode(raw, ring, key="cd" * 32)


def test_corrupt_entry_is_a_miss_is_counted_and_removed(tmp_path):
    store = cache.Store(tmp_path)
    store.update("ab" * 32, lambda old: Entry(applied=Applied({"f": "x"})))
    path = Path(store.path("ab" * 32))
    path.write_bytes(path.read_bytes()[:-20])  # truncated
    assert store.get("ab" * 32) is None
    assert not path.exists()
    assert store.stats()["counters"]["corrupt"] == 1


def test_eviction_keeps_the_recently_used(tmp_path):
    store = cache.Store(tmp_path, max_bytes=10 << 20)
    keys = [f"{i:02x}" * 32 for i in range(12)]
    for n, key in enumerate(keys):
        store.update(key, lambda old: Entry(extra={"pad": "x" * 1000}))
        os.utime(store.path(key), (1000 + n, 1000 + n))  # a clear age order
    size_one = os.path.getsize(store.path(keys[0]))
    store.get(keys[0], touch=True)  # the oldest is used again: it must survive
    evicted = store.trim(size_one * 5)
    assert evicted == 7
    left = set(store.keys())
    assert keys[0] in left and set(keys[-4:]) <= left and keys[1] not in left
    assert store.size() <= size_one * 5
    assert store.stats()["counters"]["evictions"] == 7
    # The bound also applies by itself when entries are stored.
    small = cache.Store(tmp_path / "small", max_bytes=size_one * 3)
    for key in keys:
        small.update(key, lambda old: Entry(extra={"pad": "x" * 1000}))
    assert small.size() <= size_one * 3


_WRITER = r"""
import sys
from sgcc.cache import store as cache
from sgcc.cache.entry import Entry
root, me, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = cache.Store(root)
keys = ["%02x" % i * 32 for i in range(4)]
for n in range(reps):
    key = keys[n % 4]
    def change(old, n=n):
        entry = old or Entry()
        entry.extra.setdefault("writes", []).append(f"{me}:{n}")
        return entry
    store.update(key, change)
    for k in keys:
        store.get(k)
    store.bump({"test_writes": 1})
"""


def test_eight_concurrent_writers_lose_nothing_and_corrupt_nothing(tmp_path):
    reps = 40
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), str(i), str(reps)])
             for i in range(8)]
    assert all(p.wait(timeout=300) == 0 for p in procs)
    store = cache.Store(tmp_path)
    writes = []
    for key in store.keys():
        entry = store.get(key)
        assert entry is not None
        writes += entry.extra["writes"]
    assert sorted(writes) == sorted(f"{i}:{n}" for i in range(8) for n in range(reps))
    stats = store.stats()
    assert stats["counters"]["test_writes"] == 8 * reps
    assert stats["counters"]["stores"] == 8 * reps
    assert "corrupt" not in stats["counters"]
    assert not list(Path(tmp_path).rglob("*.tmp"))


def test_statistics_merge_is_exact_when_a_merge_was_interrupted(tmp_path):
    from sgcc.cache import stats

    for _ in range(5):
        stats.record(str(tmp_path), {"eligible": 1}, {"opt-level-O0": 1})
    assert stats.read(str(tmp_path))["counters"] == {"eligible": 5}
    # A merge that wrote stats.json but stopped before deleting what it merged: the files it
    # names are not counted again.
    stats.record(str(tmp_path), {"eligible": 1})
    pending = sorted((tmp_path / "stats.d").glob("*.n"))
    data = json.loads((tmp_path / "stats.json").read_text())
    data["counters"]["eligible"] += 1
    data["merged"] = [p.name for p in pending]
    (tmp_path / "stats.json").write_text(json.dumps(data))
    stats.record(str(tmp_path), {"eligible": 1})
    got = stats.read(str(tmp_path))
    assert got["counters"] == {"eligible": 7} and got["passthrough"] == {"opt-level-O0": 5}
    assert not list((tmp_path / "stats.d").glob("*.n"))
    stats.zero(str(tmp_path))
    assert stats.read(str(tmp_path))["counters"] == {}


def test_counting_since_is_no_later_than_the_oldest_count(tmp_path):
    """`sgcc stats` said "counting since" the first time it was run, while it counted the
    verdicts an `sgcc optimize` had stored an hour before (issue 28)."""
    import time

    from sgcc.cache import stats

    hour_ago = time.time() - 3600
    stats.record(str(tmp_path), {"stores": 2})
    (pending,) = (tmp_path / "stats.d").glob("*.n")
    os.utime(pending, (hour_ago, hour_ago))
    stats.record(str(tmp_path), {"eligible": 1})
    got = stats.read(str(tmp_path))
    assert got["counters"] == {"stores": 2, "eligible": 1}
    since = time.mktime(time.strptime(got["since"], "%Y-%m-%dT%H:%M:%S"))
    assert abs(since - hour_ago) < 2
    stats.record(str(tmp_path), {"eligible": 1})
    assert stats.read(str(tmp_path))["since"] == got["since"]  # later counts do not move it
    # After --zero counting starts again at that moment, before anything else is counted.
    before = time.time()
    stats.zero(str(tmp_path))
    got = stats.read(str(tmp_path))
    assert got["counters"] == {}
    assert time.mktime(time.strptime(got["since"], "%Y-%m-%dT%H:%M:%S")) >= int(before) - 1


# -- the drop-in uses it --------------------------------------------------------------------

@pytest.fixture(scope="module")
def optimized(tmp_path_factory, sgcc_exe):
    """One `sgcc optimize` run that stores a winner for popcount's count_bits."""
    work = tmp_path_factory.mktemp("cached")
    cache_dir = work / "cache"
    src = work / "popcount.c"
    src.write_text((POPCOUNT / "popcount.c").read_text())
    r = proc.run([sgcc_exe, "optimize", str(src), "-O3", "--tests", str(POPCOUNT / "tests"), "-o",
                  str(work / "opt"), "--candidates", str(POPCOUNT / "candidates"), "--generators", "replay",
                  "--timing-rounds", "8", "--report", str(work / "r.json"), "-q"],
                 env=_env(cache_dir), timeout=600)
    assert r.returncode == 0, r.stderr.decode()
    report = json.loads((work / "r.json").read_text())
    assert report["honest"]["functions"] == ["count_bits"], report["stages"]
    assert report["cache"]["stored"] is True
    return work, cache_dir, report


def _compile_and_link(sgcc_exe, work: Path, cache_dir: Path, name: str, *flags, env_extra=None) -> Path:
    env = _env(cache_dir, **(env_extra or {}))
    r = proc.run([sgcc_exe, "-O3", *flags, "-c", "popcount.c", "-o", f"{name}.o"], cwd=work, env=env, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    r = proc.run(["gcc", "-O3", f"{name}.o", "-o", name], cwd=work, timeout=120)
    assert r.returncode == 0
    return work / name


def _passes(binary: Path) -> bool:
    for t in load_tests(POPCOUNT / "tests"):
        r = proc.run([str(binary)], stdin=t.stdin, timeout=30)
        if r.returncode != 0 or (t.expected_stdout is not None and r.stdout != t.expected_stdout):
            return False
    return True


@pytest.mark.slow
def test_cache_hit_reproduces_the_optimized_binary(optimized, sgcc_exe):
    work, cache_dir, _ = optimized
    built = _compile_and_link(sgcc_exe, work, cache_dir, "hit")
    assert built.read_bytes() == (work / "opt").read_bytes()
    assert _passes(built)
    plain = work / "plain.o"
    subprocess.run(["gcc", "-O3", "-c", "popcount.c", "-o", str(plain)], cwd=work, check=True)
    assert (work / "hit.o").read_bytes() != plain.read_bytes()


def test_a_different_context_misses(optimized, sgcc_exe):
    work, cache_dir, _ = optimized
    subprocess.run(["gcc", "-O3", "-fno-tree-vectorize", "-c", "popcount.c", "-o", "ref.o"], cwd=work, check=True)
    built = _compile_and_link(sgcc_exe, work, cache_dir, "other", "-fno-tree-vectorize")
    assert (work / "other.o").read_bytes() == (work / "ref.o").read_bytes()
    # The instruction-set policy is part of the key: a native search is not a portable answer.
    subprocess.run(["gcc", "-O3", "-c", "popcount.c", "-o", "ref3.o"], cwd=work, check=True)
    _compile_and_link(sgcc_exe, work, cache_dir, "native", env_extra={"SGCC_ISA": "native"})
    assert (work / "native.o").read_bytes() == (work / "ref3.o").read_bytes()
    assert _passes(built)
    # And SGCC_CACHE=0 turns substitution off.
    _compile_and_link(sgcc_exe, work, cache_dir, "off", env_extra={"SGCC_CACHE": "0"})
    assert (work / "off.o").read_bytes() == (work / "ref3.o").read_bytes()


def test_statistics_are_exact_in_a_scripted_scenario(optimized, sgcc_exe, tmp_path):
    work, shared, _ = optimized
    cache_dir = tmp_path / "cache"
    import shutil

    shutil.copytree(shared / "entries", cache_dir / "entries")
    env = _env(cache_dir)
    steps = [
        ["-O3", "-c", "popcount.c", "-o", "a.o"],  # hit with a winner
        ["-O3", "-c", "popcount.c", "-o", "b.o"],  # again
        ["-O2", "-fno-inline", "-c", "popcount.c", "-o", "c.o"],  # no winner in this context: gcc at once
        ["-O0", "-c", "popcount.c", "-o", "d.o"],  # pass-through: optimization level
        ["-E", "popcount.c", "-o", "e.i"],  # pass-through: preprocess only
        ["-O3", "-c", "nonexistent.c", "-o", "f.o"],  # gcc fails: fall back to gcc, which reports
    ]
    codes = [proc.run([sgcc_exe, *s], cwd=work, env=env, timeout=120).returncode for s in steps]
    assert codes == [0, 0, 0, 0, 0, 1]
    # Corrupt the entry: the next compile misses, counts it, and gets gcc's code.
    (key,) = cache.Store(cache_dir).keys()
    path = Path(cache.Store(cache_dir).path(key))
    path.write_bytes(path.read_bytes().replace(b"count_bits", b"count_bitz", 1))
    assert proc.run([sgcc_exe, "-O3", "-c", "popcount.c", "-o", "g.o"], cwd=work, env=env, timeout=120).returncode == 0
    subprocess.run(["gcc", "-O3", "-c", "popcount.c", "-o", "g-ref.o"], cwd=work, check=True)
    assert (work / "g.o").read_bytes() == (work / "g-ref.o").read_bytes()
    assert not path.exists()
    # With the corrupt entry gone, its context has no winner left: the next compile is gcc's.
    assert proc.run([sgcc_exe, "-O3", "-c", "popcount.c", "-o", "h.o"], cwd=work, env=env, timeout=120).returncode == 0
    assert (work / "h.o").read_bytes() == (work / "g-ref.o").read_bytes()

    stats = json.loads(proc.run([sgcc_exe, "stats", "--json"], env=env, timeout=60).stdout)
    c = stats["counters"]
    assert c["eligible"] == 6 and c["passthrough"] == 2 and c["fallbacks"] == 1 and c["direct"] == 2
    assert c["tu_lookups"] == 3 and c["tu_hits"] == 2 and c["tu_misses"] == 1
    assert c["units_substituted"] == 2 and c["corrupt"] == 1
    assert sum(stats["passthrough"].values()) == 2 and len(stats["passthrough"]) == 2
    assert stats["entries"] == 0
    assert not list((cache_dir / "stats.d").glob("*.n"))  # merged into stats.json by the read
    text = proc.run([sgcc_exe, "stats"], env=env, timeout=60).stdout.decode()
    assert "hits with optimized code         2" in text and "66.7%" in text
    assert "straight to gcc (no winner)      2" in text
    # Reading again merges nothing twice.
    again = json.loads(proc.run([sgcc_exe, "stats", "--json"], env=env, timeout=60).stdout)
    assert again["counters"] == c and again["passthrough"] == stats["passthrough"]


def test_eight_concurrent_sgcc_compiles_share_one_cache(optimized, sgcc_exe, tmp_path):
    work, shared, _ = optimized
    import shutil

    cache_dir = tmp_path / "cache"
    shutil.copytree(shared / "entries", cache_dir / "entries")
    env = _env(cache_dir)
    # The reference is built here, not taken from another test: this one runs alone too.
    ref = _compile_and_link(sgcc_exe, work, cache_dir, "concurrent-ref")
    ref_obj = (work / "concurrent-ref.o").read_bytes()
    subprocess.run(["gcc", "-O3", "-c", "popcount.c", "-o", "concurrent-plain.o"], cwd=work, check=True)
    assert ref_obj != (work / "concurrent-plain.o").read_bytes() and _passes(ref)

    def compile_one(i: int) -> tuple[int, bytes]:
        d = tmp_path / f"w{i}"
        d.mkdir(exist_ok=True)
        (d / "popcount.c").write_text((work / "popcount.c").read_text())
        r = proc.run([sgcc_exe, "-O3", "-c", "popcount.c", "-o", "p.o"], cwd=d, env=env, timeout=300)
        return r.returncode, (d / "p.o").read_bytes()

    rounds = 5
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(compile_one, range(8 * rounds)))
    assert all(code == 0 for code, _ in results)
    objs = {obj for _, obj in results}
    assert objs == {ref_obj}
    c = cache.Store(cache_dir).stats()["counters"]
    assert c["eligible"] == 8 * rounds + 1 and c["tu_hits"] == 8 * rounds + 1
    assert "corrupt" not in c and "internal_errors" not in c


def test_cache_commands(optimized, sgcc_exe, tmp_path):
    work, shared, _ = optimized
    import shutil

    cache_dir = tmp_path / "cache"
    shutil.copytree(shared / "entries", cache_dir / "entries")
    env = _env(cache_dir)
    (key,) = cache.Store(cache_dir).keys()
    listed = proc.run([sgcc_exe, "cache", "list"], env=env, timeout=60)
    assert listed.returncode == 0 and key[:16].encode() in listed.stdout and b"count_bits" in listed.stdout
    shown = json.loads(proc.run([sgcc_exe, "cache", "show", key[:10]], env=env, timeout=60).stdout)
    assert "count_bits" in shown["apply"]["units"]
    assert proc.run([sgcc_exe, "cache", "verify"], env=env, timeout=60).returncode == 0
    # A hostile entry (valid checksum, code that reads a file) is caught by verify.
    store = cache.Store(cache_dir)
    store.update(key, lambda old: _applying(old, Applied({"count_bits": '\t.incbin "/etc/passwd"\n'})))
    r = proc.run([sgcc_exe, "cache", "verify"], env=env, timeout=60)
    assert r.returncode == 1 and b"removed" in r.stdout and store.keys() == []
    assert proc.run([sgcc_exe, "cache", "show", "zz"], env=env, timeout=60).returncode == 1
    cleared = proc.run([sgcc_exe, "cache", "clear"], env=env, timeout=60)
    assert cleared.returncode == 0


def test_config_command_shows_sources(tmp_path, sgcc_exe):
    (tmp_path / "sgcc.toml").write_text('min_gain = 0.05\ncache_dir = "cache"\n[project]\nbuild = "make"\n')
    env = dict(os.environ, SGCC_TIMING_ROUNDS="7")
    env.pop("SGCC_CACHE_DIR", None)
    r = proc.run([sgcc_exe, "config", "--json"], cwd=tmp_path, env=env, timeout=60)
    data = json.loads(r.stdout)
    assert data["min_gain"]["value"] == 0.05 and data["min_gain"]["source"].startswith("project file")
    assert data["timing_rounds"] == {"value": 7, "source": "environment"}
    assert data["isa"]["source"] == "default"
    assert data["cache_dir"]["value"] == str((tmp_path / "cache").resolve())
    assert data["_project"] == {"build": "make"}
    # The compile path reads the same layers.
    from sgcc import config

    old = os.getcwd()
    try:
        os.chdir(tmp_path)
        saved = os.environ.pop("SGCC_CACHE_DIR", None)
        assert config.compile_settings()["cache_dir"] == str((tmp_path / "cache").resolve())
    finally:
        os.chdir(old)
        if saved is not None:
            os.environ["SGCC_CACHE_DIR"] = saved


# -- cache entries are code: only a trusted signature lets one into a build ---------------------

HOSTILE_UNIT = '\t.section\t.init_array,"aw"\n\t.quad\tcount_bits\n\t.text\n\t.incbin "/etc/passwd"\n'


def _copy(optimized, tmp_path):
    import shutil

    work, shared, _ = optimized
    cache_dir = tmp_path / "cache"
    shutil.copytree(shared / "entries", cache_dir / "entries")
    (key,) = cache.Store(cache_dir).keys()
    return work, cache_dir, key


def _applying(old: Entry, applied: Applied) -> Entry:
    """``old`` substituting ``applied`` instead, signed again by the store's key: what the
    holder of a trusted key can write (a teammate's older sgcc, another user of a shared cache)."""
    old.applied = applied
    return old


def _forge(path: Path, change, *, schema: str = "2", keep_signature: bool = True) -> None:
    """Edit an entry as an adversary with write access would: change the body, recompute the
    checksum (what the old scheme's header was), keep or drop the signature."""
    raw = path.read_bytes()
    nl = raw.index(b"\n")
    header = raw[:nl].decode().split()
    entry = json.loads(raw[nl + 1:])
    change(entry)
    body = json.dumps(entry, sort_keys=True, indent=1).encode()
    fields = ["sgcc-cache", schema, keys.sha256(body).hexdigest()] + (header[3:] if keep_signature else [])
    path.write_bytes(" ".join(fields).encode() + b"\n" + body)


def _plain_object(work: Path) -> bytes:
    subprocess.run(["gcc", "-O3", "-c", "popcount.c", "-o", "plain.o"], cwd=work, check=True)
    return (work / "plain.o").read_bytes()


@pytest.mark.parametrize("scheme", ["old sha256 scheme", "signature kept", "signature dropped"])
def test_a_resigned_entry_never_reaches_a_plain_build(optimized, sgcc_exe, tmp_path, scheme):
    """An entry edited to add .incbin and a constructor, its checksum recomputed, is ignored by
    a plain `sgcc -O3` build: gcc's own object comes out, and the entry is counted and logged."""
    work, cache_dir, key = _copy(optimized, tmp_path)
    path = Path(cache.Store(cache_dir).path(key))

    def hostile(entry):
        entry["apply"]["units"] = {"count_bits": HOSTILE_UNIT}

    _forge(path, hostile, schema="1" if scheme == "old sha256 scheme" else "2",
           keep_signature=scheme == "signature kept")
    log = tmp_path / "log"
    r = proc.run([sgcc_exe, "-O3", "-c", "popcount.c", "-o", "forged.o"], cwd=work, timeout=120,
                 env=_env(cache_dir, SGCC_LOGFILE=str(log)))
    assert r.returncode == 0 and r.stderr == b""
    assert (work / "forged.o").read_bytes() == _plain_object(work)
    assert "ignored" in log.read_text()
    assert cache.Store(cache_dir).stats()["counters"].get("untrusted", 0) >= 1


def test_a_teammates_key_is_used_only_when_trusted(optimized, sgcc_exe, tmp_path):
    from sgcc.cache.trust import Keyring

    work, cache_dir, key = _copy(optimized, tmp_path)
    team = tmp_path / "team.key"
    team.write_text("a team's shared secret\n")
    team.chmod(0o600)
    path = Path(cache.Store(cache_dir).path(key))
    entry = Entry.decode(path.read_bytes())
    path.write_bytes(entry.encode(Keyring(team.read_bytes().strip())))  # signed by the team
    r = proc.run([sgcc_exe, "-O3", "-c", "popcount.c", "-o", "mine.o"], cwd=work, env=_env(cache_dir), timeout=120)
    assert r.returncode == 0 and (work / "mine.o").read_bytes() == _plain_object(work)
    trusted = _compile_and_link(sgcc_exe, work, cache_dir, "team", env_extra={"SGCC_TRUSTED_KEYS": str(team)})
    assert trusted.read_bytes() == (work / "opt").read_bytes()


def test_a_tampered_memo_is_not_used(optimized, sgcc_exe, tmp_path):
    """The memoized assembly of a repeated hit is code too: edited with its checksum
    recomputed, it is not used (the signed entry is, and the right object comes out)."""
    work, cache_dir, key = _copy(optimized, tmp_path)
    _compile_and_link(sgcc_exe, work, cache_dir, "first")
    (memo,) = list(Path(cache_dir).rglob("joined/*.s"))
    raw = memo.read_bytes()
    nl = raw.index(b"\n")
    head = raw[:nl].decode().split(" ")
    body = raw[nl + 1:] + b'\t.section\t.init_array,"aw"\n\t.quad\tmain\n'
    head[2] = keys.sha256(body).hexdigest()
    memo.write_bytes(" ".join(head).encode() + b"\n" + body)
    again = _compile_and_link(sgcc_exe, work, cache_dir, "again")
    assert again.read_bytes() == (work / "opt").read_bytes()


def test_cache_verify_reproves_and_takes_nothing_on_the_entrys_word(optimized, sgcc_exe, tmp_path):
    work, cache_dir, key = _copy(optimized, tmp_path)
    env = _env(cache_dir)
    r = proc.run([sgcc_exe, "cache", "verify"], env=env, timeout=120)
    assert r.returncode == 0 and b"1 proven" in r.stdout, r.stdout
    store = cache.Store(cache_dir)
    # A signed entry (say, the user's own from an older sgcc, or a teammate's) that defines a
    # global `free` under a unit name, claiming `free` among its functions: the names a unit
    # may define come from gcc's assembly, not from the entry.
    def free(old: Entry) -> Entry:
        old.functions["free"] = {}
        return _applying(old, old.applied.but(units={
            "count_bits": "\t.globl\tfree\n\t.type\tfree, @function\nfree:\n\tret\n"}))

    store.update(key, free)
    r = proc.run([sgcc_exe, "cache", "verify"], env=env, timeout=120)
    assert r.returncode == 1 and b"refused" in r.stdout and store.keys() == []


def test_cache_verify_refuses_a_baseline_that_is_not_the_keyed_one(optimized, sgcc_exe, tmp_path):
    work, cache_dir, key = _copy(optimized, tmp_path)
    store = cache.Store(cache_dir)
    store.update(key, lambda old: _applying(old, old.applied.but(baseline=old.applied.baseline + "\n")))
    r = proc.run([sgcc_exe, "cache", "verify"], env=_env(cache_dir), timeout=120)
    assert r.returncode == 1 and b"not the assembly this entry is keyed on" in r.stdout


def test_cache_verify_accepts_gccs_own_common_symbols(tmp_path):
    """A whole-unit winner of a file with `.comm` (gcc -fcommon) is gcc's own output: verify
    re-proves it instead of refusing the common symbol."""
    from sgcc.cache.audit import audit

    src = tmp_path / "c.c"
    src.write_text("int counter;\nint f(int x) { counter += x; return counter * 3; }\n")
    asm = proc.run(["gcc", "-O2", "-fcommon", "-S", "-o", "-", str(src)], check=True).stdout.decode()
    assert ".comm\tcounter" in asm
    variant = proc.run(["gcc", "-O2", "-fcommon", "-funroll-loops", "-falign-functions=64", "-S", "-o", "-",
                        str(src)], check=True).stdout.decode()
    ctx = keys.context("/usr/bin/gcc", ["-O2", "-fcommon"], "flags")
    key = keys.entry_key(ctx, keys.tu_digest(asm))
    store = cache.Store(tmp_path / "cache")
    store.update(key, lambda old: Entry(functions={"f": {}}, applied=Applied(
        {WHOLE_UNIT: variant}, baseline=asm, context=ctx, asm_flags=["-O2", "-fcommon"])))
    assert audit(store, key) == ("ok", "1 unit(s) re-proved")


def test_cache_verify_refuses_a_compile_of_an_lto_build_with_its_reason(tmp_path):
    """Project mode stores an adopted LTO build's compiles as whole units of LTO's intermediate
    language: their code is made at link time, which no per-object proof reaches. verify says
    so (not "section ... is not accepted") and does not keep them on the entry's word."""
    from sgcc.cache.audit import audit

    src = tmp_path / "w.c"
    src.write_text("unsigned weight(unsigned x) { return (x * 2654435761u) >> 7; }\n")
    asm = proc.run(["gcc", "-O2", "-S", "-o", "-", str(src)], check=True).stdout.decode()
    lto = proc.run(["gcc", "-O2", "-flto=auto", "-ffat-lto-objects", "-S", "-o", "-", str(src)],
                   check=True).stdout.decode()
    ctx = keys.context("/usr/bin/gcc", ["-O2"], "flags")
    key = keys.entry_key(ctx, keys.tu_digest(asm))
    store = cache.Store(tmp_path / "cache")
    store.update(key, lambda old: Entry(applied=Applied({WHOLE_UNIT: lto}, baseline=asm, context=ctx,
                                                        asm_flags=["-O2"])))
    status, why = audit(store, key)
    assert status == "refused" and "LTO build" in why and "link time" in why, why
    # The same entry holding gcc's -O3 code is re-proved: the refusal is about LTO, not whole units.
    o3 = proc.run(["gcc", "-O3", "-S", "-o", "-", str(src)], check=True).stdout.decode()
    store.update(key, lambda old: Entry(applied=Applied({WHOLE_UNIT: o3}, baseline=asm, context=ctx,
                                                        asm_flags=["-O2"])))
    assert audit(store, key) == ("ok", "1 unit(s) re-proved")


def test_cache_verify_holds_every_unit_to_the_information_flow_rule(optimized, sgcc_exe, tmp_path):
    """A signed entry (a teammate's, or one another user wrote into a shared cache) whose
    count_bits walks up the stack to envp (issue 24's environment tell) passes the rules of
    trusted candidates; verify holds it to the information-flow rule and removes it."""
    import re

    from sgcc.asm.units import AsmFile
    from tests.test_infoflow import COUNT, ENV_TELL

    work, cache_dir, key = _copy(optimized, tmp_path)
    store = cache.Store(cache_dir)

    def tell(old: Entry) -> Entry:
        unit = next(u for u in AsmFile.parse(old.applied.baseline).units if u.name == "count_bits").text
        unit = re.sub(r"(^count_bits:\n)(.*?)(^\t\.size\tcount_bits, )", lambda m: m.group(1) + ENV_TELL + COUNT
                      + m.group(3), unit, count=1, flags=re.S | re.M)
        return _applying(old, old.applied.but(units={"count_bits": unit}))

    store.update(key, tell)
    r = proc.run([sgcc_exe, "cache", "verify"], env=_env(cache_dir), timeout=120)
    assert r.returncode == 1 and b"refused" in r.stdout and b"stack-arguments" in r.stdout, r.stdout
    assert store.keys() == []
