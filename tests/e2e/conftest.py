"""A real ``isccd run`` process for end-to-end tests.

Readiness is systemd's: the test binds a notification socket, passes it as ``NOTIFY_SOCKET`` and
waits for ``READY=1``; nothing sleeps. Sockets live under short ``/tmp`` paths (a Unix socket
path has at most 107 bytes). Every daemon started is stopped, or killed, at teardown.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from isccd.client import AsyncClient
from isccd.model import Event, EventType
from tests import leaks


class Daemon:
    """One ``isccd run`` process and the places it uses."""

    def __init__(self, base: Path, root: Path, env: dict[str, str]) -> None:
        self.base = base
        self.root = root
        self.state = base / "state"
        self.socket = base / "run" / "isccd.sock"
        self.log = base / "daemon.log"
        self.env_extra = env
        self.proc: subprocess.Popen[bytes] | None = None
        #: A command the daemon is run under (e.g. ``unshare ...``).
        self.wrap: list[str] = []
        self.notices: list[dict[str, str]] = []
        #: Owned by a fixture of a wider scope than a test: started again by a test, the
        #: process lives on into the next (:mod:`tests.leaks`).
        self.owned_wider = False
        self._notify: socket.socket | None = None

    def start(self, *extra: str, watch: bool = True, timeout: float = 60) -> None:
        """Start and wait for ``READY=1``.

        Args:
            extra: More command-line arguments.
            watch: Pass ``--watch`` with the daemon's root (else the roots come from
                ``extra``, e.g. ``--config``).
            timeout: Seconds to wait for readiness.
        """
        notify_path = self.base / "notify"
        with contextlib.suppress(FileNotFoundError):
            notify_path.unlink()
        self._notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._notify.bind(str(notify_path))
        (self.base / "etc").mkdir(exist_ok=True)
        env = {
            **os.environ,
            "NOTIFY_SOCKET": str(notify_path),
            # No system configuration file: /etc/isccd is not this test's.
            "CONFIGURATION_DIRECTORY": str(self.base / "etc"),
            "ISCCD_HASHING__WORKERS": "1",
            "ISCCD_LOG__FORMAT": "json",
            **self.env_extra,
        }
        command = [*self.wrap, sys.executable, "-m", "isccd", "run"]
        command += ["--watch", str(self.root)] if watch else []
        command += ["--state", str(self.state), "--socket", str(self.socket), *extra]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        if self.owned_wider:
            leaks.owned_wider(self.proc.pid)
        self.wait_notice("READY", timeout)

    def wait_notice(self, key: str, timeout: float = 30) -> dict[str, str]:
        """Wait for a notification with ``key`` (``READY``, ``RELOADING``, ``STOPPING``...)."""
        assert self._notify is not None
        deadline = time.monotonic() + timeout
        for notice in self.notices:
            if key in notice:
                self.notices.remove(notice)
                return notice
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no {key}= from the daemon; log:\n{self.log_tail()}")
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"the daemon exited with {self.proc.returncode}; log:\n{self.log_tail()}"
                )
            self._notify.settimeout(min(remaining, 0.5))
            try:
                data = self._notify.recv(4096).decode()
            except TimeoutError:
                continue
            notice = dict(line.split("=", 1) for line in data.splitlines() if "=" in line)
            if key in notice:
                return notice
            self.notices.append(notice)

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM, and the exit status."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        finally:
            self._close_notify()

    def kill(self) -> None:
        """Make sure the process is gone."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(10)
        if self.proc is not None:
            leaks.released(self.proc.pid)
        self._close_notify()

    def signal(self, sig: int) -> None:
        """Send a signal."""
        assert self.proc is not None
        self.proc.send_signal(sig)

    def _close_notify(self) -> None:
        if self._notify is not None:
            self._notify.close()
            self._notify = None

    def log_lines(self) -> list[dict[str, Any]]:
        """The daemon's JSON log lines."""
        lines = []
        for line in self.log.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                lines.append(json.loads(line[line.index("{") :]))
        return lines

    def log_tail(self, lines: int = 40) -> str:
        """The end of the log, for failure messages."""
        if not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    async def client(self) -> AsyncClient:
        """A connected client."""
        return await AsyncClient.connect(self.socket)


@pytest.fixture
def make_daemon() -> Iterator[Callable[..., Daemon]]:
    """Build daemons (not started) in a short temporary directory; all are killed at the end."""
    with daemons(owned_wider=False) as make:
        yield make


@contextlib.contextmanager
def daemons(*, owned_wider: bool = True) -> Iterator[Callable[..., Daemon]]:
    """What :func:`make_daemon` gives, for fixtures of a wider scope (one daemon per module):
    their daemons, started again by a test, may outlive it (``owned_wider``)."""
    base = Path(tempfile.mkdtemp(prefix="isccd-e2e-", dir="/tmp"))
    made: list[Daemon] = []

    def make(root: Path | None = None, **env: str) -> Daemon:
        where = base / f"d{len(made)}"
        where.mkdir()
        if root is None:
            root = where / "root"
            root.mkdir()
        daemon = Daemon(where, root, {k: str(v) for k, v in env.items()})
        daemon.owned_wider = owned_wider
        made.append(daemon)
        return daemon

    try:
        yield make
    finally:
        for daemon in made:
            daemon.kill()
        shutil.rmtree(base, ignore_errors=True)


async def next_event(
    client: AsyncClient, match: Callable[[Event], bool], timeout: float = 30
) -> Event:
    """The next event that ``match`` accepts (others are skipped)."""
    async with asyncio.timeout(timeout):
        async for event in client.events():
            if match(event):
                return event
    raise AssertionError("the subscription ended")


def of_type(kind: EventType, path: Path | str | None = None) -> Callable[[Event], bool]:
    """An event matcher by type and, optionally, path."""
    return lambda e: e.type is kind and (path is None or e.path == str(path))


async def events_until(daemon: Daemon, since: int, last: int) -> list[Event]:
    """What a subscriber resuming after ``since`` receives, up to the event ``last``."""
    client = await daemon.client()
    await client.subscribe(since=since)
    events: list[Event] = []
    async with asyncio.timeout(30):
        async for event in client.events():
            events.append(event)
            if event.seq >= last:
                break
    await client.close()
    return events
