"""``sgcc bench DATASET``: the click command (the work is in :mod:`sgcc.lab.bench`)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from sgcc.fsutil import atomic_write

#: Settings whose change changes the figures: a resume file written under others is refused.
FINGERPRINT = ("isa", "min_gain", "timing_rounds", "mutants", "generators", "budget", "variants", "model",
               "endpoint", "samples", "rounds", "temperature", "max_tokens", "seed", "min_sample", "test_timeout",
               "compiler", "cache")


@click.command(name="bench")
@click.argument("dataset", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--generators", metavar="LIST", default=None,
              help="Candidate generators (as for optimize): auto, replay, llm, variants, flags, pgo, layout, clang; "
                   "'-NAME' removes one.")
@click.option("--candidates-dir", "candidates_dir", metavar="NAME", default="candidates", show_default=True,
              help="Replay candidates' directory inside each problem.")
@click.option("--model", metavar="PATH|NAME", default=None, help="GGUF model for the llm generator.")
@click.option("--endpoint", metavar="URL", default=None, help="OpenAI-compatible endpoint for the llm generator.")
@click.option("--samples", type=int, default=None, help="llm: answers per function and round (best-of-N).")
@click.option("--rounds", type=int, default=None, help="llm: refinement rounds after the first answers.")
@click.option("--temperature", type=float, default=None, help="llm: sampling temperature.")
@click.option("--max-tokens", type=int, default=None, help="llm: most tokens per answer.")
@click.option("--isa", type=click.Choice(["flags", "native"]), default=None,
              help="Instructions candidates may use (native also replays candidates-native/).")
@click.option("--min-gain", type=float, default=None, help="Minimum speedup the lower confidence bound must clear.")
@click.option("--timing-rounds", type=int, default=None, help="Paired timing rounds per comparison (default 20).")
@click.option("--budget", metavar="BUDGET", default=None,
              help="Search budget per problem ('300s', '40c' candidates, '300s,40c').")
@click.option("--only", multiple=True, metavar="NAME", help="Only this problem (may be repeated).")
@click.option("--jobs", "-j", type=int, default=None, help="Problems built and tested in parallel (default: cores).")
@click.option("--seed", type=int, default=None, help="Seed for timing order, sampling and perturbations.")
@click.option("--json", "json_out", is_flag=False, flag_value="-", default=None, metavar="FILE",
              help="Write everything as JSON to FILE ('--json' alone: to stdout, instead of the tables).")
@click.option("--perturbation", is_flag=True, help="Also run the papers' random layout perturbation baseline.")
@click.option("--perturbations", type=int, default=10, show_default=True, help="Perturbations per problem.")
@click.option("--curves", "curves_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write best-of-N and refinement curves as PNG to this directory.")
@click.option("--aa", is_flag=True, help="Also time each baseline against a byte-identical copy (noise floor).")
@click.option("--aa-max", type=int, default=8, show_default=True, help="At most this many problems for --aa.")
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep each problem's shipped program as DIR/NAME.")
@click.option("--cache", "use_cache", is_flag=True,
              help="Use the verdict cache (off by default: a bench must measure).")
@click.option("--cluster", metavar="ADDRESS", default=None,
              help="Run the problems on a Ray cluster: ray://HOST:PORT, HOST:PORT, or auto (the local one); "
                   "'none' for this machine. Needs the [cluster] extra (docs/cluster.md).")
@click.option("--resume", "resume", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Record each finished problem in FILE; a rerun with the same FILE re-runs none of them.")
@click.option("--quiet", "-q", is_flag=True, help="No per-problem progress lines.")
def bench(dataset, generators, candidates_dir, model, endpoint, samples, rounds, temperature, max_tokens, isa,
          min_gain, timing_rounds, budget, only, jobs, seed, json_out, perturbation, perturbations, curves_dir, aa,
          aa_max, output_dir, use_cache, cluster, resume, quiet):
    """Run the engine on every problem of DATASET and print the papers' row and sgcc's figures.

    DATASET holds problems NAME/NAME.c with NAME/tests/*.in (optional .out) and optional
    replay candidates NAME/candidates/. Printed: a per-problem table; the papers' row
    (compile pass %, test pass %, speedup p25/p50/p75 and average, best candidate clipped at
    1); sgcc's figures (geometric mean of the shipped programs' re-measured speedups,
    unclipped, with an interval; problems with a significant gain); per-generator counts,
    best-of-N and refinement curves, the search time; with --aa the A-vs-A noise floor, with
    --perturbation the random layout baseline measured the papers' way and sgcc's way.
    """
    from sgcc import config as configmod
    from sgcc.candidates import registry
    from sgcc.lab import bench as benchmod

    options = {"isa": isa, "min_gain": min_gain, "timing_rounds": timing_rounds, "generators": generators,
               "budget": budget, "model": model, "endpoint": endpoint, "samples": samples, "rounds": rounds,
               "temperature": temperature, "max_tokens": max_tokens, "seed": seed,
               "cache": None if use_cache else False, "cluster": cluster}
    cfg = configmod.load(options)
    warning = configmod.budget_warning(cfg)
    if warning:
        click.echo(warning, err=True)
    problems = benchmod.discover(dataset, only=list(only), candidates_dir=candidates_dir, isa=cfg.isa)
    address = cfg.cluster if cfg.cluster not in ("", "none") else None
    workers = jobs or os.cpu_count() or 1
    local_llm = bool(cfg.model) and not cfg.endpoint and "llm" in registry.resolve_names(
        cfg.generators, have_model=True, have_replay=True)
    if local_llm and not str(cfg.model).startswith("fake:"):
        from sgcc.llm import models

        models.resolve(str(cfg.model))  # no such model, or no GGUF file: said before any problem runs
    if jobs is None and local_llm:
        workers = 1  # each problem's engine loads the local model: one at a time, not one per core
    opts = benchmod.Options(jobs=workers, min_gain=cfg.min_gain, timing_rounds=cfg.timing_rounds,
                            min_sample=cfg.min_sample, test_timeout=cfg.test_timeout, seed=cfg.seed,
                            perturbation=perturbation, perturbations=perturbations, aa=aa, aa_max=aa_max,
                            output_dir=output_dir.resolve() if output_dir else None, compiler=cfg.compiler or "gcc")
    given = {k: v for k, v in options.items() if k != "cluster"}
    if address is None:
        make_request = benchmod.RequestMaker(given, cfg.generators, opts.flags,
                                             max(1, (cfg.jobs or os.cpu_count() or 1) // workers))
    else:
        # The nodes get this machine's effective settings (not their own sgcc.toml or SGCC_*),
        # less what names a file or directory here; each problem builds with its task's CPU.
        local = {"cluster", "cache_dir", "signing_key", "trusted_keys", "remote_storage", "jobs"}
        resolved = {k: v for k, v, _ in cfg.items() if k not in local}
        make_request = benchmod.RequestMaker({**resolved, **{k: v for k, v in given.items() if v is not None}},
                                             cfg.generators, opts.flags, 1)

    journal = None
    if resume is not None:
        from sgcc.lab.journal import Journal

        journal = Journal(resume, {"command": "bench", "dataset": str(dataset.resolve()),
                                   "candidates_dir": candidates_dir, "perturbations": perturbations,
                                   **{k: v for k, v, _ in cfg.items() if k in FINGERPRINT}})

    log = (lambda m: None) if quiet else (lambda m: click.echo(m, err=True))
    if address is None:
        result = benchmod.run(problems, make_request, opts, log=log, journal=journal)
    else:
        from sgcc.lab.cluster import Session

        with Session(address) as session:
            nodes = session.check_nodes(opts.compiler)
            log(f"sgcc bench: cluster {session.address}: {len(nodes)} node(s), {nodes[0]['cpu']}, "
                f"{nodes[0]['compiler']}")
            result = benchmod.run(problems, make_request, opts, log=log, session=session, journal=journal)
    result["dataset"] = str(dataset)
    if curves_dir is not None:
        result["curve_files"] = [str(p) for p in benchmod.write_curves(result, curves_dir)]
    from sgcc.engine import finite_json

    text = json.dumps(finite_json(result), indent=2)
    if json_out == "-":
        click.echo(text)
    else:
        click.echo(benchmod.render(result))
        if json_out:
            atomic_write(json_out, text + "\n")
        if curves_dir is not None:
            click.echo(f"curves written to {', '.join(result['curve_files'])}")
    sys.stdout.flush()

