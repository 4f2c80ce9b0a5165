"""The content-addressed verdict cache: what a search proved, applied by every later build.

**Keys.** One entry per translation unit in one context. The context is everything besides
the assembly that shapes the answer: a schema version, the real compiler's identity (its
resolved path, size and modification time; its version is in the assembly's ``.ident``), the
flags that reach code generation or the assembler (not -I/-D/-W/-M*/-o/inputs/link-only
flags, which either shaped the assembly already or do not matter), the instruction-set policy
(``flags`` or ``native``), and the CPU (model name and feature flags from /proc/cpuinfo: a
speedup measured on one CPU is a claim about that CPU). The translation unit's identity is the
SHA-256 of gcc's assembly for it, with the ``.file`` line normalised (it spells the source
path as the command line did), which covers every function unit's text and everything those
units rely on in the same file (-fipa-ra register assumptions, static callees, clones).

Keying on the whole file rather than one function is deliberate: an edit anywhere in a file
invalidates its cached winners. A winner was proven correct next to the other functions of
its file as gcc compiled them; reusing it next to different ones would need luck.

**Values.** An entry holds, per function, the verdicts of searches (keyed by a *search key*:
the tests' content, the generator configuration and the minimum gain), each either a winning
unit with its evidence (generator, speedup and interval, tests hash, date) or a recorded "no
better candidate" so the same search is not repeated; and ``apply``: the set of winners the
last search validated *together*, which is exactly what a drop-in compile substitutes.

**Files.** ``ROOT/entries/ab/abcdef....json``, written via a temporary file and ``rename`` under
an exclusive ``flock`` of ``ROOT/locks/ab.lock`` (filelock's Unix locks are ``flock`` locks
too, so they interoperate; this module uses ``fcntl`` directly because importing filelock
costs ~30 ms, which every compile would pay). The first line is ``sgcc-cache 1 <sha256 of the
rest>``: a corrupt or truncated entry is a miss, counted, and removed so the next search
repairs it. ``ROOT/stats.json`` holds counters, updated under ``ROOT/locks/stats.lock``.
Size is bounded: after a store, entries beyond ``cache_size`` are evicted least recently used
first (a hit refreshes an entry's modification time).

Kept lean: this module is imported by the drop-in compile on every eligible compile.
"""

from __future__ import annotations

import json
import os
import time

SCHEMA = 1
MAGIC = "sgcc-cache"
#: Default bound on the cache's size.
DEFAULT_MAX_BYTES = 256 << 20
WHOLE_UNIT = "<translation-unit>"  # same as sgcc.candidates.WHOLE_UNIT (not imported: lean)

# Flags that do not change what a compile's assembly means once it exists.
_DROP_WITH_ARG = frozenset(["-I", "-D", "-U", "-include", "-imacros", "-isystem", "-iquote", "-idirafter",
                            "-iprefix", "-iwithprefix", "-L", "-l", "-MF", "-MT", "-MQ", "-o", "-x",
                            "-Xlinker"])
_DROP_PREFIX = ("-I", "-D", "-U", "-L", "-l", "-MF", "-MT", "-MQ", "-Wl,", "-Wp,", "-isystem", "-iquote",
                "-fdiagnostics", "-fmessage-length", "-fno-diagnostics", "-fcolor-diagnostics")
_DROP_EXACT = frozenset(["-c", "-S", "-MD", "-MMD", "-MP", "-MG", "-pipe", "-v", "-Q", "-pedantic",
                         "-pedantic-errors", "-w", "-static", "-shared", "-pie", "-no-pie", "-rdynamic",
                         "-save-temps", "-pthread"])


def key_flags(flags: list[str]) -> list[str]:
    """The flags (inputs already removed) that belong in a cache key, in order."""
    out: list[str] = []
    i = 0
    while i < len(flags):
        a = flags[i]
        if a in _DROP_WITH_ARG:
            i += 2
            continue
        if a in _DROP_EXACT or a.startswith(_DROP_PREFIX):
            i += 1
            continue
        if a.startswith("-W") and not a.startswith("-Wa,"):
            i += 1  # warnings
            continue
        out.append(a)
        i += 1
    return out


_cpu_id: str | None = None


def cpu_id() -> str:
    """The CPU's model name and feature flags, hashed (same CPU, same answer)."""
    import hashlib

    global _cpu_id
    if _cpu_id is None:
        model = flags = ""
        try:
            with open("/proc/cpuinfo", "rb") as fh:
                for raw in fh:
                    line = raw.decode("ascii", "replace")
                    if not model and line.startswith("model name"):
                        model = line.split(":", 1)[1].strip()
                    elif not flags and line.startswith("flags"):
                        flags = " ".join(sorted(line.split(":", 1)[1].split()))
                    if model and flags:
                        break
        except OSError:
            pass
        machine = os.uname().machine
        _cpu_id = hashlib.sha256(f"{machine}|{model}|{flags}".encode()).hexdigest()[:16] + f" {model or machine}"
    return _cpu_id


