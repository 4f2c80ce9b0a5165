"""``sgcc stats`` and ``sgcc cache ...``: the verdict cache's counters and entries."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from sgcc.errors import SgccError

if TYPE_CHECKING:
    from sgcc.cache.store import Store


def _store() -> Store:
    """The cache the effective configuration names (what compiles here would use)."""
    from sgcc import config as configmod
    from sgcc.cache import compose

    cfg = configmod.load()
    return compose.open_store(configmod.cache_dir(cfg), max_bytes=configmod.parse_size(cfg.cache_size),
                              signing_key=cfg.signing_key, trusted_keys=cfg.trusted_keys,
                              remote_storage=cfg.remote_storage if cfg.cache else "",
                              remote_timeout=cfg.remote_timeout)


def _remote_rows(c: dict) -> list[tuple[str, object]]:
    """The remote cache's counters (sgcc.cache.remote), listed apart from the local ones;
    nothing when no remote is configured and none was ever counted."""
    from sgcc import config as configmod

    setting = configmod.load().remote_storage
    if not setting and not any(k.startswith("remote_") for k in c):
        return []
    shown = "-"
    if setting:
        from sgcc.cache import remote

        shown = remote.parse(setting).url  # the password left out
    return [
        ("remote storage", shown),
        ("  remote lookups", c.get("remote_lookups", 0)),
        ("    hits (validated, copied here)", c.get("remote_hits", 0)),
        ("    misses", c.get("remote_misses", 0)),
        ("    refused (untrusted/garbage)", c.get("remote_refused", 0)),
        ("  errors (server unusable)", c.get("remote_errors", 0)),
        ("  timeouts", c.get("remote_timeouts", 0)),
        ("  skipped (server marked down)", c.get("remote_skipped", 0)),
        ("  verdicts stored remotely", c.get("remote_stores", 0)),
    ]


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
@click.option("--zero", is_flag=True, help="Reset the counters (entries are kept).")
def stats(as_json: bool, zero: bool) -> None:
    """Cache statistics: compiles, hits, misses, why compiles passed through, size, and the
    remote cache's lookups, hits, misses, refusals, errors and timeouts."""
    store = _store()
    if zero:
        store.zero_stats()
        click.echo(f"sgcc: statistics of {store.root} reset")
        return
    data = store.stats()
    if as_json:
        click.echo(json.dumps(data, indent=2, sort_keys=True))
        return
    c = data["counters"]
    lookups = c.get("tu_lookups", 0)
    hits = c.get("tu_hits", 0) + c.get("tu_hits_no_winner", 0)
    rows = [
        ("cache directory", data["root"]),
        ("counting since", data.get("since", "-")),
        ("compiles intercepted", c.get("eligible", 0)),
        ("  straight to gcc (no winner)", c.get("direct", 0)),
        # Counted in "straight to gcc" too; a label no wider than the others keeps the columns.
        ("    wrapper without sgcc's state", c.get("wrapper_unkeyed", 0)),
        ("compiles passed through", c.get("passthrough", 0)),
        ("LTO links with winners in reach", c.get("lto_links", 0)),
        ("  partitions looked up", c.get("ltrans", 0)),
        ("fell back to plain gcc", c.get("fallbacks", 0) + c.get("internal_errors", 0)),
        ("cache lookups (translation units)", lookups),
        ("  hits with optimized code", c.get("tu_hits", 0)),
        ("  hits: gcc's code is best", c.get("tu_hits_no_winner", 0)),
        ("  misses", c.get("tu_misses", 0)),
        ("  hit rate", f"{100.0 * hits / lookups:.1f}%" if lookups else "-"),
        ("function units substituted", c.get("units_substituted", 0)),
        ("verdicts stored", c.get("stores", 0)),
        ("corrupt entries found (removed)", c.get("corrupt", 0)),
        ("entries evicted", c.get("evictions", 0)),
        ("entries", data["entries"]),
        ("size", f"{_human(data['bytes'])} of {_human(data['max_bytes'])}"),
        *_remote_rows(c),
    ]
    rows.append(("timing lock", _timing_lock_state()))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        click.echo(f"{k:<{width}}  {v}")
    if data["passthrough"]:
        click.echo("passed through, by reason:")
        for reason, n in sorted(data["passthrough"].items(), key=lambda kv: -kv[1]):
            click.echo(f"  {reason:<{width - 2}}  {n}")
    import textwrap

    click.echo(textwrap.fill(
               f"These counters are the cache directory's: every compile and run through {data['root']} counts "
               "(each project of this user, a CI job run as this user). For one project's or one job's figures, "
               "give it a cache of its own (SGCC_CACHE_DIR=DIR) or run `sgcc stats --zero` before it; "
               "`sgcc optimize --report R.json` keeps each run's own. Verdicts are shared on purpose: they are "
               "keyed by content, valid in any project. The timing lock is per user and machine whatever the "
               "cache: runs time one at a time, because overlapping timings disturb each other; a run that "
               "waits for it says so, and its report counts the wait.", width=100))


def _timing_lock_state() -> str:
    """The timing lock's file and whether some run holds it now (and who)."""
    from sgcc.fsutil import file_lock
    from sgcc.verify.timing.rounds import lock_holder, timing_lock_path

    path = timing_lock_path()
    if not path.exists():
        return f"{path} (free)"
    lock = file_lock(path)
    try:
        free = lock.acquire(0)
    except OSError:
        return f"{path} (cannot be opened)"
    if free:
        lock.release()
        return f"{path} (free)"
    return f"{path} (held: {lock_holder(path) or 'holder unknown'})"


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


