"""sgcc's own commands (``sgcc functions``, ``sgcc optimize``, ...), as a click group.

This is the CLI boundary for tool commands: library code raises :class:`SgccError`, and it is
reported here once, with its hint, as ``sgcc: error: ...`` and exit status 1. Usage errors
exit with 2, as click does.
"""

from __future__ import annotations

import json
import sys

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
        import os

        os.makedirs(extract, exist_ok=True)
        for unit in asm.units:
            with open(os.path.join(extract, f"{unit.name}.s"), "w", encoding="utf-8", errors="surrogateescape") as fh:
                fh.write(unit.text)
    if as_json:
        click.echo(json.dumps([{"name": u.name, "lines": u.lines} for u in asm.units], indent=2))
    else:
        for unit in asm.units:
            click.echo(f"{unit.name} {unit.lines}")


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
