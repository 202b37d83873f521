"""Each action on real files, and every way a file can change between the plan and the action:
the file is skipped, reported, and left exactly as it was."""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from isccd.dedupe import apply as apply_module
from isccd.dedupe.apply import Applier, Phase, Status
from isccd.dedupe.log import ActionLog, Intent
from isccd.dedupe.plan import Action, GroupKind, Step, steps_of
from tests.dedupe.conftest import KEY, mounted, plan_of, run_plan, write

DATA = random.Random(1).randbytes(300_000)


def copies(root: Path, n: int = 3, data: bytes = DATA) -> list[Path]:
    """``n`` copies of ``data``, the first the oldest."""
    return [write(root / f"d{i}" / "copy.bin", data, mtime=1_000_000 + i) for i in range(n)]


def log_records(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_link_replaces_copies_by_hard_links_and_logs_each(tmp_path: Path) -> None:
    root = tmp_path / "root"
    files = copies(root)
    plan = plan_of(root, [files])
    outcomes = run_plan(plan, Action.LINK, tmp_path / "log")
    assert [o.status for o in outcomes] == [Status.DONE, Status.DONE]
    inode = files[0].stat().st_ino  # the oldest is kept
    assert all(f.stat().st_ino == inode and f.read_bytes() == DATA for f in files)
    assert files[0].stat().st_nlink == 3
    assert sorted(p.name for p in root.rglob("*") if p.is_file()) == ["copy.bin"] * 3
    ops = [(r["op"], r.get("path")) for r in log_records(tmp_path / "log")]
    # The intents of a batch of steps, then what became of each.
    assert ops[1:] == [
        ("intent", str(files[1])), ("intent", str(files[2])), ("done", None), ("done", None)
    ]  # fmt: skip


def test_remove_deletes_copies_and_keeps_one(tmp_path: Path) -> None:
    root = tmp_path / "root"
    files = copies(root)
    outcomes = run_plan(plan_of(root, [files]), Action.REMOVE, tmp_path / "log")
    assert [o.status for o in outcomes] == [Status.DONE, Status.DONE]
    assert files[0].read_bytes() == DATA
    assert not files[1].exists() and not files[2].exists()
    assert not list(root.rglob(".isccd-dedupe-*"))


def test_move_keeps_the_path_under_the_folder(tmp_path: Path) -> None:
    root = tmp_path / "root"
    files = copies(root)
    files[2].chmod(0o600)
    attic = tmp_path / "attic"
    outcomes = run_plan(plan_of(root, [files]), Action.MOVE, tmp_path / "log", move_to=attic)
    assert [o.status for o in outcomes] == [Status.DONE, Status.DONE]
    for f in files[1:]:
        moved = attic / str(f).lstrip("/")
        assert not f.exists() and moved.read_bytes() == DATA
    moved = attic / str(files[2]).lstrip("/")
    assert stat.S_IMODE(moved.stat().st_mode) == 0o600 and moved.stat().st_mtime == 1_000_002


def test_move_never_replaces_a_file_at_the_target(tmp_path: Path) -> None:
    root = tmp_path / "root"
    files = copies(root, 2)
    attic = tmp_path / "attic"
    there = write(attic / str(files[1]).lstrip("/"), b"already here")
    [outcome] = run_plan(plan_of(root, [files]), Action.MOVE, tmp_path / "log", move_to=attic)
    assert outcome.status is Status.FAILED and "already exists" in (outcome.reason or "")
    assert there.read_bytes() == b"already here" and files[1].read_bytes() == DATA


def test_near_groups_are_only_moved_and_only_with_near(tmp_path: Path) -> None:
    root = tmp_path / "root"
    a = write(root / "photo.jpg", b"one version", mtime=1_000_000)
    b = write(root / "photo-small.jpg", b"another version", mtime=1_000_001)
    plan = plan_of(root, [[a, b]], kind=GroupKind.NEAR)
    for action in (Action.LINK, Action.REMOVE, Action.REFLINK):
        assert run_plan(plan, action, tmp_path / "log", near=True) == []
    assert run_plan(plan, Action.MOVE, tmp_path / "log", move_to=tmp_path / "attic") == []
    [done] = run_plan(plan, Action.MOVE, tmp_path / "log", move_to=tmp_path / "attic", near=True)
    assert done.status is Status.DONE and done.step.path == str(b)
    assert a.read_bytes() == b"one version" and not b.exists()


def _modified(victim: Path, other: Path) -> None:
    with victim.open("r+b") as f:
        f.write(b"X")


def _modified_keeping_size_and_time(victim: Path, other: Path) -> None:
    """The hardest change to see: same size, same mtime; only the bytes tell."""
    st = victim.stat()
    _modified(victim, other)
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))


