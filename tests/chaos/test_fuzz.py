"""Protocol fuzzing against a real daemon: every generated message gets a reply or a clean close,
other clients are served all along, the daemon's memory stays bounded, and connection limits
hold under bursts."""

from __future__ import annotations

import asyncio
import collections
import json
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.conftest import Daemon

from .fuzz import Burst, Session, count, run, run_burst, sessions

SEED = 20_240_917
LINES = 5_200
MAX_CLIENTS = 32
IDLE = 3.0


def _rss_kib(pid: int) -> int:
    with Path(f"/proc/{pid}/status").open(encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _tree(daemon: Daemon) -> Path:
    root, outside = daemon.root, daemon.base / "outside"
    (root / "sub").mkdir()
    (root / "a.txt").write_text("a file to ask about " * 20)
    (root / "sub" / "b.txt").write_text("another one " * 20)
    outside.mkdir()
    (outside / "secret.txt").write_text("outside the roots")
    (root / "link_out").symlink_to(outside)
    return outside


def _status_ok(path: Path) -> None:
    """Another client, on a connection of its own, is answered at once (once the slots a
    burst held are given back: the daemon frees them as it sees those connections close)."""
    deadline = time.monotonic() + 10
    while True:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(30)
            sock.connect(str(path))
            sock.sendall(b'{"id": "monitor", "cmd": "status"}\n')
            reply = json.loads(sock.makefile("rb").readline())
        refused = reply.get("error", {}).get("code") == "too_many_clients"
        if not refused or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert reply["id"] == "monitor" and reply["ok"], reply


def _idle_close(path: Path) -> float:
    """A connection that sends nothing is closed with ``idle_timeout``; the seconds it took."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(IDLE * 10)
        started = time.monotonic()
        sock.connect(str(path))
        stream = sock.makefile("rb")
        reply = json.loads(stream.readline())
        assert reply["error"]["code"] == "idle_timeout", reply
        assert stream.read() == b""
        return time.monotonic() - started


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_fuzzed_messages_get_a_reply_or_a_clean_close_and_the_daemon_carries_on(
    make_daemon: Callable[..., Daemon], capsys: pytest.CaptureFixture[str]
) -> None:
    daemon = make_daemon(
        ISCCD_SERVER__MAX_CLIENTS=str(MAX_CLIENTS),
        ISCCD_SERVER__IDLE_TIMEOUT=str(IDLE),
        ISCCD_LOG__LEVEL="warning",
    )
    outside = _tree(daemon)
    daemon.start()
    assert daemon.proc is not None

    async def settle() -> None:
        client = await daemon.client()
        await client.sync()
        await client.close()

    asyncio.run(settle())
    items = sessions(SEED, root=str(daemon.root), outside=str(outside), lines=LINES)
    total = count(items)
    assert total >= 5_000
    rss_before = _rss_kib(daemon.proc.pid)
    started = time.monotonic()
    problems: list[str] = []
    by_kind: collections.Counter[str] = collections.Counter()
    by_shape: collections.Counter[str] = collections.Counter()
    replies = 0
    for item, outcome in run(daemon.socket, items, check=lambda: _status_ok(daemon.socket)):
        if isinstance(item, Session):
            by_kind.update(item.kinds)
            by_shape[item.category] += 1
        else:
            by_kind[item.category] += item.count
        replies += len(outcome.replies)
        problems += outcome.problems
        if isinstance(item, Burst):
            assert outcome.served <= MAX_CLIENTS, outcome.served
        assert not outcome.reset, outcome.problems
        assert daemon.proc.poll() is None, daemon.log_tail()
    seconds = time.monotonic() - started
    # A burst of a thousand connections: never more served than the limit, the rest refused.
    burst = run_burst(daemon.socket, Burst(1000))
    _status_ok(daemon.socket)  # the burst's slots are free again
    idle = _idle_close(daemon.socket)
    rss_after = _rss_kib(daemon.proc.pid)
    with capsys.disabled():
        print(
            f"\nfuzz: {total} messages ({dict(sorted(by_kind.items()))}) in {len(items)} "
            f"sessions ({dict(sorted(by_shape.items()))}), {replies} replies, {seconds:.1f} s; "
            f"burst of 1000: {burst.served} "
            f"served, {burst.refused} refused; idle closed after {idle:.1f} s; daemon RSS "
            f"{rss_before // 1024} -> {rss_after // 1024} MiB"
        )
    assert problems == []
    assert burst.served <= MAX_CLIENTS and burst.served + burst.refused == 1000, burst.problems
    assert IDLE <= idle < IDLE * 5
    assert rss_after < rss_before + 100 * 1024  # bounded: no buffer kept per bad request
    _status_ok(daemon.socket)
    assert daemon.stop() == 0
