"""An idle daemon lets go of its hashing workers and their fork server (``[hashing]
idle_timeout``), with a real daemon: after the quiet period it is its own process and
multiprocessing's resource tracker, and a copy made then still raises ``dup.exact``, from workers
started again for it, about as soon as a copy with the workers running plus a start of the fork
server, both measured in the same run (the machine may be busy: no bound in seconds holds)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from isccd.client import AsyncClient
from isccd.forkserver import PRELOAD
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


def _fork_server_start() -> float:
    """Seconds a Python process takes now to import what the fork server preloads: what waking
    the workers costs at least, on this machine under its present load."""
    started = time.monotonic()
    imports = "; ".join(f"import {module}" for module in PRELOAD)
    subprocess.run([sys.executable, "-c", imports], check=True, env=dict(os.environ))
    return time.monotonic() - started


async def _copy_latency(watcher: AsyncClient, original: Path, copy: Path) -> float:
    """Copy ``original`` to ``copy``; the seconds until the daemon announces ``dup.exact``."""
    shutil.copyfile(original, copy)
    closed = time.monotonic()
    event = await next_event(watcher, of_type(EventType.DUP_EXACT, copy), timeout=120)
    assert str(original) in [o["path"] for o in event.data["others"]]
    return time.monotonic() - closed


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
    copy, second = daemon.root / "copy.txt", daemon.root / "second.txt"
    daemon.start()

    async def scenario() -> None:
        control = await daemon.client()
        watcher = await daemon.client()
        await control.sync()
        await watcher.subscribe()
        status = await _until_idle(control)
        assert status.hashing == HashingStatus(workers=0, state="idle", idle_timeout=1.0)
        _idle_tree(daemon)

        start = _fork_server_start()
        cold = await _copy_latency(watcher, original, copy)
        # At once, while the workers started for the first copy still run (if the machine
        # is so slow that they were let go meanwhile, this only raises the bound).
        warm = await _copy_latency(watcher, original, second)
        start = max(start, _fork_server_start())  # the load may have grown meanwhile
        # Woken when the watcher sees the change, the workers start while it settles: the
        # cold copy costs about a warm one plus a fork server's start, with room for forking
        # the workers; never, say, a wait for another quiet period or a retry's pause.
        assert cold <= 2 * (warm + start), (cold, warm, start)

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
    assert lines[:4] == [
        ("file_processed", str(original)),
        ("workers_idle", None),
        ("workers_waking", None),
        ("file_processed", str(copy)),
    ]
    # The second copy was hashed by those workers (or, on a machine too slow to make it within
    # the quiet period, by workers woken again for it).
    hashed = [("file_processed", str(second)), ("workers_idle", None)]
    woken_again = [("workers_idle", None), ("workers_waking", None), *hashed]
    assert lines[4:] in (hashed, woken_again), lines
