"""The daemon's status (``status``): its roots, their scans, its socket server, the database a
fleet shares, its hashing workers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ScanProgress:
    """A reconcile scan under way.

    Attributes:
        reason: Why it runs: ``"startup"``, ``"periodic"``, ``"recrawl"``, ``"request"``, ...
        phase: ``"walking"`` (listing and comparing) or ``"hashing"`` (computing codes).
        files_seen: Files listed so far.
        files_queued: Files found new or changed, to be hashed.
        files_done: Queued files processed so far.
        errors: Files that failed so far.
        started: Unix time the scan started.
    """

    reason: str
    phase: str
    files_seen: int
    files_queued: int
    files_done: int
    errors: int
    started: float


@dataclass(frozen=True, slots=True)
class RootStatus:
    """One watched root.

    Attributes:
        path: The root, symbolic links resolved.
        watch_mode: ``"inotify"`` (every directory watched), ``"partial"`` (some subtrees
            polled), ``"polling"`` (the whole root polled) or ``"stopped"``.
        files: Files indexed under the root.
        scan: The scan under way, if any.
        note: Why the root is not fully watched and what would fix it (e.g. the sysctl value).
    """

    path: str
    watch_mode: str
    files: int
    scan: ScanProgress | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class ServiceStatistics:
    """The socket server's own figures, added to ``status`` by the server.

    Attributes:
        connections: Clients connected now.
        subscribers: Connections with a subscription.
        events_published: Events handed to the broker since the daemon started.
        subscribers_lagged: Subscribers disconnected for lagging since the daemon started.
    """

    connections: int
    subscribers: int
    events_published: int
    subscribers_lagged: int


@dataclass(frozen=True, slots=True)
class FleetHost:
    """Another host sharing the daemon's database.

    Attributes:
        name: Its host name.
        heard: Unix time the database last heard from it (its last commit of events, its
            daemon's heartbeat, or its opening the database); ``None`` if never.
        last_seq: The highest sequence number of its log.
    """

    name: str
    heard: float | None
    last_seq: int


@dataclass(frozen=True, slots=True)
class DatabaseStatus:
    """The database a fleet shares, as the daemon sees it (``status`` on a PostgreSQL store).

    Attributes:
        url: Its URL, without a password.
        host: The host name this daemon writes under.
        connected: Whether the daemon reads the shared log now.
        latency_ms: The last round trip to it, in milliseconds (``None`` before the first).
        checked: Unix time of that measurement.
        position: The last sequence number of the shared log the daemon has read (its
            in-memory index holds every change up to it).
        hosts: The other hosts that opened the database, by name.
        error: Why the daemon cannot read the log now, while it cannot.
    """

    url: str
    host: str
    connected: bool
    latency_ms: float | None = None
    checked: float | None = None
    position: int = 0
    hosts: tuple[FleetHost, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class HashingStatus:
    """The hashing workers.

    Attributes:
        workers: Worker processes running now (0 while idle).
        state: ``"running"`` (started or starting), ``"stopping"`` (being let go after a quiet
            period) or ``"idle"`` (stopped, with their fork server: the next file starts them).
        idle_timeout: Seconds without a file after which they are let go; 0 for never.
    """

    workers: int
    state: str
    idle_timeout: float


@dataclass(frozen=True, slots=True)
class DaemonStatus:
    """``status``.

    Attributes:
        version: The daemon's version.
        pid: Its process id.
        state: ``"starting"``, ``"ready"``, ``"degraded"``, ``"reloading"`` or ``"stopping"``.
        started: Unix time it started.
        roots: The watched roots.
        queue_depth: Files waiting to be hashed.
        files_indexed: Files in the index (tombstones excluded).
        last_seq: The last sequence number in the event log (the fleet's, for a database
            a fleet shares).
        server: The socket server's figures (filled in by the server).
        problems: What keeps the daemon from working fully, a sentence each: the store cannot
            be written, a background loop failed, a reload was refused. Empty when all is well;
            problems of one root are in its ``note``.
        database: The shared database, for a store a fleet shares; ``None`` for one host's.
        hashing: The hashing workers (``None`` from a daemon that does not tell).
    """

    version: str
    pid: int
    state: str
    started: float
    roots: tuple[RootStatus, ...]
    queue_depth: int
    files_indexed: int
    last_seq: int
    server: ServiceStatistics | None = None
    problems: tuple[str, ...] = ()
    database: DatabaseStatus | None = None
    hashing: HashingStatus | None = None
