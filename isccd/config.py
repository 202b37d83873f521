"""The configuration: the settings mapped to the options of every component, checked against the
machine. The daemon (:func:`build_config`) and the index commands (:func:`load_index_config`)
both take their options from here, so that a command given the daemon's configuration decides
as the daemon does.

What the settings leave to defaults is resolved here (state directory, store, socket, worker
count), and what only the machine can tell is checked (are the roots directories, do they
overlap once symbolic links are resolved), so that a configuration is either accepted whole or
refused with one clear :class:`~isccd.errors.ConfigError`: at start (exit 78) and on reload (the
old configuration stays). A root that does not exist is accepted: its disk may be unplugged,
and the daemon watches it once it appears (reported unavailable meanwhile), rather than leave
every other root unwatched.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

# logconf before the components that log: structlog is imported as it sets it up, without
# rich (about 30 ms of every command's start; see isccd.logconf).
from isccd import dirs, logconf
from isccd.errors import ConfigError
from isccd.fspath import is_below, is_under
from isccd.hashing import CodeOptions, Versions, current_versions
from isccd.hashing.pool import WorkerOptions
from isccd.pipeline import DAY, PipelineOptions
from isccd.server.options import ServerOptions
from isccd.settings import Settings, config_file, load_settings
from isccd.store import default_host, state_url
from isccd.store.pgurl import redact_url
from isccd.walk import ScanOptions, compile_ignore
from isccd.watch.debounce import DebounceOptions

if TYPE_CHECKING:
    # Imported where the daemon's configuration is built: the watcher (and watchdog) would
    # cost every index command about 10 ms of its start.
    from isccd.watch.watcher import WatcherOptions


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
    log_format: logconf.Format
    shutdown_timeout: float


def build_config(settings: Settings, env: Mapping[str, str] | None = None) -> DaemonConfig:
    """The daemon's configuration: the settings as component options, the roots checked on
    this machine.

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
    state = state_dir(settings, env)
    code = settings.code
    if code.tool_timeout > settings.hashing.file_timeout:
        raise ConfigError(
            f"invalid configuration: code.tool_timeout: {code.tool_timeout:g} s is longer "
            f"than hashing.file_timeout ({settings.hashing.file_timeout:g} s), which stops the "
            "file first; raise hashing.file_timeout too"
        )
    from isccd.watch.watcher import WatcherOptions  # noqa: PLC0415 -- the daemon's only

    workers = worker_options(settings)
    server = settings.server
    return DaemonConfig(
        roots=roots,
        store_url=store_url(settings, env),
        store_host=store_host(settings),
        state_dir=state,
        server=ServerOptions(
            socket_path=socket_path(settings, env),
            socket_mode=server.socket_mode,
            socket_group=server.socket_group,
            subscriber_queue=server.subscriber_queue,
            max_clients=server.max_clients,
            idle_timeout=server.idle_timeout,
            max_reply_bytes=server.max_reply_bytes,
            send_timeout=server.send_timeout,
        ),
        pipeline=pipeline_options(
            settings,
            versions=current_versions(code),
            hash_concurrency=max(32, workers.workers * 16),
        ),
        workers=workers,
        scan=scan_options(settings, roots, env, state=state),
        watcher=WatcherOptions(
            force_polling=watch.force_polling, follow_symlinks=watch.follow_symlinks
        ),
        debounce=DebounceOptions(
            watch.settle, watch.max_delay, watch.max_pending, watch.max_open_delay
        ),
        schedule=ScheduleOptions(watch.reconcile_interval, watch.poll_interval),
        log_level=settings.log.level,
        log_format=settings.log.format,
        shutdown_timeout=settings.hashing.shutdown_timeout,
    )


