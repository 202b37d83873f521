"""Clients that pipeline large questions and never read the answers, against a real daemon: what
is queued for them is bounded and let go (``[server] send_timeout``), the daemon serves everyone
else meanwhile, and SIGTERM stops it well within systemd's ``TimeoutStopSec`` (30 s) whatever
they do."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.conftest import Daemon

from .unread import dropped, first_answered, library, not_reading, reply_size, rss_kib

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow

#: Pairs of copies: a ``dupes`` reply of 1.4 MB.
PAIRS = 400
#: The promise to systemd (``TimeoutStopSec=30`` in the unit), with room for a busy machine.
STOP_PROMISE = 25.0


def _start(daemon: Daemon) -> int:
    """Start, index the library; the size of one ``dupes`` reply."""
    library(daemon.root, PAIRS)
    daemon.start(timeout=120)

    async def indexed() -> None:
        client = await daemon.client()
        await client.sync()
        await client.close()

    asyncio.run(indexed())
    return reply_size(daemon.socket)


def _status_ok(path: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(path))
        sock.sendall(b'{"id": "monitor", "cmd": "status"}\n')
        reply = json.loads(sock.makefile("rb").readline())
    assert reply["ok"], reply


@pytest.mark.timeout(300)
def test_clients_that_do_not_read_are_let_go_and_the_daemon_stays_bounded(
    make_daemon: Callable[..., Daemon], capsys: pytest.CaptureFixture[str]
) -> None:
    clients, send_timeout = 64, 2.0
    daemon = make_daemon(ISCCD_SERVER__SEND_TIMEOUT=str(send_timeout), ISCCD_LOG__LEVEL="warning")
    reply = _start(daemon)
    assert daemon.proc is not None
    assert reply > 1_000_000
    before = peak = rss_kib(daemon.proc.pid)
    started = time.monotonic()
    with not_reading(daemon.socket, clients, 200) as socks:
        waiting = set(socks)
        deadline = time.monotonic() + 120
        while waiting and time.monotonic() < deadline:
            peak = max(peak, rss_kib(daemon.proc.pid))
            waiting = {sock for sock in waiting if not dropped(sock)}
            if waiting:
                time.sleep(0.05)  # polling the daemon, with the deadline above
        seconds = time.monotonic() - started
        _status_ok(daemon.socket)  # served all along, and after
        after = rss_kib(daemon.proc.pid)
    lines = [line for line in daemon.log_lines() if line.get("event") == "client_not_reading"]
    with capsys.disabled():
        print(
            f"\nunread: {clients} clients x 200 dupes of {reply / 1e6:.1f} MB, let go in "
            f"{seconds:.1f} s; daemon RSS {before // 1024} -> peak {peak // 1024}, "
            f"after {after // 1024} MiB"
        )
    assert not waiting, f"{len(waiting)} of {clients} clients still held after 120 s"
    assert len(lines) == clients
    # Each connection holds at most one encoded reply: never one per request, nor the reply's
    # objects (several times its bytes) while the client does not read. The bound allows for
    # the allocator's slack.
    assert (peak - before) * 1024 < clients * 2 * reply


@pytest.mark.timeout(300)
def test_sigterm_stops_promptly_whatever_the_clients_do(
    make_daemon: Callable[..., Daemon], capsys: pytest.CaptureFixture[str]
) -> None:
    clients = 250  # under max_clients (256)
    daemon = make_daemon(ISCCD_LOG__LEVEL="warning")
    reply = _start(daemon)
    assert daemon.proc is not None
    with not_reading(daemon.socket, clients, 200) as socks:
        # The first answer is ready: the other clients' questions wait in line behind it (the
        # store's thread answers one at a time), many seconds of work that nobody will read.
        first_answered(socks)
        started = time.monotonic()
        daemon.signal(signal.SIGTERM)
        status = daemon.proc.wait(120)
        seconds = time.monotonic() - started
    with capsys.disabled():
        print(f"\nunread: {clients} clients x 200 dupes of {reply / 1e6:.1f} MB: stopped in "
              f"{seconds:.1f} s")  # fmt: skip
    assert status == 0, daemon.log_tail()
    assert seconds < STOP_PROMISE
