"""The compile path stays lean: the modules each kind of compile imports are pinned.

Every `make` compile pays for what sgcc imports. A real sgcc process compiles under
``python -X importtime`` (which lists every module as it is imported, also when sgcc then
replaces itself with gcc) for the three paths a build takes: a pass-through (-O0), an
eligible compile with nothing to substitute (empty cache: gcc runs at once), and a cache hit
(a winner substituted). A new import on one of them fails here: measure it, then update the pin.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sgcc import proc
from sgcc.asm.units import AsmFile
from sgcc.cache import keys
from sgcc.cache import store as cache
from sgcc.cache.entry import Applied, Entry

SRC = Path(__file__).parent / "dropin_src"

LEAN = {"sgcc", "sgcc.cli", "sgcc.dropin", "sgcc.dropin.driver", "sgcc.dropin.compiler", "sgcc.gcc", "sgcc.gcc.args",
        "sgcc.dirs", "sgcc.errors", "sgcc.config", "sgcc.cache", "sgcc.cache.stats",
        "sgcc.fsutil"}  # the counter's file goes through the one atomic writer (os and stat only)
DIRECT = LEAN | {"sgcc.cache.keys", "sgcc.cache.lookup"}  # the context and the index: the store not yet
REPEATED_HIT = DIRECT | {"sgcc.cache.store", "sgcc.dropin.assemble", "sgcc.cache.trust", "sgcc.cache.entry"}
HIT = REPEATED_HIT | {"sgcc.asm", "sgcc.asm.units", "sgcc.asm.lex", "sgcc.asm.splitter"}
#: What a compile adds when ``remote_storage`` is set: the layer and the lean Redis client
#: (never redis-py, ~160 ms, nor socket, ~10 ms).
REMOTE = {"sgcc.cache.compose", "sgcc.cache.remote", "sgcc.cache.redis_backend", "sgcc.cache.resp"}
#: Never on any compile path (each costs milliseconds, or pulls in a command's machinery).
NEVER = {"dataclasses", "tempfile", "pathlib", "typing", "tomllib", "click", "platformdirs", "filelock", "subprocess",
         "hashlib", "shutil"}
#: Not before gcc runs when nothing is substituted.
NOT_LEAN = NEVER | {"json", "re", "subprocess", "enum", "fcntl", "selectors", "threading"}


def _imports(sgcc_exe: str, args: list[str], cwd: Path, env: dict) -> tuple[set[str], str]:
    log = cwd / "sgcc.log"
    log.unlink(missing_ok=True)
    r = subprocess.run([sys.executable, "-X", "importtime", sgcc_exe, *args], cwd=cwd, capture_output=True,
                       env={**env, "SGCC_LOGFILE": str(log)}, timeout=120)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    names = set()
    for line in r.stderr.decode().splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", line)
        if m:
            names.add(m.group(1))
    return names, log.read_text()


@pytest.fixture
def work(tmp_path):
    shutil.copytree(SRC, tmp_path / "w")
    return tmp_path / "w"


def _env(cache_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGCC_") or k == "SGCC_CONFIG"}
    env["SGCC_CACHE_DIR"] = str(cache_dir)
    return env


def test_pass_through_imports_only_the_dispatch_the_parser_and_the_counter(work, sgcc_exe):
    names, log = _imports(sgcc_exe, ["-O0", "-c", "a.c", "-o", "a.o"], work, _env(work / "cache"))
    assert "] pass-through" in log
    assert {n for n in names if n.startswith("sgcc")} == LEAN
    assert not names & NOT_LEAN


def test_nothing_to_substitute_decides_before_importing_more(work, sgcc_exe):
    names, log = _imports(sgcc_exe, ["-O3", "-c", "a.c", "-o", "a.o"], work, _env(work / "cache"))
    assert "nothing to substitute" in log
    assert {n for n in names if n.startswith("sgcc")} == DIRECT
    assert not names & NOT_LEAN


def test_cache_hit_imports_the_unit_parser_and_json_only(work, sgcc_exe, real_gcc):
    cache_dir = work / "cache"
    flags = ["-O3"]
    asm = proc.run([real_gcc, *flags, "-S", "a.c", "-o", "-"], cwd=work, check=True).stdout.decode()
    unit = AsmFile.parse(asm).units[0]
    key = keys.entry_key(keys.context(real_gcc, flags, "flags"), keys.tu_digest(asm))
    cache.Store(cache_dir).update(key, lambda old: Entry(applied=Applied(
        {unit.name: unit.text.replace("\t.cfi_startproc\n", "\t.cfi_startproc\n# cached\n", 1)})))
    names, log = _imports(sgcc_exe, ["-O3", "-c", "a.c", "-o", "a.o"], work, _env(cache_dir))
    assert "cache hit" in log and "memoized" not in log
    assert {n for n in names if n.startswith("sgcc")} == HIT
    assert not names & NEVER
    # The next hit reuses what this one substituted: no entry decoding, no unit parser.
    first = (work / "a.o").read_bytes()
    names, log = _imports(sgcc_exe, ["-O3", "-c", "a.c", "-o", "a.o"], work, _env(cache_dir))
    assert "cache hit" in log and "memoized" in log
    assert {n for n in names if n.startswith("sgcc")} == REPEATED_HIT
    assert not names & NOT_LEAN
    assert (work / "a.o").read_bytes() == first


def test_the_remote_cache_loads_only_when_configured_and_only_its_lean_client(work, sgcc_exe):
    names, log = _imports(sgcc_exe, ["-O3", "-c", "a.c", "-o", "a.o"], work, _env(work / "cache"))
    assert "nothing to substitute" in log and not names & REMOTE
    import socket

    with socket.socket() as s:  # a port nothing listens on: the lookup fails at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**_env(work / "cache"), "SGCC_REMOTE_STORAGE": f"redis://127.0.0.1:{port}/0"}
    names, log = _imports(sgcc_exe, ["-O3", "-c", "a.c", "-o", "a.o"], work, env)
    assert "nothing to substitute" in log and "unusable" in log
    # The failed server's down marker is written through the one atomic writer (fsutil, in DIRECT).
    assert {n for n in names if n.startswith("sgcc")} == DIRECT | REMOTE
    assert not names & (NOT_LEAN | {"redis", "socket"})
