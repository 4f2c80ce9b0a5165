"""The ``sgcc`` entry point: a tool command, or a gcc command line.

``sgcc <command> ...`` runs one of sgcc's own commands when ``<command>`` is one of the fixed
words in :data:`COMMANDS` and sgcc was called by its own name; ``sgcc -h`` alone is sgcc's help
(gcc gives ``-h`` alone no meaning: it fails with "missing argument to '-h'"); everything else
is a gcc command line and goes to the drop-in (:mod:`sgcc.dropin.driver`), ``sgcc --help``
included (gcc's help: sgcc is gcc on every gcc command line). A file literally named like a
command word can still be compiled as ``./optimize`` or with prefix use (``sgcc gcc optimize``).

Only this dispatch runs before the drop-in, so it imports nothing but ``os`` and ``sys``.
"""

from __future__ import annotations

import os
import sys

#: sgcc's own command words. A gcc command line never starts with one of these bare words
#: unless it compiles a file of that exact name with no suffix, which gcc itself would treat
#: as a linker input.
COMMANDS = frozenset(
    ["functions", "optimize", "stats", "cache", "config", "models", "bench", "dataset", "help", "version"]
)


#: sgcc's short help option: a command line of this word alone is sgcc's help. gcc has no
#: use for it alone (``gcc -h`` is an error), and with anything else it stays gcc's.
HELP_ALONE = "-h"


def is_command(argv: list[str]) -> bool:
    """Whether ``argv`` asks for a tool command rather than a compile."""
    if len(argv) < 2 or (argv[1] not in COMMANDS and argv[1:] != [HELP_ALONE]):
        return False
    base = os.path.basename(argv[0])
    # Masquerading as gcc/cc, sgcc must be gcc and nothing else.
    return base.startswith("sgcc") or base == "__main__.py"  # `python -m sgcc`


def _cache_state() -> int:
    """``sgcc cache state`` without the command-line interface's imports: it runs once per
    build wrapped by ccache or sccache, whose no-change rebuild is otherwise a few
    milliseconds per file (docs/build-systems.md). Errors as :func:`sgcc.cli.main.run_command`
    reports them."""
    from sgcc.dropin import wrapper
    from sgcc.errors import SgccError

    try:
        paths = wrapper.state_command()
    except SgccError as exc:
        print(exc.render(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("sgcc: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug in sgcc: one line for the user, the details on request
        from sgcc.config import env_flag

        if env_flag("SGCC_DEBUG", unknown=True):
            raise
        print(f"sgcc: error: internal error ({type(exc).__name__}: {exc})", file=sys.stderr)
        print("sgcc: hint: this is a bug in sgcc; SGCC_DEBUG=1 shows where it happened", file=sys.stderr)
        return 70
    print(os.pathsep.join(paths))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``sgcc`` console script."""
    argv = list(sys.argv if argv is None else argv)
    if argv[1:] == ["cache", "state"] and is_command(argv):
        return _cache_state()
    if is_command(argv):
        from sgcc.cli.main import run_command
        from sgcc.verify.box.signals import install_signal_handlers

        install_signal_handlers()  # SIGTERM/SIGHUP unwind like SIGINT: runs end, temp dirs go

        return run_command(argv[1:])
    from sgcc.dropin import driver as dropin

    return dropin.main(argv)
