"""Protocol fuzzing: generated sessions of hostile, malformed and awkward requests, and a runner
that sends them to a daemon's socket and says what came back.

A *session* is one connection: the lines it sends (each one request, none containing a newline,
none blank), how the bytes are cut into writes, and whether it half-closes after writing. The
server owes one reply per line, in order (``line_too_long`` for an oversized one), and then
keeps the connection open (or closes it cleanly after a half-close). A *burst* is many
connections opened at once, each saying hello: each is served or refused with one error line
and closed.

Everything is derived from a seed (:func:`sessions`), so a failure can be replayed, and nothing
here depends on pytest: a benchmark can send more of the same.
"""

from __future__ import annotations

import contextlib
import json
import random
import selectors
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The server's limit on a request line (1 MiB).
MAX_LINE = 1 << 20

#: The categories, and the weight each gets among the generated lines.
WEIGHTS = {
    "invalid_utf8": 10,
    "surrogates": 10,
    "nesting": 6,
    "wrong_types": 14,
    "garbage": 10,
    "mutations": 14,
    "paths": 12,
    "valid": 14,
    "huge": 1,
}

_COMMANDS = ("hello", "status", "get", "similar", "dupes", "rescan", "sync", "subscribe")
_WRONG: tuple[object, ...] = (
    None,
    True,
    False,
    0,
    -1,
    1.5,
    10**400,
    "",
    "x",
    [],
    [1],
    {},
    {"a": 1},
    "/",
    -(2**70),
)


@dataclass(frozen=True, slots=True)
class Session:
    """One connection's worth of requests.

    Attributes:
        category: How the session sends (``single``, ``mixed``, ``pipelining``,
            ``half_close``).
        lines: The request lines (no newline inside, none blank).
        kinds: The category of each line (see :data:`WEIGHTS`).
        chunk: Bytes per write (``0``: everything in one write).
        half_close: Shut down the writing side after the last line.
    """

    category: str
    lines: tuple[bytes, ...]
    kinds: tuple[str, ...]
    chunk: int = 0
    half_close: bool = False


@dataclass(frozen=True, slots=True)
class Burst:
    """``count`` connections opened at once, each sending hello."""

    count: int
    category: str = "burst"


@dataclass(slots=True)
class Outcome:
    """What the server did with a session or burst.

    Attributes:
        replies: Reply objects received (in order).
        events: Event lines received (a fuzzed ``subscribe`` may start a subscription).
        closed: The server closed the connection (EOF).
        reset: The connection was reset or the runner gave up waiting (never acceptable).
        served: Burst connections served.
        refused: Burst connections refused with ``too_many_clients``.
        problems: What went wrong, for the test to show.
    """

    replies: list[dict[str, Any]] = field(default_factory=list)
    events: int = 0
    closed: bool = False
    reset: bool = False
    served: int = 0
    refused: int = 0
    problems: list[str] = field(default_factory=list)


# -- generating ----------------------------------------------------------------------------------


