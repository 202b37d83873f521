"""A batch's folders, each opened once beneath its root and never through a link
(:class:`isccd.dedupe.beneath.Folders`), and a batch of steps acting through them."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from isccd.dedupe.apply import Status
from isccd.dedupe.beneath import Folders
from isccd.dedupe.plan import Action
from isccd.errors import StaleFileError
from tests.dedupe.conftest import plan_of, run_plan, write

DATA = b"the same bytes\n" * 1000


def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError as exc:
        return exc.errno == errno.EBADF
    return False


def test_files_of_one_folder_share_its_descriptor_and_close_frees_every_one(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "c").mkdir()
    folders = Folders()
    one, name = folders.parent_of(str(root), str(root / "a" / "b" / "x"))
    two, _ = folders.parent_of(str(root), str(root / "a" / "b" / "y"))
    other, _ = folders.parent_of(str(root), str(root / "c" / "z"))
    top, _ = folders.parent_of(str(root), str(root / "w"))
    assert name == "x" and one == two and len({one, other, top}) == 3
    assert os.fstat(one).st_ino == (root / "a" / "b").stat().st_ino
    assert os.fstat(other).st_ino == (root / "c").stat().st_ino
    assert os.fstat(top).st_ino == root.stat().st_ino
    folders.close()
    assert all(_closed(fd) for fd in (one, other, top))
    folders.close()  # a second close has nothing left to close


def test_a_link_on_the_way_is_never_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "d").symlink_to(outside)
    folders = Folders()
    with pytest.raises(StaleFileError, match="symbolic link"):
        folders.parent_of(str(root), str(root / "d" / "x"))
    folders.close()


def test_a_root_reached_through_a_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real" / "root").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(tmp_path / "real")  # a folder above the root
    root = tmp_path / "alias" / "root"
    folders = Folders()
    with pytest.raises(StaleFileError, match="through a symbolic link"):
        folders.parent_of(str(root), str(root / "x"))
    with pytest.raises(StaleFileError, match="cannot be opened"):  # the root itself a link
        folders.parent_of(str(tmp_path / "alias"), str(tmp_path / "alias" / "x"))
    folders.close()


def test_a_folder_that_could_not_be_reached_is_walked_again(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    folders = Folders()
    with pytest.raises(StaleFileError, match="is gone"):
        folders.parent_of(str(root), str(root / "later" / "x"))
    (root / "later").mkdir()
    fd, _ = folders.parent_of(str(root), str(root / "later" / "x"))
    assert os.fstat(fd).st_ino == (root / "later").stat().st_ino
    folders.close()


def test_a_step_whose_folder_is_gone_is_skipped_and_the_others_in_the_batch_are_done(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    groups = [
        [write(root / f"d{g}" / f"{c}.bin", DATA + bytes([g]), mtime=1_000_000 + i)
         for i, c in enumerate("ab")]
        for g in range(4)
    ]  # fmt: skip
    plan = plan_of(root, groups)
    for f in (root / "d2").iterdir():
        f.unlink()
    (root / "d2").rmdir()
    outcomes = run_plan(plan, Action.LINK, tmp_path / "log")
    assert [o.status for o in outcomes] == [
        Status.DONE, Status.DONE, Status.SKIPPED, Status.DONE
    ]  # fmt: skip
    for g, (kept, copy) in enumerate(groups):
        if g != 2:
            assert copy.stat().st_ino == kept.stat().st_ino
            assert copy.read_bytes() == DATA + bytes([g])
