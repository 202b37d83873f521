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
from isccd.cli import EXIT_INTERRUPTED, EXIT_OK
from isccd.logconf import configure_logging

#: Modules that add commands, in the order they appear in ``--help``.
COMMAND_MODULES: tuple[str, ...] = (
    "isccd.cli.engine",
    "isccd.cli.code",
    "isccd.cli.index",
    "isccd.cli.errors",
    "isccd.cli.dedupe",
    "isccd.cli.report",
    "isccd.cli.service",
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
    # Warnings and errors of the layers below (a hashing worker replaced, a tool that failed)
    # go to stderr, never into the output; `isccd run` configures its own logging.
    configure_logging("warning")
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