class _Generator:
    def __init__(self, rng: random.Random, root: str, outside: str) -> None:
        self.rng = rng
        self.root = root
        self.outside = outside
        self.next_id = 0

    def request_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def path(self) -> str:
        rng, root, outside = self.rng, self.root, self.outside
        parent = root.rsplit("/", 1)[0] or "/"
        choices = [
            f"{root}/a.txt",
            f"{root}/sub/b.txt",
            f"{root}/missing.txt",
            f"{root}/link_out/secret.txt",
            f"{root}/../outside/secret.txt",
            f"{root}/sub/../../{outside.rsplit('/', 1)[1]}/secret.txt",
            f"{outside}/secret.txt",
            f"{outside}/no-such-file",
            parent,
            f"{parent}/nothing/x",
            "/",
            "/etc/shadow",
            "/proc/self/environ",
            "/dev/zero",
            root,
            f"{root}/" + "d/" * rng.randint(1, 3000),
            f"{root}/" + "x" * rng.randint(200, 5000),
            f"{root}/caf\udce9.txt",
            f"{root}/./sub//b.txt",
            "relative/path",
            f"{root}/a\x00b",
        ]
        return rng.choice(choices)

    def valid(self) -> dict[str, Any]:
        rng = self.rng
        cmd = rng.choice(_COMMANDS)
        obj: dict[str, Any] = {"id": self.request_id(), "cmd": cmd}
        if cmd in ("get", "rescan", "sync"):
            if cmd == "get" or rng.random() < 0.8:
                obj["path"] = self.path()
        elif cmd == "similar":
            if rng.random() < 0.5:
                obj["path"] = self.path()
            else:
                obj["code"] = rng.choice(["ISCC:KACYPXW445FTYNJ3", "ISCC:AAA", "nonsense"])
            if rng.random() < 0.5:
                obj["max_distance"] = rng.randint(0, 256)
        elif cmd == "dupes":
            if rng.random() < 0.5:
                obj["root"] = self.path()
            obj["near"] = rng.random() < 0.5
        elif cmd == "subscribe":
            obj["since"] = rng.choice([0, 1, 10**9])
            if rng.random() < 0.5:
                obj["roots"] = [self.path()]
        elif cmd == "hello":
            obj["protocol"] = rng.choice([1, 2, 99])
        return obj

    def line(self, category: str) -> bytes:
        make: Callable[[], bytes] = getattr(self, f"_{category}")
        return make()

    def _valid(self) -> bytes:
        return _dump(self.valid())

    def _paths(self) -> bytes:
        cmd = self.rng.choice(["get", "similar", "rescan", "sync", "dupes"])
        key = "root" if cmd == "dupes" else "path"
        return _dump({"id": self.request_id(), "cmd": cmd, key: self.path()})

    def _invalid_utf8(self) -> bytes:
        text = bytearray(self._valid())
        bad = self.rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"])
        at = self.rng.randrange(len(text) + 1)
        text[at:at] = bad
        return bytes(text)

    def _surrogates(self) -> bytes:
        rng = self.rng
        cmd = rng.choice(["get", "similar", "dupes", "rescan", "sync", "subscribe", "hello"])
        key = {"dupes": "root", "subscribe": "roots", "hello": "client"}.get(cmd, "path")
        lone = chr(rng.choice([0xD800, 0xDBFF, 0xDC00, 0xDC7F, 0xDD00, 0xDFFF]))
        value: Any = f"{self.root}/x{lone}y" if key != "client" else f"c{lone}"
        if key == "roots":
            value = [value]
        obj: dict[str, Any] = {"id": self.request_id(), "cmd": cmd, key: value}
        if rng.random() < 0.1:
            obj["id"] = f"id{lone}"
        return _dump(obj)

    def _nesting(self) -> bytes:
        rng = self.rng
        depth = rng.choice([10, 100, 900, 1100, 5000, 100_000])
        opening, closing = rng.choice([("[", "]"), ('{"a":', "}")])
        nested = opening * depth + "1" + closing * depth
        if rng.random() < 0.5:
            return nested.encode()
        return f'{{"id":{self.request_id()},"cmd":"get","path":{nested}}}'.encode()

    def _wrong_types(self) -> bytes:
        rng = self.rng
        obj = self.valid()
        keys = [k for k in obj if k != "id"] + ["path", "limit", "since", "types", "near"]
        obj[rng.choice(keys)] = rng.choice(_WRONG)
        if rng.random() < 0.2:
            obj["id"] = rng.choice(_WRONG)
        return _dump(obj)

    def _garbage(self) -> bytes:
        rng = self.rng
        kind = rng.randrange(4)
        if kind == 0:
            data = rng.randbytes(rng.randint(1, 300))
        elif kind == 1:
            data = bytes(rng.randint(32, 126) for _ in range(rng.randint(1, 300)))
        elif kind == 2:
            data = json.dumps(rng.choice([1, "s", None, [1, 2], 1e308, -0.0, True])).encode()
        else:
            data = b'{"id": 1, "cmd": "status", "x": ' + rng.choice([b"NaN", b"Infinity"]) + b"}"
        data = data.replace(b"\n", b" ").replace(b"\r", b" ")
        return data if data.strip() else b"?"

    def _mutations(self) -> bytes:
        rng = self.rng
        data = bytearray(self._valid())
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            action = rng.randrange(3)
            if action == 0:
                data[at] = rng.randint(0, 255)
            elif action == 1 and len(data) > 1:
                del data[at]
            else:
                data.insert(at, rng.randint(0, 255))
        out = bytes(data).replace(b"\n", b" ").replace(b"\r", b" ")
        return out if out.strip() else b"?"

    def _huge(self) -> bytes:
        rng = self.rng
        if rng.random() < 0.5:  # past the limit: refused as it arrives
            return b'{"id": 1, "cmd": "get", "path": "/' + b"a" * (MAX_LINE + 10) + b'"}'
        # Just under it: a valid line with a long string argument.
        filler = "b" * (MAX_LINE - 100)
        return _dump({"id": self.request_id(), "cmd": "hello", "client": filler})


