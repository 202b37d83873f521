"""The daemon's settings: one validated, frozen model read from TOML, the environment and flags.

Precedence, highest first: command-line flags, ``ISCCD_*`` environment variables, the TOML file,
the defaults. Nested sections are reached with a double underscore: ``ISCCD_WATCH__SETTLE=0.5``
sets ``[watch] settle``. Lists are given as JSON (``ISCCD_WATCH__IGNORE='["*.tmp"]'``); roots
may also be separated by colons (``ISCCD_WATCH__ROOTS=/srv/a:/srv/b``).

``config/isccd.toml`` documents every setting with its default; a test keeps the two equal.

A section that one component's options cover is those options (``[code]`` is
:class:`isccd.hashing.CodeOptions`, ``[match]`` is :class:`isccd.match.Thresholds`): pydantic
validates the dataclass, and its ``__post_init__`` checks the values. The other sections are the
administrator's view of several components (days, MiB, "unset" for the default place); their
defaults are the components' own, and :mod:`isccd.config` maps them. Locations left unset
(``None``) mean "the default place" (:mod:`isccd.dirs`), resolved there, so that this module
reads no environment of its own beyond what :func:`load_settings` is given.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    InitSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from isccd import dirs
from isccd.errors import ConfigError, OptionError
from isccd.hashing.options import CodeOptions
from isccd.hashing.pool import DEFAULT_WORKER_MEMORY, WorkerOptions
from isccd.match import Thresholds
from isccd.pipeline import DAY, PipelineOptions
from isccd.server.options import ServerOptions
from isccd.watch.debounce import DebounceOptions

ENV_PREFIX = "ISCCD_"
ENV_NESTED_DELIMITER = "__"


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _default(options: type[Any], name: str) -> Any:
    """The default a component's options give ``name``: each default is written once."""
    return next(f.default for f in dataclasses.fields(options) if f.name == name)


_DEBOUNCE = DebounceOptions()
_PIPELINE = PipelineOptions()
_WORKERS = WorkerOptions()


def _split_paths(value: object) -> object:
    """Accept a colon-separated string (environment) besides a list (TOML, JSON)."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
        return [part for part in text.split(os.pathsep) if part]
    return value


def _require_absolute(path: Path) -> Path:
    if not path.is_absolute():
        raise ValueError(f"{str(path)!r} is not an absolute path")
    return Path(os.path.normpath(path))


AbsolutePath = Annotated[Path, AfterValidator(_require_absolute)]


class WatchSettings(_Section):
    """``[watch]``: what is watched and how changes are settled."""

    roots: Annotated[tuple[AbsolutePath, ...], NoDecode] = ()
    """Directories to watch, absolute. ``isccd run --watch DIR`` replaces this list."""
    settle: float = Field(default=_DEBOUNCE.settle, gt=0, le=60)
    """Seconds a path must stay quiet before it is processed."""
    max_delay: float = Field(default=_DEBOUNCE.max_delay, gt=0, le=3600)
    """Seconds after a path's first change by which it is processed even if it never settles."""
    max_open_delay: float = Field(default=_DEBOUNCE.max_open_delay, gt=0, le=86400)
    """Seconds after its first write by which a file still open for writing is processed; until
    then a file written to waits for its close."""
    poll_interval: float = Field(default=10.0, gt=0, le=86400)
    """Seconds between polls of roots and subtrees that cannot be watched by inotify, and between
    checks that each root is still there and whether unreadable directories can be read."""
    force_polling: bool = False
    """Poll every root instead of using inotify."""
    reconcile_interval: float = Field(default=3600.0, ge=0)
    """Seconds between periodic safety reconciles (stat-only); 0 turns them off."""
    max_pending: int = Field(default=_DEBOUNCE.max_pending, ge=100)
    """Distinct paths allowed to wait for settling; beyond it a root is reconciled instead."""
    follow_symlinks: bool = False
    """Follow symbolic links while scanning, as long as they stay beneath their root."""
    folder_settle: float = Field(default=_PIPELINE.folder_settle, ge=0, le=3600)
    """Seconds a folder's files must stay quiet before the daemon announces that it became an
    exact duplicate of other folders (``dir.dup``) or stopped being one (``dir.resolved``); 0
    turns these events off."""
    ignore: tuple[str, ...] = (
        ".git/",
        ".hg/",
        ".svn/",
        "__pycache__/",
        ".venv/",
        "node_modules/",
        ".cache/",
        "*.swp",
        "*.swx",
        "*~",
        ".#*",
        "*.part",
        "*.crdownload",
        ".~lock.*#",
        ".isccd-dedupe-*.tmp",
    )
    """gitignore-style patterns of paths never indexed: version-control internals, virtual
    environments and package caches, editor swap files, partial downloads, and the names
    ``isccd dedupe`` holds a file under for the instant of a swap."""

    @field_validator("roots", mode="before")
    @classmethod
    def _roots_from_text(cls, value: object) -> object:
        return _split_paths(value)

    @field_validator("roots")
    @classmethod
    def _roots_are_disjoint(cls, roots: tuple[Path, ...]) -> tuple[Path, ...]:
        seen: list[Path] = []
        for root in roots:
            if not root.is_absolute():
                raise ValueError(f"{str(root)!r} is not an absolute path")
            normal = Path(os.path.normpath(root))
            for other in seen:
                if normal == other:
                    raise ValueError(f"{str(root)!r} is listed twice")
                if other in normal.parents or normal in other.parents:
                    raise ValueError(
                        f"{str(root)!r} and {str(other)!r} overlap; list only the outer"
                    )
            seen.append(normal)
        return tuple(seen)


