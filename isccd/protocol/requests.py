"""Requests: their typed form, and decoding and validating a request line.

Pure: no I/O. The server resolves and checks paths against the watched roots; here a path is only
checked to be absolute, free of NUL and not longer than ``PATH_MAX``.

Every string a request carries is text a reply, a log line and a file name can hold: a lone
surrogate (``\\ud800``, which JSON escapes can smuggle into a valid UTF-8 line) is refused with
``invalid_argument`` (``invalid_request`` in the ``id``), except that a path may carry the bytes
of a name that is not UTF-8 as ``\\udc80``..``\\udcff`` (see the protocol's framing).

Every request is an object with ``"id"`` (a string or an integer, echoed by the reply) and
``"cmd"``; the other members are the command's arguments. Unknown arguments are rejected rather
than ignored, so a client relying on an argument this server does not know learns it from an
error instead of silently getting a different answer (``hello`` tells what the server knows).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from isccd.errors import ProtocolError
from isccd.model import Event, EventType, UnitType
from isccd.results import (
    DUPES_LIMIT,
    DUPES_LIMIT_MAX,
    FILE_TYPES,
    MAX_DISTANCE,
    SIMILAR_LIMIT,
    SIMILAR_LIMIT_MAX,
    DupesQuery,
    SimilarQuery,
    WatchedQuery,
)
from isccd.results.queries import DIRS_SHARE, DirsQuery

from .codes import Command, ErrorCode

RequestId = str | int

#: Longest path accepted, in bytes (Linux PATH_MAX).
MAX_PATH_BYTES = 4096
#: Longest string id accepted.
MAX_ID_CHARS = 256
#: Longest store identity accepted (a UUID has 36 characters).
MAX_STORE_ID_CHARS = 64
#: Longest host name accepted (as ``[store] host``).
MAX_HOST_CHARS = 255
#: Longest watchlist name accepted.
MAX_WATCHLIST_CHARS = 1024
#: Most items in a list argument (event types, roots).
MAX_LIST_ITEMS = 256


class RequestError(ProtocolError):
    """A request that cannot be decoded or validated.

    Attributes:
        request_id: The request's id when it could be read, else ``None`` (the error reply then
            carries ``"id": null``).
    """

    def __init__(self, code: str, message: str, request_id: RequestId | None = None) -> None:
        super().__init__(code, message)
        self.request_id = request_id


@dataclass(frozen=True, slots=True)
class EventFilter:
    """Which events a subscription receives.

    Attributes:
        types: Only these types; ``None`` for all.
        roots: Only events of these roots (normalized absolute paths), plus daemon-wide events
            (those with an empty root); ``None`` for all.
        host: Only events about this host (in a log a fleet shares), plus notices about no
            host; ``None`` for every host's. Set by the server, not by a request.
    """

    types: frozenset[EventType] | None = None
    roots: frozenset[str] | None = None
    host: str | None = None

    def matches(self, event: Event) -> bool:
        """True when the subscription receives ``event``."""
        if self.types is not None and event.type not in self.types:
            return False
        if self.host is not None and event.host and event.host != self.host:
            return False
        return self.roots is None or not event.root or event.root in self.roots


@dataclass(frozen=True, slots=True)
class HelloRequest:
    """``hello``: optionally state the protocol version the client speaks, and its name."""

    id: RequestId
    protocol: int | None = None
    client: str | None = None


@dataclass(frozen=True, slots=True)
class StatusRequest:
    """``status``."""

    id: RequestId


@dataclass(frozen=True, slots=True)
class SubscribeRequest:
    """``subscribe``: events after ``since`` (``None``: from now on) that pass ``filter``;
    ``store``: the identity of the store ``since`` comes from, refused when it is not the
    daemon's (``store_mismatch``); ``fleet``: the events of every host of a fleet sharing the
    store, not only the daemon's own host's."""

    id: RequestId
    since: int | None = None
    filter: EventFilter = EventFilter()
    store: str | None = None
    fleet: bool = False


@dataclass(frozen=True, slots=True)
class UnsubscribeRequest:
    """``unsubscribe``."""

    id: RequestId


@dataclass(frozen=True, slots=True)
class GetRequest:
    """``get``: one path; ``host``: only its duplicates on that host."""

    id: RequestId
    path: str
    host: str | None = None


@dataclass(frozen=True, slots=True)
class SimilarRequest:
    """``similar``."""

    id: RequestId
    query: SimilarQuery


@dataclass(frozen=True, slots=True)
class DupesRequest:
    """``dupes``."""

    id: RequestId
    query: DupesQuery = DupesQuery()  # noqa: RUF009 (a frozen dataclass)


@dataclass(frozen=True, slots=True)
class DirsRequest:
    """``dirs``: duplicate folders."""

    id: RequestId
    query: DirsQuery = DirsQuery()  # noqa: RUF009 (a frozen dataclass)


@dataclass(frozen=True, slots=True)
class WatchedRequest:
    """``watched``."""

    id: RequestId
    query: WatchedQuery


@dataclass(frozen=True, slots=True)
class RescanRequest:
    """``rescan``: a root or a directory inside one; ``None`` for every root."""

    id: RequestId
    path: str | None = None


@dataclass(frozen=True, slots=True)
class SyncRequest:
    """``sync``: a barrier over a root or a directory inside one; ``None`` for every root."""

    id: RequestId
    path: str | None = None


Request = (
    HelloRequest
    | StatusRequest
    | SubscribeRequest
    | UnsubscribeRequest
    | GetRequest
    | SimilarRequest
    | DupesRequest
    | DirsRequest
    | WatchedRequest
    | RescanRequest
    | SyncRequest
)


def decode_request(line: bytes) -> Request:
    """Decode and validate one request line.

    Args:
        line: The line, without its newline.

    Returns:
        The typed request.

    Raises:
        RequestError: With the :class:`~isccd.protocol.ErrorCode` saying what is wrong, and the
            request's id when it could be read.
    """
    obj = _parse(line)
    request_id = obj.get("id")
    if (
        isinstance(request_id, bool)
        or not isinstance(request_id, str | int)
        or (
            isinstance(request_id, str)
            and (len(request_id) > MAX_ID_CHARS or not _text(request_id))
        )
    ):
        raise RequestError(
            ErrorCode.INVALID_REQUEST,
            f'"id" must be a string of at most {MAX_ID_CHARS} characters or an integer',
        )
    cmd = obj.get("cmd")
    if not isinstance(cmd, str):
        raise RequestError(ErrorCode.INVALID_REQUEST, '"cmd" must be a string', request_id)
    try:
        command = Command(cmd)
    except ValueError:
        known = ", ".join(c.value for c in Command)
        raise RequestError(
            ErrorCode.UNKNOWN_COMMAND, f"unknown command {cmd[:64]!r}; known: {known}", request_id
        ) from None
    args = _Args(command, request_id, obj)
    request = _BUILDERS[command](request_id, args)
    args.done()
    return request


def encode_request(request: Request) -> bytes:
    """The wire form of ``request``: one JSON object and a newline (the inverse of decoding)."""
    return (json.dumps(request_to_wire(request), ensure_ascii=True) + "\n").encode("ascii")


def request_to_wire(request: Request) -> dict[str, Any]:
    """The JSON object of ``request``; arguments at their default are left out."""
    obj: dict[str, Any]
    match request:
        case HelloRequest(protocol=protocol, client=client):
            obj = {"cmd": Command.HELLO, "protocol": protocol, "client": client}
        case StatusRequest():
            obj = {"cmd": Command.STATUS}
        case SubscribeRequest(since=since, filter=flt, store=store, fleet=fleet):
            obj = {
                "cmd": Command.SUBSCRIBE,
                "since": since,
                "types": None if flt.types is None else sorted(flt.types),
                "roots": None if flt.roots is None else sorted(flt.roots),
                "store": store,
                "fleet": fleet or None,
            }
        case UnsubscribeRequest():
            obj = {"cmd": Command.UNSUBSCRIBE}
        case GetRequest(path=path, host=host):
            obj = {"cmd": Command.GET, "path": path, "host": host}
        case SimilarRequest(query=q):
            obj = {"cmd": Command.SIMILAR, "path": q.path, "code": q.code}
            obj["max_distance"] = q.max_distance
            obj["limit"] = None if q.limit == SIMILAR_LIMIT else q.limit
            obj["host"] = q.host
            obj["units"] = None if q.units is None else [u.value for u in q.units]
        case DupesRequest(query=q):
            obj = {"cmd": Command.DUPES, "near": q.near or None, "root": q.root}
            obj["limit"] = None if q.limit == DUPES_LIMIT else q.limit
            obj["host"] = q.host
            obj["units"] = None if q.units is None else [u.value for u in q.units]
            obj["max_distance"] = q.max_distance
            obj["min_size"] = q.min_size or None
            obj["types"] = None if q.types is None else list(q.types)
        case DirsRequest(query=d):
            obj = {"cmd": Command.DIRS, "near": d.near or None}
            obj["share"] = None if d.share == DIRS_SHARE else d.share
            obj["root"] = d.root
            obj["limit"] = None if d.limit == DUPES_LIMIT else d.limit
            obj["host"] = d.host
            obj["files"] = d.files or None
        case WatchedRequest(query=q):
            obj = {"cmd": Command.WATCHED, "watchlist": q.watchlist}
            obj["near"] = None if q.near else False
            obj["root"] = q.root
            obj["limit"] = None if q.limit == DUPES_LIMIT else q.limit
            obj["host"] = q.host
            obj["units"] = None if q.units is None else [u.value for u in q.units]
            obj["min_size"] = q.min_size or None
            obj["types"] = None if q.types is None else list(q.types)
        case RescanRequest(path=path):
            obj = {"cmd": Command.RESCAN, "path": path}
        case SyncRequest(path=path):
            obj = {"cmd": Command.SYNC, "path": path}
    return {"id": request.id, **{k: v for k, v in obj.items() if v is not None}}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse(line: bytes) -> dict[str, Any]:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError(ErrorCode.INVALID_UTF8, f"not UTF-8 (byte {exc.start})") from None
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise RequestError(ErrorCode.INVALID_JSON, "JSON nested too deeply") from None
    except ValueError as exc:
        raise RequestError(ErrorCode.INVALID_JSON, f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise RequestError(
            ErrorCode.NOT_AN_OBJECT, f"a request is a JSON object, not {type(obj).__name__}"
        )
    return obj


class _Args:
    """Takes a command's arguments out of the request object, validating each."""

    def __init__(self, command: Command, request_id: RequestId, obj: Mapping[str, Any]) -> None:
        self._command = command
        self._id = request_id
        self._rest = {k: v for k, v in obj.items() if k not in ("id", "cmd")}

    def error(self, message: str) -> RequestError:
        return RequestError(ErrorCode.INVALID_ARGUMENT, f"{self._command}: {message}", self._id)

    def integer(self, key: str, *, minimum: int, maximum: int | None = None) -> int | None:
        value = self._rest.pop(key, None)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f'"{key}" must be an integer')
        if value < minimum or (maximum is not None and value > maximum):
            bound = f"{minimum}..{maximum}" if maximum is not None else f">= {minimum}"
            raise self.error(f'"{key}" must be {bound}, not {value}')
        return value

    def fraction(self, key: str, *, default: float) -> float:
        """A number above 0 and at most 1."""
        value = self._rest.pop(key, None)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(f'"{key}" must be a number')
        if not 0 < value <= 1:
            raise self.error(f'"{key}" must be above 0 and at most 1, not {value}')
        return float(value)

    def limit(self, key: str, *, default: int, maximum: int) -> int:
        value = self.integer(key, minimum=1, maximum=maximum)
        return default if value is None else value

    def boolean(self, key: str) -> bool:
        return self.boolean_or(key, default=False)

    def boolean_or(self, key: str, *, default: bool) -> bool:
        value = self._rest.pop(key, None)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(f'"{key}" must be true or false')
        return value

    def string(self, key: str, *, max_chars: int = MAX_ID_CHARS) -> str | None:
        value = self._rest.pop(key, None)
        if value is None:
            return None
        if not isinstance(value, str) or not value or len(value) > max_chars:
            raise self.error(f'"{key}" must be a non-empty string of at most {max_chars} chars')
        if not _text(value):
            raise self.error(f'"{key}" holds a lone surrogate (not text)')
        return value

    def path(self, key: str) -> str | None:
        return _check_path(self, key, self._rest.pop(key, None))

    def strings(self, key: str) -> list[str] | None:
        value = self._rest.pop(key, None)
        if value is None:
            return None
        if (
            not isinstance(value, list)
            or not value
            or len(value) > MAX_LIST_ITEMS
            or not all(isinstance(v, str) for v in value)
        ):
            raise self.error(f'"{key}" must be a list of 1 to {MAX_LIST_ITEMS} strings')
        if not all(_text(v, surrogateescape=key == "roots") for v in value):
            raise self.error(f'"{key}" holds a lone surrogate (not text)')
        return value

    def done(self) -> None:
        if self._rest:
            names = ", ".join(sorted(k[:64] for k in self._rest))
            raise self.error(f"unknown argument(s): {names}")