def _dump(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def sessions(seed: int, *, root: str, outside: str, lines: int) -> list[Session | Burst]:
    """Sessions holding ``lines`` request lines in all, across every category, plus
    pipelining, half-closing, chunked writes and bursts of connections.

    Args:
        seed: Makes the whole list (the same seed, the same sessions).
        root: A watched root (the paths are made up around it).
        outside: A directory outside every root.
        lines: Request lines to generate.
    """
    rng = random.Random(seed)
    gen = _Generator(rng, root.rstrip("/"), outside.rstrip("/"))
    names = list(WEIGHTS)
    weights = [WEIGHTS[n] for n in names]
    out: list[Session | Burst] = []
    made = 0
    while made < lines:
        shape = rng.choices(["mixed", "single", "pipelining", "half_close"], [6, 2, 1, 1])[0]
        size = {"single": 1, "pipelining": rng.randint(50, 150)}.get(shape, rng.randint(5, 60))
        kinds = [
            "valid" if shape == "pipelining" else rng.choices(names, weights)[0]
            for _ in range(size)
        ]
        batch = [gen.line(kind) for kind in kinds]
        chunk = rng.choice([0, 0, 1, 7, 100, 4096])
        if chunk == 1 and sum(map(len, batch)) > 4096:
            chunk = 7  # byte by byte only for small sessions: it costs a write per byte
        out.append(Session(shape, tuple(batch), tuple(kinds), chunk, shape == "half_close"))
        made += len(batch)
        if rng.random() < 0.05:
            out.append(Burst(rng.choice([50, 100, 300])))
    return out


def count(items: list[Session | Burst]) -> int:
    """Messages in ``items``: request lines, and connections of the bursts."""
    return sum(len(i.lines) if isinstance(i, Session) else i.count for i in items)


# -- running -------------------------------------------------------------------------------------


def run_session(path: Path, session: Session, *, timeout: float = 60.0) -> Outcome:
    """Send a session on a new connection and collect what comes back.

    Waits for one reply per line, then (after a half-close) for the server to close; gives up
    after ``timeout`` seconds (``reset``).
    """
    outcome = Outcome()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(str(path))
        sock.setblocking(False)
        data = b"".join(line + b"\n" for line in session.lines)
        deadline = time.monotonic() + timeout
        _exchange(sock, data, session, outcome, deadline)
    except OSError as exc:
        outcome.reset = True
        outcome.problems.append(f"{session.category}: {exc!r}")
    finally:
        sock.close()
    if len(outcome.replies) != len(session.lines) and not outcome.reset:
        outcome.problems.append(
            f"{session.category}: {len(outcome.replies)} replies to {len(session.lines)} lines"
        )
    return outcome


def _exchange(
    sock: socket.socket, data: bytes, session: Session, outcome: Outcome, deadline: float
) -> None:
    """Write ``data`` (in chunks) while reading replies, until every reply is in (and, after a
    half-close, the connection is closed)."""
    chunk = session.chunk or len(data)
    sent = 0
    buffer = bytearray()
    with selectors.DefaultSelector() as selector:
        selector.register(sock, selectors.EVENT_READ | selectors.EVENT_WRITE)
        while True:
            done_writing = sent >= len(data)
            answered = done_writing and len(outcome.replies) >= len(session.lines)
            if (answered and not session.half_close) or outcome.closed:
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                outcome.reset = True
                outcome.problems.append(f"{session.category}: no answer in time")
                return
            for _, mask in selector.select(min(remaining, 1.0)):
                if mask & selectors.EVENT_WRITE and not done_writing:
                    sent += sock.send(data[sent : sent + chunk])
                    if sent >= len(data):
                        if session.half_close:
                            sock.shutdown(socket.SHUT_WR)
                        selector.modify(sock, selectors.EVENT_READ)
                if mask & selectors.EVENT_READ:
                    piece = sock.recv(1 << 20)
                    if not piece:
                        outcome.closed = True
                        break
                    buffer += piece
                    _take_lines(buffer, outcome)


def _take_lines(buffer: bytearray, outcome: Outcome) -> None:
    while (end := buffer.find(b"\n")) >= 0:
        line = bytes(buffer[:end])
        del buffer[: end + 1]
        try:
            message = json.loads(line)
        except ValueError:
            outcome.problems.append(f"the server sent a line that is not JSON: {line[:200]!r}")
            continue
        if "ok" in message:
            outcome.replies.append(message)
        else:
            outcome.events += 1


def run_burst(path: Path, burst: Burst, *, timeout: float = 60.0) -> Outcome:
    """Open ``burst.count`` connections at once, each sending hello; count who is served and
    who is refused (each must be one or the other, and a refused one closed)."""
    outcome = Outcome()
    deadline = time.monotonic() + timeout
    socks = _connect_all(path, burst.count, deadline, outcome)
    try:
        answers = _first_lines(socks, deadline)
    finally:
        for sock in socks:
            sock.close()
    for reply, closed in answers:
        if reply is None:
            outcome.reset = True
            outcome.problems.append("burst: a connection got no line")
        elif reply.get("ok"):
            outcome.served += 1
            outcome.replies.append(reply)
        elif reply.get("error", {}).get("code") == "too_many_clients" and closed:
            outcome.refused += 1
            outcome.replies.append(reply)
        else:
            outcome.problems.append(f"burst: unexpected {reply!r} (closed: {closed})")
    return outcome


def _connect_all(path: Path, n: int, deadline: float, outcome: Outcome) -> list[socket.socket]:
    """Connect ``n`` sockets as fast as the listen backlog lets them in (a full backlog says
    EAGAIN: that one is tried again)."""
    socks: list[socket.socket] = []
    waiting = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(n)]
    for sock in waiting:
        sock.setblocking(False)
    while waiting and time.monotonic() < deadline:
        still = []
        for sock in waiting:
            try:
                sock.connect(str(path))
            except BlockingIOError:
                still.append(sock)
                continue
            with contextlib.suppress(OSError):  # refused and closed already
                sock.send(b'{"id": 1, "cmd": "hello"}\n')
            socks.append(sock)
        waiting = still
        if waiting:
            time.sleep(0.001)  # the backlog is full: the daemon is accepting
    for sock in waiting:
        sock.close()
        outcome.problems.append("burst: could not connect in time")
    return socks


