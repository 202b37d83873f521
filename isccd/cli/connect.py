"""Reaching the daemon from the command line: the ``--socket`` and ``--config`` options every
client command takes, which daemon they ask, connecting, and how a failure is told.

Every command finds the daemon the same way (:func:`find_daemon`): ``--socket PATH``, else the
``ISCCD_SERVER__SOCKET`` variable, else ``[server] socket`` of the configuration (``--config
FILE``, else the daemon's default file when it exists), else the socket the daemon uses by
default (:func:`isccd.dirs.default_socket_path`): the order in which the daemon itself settles
where to listen, so that a command run by a user of the service finds it without options.

A socket found by its default place is the user's own daemon's. When it does not exist, the
user has no configuration file of their own and no ``--config``, the system service's socket
(``/run/isccd/isccd.sock``, or ``[server] socket`` of ``/etc/isccd/isccd.toml``) is asked
instead, with that configuration: a member of group ``isccd`` reaches the system daemon
without options. A socket the user named (the option, the variable or a configuration) is the
only one asked: when nothing answers there, the commands say so rather than answer from
another index.
"""

from __future__ import annotations

import argparse
import os
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from isccd.cli import EXIT_CONFIG, EXIT_FAILURE
from isccd.dirs import default_config_path, default_socket_path, system_env
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


@dataclass(frozen=True, slots=True)
class Daemon:
    """The daemon a command asks, and where its settings come from.

    Attributes:
        socket: Its socket.
        named: What named the socket (``--socket``, ``ISCCD_SERVER__SOCKET``, ``[server]
            socket of FILE``), or ``None`` for a socket found at its default place. A named
            socket is the only one to ask: when nothing answers there, nothing else does.
        config: The configuration file given (``--config``); ``None``: the default file of
            :attr:`env`, when it exists.
        env: The environment its default places are found in: this process's, or for the
            system daemon the one it runs with (:func:`isccd.dirs.system_env`).
        system: Whether this is the system daemon, asked because the user's own socket
            (:attr:`looked`) does not exist.
        looked: The other socket looked for, which does not exist: the user's own, for the
            system daemon; the system daemon's, for the user's own when neither exists.
    """

    socket: Path
    named: str | None
    config: Path | None
    env: Mapping[str, str]
    system: bool = False
    looked: Path | None = None

    def unavailable(self, exc: DaemonUnavailableError) -> DaemonUnavailableError:
        """``exc`` (nothing answers on :attr:`socket`), saying where else it looked."""
        if self.system:
            return DaemonUnavailableError(
                f"{exc} (the system daemon's socket: yours, {str(self.looked)!r}, does not exist)"
            )
        if self.looked is not None:
            return DaemonUnavailableError(
                f"{exc}; the system daemon's socket, {str(self.looked)!r}, does not exist either"
            )
        if self.named is not None:
            return DaemonUnavailableError(f"{exc} (named by {self.named})")
        return exc


def find_daemon(
    args: argparse.Namespace,
    env: Mapping[str, str] | None = None,
    system: Mapping[str, str] | None = None,
) -> Daemon:
    """The daemon to ask, found in the order of the module docstring.

    Reads no more of the configuration than ``[server] socket``, without the settings model,
    so that a command asking the daemon starts quickly; the daemon validates the whole file.

    Args:
        args: The command's arguments (``socket`` and ``config``, when it has them).
        env: The environment (the process environment by default).
        system: The environment the system daemon finds its places in (default:
            :func:`isccd.dirs.system_env` of ``env``).

    Raises:
        ConfigError: The configuration file given cannot be read or parsed, or the socket it
            or the variable names is not an absolute path.
    """
    env = os.environ if env is None else env
    config: Path | None = getattr(args, "config", None)
    given: Path | None = getattr(args, "socket", None)
    if given is not None:
        return Daemon(given, "--socket", config, env)
    # Variable names are matched without regard to case, as the settings match them.
    named = {key.upper(): value for key, value in env.items()}.get(SOCKET_VARIABLE)
    if named:
        if not Path(named).is_absolute():
            # As the daemon refuses it: a relative socket would depend on the directory.
            raise ConfigError(f"{named!r} is not an absolute path (from {SOCKET_VARIABLE})")
        return Daemon(Path(named), SOCKET_VARIABLE, config, env)
    configured = _configured_socket(config, env)
    if configured is not None:
        file = config if config is not None else default_config_path(env)
        return Daemon(configured, f"[server] socket of {file}", config, env)
    own = Daemon(default_socket_path(env), None, config, env)
    system = system_env(env) if system is None else system
    if not _may_use_the_system_daemon(own, env, system):
        return own
    socket = _system_socket(system)
    if not _present(socket):
        return Daemon(own.socket, None, config, env, looked=socket)
    return Daemon(socket, None, None, system, system=True, looked=own.socket)


def find_socket(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> Path:
    """The socket of :func:`find_daemon`'s daemon.

    Raises:
        ConfigError: As :func:`find_daemon`.
    """
    return find_daemon(args, env).socket


def _may_use_the_system_daemon(
    own: Daemon, env: Mapping[str, str], system: Mapping[str, str]
) -> bool:
    """Whether the system daemon stands in for the user's own: the user's socket does not
    exist, it is not the system's, its place is not set by systemd (a service's), and the
    user configured no daemon of their own (``--config``, their default file)."""
    if own.config is not None or env.get("RUNTIME_DIRECTORY") or _present(own.socket):
        return False
    if default_config_path(env).is_file():
        return False
    return own.socket != default_socket_path(system)


def _present(path: Path) -> bool:
    """Whether ``path`` exists; one in a directory this user may not search (the system
    daemon's, to a user outside its group) counts as there: connecting says why it fails."""
    try:
        path.lstat()
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def _system_socket(system: Mapping[str, str]) -> Path:
    """The system daemon's socket: ``[server] socket`` of its configuration, else its default.

    A configuration this user cannot read, or that is not valid TOML, leaves the default: the
    daemon reads it, not every user of it.
    """
    try:
        configured = _configured_socket(None, system)
    except (ConfigError, OSError):  # OSError: its directory cannot even be searched
        configured = None
    return configured if configured is not None else default_socket_path(system)


def open_client(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> Client:
    """A connection to the daemon :func:`find_daemon` finds (no ``hello``).

    Raises:
        ConfigError: As :func:`find_daemon`.
        DaemonUnavailableError: Nothing answers there; the message says where it looked.
    """
    from isccd.client import Client  # noqa: PLC0415

    daemon = find_daemon(args, env)
    try:
        return Client(daemon.socket)
    except DaemonUnavailableError as exc:
        raise daemon.unavailable(exc) from None


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
