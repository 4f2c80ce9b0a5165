"""``sgcc config``: the effective configuration and where each value comes from."""

from __future__ import annotations

import json

import click


@click.command(name="config")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object of {key: {value, source}}.")
def config_command(as_json: bool) -> None:
    """Show the effective configuration and where each value comes from.

    Layers, highest first: command line, SGCC_* environment variables, the project's
    sgcc.toml (nearest at or above the working directory), the user file, defaults.
    """
    from sgcc import config as configmod

    cfg = configmod.load()
    items = [(k, configmod.shown(k, v), src) for k, v, src in cfg.items()]  # no secrets printed
    if as_json:
        data = {k: {"value": v, "source": src} for k, v, src in items}
        data["_files"] = [str(f) for f in cfg.files]
        if cfg.project:
            data["_project"] = cfg.project
        data["_isolation"] = _isolation().to_dict()
        click.echo(json.dumps(data, indent=2))
        return
    width = max(len(k) for k, _, _ in items)
    for key, value, source in items:
        shown = "" if value is None else value
        click.echo(f"{key:<{width}}  {str(shown)!s:<24}  ({source})")
    if cfg.project:
        click.echo(f"[project] in {cfg.project_file}: " + ", ".join(f"{k} = {v!r}" for k, v in cfg.project.items()))
    click.echo(f"cache directory in effect: {configmod.cache_dir(cfg)}")
    click.echo(f"isolation of test runs: {_isolation().describe()}")


def _isolation():
    from sgcc.verify.isolation_level import isolation_report

    return isolation_report()