def _truncated(victim: Path, other: Path) -> None:
    os.truncate(victim, 1000)


def _replaced(victim: Path, other: Path) -> None:
    new = victim.with_name("new")
    new.write_bytes(b"a different file")
    new.replace(victim)


def _symlinked(victim: Path, other: Path) -> None:
    victim.unlink()
    victim.symlink_to(other)  # a link to the kept file: linking it would lose nothing, still no


def _deleted(victim: Path, other: Path) -> None:
    victim.unlink()


def _folder_symlinked(victim: Path, other: Path) -> None:
    """The victim's folder becomes a link to a folder outside the root with the same name."""
    outside = victim.parent.parent.parent / "outside"
    outside.mkdir()
    victim.replace(outside / victim.name)
    victim.parent.rmdir()
    victim.parent.symlink_to(outside)


CHANGES: dict[str, Callable[[Path, Path], None]] = {
    "modified": _modified,
    "modified-same-size-and-time": _modified_keeping_size_and_time,
    "truncated": _truncated,
    "replaced": _replaced,
    "symlink": _symlinked,
    "deleted": _deleted,
    "folder-symlink": _folder_symlinked,
}


def _state(path: Path) -> tuple[object, ...] | None:
    """What a file is: its kind, inode, and bytes (``None`` when gone)."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return ("link", str(path.readlink()))
    if stat.S_ISDIR(st.st_mode):
        return ("dir", st.st_ino)
    return ("file", st.st_ino, st.st_mtime_ns, path.read_bytes())


@pytest.mark.parametrize("action", [Action.LINK, Action.REFLINK, Action.REMOVE, Action.MOVE])
@pytest.mark.parametrize("change", CHANGES, ids=list(CHANGES))
@pytest.mark.parametrize("who", ["victim", "kept"])
def test_a_file_changed_after_the_plan_is_skipped_untouched(
    tmp_path: Path, action: Action, change: str, who: str
) -> None:
    root = tmp_path / "root"
    files = copies(root, 2)
    plan = plan_of(root, [files])
    kept, victim = files
    changed, other = (victim, kept) if who == "victim" else (kept, victim)
    CHANGES[change](changed, other)
    before = {p: _state(p) for p in (*files, *root.rglob("*"), *tmp_path.rglob("outside/*"))}
    attic = tmp_path / "attic"
    [outcome] = run_plan(plan, action, tmp_path / "log", move_to=attic)
    assert outcome.status is Status.SKIPPED, outcome
    assert outcome.reason
    after = {p: _state(p) for p in before}
    assert after == before
    assert not list(root.rglob(".isccd-dedupe-*")) and not attic.exists()
    ops = [r["op"] for r in log_records(tmp_path / "log")]
    assert ops == ["run", "skip"]


def test_a_hardlink_of_the_kept_file_is_nothing_to_do(tmp_path: Path) -> None:
    root = tmp_path / "root"
    kept, victim = copies(root, 2)
    plan = plan_of(root, [[kept, victim]])
    victim.unlink()
    victim.hardlink_to(kept)  # linked since the plan (by an earlier run)
    [outcome] = run_plan(plan, Action.LINK, tmp_path / "log")
    assert outcome.status is Status.NOTHING


def test_a_copy_made_after_the_plan_with_other_bytes_is_never_linked(tmp_path: Path) -> None:
    """The kept file rewritten with other bytes of the same size: its digest differs from
    the recorded one even though it still equals the victim byte for byte."""
    root = tmp_path / "root"
    kept, victim = copies(root, 2)
    plan = plan_of(root, [[kept, victim]])
    other = bytes(len(DATA))
    for f in (kept, victim):
        st = f.stat()
        f.write_bytes(other)
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    [outcome] = run_plan(plan, Action.REMOVE, tmp_path / "log")
    assert outcome.status is Status.SKIPPED
    assert "not the one the plan recorded" in (outcome.reason or "")
    assert victim.exists()


def test_hard_links_across_file_systems_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    kept = write(root / "kept.bin", DATA, mtime=1_000_000)
    with mounted("tmpfs", root / "mnt", tmp_path) as mnt:
        victim = write(mnt / "copy.bin", DATA, mtime=1_000_001)
        [outcome] = run_plan(plan_of(root, [[kept, victim]]), Action.LINK, tmp_path / "log")
        assert outcome.status is Status.FAILED
        assert "another file system" in (outcome.reason or "")
        assert victim.read_bytes() == DATA and victim.stat().st_nlink == 1
        assert kept.stat().st_nlink == 1


def test_move_to_another_file_system_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    files = copies(root, 2)
    with mounted("tmpfs", tmp_path / "attic", tmp_path) as attic:
        plan = plan_of(root, [files])
        [outcome] = run_plan(plan, Action.MOVE, tmp_path / "log", move_to=attic)
        assert outcome.status is Status.FAILED and "another file system" in (outcome.reason or "")
        assert files[1].read_bytes() == DATA


def _shared_extents(path: Path) -> bool:
    out = subprocess.run(["filefrag", "-v", str(path)], check=True, capture_output=True, text=True)
    return "shared" in out.stdout


def test_reflink_on_btrfs_shares_blocks_and_keeps_the_copy_s_attributes(tmp_path: Path) -> None:
    with mounted("btrfs", tmp_path / "btrfs", tmp_path) as mnt:
        root = mnt / "root"
        files = copies(root)
        files[1].chmod(0o640)
        os.setxattr(files[1], "user.note", b"mine")
        before = [f.stat() for f in files]
        outcomes = run_plan(plan_of(root, [files]), Action.REFLINK, tmp_path / "log")
        assert [o.status for o in outcomes] == [Status.DONE, Status.DONE]
        for f, was in zip(files[1:], before[1:], strict=True):
            now = f.stat()
            assert f.read_bytes() == DATA
            assert now.st_ino != was.st_ino and now.st_nlink == 1  # its own file
            assert (now.st_mode, now.st_mtime_ns) == (was.st_mode, was.st_mtime_ns)
        assert os.getxattr(files[1], "user.note") == b"mine"
        subprocess.run(["sync"], check=True)
        if shutil.which("filefrag"):
            assert _shared_extents(files[1])


@pytest.mark.parametrize("kind", ["tmpfs", "ext4"])
def test_reflink_is_refused_clearly_where_the_file_system_cannot(tmp_path: Path, kind: str) -> None:
    with mounted(kind, tmp_path / kind, tmp_path) as mnt:
        root = mnt / "root"
        files = copies(root)
        inodes = [f.stat().st_ino for f in files]
        outcomes = run_plan(plan_of(root, [files]), Action.REFLINK, tmp_path / "log")
        assert [o.status for o in outcomes] == [Status.FAILED, Status.FAILED]
        assert all("cannot share blocks" in (o.reason or "") for o in outcomes)
        assert [f.stat().st_ino for f in files] == inodes
        assert all(f.read_bytes() == DATA for f in files)
        assert not list(root.rglob(".isccd-dedupe-*"))


class _ChangingLog(ActionLog):
    """An action log that runs ``change`` once its intents are synced: after the checks of a
    batch's steps and before their swaps."""

    def __init__(self, path: Path, change: Callable[[], None]) -> None:
        super().__init__(path, KEY)
        self._change = change

    def sync(self) -> None:
        super().sync()
        self._change()