def _check_path(args: _Args, key: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise args.error(f'"{key}" must be a non-empty string')
    if "\0" in value:
        raise args.error(f'"{key}" contains a NUL character')
    if not value.startswith("/"):
        raise args.error(f'"{key}" must be an absolute path')
    if not _text(value, surrogateescape=True):
        raise args.error(
            f'"{key}" holds a lone surrogate that stands for no byte of a file name '
            "(only \\udc80..\\udcff do)"
        )
    if len(value.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
        raise args.error(f'"{key}" is longer than {MAX_PATH_BYTES} bytes')
    return value


def _text(value: str, *, surrogateescape: bool = False) -> bool:
    """Whether ``value`` encodes as UTF-8: no lone surrogates, or (``surrogateescape``) only
    those that stand for the bytes of a file name that is not UTF-8."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8", "surrogateescape" if surrogateescape else "strict")
    except UnicodeEncodeError:
        return False
    return True


def normalize_path(path: str) -> str:
    """Lexically normalize an absolute path: no ``.``, ``..``, repeated or trailing slashes.

    Symbolic links are not resolved (that needs the file system); ``..`` is applied textually.
    """
    return "/" + posixpath.normpath(path).lstrip("/")


def _required_path(args: _Args, key: str) -> str:
    path = args.path(key)
    if path is None:
        raise args.error(f'"{key}" is required')
    return path


def _hello(request_id: RequestId, args: _Args) -> HelloRequest:
    return HelloRequest(
        request_id, protocol=args.integer("protocol", minimum=1), client=args.string("client")
    )


def _subscribe(request_id: RequestId, args: _Args) -> SubscribeRequest:
    since = args.integer("since", minimum=0)
    type_names = args.strings("types")
    types: frozenset[EventType] | None = None
    if type_names is not None:
        try:
            types = frozenset(EventType(name) for name in type_names)
        except ValueError:
            known = ", ".join(t.value for t in EventType)
            raise args.error(f'"types" names an unknown event type; known: {known}') from None
    root_names = args.strings("roots")
    roots: frozenset[str] | None = None
    if root_names is not None:
        roots = frozenset(normalize_path(_check_path(args, "roots", r) or "") for r in root_names)
    store = args.string("store", max_chars=MAX_STORE_ID_CHARS)
    fleet = args.boolean("fleet")
    return SubscribeRequest(request_id, since, EventFilter(types, roots), store, fleet)


def _units(args: _Args) -> tuple[UnitType, ...] | None:
    names = args.strings("units")
    if names is None:
        return None
    try:
        return tuple(dict.fromkeys(UnitType(name) for name in names))
    except ValueError:
        known = ", ".join(t.value for t in UnitType)
        raise args.error(f'"units" names an unknown unit type; known: {known}') from None


def _similar(request_id: RequestId, args: _Args) -> SimilarRequest:
    path = args.path("path")
    code = args.string("code", max_chars=1024)
    if (path is None) == (code is None):
        raise args.error('give exactly one of "path" and "code"')
    max_distance = args.integer("max_distance", minimum=0, maximum=MAX_DISTANCE)
    limit = args.limit("limit", default=SIMILAR_LIMIT, maximum=SIMILAR_LIMIT_MAX)
    host = args.string("host", max_chars=MAX_HOST_CHARS)
    units = _units(args)
    return SimilarRequest(request_id, SimilarQuery(path, code, max_distance, limit, host, units))


def _dupes(request_id: RequestId, args: _Args) -> DupesRequest:
    near = args.boolean("near")
    root = args.path("root")
    limit = args.limit("limit", default=DUPES_LIMIT, maximum=DUPES_LIMIT_MAX)
    host = args.string("host", max_chars=MAX_HOST_CHARS)
    units = _units(args)
    max_distance = args.integer("max_distance", minimum=0, maximum=MAX_DISTANCE)
    min_size = args.integer("min_size", minimum=0) or 0
    query = DupesQuery(near, root, limit, host, units, max_distance, min_size, _types(args))
    return DupesRequest(request_id, query)


def _types(args: _Args) -> tuple[str, ...] | None:
    types = args.strings("types")
    if types is not None and not set(types) <= set(FILE_TYPES):
        raise args.error(f'"types" names an unknown file type; known: {", ".join(FILE_TYPES)}')
    return None if types is None else tuple(dict.fromkeys(types))


def _dirs(request_id: RequestId, args: _Args) -> DirsRequest:
    near = args.boolean("near")
    share = args.fraction("share", default=DIRS_SHARE)
    root = args.path("root")
    limit = args.limit("limit", default=DUPES_LIMIT, maximum=DUPES_LIMIT_MAX)
    host = args.string("host", max_chars=MAX_HOST_CHARS)
    files = args.boolean("files")
    return DirsRequest(request_id, DirsQuery(near, share, root, limit, host, files))


def _watched(request_id: RequestId, args: _Args) -> WatchedRequest:
    watchlist = args.string("watchlist", max_chars=MAX_WATCHLIST_CHARS)
    if watchlist is None:
        raise args.error('"watchlist" is required')
    near = args.boolean_or("near", default=True)
    root = args.path("root")
    limit = args.limit("limit", default=DUPES_LIMIT, maximum=DUPES_LIMIT_MAX)
    host = args.string("host", max_chars=MAX_HOST_CHARS)
    units = _units(args)
    min_size = args.integer("min_size", minimum=0) or 0
    query = WatchedQuery(watchlist, near, root, limit, host, units, min_size, _types(args))
    return WatchedRequest(request_id, query)


def _get(request_id: RequestId, args: _Args) -> GetRequest:
    path = _required_path(args, "path")
    return GetRequest(request_id, path, args.string("host", max_chars=MAX_HOST_CHARS))


_BUILDERS: dict[Command, Callable[[RequestId, _Args], Request]] = {
    Command.HELLO: _hello,
    Command.STATUS: lambda request_id, _args: StatusRequest(request_id),
    Command.SUBSCRIBE: _subscribe,
    Command.UNSUBSCRIBE: lambda request_id, _args: UnsubscribeRequest(request_id),
    Command.GET: _get,
    Command.SIMILAR: _similar,
    Command.DUPES: _dupes,
    Command.DIRS: _dirs,
    Command.WATCHED: _watched,
    Command.RESCAN: lambda request_id, args: RescanRequest(request_id, args.path("path")),
    Command.SYNC: lambda request_id, args: SyncRequest(request_id, args.path("path")),
}
