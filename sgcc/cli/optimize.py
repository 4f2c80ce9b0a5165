"""``sgcc optimize``: one program against its tests, or with ``--project`` a whole project."""

from __future__ import annotations

import os
from pathlib import Path

import click

from sgcc.engine import request_from_options
from sgcc.errors import SgccError
from sgcc.fsutil import atomic_write


class GccFlagsCommand(click.Command):
    """A command whose unknown words are gcc's, passed through verbatim.

    click would split an unknown single-dash word into letters and take any letter that is
    one of sgcc's short options as that option (``-march=...`` held an ``-h``: help and exit
    0; ``-Dnoisy=1`` became ``-Dn``). So the words are sorted before click sees them, by one
    rule: a word is sgcc's when it is exactly one of sgcc's option names (``--tests``,
    ``--tests=DIR``, ``-o``, ``-oOUT``, ``-j``, ``-jN``, ``-q``, ``-h``), together with its value;
    the first other word not starting with ``-`` (and not the argument of a gcc option such as
    ``-I DIR``) is SOURCE; every other word, before or after SOURCE, is a gcc flag; after
    ``--`` every word is a gcc flag.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        from sgcc.gcc.args import SEPARATE_ARG

        takes_value: dict[str, bool] = {}
        for param in self.params:
            if isinstance(param, click.Option):
                for name in (*param.opts, *param.secondary_opts):
                    takes_value[name] = not (param.is_flag or param.count)
        for name in ctx.help_option_names:
            takes_value[name] = False
        ours: list[str] = []
        gcc: list[str] = []
        inputs: list[tuple[str, str]] = []  # gcc's bare words (input files to gcc), each with the word before it
        source_seen = False
        i = 0
        while i < len(args):
            word = args[i]
            i += 1
            if word == "--":
                gcc.extend(args[i:])
                break
            name = word.split("=", 1)[0] if word.startswith("--") else word
            if name in takes_value:
                ours.append(word)
                if takes_value[name] and "=" not in word and i < len(args):
                    ours.append(args[i])
                    i += 1
                continue
            if word[:2] in ("-o", "-j") and len(word) > 2:  # joined values of sgcc's short options
                ours.extend([word[:2], word[2:]])
                continue
            if word.startswith("-") and word != "-":
                gcc.append(word)
                if word in SEPARATE_ARG and i < len(args):
                    gcc.append(args[i])  # -I DIR, -include FILE, --param NAME=VALUE: gcc's
                    i += 1
                continue
            if not source_seen:
                ours.append(word)
                source_seen = True
            else:
                gcc.append(word)
                inputs.append((word, args[i - 2] if i >= 2 else ""))
        rest = super().parse_args(ctx, ours)
        ctx.params["gcc_flags"] = tuple(gcc)
        ctx.meta["sgcc.gcc_inputs"] = inputs
        return rest

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return [*super().collect_usage_pieces(ctx), "[GCC_FLAGS]..."]


@click.command(cls=GccFlagsCommand)
@click.argument("source", type=click.Path(dir_okay=False, path_type=Path), required=False)
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
@click.option("--test", "test_command", metavar="COMMAND", default=None,
              help="--project: the project's own test command (exit status 0 = pass), e.g. 'make test'.")
@click.option("--bench", "bench", metavar="COMMAND", multiple=True,
              help="--project: a workload command to profile and time, run in the project directory (may be repeated).")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the full report as JSON to this file.")
@click.option("--candidates", "candidates", multiple=True, type=click.Path(file_okay=False, path_type=Path),
              help="Replay candidates: DIR/FUNC.s or DIR/FUNC/*.s (may be repeated).")
@click.option("--generators", "generators", metavar="LIST", default=None,
              help="Candidate generators: auto (default), replay, llm, variants, flags, pgo, layout, clang; "
                   "'-NAME' removes one.")
@click.option("--budget", metavar="BUDGET", default=None,
              help="Search budget, one word: wall-time seconds of the whole run ('300s', '5m', '5min', '1h'), "
                   "candidates built ('40c') or both ('300s,40c'); default: unbounded. A bare number ('40') "
                   "counts candidates, with a warning.")
@click.option("--model", metavar="PATH|NAME", default=None,
              help="GGUF model for the llm generator (see `sgcc models`).")
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
@click.option("--proof", type=click.Choice(["default", "tested", "bounded", "equivalent"]), default=None,
              help="How each accepted candidate's functions must be proven (docs/proof.md); default: the tests "
                   "plus the function-level differential test where it can run.")
@click.option("--footprint", type=click.Choice(["required", "waived"]), default=None,
              help="Candidates gcc did not write (replay, llm, clang): required (default: accepted only once the "
                   "footprint rule held on their function states, so left out in project mode) or waived "
                   "(accepted where the rule cannot run on the tests alone).")
@click.option("--min-gain", type=float, default=None,
              help="Minimum speedup the lower confidence bound must clear (0.03 = 3%).")
@click.option("--timing-rounds", type=int, default=None, help="Paired timing rounds per comparison (default 20).")
@click.option("--test-timeout", type=float, default=None, help="Seconds one test run may take.")
@click.option("--jobs", "-j", type=int, default=None, help="Parallel builds and tests (default: one per core).")
@click.option("--seed", type=int, default=None, help="Seed for timing order and sampling (reproducible runs).")
@click.option("--keep-temps", is_flag=True, default=None, help="Keep the work directory for debugging.")
@click.option("--no-cache", "no_cache", is_flag=True, default=False,
              help="Neither read nor write the verdict cache.")
@click.option("--refresh", is_flag=True, default=False,
              help="Search again where the cache already holds a verdict for this search (and store the new one).")
@click.option("--accept-isolation-risk", "accept_isolation_risk", is_flag=True, default=None,
              help="Run untrusted candidates (llm, replay) even where test runs cannot be fully isolated.")
@click.option("--quiet", "-q", is_flag=True, help="No progress display and no summary.")
def optimize(source, gcc_flags, tests, output, project, build, binary, test_command, bench, report_path, candidates,
             generators, budget,
             model, endpoint, samples, rounds, temperature, max_tokens, context, threads, isa, proof, footprint,
             min_gain, timing_rounds, test_timeout, jobs, seed, keep_temps, no_cache, refresh, accept_isolation_risk,
             quiet):
    """Optimize one C program against its tests: prove each candidate correct and faster, or drop it.

    GCC_FLAGS are the flags of the baseline build (default -O3), e.g. `-O3 -lm`: every word
    that is not one of the options below goes to gcc verbatim, before or after SOURCE, and
    every word after `--` does too. A program of several C files is named whole
    (`sgcc optimize main.c util.c -O3 ...`): each source is searched in turn, hottest first,
    within one --budget; objects and libraries (`b.o`, `-lm`) are linked as they are. The result
    OUT always passes every test: it is the baseline with every proven-faster function
    substituted, or the baseline itself. Verdicts go to the cache, so a later `CC=sgcc make`
    of the same code builds the optimized program without searching.

    With --project DIR, the whole project built in DIR is optimized: sgcc builds it with
    CC=sgcc, profiles its workload (--bench) and its test command (--test), searches the
    hottest functions the tests run within one --budget, stores the verdicts, and rebuilds
    the tree from the cache (see [project] in sgcc.toml).
    """
    from sgcc.engine import optimize as run_optimize
    from sgcc.progress import Progress

    if project is not None:
        if source is not None:
            raise click.UsageError("give SOURCE or --project, not both")
    else:
        if source is None:
            raise click.UsageError("missing SOURCE (or --project DIR)")
        if tests is None or output is None:
            raise click.UsageError("SOURCE needs --tests DIR and -o OUT")
    for path, what in ((output, "-o"), (report_path, "--report")):
        if path is not None:
            _check_writable(path, what)
    inputs = click.get_current_context().meta.get("sgcc.gcc_inputs", [])
    _check_gcc_inputs(inputs, budget)
    # More C sources: one program of several files (sgcc.engine.sources); the rest is gcc's.
    sources = [source, *(Path(w) for w, _ in inputs if w.endswith(".c") and os.path.isfile(w))] \
        if source is not None and project is None else []
    flags = list(gcc_flags)
    for extra in sources[1:]:
        flags.remove(str(extra))
    if not any(f.startswith("-O") for f in flags):
        flags.insert(0, "-O3")
    for bad in ("-c", "-S", "-E", "-o"):
        if bad in flags:
            raise click.UsageError(f"{bad} is not a baseline flag here (sgcc optimize builds the program itself)")
    options = {"isa": isa, "proof": proof, "footprint": footprint, "min_gain": min_gain, "timing_rounds": timing_rounds,
               "test_timeout": test_timeout, "jobs": jobs, "keep_temps": keep_temps,
               "generators": generators, "budget": budget, "model": model, "endpoint": endpoint,
               "samples": samples, "rounds": rounds, "temperature": temperature,
               "max_tokens": max_tokens, "context": context, "threads": threads,
               "seed": seed, "cache": False if no_cache else None, "accept_isolation_risk": accept_isolation_risk}
    cfg, request = request_from_options(
        options,
        source=source or Path("-"), flags=flags, tests=tests or Path("-"), output=output or Path("-"),
        replay_dirs=candidates, refresh=refresh, cwd=project.resolve() if project is not None else None)
    from sgcc.config import budget_warning

    warning = budget_warning(cfg)
    if warning:
        click.echo(warning, err=True)
    for gen in request.generators:
        if gen.error is not None:
            # Known before any work (no model of that name, no such file, not a GGUF file):
            # said now, not after the baseline is built and tested.
            raise SgccError(f"the {gen.name} generator cannot run: {gen.error.message}", hint=gen.error.hint)
    if project is not None:
        _optimize_project(project, cfg, request, build, binary, tests, test_command, bench, report_path, quiet,
                          no_cache)
        return
    if len(sources) > 1:
        _optimize_sources(sources, cfg, request, options, candidates, refresh, report_path, quiet, output)
        return
    progress = Progress(enabled=not quiet)
    progress.tick(True)  # a terminal's clock keeps moving through long builds, tests and timings
    try:
        report = run_optimize(request, progress)
    finally:
        progress.done()
    # A generator that could not run once the run had begun (a model llama.cpp cannot load, an
    # unreachable endpoint) did not stop it: OUT holds gcc's program or what the others
    # proved. Say so, and fail.
    failed = [g for g in request.generators if g.error is not None]
    for gen in failed:
        report.notes.append(f"the {gen.name} generator could not run: {gen.error.message}")
    if report_path is not None:
        _write_report(report_path, report)
    if not quiet:
        click.echo(report.summary(), err=True)
    if failed:
        err = failed[0].error
        raise SgccError(f"the {failed[0].name} generator could not run: {err.message} "
                        f"({output} was still written and passes every test)", hint=err.hint)


def _optimize_sources(sources: list[Path], cfg, request, options: dict, candidates, refresh, report_path, quiet,
                      output) -> None:
    """``sgcc optimize a.c b.c ...``: one program of several sources (sgcc.engine.sources)."""
    from sgcc.engine.sources import optimize_sources
    from sgcc.progress import Progress

    def make_request(src: Path, flags: list[str], out: Path):
        return request_from_options(options, source=src, flags=flags, tests=request.tests, output=out,
                                    replay_dirs=candidates, refresh=refresh)[1]

    progress = Progress(enabled=not quiet)
    progress.tick(True)
    try:
        report = optimize_sources(request, sources, make_request, progress)
    finally:
        progress.done()
    if report_path is not None:
        _write_report(report_path, report)
    if not quiet:
        click.echo(report.summary(), err=True)
    if report.failed:
        src, gen = report.failed[0]
        raise SgccError(f"the {gen.name} generator could not run on {src}: {gen.error.message} "
                        f"({output} was still written and passes every test)", hint=gen.error.hint)


def _optimize_project(directory: Path, cfg, request, build, binary, tests, test_command, bench, report_path, quiet,
                      no_cache) -> None:
    from sgcc.progress import Progress
    from sgcc.project.optimize import Project, ProjectSpec

    if no_cache:
        raise click.UsageError("--project works through the cache (the rebuilt tree takes its winners from it)")
    root = directory.resolve()
    if cfg.project_file is not None and cfg.project_file.parent != root:
        table = {}  # an sgcc.toml above the project describes some other project
    else:
        table = cfg.project
    if not root.is_dir():
        raise SgccError(f"the project directory {directory} does not exist")
    # Paths on the command line are the current directory's (sgcc.toml's are the project's).
    spec = ProjectSpec.from_table(root, table, build=build, binary=binary, test=test_command, bench=list(bench),
                                  tests=str(tests.resolve()) if tests is not None else None)
    progress = Progress(enabled=not quiet)
    progress.tick(True)  # in a log, a step that lasts is said again (a whole project's run takes minutes)
    runner = Project(spec, request, cfg, progress)
    try:
        report = runner.run()
    finally:
        progress.done()
        runner.close()
    if report_path is not None:
        _write_report(report_path, report)
    if not quiet:
        click.echo(report.summary(), err=True)


def _check_gcc_inputs(inputs: list[tuple[str, str]], budget: str | None) -> None:
    """Refuse, before any work, a word that would reach gcc as an input file that does not
    exist: gcc would fail on it after sgcc had built nothing useful. ``--budget 1 minute``
    is the common case (the budget is one word: ``minute`` went to gcc)."""
    import os

    from sgcc.config import BUDGET_FORMS, BUDGET_UNITS, CANDIDATE_UNITS

    for word, before in inputs:
        if os.path.exists(word):  # (False, not an error, for a name too long to exist)
            continue  # another source, an object, a library: gcc's to take
        if budget is not None and before == budget and \
                word.lower() in {*(u for u, _ in BUDGET_UNITS), *CANDIDATE_UNITS}:
            raise SgccError(f"--budget {budget} {word}: the budget is one word, and '{word}' would go to gcc "
                            "as an input file", hint=f"write it as one word, e.g. --budget {budget}{word[0].lower()}"
                                                     f"; a budget is {BUDGET_FORMS}")
        raise SgccError(f"'{word}' would go to gcc as an input file, and no such file exists",
                        hint="words that are not sgcc's options go to gcc (`sgcc optimize -h` lists sgcc's); "
                             "quote an option's value that has spaces")


def _check_writable(path: Path, what: str) -> None:
    """Refuse, before any work, an output sgcc could not write at the end: its directory
    must exist (or be creatable) and take a new file (a probe file is made and removed:
    permission bits alone do not tell, /proc says yes to root and refuses the write)."""
    import os

    if path.is_dir():
        raise click.BadParameter(f"{path} is a directory", param_hint=f"'{what}'")
    parent = path.parent if str(path.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        probe = parent / f".sgcc-probe-{os.getpid()}-{os.urandom(4).hex()}"
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise SgccError(f"cannot write {what} {path}", cause=exc,
                        hint="name a file in a directory you can write to") from exc


def _write_report(path: Path, report) -> None:
    try:
        atomic_write(path, report.to_json() + "\n")
    except OSError as exc:
        raise SgccError(f"cannot write the report {path}", cause=exc) from exc
