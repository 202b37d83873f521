"""``--undo``: moves moved back, linked and removed files restored as copies of the kept
content with their own attributes, what cannot be undone said, and a second undo harmless."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from isccd.dedupe.apply import Status
from isccd.dedupe.plan import Action
from isccd.dedupe.undo import UndoStatus, undo_log
from tests.dedupe.conftest import KEY, mounted, plan_of, run_plan, write

DATA = os.urandom(100_000)


def _setup(tmp_path: Path) -> tuple[Path, list[Path]]:
    root = tmp_path / "root"
    files = [write(root / f"d{i}" / "f.bin", DATA, mtime=1_000_000 + i) for i in range(3)]
    files[1].chmod(0o640)
    return root, files


def _attributes(path: Path) -> tuple[int, int, bytes]:
    st = path.stat()
    return stat.S_IMODE(st.st_mode), st.st_mtime_ns, path.read_bytes()


def test_undo_of_links_restores_independent_copies(tmp_path: Path) -> None:
    root, files = _setup(tmp_path)
    extra = files[2].with_name("f-link.bin")
    extra.hardlink_to(files[2])  # one victim with two names
    before = {f: _attributes(f) for f in (*files, extra)}
    # The extra name is the same file as files[2]: the plan folds it into that member.
    plan = plan_of(root, [[*files, extra]])
    log = tmp_path / "log"
    # files[1] has its own permissions: linking it changes them, which must be asked for.
    assert {o.status for o in run_plan(plan, Action.LINK, log, any_owner=True)} == {Status.DONE}
    assert files[1].stat().st_ino == files[0].stat().st_ino
    outcomes = undo_log(log, KEY)
    assert [o.status for o in outcomes] == [UndoStatus.UNDONE] * 3
    assert {f: _attributes(f) for f in before} == before
    inodes = {f.stat().st_ino for f in files}
    assert len(inodes) == 3  # independent again
    assert extra.stat().st_ino == files[2].stat().st_ino  # its two names one file again
    assert undo_log(log, KEY) == []  # nothing left to undo


def test_undo_of_a_move_moves_it_back(tmp_path: Path) -> None:
    root, files = _setup(tmp_path)
    inode = files[1].stat().st_ino
    log = tmp_path / "log"
    run_plan(plan_of(root, [files]), Action.MOVE, log, move_to=tmp_path / "attic")
    assert not files[1].exists()
    outcomes = undo_log(log, KEY)
    assert [o.status for o in outcomes] == [UndoStatus.UNDONE] * 2
    assert files[1].stat().st_ino == inode and _attributes(files[1])[0] == 0o640


def test_undo_of_a_remove_restores_it_from_the_kept_copy(tmp_path: Path) -> None:
    root, files = _setup(tmp_path)
    before = _attributes(files[1])
    log = tmp_path / "log"
    run_plan(plan_of(root, [files]), Action.REMOVE, log)
    assert not files[1].exists()
    undo_log(log, KEY)
    assert _attributes(files[1]) == before


def test_what_cannot_be_undone_is_said_and_left_alone(tmp_path: Path) -> None:
    root, files = _setup(tmp_path)
    log = tmp_path / "log"
    run_plan(plan_of(root, [files]), Action.REMOVE, log)
    files[0].write_bytes(b"the kept file was edited since")
    outcomes = undo_log(log, KEY)
    assert {o.status for o in outcomes} == {UndoStatus.CANNOT}
    assert all("no longer holds its content" in o.reason for o in outcomes)
    assert not files[1].exists() and not files[2].exists()
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["op"] for r in records][-2:] == ["not_undone", "not_undone"]


def test_a_moved_file_changed_since_is_not_moved_back(tmp_path: Path) -> None:
    root, files = _setup(tmp_path)
    log = tmp_path / "log"
    attic = tmp_path / "attic"
    run_plan(plan_of(root, [files[:2]]), Action.MOVE, log, move_to=attic)
    moved = attic / str(files[1]).lstrip("/")
    moved.write_bytes(b"edited in the attic")
    [outcome] = undo_log(log, KEY)
    assert outcome.status is UndoStatus.CANNOT and not files[1].exists()
    assert moved.read_bytes() == b"edited in the attic"


def test_a_reflink_needs_no_undo(tmp_path: Path) -> None:
    with mounted("btrfs", tmp_path / "btrfs", tmp_path) as mnt:
        root = mnt / "root"
        files = [write(root / f"{i}.bin", DATA, mtime=1_000_000 + i) for i in range(2)]
        log = tmp_path / "log"
        run_plan(plan_of(root, [files]), Action.REFLINK, log)
        [outcome] = undo_log(log, KEY)
        assert outcome.status is UndoStatus.NOTHING and "nothing to undo" in outcome.reason
