"""A root whose disk is unmounted is not emptied; a root that moved to another device with its
files is re-identified without a storm of events.

Nothing can be mounted here, so a device change is simulated on the other side: the test
rewrites the device the store recorded (for the root, and for its files where a remount keeps
inodes), while the directory stays where it is. What this proves is the reconcile's decision
given a recorded device that differs from the root's ``st_dev``, and what it does then; that the
kernel reports another ``st_dev`` for a remounted disk is the premise, not tested.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from isccd.daemon.scans import Scans
from isccd.model import EventType
from isccd.store import DB_NAME
from isccd.walk import IssueReason, ScanOptions
from tests.pipeline.harness import FamilyHasher, Harness, kinds

#: A device number no test directory is on.
ELSEWHERE = 0x7FFF_0042


def _harness(tmp_path: Path, hasher: FamilyHasher) -> Harness:
    return Harness(tmp_path, hasher=hasher)


def _indexed(tmp_path: Path, names: list[str]) -> tuple[FamilyHasher, Harness]:
    hasher = FamilyHasher()
    h = _harness(tmp_path, hasher)
    for i, name in enumerate(names):
        h.write(name, f"F{i}:0")
    h.scan()
    return hasher, h


def _rewrite(tmp_path: Path, sql: str, *params: object) -> None:
    """Change the closed store behind the pipeline's back."""
    conn = sqlite3.connect(tmp_path / "state" / DB_NAME)
    try:
        conn.execute(sql, params)
        conn.commit()
    finally:
        conn.close()


def _elsewhere(tmp_path: Path, *, files: bool = False) -> None:
    """Let the store believe the root (and, with ``files``, its files) was on ``ELSEWHERE``."""
    _rewrite(tmp_path, "UPDATE roots SET dev = ?", ELSEWHERE)
    if files:
        _rewrite(tmp_path, "UPDATE files SET dev = ?", ELSEWHERE)


def _recorded(h: Harness) -> int | None:
    root = str(h.root)
    return h.read(lambda store: store.root_device(root))  # type: ignore[no-any-return]


def _live(h: Harness) -> dict[str, int]:
    files = h.stored()
    return {f.path.rsplit("/", 1)[-1]: f.record.stat.dev for f in files}


NAMES = ["a", "b", "sub/c", "sub/d"]


def test_an_empty_mount_point_on_another_device_keeps_the_index(
    tmp_path: Path, json_log: Callable[[], list[dict[str, Any]]]
) -> None:
    hasher, h = _indexed(tmp_path, NAMES)
    assert _recorded(h) == h.root.stat().st_dev
    h.close()
    # The disk is unmounted: its files are out of reach, the mount point is (nearly) empty and
    # on the parent's device, which is not the one recorded.
    away = tmp_path / "disk"
    shutil.move(h.root, away)
    h.root.mkdir()
    _elsewhere(tmp_path)
    h = _harness(tmp_path, hasher)
    try:
        stray = h.write("written-while-unmounted", "S:0")
        events = h.scan()
        assert kinds(events) == [("file.added", stray.name), ("scan.done", "")]
        done = events[-1]
        [issue] = done.data["issues"]
        assert issue["reason"] == IssueReason.UNAVAILABLE.value
        assert "holds 0 of the 4 files indexed" in issue["message"]
        # The log line says so with its facts, as fields.
        [logged] = [line for line in json_log() if line["event"] == "root_device_unavailable"]
        assert logged["level"] == "warning"
        assert (logged["root"], logged["present"], logged["missing"]) == (str(h.root), 0, 4)
        assert set(_live(h)) == {"a", "b", "c", "d", stray.name}
        assert _recorded(h) == ELSEWHERE  # kept until the disk is back
        # Again and again: still nothing removed.
        assert [e.type for e in h.scan()] == [EventType.SCAN_DONE]
        h.close()

        # The disk is back: the root is on the recorded device again, its files unchanged.
        shutil.rmtree(h.root)
        shutil.move(away, h.root)
        _rewrite(tmp_path, "UPDATE roots SET dev = ?", h.root.stat().st_dev)
        h = _harness(tmp_path, hasher)
        calls = sum(hasher.calls.values())
        events = h.scan()
        assert kinds(events) == [("file.removed", stray.name), ("scan.done", "")]
        assert events[-1].data["issues"] == []
        assert sum(hasher.calls.values()) == calls  # nothing read again
    finally:
        h.close()


