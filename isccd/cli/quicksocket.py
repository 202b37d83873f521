"""The daemon's socket as the configuration names it, read without loading the settings.

Loading the settings validates every section with pydantic, about 100 ms at each start of a
command; a command that the daemon answers (``dupes``, ``similar``, ``get``) needs one value of
them. :func:`configured_socket` reads that value the way :func:`isccd.config.load_index_config`
resolves it (``ISCCD_SERVER__SOCKET``, else ``[server] socket`` of the configuration file, else
the default socket), and gives up on anything unusual (a file it cannot read or parse, a value
that is not an absolute path, the ``[server]`` section set as JSON in the environment): the
caller then loads the settings, which say what is wrong. A test keeps the two in agreement.

Imports nothing heavier than :mod:`tomllib`, and that only when a file is read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from isccd.dirs import default_config_path, default_socket_path

#: The environment variable of ``[server] socket`` (:func:`isccd.settings.env_name`).
SOCKET_VARIABLE = "ISCCD_SERVER__SOCKET"
#: Variables of the ``[server]`` section start with this; pydantic reads them ignoring case.
_SECTION_PREFIX = "ISCCD_SERVER"


def configured_socket(config: Path | None, env: Mapping[str, str] | None = None) -> Path | None:
    """The socket the daemon of this configuration listens on, or ``None`` when only loading
    the settings can tell.

    Args:
        config: ``--config FILE``, or ``None`` for the default file when it exists.
        env: The environment (the process environment by default).
    """
    env = os.environ if env is None else env
    section = {k.upper(): v for k, v in env.items() if k.upper().startswith(_SECTION_PREFIX)}
    if section:
        return _absolute(section[SOCKET_VARIABLE]) if set(section) == {SOCKET_VARIABLE} else None
    if config is None:
        default = default_config_path(env)
        if not default.is_file():
            return default_socket_path(env)
        config = default
    server = _server_section(config)
    if server is None:
        return None
    return _absolute(server["socket"]) if "socket" in server else default_socket_path(env)


def _server_section(config: Path) -> dict[str, object] | None:
    import tomllib  # noqa: PLC0415 -- only when a file names the socket

    try:
        with config.open("rb") as fh:
            server = tomllib.load(fh).get("server", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return server if isinstance(server, dict) else None


def _absolute(value: object) -> Path | None:
    if not isinstance(value, str) or not Path(value).is_absolute():
        return None
    return Path(os.path.normpath(value))