def compiler_id(compiler: str) -> str:
    """The real compiler's identity: resolved path, size, modification time."""
    real = os.path.realpath(compiler)
    try:
        st = os.stat(real)
        return f"{real}|{st.st_size}|{st.st_mtime_ns}"
    except OSError:
        return real


def tu_digest(asm_text: str) -> str:
    """SHA-256 of a translation unit's assembly, with its ``.file "..."`` line normalised."""
    import hashlib

    h = hashlib.sha256()
    start = 0
    # gcc writes `\t.file\t"name"` first; only that line (not DWARF's `.file N "dir" "name"`).
    if asm_text.startswith('\t.file\t"'):
        nl = asm_text.find("\n")
        start = len(asm_text) if nl < 0 else nl + 1
        h.update(b"\t.file\t\"-\"\n")
    h.update(asm_text[start:].encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def context(compiler: str, flags: list[str], isa: str) -> dict:
    """The non-assembly part of a key (see the module docstring)."""
    return {"schema": SCHEMA, "compiler": compiler_id(compiler), "flags": key_flags(flags), "isa": isa,
            "cpu": cpu_id()}


def entry_key(ctx: dict, digest: str) -> str:
    """The key of one translation unit's entry."""
    import hashlib

    text = json.dumps(ctx, sort_keys=True, separators=(",", ":")) + "\n" + digest
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def default_root() -> str:
    """``$SGCC_CACHE_DIR``, else the platform's user cache directory for sgcc.

    On Linux this is what ``platformdirs.user_cache_dir("sgcc")`` returns (computed here
    without importing it, which would cost every compile ~8 ms).
    """
    env = os.environ.get("SGCC_CACHE_DIR")
    if env:
        return env
    if os.name == "posix" and not _is_macos():
        base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.expanduser("~/.cache")
        return os.path.join(base, "sgcc")
    import platformdirs

    return platformdirs.user_cache_dir("sgcc")


def _is_macos() -> bool:
    import sys

    return sys.platform == "darwin"


class CacheError(Exception):
    """An entry cannot be read (corrupt, truncated, wrong schema)."""


def _lock(path: str):
    import fcntl

    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _unlock(fd: int) -> None:
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def encode_entry(data: dict) -> bytes:
    import hashlib

    body = json.dumps(data, sort_keys=True, indent=1).encode("utf-8", "surrogateescape")
    return f"{MAGIC} {SCHEMA} {hashlib.sha256(body).hexdigest()}\n".encode() + body


def decode_entry(raw: bytes) -> dict:
    """The entry in ``raw``; :class:`CacheError` if it is not intact."""
    import hashlib

    nl = raw.find(b"\n")
    if nl < 0:
        raise CacheError("truncated (no header)")
    header = raw[:nl].decode("ascii", "replace").split()
    if len(header) != 3 or header[0] != MAGIC:
        raise CacheError("not an sgcc cache entry")
    if header[1] != str(SCHEMA):
        raise CacheError(f"schema {header[1]}, expected {SCHEMA}")
    body = raw[nl + 1:]
    if hashlib.sha256(body).hexdigest() != header[2]:
        raise CacheError("checksum mismatch (corrupt or truncated)")
    try:
        data = json.loads(body.decode("utf-8", "surrogateescape"))
    except ValueError as exc:
        raise CacheError(f"bad JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("functions", {}), dict):
        raise CacheError("malformed entry")
    return data


class Store:
    """One cache directory."""

    def __init__(self, root: str | os.PathLike | None = None, max_bytes: int = DEFAULT_MAX_BYTES):
        self.root = os.fspath(root) if root is not None else default_root()
        self.max_bytes = max_bytes

    # -- paths ----------------------------------------------------------------------------

    def path(self, key: str) -> str:
        return os.path.join(self.root, "entries", key[:2], key + ".json")

    def _lock_path(self, key: str) -> str:
        return os.path.join(self.root, "locks", key[:2] + ".lock")

    # -- reading --------------------------------------------------------------------------

    def read(self, key: str, *, touch: bool = False) -> dict | None:
        """The entry for ``key``, or None (missing, or corrupt: then it is removed and counted)."""
        path = self.path(key)
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            return None
        except OSError:
            return None
        try:
            data = decode_entry(raw)
        except CacheError:
            self._discard_corrupt(key, path, raw)
            return None
        if touch:
            try:
                os.utime(path)  # least recently used = oldest mtime
            except OSError:
                pass
        return data

    def _discard_corrupt(self, key: str, path: str, raw: bytes) -> None:
        fd = _lock(self._lock_path(key))
        try:
            # Re-check under the lock: a writer may have replaced it meanwhile.
            try:
                with open(path, "rb") as fh:
                    now = fh.read()
            except OSError:
                return
            if now == raw:
                try:
                    os.unlink(path)
                except OSError:
                    pass
        finally:
            _unlock(fd)
        self.bump({"corrupt": 1})

    # -- writing --------------------------------------------------------------------------

    def update(self, key: str, change) -> dict:
        """Read-modify-write the entry for ``key`` under its lock: ``change(entry_or_None)``
        returns the new entry (a dict). Written atomically; returns what was written."""
        path = self.path(key)
        fd = _lock(self._lock_path(key))
        try:
            try:
                with open(path, "rb") as fh:
                    old = decode_entry(fh.read())
            except (OSError, CacheError):
                old = None
            new = change(old)
            new.setdefault("schema", SCHEMA)
            new["key"] = key
            data = encode_entry(new)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        finally:
            _unlock(fd)
        self.bump({"stores": 1})
        self.trim()
        return new

    def delete(self, key: str) -> bool:
        fd = _lock(self._lock_path(key))
        try:
            os.unlink(self.path(key))
            return True
        except OSError:
            return False
        finally:
            _unlock(fd)

    # -- listing, size, eviction ----------------------------------------------------------

    def keys(self) -> list[str]:
        out = []
        base = os.path.join(self.root, "entries")
        try:
            subdirs = os.listdir(base)
        except OSError:
            return []
        for sub in subdirs:
            try:
                names = os.listdir(os.path.join(base, sub))
            except OSError:
                continue
            out.extend(n[:-5] for n in names if n.endswith(".json"))
        return sorted(out)

    def _files(self) -> list[tuple[float, int, str, str]]:
        """(mtime, size, key, path) of every entry."""
        files = []
        for key in self.keys():
            path = self.path(key)
            try:
                st = os.stat(path)
            except OSError:
                continue
            files.append((st.st_mtime, st.st_size, key, path))
        return files

    def size(self) -> int:
        return sum(f[1] for f in self._files())

    def trim(self, max_bytes: int | None = None) -> int:
        """Evict least recently used entries until the cache holds at most ``max_bytes``
        (90% of it, to not evict on every store); returns how many were evicted."""
        limit = self.max_bytes if max_bytes is None else max_bytes
        files = self._files()
        total = sum(f[1] for f in files)
        if total <= limit:
            return 0
        target = limit * 0.9 if max_bytes is None else limit
        evicted = 0
        for mtime, size, key, path in sorted(files):
            if total <= target:
                break
            if self.delete(key):
                total -= size
                evicted += 1
        if evicted:
            self.bump({"evictions": evicted})
        return evicted

    def clear(self) -> int:
        n = 0
        for key in self.keys():
            n += self.delete(key)
        return n

    # -- statistics -----------------------------------------------------------------------

    def _stats_path(self) -> str:
        return os.path.join(self.root, "stats.json")

    def bump(self, counts: dict, reasons: dict | None = None) -> None:
        """Add ``counts`` (and pass-through ``reasons``) to the statistics; never raises."""
        try:
            fd = _lock(os.path.join(self.root, "locks", "stats.lock"))
        except OSError:
            return
        try:
            stats = self._read_stats()
            for k, v in counts.items():
                stats["counters"][k] = stats["counters"].get(k, 0) + v
            for k, v in (reasons or {}).items():
                stats["passthrough"][k] = stats["passthrough"].get(k, 0) + v
            path = self._stats_path()
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(stats, fh, sort_keys=True)
            os.replace(tmp, path)
        except OSError:
            pass
        finally:
            _unlock(fd)

    def _read_stats(self) -> dict:
        try:
            with open(self._stats_path(), encoding="utf-8") as fh:
                stats = json.load(fh)
            if isinstance(stats, dict) and isinstance(stats.get("counters"), dict) \
                    and isinstance(stats.get("passthrough"), dict):
                return stats
        except (OSError, ValueError):
            pass
        return {"counters": {}, "passthrough": {}, "since": time.strftime("%Y-%m-%dT%H:%M:%S")}

    def stats(self) -> dict:
        """Counters, pass-through reasons, and the cache's current size and entry count."""
        stats = self._read_stats()
        files = self._files()
        stats["entries"] = len(files)
        stats["bytes"] = sum(f[1] for f in files)
        stats["max_bytes"] = self.max_bytes
        stats["root"] = self.root
        return stats

    def zero_stats(self) -> None:
        try:
            os.unlink(self._stats_path())
        except OSError:
            pass


# -- what the drop-in substitutes ------------------------------------------------------------

def substitution(entry: dict) -> dict[str, str] | None:
    """The units to substitute from an entry: ``{function: text}`` (or ``{WHOLE_UNIT: text}``)."""
    apply = entry.get("apply")
    if not isinstance(apply, dict):
        return None
    units = apply.get("units")
    if not isinstance(units, dict) or not units:
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in units.items()):
        return None
    return units


def search_key(tests_digest: str, generators: str, min_gain: float) -> str:
    """Identifies one search: the tests it proved against and how candidates were made."""
    import hashlib

    text = f"{tests_digest}|{generators}|{min_gain:.6f}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def tests_digest(tests) -> str:
    """SHA-256 over every test's name, stdin, expected output and status."""
    import hashlib

    h = hashlib.sha256()
    for t in sorted(tests, key=lambda t: t.name):
        for part in (t.name.encode(), t.stdin, t.expected_stdout or b"", str(t.expected_status).encode()):
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)
    return h.hexdigest()