@click.group(name="cache")
def cache_group() -> None:
    """Inspect and manage the verdict cache (list, show, clear, trim, verify, state)."""


@cache_group.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def cache_list(as_json: bool) -> None:
    """One line per entry: key, source, functions substituted, speedup, last update."""
    rows: list[dict[str, Any]] = []  # JSON records
    store = _store()
    for key in store.keys():
        entry = store.get(key)
        if entry is None:
            continue
        applied = entry.applied
        rows.append({"key": key, "source": entry.source or "?", "updated": entry.updated or "?",
                     "functions": sorted(entry.functions), "applies": sorted(entry.substitution() or {}),
                     "speedup": applied.speedup if applied is not None else None})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        gain = f"{r['speedup']:.3f}x" if isinstance(r["speedup"], (int, float)) else "gcc's code"
        click.echo(f"{r['key'][:16]}  {r['updated']}  {gain:>10}  {r['source']}  "
                   f"[{', '.join(r['applies']) or 'no winner'}]")


def _find(store: Store, prefix: str) -> str:
    matches = [k for k in store.keys() if k.startswith(prefix)]
    if not matches:
        raise SgccError(f"no cache entry starts with {prefix!r}", hint="`sgcc cache list` shows the keys")
    if len(matches) > 1:
        raise SgccError(f"{len(matches)} cache entries start with {prefix!r}; give more of the key")
    return matches[0]


@cache_group.command(name="show")
@click.argument("key")
def cache_show(key: str) -> None:
    """Print one entry (KEY may be a unique prefix) as JSON."""
    store = _store()
    full = _find(store, key)
    entry = store.get(full)
    if entry is None:
        raise SgccError(f"cache entry {full} is corrupt and was removed")
    click.echo(json.dumps(entry.to_dict(), indent=2, sort_keys=True))


@cache_group.command(name="clear")
@click.argument("key", required=False)
def cache_clear(key: str | None) -> None:
    """Remove every entry, or the one KEY names (a unique prefix)."""
    store = _store()
    if key:
        store.delete(_find(store, key))
        click.echo("sgcc: removed 1 entry")
    else:
        click.echo(f"sgcc: removed {store.clear()} entries from {store.root}")


@cache_group.command(name="trim")
@click.option("--max-size", metavar="SIZE", default=None, help="Trim to this size (default: the cache_size setting).")
def cache_trim(max_size: str | None) -> None:
    """Evict least recently used entries until the cache fits its size limit."""
    from sgcc import config as configmod

    store = _store()
    try:
        limit = configmod.parse_size(max_size) if max_size else store.max_bytes
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--max-size'") from None
    n = store.trim(limit)
    click.echo(f"sgcc: evicted {n} entries; {_human(store.size())} remain in {store.root}")


@cache_group.command(name="state")
def cache_state() -> None:
    """Write what ccache or sccache in front of sgcc must hash, and print its files.

    Prints paths separated by ':', the value for CCACHE_EXTRAFILES (ccache) or
    SCCACHE_EXTRAFILES (sccache): this configuration's state (sgcc's version and code, the
    real compiler, the CPU, the cache, the instruction-set policy, the trusted keys, the
    remote and its generation, the index of winners), the token every change of winners
    replaces, and the configuration files read. Run it once per build, with the build's
    environment and from its directory:

      CCACHE_EXTRAFILES=$(sgcc cache state) make CC="ccache sgcc"

    A compile under ccache or sccache substitutes winners only when both files are in the
    wrapper's key for the configuration it sees; otherwise it compiles as gcc.
    """
    import os

    from sgcc.dropin import wrapper

    click.echo(os.pathsep.join(wrapper.state_command()))


@cache_group.command(name="verify")
def cache_verify() -> None:
    """Re-prove what every entry would make a build assemble.

    A cache shared by a team (a project's cache/ directory) is code that builds will use:
    run this after pulling one. Each entry with winners is rebuilt from gcc's recorded
    assembly exactly as a compile substitutes it, and goes through the checks sgcc optimize
    runs: text screen, assembly, object checks, control-flow proof, with every unit held to
    the information-flow rule of untrusted candidates (an entry cannot say who wrote it). Corrupt entries and
    entries that fail are removed; entries no trusted key signed are listed (builds ignore them).
    """
    from sgcc import config as configmod
    from sgcc.cache.audit import audit

    store = _store()
    compiler = configmod.load().compiler or "gcc"
    counts = {"ok": 0, "untrusted": 0, "corrupt": 0, "refused": 0}
    for key in store.keys():
        status, detail = audit(store, key, compiler=compiler)
        counts[status] += 1
        if status == "refused":
            store.delete(key)
            click.echo(f"{key[:16]}  refused: {detail}: removed")
        elif status == "corrupt":
            click.echo(f"{key[:16]}  corrupt: removed")
        elif status == "untrusted":
            click.echo(f"{key[:16]}  untrusted ({detail}): builds ignore it")
    total = sum(counts.values())
    click.echo(f"sgcc: {total} entries checked: {counts['ok']} proven, {counts['untrusted']} untrusted, "
               f"{counts['corrupt'] + counts['refused']} removed")
    if counts["corrupt"] + counts["refused"]:
        raise click.exceptions.Exit(1)  # the summary above is the message; run_command returns the status
