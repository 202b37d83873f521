"""How the commands that read the index get their answer: from the daemon on its socket when one
answers, else from the store (see :mod:`isccd.cli.index`), and the small helpers they share
(their configuration, their failures, their bounded numbers).

The daemon is found by :func:`isccd.cli.connect.find_daemon`, and the store read in its stead is
the one that daemon uses: its configuration's (the system daemon's, when it stands in for the
user's own). When the socket was named (``--socket``, ``ISCCD_SERVER__SOCKET``, ``[server]
socket``) and nothing answers there, the command fails rather than answer from an index that
may not be that daemon's; ``--state DIR`` names the index to read without a daemon.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from isccd.cli import EXIT_CONFIG, EXIT_FAILURE, EXIT_USAGE, log_to_stderr
from isccd.cli.connect import Daemon, connect, find_daemon
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
    args: argparse.Namespace,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    asked: bool = True,
) -> IndexConfig:
    """The command's configuration, loaded once (see :mod:`isccd.config`).

    Args:
        args: The command's arguments (``state``, ``config``, and ``socket`` when it has one).
        overrides: Values of other flags, by section.
        asked: The configuration of the daemon the command asks (:func:`find_daemon`: the
            system daemon's when it stands in for the user's own), whose index it reads;
            ``False``: the user's own, for a command that writes its own index (``scan``).

    Raises:
        ConfigError: The file cannot be read, or a setting is invalid.
    """
    # Loading settings imports pydantic and the daemon's option mapping, about 150 ms that the
    # commands without configuration (`isccd code` run file by file) do not pay at every start.
    from isccd.config import load_index_config  # noqa: PLC0415

    daemon = find_daemon(args)
    config, env = (daemon.config, daemon.env) if asked else (args.config, None)
    return load_index_config(
        config, state=args.state, socket=daemon.socket, overrides=overrides, env=env
    )


def index_config(args: argparse.Namespace) -> IndexConfig:
    """The configuration of the index a command reads by itself (``errors``) or writes beside
    (``dedupe``'s action log): ``--state DIR``'s, else that of the daemon the command would
    ask, checked to be the one it uses.

    Raises:
        Failed: The configuration is invalid; or, without ``--state``, the daemon's socket was
            named and nothing answers there, or the daemon that answers keeps another index
            than the configured one.
    """
    try:
        config = configure(args)
        daemon = None if args.state is not None else find_daemon(args)
    except ConfigError as exc:
        raise Failed(str(exc), EXIT_CONFIG) from None
    if daemon is None:
        return config
    try:
        client = connect(daemon.socket)
    except DaemonUnavailableError as exc:
        if daemon.named is not None:
            raise Failed(_without_daemon(daemon, exc)) from None
        return config  # no daemon runs: its index is read as it left it
    except ProtocolError as exc:
        raise refused(exc) from None
    with client:
        served = client.hello().store
    if served is not None and served != _identity(config):
        raise Failed(
            f"the daemon on {shown(str(daemon.socket))} keeps another index than "
            f"{shown(config.store_name)}: give --state DIR (its state directory) or --config "
            "FILE (its configuration)"
        )
    return config


def _identity(config: IndexConfig) -> str | None:
    """The identity of the configured store; ``None`` when it cannot be read."""
    log_to_stderr()
    from isccd.pipeline import IndexReader  # noqa: PLC0415

    try:
        with IndexReader(config.store_url, config.reading(), host=config.store_host) as reader:
            return reader.store_id()
    except StoreError:
        return None


def _without_daemon(daemon: Daemon, exc: DaemonUnavailableError) -> str:
    """The failure of a command whose named socket does not answer."""
    return f"{daemon.unavailable(exc)}; give --state DIR to read an index without the daemon"


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
    daemon: Daemon | None = None
    if args.state is None:
        # The daemon is asked before the settings are loaded (pydantic, the option mapping):
        # it answers by itself, and its socket is read on its own.
        try:
            daemon = find_daemon(args)
        except ConfigError as exc:
            raise Failed(str(exc), EXIT_CONFIG) from None
        try:
            client = connect(daemon.socket)
        except DaemonUnavailableError as exc:
            if daemon.named is not None:
                raise Failed(_without_daemon(daemon, exc)) from None
            unavailable = daemon.unavailable(exc)
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
            f"isccd: no daemon answers on {shown(str(config.socket))}: read "
            f"{shown(config.store_name)}",
            file=sys.stderr,
        )
    return answer
