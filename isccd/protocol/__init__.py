"""The socket protocol of isccd: pure wire format, no I/O.

Newline-delimited JSON over a Unix stream socket; docs/protocol.md is the specification. This
package holds everything both ends agree on:

- :mod:`~isccd.protocol.framing`: splitting the byte stream into bounded lines;
- :mod:`~isccd.protocol.codes`: the version, the command names and the error codes;
- :mod:`~isccd.protocol.requests`: typed requests and their decoding and validation;
- :mod:`~isccd.protocol.messages`: replies and events, written and read back;
- :mod:`~isccd.protocol.results`: the typed results of the commands;
- :mod:`~isccd.protocol.wire`: dataclasses to JSON values and back.

Imports only :mod:`isccd.model` and :mod:`isccd.errors`.
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
    DupesQuery,
    DupesRequest,
    EventFilter,
    GetRequest,
    HelloRequest,
    Request,
    RequestError,
    RequestId,
    RescanRequest,
    SimilarQuery,
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
from .results import (
    DaemonStatus,
    DatabaseStatus,
    DupesResult,
    DupGroup,
    DupKind,
    DupMember,
    DupPair,
    FileInfo,
    FleetHost,
    HelloResult,
    Relation,
    RescanResult,
    RootStatus,
    ScanProgress,
    ServiceStatistics,
    SimilarMatch,
    SimilarResult,
    SubscribeResult,
    SyncResult,
    UnitInfo,
    UnsubscribeResult,
)
from .wire import from_wire, object_to_wire, to_wire

__all__ = [
    "EVENT_FIELDS",
    "MAX_LINE_BYTES",
    "PROTOCOL_VERSION",
    "SUPPORTED_VERSIONS",
    "Command",
    "DaemonStatus",
    "DatabaseStatus",
    "DupGroup",
    "DupKind",
    "DupMember",
    "DupPair",
    "DupesQuery",
    "DupesRequest",
    "DupesResult",
    "ErrorCode",
    "EventFilter",
    "FileInfo",
    "FleetHost",
    "GetRequest",
    "HelloRequest",
    "HelloResult",
    "LineSplitter",
    "OversizedLine",
    "Relation",
    "Reply",
    "Request",
    "RequestError",
    "RequestId",
    "RescanRequest",
    "RescanResult",
    "RootStatus",
    "ScanProgress",
    "ServiceStatistics",
    "SimilarMatch",
    "SimilarQuery",
    "SimilarRequest",
    "SimilarResult",
    "StatusRequest",
    "SubscribeRequest",
    "SubscribeResult",
    "SyncRequest",
    "SyncResult",
    "UnitInfo",
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
