"""The daemon's settings: one validated, frozen model read from TOML, the environment and flags.

Precedence, highest first: command-line flags, ``ISCCD_*`` environment variables, the TOML file,
the defaults. Nested sections are reached with a double underscore: ``ISCCD_WATCH__SETTLE=0.5``
sets ``[watch] settle``. Lists are given as JSON (``ISCCD_WATCH__IGNORE='["*.tmp"]'``); roots
may also be separated by colons (``ISCCD_WATCH__ROOTS=/srv/a:/srv/b``).

``config/isccd.toml`` documents every setting with its default; a test keeps the two equal.

The model describes what the administrator asked for. Locations left unset (``None``) mean "the
default place" (:mod:`isccd.dirs`) and are resolved by the daemon, so that this module reads no
environment of its own beyond what :func:`load_settings` is given. Components never see this
model: the daemon turns each section into the option dataclass the component defines.
"""

from __future__ import annotations

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
    ValidationInfo,
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
from isccd.errors import ConfigError
from isccd.model import UNIT_BITS

ENV_PREFIX = "ISCCD_"
ENV_NESTED_DELIMITER = "__"


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


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
    settle: float = Field(default=0.25, gt=0, le=60)
    """Seconds a path must stay quiet before it is processed."""
    max_delay: float = Field(default=5.0, gt=0, le=3600)
    """Seconds after a path's first change by which it is processed even if it never settles."""
    poll_interval: float = Field(default=10.0, gt=0, le=86400)
    """Seconds between polls of roots and subtrees that cannot be watched by inotify, and between
    checks that each root is still there and whether unreadable directories can be read."""
    force_polling: bool = False
    """Poll every root instead of using inotify."""
    reconcile_interval: float = Field(default=3600.0, ge=0)
    """Seconds between periodic safety reconciles (stat-only); 0 turns them off."""
    max_pending: int = Field(default=100_000, ge=100)
    """Distinct paths allowed to wait for settling; beyond it a root is reconciled instead."""
    follow_symlinks: bool = False
    """Follow symbolic links while scanning, as long as they stay beneath their root."""
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
    tombstone_days: float = Field(default=30.0, ge=0)
    """Days a removed file is remembered, so that clients can learn what vanished."""
    event_days: float = Field(default=30.0, ge=0)
    """Days of the event log kept for subscribers resuming with ``since``."""


class HashingSettings(_Section):
    """``[hashing]``: the worker processes that compute codes."""

    workers: int = Field(default=0, ge=0, le=256)
    """Worker processes; 0 means one per available CPU."""
    max_in_flight: int = Field(default=0, ge=0, le=100_000)
    """Files handed to the workers at once, or waiting for one; 0 means two per worker."""
    shutdown_timeout: float = Field(default=10.0, ge=0, le=600)
    """Seconds in-flight files may finish at shutdown before they are abandoned."""
    file_timeout: float = Field(default=1800.0, gt=0)
    """Seconds one file may take before its worker is replaced and the file recorded as failed."""
    worker_memory: int = Field(default=2048, ge=0, le=1 << 30)
    """MiB of memory one worker may use (heap and private mappings; the tools it runs each get
    as much); a file needing more keeps the units that fit, gets a ``too_large`` issue, and its
    worker is replaced. 0: no limit."""


def _tool(value: str) -> str:
    if "/" in value and not value.startswith("/"):
        raise ValueError(f"{value!r} is neither a program name nor an absolute path")
    return value


Tool = Annotated[str, Field(min_length=1), AfterValidator(_tool)]


class CodeSettings(_Section):
    """``[code]``: how files are coded; the defaults are the ISCC SDK 0.9.7's (and
    :class:`isccd.hashing.CodeOptions`', which a test keeps equal)."""

    bits: int = 64
    """Length of every unit, a multiple of 32 from 64 to 256. Changing it recomputes every
    stored unit."""
    wide: bool = False
    """Compose a WIDE ISCC-CODE (128-bit Data- and Instance-Code) for files that have neither
    Meta- nor Content-Code; needs ``bits`` of 128 or more."""
    meta: bool = True
    """Compute the Meta-Code."""
    extract_meta: bool = True
    """Take the Meta-Code's name and description from embedded metadata, else the file name."""
    max_image_pixels: int = Field(default=128_000_000, ge=1, le=178_956_970)
    """Images with more pixels are refused before they are decoded (decompression bombs). At
    most 178,956,970: Pillow refuses larger images itself (twice its ``MAX_IMAGE_PIXELS``)."""
    max_text_chars: int = Field(default=10_000_000, ge=1)
    """Characters of text extracted at most."""
    video_fps: int = Field(default=5, ge=1, le=60)
    """Frames per second the video signature samples (more than a video's own rate adds
    nothing). Changing it recomputes every Video-Code."""
    tool_timeout: float = Field(default=600.0, gt=0)
    """Seconds one run of fpcalc, ffmpeg or ffprobe may take before it is killed."""
    fpcalc: Tool = "fpcalc"
    """Chromaprint's ``fpcalc``: a name looked up on ``PATH``, or an absolute path."""
    ffmpeg: Tool = "ffmpeg"
    """``ffmpeg``: a name looked up on ``PATH``, or an absolute path."""
    ffprobe: Tool = "ffprobe"
    """``ffprobe``: a name looked up on ``PATH``, or an absolute path."""

    @field_validator("bits")
    @classmethod
    def _legal_bits(cls, bits: int) -> int:
        if bits not in UNIT_BITS:
            legal = ", ".join(map(str, UNIT_BITS))
            raise ValueError(f"{bits} is not a unit length; use one of {legal}")
        return bits

    @field_validator("wide")
    @classmethod
    def _wide_needs_128_bits(cls, wide: bool, info: ValidationInfo) -> bool:
        bits = info.data.get("bits")
        if wide and bits is not None and bits < 128:
            raise ValueError(f"a WIDE ISCC-CODE needs bits of 128 or more (bits is {bits})")
        return wide


