"""sd_notify over real datagram sockets: filesystem paths and the abstract namespace."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from isccd.sdnotify import Notifier


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = tmp_path / "notify"
    sock.bind(str(path))
    sock.settimeout(5)
    yield sock, str(path)
    sock.close()


def _receive(sock: socket.socket) -> dict[str, str]:
    data = sock.recv(4096).decode()
    return dict(line.split("=", 1) for line in data.split("\n"))


def test_messages_reach_a_path_socket(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    notifier = Notifier({"NOTIFY_SOCKET": path})
    assert notifier.enabled
    assert notifier.ready("watching 2 roots")
    assert _receive(sock) == {"READY": "1", "STATUS": "watching 2 roots"}
    assert notifier.status("scan 10/20\nsecond line")
    assert _receive(sock) == {"STATUS": "scan 10/20 second line"}
    assert notifier.watchdog()
    assert _receive(sock) == {"WATCHDOG": "1"}
    assert notifier.stopping()
    assert _receive(sock) == {"STOPPING": "1"}
    assert notifier.extend_timeout(2.5)
    assert _receive(sock) == {"EXTEND_TIMEOUT_USEC": "2500000"}
    notifier.close()
    notifier.close()


def test_reloading_carries_the_monotonic_clock(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    notifier = Notifier({"NOTIFY_SOCKET": path})
    before = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    assert notifier.reloading()
    after = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    message = _receive(sock)
    assert message["RELOADING"] == "1"
    assert before <= int(message["MONOTONIC_USEC"]) <= after
    notifier.close()


def test_abstract_namespace_socket() -> None:
    name = f"isccd-test-{os.getpid()}-{time.monotonic_ns()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    sock.settimeout(5)
    try:
        notifier = Notifier({"NOTIFY_SOCKET": "@" + name})
        assert notifier.ready()
        assert _receive(sock) == {"READY": "1"}
        notifier.close()
    finally:
        sock.close()


def test_without_systemd_nothing_is_sent() -> None:
    notifier = Notifier({})
    assert not notifier.enabled
    assert not notifier.ready()
    assert notifier.watchdog_interval is None


def test_a_vanished_socket_is_not_an_error(tmp_path: Path) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": str(tmp_path / "gone")})
    assert not notifier.ready()
    notifier.close()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"WATCHDOG_USEC": "30000000"}, 15.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}, 15.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}, None),
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "soon"}, None),
        ({}, None),
    ],
)
def test_the_watchdog_interval_is_half_of_watchdogsec(
    env: dict[str, str], expected: float | None
) -> None:
    assert Notifier(env).watchdog_interval == expected
