"""Entry point of the ``isccd`` command: builds the parser and dispatches to a command module.

Exit status: 0 success, 1 a command-specific failure (e.g. some files failed), 2 usage error,
78 invalid configuration, 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from isccd import __version__
from isccd.cli import EXIT_INTERRUPTED, EXIT_OK, log_to_stderr

#: Modules that add commands, in the order they appear in ``--help``. They import only what
#: their argument definitions need; each command imports its implementation in its handler,
#: so that a command pays for no layer it does not use (tests/cli/test_imports.py).
COMMAND_MODULES: tuple[str, ...] = (
    "isccd.cli.engine",
    "isccd.cli.code",
    "isccd.cli.index",
    "isccd.cli.errors",
    "isccd.cli.dedupe",
    "isccd.cli.report",
    "isccd.cli.service",
)


#: Commands that reach no layer that logs (they decode codes or talk to the daemon), so they
#: skip configuring logging: structlog alone costs about 100 ms to import. ``dupes``,
#: ``similar`` and ``get`` configure it themselves when they read a store instead of asking,
#: ``code`` when it hashes in worker processes.
QUIET_COMMANDS = frozenset(
    {"explain", "compare", "status", "subscribe", "dupes", "similar", "get", "code"}
)


def build_parser() -> argparse.ArgumentParser:
    """The full parser with every command registered."""
    parser = argparse.ArgumentParser(
        prog="isccd",
        description="Content identity with ISCC codes (ISO 24138): code files, find duplicates, "
        "and run the watching daemon.",
    )
    parser.add_argument("--version", action="version", version=f"isccd {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``isccd`` command line and return its exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command not in QUIET_COMMANDS:
        log_to_stderr()
    try:
        status: int = args.handler(args)
    except KeyboardInterrupt:
        print("isccd: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of our output went away (e.g. `isccd code ... | head`): not an error.
        sys.stderr.close()
        return EXIT_OK
    return status
