"""A failure injected into each background loop of a running daemon is seen and acted on.

Each loop is made to fail through what it depends on (:mod:`tests.chaos.loops_daemon`): the
schedule through the pipeline's purge, the heartbeat and the status line through the notifier,
the feed through its clock, reloads and the start's re-evaluation through the pipeline. Every
failure must be logged with its traceback and shown in ``status`` and the systemd status line,
and the loop restarted, or the daemon stopped with the heartbeat silenced; none may be silent.
Store failures (the store's ``ENOSPC``, :class:`~isccd.errors.StoreFullError`) injected into the
loops that write degrade the store instead, and lose nothing.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from isccd.client import AsyncClient
from isccd.daemon.supervisor import Backoff, LoopFailedError
from isccd.errors import StoreFullError
from isccd.model import Event, EventType

from .loops_daemon import Clock, Notices, Running, running

#: Each test runs a daemon (in this process).
pytestmark = pytest.mark.slow

FULL = StoreFullError("the index database cannot grow: the disk is full (injected)")


def _run(main: Any) -> None:
    asyncio.run(asyncio.wait_for(main(), 90))


def _failed(logs: Sequence[Mapping[str, Any]], loop: str) -> list[Mapping[str, Any]]:
    return [e for e in logs if e["event"] == "loop_failed" and e["loop"] == loop]


async def _status_until(run: Running, check: Any, timeout: float = 20) -> Any:
    """``status`` over the socket until ``check(status)`` holds."""
    client = await run.client()
    try:
        async with asyncio.timeout(timeout):
            while not check(status := await client.status()):
                await asyncio.sleep(0.05)
    finally:
        await client.close()
    return status


async def _next(client: AsyncClient, kind: EventType, path: str | None = None) -> Event:
    async with asyncio.timeout(30):
        async for event in client.events():
            if event.type is kind and (path is None or event.path == path):
                return event
    raise AssertionError("the subscription ended")


async def _stops_with(run: Running, loop: str) -> None:
    """The daemon ends with the loop's failure, its heartbeat stopped first."""
    with pytest.raises(LoopFailedError) as failed:
        await asyncio.wait_for(asyncio.shield(run.task), 30)
    assert failed.value.loop == loop
    sent = run.notices.sent
    said = f"the {loop} loop failed"
    first = min(i for i, n in enumerate(sent) if "stopping" in n.get("STATUS", ""))
    assert said in sent[first]["STATUS"]
    assert not any("WATCHDOG" in n for n in sent[first:])
    assert any("STOPPING" in n for n in sent[first:])


# -- restarted -----------------------------------------------------------------------------------


def test_the_schedule_loop_is_restarted_and_its_failure_shown(short_dir: Path) -> None:
    async def main() -> None:
        base = short_dir
        with capture_logs() as logs:
            backoff = Backoff(initial=1.5, maximum=1.5, attempts=3)
            arm = {"purge": (RuntimeError("purge exploded"), 1)}  # the first round purges
            async with running(base, backoff=backoff, arm=arm) as run:
                status = await _status_until(run, lambda s: bool(s.problems))
                assert "the schedule loop failed" in status.problems[0]
                assert "purge exploded" in status.problems[0]
                assert any("the schedule loop failed" in s for s in run.notices.statuses())
                status = await _status_until(run, lambda s: not s.problems)  # restarted
                assert status.state == "ready"
                assert run.faults.calls["purge"] == 2  # the restarted loop purged again
        failed = _failed(logs, "schedule")
        assert [(f["action"], f["exc_info"]) for f in failed] == [("restart", True)]

    _run(main)


def test_the_heartbeat_loop_is_restarted(short_dir: Path) -> None:
    async def main() -> None:
        base = short_dir
        with capture_logs() as logs:
            notices = Notices(watchdog_usec=200_000)
            notices.fail["watchdog"] = 1
            async with running(base, notices=notices) as run:
                await notices.wait_for(lambda: notices.count("WATCHDOG") >= 2)
                assert run.daemon.config.roots  # still serving
        assert [f["action"] for f in _failed(logs, "heartbeat")] == ["restart"]

    _run(main)


# The status line is refreshed every 5 s.
def test_the_status_loop_is_restarted(short_dir: Path) -> None:
    async def main() -> None:
        base = short_dir
        with capture_logs() as logs:
            notices = Notices()
            async with running(base, notices=notices) as run:
                await _status_until(run, lambda s: all(r.scan is None for r in s.roots))
                # Idle: the status loop is the one that refreshes the line now.
                notices.fail["status"] = 1
                await notices.wait_for(lambda: notices.fail["status"] == 0)
                before = len(notices.statuses())
                await notices.wait_for(lambda: len(notices.statuses()) > before, timeout=15)
        assert [f["action"] for f in _failed(logs, "status")] == ["restart"]

    _run(main)


def test_a_restarted_feed_has_every_root_reconciled(short_dir: Path) -> None:
    async def main() -> None:
        base = short_dir
        with capture_logs() as logs:
            clock = Clock()
            clock.fail = 1  # the feed's first look at the clock
            async with running(base, clock=clock) as run:
                client = await run.client()
                await client.subscribe()
                new = run.root / "after.txt"
                new.write_text("a change seen by the restarted feed " * 10)
                await _next(client, EventType.FILE_ADDED, str(new))
                await client.close()
                async with asyncio.timeout(10):  # what the failed feed held is looked for
                    while not any(e.get("reason") == "feed restarted" for e in logs):
                        await asyncio.sleep(0.05)
        assert [f["action"] for f in _failed(logs, "feed")] == ["restart"]

    _run(main)


