"""Reaching the daemon from the command line: the ``--socket`` option every client command
takes, connecting, and how a failure is told.

The socket defaults to the one the daemon uses by default
(:func:`isccd.dirs.default_socket_path`), so that a command run by a user of the service finds
it without options.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from isccd.cli import EXIT_FAILURE
from isccd.dirs import default_socket_path
from isccd.errors import DaemonUnavailableError, ProtocolError

if TYPE_CHECKING:
    # Imported where a command connects: building the parser must stay cheap.
    from isccd.client import Client

#: Seconds a daemon has to answer ``hello`` before it counts as not answering.
ANSWER_TIMEOUT = 10.0


def add_socket_option(parser: argparse._ActionsContainer) -> None:
    """Add ``--socket PATH`` to a parser or to a group of one."""
    parser.add_argument(
        "--socket",
        type=Path,
        metavar="PATH",
        help="the daemon's socket (default: $RUNTIME_DIRECTORY/isccd.sock, /run/isccd/isccd.sock "
        "as root, $XDG_RUNTIME_DIR/isccd/isccd.sock otherwise)",
    )


def socket_path(args: argparse.Namespace) -> Path:
    """The socket ``--socket`` names, or the default one."""
    path: Path | None = args.socket
    return path if path is not None else default_socket_path()


def connect(socket: Path) -> Client:
    """A connection to the daemon on ``socket``, once it has answered ``hello``.

    Connecting fails at once when nobody listens (no socket, or a stale socket file); the
    handshake gives a stopped daemon :data:`ANSWER_TIMEOUT` seconds. Later replies are awaited
    as long, unless asked inside :meth:`Client.waiting`.

    Raises:
        DaemonUnavailableError: No daemon answers on the socket.
        ProtocolError: The daemon refused the handshake (e.g. another protocol version).
    """
    from isccd.client import Client  # noqa: PLC0415

    client = Client(socket, timeout=ANSWER_TIMEOUT)
    try:
        client.hello()
    except BaseException:
        client.close()
        raise
    return client


def fail(exc: DaemonUnavailableError | ProtocolError) -> int:
    """Tell why the daemon could not answer, on stderr; the exit status 1."""
    if isinstance(exc, ProtocolError):
        print(f"isccd: {exc.message} ({exc.code})", file=sys.stderr)
    else:
        print(f"isccd: {exc}", file=sys.stderr)
    return EXIT_FAILURE
