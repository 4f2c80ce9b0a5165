"""The ``sgcc`` click group and the boundary where a tool command's errors become messages.

:func:`run_command` is the one place where :class:`~sgcc.errors.SgccError` is reported as
``sgcc: error: ...`` (with its hint) and exit status 1; usage errors exit with 2, as click
does. Each command lives in a module of its own (``sgcc.cli.functions``, ``sgcc.cli.optimize``,
``sgcc.cli.cache``, ``sgcc.cli.config``, ``sgcc.cli.models``; the research commands in
``sgcc.lab.bench_cmd`` and ``sgcc.lab.dataset_cmd``) and is registered here.
"""

from __future__ import annotations

import click

from sgcc import __version__
from sgcc.cli.cache import cache_group, stats
from sgcc.cli.config import config_command
from sgcc.cli.functions import functions
from sgcc.cli.models import models_command
from sgcc.cli.optimize import optimize
from sgcc.config import env_flag
from sgcc.errors import SgccError
from sgcc.lab.bench_cmd import bench
from sgcc.lab.dataset_cmd import dataset


class SgccGroup(click.Group):
    """The command group, whose own help option is ``-h`` only: ``sgcc --help`` is a gcc
    command line (gcc's help), so listing it as sgcc's would send a reader to gcc."""

    def get_help_option_names(self, ctx: click.Context) -> list[str]:
        return ["-h"]

    def get_help_option(self, ctx: click.Context):
        option = super().get_help_option(ctx)
        if option is not None:
            option.help = "Show this message and exit (`sgcc --help` is gcc's help, like every gcc command line)."
        return option


@click.group(
    cls=SgccGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    invoke_without_command=False,
)
def cli() -> None:
    """sgcc: a gcc drop-in that makes C programs faster than gcc -O3 and never makes them wrong.

    Any command line that does not start with one of the commands below (or is not `sgcc -h`
    alone) is a gcc command line: `sgcc -O3 -c foo.c`, `CC=sgcc make`, `CC="sgcc gcc" make`,
    `sgcc --help` and `sgcc --version` (gcc's). `sgcc help COMMAND` or `sgcc COMMAND -h`
    shows a command's options.
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


# Registered in the order the help lists them (click sorts by name anyway).
for _command in (functions, optimize, models_command, stats, cache_group, config_command, dataset, bench):
    cli.add_command(_command)


def _whole_first_sentences(group: click.Group) -> None:
    """Every command's line in a help listing is its docstring's whole first sentence,
    wrapped, never cut with "..." (click cuts it to the width left beside the name)."""
    for command in group.commands.values():
        if command.short_help is None and command.help:
            command.short_help = command.get_short_help_str(limit=10_000)
        if isinstance(command, click.Group):
            _whole_first_sentences(command)


_whole_first_sentences(cli)


def run_command(args: list[str]) -> int:
    """Run the tool command ``args`` (argv without the program name) and return its exit status.

    The one place a tool command's errors are turned into messages and exit codes: an
    :class:`SgccError` is ``sgcc: error: ...`` and 1, a usage error click's message and 2, an
    interrupt ``sgcc: interrupted`` and 130, ``ctx.exit(n)`` in a command is ``n``.
    """
    try:
        # Not standalone: click returns instead of exiting, so the errors are reported here.
        status = cli.main(args=args, prog_name="sgcc", standalone_mode=False)
    except SgccError as exc:
        click.echo(exc.render(), err=True)
        return 1
    except click.exceptions.Abort:
        click.echo("sgcc: interrupted", err=True)
        return 130
    except click.UsageError as exc:
        # Bad input is an `sgcc: error:` line like any other, with the usage as the hint.
        click.echo(f"sgcc: error: {exc.format_message()}", err=True)
        if exc.ctx is not None:
            usage = exc.ctx.get_usage().replace("\n", " ")
            click.echo(f"sgcc: hint: {usage} (see '{exc.ctx.command_path} --help')", err=True)
        return exc.exit_code
    except click.ClickException as exc:
        click.echo(f"sgcc: error: {exc.format_message()}", err=True)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except KeyboardInterrupt:
        click.echo("sgcc: interrupted", err=True)
        return 130
    except Exception as exc:  # a bug in sgcc: still one line for the user, the details on request
        if env_flag("SGCC_DEBUG", unknown=True):
            raise
        click.echo(f"sgcc: error: internal error ({type(exc).__name__}: {exc})", err=True)
        click.echo("sgcc: hint: this is a bug in sgcc; SGCC_DEBUG=1 shows where it happened", err=True)
        return 70  # EX_SOFTWARE
    # click returns the code of a `ctx.exit(n)` (and of --help: 0); commands themselves return None.
    return status if isinstance(status, int) else 0
