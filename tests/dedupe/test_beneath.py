"""A batch's folders, each opened once beneath its root and never through a link
(:class:`isccd.dedupe.beneath.Folders`), and a batch of steps acting through them."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from isccd.dedupe import beneath
from isccd.dedupe.apply import Phase, Status, apply_steps
from isccd.dedupe.beneath import Folders
from isccd.dedupe.log import ActionLog, Intent
from isccd.dedupe.plan import Action, Step, steps_of
from isccd.errors import StaleFileError
from tests.dedupe.conftest import KEY, plan_of, run_plan, write

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


def test_a_folder_moved_since_is_reached_again_and_the_one_given_out_stays_open(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    folders = Folders()
    first, _ = folders.parent_of(str(root), str(root / "a" / "x"))
    (root / "a").rename(root / "b")
    with pytest.raises(StaleFileError, match="is gone"):
        folders.parent_of(str(root), str(root / "a" / "x"))
    (root / "a").mkdir()  # a new folder of that name: the walk reaches it, not the old one
    second, _ = folders.parent_of(str(root), str(root / "a" / "y"))
    assert os.fstat(second).st_ino == (root / "a").stat().st_ino
    assert os.fstat(first).st_ino == (root / "b").stat().st_ino  # still open, for its step
    folders.close()
    assert _closed(first) and _closed(second)


def test_without_proc_every_file_walks_to_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the kernel's name of a folder cannot be read, a held folder could not be told
    from one moved since: none is reused, and a link put on the way is met by the next walk."""
    monkeypatch.setattr(beneath, "_kernel_name", lambda fd: None)
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    folders = Folders()
    first, _ = folders.parent_of(str(root), str(root / "d" / "x"))
    second, _ = folders.parent_of(str(root), str(root / "d" / "y"))
    assert first != second
    (root / "d").rename(outside / "d")
    (root / "d").symlink_to(outside / "d")
    with pytest.raises(StaleFileError, match="symbolic link"):
        folders.parent_of(str(root), str(root / "d" / "z"))
    folders.close()
    assert _closed(first) and _closed(second)


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


class _ChangedAfterFirstIntent(ActionLog):
    """An action log that runs ``change`` once the first step of a batch is checked and
    logged, before the next step is checked."""

    def __init__(self, path: Path, change: Callable[[], None]) -> None:
        super().__init__(path, KEY)
        self._change: Callable[[], None] | None = change

    def intent(self, intent: Intent) -> None:
        super().intent(intent)
        if self._change is not None:
            change, self._change = self._change, None
            change()


def test_a_folder_swapped_for_a_link_after_another_files_check_is_not_acted_in(
    tmp_path: Path,
) -> None:
    """Two copies in one folder, the folder swapped for a link to a folder outside the root
    once the first is checked: the second, checked after the swap, is not acted on (the
    first was checked before it, and is acted on in the folder it was checked in)."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    groups = [
        [write(root / "k" / f"{g}.bin", DATA + bytes([g]), mtime=1_000_000),
         write(root / "d" / f"{g}.bin", DATA + bytes([g]), mtime=1_000_001)]
        for g in range(2)
    ]  # fmt: skip
    steps, _ = steps_of(plan_of(root, groups), Action.LINK)

    def swap() -> None:
        (root / "d").rename(outside / "d")
        (root / "d").symlink_to(outside / "d")

    with _ChangedAfterFirstIntent(tmp_path / "log", swap) as log:
        log.run(Action.LINK, apply=True)
        outcomes = {o.step.path: o for o in apply_steps(steps, log)}
    first, second = sorted(outcomes)
    assert outcomes[second].status is Status.SKIPPED, outcomes[second]
    assert "symbolic link" in (outcomes[second].reason or "")
    left = outside / "d" / Path(second).name
    assert left.stat().st_nlink == 1 and left.read_bytes() == DATA + bytes([1])
    assert outcomes[first].status is Status.DONE


def _open_descriptors() -> int:
    return sum(1 for _ in Path("/proc/self/fd").iterdir())


def test_a_step_holds_its_own_folders_only_however_deep_they_are(tmp_path: Path) -> None:
    """Copies ten folders deep in two mirrored trees: while a batch is checked, the folders on
    the way are not held, only each file's own (two files and two folders a step, what the
    batch's size allows for)."""
    root = tmp_path / "root"
    deep = "/".join("abcdefghij")
    groups = [
        [write(root / "one" / f"e{g}" / deep / "f.bin", DATA + bytes([g]), mtime=1_000_000),
         write(root / "two" / f"e{g}" / deep / "f.bin", DATA + bytes([g]), mtime=1_000_001)]
        for g in range(32)
    ]  # fmt: skip
    steps, _ = steps_of(plan_of(root, groups), Action.LINK)
    before = _open_descriptors()
    held: list[int] = []

    def count(phase: Phase, step: Step) -> None:
        if phase is Phase.CHECKED:
            held.append(_open_descriptors() - before)

    with ActionLog(tmp_path / "log", KEY) as log:
        log.run(Action.LINK, apply=True)
        outcomes = apply_steps(steps, log, on_phase=count)
    assert [o.status for o in outcomes] == [Status.DONE] * 32
    # Two files and two folders a step, and the log: 129 here (772 when every folder on the
    # way was held).
    assert held and max(held) <= 4 * len(steps) + 16, max(held)
