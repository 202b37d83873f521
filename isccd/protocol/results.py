"""The results of the commands that belong to the protocol itself, as typed frozen data.

The answers of the index and the daemon (``get``, ``similar``, ``dupes``, ``errors``,
``status``) are :mod:`isccd.results`, defined below the pipeline; these are the protocol's own:
``hello``, ``subscribe``, ``unsubscribe``, ``rescan`` and ``sync``. The server writes either
with :func:`~isccd.protocol.wire.wire_json` (the JSON of what
:func:`~isccd.protocol.wire.to_wire` makes of it); clients read them back with
:func:`~isccd.protocol.wire.from_wire`. Their JSON form is documented in docs/protocol.md.
Adding a member with a default is a compatible change; removing or retyping one is not.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class HelloResult:
    """``hello``: what the server speaks.

    Attributes:
        protocol: The protocol version in use.
        server: Name and version of the server, e.g. ``"isccd 0.1.0"``.
        commands: The commands it accepts.
        events: The event types it may send.
        max_line_bytes: Longest request line accepted.
        subscriber_queue: Events buffered per subscriber before it is told it lagged.
        store: The identity of the store whose event log is served (``None`` from a server
            that does not tell).
    """

    protocol: int
    server: str
    commands: tuple[str, ...]
    events: tuple[str, ...]
    max_line_bytes: int
    subscriber_queue: int
    store: str | None = None


@dataclass(frozen=True, slots=True)
class SubscribeResult:
    """``subscribe``.

    Attributes:
        since: Events after this seq follow (the request's ``since``, or ``head`` without it).
        head: The last seq in the log when the subscription started.
        first: The oldest seq the log still holds (``head + 1`` when it is empty).
        complete: False when events after ``since`` were already pruned from the log: the
            replay has a hole and the client should resynchronize (e.g. with ``dupes``).
        store: The identity of the store the sequence numbers belong to: keep it with the
            resume point and give it back with ``since`` (``None`` from a server that does not
            tell).
    """

    since: int
    head: int
    first: int
    complete: bool
    store: str | None = None


@dataclass(frozen=True, slots=True)
class UnsubscribeResult:
    """``unsubscribe``.

    Attributes:
        subscribed: Whether there was a subscription.
        seq: Resume point: every matching event up to it was delivered.
    """

    subscribed: bool
    seq: int | None = None


@dataclass(frozen=True, slots=True)
class RescanResult:
    """``rescan``: the roots whose scan was started (progress follows as ``scan.*`` events)."""

    roots: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SyncResult:
    """``sync``: every change made on disk before the request is in the log at or before ``seq``."""

    seq: int
