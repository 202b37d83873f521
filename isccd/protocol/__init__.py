"""The socket protocol of isccd: pure wire format, no I/O.

Newline-delimited JSON over a Unix stream socket; docs/protocol.md is the specification. This
package holds everything both ends agree on:

- :mod:`~isccd.protocol.framing`: splitting the byte stream into bounded lines;
- :mod:`~isccd.protocol.codes`: the version, the command names and the error codes;
- :mod:`~isccd.protocol.requests`: typed requests and their decoding and validation;
- :mod:`~isccd.protocol.messages`: replies and events, written and read back;
- :mod:`~isccd.protocol.results`: the results of the protocol's own commands (the answers of
  the index and the daemon are :mod:`isccd.results`, which this package encodes);
- :mod:`~isccd.protocol.wire`: dataclasses to JSON values and back.

Imports only :mod:`isccd.model`, :mod:`isccd.results` and :mod:`isccd.errors`.
"""

from __future__ import annotations

from .codes import PROTOCOL_VERSION, SUPPORTED_VERSIONS, Command, ErrorCode
from .framing import MAX_LINE_BYTES, LineSplitter, OversizedLine
from .messages import (
    EVENT_FIELDS,
    Reply,
    UnknownEvent,
    decode_message,
    encode_error,
    encode_event,
    encode_result,
    event_from_wire,
    event_to_wire,
    lagged_event,
)
from .requests import (
    DupesRequest,
    EventFilter,
    GetRequest,
    HelloRequest,
    Request,
    RequestError,
    RequestId,
    RescanRequest,
    SimilarRequest,
    StatusRequest,
    SubscribeRequest,
    SyncRequest,
    UnsubscribeRequest,
    decode_request,
    encode_request,
    normalize_path,
    request_to_wire,
)
from .results import HelloResult, RescanResult, SubscribeResult, SyncResult, UnsubscribeResult
from .wire import from_wire, object_to_wire, to_wire

__all__ = [
    "EVENT_FIELDS",
    "MAX_LINE_BYTES",
    "PROTOCOL_VERSION",
    "SUPPORTED_VERSIONS",
    "Command",
    "DupesRequest",
    "ErrorCode",
    "EventFilter",
    "GetRequest",
    "HelloRequest",
    "HelloResult",
    "LineSplitter",
    "OversizedLine",
    "Reply",
    "Request",
    "RequestError",
    "RequestId",
    "RescanRequest",
    "RescanResult",
    "SimilarRequest",
    "StatusRequest",
    "SubscribeRequest",
    "SubscribeResult",
    "SyncRequest",
    "SyncResult",
    "UnknownEvent",
    "UnsubscribeRequest",
    "UnsubscribeResult",
    "decode_message",
    "decode_request",
    "encode_error",
    "encode_event",
    "encode_request",
    "encode_result",
    "event_from_wire",
    "event_to_wire",
    "from_wire",
    "lagged_event",
    "normalize_path",
    "object_to_wire",
    "request_to_wire",
    "to_wire",
]
