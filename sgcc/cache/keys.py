"""Cache keys: what identifies one translation unit's entry, and one search's verdict.

An entry's key has two parts: the *context* (everything besides the assembly that shapes the
answer) and the translation unit's assembly. The context is a key schema version, the real
compiler's identity (resolved path, size and modification time; its version is in the
assembly's ``.ident``), the flags that reach code generation or the assembler (not
-I/-D/-W/-M*/-o/inputs/link-only flags, which either shaped the assembly already or do not
matter), the instruction-set policy (``flags`` or ``native``) and the CPU (model name and
feature flags: a speedup measured on one CPU is a claim about that CPU). The translation
unit's identity is the SHA-256 of gcc's assembly for it with the ``.file`` line normalised
(it spells the source path as the command line did); that covers every function unit's text
and everything those units rely on in the same file.

A key is 64 hex digits: 48 of SHA-256 over context and assembly, then the 16-digit
:func:`context_id`. The context id is readable from the key alone, which lets the store keep
an index of the contexts that hold winners (see :mod:`sgcc.cache.store`) without being told
the context.

Lean: imported by the drop-in compile; no json/hashlib at module level (the SHA-256 comes
from the interpreter's built-in module when it has one: hashlib's OpenSSL import costs ~4 ms).
"""

from __future__ import annotations

import os

KEY_SCHEMA = 2  # 2: keys carry their context id; contexts are hashed without json

# Flags that do not change what a compile's assembly means once it exists.
_DROP_WITH_ARG = frozenset(["-I", "-D", "-U", "-include", "-imacros", "-isystem", "-iquote", "-idirafter",
                            "-iprefix", "-iwithprefix", "-L", "-l", "-MF", "-MT", "-MQ", "-o", "-x",
                            "-Xlinker"])
_DROP_PREFIX = ("-I", "-D", "-U", "-L", "-l", "-MF", "-MT", "-MQ", "-Wl,", "-Wp,", "-isystem", "-iquote",
                "-fdiagnostics", "-fmessage-length", "-fno-diagnostics", "-fcolor-diagnostics")
_DROP_EXACT = frozenset(["-c", "-S", "-MD", "-MMD", "-MP", "-MG", "-pipe", "-v", "-Q", "-pedantic",
                         "-pedantic-errors", "-w", "-static", "-shared", "-pie", "-no-pie", "-rdynamic",
                         "-save-temps", "-pthread"])


def sha256(data: bytes = b""):
    """A SHA-256 object: the built-in module's (cheap to import) or hashlib's (same digests)."""
    try:
        from _sha256 import sha256 as impl  # Python 3.11
    except ImportError:
        try:
            from _sha2 import sha256 as impl  # Python 3.12+
        except ImportError:
            from hashlib import sha256 as impl
    return impl(data)


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
        _cpu_id = sha256(f"{machine}|{model}|{flags}".encode()).hexdigest()[:16] + f" {model or machine}"
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
    h = sha256()
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
    return {"schema": KEY_SCHEMA, "compiler": compiler_id(compiler), "flags": key_flags(flags), "isa": isa,
            "cpu": cpu_id()}


def _canonical(ctx: dict) -> bytes:
    """An unambiguous byte string for a context: every part length-prefixed, keys sorted."""
    parts: list[str] = []
    for name in sorted(ctx):
        value = ctx[name]
        items = [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]
        parts.append(f"{len(name)}:{name}={len(items)}")
        parts.extend(f"{len(v)}:{v}" for v in items)
    return "\n".join(parts).encode("utf-8", "surrogateescape")


def context_id(ctx: dict) -> str:
    """16 hex digits naming a context (the last 16 of every key in it)."""
    return sha256(b"ctx\n" + _canonical(ctx)).hexdigest()[:16]


def key_context_id(key: str) -> str:
    """The context id a key carries (see :func:`entry_key`)."""
    return key[48:64] if len(key) >= 64 else key[:16]


def entry_key(ctx: dict, digest: str) -> str:
    """The key of one translation unit's entry: 48 digits of content hash, then the context id."""
    h = sha256(b"entry\n" + _canonical(ctx) + b"\n" + digest.encode("ascii"))
    return h.hexdigest()[:48] + context_id(ctx)


def search_key(tests_digest: str, generators: str, min_gain: float) -> str:
    """Identifies one search: the tests it proved against and how candidates were made."""
    text = f"{tests_digest}|{generators}|{min_gain:.6f}"
    return sha256(text.encode()).hexdigest()[:24]


def tests_digest(tests) -> str:
    """SHA-256 over every test's name, stdin, expected output and status."""
    h = sha256()
    for t in sorted(tests, key=lambda t: t.name):
        for part in (t.name.encode(), t.stdin, t.expected_stdout or b"", str(t.expected_status).encode()):
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)
    return h.hexdigest()
