"""``sgcc dataset ...``: building (and, later, exporting) benchmark datasets.

A click group of its own, registered in :mod:`sgcc.cli.main`; further subcommands are added
here with ``@dataset.command()``. The work is in :mod:`sgcc.lab.dataset` and
:mod:`sgcc.lab.export`; errors are :class:`~sgcc.errors.SgccError` and reported by the CLI
boundary (:func:`sgcc.cli.main.run_command`).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from sgcc.lab.export import DATA_SOURCE


@click.group(name="dataset")
def dataset() -> None:
    """Build benchmark datasets of C problems with recorded tests."""


@dataset.command(name="build")
@click.argument("src_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(path_type=Path),
              help="Directory to write the dataset to (written atomically).")
@click.option("--keep-top", type=click.IntRange(min=1), default=None, metavar="N",
              help="Keep only the N problems where -O3 gained most over -O0 (default: all).")
@click.option("--jobs", "-j", type=click.IntRange(min=0), default=0,
              help="Problems built and tested in parallel (0: one per core).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True,
              help="Seconds one run of a program may take.")
@click.option("--rounds", type=click.IntRange(min=2), default=6, show_default=True,
              help="Paired timing rounds for each -O0 vs -O3 measurement.")
@click.option("--min-sample", type=click.FloatRange(min=0.0), default=0.05, show_default=True,
              help="Shortest timing sample in CPU seconds (short runs are repeated).")
@click.option("--compiler", default="gcc", show_default=True, help="The C compiler to build with.")
@click.option("--seed", type=int, default=None, help="Seed for the timing order (reproducible runs).")
@click.option("--force", is_flag=True, help="Replace an existing dataset at --out (never another directory).")
@click.option("--json", "as_json", is_flag=True, help="Print dataset.json's content instead of the summary.")
@click.option("--cluster", metavar="ADDRESS", default=None,
              help="Build, test and time the problems on a Ray cluster: ray://HOST:PORT, HOST:PORT, or auto; "
                   "'none' for this machine. Needs the [cluster] extra (docs/cluster.md).")
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
def build_command(src_dir: Path, out: Path, keep_top, jobs, timeout, rounds, min_sample, compiler, seed, force,
                  as_json, cluster, quiet) -> None:
    """Build a dataset from SRC_DIR into OUT.

    SRC_DIR holds NAME.c with inputs NAME.in / NAME-T.in, or NAME/NAME.c with NAME/*.in or
    NAME/tests/*.in (and optionally NAME/candidates*/, copied along). Each program is built
    at -O0 and -O3 and run in the sandbox; expected outputs are recorded from the program.
    Programs that do not compile, fail, time out, are non-deterministic or print something
    else at -O3 are dropped with the reason. Writes OUT/NAME/NAME.c, OUT/NAME/tests/T.in and
    T.out, and OUT/dataset.json (coverage, -O0 -> -O3 speedup, dropped programs).
    """
    from sgcc import config as configmod
    from sgcc.lab import dataset as datasetmod
    from sgcc.progress import Progress

    progress = Progress(enabled=not quiet)
    settings = dict(keep_top=keep_top, jobs=jobs, timeout=timeout, rounds=rounds, min_sample=min_sample,
                    compiler=compiler, force=force, seed=seed, progress=progress)
    address = configmod.load({"cluster": cluster}).cluster
    if address:
        from sgcc.lab.cluster import Session

        with Session(address) as session:
            session.check_nodes(compiler)
            data = datasetmod.build(src_dir, out, session=session, **settings)
    else:
        data = datasetmod.build(src_dir, out, **settings)
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(datasetmod.format_summary(data))
        click.echo(f"wrote {out}")


@dataset.command(name="export")
@click.argument("dataset_dir", metavar="DATASET", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="JSON-lines file to write (one VERL RL row per function).")
@click.option("--functions", type=click.Choice(["executed", "all"]), default="executed", show_default=True,
              help="Functions the tests execute (callgrind), or every function of the -O3 assembly.")
@click.option("--reward", type=click.Choice(["speedup_only", "correctness_guided"]), default=None,
              help="Reward named in each row's extra_info (default: the reward function's own default).")
@click.option("--data-source", default=DATA_SOURCE, show_default=True, help="The rows' data_source.")
@click.option("--split", default="train", show_default=True, help="The split named in extra_info.")
@click.option("--compiler", default="gcc", show_default=True, help="The C compiler of the baselines.")
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
def export_command(dataset_dir: Path, out: Path, functions, reward, data_source, split, compiler, quiet) -> None:
    """Write DATASET as VERL RL rows for training (see docs/training.md).

    One row per function worth optimizing of each problem (NAME/NAME.c with NAME/tests/),
    with the papers' prompt (the C source and gcc's -O3 unit of the function) as chat
    messages and a ground truth that sgcc.lab.reward.compute_score reads back.
    """
    from sgcc.lab import export as exportmod
    from sgcc.progress import Progress

    result = exportmod.export(dataset_dir, out, functions=functions, reward=reward, data_source=data_source,
                              split=split, compiler=compiler, progress=Progress(enabled=not quiet))
    for name, why in sorted(result["skipped"].items()):
        click.echo(f"sgcc: skipped {name}: {why}", err=True)
    click.echo(f"wrote {result['rows']} row(s) from {result['problems']} problem(s) to {out}")
