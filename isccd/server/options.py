"""The socket server's options, parsed once by the daemon and passed down."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from isccd import __version__
from isccd.protocol import MAX_LINE_BYTES


@dataclass(frozen=True, slots=True)
class ServerOptions:
    """How the socket server is set up and bounded.

    Attributes:
        socket_path: Where the socket is created (at most 107 bytes).
        socket_mode: Permission bits of the socket file.
        socket_group: Group owning the socket file; ``None`` keeps the daemon's group.
        subscriber_queue: Events buffered per subscriber before it is told it lagged.
        max_clients: Connections served at once; more are refused with ``too_many_clients``.
        idle_timeout: Seconds a connection may go without sending anything (a part of a
            request line counts) while it holds no subscription and no request is in
            progress, before it is closed with ``idle_timeout``; 0 for never.
        max_line_bytes: Longest request line accepted.
        max_pending_requests: Request lines buffered per connection before reading pauses.
        write_buffer_bytes: Bytes buffered per connection before its writer waits for the
            client to read (the transport's high-water mark).
        max_reply_bytes: Longest reply sent; a longer one is answered ``reply_too_large``.
            With the write buffer, the events queue and the buffered requests, it bounds
            what one connection may hold in the daemon.
        send_timeout: Seconds a client may leave what it was sent unread (the write buffer
            full, nothing taken) before it is disconnected and what was queued for it let
            go; 0 for never.
        replay_page: Events read from the log at once when replaying.
        shutdown_timeout: Seconds a ``sync`` or ``rescan`` in progress gets to finish when the
            server closes (a question in progress is given up at once: ``shutting_down``).
        close_timeout: Seconds a closing connection gets to flush what it was sent before it
            is aborted (a client that does not read never delays anything longer).
        server_name: Name and version announced by ``hello``.
    """

    socket_path: Path
    socket_mode: int = 0o660
    socket_group: str | None = None
    subscriber_queue: int = 10_000
    max_clients: int = 256
    idle_timeout: float = 60.0
    max_line_bytes: int = MAX_LINE_BYTES
    max_pending_requests: int = 64
    write_buffer_bytes: int = 256 * 1024
    max_reply_bytes: int = 64 * 1024 * 1024
    send_timeout: float = 30.0
    replay_page: int = 500
    shutdown_timeout: float = 5.0
    close_timeout: float = 2.0
    server_name: str = f"isccd {__version__}"
