"""sgcc behind a compiler cache (``CC="ccache sgcc"``, ``CC="sccache sgcc"``): what the
wrapper's key must hold so that it never serves an object sgcc would not make now, and the
check, on sgcc's side, that it does.

A wrapper keys an object on the source, the flags and the compiler's identity; sgcc's object
also depends on sgcc's own state. That state reaches the wrapper's key as the contents of two
files, which both ccache (``CCACHE_EXTRAFILES``, or ``extra_files_to_hash`` in ccache.conf) and
sccache (``SCCACHE_EXTRAFILES``) hash into every key, in-process, at the cost of reading two
small files (no command per compile, unlike ccache's ``compiler_check``):

* ``ROOT/wrapper-state/<digest>.state``, written by ``sgcc cache state`` (:func:`write_state`),
  once per build: the *configuration* part (:func:`configuration`: sgcc's version and the
  digest of its compile-path code, the real compiler's identity, the CPU, whether the cache
  is on and where, the instruction-set policy, the fingerprints of the signing and trusted
  keys, the remote's URL), whose digest names the file, and the *sampled* part: the remote's
  generation (:meth:`sgcc.cache.remote.Layer.generation`) and a digest of the index of
  winners with the entries it marks (:func:`index_digest`: what a hand edit or a crash
  between a store's steps changed);
* ``ROOT/wrapper-state/generation`` (:mod:`sgcc.cache.generation`): a random token the store
  replaces after every change of winners, so a winner stored or withdrawn *during* a build
  (an ``sgcc optimize`` beside ``make``) reaches the next compile too.

``sgcc cache state`` also lists the configuration files the settings came from (the user's,
the project's ``sgcc.toml``): an edit of one changes every key even where the variable was set
once and ``sgcc cache state`` not run again; a removed one makes the wrapper compile without
caching (sgcc then runs, and checks).

**The check** (:func:`keyed`): a compile that would substitute (its context has winners) and
runs under a wrapper (its parent process is ccache or sccache) does so only when the wrapper's
extra files name both files for the configuration this compile sees *now*. Otherwise it
compiles as gcc (nothing substituted; logged and counted as ``wrapper_unkeyed``): an object
of gcc's is correct under every state, so a wrapper without sgcc's state, or a configuration
changed since ``sgcc cache state`` ran (a key no longer trusted mid-build), can cost winners
but never serve one that sgcc would not substitute now. An overlay of ``sgcc optimize
--project`` is never used under a wrapper (no state covers it).

**What bounds staleness.** Local winners and configuration: none (the token, the check).
Winners only on the remote: the remote's generation is read when ``sgcc cache state`` runs, so
one stored remotely during a build reaches the next build; until then the build keeps
gcc's code for those compiles, which sgcc itself would have given just before the store.
A remote *withdrawal* does not change what sgcc substitutes once the entry was copied into the
local cache (local entries come first), and a compile that used a remote winner copied it.

Kept lean: imported by a compile only when it would substitute and runs under a wrapper, and
by ``sgcc cache state``.
"""

from __future__ import annotations

import os

from sgcc.cache import generation, keys

TYPE_CHECKING = False  # typing's own import costs a compile ~2 ms; mypy knows this name
if TYPE_CHECKING:
    from sgcc.cache.remote import Layer
    from sgcc.cache.trust import Keyring

#: Version of the state files' layout (a new one is a new key for every wrapped compile).
SCHEMA = 1
#: ``*.state`` files not written for this long are removed by ``sgcc cache state``.
PRUNE_SECONDS = 30 * 86400
#: The variable each compiler cache reads its extra files from (:func:`sgcc.dropin.compiler.caching_parent`
#: says which one started this process).
WRAPPERS = {"ccache": "CCACHE_EXTRAFILES", "sccache": "SCCACHE_EXTRAFILES"}
#: sgcc's packages whose code shapes a compile's object (their files' digest is in the state).
_CODE = ("dropin", "cache", "asm", "gcc")