def _host_name(value: str) -> str:
    if value != value.strip() or any(not c.isprintable() for c in value):
        raise ValueError("a host name has no control characters and no surrounding spaces")
    return value


HostName = Annotated[str, Field(min_length=1, max_length=255), AfterValidator(_host_name)]


class StoreSettings(_Section):
    """``[store]``: where the index lives and how long history is kept."""

    state_dir: AbsolutePath | None = None
    """Directory of the store. Unset: ``$STATE_DIRECTORY``, ``/var/lib/isccd`` as root, or
    ``$XDG_STATE_HOME/isccd``."""
    url: str | None = None
    """Store backend URL: ``sqlite:///path/isccd.db``, or ``postgresql://user@host/db?...``
    (a libpq URI, for a database that a fleet of hosts shares; needs ``isccd[fleet]``; the
    password from the URL, a ``passfile`` or ``PGPASSWORD``). Unset: SQLite in ``state_dir``."""
    host: HostName | None = None
    """The name this host's files are stored under in a shared database; each daemon sharing
    one needs its own. Unset: the machine's host name."""
    tombstone_days: float = Field(default=_PIPELINE.tombstone_retention / DAY, ge=0)
    """Days a removed file is remembered, so that clients can learn what vanished."""
    event_days: float = Field(default=_PIPELINE.event_retention / DAY, ge=0)
    """Days of the event log kept for subscribers resuming with ``since``."""


class HashingSettings(_Section):
    """``[hashing]``: the worker processes that compute codes."""

    workers: int = Field(default=0, ge=0, le=256)
    """Worker processes; 0 means one per available CPU."""
    max_in_flight: int = Field(default=_WORKERS.max_in_flight, ge=0, le=100_000)
    """Hand-overs to the workers at once, or waiting for one; 0 means two per worker (a
    hand-over is one file, or a scan's batch of up to 32 small files)."""
    shutdown_timeout: float = Field(default=10.0, ge=0, le=600)
    """Seconds in-flight files may finish at shutdown before they are abandoned."""
    file_timeout: float = Field(default=_WORKERS.file_timeout, gt=0)
    """Seconds one file may take before its worker is replaced and the file recorded as failed."""
    worker_memory: int = Field(default=DEFAULT_WORKER_MEMORY >> 20, ge=0, le=1 << 30)
    """MiB of memory one worker may use (heap and private mappings; the tools it runs each get
    as much); a file needing more keeps the units that fit, gets a ``too_large`` issue, and its
    worker is replaced. 0: no limit."""
    idle_timeout: float = Field(default=_WORKERS.idle_timeout, ge=0, le=86_400)
    """Seconds without a file to hash after which the workers and the process holding the
    compiled kernels are stopped (an idle daemon then keeps only its own process); the next
    file starts them again, and waits about a second for it. 0: keep them running."""


