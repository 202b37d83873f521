"""The configuration of the index commands (``scan``, ``dupes``, ``similar``, ``get``): the
daemon's own, read the daemon's way and turned into options by the daemon's own mapping
(:mod:`isccd.daemon.options`), so that a command decides as the daemon does.

The settings come from ``--config FILE`` (default: the daemon's default file, when it exists),
``ISCCD_*`` environment variables and the command's flags, loaded once by
:func:`isccd.settings.load_settings`. ``--state DIR`` and ``--socket PATH`` win over the
configured places.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from isccd.daemon import options
from isccd.hashing import CodeOptions, current_versions
from isccd.hashing.pool import WorkerOptions
from isccd.pipeline import PipelineOptions
from isccd.settings import Settings, config_file, load_settings
from isccd.store import state_url
from isccd.walk import ScanOptions


@dataclass(frozen=True, slots=True)
class IndexConfig:
    """What the index commands take from the configuration.

    Attributes:
        settings: The loaded settings.
        env: The environment default places were looked up in.
        state_dir: ``--state``, else the configured or default state directory.
        store_url: The store in ``--state``, else the configured URL or the state directory's.
        store_host: The host name the store is opened for.
        socket: ``--socket``, else the configured or default socket of the daemon.
        code: How files are coded.
    """

    settings: Settings
    env: Mapping[str, str]
    state_dir: Path
    store_url: str = field(repr=False)  # it may hold a password
    store_host: str
    socket: Path
    code: CodeOptions

    def reading(self) -> PipelineOptions:
        """The pipeline's options for reading the store: the duplicate policy."""
        return options.pipeline_options(self.settings, self.code)

    def scanning(self, jobs: int) -> PipelineOptions:
        """The pipeline's options for a scan hashing ``jobs`` files at once: the policy, the
        retention, and the current profile versions (outdated units are computed again)."""
        return options.pipeline_options(
            self.settings,
            self.code,
            versions=current_versions(self.code),
            hash_concurrency=2 * jobs + 2,
        )

    def scan_options(self, roots: Sequence[str], ignore: Sequence[str] = ()) -> ScanOptions:
        """How ``roots`` are walked: the configured patterns, then ``ignore``.

        Raises:
            ConfigError: A configured pattern is invalid, or a root is one of isccd's own
                directories.
        """
        scan = options.scan_options(self.settings, roots, self.env, state=self.state_dir)
        return replace(scan, ignore=scan.ignore + tuple(ignore))

    def hashing(self, jobs: int) -> WorkerOptions:
        """The hashing workers of a scan hashing ``jobs`` files at once, with the daemon's
        file time limit."""
        return options.worker_options(self.settings, self.code, workers=jobs)

    @property
    def workers(self) -> int:
        """Files hashed at once: ``[hashing] workers``, or one per CPU."""
        return options.worker_options(self.settings, self.code).workers


def load_index_config(
    config: Path | None,
    *,
    state: Path | None = None,
    socket: Path | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    env: Mapping[str, str] | None = None,
) -> IndexConfig:
    """Load the settings once and resolve what the index commands need.

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
    state_dir = state.absolute() if state is not None else options.state_dir(settings, env)
    return IndexConfig(
        settings=settings,
        env=env,
        state_dir=state_dir,
        store_url=state_url(state_dir) if state is not None else options.store_url(settings, env),
        store_host=options.store_host(settings),
        socket=socket if socket is not None else options.socket_path(settings, env),
        code=options.code_options(settings.code),
    )
