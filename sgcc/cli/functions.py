"""``sgcc functions ASM_FILE``: the function units of a gcc assembly file."""

from __future__ import annotations

import json
import os
import sys

import click

from sgcc.errors import SgccError


@click.command()
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
