"""How undo writes a restored copy: beside the link, checked whole before it takes the name
(a nearly full file system), without filling holes (sparse files), with set-ID bits only where
root gives the copy its owner."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from isccd.cli.main import main
from isccd.dedupe.apply import Status
from isccd.dedupe.logkey import load_key
from isccd.dedupe.plan import Action
from isccd.dedupe.undo import UndoStatus, restored_mode, undo_log
from tests.dedupe.conftest import KEY, fill, mounted, plan_of, run_plan, write

MIB = 1024 * 1024


def _linked_pair(root: Path, data: bytes, log: Path, key: bytes = KEY) -> list[Path]:
    files = [write(root / f"{i}.bin", data, mtime=1_000_000 + i) for i in range(2)]
    outcomes = run_plan(plan_of(root, [files]), Action.LINK, log, key=key)
    assert [o.status for o in outcomes] == [Status.DONE]
    return files


@pytest.mark.slow
def test_undo_on_a_nearly_full_disk_leaves_the_link_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = os.urandom(3 * MIB)
    state = tmp_path / "state"
    with mounted("tmpfs", tmp_path / "mnt", tmp_path, size="8m") as mnt:
        log = tmp_path / "log.jsonl"  # the log is elsewhere: only the copy lacks room
        kept, victim = _linked_pair(mnt / "root", data, log, load_key(state, create=True))
        filler = fill(mnt, leave=MIB)  # room for a third of the copy
        status = main(["dedupe", "--undo", str(log), "--state", str(state)])
        out = capsys.readouterr().out
        assert status == 1, out
        assert "cannot  " in out and "No space left on device" in out, out
        assert "0 undone, 1 cannot be undone" in out
        # The name is still the link, whole; nothing is left beside it.
        assert victim.stat().st_ino == kept.stat().st_ino and victim.read_bytes() == data
        assert sorted(p.name for p in (mnt / "root").iterdir()) == ["0.bin", "1.bin"]
        # With room again, the same undo finishes.
        filler.unlink()
        assert main(["dedupe", "--undo", str(log), "--state", str(state)]) == 0
        assert "1 undone, 0 cannot be undone" in capsys.readouterr().out
        assert victim.stat().st_ino != kept.stat().st_ino and victim.read_bytes() == data


def _sparse(path: Path, size: int, data: dict[int, bytes], mtime: int) -> Path:
    """A file of ``size`` bytes holding ``data`` at its offsets and holes elsewhere."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        for offset, chunk in data.items():
            f.seek(offset)
            f.write(chunk)
        f.truncate(size)
    os.utime(path, (mtime, mtime))
    return path


@pytest.mark.parametrize("kept_allocated", [False, True], ids=["kept-sparse", "kept-allocated"])
def test_undo_restores_a_sparse_file_with_its_holes(tmp_path: Path, kept_allocated: bool) -> None:
    size = 16 * MIB
    data = {0: os.urandom(256 * 1024), 10 * MIB: os.urandom(100_000)}
    root = tmp_path / "root"
    victim = _sparse(root / "victim.img", size, data, mtime=1_000_001)
    if kept_allocated:  # the same content, every block written
        kept = write(root / "kept.img", victim.read_bytes(), mtime=1_000_000)
    else:
        kept = _sparse(root / "kept.img", size, data, mtime=1_000_000)
    blocks = victim.stat().st_blocks
    assert blocks * 512 < MIB < kept.stat().st_size  # the file system keeps holes
    log = tmp_path / "log"
    assert [o.status for o in run_plan(plan_of(root, [[kept, victim]]), Action.LINK, log)] == [
        Status.DONE
    ]
    [outcome] = undo_log(log, KEY)
    assert outcome.status is UndoStatus.UNDONE, outcome.reason
    assert victim.stat().st_ino != kept.stat().st_ino
    assert victim.read_bytes() == kept.read_bytes()
    # As many blocks as before the link (a byte-for-byte copy allocates all 16 MiB).
    assert victim.stat().st_blocks <= blocks + 8


def test_a_set_id_mode_comes_back_only_from_root_giving_its_owner() -> None:
    mode = stat.S_IFREG | 0o6755
    assert restored_mode(mode, owner_restored=True, root=True) == 0o6755
    assert restored_mode(mode, owner_restored=False, root=True) == 0o755
    assert restored_mode(mode, owner_restored=True, root=False) == 0o755
    assert restored_mode(stat.S_IFREG | 0o1640, owner_restored=False, root=False) == 0o1640


def test_as_root_a_set_id_file_of_another_user_comes_back_as_it_was(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file another owner needs root")
    data = os.urandom(10_000)
    root = tmp_path / "root"
    kept = write(root / "a.bin", data, mtime=1_000_000)
    victim = write(root / "b.bin", data, mtime=1_000_001)
    os.chown(victim, 4321, 4321)
    victim.chmod(0o4750)
    log = tmp_path / "log"
    # Removed, not linked: a set-user-ID file is never linked to another owner's.
    outcomes = run_plan(plan_of(root, [[kept, victim]]), Action.REMOVE, log)
    assert [o.status for o in outcomes] == [Status.DONE]
    [outcome] = undo_log(log, KEY)
    assert outcome.status is UndoStatus.UNDONE, outcome.reason
    st = victim.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4321, 4321, 0o4750)


def test_an_undo_whose_records_were_lost_is_not_undone_twice(tmp_path: Path) -> None:
    root = tmp_path / "root"
    log = tmp_path / "log"
    kept, victim = _linked_pair(root, os.urandom(30_000), log)
    applied = log.stat().st_size
    [outcome] = undo_log(log, KEY)
    assert outcome.status is UndoStatus.UNDONE
    os.truncate(log, applied)  # as when the disk filled up before undo could log it
    # Touched since, so that it cannot pass for the victim itself should the copy have been
    # given the victim's freed inode number.
    os.utime(victim, (2_000_000, 2_000_000))
    [again] = undo_log(log, KEY)
    assert again.status is UndoStatus.NOTHING and "already a file of its own" in again.reason
    assert victim.stat().st_ino != kept.stat().st_ino


def _used(mnt: Path) -> int:
    subprocess.run(["sync", "-f", str(mnt)], check=True)
    st = os.statvfs(mnt)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


@pytest.mark.slow
def test_on_btrfs_a_restored_copy_shares_the_kept_file_s_blocks(tmp_path: Path) -> None:
    data = os.urandom(24 * MIB)
    with mounted("btrfs", tmp_path / "btrfs", tmp_path) as mnt:
        log = tmp_path / "log"
        kept, victim = _linked_pair(mnt / "root", data, log)
        before = _used(mnt)
        [outcome] = undo_log(log, KEY)
        assert outcome.status is UndoStatus.UNDONE, outcome.reason
        assert victim.stat().st_ino != kept.stat().st_ino and victim.read_bytes() == data
        assert _used(mnt) - before < 4 * MIB  # a copy of its own would take 24 MiB more
