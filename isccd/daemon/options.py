"""From the settings to the options of the components the daemon shares with the one-shot
commands: how files are coded, which files are duplicates, how the pipeline keeps history, how
roots are walked, and where the store lives.

:func:`isccd.daemon.config.build_config` composes the daemon from these functions, and
``isccd scan``, ``dupes``, ``similar`` and ``get`` (:mod:`isccd.cli.configured`) call the same
ones, so that a command given the daemon's configuration decides as the daemon does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from isccd import dirs
from isccd.errors import ConfigError
from isccd.extract.tools import ToolOptions
from isccd.fspath import is_below
from isccd.hashing import CodeOptions
from isccd.hashing.pool import WorkerOptions
from isccd.match import Thresholds
from isccd.pipeline.options import DAY, PipelineOptions
from isccd.settings import CodeSettings, MatchSettings, Settings
from isccd.store import default_host, state_url
from isccd.walk import ScanOptions, compile_ignore


def code_options(code: CodeSettings) -> CodeOptions:
    """The hashing options the ``[code]`` settings ask for (the rest keep their defaults)."""
    return CodeOptions(
        bits=code.bits,
        wide=code.wide,
        meta=code.meta,
        extract_meta=code.extract_meta,
        max_image_pixels=code.max_image_pixels,
        max_text_chars=code.max_text_chars,
        video_fps=code.video_fps,
        tools=ToolOptions(
            fpcalc=code.fpcalc,
            ffmpeg=code.ffmpeg,
            ffprobe=code.ffprobe,
            timeout=code.tool_timeout,
        ),
    )


def thresholds(match: MatchSettings) -> Thresholds:
    """The duplicate policy of the ``[match]`` settings."""
    return Thresholds(
        text=match.text,
        image=match.image,
        audio=match.audio,
        video=match.video,
        data=match.data,
        meta=match.meta,
        min_size=match.min_size,
    )


def pipeline_options(
    settings: Settings,
    code: CodeOptions,
    *,
    versions: Mapping[str, str] | None = None,
    hash_concurrency: int = 8,
) -> PipelineOptions:
    """The pipeline's options: the duplicate policy, the retention of tombstones and events,
    and how units are combined.

    Args:
        settings: The loaded settings.
        code: How files are coded (:func:`code_options`).
        versions: The current profile versions (:func:`isccd.hashing.current_versions`), for a
            pipeline that recomputes outdated units; none for one that only reads.
        hash_concurrency: Files hashed at once by a reconcile.
    """
    return PipelineOptions(
        thresholds=thresholds(settings.match),
        tombstone_retention=settings.store.tombstone_days * DAY,
        event_retention=settings.store.event_days * DAY,
        versions=dict(versions or {}),
        wide=code.wide,
        hash_concurrency=hash_concurrency,
        follow_symlinks=settings.watch.follow_symlinks,
    )


def worker_options(
    settings: Settings, code: CodeOptions, workers: int | None = None
) -> WorkerOptions:
    """The hashing workers the ``[hashing]`` settings ask for: ``workers`` processes (by
    default the configured number, or one per CPU this process may run on)."""
    hashing = settings.hashing
    return WorkerOptions(
        workers=workers or hashing.workers or _cpu_count(),
        max_in_flight=hashing.max_in_flight,
        file_timeout=hashing.file_timeout,
        memory=hashing.worker_memory << 20,
        code=code,
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
    cache = Path(env["NUMBA_CACHE_DIR"]) if env.get("NUMBA_CACHE_DIR") else None
    own = (state, socket_path(settings, env).parent, cache or dirs.default_cache_dir(env))
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