def code_digest() -> str:
    """sgcc's version and a digest of the name, size and modification time of every module on
    the compile path (an upgrade, or an edit in a development tree, is a new state)."""
    import sgcc

    base = os.path.dirname(os.path.abspath(sgcc.__file__))
    h = keys.sha256()
    for sub in ("", *_CODE):
        directory = os.path.join(base, sub)
        try:
            names = sorted(n for n in os.listdir(directory) if n.endswith(".py"))
        except OSError:
            continue
        for name in names:
            try:
                st = os.stat(os.path.join(directory, name))
            except OSError:
                continue
            h.update(f"{sub}/{name}|{st.st_size}|{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return f"{sgcc.__version__} {h.hexdigest()[:24]}"


def configuration(settings: dict, compiler_id: str, keyring: Keyring | None) -> str:
    """The configuration part of the state (see the module docstring), one fact a line.
    ``settings``: :func:`sgcc.config.compile_settings`; ``compiler_id``:
    :func:`sgcc.cache.keys.compiler_id` of the real compiler; ``keyring``: the keys the
    cache's entries are checked with (None when they cannot be loaded)."""
    remote = settings.get("remote_storage") or ""
    key_ids = "unloadable" if keyring is None else " ".join(sorted(keyring.keys))
    lines = [
        f"sgcc-state {SCHEMA}",
        f"sgcc {code_digest()}",
        f"compiler {compiler_id}",
        f"cpu {keys.cpu_id()}",
        f"cache {1 if settings.get('cache') else 0} {settings.get('cache_dir', '')}",
        f"isa {settings.get('isa', '')}",
        f"keys {key_ids}",
        f"remote {keys.sha256(remote.encode('utf-8', 'surrogateescape')).hexdigest()[:24] if remote else '-'}",
    ]
    return "\n".join(lines) + "\n"


def state_path(root: str, config_text: str) -> str:
    """Where the state of this configuration is kept: named by the configuration's digest."""
    digest = keys.sha256(config_text.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return os.path.join(generation.directory(root), f"{digest}.state")


def index_digest(root: str) -> str:
    """A digest of the index of winners (every context's marks) and of the first line of each
    entry marked (its schema, checksum and signature: what a compile could substitute, as
    files). Not the entries' modification times: a hit refreshes those (least recently used)."""
    from sgcc.cache import lookup

    h = keys.sha256()
    base = os.path.join(root, "entries")
    try:
        contexts = sorted(os.listdir(base))
    except OSError:
        contexts = []
    for context_id in contexts:
        for key in sorted(lookup.winners(root, context_id)):
            try:
                with open(os.path.join(base, context_id, key + ".json"), "rb") as fh:
                    head = fh.readline(512)
            except OSError:
                head = b"-\n"
            h.update(key.encode("ascii", "replace") + b" " + head)
    return h.hexdigest()[:24]


def write_state(settings: dict, compiler_id: str, keyring: Keyring | None, remote: Layer | None,
                config_files: tuple[str, ...] | list[str] = ()) -> list[str]:
    """Write this configuration's state file (and the generation token, if there is none yet);
    returns the paths a wrapper must hash: the state, the token, then ``config_files`` (the
    configuration files the settings came from: an edit of one is a new key even for a
    wrapper whose variable was set once, before the edit). Raises OSError."""
    from sgcc.fsutil import atomic_write

    root = settings["cache_dir"]
    config_text = configuration(settings, compiler_id, keyring)
    path = state_path(root, config_text)
    remote_generation = "-" if remote is None else (remote.generation() or "none")
    sampled = f"remote-generation {remote_generation}\nindex {index_digest(root)}\n"
    atomic_write(path, config_text + sampled, mode=None)
    token = generation.read(root, create=True)
    if not token:
        raise OSError(f"cannot write {generation.path(root)}")
    _prune(generation.directory(root), keep=path)
    return [path, generation.path(root), *(os.path.abspath(f) for f in config_files)]


def state_command() -> list[str]:
    """``sgcc cache state``: write the state of the configuration a plain ``sgcc ARGS`` sees
    (:func:`write_state`) and return the paths a wrapper must hash. Run once per wrapped
    build, so it imports only what the compile path imports (the ``sgcc`` script calls it
    before loading the command-line interface: :func:`sgcc.cli.main`). Raises SgccError."""
    import sys

    from sgcc import config as configmod
    from sgcc.cache import compose
    from sgcc.dropin import compiler as compilermod
    from sgcc.errors import SgccError

    settings = configmod.compile_settings()
    invoked = compilermod.resolve(["sgcc"])  # the compiler a plain `sgcc ARGS` compiles with
    root = settings["cache_dir"]
    store = compose.open_store(root, signing_key=settings["signing_key"], trusted_keys=settings["trusted_keys"],
                               remote_storage=settings["remote_storage"] if settings["cache"] else "",
                               remote_timeout=settings["remote_timeout"])
    try:
        keyring = store.keyring
    except Exception as exc:  # noqa: BLE001 - said, and written into the state as it is
        print(f"sgcc: warning: the cache's keys cannot be loaded ({exc}); compiles will not substitute",
              file=sys.stderr)
        keyring = None
    try:
        return write_state(settings, keys.compiler_id(invoked.compiler), keyring, store.remote,
                           [str(f) for f in configmod.load().files])
    except OSError as exc:
        raise SgccError(f"cannot write the wrapper state under {root}: {exc}",
                        hint="the cache directory must be writable (SGCC_CACHE_DIR)") from exc


def _prune(directory: str, keep: str) -> None:
    import time

    cutoff = time.time() - PRUNE_SECONDS
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        path = os.path.join(directory, name)
        if name.endswith(".state") and path != keep:
            try:
                if os.stat(path).st_mtime < cutoff:
                    os.unlink(path)
            except OSError:
                pass


def extra_files(name: str, exe: str) -> list[str]:
    """The files the wrapper ``name`` (its executable ``exe``) hashes into every key: its
    variable, else (ccache) its configuration's ``extra_files_to_hash``, asked of ccache itself."""
    value = os.environ.get(WRAPPERS[name])
    if value is None and name == "ccache":
        value = _ask(exe, ["-k", "extra_files_to_hash"])
    return [p for p in (value or "").split(os.pathsep) if p]


def _ask(exe: str, args: list[str]) -> str:
    """The standard output of ``exe args`` (stripped; "" on any failure)."""
    r, w = os.pipe()
    try:
        pid = os.posix_spawn(exe, [exe, *args], dict(os.environ), file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, w, 1),
            (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_CLOSE, r),
        ])
    except OSError:
        os.close(r)
        os.close(w)
        return ""
    os.close(w)
    chunks: list[bytes] = []
    size = 0
    try:
        while size <= 1 << 20:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    return b"".join(chunks).decode("utf-8", "surrogateescape").strip()


def keyed(name: str, exe: str, settings: dict, compiler_id: str, keyring: Keyring | None) -> bool:
    """Whether the wrapper ``name`` hashes this configuration's state file and the generation
    token (see the module docstring): only then may a compile under it substitute."""
    root = settings.get("cache_dir", "")
    wanted = {os.path.abspath(state_path(root, configuration(settings, compiler_id, keyring))),
              os.path.abspath(generation.path(root))}
    return wanted <= {os.path.abspath(p) for p in extra_files(name, exe)}