@pytest.mark.parametrize("action", [Action.LINK, Action.REFLINK, Action.REMOVE, Action.MOVE])
@pytest.mark.parametrize("change", ["replaced", "written"])
def test_a_file_changed_between_its_checks_and_its_swap_is_left_as_it_is(
    tmp_path: Path, action: Action, change: str
) -> None:
    """The instant between the checks (and the logged intent) and the swap: each action looks
    again when it swaps, and reverts. A reflink needs a file system that has them (btrfs)."""
    if action is Action.REFLINK:
        with mounted("btrfs", tmp_path / "btrfs", tmp_path) as mnt:
            _changed_at_the_swap(mnt, action, change)
    else:
        _changed_at_the_swap(tmp_path, action, change)


def _changed_at_the_swap(base: Path, action: Action, change: str) -> None:
    root = base / "root"
    files = copies(root, 2)
    plan = plan_of(root, [files])
    attic = str(base / "attic")
    [step], _ = steps_of(plan, action, move_to=attic)
    before: list[object] = []

    def meanwhile() -> None:
        if change == "replaced":
            _replaced(files[1], files[0])
        else:
            with files[1].open("r+b") as f:
                f.write(b"new")
        before.append(_state(files[1]))

    with _ChangingLog(base / "log", meanwhile) as log:
        [outcome] = Applier(log, attic).run([step])
    # The checks passed (the intent was logged), the swap found the change (and failed).
    ops = [r["op"] for r in log_records(base / "log")]
    assert ops[-2:] == ["intent", "failed"], ops
    assert outcome.status is Status.SKIPPED, outcome
    assert _state(files[1]) == before[0]
    assert files[0].read_bytes() == DATA and files[0].stat().st_nlink == 1
    assert not list(root.rglob(".isccd-dedupe-*"))


