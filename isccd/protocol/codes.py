"""The protocol's version, its command names and its error codes."""

from __future__ import annotations

import enum

#: The protocol's major version. It changes only when a change is incompatible (see
#: docs/protocol.md, "Versioning"); compatible additions keep it. Version 2: one shape per
#: thing in every reply and event (docs/protocol.md, "Changes").
PROTOCOL_VERSION = 2

#: The versions this implementation speaks.
SUPPORTED_VERSIONS: frozenset[int] = frozenset({PROTOCOL_VERSION})


class Command(enum.StrEnum):
    """The requests a client may send. The value is the wire name (``"cmd"``)."""

    HELLO = "hello"
    """Protocol version, server version, commands and events known."""
    STATUS = "status"
    """Roots, watch modes, queue depth, files indexed, scan progress, last seq."""
    SUBSCRIBE = "subscribe"
    """Replay the event log after ``since``, then stream live events."""
    UNSUBSCRIBE = "unsubscribe"
    """Stop the subscription of this connection."""
    GET = "get"
    """What the index knows about one path."""
    SIMILAR = "similar"
    """Indexed files within a Hamming distance of a file's or a code's units."""
    DUPES = "dupes"
    """Duplicate groups, the most reclaimable bytes first."""
    DIRS = "dirs"
    """Duplicate folders, exact then near."""
    WATCHED = "watched"
    """The indexed files that match a watchlist's references, a group per reference."""
    RESCAN = "rescan"
    """Start a reconcile scan of one root, a directory inside one, or every root."""
    SYNC = "sync"
    """A barrier: answers once every change made on disk before it was received is indexed."""


class ErrorCode(enum.StrEnum):
    """Why a request failed. The value is the wire code; clients treat unknown codes as failures."""

    LINE_TOO_LONG = "line_too_long"
    """The request line exceeded the limit; it was discarded up to its newline."""
    INVALID_UTF8 = "invalid_utf8"
    """The line is not UTF-8."""
    INVALID_JSON = "invalid_json"
    """The line is not one JSON document (or nests too deeply, or uses NaN/Infinity)."""
    NOT_AN_OBJECT = "not_an_object"
    """The JSON document is not an object."""
    INVALID_REQUEST = "invalid_request"
    """The object has no valid ``id`` or no ``cmd``."""
    UNKNOWN_COMMAND = "unknown_command"
    """``cmd`` names no command this server knows (``hello`` lists them)."""
    INVALID_ARGUMENT = "invalid_argument"
    """An argument is missing, unknown, of the wrong type or out of range."""
    UNSUPPORTED_VERSION = "unsupported_version"
    """``hello`` asked for a protocol version this server does not speak."""
    OUTSIDE_ROOTS = "outside_roots"
    """The path is not inside a watched root (after resolving symbolic links)."""
    NOT_FOUND = "not_found"
    """The path is inside a root but not in the index."""
    UNKNOWN_SEQ = "unknown_seq"
    """``since`` is ahead of the event log: the log was reset; start over without ``since``."""
    STORE_MISMATCH = "store_mismatch"
    """``subscribe`` named another store than the daemon's: its ``since`` is from another
    event log; start over without ``since`` and ``store``."""
    ALREADY_SUBSCRIBED = "already_subscribed"
    """The connection already has a subscription."""
    TOO_MANY_CLIENTS = "too_many_clients"
    """The server serves its maximum number of connections; this one is closed."""
    IDLE_TIMEOUT = "idle_timeout"
    """The connection sent no request for the server's idle time and holds no subscription;
    it is closed."""
    SHUTTING_DOWN = "shutting_down"
    """The daemon is stopping (a question still being answered is given up)."""
    REPLY_TOO_LARGE = "reply_too_large"
    """The reply would be longer than the server sends to one connection; ask for less (a
    lower ``limit``, a narrower ``root``)."""
    UNAVAILABLE = "unavailable"
    """The index cannot answer now (e.g. the store is failing); retry later."""
    INTERNAL_ERROR = "internal_error"
    """A bug in the daemon; it is logged, and the connection carries on."""
    INVALID_REPLY = "invalid_reply"
    """Client side only: the server sent something that is not a valid reply or event."""
