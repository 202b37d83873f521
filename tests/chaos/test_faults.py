"""Faults of the machine under a real ``isccd run``: the state directory deleted, roots deleted,
replaced, moved away and back, missing at start, a directory unreadable then readable, the disk
of the store full. Each is noticed without ``sync`` or a reload, said (events, ``status``, the
log), and recovered from by itself, with nothing lost."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from isccd.client import AsyncClient
from isccd.errors import ProtocolError
from isccd.model import Event, EventType
from isccd.protocol import ErrorCode, event_to_wire
from isccd.results import DaemonStatus
from tests.e2e.conftest import Daemon, daemons, next_event, of_type
from tests.namespaces import unshare_tool
from tests.schemas import check

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow


@pytest.fixture
def make_daemon() -> Iterator[Callable[..., Daemon]]:
    with daemons() as make:
        yield make


def _files(root: Path, count: int, prefix: str = "f") -> list[Path]:
    made = []
    for i in range(count):
        path = root / f"{prefix}{i}.txt"
        path.write_text(f"{prefix} file number {i} with some words in it " * 20)
        made.append(path)
    return made


async def _until(
    client: AsyncClient, check: Callable[[DaemonStatus], bool], timeout: float = 30
) -> DaemonStatus:
    """``status`` until ``check(status)`` holds."""
    async with asyncio.timeout(timeout):
        while not check(status := await client.status()):
            await asyncio.sleep(0.05)
    return status


async def _events_until(
    client: AsyncClient, last: Callable[[Event], bool], timeout: float = 30
) -> list[Event]:
    """Every event up to and including the first that ``last`` accepts."""
    seen: list[Event] = []
    async with asyncio.timeout(timeout):
        async for event in client.events():
            seen.append(event)
            if last(event):
                return seen
    raise AssertionError("the subscription ended")


def _status_line_with(daemon: Daemon, text: str, timeout: float = 30) -> str:
    """The first systemd status line (from where the last look stopped) that says ``text``."""
    end = time.monotonic() + timeout
    while True:
        line = daemon.wait_notice("STATUS", max(0.1, end - time.monotonic()))["STATUS"]
        if text in line:
            return line


def test_a_deleted_state_directory_stops_the_daemon_with_74(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon()
    _files(daemon.root, 3)
    daemon.start()

    async def indexed() -> None:
        client = await daemon.client()
        await client.sync()
        await client.close()

    asyncio.run(indexed())
    shutil.rmtree(daemon.state)
    # Nothing else happens: the periodic check notices it.
    assert daemon.proc is not None
    assert daemon.proc.wait(15) == 74
    lines = daemon.log_lines()
    lost = [line for line in lines if line.get("event") == "store_lost"]
    assert lost
    assert "was deleted or replaced" in lost[0]["error"]
    assert [line for line in lines if line.get("event") == "store_unavailable"]


def test_a_change_after_the_state_directory_is_deleted_is_never_committed(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon()
    daemon.start()
    shutil.rmtree(daemon.state)
    (daemon.root / "new.txt").write_text("a change to a store that is gone " * 10)
    assert daemon.proc is not None
    assert daemon.proc.wait(15) == 74
    daemon.kill()  # closes its notification socket
    # A daemon can start on the directory again: it rebuilds the index.
    daemon.start()
    asyncio.run(_sync_and_count(daemon, 1))
    assert daemon.stop() == 0


async def _sync_and_count(daemon: Daemon, files: int) -> None:
    client = await daemon.client()
    await client.sync()
    status = await client.status()
    await client.close()
    assert status.files_indexed == files


def test_a_root_deleted_and_recreated_is_watched_again(make_daemon: Callable[..., Daemon]) -> None:
    daemon = make_daemon(ISCCD_WATCH__POLL_INTERVAL="60")  # the parent's watch is what notices
    _files(daemon.root, 4)
    backup = daemon.base / "backup"
    shutil.copytree(daemon.root, backup)
    daemon.start()

    async def scenario() -> None:
        control = await daemon.client()
        await control.sync()
        watcher = await daemon.client()
        await watcher.subscribe()
        shutil.rmtree(daemon.root)
        gone = await next_event(watcher, of_type(EventType.ROOT_UNAVAILABLE))
        assert gone.root == str(daemon.root)
        subprocess.run(["cp", "-a", str(backup), str(daemon.root)], check=True)
        back = await next_event(watcher, of_type(EventType.ROOT_AVAILABLE))
        # As subscribers read them: in the published shape (docs/schema/event.schema.json).
        check("event", event_to_wire(gone))
        check("event", event_to_wire(back))
        # Watched again: a new file is indexed live, with no sync and no reload.
        late = daemon.root / "late.txt"
        late.write_text("created after the root came back " * 10)
        await next_event(watcher, of_type(EventType.FILE_ADDED, late))
        status = await _until(control, lambda s: s.roots[0].note is None and s.files_indexed == 5)
        assert status.roots[0].watch_mode == "inotify"
        await control.close()
        await watcher.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert daemon.stop() == 0


def test_a_root_moved_away_is_unavailable_and_kept_then_comes_back(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon(ISCCD_WATCH__POLL_INTERVAL="60")
    files = _files(daemon.root, 4)
    away = daemon.base / "away"
    daemon.start()

    async def scenario() -> None:
        control = await daemon.client()
        await control.sync()
        watcher = await daemon.client()
        await watcher.subscribe()
        daemon.root.rename(away)
        await next_event(watcher, of_type(EventType.ROOT_UNAVAILABLE))
        status = await control.status()
        assert status.files_indexed == 4  # the index is kept
        assert status.roots[0].note is not None
        assert "unavailable" in status.roots[0].note
        # Changes in the moved tree are not taken for changes of the root.
        (away / files[0].name).unlink()
        (away / "elsewhere.txt").write_text("written in the moved tree " * 10)
        last = await control.sync()
        seen = await _events_until(watcher, lambda e: e.seq >= last)
        assert not [e for e in seen if e.type.value.startswith("file.")]
        assert (await control.status()).files_indexed == 4
        away.rename(daemon.root)
        # Reconciled by itself: the file deleted while away is removed, the new one added.
        seen = await _events_until(watcher, of_type(EventType.ROOT_AVAILABLE))
        assert {(e.type, e.path) for e in seen if e.type.value.startswith("file.")} == {
            (EventType.FILE_REMOVED, str(files[0])),
            (EventType.FILE_ADDED, str(daemon.root / "elsewhere.txt")),
        }
        late = daemon.root / "late.txt"
        late.write_text("created after the root came back " * 10)
        await next_event(watcher, of_type(EventType.FILE_ADDED, late))
        await control.close()
        await watcher.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert daemon.stop() == 0


def test_a_root_missing_at_start_is_picked_up_when_it_appears(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon(ISCCD_WATCH__POLL_INTERVAL="60")
    other = daemon.base / "other"
    other.mkdir()
    _files(other, 2)
    daemon.root.rmdir()
    daemon.start("--watch", str(other))  # besides the missing root

    async def scenario() -> None:
        control = await daemon.client()
        await control.sync()
        status = await control.status()
        missing = next(r for r in status.roots if r.path == str(daemon.root))
        assert missing.note is not None
        assert "unavailable" in missing.note
        assert status.files_indexed == 2  # the other root is served
        await asyncio.to_thread(_status_line_with, daemon, "1 unavailable")
        watcher = await daemon.client()
        await watcher.subscribe()
        # The disk appears with its files on it, all at once (as a mount does).
        plugged = daemon.base / "plugged"
        plugged.mkdir()
        (plugged / "a.txt").write_text("the disk was plugged in " * 10)
        plugged.rename(daemon.root)
        # The reconcile that finds it announces its files, then the root available.
        seen = await _events_until(watcher, of_type(EventType.ROOT_AVAILABLE))
        added = [e.path for e in seen if e.type is EventType.FILE_ADDED]
        assert added == [str(daemon.root / "a.txt")]
        await _until(control, lambda s: all(r.note is None for r in s.roots))
        await control.close()
        await watcher.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert daemon.stop() == 0


def test_a_directory_unreadable_at_start_is_watched_once_readable(
    make_daemon: Callable[..., Daemon],
) -> None:
    unshare = unshare_tool()
    daemon = make_daemon(ISCCD_WATCH__POLL_INTERVAL="60")  # the chmod itself is noticed
    locked = daemon.root / "locked"
    locked.mkdir()
    _files(locked, 2)
    _files(daemon.root, 1, prefix="open")
    locked.chmod(0)
    # Not as root, who reads whatever the mode bits say: as an unprivileged user of a user
    # namespace, mapped to this test's user (so the daemon's own files stay its own).
    daemon.wrap = [unshare, "--user", "--map-user=65534", "--map-group=65534"]
    daemon.start()

    async def scenario() -> None:
        control = await daemon.client()
        watcher = await daemon.client()
        await watcher.subscribe(since=0)
        degraded = await next_event(watcher, of_type(EventType.WATCH_DEGRADED))
        assert degraded.data["paths"] == [str(locked)]
        check("event", event_to_wire(degraded))
        assert "cannot be read" in degraded.data["reason"]
        status = await control.status()
        assert status.roots[0].watch_mode == "partial"
        assert status.roots[0].note is not None
        assert "cannot be read" in status.roots[0].note
        locked.chmod(0o755)
        # Tried again as its mode changes: the files are found, and the directory is watched.
        await _until(control, lambda s: s.files_indexed == 3 and s.roots[0].note is None)
        late = locked / "late.txt"
        late.write_text("written once the directory could be read " * 10)
        await next_event(watcher, of_type(EventType.FILE_ADDED, late))
        assert (await control.status()).roots[0].watch_mode == "inotify"
        await control.close()
        await watcher.close()

    try:
        asyncio.run(asyncio.wait_for(scenario(), 60))
    finally:
        locked.chmod(0o755)
    assert daemon.stop() == 0


def test_a_full_disk_degrades_the_store_and_the_index_converges_once_space_returns(
    make_daemon: Callable[..., Daemon],
) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs for the store needs root")
    daemon = make_daemon(ISCCD_LOG__LEVEL="warning")
    daemon.state.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(daemon.state)], check=True
    )
    try:
        _full_disk(daemon)
    finally:
        daemon.kill()
        subprocess.run(["umount", "-l", str(daemon.state)], check=False)


def _full_disk(daemon: Daemon) -> None:
    # 800 files take a store of about 1.2 MB and a write-ahead log of 4 MB.
    count = 800
    for i in range(count):
        (daemon.root / f"{i:05}.txt").write_text(f"file {i} " + "word " * (i % 50))
    ballast = daemon.state / "ballast"
    # Room for the empty store and a little more: the startup reconcile fills the rest.
    ballast.write_bytes(b"\0" * (7 * 1024 * 1024))
    daemon.start()

    async def scenario() -> None:
        control = await daemon.client()
        watcher = await daemon.client()
        await watcher.subscribe()
        status = await _until(control, lambda s: bool(s.problems), timeout=60)
        assert "cannot be written" in status.problems[0]
        await asyncio.to_thread(_status_line_with, daemon, "cannot be written")
        # The barrier cannot promise that the changes are indexed: it says why, never ok.
        with pytest.raises(ProtocolError, match="degraded: the store cannot be written") as info:
            await control.sync()
        assert info.value.code == ErrorCode.UNAVAILABLE
        ballast.unlink()  # space returns
        recovered = await next_event(watcher, of_type(EventType.STORE_RECOVERED), timeout=90)
        check("event", event_to_wire(recovered))
        await _until(control, lambda s: s.files_indexed == count and not s.problems, 120)
        await control.sync()  # ok again
        await control.close()
        await watcher.close()

    asyncio.run(asyncio.wait_for(scenario(), 240))
    assert daemon.stop() == 0
    lines = daemon.log_lines()
    assert [line for line in lines if line.get("event") == "store_degraded"]
    assert not [line for line in lines if line.get("event") == "change_failed"]


@pytest.mark.parametrize("where", ["state", "parent"])
def test_a_read_only_state_directory_stops_the_start_with_73_and_says_where(
    make_daemon: Callable[..., Daemon], where: str
) -> None:
    """The state directory on a read-only file system (or under one, so it cannot be made): a
    clear message naming it, exit 73 (EX_CANTCREAT), no traceback."""
    if os.geteuid() != 0:
        pytest.skip("mounting a read-only tmpfs needs root")
    daemon = make_daemon()
    mounted = daemon.state if where == "state" else daemon.base / "ro"
    mounted.mkdir()
    if where == "parent":
        daemon.state = mounted / "state"
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", str(mounted)], check=True)
    try:
        with pytest.raises(AssertionError, match="exited with 73"):
            daemon.start()
    finally:
        daemon.kill()
        subprocess.run(["umount", "-l", str(mounted)], check=False)
    log = daemon.log.read_text()
    assert "Traceback" not in log
    [line] = [line for line in daemon.log_lines() if line.get("event") == "state_not_writable"]
    assert line["error"].startswith(f"the state directory {daemon.state} cannot be written")
    assert "Read-only file system" in line["error"]