def _switched_off(values: object) -> object:
    """``"off"`` or ``false`` switch a threshold off (TOML has no null)."""
    if not isinstance(values, Mapping):
        return values
    return {
        name: None
        if value is False or (isinstance(value, str) and value.strip().lower() in {"off", "none"})
        else value
        for name, value in values.items()
    }


#: ``[match]``: which files are reported as duplicates (:class:`isccd.match.Thresholds`).
MatchSection = Annotated[Thresholds, BeforeValidator(_switched_off)]


class ServerSettings(_Section):
    """``[server]``: the Unix socket clients connect to."""

    socket: AbsolutePath | None = None
    """Socket path. Unset: ``$RUNTIME_DIRECTORY/isccd.sock``, ``/run/isccd/isccd.sock`` as root,
    or ``$XDG_RUNTIME_DIR/isccd/isccd.sock``."""
    socket_mode: int = Field(default=_default(ServerOptions, "socket_mode"), ge=0, le=0o777)
    """Permission bits of the socket (TOML octal ``0o660`` or the string ``"0660"``)."""
    socket_group: str | None = None
    """Group that owns the socket, so its members may connect. Unset: the daemon's group."""
    subscriber_queue: int = Field(
        default=_default(ServerOptions, "subscriber_queue"), ge=16, le=10_000_000
    )
    """Events buffered per subscriber before it is told it lagged and is disconnected."""
    max_clients: int = Field(default=_default(ServerOptions, "max_clients"), ge=1, le=100_000)
    """Connections served at once; more are refused with an error line and closed."""
    idle_timeout: float = Field(default=_default(ServerOptions, "idle_timeout"), ge=0, le=86_400)
    """Seconds a connection that holds no subscription may stay silent before it is closed;
    0 for never."""
    max_reply_bytes: int = Field(
        default=_default(ServerOptions, "max_reply_bytes"), ge=1 << 20, le=1 << 34
    )
    """Longest reply sent to a client; a longer one is answered ``reply_too_large``."""
    send_timeout: float = Field(default=_default(ServerOptions, "send_timeout"), ge=0, le=86_400)
    """Seconds a client may leave a reply unread before it is disconnected; 0 for never."""

    @field_validator("socket_mode", mode="before")
    @classmethod
    def _octal_text(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                return int(value, 8)
            except ValueError:
                raise ValueError(f"{value!r} is not an octal mode such as 0660") from None
        return value


class LogSettings(_Section):
    """``[log]``: what is logged and how."""

    level: Literal["debug", "info", "warning", "error"] = "info"
    """Lowest level written."""
    format: Literal["auto", "json", "console"] = "auto"
    """``auto``: readable lines on a terminal, JSON lines otherwise (journald)."""

    @field_validator("level", "format", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value


class Settings(BaseSettings):
    """Everything the daemon can be told. Frozen once loaded."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter=ENV_NESTED_DELIMITER,
        frozen=True,
        extra="forbid",
        validate_default=True,
    )

    watch: WatchSettings = WatchSettings()
    store: StoreSettings = StoreSettings()
    hashing: HashingSettings = HashingSettings()
    code: CodeOptions = CodeOptions()
    match: MatchSection = Thresholds()
    server: ServerSettings = ServerSettings()
    log: LogSettings = LogSettings()


def config_file(given: Path | None, env: Mapping[str, str] | None = None) -> Path | None:
    """The configuration file to read: the one given (:func:`load_settings` refuses it when it
    is missing), else the default one (:func:`isccd.dirs.default_config_path`) when it exists,
    else none."""
    if given is not None:
        return given
    default = dirs.default_config_path(env)
    return default if default.is_file() else None


def load_settings(
    path: Path | None = None,
    *,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Read, merge and validate the settings.

    Args:
        path: A TOML file, or ``None`` for none.
        overrides: Values from the command line, by section (``{"watch": {"roots": [...]}}``);
            they win over everything else.
        env: The environment to read ``ISCCD_*`` variables from (the process environment by
            default).

    Returns:
        The frozen settings.

    Raises:
        ConfigError: The file cannot be read or parsed, or a value is invalid. The message names
            the file, the key (and the environment variable when one set it) and the problem.
    """
    file_data: dict[str, Any] = {}
    if path is not None:
        try:
            with path.open("rb") as fh:
                file_data = tomllib.load(fh)
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    environ = dict(os.environ if env is None else env)
    sources: tuple[PydanticBaseSettingsSource, ...] = (
        InitSettingsSource(Settings, init_kwargs=_plain(overrides or {})),
        _Env(Settings, environ),
        InitSettingsSource(Settings, init_kwargs=file_data),
    )
    # Sources given explicitly (a documented BaseSettings argument): the file path and the
    # environment are arguments of this call, not class-level configuration.
    build: dict[str, Any] = {"_build_sources": (sources, {})}
    try:
        return Settings(**build)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, path, environ)) from None
    except SettingsError:
        raise ConfigError(_describe_undecodable(environ)) from None


