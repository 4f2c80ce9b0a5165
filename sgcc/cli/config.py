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
    explained = {k: effective(cfg, k, v) for k, v, _ in items}
    if as_json:
        data = {k: {"value": v, "source": src} for k, v, src in items}
        for k, (value, why) in explained.items():
            if why:
                data[k].update({"effective": value, "meaning": why})
        data["_files"] = [str(f) for f in cfg.files]
        if cfg.project:
            data["_project"] = cfg.project
        data["_isolation"] = _isolation().to_dict()
        click.echo(json.dumps(data, indent=2))
        return
    width = max(len(k) for k, _, _ in items)
    for key, _value, source in items:
        shown, why = explained[key]
        if why:  # a default that stands for something (0: all cores): what it is here, and why
            source = f"{source}: {why}"
        click.echo(f"{key:<{width}}  {str(shown)!s:<24}  ({source})")
    if cfg.project:
        click.echo(f"[project] in {cfg.project_file}: " + ", ".join(f"{k} = {v!r}" for k, v in cfg.project.items()))
    click.echo(f"cache directory in effect: {configmod.cache_dir(cfg)}")
    click.echo(f"isolation of test runs: {_isolation().describe()}")


def effective(cfg, key: str, value: object) -> tuple[object, str]:
    """What a setting amounts to here, and what its value means, for the values that stand
    for something else (``0``: all cores, ``""``: gcc from PATH...): ``(value, meaning)``.
    Other values come back as they are, with no meaning to add."""
    import os
    import shutil

    if key == "threads" and not value:
        from sgcc.llm.backends import default_threads

        return default_threads(), "0 = all cores this process may use"
    if key == "jobs" and not value:
        return os.cpu_count() or 1, "0 = one per core"
    if key == "context" and not value:
        return _model_context(cfg), "0 = the model's own context, at most 8192 tokens"
    if key == "compiler" and not value:
        return shutil.which("gcc") or "gcc (not found in PATH)", "empty = gcc from PATH"
    if key == "cache_dir":
        from sgcc import config as configmod

        return configmod.cache_dir(cfg), "" if value else "empty = the user cache directory"
    if key == "budget" and not value:
        return "none", ("optimize: unbounded; optimize --project: 5 min + 2 min per source searched, "
                        "at most 30 min")
    if key == "generators" and value == "auto":
        from sgcc.candidates.registry import resolve_names

        names = resolve_names("auto", have_model=bool(cfg.model or cfg.endpoint), have_replay=False)
        return "auto", f"{','.join(names)}, and replay with --candidates"
    if key == "variants" and not value:
        return "built-in", "empty = the built-in list of flag sets"
    if key == "clang_variants" and not value:
        return "built-in", "empty = the built-in list of option sets"
    if key == "clang" and not value:
        from sgcc.candidates.clang import locate

        command, why = locate("")
        return (command[0] if command else "none"), ("empty = the ziglang wheel's clang" if command else
                                                    f"empty = the ziglang wheel's clang: {why}")
    if key == "seed" and value is None:
        return "random", "none = a new seed each run"
    if key == "model" and not value:
        return "none", "empty = no local model (the llm generator needs one, or an endpoint)"
    if key == "endpoint" and not value:
        return "none", "empty = no chat server"
    if key == "signing_key" and not value:
        from sgcc.cache.trust import user_key_path

        return user_key_path(), "empty = your own key, made on first use"
    if key == "cluster" and not value:
        return "none", "empty = sgcc bench and dataset build run on this machine"
    if key in ("trusted_keys", "remote_storage") and not value:
        return "none", ""
    return value, ""


def _model_context(cfg) -> object:
    """The context a local model would get: its own, at most 8192 (or what is unknown without one)."""
    from sgcc.llm.backends import DEFAULT_CONTEXT_CAP

    if not cfg.model or cfg.endpoint:
        return f"at most {DEFAULT_CONTEXT_CAP}"
    try:
        from sgcc.llm import models

        info = models.resolve(str(cfg.model))
    except Exception:  # noqa: BLE001 - a model that cannot be read is `sgcc models`' business
        return f"at most {DEFAULT_CONTEXT_CAP}"
    return min(info.context_length or DEFAULT_CONTEXT_CAP, DEFAULT_CONTEXT_CAP)


def _isolation():
    from sgcc.verify.box.isolation_level import isolation_report

    return isolation_report()
