"""``isccd run``: the daemon in the foreground, and the exit statuses it ends with."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import structlog

from isccd.config import build_config
from isccd.daemon.app import Daemon
from isccd.daemon.supervisor import LoopFailedError
from isccd.errors import (
    ConfigError,
    SocketSetupError,
    StoreError,
    StoreNotWritableError,
    StoreUnavailableError,
)
from isccd.hashing.pool import WorkersUnavailableError
from isccd.logconf import configure_logging
from isccd.settings import config_file, load_settings

__all__ = ["EXIT_CANTCREAT", "EXIT_CONFIG", "EXIT_SOFTWARE", "EXIT_STORE", "main"]

EXIT_OK = 0
EXIT_FAILURE = 1
#: A background loop failed for good (EX_SOFTWARE, a bug; the traceback is in the log): the
#: systemd unit restarts the daemon, which resumes from its store.
EXIT_SOFTWARE = 70
#: The store cannot be opened (corrupt, unreadable, disk full), or its database was deleted
#: while the daemon ran (EX_IOERR): an administrator must act, so the systemd unit does not
#: restart on it (``RestartPreventExitStatus=``).
EXIT_STORE = 74
#: The state directory cannot be created or written (EX_CANTCREAT: a read-only file system,
#: its permissions): an administrator must act, as for 74.
EXIT_CANTCREAT = 73
#: Invalid configuration (EX_CONFIG).
EXIT_CONFIG = 78


def main(
    config: Path | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    on_ready: Callable[[], None] | None = None,
) -> int:
    """Run the daemon in the foreground until SIGTERM or SIGINT.

    Args:
        config: A TOML file; ``None`` reads the default one if it exists
            (:func:`isccd.dirs.default_config_path`).
        overrides: Values from the command line, by section.
        env: The environment (the process environment by default).
        on_ready: Called once, when the daemon first serves (see
            :class:`~isccd.daemon.app.Daemon`).

    Returns:
        The exit status: 0 after an orderly stop, 78 for an invalid configuration, 73 when the
        state directory cannot be created or written, 74 when the
        store cannot be opened or was deleted while running, 70 when a background loop failed
        for good, 1 when its database server cannot be reached, the socket cannot be created or
        no hashing worker can start.
    """
    path = config_file(config, env)
    try:
        settings = load_settings(path, overrides=overrides, env=env)
        configure_logging(settings.log.level, settings.log.format, env=env)
        daemon = Daemon(
            build_config(settings, env),
            config_path=path,
            overrides=overrides,
            env=env,
            on_ready=on_ready,
        )
    except ConfigError as exc:
        print(f"isccd: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    failure: tuple[str, int, Exception] | None = None
    try:
        asyncio.run(daemon.run())
    except StoreUnavailableError as exc:
        # The database server is down or out of reach: a restart may well succeed.
        failure = ("store_unavailable", EXIT_FAILURE, exc)
    except StoreNotWritableError as exc:
        failure = ("state_not_writable", EXIT_CANTCREAT, exc)
    except StoreError as exc:
        failure = ("store_unavailable", EXIT_STORE, exc)
    except SocketSetupError as exc:
        failure = ("socket_unavailable", EXIT_FAILURE, exc)
    except WorkersUnavailableError as exc:
        failure = ("workers_unavailable", EXIT_FAILURE, exc)
    except LoopFailedError as exc:  # its traceback was logged when it failed
        failure = ("loop_failed", EXIT_SOFTWARE, exc)
    if failure is None:
        return EXIT_OK
    # Expected failures with a message that says it all: no traceback.
    event, status, error = failure
    structlog.get_logger().error(event, error=str(error))
    return status
