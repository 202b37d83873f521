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

#: Commands that hash many files in worker processes: their fork server (about 0.5 s of
#: loading the compiled kernels) is started before the parser is even built, so that it loads
#: on another core while this process imports the command modules and the logging; the
#: command itself ends it when it hashed nothing (:func:`isccd.forkserver.end`).
HASHING_COMMANDS = frozenset({"scan"})


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
    words = sys.argv[1:] if argv is None else list(argv)
    early = bool(words) and words[0] in HASHING_COMMANDS and _start_fork_server()
    try:
        args = build_parser().parse_args(words)
    except BaseException:  # --help, a usage error: nothing will be hashed
        if early:
            _end_fork_server()
        raise
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


def _start_fork_server() -> bool:
    from isccd import forkserver  # noqa: PLC0415 -- only the hashing commands load it

    return forkserver.start_early()


def _end_fork_server() -> None:
    from isccd import forkserver  # noqa: PLC0415

    forkserver.end()
