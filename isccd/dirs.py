"""Default locations of isccd's state, socket and configuration.

The daemon and every command agree on these, so `isccd dupes` finds the store `isccd run` writes
and `isccd status` finds its socket without options. As root (a system service) the paths follow
the systemd directories; otherwise the XDG base directories of the user. :func:`system_env` is
the environment the system service finds its places in, for a user's command that asks it.

Reads only the environment given to it (the process environment by default); imports nothing of
isccd.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

APP = "isccd"


#: The directories systemd gives the system service (``systemd/isccd.service``: its
#: ``StateDirectory=``, ``RuntimeDirectory=``, ``ConfigurationDirectory=`` and ``CacheDirectory=``).
SYSTEM_DIRECTORIES = {
    "STATE_DIRECTORY": "/var/lib/isccd",
    "RUNTIME_DIRECTORY": "/run/isccd",
    "CONFIGURATION_DIRECTORY": "/etc/isccd",
    "CACHE_DIRECTORY": "/var/cache/isccd",
}


def system_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (the process environment by default) as the system service sees its places:
    every function here given it answers with the system daemon's, whoever asks."""
    env = os.environ if env is None else env
    return {**env, **SYSTEM_DIRECTORIES}


def _is_system(env: Mapping[str, str], euid: int | None) -> bool:
    return (os.geteuid() if euid is None else euid) == 0 and "XDG_RUNTIME_DIR" not in env


def default_state_dir(env: Mapping[str, str] | None = None, euid: int | None = None) -> Path:
    """Where the store lives: ``$STATE_DIRECTORY``, ``/var/lib/isccd`` or the XDG state dir."""
    env = os.environ if env is None else env
    if env.get("STATE_DIRECTORY"):  # set by systemd's StateDirectory=
        return Path(env["STATE_DIRECTORY"].split(":")[0])
    if _is_system(env, euid):
        return Path("/var/lib") / APP
    base = env.get("XDG_STATE_HOME") or str(
        Path(env.get("HOME", "~")).expanduser() / ".local/state"
    )
    return Path(base) / APP


def default_runtime_dir(env: Mapping[str, str] | None = None, euid: int | None = None) -> Path:
    """Where the socket lives: ``$RUNTIME_DIRECTORY``, ``/run/isccd`` or ``$XDG_RUNTIME_DIR/isccd``.

    Without ``XDG_RUNTIME_DIR`` (no login session) a user daemon falls back to its state dir.
    """
    env = os.environ if env is None else env
    if env.get("RUNTIME_DIRECTORY"):  # set by systemd's RuntimeDirectory=
        return Path(env["RUNTIME_DIRECTORY"].split(":")[0])
    if _is_system(env, euid):
        return Path("/run") / APP
    if env.get("XDG_RUNTIME_DIR"):
        return Path(env["XDG_RUNTIME_DIR"]) / APP
    return default_state_dir(env, euid)


def default_socket_path(env: Mapping[str, str] | None = None, euid: int | None = None) -> Path:
    """The daemon's Unix socket."""
    return default_runtime_dir(env, euid) / "isccd.sock"


def default_config_path(env: Mapping[str, str] | None = None, euid: int | None = None) -> Path:
    """The configuration file read when it exists and no ``--config`` is given."""
    env = os.environ if env is None else env
    if env.get("CONFIGURATION_DIRECTORY"):  # set by systemd's ConfigurationDirectory=
        return Path(env["CONFIGURATION_DIRECTORY"].split(":")[0]) / "isccd.toml"
    if _is_system(env, euid):
        return Path("/etc") / APP / "isccd.toml"
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".config")
    return Path(base) / APP / "isccd.toml"


def default_cache_dir(env: Mapping[str, str] | None = None, euid: int | None = None) -> Path:
    """Compiled-kernel cache and other disposable data."""
    env = os.environ if env is None else env
    if env.get("CACHE_DIRECTORY"):  # set by systemd's CacheDirectory=
        return Path(env["CACHE_DIRECTORY"].split(":")[0])
    if _is_system(env, euid):
        return Path("/var/cache") / APP
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".cache")
    return Path(base) / APP