@dataclass(frozen=True, slots=True)
class IndexConfig:
    """What the index commands (``scan``, ``dupes``, ``similar``, ``get``) take from the
    configuration.

    Attributes:
        settings: The loaded settings.
        env: The environment default places were looked up in.
        state_dir: ``--state``, else the configured or default state directory.
        store_url: The store in ``--state``, else the configured URL or the state directory's.
        store_host: The host name the store is opened for.
        socket: ``--socket``, else the configured or default socket of the daemon.
    """

    settings: Settings
    env: Mapping[str, str]
    state_dir: Path
    store_url: str = field(repr=False)  # it may hold a password
    store_host: str
    socket: Path

    @property
    def code(self) -> CodeOptions:
        """How files are coded."""
        return self.settings.code

    @property
    def store_name(self) -> str:
        """The store for people: a SQLite store's file, or a database's URL without its
        password."""
        scheme, _, rest = self.store_url.partition("://")
        if scheme == "sqlite":
            return urllib.parse.unquote(rest, errors="surrogateescape")
        return redact_url(self.store_url)

    def reading(self) -> PipelineOptions:
        """The pipeline's options for reading the store: the duplicate policy."""
        return pipeline_options(self.settings)

    def scanning(self, jobs: int) -> PipelineOptions:
        """The pipeline's options for a scan hashing ``jobs`` files at once: the policy, the
        retention, and the current profile versions (outdated units are computed again)."""
        # As many in flight as the daemon has: enough records finish while the store applies
        # the last ones that it takes them in batches.
        concurrency = max(32, jobs * 16)
        # The tools are asked their versions only if a stored unit's profile names one: a scan
        # of files that need none (texts, images, data) starts no tool for it.
        versions = current_versions(self.code, lazy=True)
        return pipeline_options(self.settings, versions=versions, hash_concurrency=concurrency)

    def scan_options(self, roots: Sequence[str], ignore: Sequence[str] = ()) -> ScanOptions:
        """How ``roots`` are walked: the configured patterns, then ``ignore``.

        Raises:
            ConfigError: A configured pattern is invalid, or a root is one of isccd's own
                directories.
        """
        scan = scan_options(self.settings, roots, self.env, state=self.state_dir)
        return replace(scan, ignore=scan.ignore + tuple(ignore))

    def hashing(self, jobs: int) -> WorkerOptions:
        """The hashing workers of a scan hashing ``jobs`` files at once, with the daemon's
        file time limit."""
        return worker_options(self.settings, workers=jobs)

    @property
    def workers(self) -> int:
        """Files hashed at once: ``[hashing] workers``, or one per CPU."""
        return worker_options(self.settings).workers


def load_index_config(
    config: Path | None,
    *,
    state: Path | None = None,
    socket: Path | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    env: Mapping[str, str] | None = None,
) -> IndexConfig:
    """Load the settings once, the daemon's way, and resolve what the index commands need.

    The settings come from ``--config FILE`` (default: the daemon's default file, when it
    exists), ``ISCCD_*`` environment variables and the command's flags; ``--state DIR`` and
    ``--socket PATH`` win over the configured places.

    Args:
        config: ``--config FILE``, or ``None`` for the default file if it exists.
        state: ``--state DIR``.
        socket: ``--socket PATH``.
        overrides: Values of other flags, by section (``{"code": {"bits": 128}}``).
        env: The environment (the process environment by default).

    Raises:
        ConfigError: The file cannot be read, or a setting is invalid.
    """
    env = os.environ if env is None else env
    settings = load_settings(config_file(config, env), overrides=overrides, env=env)
    directory = state.absolute() if state is not None else state_dir(settings, env)
    return IndexConfig(
        settings=settings,
        env=env,
        state_dir=directory,
        store_url=state_url(directory) if state is not None else store_url(settings, env),
        store_host=store_host(settings),
        socket=socket if socket is not None else socket_path(settings, env),
    )