def _off(value: object) -> object:
    """``"off"`` or ``false`` switch a threshold off (TOML has no null)."""
    if value is False or (isinstance(value, str) and value.strip().lower() in {"off", "none"}):
        return None
    return value


Threshold = Annotated[Annotated[int, Field(ge=0, le=64)] | None, BeforeValidator(_off)]


class MatchSettings(_Section):
    """``[match]``: which files are reported as duplicates: near-duplicate thresholds in
    Hamming bits over 64-bit units (``"off"`` switches a unit type off), and the smallest file
    reported at all."""

    data: Threshold = 8
    """Data-Code (raw bytes): isccd's own measurement of edited files."""
    text: Threshold = 15
    """Content-Code Text (published F1-optimal threshold)."""
    image: Threshold = 12
    """Content-Code Image (published F1-optimal threshold)."""
    audio: Threshold = 4
    """Content-Code Audio (published F1-optimal threshold)."""
    video: Threshold = 12
    """Content-Code Video (follows the Image-Code, whose frame features it aggregates)."""
    meta: Threshold = None
    """Meta-Code (names and descriptions): off, file names alone make too many false alarms."""
    min_size: int = Field(default=1, ge=0)
    """Files smaller than this many bytes are never reported as exact or near duplicates
    (they are still coded and indexed). 1 leaves out empty files, every one of which has the
    same bytes as every other; 0 reports them too."""


class ServerSettings(_Section):
    """``[server]``: the Unix socket clients connect to."""

    socket: AbsolutePath | None = None
    """Socket path. Unset: ``$RUNTIME_DIRECTORY/isccd.sock``, ``/run/isccd/isccd.sock`` as root,
    or ``$XDG_RUNTIME_DIR/isccd/isccd.sock``."""
    socket_mode: int = Field(default=0o660, ge=0, le=0o777)
    """Permission bits of the socket (TOML octal ``0o660`` or the string ``"0660"``)."""
    socket_group: str | None = None
    """Group that owns the socket, so its members may connect. Unset: the daemon's group."""
    subscriber_queue: int = Field(default=10_000, ge=16, le=10_000_000)
    """Events buffered per subscriber before it is told it lagged and is disconnected."""
    max_clients: int = Field(default=256, ge=1, le=100_000)
    """Connections served at once; more are refused with an error line and closed."""
    idle_timeout: float = Field(default=60.0, ge=0, le=86_400)
    """Seconds a connection that holds no subscription may stay silent before it is closed;
    0 for never."""

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
    code: CodeSettings = CodeSettings()
    match: MatchSettings = MatchSettings()
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


def _describe_undecodable(environ: Mapping[str, str]) -> str:
    list_vars = {
        env_name((section, name))
        for section, section_field in Settings.model_fields.items()
        for name, field in type(section_field.default).model_fields.items()
        if isinstance(field.default, tuple) and name != "roots"
    }
    for name, value in sorted(environ.items()):
        if name.upper() in list_vars or value.strip()[:1] in "[{":
            try:
                json.loads(value)
            except ValueError as exc:
                return f"invalid configuration: {name}: not valid JSON, e.g. '[\"*.tmp\"]' ({exc})"
    return f"invalid configuration: an {ENV_PREFIX}* variable holds a value that is not JSON"


def _describe(exc: ValidationError, path: Path | None, environ: Mapping[str, str]) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        loc = tuple(str(part) for part in error["loc"])
        key = ".".join(loc[:2])
        if error["type"] == "extra_forbidden":
            problem = "unknown setting"
        else:
            problem = str(error["msg"]).removeprefix("Value error, ")
            if error["type"] != "value_error" and not isinstance(error.get("input"), Mapping):
                problem = f"{problem} (got {error.get('input')!r})"
        origin = ""
        if len(loc) >= 1 and env_name(loc) in environ:
            origin = f" (from {env_name(loc)})"
        elif path is not None:
            origin = f" (in {path})"
        problems.append(f"{key}: {problem}{origin}")
    return "invalid configuration: " + "; ".join(problems)
