"""Clients that pipeline large questions and never read the answers, for the tests and
``bench/chaos.py``: a library whose ``dupes`` reply is large, the clients, and what can be seen
of them and of the daemon without reading (the kernel's poll flags, ``/proc``)."""

from __future__ import annotations

import contextlib
import select
import socket
from collections.abc import Iterator
from pathlib import Path

#: A ``dupes`` request for every group there is (``%`` its id).
DUPES = b'{"id": %d, "cmd": "dupes", "limit": 100000}\n'


def library(root: Path, pairs: int) -> None:
    """``pairs`` pairs of copies, each named by a path of about 1,500 bytes: a ``dupes`` reply
    of about 3.5 kB a pair."""
    deep = root
    for k in range(7):
        deep = deep / (chr(ord("a") + k) * 200)
    deep.mkdir(parents=True)
    for i in range(2 * pairs):
        (deep / f"f{i:05}.txt").write_text(f"the content of pair {i // 2} " * 30)


def reply_size(path: Path) -> int:
    """The bytes of one ``dupes`` reply, read to the end."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(path))
        sock.sendall(DUPES % 0)
        return len(sock.makefile("rb").readline())


@contextlib.contextmanager
def not_reading(path: Path, clients: int, requests: int) -> Iterator[list[socket.socket]]:
    """``clients`` connections, each sending ``requests`` pipelined ``dupes`` (as many as the
    socket takes) and reading nothing; closed on exit."""
    socks: list[socket.socket] = []
    try:
        data = b"".join(DUPES % i for i in range(requests))
        for _ in range(clients):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            socks.append(sock)
            sock.connect(str(path))
            sock.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                sock.send(data)
        yield socks
    finally:
        for sock in socks:
            sock.close()


def dropped(sock: socket.socket) -> bool:
    """Whether the daemon closed this connection, asked without reading from it (the kernel
    says the other end hung up)."""
    poll = select.poll()
    poll.register(sock, select.POLLRDHUP)
    return any(events & (select.POLLRDHUP | select.POLLHUP) for _, events in poll.poll(0))


def first_answered(socks: list[socket.socket], timeout: float = 60) -> None:
    """Wait until some client has a reply waiting (seen without reading it)."""
    poll = select.poll()
    for sock in socks:
        poll.register(sock, select.POLLIN)
    assert poll.poll(timeout * 1000), "no reply in time"


def rss_kib(pid: int) -> int:
    """A process's resident memory (``/proc/PID/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")