def test_the_start_s_re_evaluation_is_restarted(short_dir: Path) -> None:
    async def main() -> None:
        base = short_dir
        with capture_logs() as logs:
            arm = {"adopt": (RuntimeError("adopt exploded"), 1)}
            async with running(base, arm=arm) as run:
                await _status_until(run, lambda s: run.faults.calls.get("adopt", 0) >= 2)
                status = await _status_until(run, lambda s: not s.problems)
                assert status.state == "ready"
        assert [f["action"] for f in _failed(logs, "adopt")] == ["restart"]

    _run(main)


# -- stopped -------------------------------------------------------------------------------------


def test_a_loop_that_keeps_failing_stops_the_daemon_and_its_heartbeat(short_dir: Path) -> None:
    async def main() -> None:
        base = short_dir
        with capture_logs() as logs:
            notices = Notices(watchdog_usec=200_000)
            arm = {"purge": (RuntimeError("purge keeps exploding"), 1_000)}
            backoff = Backoff(initial=0.3, maximum=0.3, attempts=3)
            async with running(base, notices=notices, arm=arm, backoff=backoff) as run:
                await _stops_with(run, "schedule")
        assert [f["action"] for f in _failed(logs, "schedule")] == ["restart", "restart", "stop"]

    _run(main)


def test_a_reload_that_fails_half_way_stops_the_daemon(short_dir: Path) -> None:
    # A reload configures logging anew: its log is not captured here.
    async def main() -> None:
        base = short_dir
        config = base / "isccd.toml"
        config.write_text("[match]\ndata = 8\n")
        notices = Notices(watchdog_usec=400_000)
        async with running(base, notices=notices, config=config) as run:
            await _status_until(run, lambda s: run.faults.calls.get("adopt", 0) >= 1)
            run.faults.arm("adopt", RuntimeError("re-evaluation exploded"))
            config.write_text("[match]\ndata = 12\n")  # new thresholds: re-evaluated
            os.kill(os.getpid(), signal.SIGHUP)
            await _stops_with(run, "reloads")

    _run(main)


def test_a_refused_reload_shows_in_status_until_one_is_applied(short_dir: Path) -> None:
    async def main() -> None:
        base = short_dir
        config = base / "isccd.toml"
        config.write_text("[match]\ndata = 8\n")
        async with running(base, config=config) as run:
            config.write_text('[log]\nlevel = "loud"\n')
            os.kill(os.getpid(), signal.SIGHUP)
            status = await _status_until(run, lambda s: bool(s.problems))
            assert "was refused" in status.problems[0]
            assert "log.level" in status.problems[0]
            ready = [n for n in run.notices.sent if "READY" in n]
            assert "was refused" in ready[-1]["STATUS"]
            config.write_text("[match]\ndata = 8\n")
            os.kill(os.getpid(), signal.SIGHUP)
            await _status_until(run, lambda s: not s.problems)

    _run(main)


# -- store failures ------------------------------------------------------------------------------


def test_a_store_failure_in_the_schedule_degrades_the_store_until_it_recovers(
    short_dir: Path,
) -> None:
    async def main() -> None:
        base = short_dir
        with capture_logs() as logs:
            backoff = Backoff(initial=0.3, maximum=0.6)
            async with running(base, backoff=backoff) as run:
                watcher = await run.client()
                await watcher.subscribe()
                run.faults.arm("purge", FULL)
                run.faults.arm("write", FULL)
                # A change fails to be written: the store is degraded, subscribers are told.
                (run.root / "late.txt").write_text("written while the disk is full " * 20)
                notice = await _next(watcher, EventType.STORE_DEGRADED)
                assert "disk is full" in notice.data["reason"]
                status = await _status_until(run, lambda s: bool(s.problems))
                assert "cannot be written" in status.problems[0]
                assert any("cannot be written" in s for s in run.notices.statuses())
                # Space returns: the store recovers by itself, and the change is found again.
                async with asyncio.timeout(10):  # written again after a pause, and again
                    while run.faults.calls["write"] < 3:
                        await asyncio.sleep(0.05)
                run.faults.disarm("purge")
                run.faults.disarm("write")
                recovered = await _next(watcher, EventType.STORE_RECOVERED)
                assert recovered.seq > notice.seq
                added = await _next(watcher, EventType.FILE_ADDED, str(run.root / "late.txt"))
                assert added.seq > recovered.seq
                status = await _status_until(run, lambda s: not s.problems)
                assert status.files_indexed == 1
                await watcher.close()
        assert not _failed(logs, "queue")
        assert not [e for e in logs if e["event"] == "change_failed"]
        assert [e for e in logs if e["event"] == "change_deferred"]

    _run(main)


def test_a_reconcile_that_fails_on_the_store_is_done_again_once_it_can(short_dir: Path) -> None:
    async def main() -> None:
        base = short_dir
        (base / "root").mkdir()
        for i in range(5):
            (base / "root" / f"f{i}.txt").write_text(f"file {i} " * 50)
        arm = {"reconcile": (FULL, 1)}  # the startup reconcile
        async with running(base, arm=arm, backoff=Backoff(initial=0.3, maximum=0.3)) as run:
            status = await _status_until(run, lambda s: s.files_indexed == 5)
            assert not status.problems
            assert run.faults.calls["reconcile"] >= 2

    _run(main)
