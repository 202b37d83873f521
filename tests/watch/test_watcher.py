"""The watcher on real directories with real inotify: changes, moves, new directories, queue
overflow, and watch-limit exhaustion (in a user namespace with a lowered limit)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from isccd.watch.debounce import Change, ChangeKind, Recrawl, RecrawlReason
from isccd.watch.watcher import (
    Degradation,
    Watcher,
    WatcherClosedError,
    WatcherOptions,
    WatchMode,
)
from tests.namespaces import unshare_tool

Notice = Change | Recrawl | Degradation


class Collector:
    """Collects what the watcher reports and waits, without sleeping, for what a test expects."""

    def __init__(self) -> None:
        self.seen: list[Notice] = []
        self._changed = asyncio.Event()

    def add(self, notice: Notice) -> None:
        self.seen.append(notice)
        self._changed.set()

    async def wait_for(self, predicate: Callable[[Notice], bool], timeout: float = 10) -> Notice:
        checked = 0
        async with asyncio.timeout(timeout):
            while True:
                for notice in self.seen[checked:]:
                    if predicate(notice):
                        return notice
                checked = len(self.seen)
                self._changed.clear()
                await self._changed.wait()


def _watcher(collector: Collector, **options: object) -> Watcher:
    return Watcher(
        asyncio.get_running_loop(),
        WatcherOptions(**options),  # type: ignore[arg-type]
        collector.add,
        collector.add,
        collector.add,
    )


def _change(kind: ChangeKind, path: Path, dest: Path | None = None) -> Callable[[Notice], bool]:
    def match(n: Notice) -> bool:
        return (
            isinstance(n, Change)
            and n.kind is kind
            and n.path == str(path)
            and (dest is None or n.dest == str(dest))
        )

    return match


@pytest.mark.slow
def test_changes_moves_and_new_directories(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "old.txt").write_text("x")
    (outside / "incoming.txt").write_text("y")

    async def main() -> None:
        collector = Collector()
        watcher = _watcher(collector)
        status = await asyncio.to_thread(watcher.watch, str(root))
        assert status.mode is WatchMode.INOTIFY
        try:
            (root / "a.txt").write_text("hello")
            await collector.wait_for(_change(ChangeKind.TOUCHED, root / "a.txt"))
            (root / "a.txt").rename(root / "b.txt")
            await collector.wait_for(_change(ChangeKind.MOVED, root / "a.txt", root / "b.txt"))
            (root / "d" / "sub").mkdir(parents=True)
            (root / "d" / "sub" / "x.txt").write_text("x")
            await collector.wait_for(_change(ChangeKind.DIR_ADDED, root / "d"))
            (root / "d").rename(root / "e")
            moved = await collector.wait_for(_change(ChangeKind.MOVED, root / "d", root / "e"))
            assert isinstance(moved, Change)
            assert moved.is_dir
            (root / "b.txt").unlink()
            await collector.wait_for(_change(ChangeKind.REMOVED, root / "b.txt"))
            (root / "old.txt").rename(outside / "old.txt")
            await collector.wait_for(_change(ChangeKind.REMOVED, root / "old.txt"))
            (outside / "incoming.txt").rename(root / "incoming.txt")
            await collector.wait_for(_change(ChangeKind.TOUCHED, root / "incoming.txt"))
            # Reading a file is not a change: inotify keeps order, so once the marker's event
            # is here, any event caused by the read would have come before it.
            count = len(collector.seen)
            (root / "incoming.txt").read_bytes()
            (root / "marker").write_text("m")
            await collector.wait_for(_change(ChangeKind.TOUCHED, root / "marker"))
            after = collector.seen[count:]
            assert all(isinstance(n, Change) and n.path.endswith("marker") for n in after)
            # No synthetic child moves for the directory rename.
            assert not any(
                isinstance(n, Change) and n.kind is ChangeKind.MOVED and "/sub" in n.path
                for n in collector.seen
            )
        finally:
            await asyncio.to_thread(watcher.close)
        assert watcher.roots() == []

    asyncio.run(main())


def test_watching_leaves_the_process_wide_warning_filters_alone(tmp_path: Path) -> None:
    # watchdog warns when a tree created quickly makes it add a directory's watch callback
    # twice; the watcher keeps that quiet without a warnings filter, which would change what
    # every thread of the process is warned about.
    before = list(warnings.filters)

    async def main() -> None:
        collector = Collector()
        watcher = _watcher(collector)
        await asyncio.to_thread(watcher.watch, str(tmp_path))
        try:
            deep = tmp_path.joinpath(*"abcdefgh")
            deep.mkdir(parents=True)
            (deep / "x").write_text("x")
            await collector.wait_for(_change(ChangeKind.DIR_ADDED, tmp_path / "a"))
        finally:
            await asyncio.to_thread(watcher.close)

    asyncio.run(main())
    assert warnings.filters == before


#: Watches a root and says so; once stopped and continued, reports the overflow it heard of and
#: that watching went on.
_STALLED = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from isccd.watch.watcher import Watcher, WatcherOptions

    root = sys.argv[1]

    async def main():
        seen = []
        changed = asyncio.Event()
        def add(n):
            seen.append(n)
            changed.set()
        async def wait_for(predicate):
            async with asyncio.timeout(60):
                while not any(predicate(n) for n in seen):
                    changed.clear()
                    await changed.wait()
            return next(n for n in seen if predicate(n))
        watcher = Watcher(asyncio.get_running_loop(), WatcherOptions(), add, add, add)
        await asyncio.to_thread(watcher.watch, root)
        print("watching", flush=True)
        recrawl = await wait_for(lambda n: type(n).__name__ == "Recrawl")
        (status,) = watcher.status()
        Path(root, "after").write_text("x")
        await wait_for(lambda n: getattr(n, "path", "") == root + "/after")
        await asyncio.to_thread(watcher.close)
        print(json.dumps({"recrawl": [recrawl.root, recrawl.reason],
                          "overflows": status.overflows, "hint": status.hint}))

    asyncio.run(main())
    """
)