def _first_lines(
    socks: list[socket.socket], deadline: float
) -> list[tuple[dict[str, Any] | None, bool]]:
    """Each socket's first line, and whether it was closed after it."""
    buffers = {s: bytearray() for s in socks}
    closed = dict.fromkeys(socks, False)
    with selectors.DefaultSelector() as selector:
        for sock in socks:
            selector.register(sock, selectors.EVENT_READ)
        waiting = set(socks)
        while waiting and time.monotonic() < deadline:
            for key, _ in selector.select(0.5):
                ready = key.fileobj
                assert isinstance(ready, socket.socket)
                sock = ready
                try:
                    piece = sock.recv(65536)
                except OSError:
                    piece = b""
                if piece:
                    buffers[sock] += piece
                else:
                    closed[sock] = True
                    selector.unregister(sock)
                buffered = buffers[sock]
                has_line = b"\n" in buffered
                ok_line = has_line and b'"ok":true' in buffered.split(b"\n", 1)[0]
                if (has_line and ok_line) or closed[sock]:
                    waiting.discard(sock)
                    if not closed[sock]:
                        selector.unregister(sock)
    out = []
    for sock in socks:
        first = bytes(buffers[sock]).split(b"\n", 1)[0]
        out.append((json.loads(first) if first else None, closed[sock]))
    return out


def run(
    path: Path, items: list[Session | Burst], check: Callable[[], None] | None = None
) -> Iterator[tuple[Session | Burst, Outcome]]:
    """Run sessions and bursts one after another, calling ``check`` (another client's
    request, say) after each; yields what each got."""
    for item in items:
        outcome = run_burst(path, item) if isinstance(item, Burst) else run_session(path, item)
        yield item, outcome
        if check is not None:
            check()