def pipeline_options(
    settings: Settings, *, versions: Mapping[str, str] | None = None, hash_concurrency: int = 8
) -> PipelineOptions:
    """The pipeline's options: the duplicate policy, the retention of tombstones and events,
    and how units are combined.

    Args:
        settings: The loaded settings.
        versions: The current profile versions (:func:`isccd.hashing.current_versions`), for a
            pipeline that recomputes outdated units; none for one that only reads.
        hash_concurrency: Files hashed at once by a reconcile.
    """
    return PipelineOptions(
        thresholds=settings.match,
        tombstone_retention=settings.store.tombstone_days * DAY,
        event_retention=settings.store.event_days * DAY,
        # A Versions is kept as it is (copying it would ask the tools it has not asked yet).
        versions=versions if isinstance(versions, Versions) else dict(versions or {}),
        wide=settings.code.wide,
        hash_concurrency=hash_concurrency,
        follow_symlinks=settings.watch.follow_symlinks,
        folder_settle=settings.watch.folder_settle,
    )


def worker_options(settings: Settings, workers: int | None = None) -> WorkerOptions:
    """The hashing workers the ``[hashing]`` settings ask for: ``workers`` processes (by
    default the configured number, or one per CPU this process may run on)."""
    hashing = settings.hashing
    return WorkerOptions(
        workers=workers or hashing.workers or _cpu_count(),
        max_in_flight=hashing.max_in_flight,
        file_timeout=hashing.file_timeout,
        memory=hashing.worker_memory << 20,
        idle_timeout=hashing.idle_timeout,
        code=settings.code,
        follow_symlinks=settings.watch.follow_symlinks,
    )


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def state_dir(settings: Settings, env: Mapping[str, str]) -> Path:
    """The state directory: configured, or the default one (:mod:`isccd.dirs`)."""
    return settings.store.state_dir or dirs.default_state_dir(env)


def store_url(settings: Settings, env: Mapping[str, str]) -> str:
    """Where the store lives: the configured URL, or SQLite in the state directory."""
    return settings.store.url or state_url(state_dir(settings, env))


def store_host(settings: Settings) -> str:
    """The host name the store is opened for: the configured one, or the machine's."""
    return settings.store.host or default_host()


def socket_path(settings: Settings, env: Mapping[str, str]) -> Path:
    """The daemon's socket: configured, or the default one."""
    return settings.server.socket or dirs.default_socket_path(env)


def scan_options(
    settings: Settings, roots: Sequence[str], env: Mapping[str, str], *, state: Path
) -> ScanOptions:
    """How roots are walked: the ``[watch]`` ignore patterns and symbolic-link rule, plus
    patterns that keep isccd's own directories inside a root out of the index.

    Args:
        settings: The loaded settings.
        roots: The roots to walk (absolute, symbolic links resolved).
        env: Where default locations are looked up.
        state: The state directory the store is in.

    Raises:
        ConfigError: An invalid ignore pattern, or a root that is one of isccd's own
            directories.
    """
    watch = settings.watch
    try:
        compile_ignore(watch.ignore)
    except ValueError as exc:
        raise ConfigError(f"invalid configuration: watch.ignore: {exc}") from None
    numba = (Path(env["NUMBA_CACHE_DIR"]),) if env.get("NUMBA_CACHE_DIR") else ()
    own = (state, socket_path(settings, env).parent, dirs.default_cache_dir(env), *numba)
    return ScanOptions(
        follow_symlinks=watch.follow_symlinks, ignore=watch.ignore + _own_dirs(roots, own)
    )


def _own_dirs(roots: Sequence[str], own: Sequence[Path]) -> tuple[str, ...]:
    """Ignore patterns for isccd's own directories inside a root: the store changes with every
    commit, and indexing it would feed on itself.

    Raises:
        ConfigError: A root is one of isccd's own directories.
    """
    patterns: list[str] = []
    for directory in own:
        real = os.path.realpath(directory)
        for root in roots:
            if real == root:
                raise ConfigError(
                    f"invalid configuration: watch.roots: {root!r} holds isccd's own files "
                    f"({real}); watch the folders with your files instead"
                )
            if is_below(real, root):
                patterns.append("/" + os.path.relpath(real, root) + "/")
    return tuple(dict.fromkeys(patterns))


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