@pytest.mark.slow
def test_a_kernel_queue_overflow_is_reported_as_a_recrawl(tmp_path: Path) -> None:
    # A stalled process (stopped here) leaves the events queued in the kernel while more than
    # fs.inotify.max_queued_events (16384 by default) are produced; then it reads them.
    out = _overflowed(_STALLED, tmp_path, tmp_path)
    data = json.loads(out)
    assert data["recrawl"] == [str(tmp_path), RecrawlReason.OVERFLOW.value]
    assert data["overflows"] >= 1
    assert data["hint"].startswith("fs.inotify.max_queued_events=")


#: Watches the parent of a root and says so; once stopped and continued, waits until it is told
#: of the root (the overflow), then until it is told again of a change of the root's entry in
#: its parent: the reader went on after the overflow.
_PARENT_STALLED = textwrap.dedent(
    """
    import asyncio, os, sys
    from isccd.watch.presence import ParentWatch

    root = sys.argv[1]

    async def main():
        told = asyncio.Queue()
        watch = ParentWatch(asyncio.get_running_loop(), told.put_nowait)
        assert await asyncio.to_thread(watch.add, root)
        print("watching", flush=True)
        async with asyncio.timeout(60):
            assert await told.get() == root  # the overflow: any root may have changed
            while not told.empty():
                told.get_nowait()
            os.chmod(root, 0o700)
            assert await told.get() == root
        await asyncio.to_thread(watch.close)
        print("told", flush=True)

    asyncio.run(main())
    """
)


@pytest.mark.slow
def test_a_parent_watch_tells_of_its_roots_on_an_overflow_and_goes_on(tmp_path: Path) -> None:
    # The parents of the roots have their own inotify instance: an overflow of its queue
    # tells of every root, and its reader carries on.
    root = tmp_path / "root"
    root.mkdir()
    out = _overflowed(_PARENT_STALLED, root, tmp_path)  # files beside the root, in its parent
    assert out == "told\n"


