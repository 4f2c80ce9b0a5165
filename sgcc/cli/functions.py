"""``sgcc functions ASM_FILE``: the function units of a gcc assembly file."""

from __future__ import annotations

import json
import os
import sys

import click

from sgcc.errors import SgccError
from sgcc.fsutil import atomic_write, read_bounded

#: Largest assembly file read: gcc's output for a very large translation unit is a few MB.
MAX_ASSEMBLY = 256 << 20


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

    text = _read_assembly(asm_file)
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
        try:
            os.makedirs(extract, exist_ok=True)
            for unit in asm.units:
                atomic_write(os.path.join(extract, f"{unit.name}.s"), unit.text)
        except OSError as exc:
            raise SgccError(f"cannot write the units into {extract}", cause=exc,
                            hint="--extract needs a directory sgcc can create or write to") from exc
    if as_json:
        click.echo(json.dumps([{"name": u.name, "lines": u.lines} for u in asm.units], indent=2))
    else:
        for unit in asm.units:
            click.echo(f"{unit.name} {unit.lines}")


def _read_assembly(path: str) -> str:
    """The text of ``path`` (``-``: standard input): a bounded read of a regular file, and
    text, not a binary (an object file given by mistake would otherwise list nothing)."""
    if path == "-":
        data = sys.stdin.buffer.read(MAX_ASSEMBLY + 1)
        if len(data) > MAX_ASSEMBLY:
            raise SgccError(f"standard input holds more than {MAX_ASSEMBLY} bytes of assembly")
    else:
        data = read_bounded(path, MAX_ASSEMBLY, what="assembly file")
    if b"\0" in data:
        raise SgccError(f"{path} is not an assembly file (it holds binary data)",
                        hint="give gcc's assembly: gcc -O3 -S file.c")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SgccError(f"{path} is not an assembly file (not UTF-8 text at byte {exc.start})",
                        hint="give gcc's assembly: gcc -O3 -S file.c") from None
