"""Reaching the daemon from the command line: the ``--socket`` and ``--config`` options every
client command takes, which socket they name, connecting, and how a failure is told.

Every command finds the daemon the same way (:func:`find_socket`): ``--socket PATH``, else the
``ISCCD_SERVER__SOCKET`` variable, else ``[server] socket`` of the configuration (``--config
FILE``, else the daemon's default file when it exists), else the socket the daemon uses by
default (:func:`isccd.dirs.default_socket_path`): the order in which the daemon itself settles
where to listen, so that a command run by a user of the service finds it without options.
"""

from __future__ import annotations

import argparse
import os
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from isccd.cli import EXIT_CONFIG, EXIT_FAILURE
from isccd.dirs import default_config_path, default_socket_path
from isccd.errors import ConfigError, DaemonUnavailableError, ProtocolError

#: The variable that sets ``[server] socket`` (as :mod:`isccd.settings` names variables).
SOCKET_VARIABLE = "ISCCD_SERVER__SOCKET"

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


def add_config_option(parser: argparse._ActionsContainer) -> None:
    """Add ``--config FILE`` (as ``isccd run`` takes it)."""
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="the daemon's TOML configuration (default: $CONFIGURATION_DIRECTORY/isccd.toml, "
        "/etc/isccd/isccd.toml as root, ~/.config/isccd/isccd.toml otherwise, when it exists)",
    )


def find_socket(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> Path:
    """The daemon's socket, found in the order of the module docstring.

    Reads no more of the configuration than ``[server] socket``, without the settings model,
    so that a command asking the daemon starts quickly; the daemon validates the whole file.

    Args:
        args: The command's arguments (``socket`` and ``config``, when it has them).
        env: The environment (the process environment by default).

    Raises:
        ConfigError: The configuration file given cannot be read or parsed, or the socket it
            or the variable names is not an absolute path.
    """
    given: Path | None = getattr(args, "socket", None)
    if given is not None:
        return given
    env = os.environ if env is None else env
    # Variable names are matched without regard to case, as the settings match them.
    named = {key.upper(): value for key, value in env.items()}.get(SOCKET_VARIABLE)
    if named:
        if not Path(named).is_absolute():
            # As the daemon refuses it: a relative socket would depend on the directory.
            raise ConfigError(f"{named!r} is not an absolute path (from {SOCKET_VARIABLE})")
        return Path(named)
    configured = _configured_socket(getattr(args, "config", None), env)
    return configured if configured is not None else default_socket_path(env)


def config_tables(given: Path | None, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The tables of the configuration file (``--config FILE``, else the default file when it
    exists; none: empty), parsed as TOML only, without the settings model.

    Raises:
        ConfigError: The file cannot be read, or is not TOML.
    """
    env = os.environ if env is None else env
    path = given
    if path is None:
        path = default_config_path(env)
        if not path.is_file():
            return {}
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _configured_socket(given: Path | None, env: Mapping[str, str]) -> Path | None:
    """``[server] socket`` of the configuration file, if it sets one."""
    data = config_tables(given, env)
    path = given if given is not None else default_config_path(env)
    server = data.get("server")
    value = server.get("socket") if isinstance(server, dict) else None
    if value is None:
        return None
    if not isinstance(value, str) or not Path(value).is_absolute():
        raise ConfigError(f"{path}: server.socket: must be an absolute path, got {value!r}")
    return Path(value)


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


def fail(exc: DaemonUnavailableError | ProtocolError | ConfigError) -> int:
    """Tell why the daemon could not answer, on stderr; the exit status: 78 when the
    configuration could not be read (:func:`find_socket`), else 1."""
    if isinstance(exc, ProtocolError):
        print(f"isccd: {exc.message} ({exc.code})", file=sys.stderr)
    else:
        print(f"isccd: {exc}", file=sys.stderr)
    return EXIT_CONFIG if isinstance(exc, ConfigError) else EXIT_FAILURE
