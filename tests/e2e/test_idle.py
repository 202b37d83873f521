"""An idle daemon lets go of its hashing workers and their fork server (``[hashing]
idle_timeout``), with a real daemon: after the quiet period it is its own process and
multiprocessing's resource tracker, and a copy made then still raises ``dup.exact`` within the
settle time plus one second, from workers started again for it."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Callable

import pytest

from isccd.client import AsyncClient
from isccd.model import EventType
from isccd.results import DaemonStatus, HashingStatus
from tests import leaks

from .conftest import Daemon, next_event, of_type

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow

SETTLE = 0.25


async def _until_idle(client: AsyncClient, timeout: float = 20) -> DaemonStatus:
    """The daemon's status once its workers are let go (polled: the quiet period runs in it)."""
    deadline = time.monotonic() + timeout
    while True:
        status = await client.status()
        if status.hashing is not None and status.hashing.state == "idle":
            return status
        assert time.monotonic() < deadline, f"still {status.hashing} after {timeout} s"
        await asyncio.sleep(0.05)


def _idle_tree(daemon: Daemon) -> None:
    """The daemon's processes are only multiprocessing's resource tracker."""
    assert daemon.proc is not None
    kinds = leaks.by_kind(daemon.proc.pid)
    assert (kinds["fork server"], kinds["workers"], kinds["other"]) == ([], [], [])
    assert len(kinds["resource tracker"]) <= 1


def test_an_idle_daemon_lets_go_of_its_workers_and_wakes_them_for_the_next_file(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon(
        ISCCD_HASHING__IDLE_TIMEOUT="1", ISCCD_HASHING__WORKERS="2", ISCCD_WATCH__SETTLE=str(SETTLE)
    )
    original = daemon.root / "report.txt"
    original.write_text("the quarterly report, in words that repeat " * 40)
    copy = daemon.root / "copy.txt"
    daemon.start()

    async def scenario() -> None:
        control = await daemon.client()
        watcher = await daemon.client()
        await control.sync()
        await watcher.subscribe()
        status = await _until_idle(control)
        assert status.hashing == HashingStatus(workers=0, state="idle", idle_timeout=1.0)
        _idle_tree(daemon)

        shutil.copyfile(original, copy)
        closed = time.monotonic()
        event = await next_event(watcher, of_type(EventType.DUP_EXACT, copy), timeout=10)
        latency = time.monotonic() - closed
        assert latency <= SETTLE + 1.0, latency
        assert [o["path"] for o in event.data["others"]] == [str(original)]

        await _until_idle(control)
        _idle_tree(daemon)
        await control.close()
        await watcher.close()

    asyncio.run(scenario())
    assert daemon.stop() == 0
    # The workers were let go, started again for the copy (which they hashed), let go again.
    lines = [
        (line["event"], line.get("path"))
        for line in daemon.log_lines()
        if line.get("event") in {"workers_idle", "workers_waking", "file_processed"}
    ]
    assert lines == [
        ("file_processed", str(original)),
        ("workers_idle", None),
        ("workers_waking", None),
        ("file_processed", str(copy)),
        ("workers_idle", None),
    ]