def test_a_remounted_file_system_is_re_identified_without_reading(
    tmp_path: Path, json_log: Callable[[], list[dict[str, Any]]]
) -> None:
    hasher, h = _indexed(tmp_path, NAMES)
    real = h.root.stat().st_dev
    h.close()
    # Recorded on another device number, same inodes and times: an LVM volume or a USB disk
    # mounted again under a new st_dev. One file was deleted meanwhile.
    _elsewhere(tmp_path, files=True)
    (h.root / "b").unlink()
    h = _harness(tmp_path, hasher)
    try:
        calls = sum(hasher.calls.values())
        events = h.scan()
        assert kinds(events) == [("file.removed", "b"), ("scan.done", "")]
        assert events[-1].data["issues"] == []
        assert sum(hasher.calls.values()) == calls
        assert _live(h) == {"a": real, "c": real, "d": real}
        assert _recorded(h) == real
        [logged] = [line for line in json_log() if line["event"] == "root_device_reidentified"]
        # a, c, d and the tombstone of b: every record of the root on the recorded device.
        assert (logged["root"], logged["files"]) == (str(h.root), 4)
        assert [e.type for e in h.scan()] == [EventType.SCAN_DONE]
    finally:
        h.close()


def test_files_copied_to_a_new_disk_are_rehashed_silently(tmp_path: Path) -> None:
    hasher, h = _indexed(tmp_path, NAMES)
    h.close()
    _elsewhere(tmp_path, files=True)
    for name in NAMES:  # new inodes, same bytes and mtimes, as a copy to a new disk makes them
        path = h.root / name
        shutil.copy2(path, path.with_name(path.name + ".tmp"))
        path.with_name(path.name + ".tmp").replace(path)
    h = _harness(tmp_path, hasher)
    try:
        events = h.scan()
        assert kinds(events) == [("scan.done", "")]  # same content: no change, no duplicate
        assert all(hasher.calls[h.p(name)] == 2 for name in NAMES)
        assert _recorded(h) == h.root.stat().st_dev
    finally:
        h.close()


def test_a_subtree_walk_on_another_device_leaves_the_decision_to_the_root(tmp_path: Path) -> None:
    hasher, h = _indexed(tmp_path, NAMES)
    h.close()
    _elsewhere(tmp_path)
    for name in ("sub/c", "sub/d"):
        (h.root / name).unlink()
    h = _harness(tmp_path, hasher)
    try:
        events = h.run(h.pipeline.process_path(str(h.root), h.p("sub")))
        assert events == []
        assert set(_live(h)) == set("abcd")
    finally:
        h.close()


def test_the_daemon_reports_an_unavailable_root(tmp_path: Path) -> None:
    hasher, h = _indexed(tmp_path, NAMES)
    h.close()
    shutil.rmtree(h.root)
    h.root.mkdir()
    _elsewhere(tmp_path)
    h = _harness(tmp_path, hasher)
    try:

        async def reconcile() -> tuple[str | None, str | None]:
            scans = Scans(h.pipeline, ScanOptions())
            await scans.request(str(h.root), "startup")
            unavailable = scans.unavailable(str(h.root))
            missing = str(h.root / "gone")
            await scans.request(missing, "startup")
            return unavailable, scans.unavailable(missing)

        unavailable, missing = asyncio.run(reconcile())
        assert unavailable is not None and "is its disk unmounted?" in unavailable
        assert missing == "the root is not a directory"
    finally:
        h.close()