def _overflowed(script: str, watched: Path, flooded: Path) -> str:
    """The output of ``script`` watching ``watched``, stopped once it says it is watching
    while more events than ``fs.inotify.max_queued_events`` (16384 by default) are made in
    ``flooded``, then continued; it must exit 0 without a traceback."""
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(watched)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "watching\n"
        os.kill(child.pid, signal.SIGSTOP)
        _wait_until_stopped(child.pid)
        _create_files(flooded, limit + 1000)
        os.kill(child.pid, signal.SIGCONT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 0, err
    assert "Traceback" not in err, err
    return out


def _wait_until_stopped(pid: int) -> None:
    """Wait until the kernel has stopped ``pid`` (a signal is delivered asynchronously)."""
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
        assert time.monotonic() < deadline, f"process {pid} did not stop"
        time.sleep(0.001)


def _create_files(directory: Path, count: int) -> None:
    for i in range(count):
        fd = os.open(directory / f"f{i}", os.O_CREAT | os.O_WRONLY, 0o644)
        os.close(fd)


def test_forced_polling_polls_the_whole_root(tmp_path: Path) -> None:
    async def main() -> None:
        collector = Collector()
        watcher = _watcher(collector, force_polling=True)
        status = await asyncio.to_thread(watcher.watch, str(tmp_path))
        assert status.mode is WatchMode.POLLING
        assert watcher.polled_paths() == [(str(tmp_path), str(tmp_path))]
        assert collector.seen == []  # asked for, so not announced as a degradation
        await asyncio.to_thread(watcher.close)

    asyncio.run(main())


def test_a_remote_root_is_polled_and_announced(tmp_path: Path) -> None:
    real = str(tmp_path.resolve())
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        "22 1 254:0 / / rw - ext4 /dev/vda rw\n"
        f"40 22 0:50 / {real} rw - nfs4 server:/export rw\n"
        f"41 40 0:51 / {real}/deeper rw - ext4 /dev/vdb rw\n"
    )

    async def main() -> None:
        collector = Collector()
        watcher = _watcher(collector, mountinfo=mountinfo)
        status = await asyncio.to_thread(watcher.watch, str(tmp_path))
        assert status.mode is WatchMode.POLLING
        assert status.fstype == "nfs4"
        notice = await collector.wait_for(lambda n: isinstance(n, Degradation))
        assert isinstance(notice, Degradation)
        assert notice.paths == (str(tmp_path),)
        assert "nfs4" in notice.reason
        await asyncio.to_thread(watcher.close)

    asyncio.run(main())


def test_a_remote_mount_below_a_root_is_polled(tmp_path: Path) -> None:
    real = str(tmp_path.resolve())
    (tmp_path / "share").mkdir()
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        "22 1 254:0 / / rw - ext4 /dev/vda rw\n"
        f"40 22 0:50 / {real}/share rw - fuse.sshfs me@host:/x rw\n"
    )

    async def main() -> None:
        collector = Collector()
        watcher = _watcher(collector, mountinfo=mountinfo)
        status = await asyncio.to_thread(watcher.watch, str(tmp_path))
        assert status.mode is WatchMode.PARTIAL
        assert watcher.polled_paths() == [(str(tmp_path), str(tmp_path / "share"))]
        (tmp_path / "share").rmdir()
        assert watcher.polled_paths() == []
        await asyncio.to_thread(watcher.close)

    asyncio.run(main())


def test_a_missing_root_is_an_error(tmp_path: Path) -> None:
    async def main() -> None:
        watcher = _watcher(Collector())
        with pytest.raises(FileNotFoundError):
            await asyncio.to_thread(watcher.watch, str(tmp_path / "nope"))
        assert watcher.roots() == []

    asyncio.run(main())