class _Env(EnvSettingsSource):
    """The ``ISCCD_*`` variables of an explicit environment rather than the process's own."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return {k.lower(): v for k, v in self._environ.items()}


def _plain(value: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _plain(v) if isinstance(v, Mapping) else v for k, v in value.items()}


def env_name(loc: Sequence[str | int]) -> str:
    """The environment variable that sets the setting at ``loc`` (``("watch", "settle")``)."""
    return ENV_PREFIX + ENV_NESTED_DELIMITER.join(str(part) for part in loc[:2]).upper()


def setting_defaults() -> dict[tuple[str, str], Any]:
    """Every setting, as ``(section, key)``, with its default."""
    found: dict[tuple[str, str], Any] = {}
    for section, info in Settings.model_fields.items():
        default = info.default
        if dataclasses.is_dataclass(default):
            values = {f.name: getattr(default, f.name) for f in dataclasses.fields(default)}
        else:
            values = {name: getattr(default, name) for name in type(default).model_fields}
        found.update({(section, name): value for name, value in values.items()})
    return found


def _describe_undecodable(environ: Mapping[str, str]) -> str:
    list_vars = {
        env_name(key)
        for key, default in setting_defaults().items()
        if isinstance(default, tuple) and key != ("watch", "roots")
    }
    for name, value in sorted(environ.items()):
        if name.upper() in list_vars or value.strip()[:1] in "[{":
            try:
                json.loads(value)
            except ValueError as exc:
                return f"invalid configuration: {name}: not valid JSON, e.g. '[\"*.tmp\"]' ({exc})"
    return f"invalid configuration: an {ENV_PREFIX}* variable holds a value that is not JSON"


#: What pydantic says of a key no section has (a model's, a dataclass's).
_UNKNOWN = frozenset({"extra_forbidden", "unexpected_keyword_argument"})


def _describe(exc: ValidationError, path: Path | None, environ: Mapping[str, str]) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        loc = tuple(str(part) for part in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        cause = error.get("ctx", {}).get("error")
        if isinstance(cause, OptionError) and len(loc) == 1:
            # A section's own options refused a value (in __post_init__): it names the key.
            loc, message = (*loc, cause.name), cause.problem
        key = ".".join(loc[:2])
        if error["type"] in _UNKNOWN:
            problem = "unknown setting"
        else:
            problem = message
            if error["type"] != "value_error" and not isinstance(error.get("input"), Mapping):
                problem = f"{problem} (got {error.get('input')!r})"
        origin = ""
        if len(loc) >= 1 and env_name(loc) in environ:
            origin = f" (from {env_name(loc)})"
        elif path is not None:
            origin = f" (in {path})"
        problems.append(f"{key}: {problem}{origin}")
    return "invalid configuration: " + "; ".join(problems)
