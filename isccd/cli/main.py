"""Entry point of the ``isccd`` command: builds the parser and dispatches to a command module.

Exit status: 0 success, 1 a command-specific failure (e.g. some files failed), 2 usage error,
78 invalid configuration, 130 interrupted.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import difflib
import importlib
import io
import os
import sys
import threading
from collections.abc import Sequence
from typing import NoReturn

from isccd import __version__
from isccd.cli import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, log_to_stderr
from isccd.cli.interrupts import Interrupts
from isccd.collector import paused

#: Modules that add commands, in the order they appear in ``--help``. They import only what
#: their argument definitions need; each command imports its implementation in its handler,
#: so that a command pays for no layer it does not use (tests/cli/test_imports.py).
COMMAND_MODULES: tuple[str, ...] = (
    "isccd.cli.engine",
    "isccd.cli.code",
    "isccd.cli.index",
    "isccd.cli.errors",
    "isccd.cli.dedupe",
    "isccd.cli.watchlist",
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

#: Commands that build one answer from a store, or carry out one plan, and end: they run
#: without the cycle collector (:func:`isccd.collector.paused`).
ANSWER_COMMANDS = frozenset({"dupes", "similar", "get", "dedupe"})


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
    for command in subparsers.choices.values():
        # The parser of the command given, so that an argument it does not know is reported
        # with that command's usage, not with the list of commands.
        command.set_defaults(command_parser=command)
    return parser


def parse(parser: argparse.ArgumentParser, words: Sequence[str]) -> argparse.Namespace:
    """``words`` parsed; an argument the command does not take is a usage error of that
    command (its usage line, then the error), as argparse reports every other one.

    Raises:
        SystemExit: ``--help``, ``--version`` or a usage error (argparse printed it).
    """
    args, extra = parser.parse_known_args(words)
    if extra:
        command: argparse.ArgumentParser = getattr(args, "command_parser", parser)
        message = f"unrecognized arguments: {' '.join(extra)}"
        options = [o for action in command._actions for o in action.option_strings]
        guesses = [g for word in extra for g in difflib.get_close_matches(word, options, 1)]
        if guesses:
            message += f" (did you mean {', '.join(guesses)}?)"
        command.error(message)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``isccd`` command line and return its exit status."""
    words = sys.argv[1:] if argv is None else list(argv)
    answers = bool(words) and words[0] in ANSWER_COMMANDS
    with paused() if answers else contextlib.nullcontext():
        return _command(words)


def _command(words: list[str]) -> int:
    asks_help = "-h" in words or "--help" in words  # nothing to hash: no fork server to wait on
    hashing = bool(words) and words[0] in HASHING_COMMANDS and not asks_help
    # A hashing command takes SIGINT and SIGTERM as a request to stop from before its fork
    # server starts (isccd.cli.interrupts): it is neither killed with the server's temporary
    # files left nor shown a traceback while it starts; done, it leaves them to its exit
    # handlers, which a first signal lets finish.
    with Interrupts(exiting=True) if hashing else contextlib.nullcontext() as interrupts:
        try:
            return _dispatch(words, interrupts)
        except KeyboardInterrupt:
            print("isccd: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED


def _dispatch(words: list[str], interrupts: Interrupts | None) -> int:
    early = False
    try:
        if interrupts is not None:
            with interrupts.held():
                early = _start_fork_server()
        args = parse(build_parser(), words)
        if args.command not in QUIET_COMMANDS:
            log_to_stderr()
        status: int = args.handler(args)
    except BrokenPipeError:
        # The reader of our output went away (e.g. `isccd code ... | head`): not an error.
        sys.stderr.close()
        return EXIT_OK
    finally:
        # Whatever ended the command (--help, a usage error, an interrupt before the command
        # took over the server): a no-op when the command ended the server itself.
        if early and interrupts is not None:
            with interrupts.held():
                _end_fork_server()
    return status


def run() -> NoReturn:
    """The ``isccd`` program: :func:`main`, then an exit that does not tear the interpreter down.

    Freeing each of the hundreds of modules a command loaded, and every object they hold, one
    by one, takes a command 0.05-0.1 s of CPU at exit (more than its own work, for the quick
    ones); the operating system frees the process's memory at once. What an exit must do is
    still done, in order: the exit handlers run (multiprocessing removes its temporary files,
    logging flushes its handlers), then the standard streams are flushed, and output that
    cannot be written fails the command as it would otherwise (a full disk is not a success).
    A thread still running gets the interpreter's own exit, which waits for it, and so does a
    measured run (coverage.py, a profiler, a debugger), whose report is written at that exit.
    """
    stdout = sys.stdout
    if stdout is not None and isinstance(getattr(stdout, "buffer", None), io.FileIO):
        # Unbuffered (python -u, PYTHONUNBUFFERED): Python's text layer then drops what a short
        # write leaves unwritten (a disk filling up) and the command succeeds with its output
        # cut; a buffered writer writes the rest or fails. Line buffered, as prompt as before.
        sys.stdout = io.TextIOWrapper(
            io.BufferedWriter(stdout.buffer),
            encoding=stdout.encoding,
            errors=stdout.errors,
            line_buffering=True,
        )
    try:
        status = main()
    except SystemExit as exc:  # --help, --version, a usage error: argparse printed it
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
            status = EXIT_FAILURE
        else:
            status = exc.code or EXIT_OK
    if threading.active_count() > 1 or _measured():
        sys.exit(status)
    atexit._run_exitfuncs()
    # A stream is None when the program started with its descriptor closed (`isccd ... >&-`).
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (`isccd dupes | head`): not an error
        pass
    except (OSError, ValueError) as exc:
        if sys.stderr is not None:
            print(f"isccd: the output could not be written: {exc}", file=sys.stderr)
        status = status or EXIT_FAILURE
    if sys.stderr is not None:
        with contextlib.suppress(OSError, ValueError):  # closed, or gone: nowhere to say it
            sys.stderr.flush()
    os._exit(status)


def _measured() -> bool:
    """Whether a tracer or profiler runs in this process, or coverage.py was imported (it is
    only when measuring: :mod:`isccd.iscc._jit` keeps numba from importing it)."""
    return sys.gettrace() is not None or sys.getprofile() is not None or "coverage" in sys.modules


def _start_fork_server() -> bool:
    from isccd import forkserver  # noqa: PLC0415 -- only the hashing commands load it

    return forkserver.start_early()


def _end_fork_server() -> None:
    from isccd import forkserver  # noqa: PLC0415

    forkserver.end()
