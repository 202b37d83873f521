"""What the server writes: replies and events, and how a client reads them back.

Every line the server writes is one JSON object:

- a reply, ``{"id": ..., "ok": true, "result": {...}}`` or
  ``{"id": ..., "ok": false, "error": {"code": "...", "message": "..."}}``;
- an event, ``{"event": "dup.exact", "seq": 42, "time": ..., "root": "...", "path": "...",
  "host": "...", ...}`` whose further members are the event's ``data``.

JSON is written ASCII-only: a path whose name is not valid UTF-8 keeps its bytes as lone surrogate
escapes (``"\\udcff"``), which Python's :mod:`json` and :func:`os.fsencode` turn back into the same
bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from isccd.errors import ProtocolError
from isccd.model import Event, EventType

from .codes import ErrorCode
from .requests import RequestId
from .wire import wire_json

#: Members every event has (``host``: those about a host); ``data`` members of these names are
#: not sent.
EVENT_FIELDS = frozenset({"event", "seq", "time", "root", "path", "host"})

_dumps = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode


def encode_result(request_id: RequestId | None, result: object) -> bytes:
    """A success reply line; ``result``: a result's dataclass, or its JSON values
    (:func:`isccd.protocol.wire.wire_json` writes either)."""
    text = '{"id":' + wire_json(request_id) + ',"ok":true,"result":' + wire_json(result) + "}\n"
    return text.encode("ascii")


def encode_error(request_id: RequestId | None, code: str, message: str) -> bytes:
    """An error reply line; ``request_id`` is ``None`` when the request's id could not be read."""
    return _line({"id": request_id, "ok": False, "error": {"code": code, "message": message}})


def event_to_wire(event: Event) -> dict[str, Any]:
    """The JSON object of ``event``: the envelope members, then ``data``.

    The envelope wins: a ``data`` member named like one of :data:`EVENT_FIELDS` is left out
    (an event must never fail to be sent because of its payload).
    """
    obj: dict[str, Any] = {
        "event": event.type.value,
        "seq": event.seq,
        "time": event.time,
        "root": event.root,
        "path": event.path,
    }
    if event.host:
        obj["host"] = event.host
    if EVENT_FIELDS.isdisjoint(event.data):
        obj.update(event.data)
    else:
        obj.update((k, v) for k, v in event.data.items() if k not in EVENT_FIELDS)
    return obj


def encode_event(event: Event) -> bytes:
    """An event line.

    Raises:
        ValueError: ``data`` holds NaN or infinity.
        TypeError: ``data`` holds something JSON cannot represent.
    """
    return _line(event_to_wire(event))


def lagged_event(resume: int, time: float, queue_size: int) -> Event:
    """The ``subscriber.lagged`` notice: the last line a lagging subscriber receives.

    It is not part of the event log. Its ``seq`` is the resume point: every event the
    subscription matches up to it was delivered; resubscribing with ``since`` = ``seq`` misses
    nothing.
    """
    return Event(
        seq=resume,
        type=EventType.SUBSCRIBER_LAGGED,
        time=time,
        root="",
        path="",
        data={"resume": resume, "queue_size": queue_size},
    )


@dataclass(frozen=True, slots=True)
class UnknownEvent:
    """An event of a type this client does not know (a newer server may send more).

    Clients skip it, but its ``seq`` still moves their resume point.
    """

    name: str
    seq: int


@dataclass(frozen=True, slots=True)
class Reply:
    """A decoded reply.

    Attributes:
        id: The request's id (``None`` for errors about unreadable requests).
        result: The result object of a success.
        error: The error of a failure.
    """

    id: RequestId | None
    result: Mapping[str, Any] | None = None
    error: ProtocolError | None = None

    @property
    def ok(self) -> bool:
        """True for a success."""
        return self.error is None

    def unwrap(self) -> Mapping[str, Any]:
        """The result.

        Raises:
            ProtocolError: The reply is an error; its code and message.
        """
        if self.error is not None:
            raise self.error
        return self.result or {}


def decode_message(line: bytes) -> Reply | Event | UnknownEvent:
    """Decode one line written by the server.

    Args:
        line: The line, without its newline.

    Returns:
        A reply, an event, or an :class:`UnknownEvent`.

    Raises:
        ProtocolError: ``invalid_reply``: the line is neither.
    """
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(ErrorCode.INVALID_REPLY, f"server sent invalid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError(ErrorCode.INVALID_REPLY, "server sent a non-object")
    if "event" in obj:
        return event_from_wire(obj)
    return _reply_from_wire(obj)


def event_from_wire(obj: Mapping[str, Any]) -> Event | UnknownEvent:
    """The event of a JSON object (an :class:`UnknownEvent` when its type is unknown).

    Raises:
        ProtocolError: ``invalid_reply``: an envelope member is missing or of the wrong type.
    """
    name = obj.get("event")
    seq, time, root, path = (obj.get(k) for k in ("seq", "time", "root", "path"))
    if not isinstance(name, str) or isinstance(seq, bool) or not isinstance(seq, int):
        raise ProtocolError(ErrorCode.INVALID_REPLY, "event without a type name or seq")
    try:
        event_type = EventType(name)
    except ValueError:
        return UnknownEvent(name, seq)
    if (
        isinstance(time, bool)
        or not isinstance(time, int | float)
        or not isinstance(root, str)
        or not isinstance(path, str)
    ):
        raise ProtocolError(ErrorCode.INVALID_REPLY, f"malformed {event_type} event")
    host = obj.get("host", "")
    if not isinstance(host, str):
        raise ProtocolError(ErrorCode.INVALID_REPLY, f"malformed {event_type} event")
    data = {k: v for k, v in obj.items() if k not in EVENT_FIELDS}
    return Event(
        seq=seq, type=event_type, time=float(time), root=root, path=path, data=data, host=host
    )


def _reply_from_wire(obj: Mapping[str, Any]) -> Reply:
    request_id = obj.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int | None):
        raise ProtocolError(ErrorCode.INVALID_REPLY, "reply with an invalid id")
    if obj.get("ok") is True and isinstance(obj.get("result"), dict):
        return Reply(request_id, result=obj["result"])
    error = obj.get("error")
    if (
        obj.get("ok") is False
        and isinstance(error, dict)
        and isinstance(error.get("code"), str)
        and isinstance(error.get("message"), str)
    ):
        return Reply(request_id, error=ProtocolError(error["code"], error["message"]))
    raise ProtocolError(ErrorCode.INVALID_REPLY, "server sent neither a reply nor an event")


def _line(obj: Mapping[str, Any]) -> bytes:
    return (_dumps(obj) + "\n").encode("ascii")