class _SyncCountingLog(ActionLog):
    """An action log that notes, in order, each intent logged and each sync."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, KEY)
        self.events: list[tuple[str, str | None]] = []

    def intent(self, intent: Intent) -> None:
        super().intent(intent)
        self.events.append(("intent", intent.path))

    def sync(self) -> None:
        super().sync()
        self.events.append(("sync", None))


def test_batches_grow_and_every_intent_is_synced_before_its_action(tmp_path: Path) -> None:
    root = tmp_path / "root"
    groups = [
        copies(root / f"g{g}", 2, DATA[:100] + bytes([g % 256, g // 256])) for g in range(450)
    ]
    steps, _ = steps_of(plan_of(root, groups), Action.LINK)
    log = _SyncCountingLog(tmp_path / "log")
    with log:

        def acting(phase: Phase, step: Step) -> None:
            if phase is Phase.CHECKED:
                log.events.append(("act", step.path))

        outcomes = list(Applier(log, on_phase=acting).run(steps))
    assert [o.status for o in outcomes] == [Status.DONE] * 450
    # Batches of 64, 128 and 256 steps (then the 2 left): four syncs, not eight of 64.
    kinds = [kind for kind, _ in log.events]
    assert kinds.count("sync") == 4
    runs = [len(list(group)) for kind, group in itertools.groupby(kinds) if kind == "intent"]
    assert runs == [64, 128, 256, 2]
    for path in (s.path for s in steps):
        logged = log.events.index(("intent", path))
        acted = log.events.index(("act", path))
        assert ("sync", None) in log.events[logged:acted], path


def test_a_batch_ends_once_its_files_hold_batch_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(apply_module, "BATCH_BYTES", 2 * len(DATA))
    root = tmp_path / "root"
    groups = [copies(root / f"g{g}", 2, DATA + bytes([g])) for g in range(5)]
    steps, _ = steps_of(plan_of(root, groups), Action.LINK)
    log = _SyncCountingLog(tmp_path / "log")
    with log:
        outcomes = list(Applier(log).run(steps))
    assert [o.status for o in outcomes] == [Status.DONE] * 5
    # Two files of a little more than len(DATA) fill a batch.
    assert [kind for kind, _ in log.events].count("sync") == 3
