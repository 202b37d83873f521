"""How the commands that read the index get their answer: from the daemon on its socket when one
answers, else from the store (see :mod:`isccd.cli.index`), and the small helpers they share
(their configuration, their failures, their bounded numbers)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from isccd.cli import EXIT_CONFIG, EXIT_FAILURE, EXIT_USAGE, log_to_stderr
from isccd.cli.connect import connect, find_socket
from isccd.cli.escape import shown
from isccd.errors import ConfigError, DaemonUnavailableError, ProtocolError, StoreError
from isccd.protocol import ErrorCode

# The layers behind the answer (the client, the configuration, the store) are imported when
# used: building the parser must stay cheap (isccd.cli.main).
if TYPE_CHECKING:
    from isccd.client import Client
    from isccd.config import IndexConfig
    from isccd.pipeline import IndexReader

T = TypeVar("T")


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def bounded(maximum: int, minimum: int = 1) -> Callable[[str], int]:
    """An argparse type: an integer from ``minimum`` to ``maximum``."""

    def parse(text: str) -> int:
        value = int(text)
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be {minimum} to {maximum}, got {value}")
        return value

    return parse


def configure(
    args: argparse.Namespace, overrides: Mapping[str, Mapping[str, Any]] | None = None
) -> IndexConfig:
    """The command's configuration, loaded once (see :mod:`isccd.config`).

    Raises:
        ConfigError: The file cannot be read, or a setting is invalid.
    """
    # Loading settings imports pydantic and the daemon's option mapping, about 150 ms that the
    # commands without configuration (`isccd code` run file by file) do not pay at every start.
    from isccd.config import load_index_config  # noqa: PLC0415

    return load_index_config(
        args.config, state=args.state, socket=find_socket(args), overrides=overrides
    )


def fail(message: str, status: int = EXIT_FAILURE) -> int:
    print(f"isccd: {message}", file=sys.stderr)
    return status


def file_path(path: str) -> str:
    """An absolute path with its directory resolved (as the store keeps paths) but the last
    component kept, so that a symbolic link is asked about as itself."""
    absolute = Path(path).absolute()
    if absolute.name in ("", ".", ".."):
        return str(absolute.resolve())
    return str(absolute.parent.resolve() / absolute.name)


def refused(exc: ProtocolError) -> Failed:
    """A refusal (the daemon's, or the store's same check) as the command's failure: a
    request the arguments made invalid exits 2, as argparse does, anything else 1."""
    status = EXIT_USAGE if exc.code == ErrorCode.INVALID_ARGUMENT else EXIT_FAILURE
    return Failed(f"{exc.message} ({exc.code})", status)


class Failed(Exception):
    """A read-only command cannot answer; the message says why.

    Attributes:
        status: The exit status.
    """

    def __init__(self, message: str, status: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.status = status


def answer(
    args: argparse.Namespace,
    ask: Callable[[Client], T],
    read: Callable[[IndexReader, IndexConfig], T],
) -> T:
    """Ask the daemon, or read the store (see the module docstring).

    Raises:
        Failed: The configuration is invalid, the daemon refused, none answers on an explicit
            ``--socket``, or the store cannot be read.
    """
    unavailable: DaemonUnavailableError | None = None
    socket: Path | None = None
    if args.state is None:
        # The daemon is asked before the settings are loaded (pydantic, the option mapping):
        # it answers by itself, and its socket is read on its own.
        try:
            socket = find_socket(args)
        except ConfigError as exc:
            raise Failed(str(exc), EXIT_CONFIG) from None
        try:
            client = connect(socket)
        except DaemonUnavailableError as exc:
            if args.socket is not None:
                raise Failed(str(exc)) from None
            unavailable = exc
        except ProtocolError as exc:
            raise refused(exc) from None
        else:
            # A daemon that answered is the source from now on: its refusal, or its loss, is
            # the outcome. It works on the request (a large `dupes`, a file coded on the fly)
            # for as long as that takes.
            try:
                with client, client.waiting(None):
                    return ask(client)
            except DaemonUnavailableError as exc:
                raise Failed(str(exc)) from None
            except ProtocolError as exc:
                raise refused(exc) from None
    try:
        config = configure(args)
    except ConfigError as exc:
        raise Failed(str(exc), EXIT_CONFIG) from None
    log_to_stderr()
    from isccd.pipeline import IndexReader  # noqa: PLC0415

    try:
        with IndexReader(config.store_url, config.reading(), host=config.store_host) as reader:
            answer = read(reader, config)
    except ProtocolError as exc:  # the same refusals as the daemon's
        raise refused(exc) from None
    except StoreError as exc:
        # Say why the daemon was not asked either: its socket may just be out of reach.
        raise Failed(f"{exc}; {unavailable}" if unavailable else str(exc)) from None
    if unavailable is not None:
        # Which index answered in the daemon's stead (on stderr: the output keeps its form).
        print(
            f"isccd: no daemon answers on {shown(str(socket))}: read {shown(config.store_name)}",
            file=sys.stderr,
        )
    return answer