#: Runs in a user namespace, where inotify limits can be lowered without touching the host's.
_LIMITED = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from isccd.watch.watcher import Watcher, WatcherOptions

    root, watches, instances = sys.argv[1], sys.argv[2], sys.argv[3]
    Path("/proc/sys/user/max_inotify_watches").write_text(watches)
    Path("/proc/sys/user/max_inotify_instances").write_text(instances)

    async def main():
        seen = []
        done = asyncio.Event()
        def add(n):
            seen.append(type(n).__name__ + ":" + str(getattr(n, "reason", "")))
            if type(n).__name__ == "Recrawl":
                done.set()
        watcher = Watcher(asyncio.get_running_loop(), WatcherOptions(), add, add, add)
        status = await asyncio.to_thread(watcher.watch, root)
        if status.mode != "polling":
            await asyncio.wait_for(done.wait(), 10)
        (status,) = watcher.status()
        polled = [p for _, p in watcher.polled_paths()]
        await asyncio.to_thread(watcher.close)
        print(json.dumps({"mode": status.mode, "polled": polled, "seen": seen,
                          "fix": [d.fix for d in status.degradations]}))

    asyncio.run(main())
    """
)


def _run_limited(root: Path, watches: int, instances: int = 128) -> dict[str, Any]:
    unshare = unshare_tool()
    limits = [str(watches), str(instances)]
    result = subprocess.run(
        [unshare, "--user", "--map-root-user", sys.executable, "-c", _LIMITED, str(root), *limits],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_watch_limit_exhaustion_polls_the_subtrees_it_could_not_watch(tmp_path: Path) -> None:
    for i in range(6):
        (tmp_path / f"d{i}" / "sub").mkdir(parents=True)
    # Room for the root and a few directories, not for all thirteen.
    data = _run_limited(tmp_path, watches=5)
    assert data["mode"] == "partial"
    polled = data["polled"]
    assert isinstance(polled, list)
    assert polled
    # Outermost only: a polled directory's children are not listed again.
    assert not any(p != q and p.startswith(q + "/") for p in polled for q in polled)
    assert "Degradation:inotify watch limit reached (5 watches)" in data["seen"]
    assert "Recrawl:watch_limit" in data["seen"]
    # In the namespace the namespace's own limit binds, and that is the one to raise.
    assert data["fix"] == ["user.max_inotify_watches=524288"]


def test_no_watch_at_all_polls_the_root(tmp_path: Path) -> None:
    data = _run_limited(tmp_path, watches=0)
    assert data["mode"] == "polling"
    assert data["polled"] == [str(tmp_path)]


@pytest.mark.slow
def test_no_inotify_instance_polls_the_root(tmp_path: Path) -> None:
    data = _run_limited(tmp_path, watches=100, instances=0)
    assert data["mode"] == "polling"
    assert data["fix"] == ["user.max_inotify_instances=1024"]


class RootEvents:
    """Collects the roots the watcher tells of (``on_root``)."""

    def __init__(self) -> None:
        self.told: list[str] = []
        self._changed = asyncio.Event()

    def add(self, root: str) -> None:
        self.told.append(root)
        self._changed.set()

    async def wait(self, count: int, timeout: float = 10) -> None:
        async with asyncio.timeout(timeout):
            while len(self.told) < count:
                self._changed.clear()
                await self._changed.wait()


def test_a_root_moved_away_is_told_and_its_tree_is_no_longer_reported(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    away = tmp_path / "away"

    async def main() -> None:
        collector, roots = Collector(), RootEvents()
        loop = asyncio.get_running_loop()
        add = collector.add
        watcher = Watcher(loop, WatcherOptions(), add, add, add, on_root=roots.add)
        await asyncio.to_thread(watcher.track, str(root))
        await asyncio.to_thread(watcher.watch, str(root))
        try:
            assert not await asyncio.to_thread(watcher.stale, str(root))
            root.rename(away)
            await roots.wait(1)
            assert set(roots.told) == {str(root)}
            assert await asyncio.to_thread(watcher.stale, str(root))
            # The moved tree is still watched by the kernel: its changes must not be taken
            # for changes under the root's path.
            (away / "sub" / "x.txt").write_text("x")
            (away / "marker").write_text("m")
            away.rename(root)  # and back: the parent's watch tells
            await roots.wait(2)
            # Detached for good: the watch's own "moved" event may be read after the parent's
            # under load, so it is waited for (the same inode is back at the path).
            async with asyncio.timeout(10):
                while not await asyncio.to_thread(watcher.stale, str(root)):
                    await asyncio.sleep(0.02)
            assert not [n for n in collector.seen if isinstance(n, Change)]
        finally:
            await asyncio.to_thread(watcher.close)

    asyncio.run(main())


def test_a_root_deleted_and_created_again_is_told_and_stale(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a")

    async def main() -> None:
        collector, roots = Collector(), RootEvents()
        loop = asyncio.get_running_loop()
        add = collector.add
        watcher = Watcher(loop, WatcherOptions(), add, add, add, on_root=roots.add)
        await asyncio.to_thread(watcher.track, str(root))
        await asyncio.to_thread(watcher.watch, str(root))
        try:
            (root / "a.txt").unlink()
            await collector.wait_for(_change(ChangeKind.REMOVED, root / "a.txt"))
            root.rmdir()
            await roots.wait(1)
            # The root's own removal is not a removal of everything below it.
            assert not [n for n in collector.seen if isinstance(n, Change) and n.path == str(root)]
            root.mkdir()
            await roots.wait(len(roots.told) + 1)  # its parent saw it come back
            assert await asyncio.to_thread(watcher.stale, str(root))
            await asyncio.to_thread(watcher.unwatch, str(root))
            await asyncio.to_thread(watcher.watch, str(root))
            assert not await asyncio.to_thread(watcher.stale, str(root))
        finally:
            await asyncio.to_thread(watcher.close)

    asyncio.run(main())


def test_an_observer_that_fails_to_stop_is_let_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # watchdog keys its inotify watches by path, and a watched directory swapped for a symbolic
    # link can make its stop fail (KeyError): closing the watcher must still end, or the
    # daemon never exits.
    from watchdog.observers.api import BaseObserver

    def failing(self: BaseObserver) -> None:
        raise KeyError(b"/a/directory/swapped/for/a/link")

    monkeypatch.setattr(BaseObserver, "on_thread_stop", failing)
    before = set(threading.enumerate())
    root = tmp_path / "root"
    root.mkdir()

    async def main() -> None:
        collector = Collector()
        watcher = _watcher(collector)
        await asyncio.to_thread(watcher.watch, str(root))
        await asyncio.wait_for(asyncio.to_thread(watcher.close), 15)
        assert watcher.roots() == []

    asyncio.run(main())
    assert [r for r in caplog.records if r.getMessage() == "watch_stop_failed"]
    # The inotify reader went too (the observer's own thread ends at its next poll).
    assert not [t for t in set(threading.enumerate()) - before if "Inotify" in type(t).__name__]


def _inotify_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if "Inotify" in type(t).__name__}


@pytest.mark.slow
def test_a_closed_watcher_starts_no_thread(tmp_path: Path) -> None:
    # The daemon closes its watcher first when it stops, while the loop that checks the roots
    # still runs: a root's parent tracked, or a root watched, after the close must not start an
    # inotify reader that nothing would ever stop.
    root = tmp_path / "root"
    root.mkdir()

    async def main() -> None:
        watcher = _watcher(Collector())
        await asyncio.to_thread(watcher.track, str(root))
        await asyncio.to_thread(watcher.watch, str(root))
        await asyncio.to_thread(watcher.close)
        before = _inotify_threads()
        assert not await asyncio.to_thread(watcher.track, str(root))
        with pytest.raises(WatcherClosedError):
            await asyncio.to_thread(watcher.watch, str(root))
        assert watcher.roots() == []
        assert _inotify_threads() - before == set()

    asyncio.run(main())
