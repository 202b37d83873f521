"""The socket protocol of isccd: pure wire format, no I/O.

Newline-delimited JSON over a Unix stream socket; docs/protocol.md is the specification. This
package holds everything both ends agree on:

- :mod:`~isccd.protocol.framing`: splitting the byte stream into bounded lines;
- :mod:`~isccd.protocol.codes`: the version, the command names and the error codes;
- :mod:`~isccd.protocol.requests`: typed requests and their decoding and validation;
- :mod:`~isccd.protocol.messages`: replies and events, written and read back;
- :mod:`~isccd.protocol.results`: the results of the protocol's own commands (the answers of
  the index and the daemon are :mod:`isccd.results`, which this package encodes);
- :mod:`~isccd.protocol.wire`: dataclasses to JSON values and text, and back.

Imports only :mod:`isccd.model`, :mod:`isccd.results` and :mod:`isccd.errors`.

The submodules are imported on first use of one of their names (PEP 562): a command that only
names an error code loads neither the requests nor the messages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from isccd.submodules import on_first_use

if TYPE_CHECKING:
    from isccd.protocol.codes import PROTOCOL_VERSION, SUPPORTED_VERSIONS, Command, ErrorCode
    from isccd.protocol.framing import MAX_LINE_BYTES, LineSplitter, OversizedLine
    from isccd.protocol.messages import (
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
    from isccd.protocol.requests import (
        DirsRequest,
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
        WatchedRequest,
        decode_request,
        encode_request,
        normalize_path,
        request_to_wire,
    )
    from isccd.protocol.results import (
        HelloResult,
        RescanResult,
        SubscribeResult,
        SyncResult,
        UnsubscribeResult,
    )
    from isccd.protocol.wire import from_wire, object_to_wire, to_wire, wire_json

#: Where each public name lives. Submodules are imported on first use of one of their names
#: (PEP 562). A test keeps this map, the imports above and ``__all__`` equal.
_SUBMODULES: dict[str, tuple[str, ...]] = {
    "codes": ("PROTOCOL_VERSION", "SUPPORTED_VERSIONS", "Command", "ErrorCode"),
    "framing": ("MAX_LINE_BYTES", "LineSplitter", "OversizedLine"),
    "messages": (
        "EVENT_FIELDS",
        "Reply",
        "UnknownEvent",
        "decode_message",
        "encode_error",
        "encode_event",
        "encode_result",
        "event_from_wire",
        "event_to_wire",
        "lagged_event",
    ),
    "requests": (
        "DirsRequest",
        "DupesRequest",
        "EventFilter",
        "GetRequest",
        "HelloRequest",
        "Request",
        "RequestError",
        "RequestId",
        "RescanRequest",
        "SimilarRequest",
        "StatusRequest",
        "SubscribeRequest",
        "SyncRequest",
        "UnsubscribeRequest",
        "WatchedRequest",
        "decode_request",
        "encode_request",
        "normalize_path",
        "request_to_wire",
    ),
    "results": (
        "HelloResult",
        "RescanResult",
        "SubscribeResult",
        "SyncResult",
        "UnsubscribeResult",
    ),
    "wire": ("from_wire", "object_to_wire", "to_wire", "wire_json"),
}
__getattr__, __dir__ = on_first_use(__name__, _SUBMODULES, globals())

__all__ = [
    "EVENT_FIELDS",
    "MAX_LINE_BYTES",
    "PROTOCOL_VERSION",
    "SUPPORTED_VERSIONS",
    "Command",
    "DirsRequest",
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
    "WatchedRequest",
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
    "wire_json",
]
