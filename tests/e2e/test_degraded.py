"""A root with more directories than inotify may watch: the daemon says so, with the sysctl that
would fix it, polls what it cannot watch, and still indexes changes there.

The daemon runs in a user namespace where ``user.max_inotify_watches`` is lowered, so the host's
limits are not touched.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from isccd.model import Event, EventType
from tests.namespaces import unshare_tool

from .conftest import Daemon, next_event, of_type

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow


def test_unwatchable_subtrees_are_polled_and_reported(make_daemon: Callable[..., Daemon]) -> None:
    unshare = unshare_tool()
    daemon = make_daemon(ISCCD_WATCH__POLL_INTERVAL="0.5", ISCCD_WATCH__RECONCILE_INTERVAL="2")
    for i in range(8):
        (daemon.root / f"d{i}" / "inner").mkdir(parents=True)
    # Room for a few watches only: the root's and some directories'.
    daemon.wrap = [
        unshare,
        "--user",
        "--map-root-user",
        "sh",
        "-c",
        'echo 4 > /proc/sys/user/max_inotify_watches && exec "$@"',
        "sh",
    ]
    daemon.start()

    async def scenario() -> None:
        control = await daemon.client()
        watcher = await daemon.client()
        await watcher.subscribe(since=0)
        degraded = await next_event(watcher, of_type(EventType.WATCH_DEGRADED))
        assert degraded.root == str(daemon.root)
        assert "watch limit" in degraded.data["reason"]
        assert degraded.data["fix"] == "user.max_inotify_watches=524288"
        (root_status,) = (await control.status()).roots
        assert root_status.watch_mode == "partial"
        assert root_status.note is not None
        assert "sysctl user.max_inotify_watches=524288" in root_status.note
        polled = degraded.data["paths"]
        assert polled
        # A file created in a polled directory is found by the poll.
        target = Path(polled[0]) / "late.txt"
        target.write_text("written where no inotify watch is")
        await next_event(watcher, of_type(EventType.FILE_ADDED, target), timeout=30)
        # The safety reconcile runs on its own (every 2 s here) and ends in scan.done; the
        # polls of subtrees (every 0.5 s) are part of watching and are not announced.
        subtree_done = []

        def periodic_done(event: Event) -> bool:
            if event.type is EventType.SCAN_DONE and event.data["start"] != str(daemon.root):
                subtree_done.append(event)
            return event.type is EventType.SCAN_DONE and periodic()

        await next_event(watcher, periodic_done)
        assert subtree_done == []
        # The administrator raises the limit and reloads: the root is watched whole again.
        nsenter = shutil.which("nsenter")
        if nsenter is not None:
            assert daemon.proc is not None
            raise_limit = "echo 100000 > /proc/sys/user/max_inotify_watches"
            command = [nsenter, "--user", "--target", str(daemon.proc.pid), "sh", "-c"]
            subprocess.run([*command, raise_limit], check=True)
            daemon.signal(signal.SIGHUP)
            await asyncio.to_thread(daemon.wait_notice, "RELOADING")
            await asyncio.to_thread(daemon.wait_notice, "READY")
            # Watched whole again: the old watch's end may wake the root's presence check,
            # which watches it once more, and for that moment it is shown polled.
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30
            while True:
                (root_status,) = (await control.status()).roots
                if root_status.watch_mode == "inotify" or loop.time() > deadline:
                    break
                await asyncio.sleep(0.1)  # a status asked again, not a wait for time to pass
            assert root_status.watch_mode == "inotify", "\n".join(
                str(line) for line in daemon.log_lines()[-40:]
            )
            assert root_status.note is None
        await control.close()
        await watcher.close()

    def periodic() -> bool:
        return any(
            line.get("event") == "reconcile_done" and line.get("reason") == "periodic"
            for line in daemon.log_lines()
        )

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert daemon.stop() == 0
