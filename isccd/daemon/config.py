"""From the settings to the option objects of every component, checked against the machine.

:func:`build_config`, with the functions it shares with the one-shot commands
(:mod:`isccd.daemon.options`), is the only code that knows both the settings model and the
components' option dataclasses. It resolves what the settings leave to defaults (state
directory, socket, worker count) and checks what only the machine can tell (are the roots
directories, do they overlap once symbolic links are resolved), so that a configuration is
either accepted whole or refused with one clear :class:`~isccd.errors.ConfigError`: at start
(exit 78) and on reload (the old configuration stays). A root that does not exist is accepted:
its disk may be unplugged, and the daemon watches it once it appears (it is reported
unavailable meanwhile), rather than leave every other root unwatched.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from isccd.daemon import options
from isccd.errors import ConfigError
from isccd.fspath import is_under
from isccd.hashing import current_versions
from isccd.hashing.pool import WorkerOptions
from isccd.logconf import Format
from isccd.pipeline.options import PipelineOptions
from isccd.server import ServerOptions
from isccd.settings import Settings
from isccd.walk import ScanOptions
from isccd.watch.watcher import WatcherOptions


@dataclass(frozen=True, slots=True)
class DebounceOptions:
    """How watch events are settled (see :class:`isccd.watch.debounce.Debouncer`)."""

    settle: float
    max_delay: float
    max_pending: int


@dataclass(frozen=True, slots=True)
class ScheduleOptions:
    """When roots are reconciled without being asked.

    Attributes:
        reconcile_interval: Seconds between safety reconciles of every root (0: never).
        poll_interval: Seconds between polls of what inotify cannot watch.
    """

    reconcile_interval: float
    poll_interval: float


@dataclass(frozen=True, slots=True)
class DaemonConfig:
    """Everything the daemon builds its components from; frozen, compared on reload.

    Attributes:
        roots: The watched roots: absolute, symbolic links resolved (as far as they exist),
            directories or missing.
        store_url: Where the store lives.
        store_host: The host name the store is opened for.
        state_dir: The state directory (created at start when missing).
        server: The socket server's options.
        pipeline: Thresholds, retention, retries.
        workers: The hashing workers.
        scan: How roots are walked (symlinks, ignore patterns).
        watcher: How roots are watched.
        debounce: How events are settled.
        schedule: Periodic reconciles and polls.
        log_level: Lowest level logged.
        log_format: ``auto``, ``json`` or ``console``.
        shutdown_timeout: Seconds in-flight hashing may finish at shutdown.
    """

    roots: tuple[str, ...]
    store_url: str = field(repr=False)  # it may hold a password
    store_host: str
    state_dir: Path
    server: ServerOptions
    pipeline: PipelineOptions
    workers: WorkerOptions
    scan: ScanOptions
    watcher: WatcherOptions
    debounce: DebounceOptions
    schedule: ScheduleOptions
    log_level: str
    log_format: Format
    shutdown_timeout: float


def build_config(settings: Settings, env: Mapping[str, str] | None = None) -> DaemonConfig:
    """Turn validated settings into component options, checking the roots on this machine.

    The current version of every profile component (tools looked up on ``PATH``) is asked
    here, so that a reload notices a tool installed or upgraded meanwhile.

    Args:
        settings: The loaded settings.
        env: Where default locations are looked up (the process environment by default).

    Raises:
        ConfigError: No root, or a root that is not a directory, unreadable, or overlapping
            another once symbolic links are resolved; an invalid ignore pattern; a tool timeout
            longer than the file timeout. A missing root is not an error.
    """
    env = os.environ if env is None else env
    roots = _check_roots(settings.watch.roots)
    watch = settings.watch
    state_dir = options.state_dir(settings, env)
    scan = options.scan_options(settings, roots, env, state=state_dir)
    code = options.code_options(settings.code)
    if code.tools.timeout > settings.hashing.file_timeout:
        raise ConfigError(
            f"invalid configuration: code.tool_timeout: {code.tools.timeout:g} s is longer "
            f"than hashing.file_timeout ({settings.hashing.file_timeout:g} s), which stops the "
            "file first; raise hashing.file_timeout too"
        )
    workers = options.worker_options(settings, code)
    return DaemonConfig(
        roots=roots,
        store_url=options.store_url(settings, env),
        store_host=options.store_host(settings),
        state_dir=state_dir,
        server=ServerOptions(
            socket_path=options.socket_path(settings, env),
            socket_mode=settings.server.socket_mode,
            socket_group=settings.server.socket_group,
            subscriber_queue=settings.server.subscriber_queue,
            max_clients=settings.server.max_clients,
            idle_timeout=settings.server.idle_timeout,
        ),
        pipeline=options.pipeline_options(
            settings,
            code,
            versions=current_versions(code),
            hash_concurrency=max(32, workers.workers * 16),
        ),
        workers=workers,
        scan=scan,
        watcher=WatcherOptions(
            force_polling=watch.force_polling, follow_symlinks=watch.follow_symlinks
        ),
        debounce=DebounceOptions(watch.settle, watch.max_delay, watch.max_pending),
        schedule=ScheduleOptions(watch.reconcile_interval, watch.poll_interval),
        log_level=settings.log.level,
        log_format=settings.log.format,
        shutdown_timeout=settings.hashing.shutdown_timeout,
    )


def _check_roots(configured: tuple[Path, ...]) -> tuple[str, ...]:
    if not configured:
        raise ConfigError(
            "invalid configuration: watch.roots: no directory to watch "
            "(give --watch DIR, or set roots in the [watch] section)"
        )
    resolved: list[tuple[str, Path]] = []
    for root in configured:
        real = os.path.realpath(root)
        try:
            os.scandir(real).close()
        except FileNotFoundError:
            pass  # unavailable until it appears (an unplugged disk): watched then
        except NotADirectoryError:
            raise ConfigError(
                f"invalid configuration: watch.roots: {str(root)!r} is not a directory"
            ) from None
        except OSError as exc:
            raise ConfigError(
                f"invalid configuration: watch.roots: {str(root)!r} cannot be read: "
                f"{exc.strerror or exc}"
            ) from None
        for other_real, other in resolved:
            if _overlap(real, other_real):
                raise ConfigError(
                    f"invalid configuration: watch.roots: {str(root)!r} and {str(other)!r} "
                    f"overlap once symbolic links are resolved ({real}, {other_real})"
                )
        resolved.append((real, root))
    return tuple(real for real, _ in resolved)


def _overlap(a: str, b: str) -> bool:
    return is_under(a, b) or is_under(b, a)
