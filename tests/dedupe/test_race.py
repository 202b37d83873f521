"""Every check is stale the moment it is made: files changed at the worst moments of a step,
between its checks and its action (``Phase.CHECKED``) and between the action and the last
checks (``Phase.SWAPPED``), and two runs with opposite plans interleaved at those moments
(without the tree lock, which would keep them apart): the action is reverted, never a byte
lost."""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from isccd.dedupe.apply import Outcome, Phase, Status, apply_steps
from isccd.dedupe.log import ActionLog
from isccd.dedupe.plan import Action, Step, steps_of
from tests.chaos.dedupe_race import keeping
from tests.dedupe.conftest import KEY, mounted, plan_of, write

DATA = random.Random(3).randbytes(200_000)
WAIT = 60.0


def _pair(root: Path) -> tuple[Path, Path]:
    """Two copies, the first the oldest (kept by default)."""
    return (
        write(root / "a" / "f.bin", DATA, mtime=1_000_000),
        write(root / "b" / "f.bin", DATA, mtime=1_000_001),
    )


def _rewrite(path: Path) -> None:
    """Rewrite ``path`` in place, as a writer hiding it would: same inode and size, its
    modification time put back."""
    st = path.stat()
    with path.open("r+b") as f:
        f.write(b"rewritten" * 100)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _apply(
    root: Path, log: Path, action: Action, at: Phase, do: Callable[[], None]
) -> tuple[list[Outcome], Path, Path]:
    kept, copy = _pair(root)
    steps, _ = steps_of(plan_of(root, [[kept, copy]]), action)

    def on_phase(phase: Phase, step: Step) -> None:
        if phase is at:
            do()

    with ActionLog(log, KEY) as action_log:
        outcomes = apply_steps(steps, action_log, on_phase=on_phase)
    return outcomes, kept, copy


@pytest.mark.parametrize("action", [Action.LINK, Action.REMOVE])
def test_a_kept_file_rewritten_at_the_last_moment_reverts_the_action(
    tmp_path: Path, action: Action
) -> None:
    """After the last checks before the action (a writer that comes later waits for the
    lease: see below), found by reading both again after the action."""
    root = tmp_path / "root"
    [outcome], kept, copy = _apply(
        root, tmp_path / "log", action, Phase.CHECKED, lambda: _rewrite(root / "a" / "f.bin")
    )
    assert outcome.status is Status.SKIPPED, outcome
    assert "kept" in (outcome.reason or "")
    assert copy.read_bytes() == DATA and not list(copy.parent.glob(".isccd-dedupe-*"))
    assert copy.stat().st_ino != kept.stat().st_ino


@pytest.mark.parametrize("action", [Action.LINK, Action.REMOVE])
def test_a_kept_file_replaced_by_another_after_the_checks_is_never_linked_to(
    tmp_path: Path, action: Action
) -> None:
    root = tmp_path / "root"

    def replace() -> None:  # another file, the same bytes but another owner's inode
        other = root / "a" / "other"
        write(other, DATA)
        other.replace(root / "a" / "f.bin")

    [outcome], kept, copy = _apply(root, tmp_path / "log", action, Phase.SWAPPED, replace)
    assert outcome.status is Status.SKIPPED, outcome
    assert copy.read_bytes() == DATA and copy.stat().st_ino != kept.stat().st_ino


def test_a_kept_file_deleted_after_the_checks_is_not_linked_to(tmp_path: Path) -> None:
    root = tmp_path / "root"
    [outcome], _, copy = _apply(
        root, tmp_path / "log", Action.LINK, Phase.CHECKED, (root / "a" / "f.bin").unlink
    )
    assert outcome.status is Status.SKIPPED, outcome
    assert copy.read_bytes() == DATA and copy.stat().st_nlink == 1


class _Gate:
    """Holds a run at one phase until released."""

    def __init__(self, phase: Phase) -> None:
        self.phase = phase
        self.reached = threading.Event()
        self.go = threading.Event()

    def __call__(self, phase: Phase, step: Step) -> None:
        if phase is self.phase:
            self.reached.set()
            assert self.go.wait(WAIT)

    def pass_(self) -> None:
        self.go.set()


def _run_in_thread(
    steps: tuple[Step, ...], log: Path, gates: list[_Gate], out: list[Outcome]
) -> threading.Thread:
    def on_phase(phase: Phase, step: Step) -> None:
        for gate in gates:
            gate(phase, step)

    def run() -> None:
        with ActionLog(log, KEY) as action_log:
            out.extend(apply_steps(steps, action_log, on_phase=on_phase))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("action", [Action.REMOVE, Action.LINK])
def test_two_runs_keeping_opposite_copies_interleaved_keep_the_content(
    tmp_path: Path, action: Action
) -> None:
    """Both make every check before acting; the first takes its victim's name; the second
    takes its victim's (the first's kept file) and finishes; then the first finishes: the
    worst order there is, which only the checks after the action catch."""
    root = tmp_path / "root"
    x, y = _pair(root)
    plan = plan_of(root, [[x, y]])
    a_steps, _ = steps_of(keeping(plan, 0, x), action)
    b_steps, _ = steps_of(keeping(plan, 0, y), action)
    a_checked, a_swapped, b_checked = (
        _Gate(Phase.CHECKED),
        _Gate(Phase.SWAPPED),
        _Gate(Phase.CHECKED),
    )
    a_out: list[Outcome] = []
    b_out: list[Outcome] = []
    a = _run_in_thread(a_steps, tmp_path / "a.log", [a_checked, a_swapped], a_out)
    assert a_checked.reached.wait(WAIT)
    b = _run_in_thread(b_steps, tmp_path / "b.log", [b_checked], b_out)
    assert b_checked.reached.wait(WAIT)
    a_checked.pass_()
    assert a_swapped.reached.wait(WAIT)
    b_checked.pass_()
    b.join(WAIT)
    a_swapped.pass_()
    a.join(WAIT)
    assert not a.is_alive() and not b.is_alive()
    left = [p for p in (x, y) if p.exists()]
    assert left and all(p.read_bytes() == DATA for p in left)
    statuses = sorted(o.status.value for o in (*a_out, *b_out))
    assert statuses == ["done", "skipped"], (a_out, b_out)
    assert not list(root.rglob(".isccd-dedupe-*"))


def test_a_reflink_of_a_kept_file_rewritten_after_the_checks_is_reverted(tmp_path: Path) -> None:
    with mounted("btrfs", tmp_path / "mnt", tmp_path) as mnt:
        root = mnt / "root"
        [outcome], _, copy = _apply(
            root, tmp_path / "log", Action.REFLINK, Phase.CHECKED,
            lambda: _rewrite(root / "a" / "f.bin"),
        )  # fmt: skip
        assert outcome.status is Status.SKIPPED, outcome
        assert copy.read_bytes() == DATA and not list(copy.parent.glob(".isccd-dedupe-*"))


@pytest.mark.parametrize("which", ["kept", "copy"])
def test_a_file_open_for_writing_elsewhere_is_not_acted_on(tmp_path: Path, which: str) -> None:
    """As by a program holding it open to write to it at any moment: it may change after
    any check, so the step never starts."""
    root = tmp_path / "root"
    kept, copy = _pair(root)
    held = (kept if which == "kept" else copy).open("r+b")
    try:
        steps, _ = steps_of(plan_of(root, [[kept, copy]]), Action.LINK)
        with ActionLog(tmp_path / "log", KEY) as action_log:
            [outcome] = apply_steps(steps, action_log)
    finally:
        held.close()
    assert outcome.status is Status.SKIPPED, outcome
    assert "is open for writing by another process" in (outcome.reason or "")
    assert copy.read_bytes() == DATA and copy.stat().st_ino != kept.stat().st_ino


def _lease_breaking(inode: int) -> bool:
    """Whether the kernel says a lease on ``inode`` is being broken (a writer waits)."""
    return any(
        f":{inode} " in line and "BREAKING" in line
        for line in Path("/proc/locks").read_text().splitlines()
    )


@pytest.mark.parametrize("action", [Action.LINK, Action.REMOVE])
def test_a_writer_of_the_kept_file_during_the_action_waits_and_the_action_is_reverted(
    tmp_path: Path, action: Action
) -> None:
    root = tmp_path / "root"
    writes: list[threading.Thread] = []

    def write_kept() -> None:
        path = root / "a" / "f.bin"

        def rewrite() -> None:
            with path.open("r+b") as f:
                f.write(b"rewritten")

        writes.append(threading.Thread(target=rewrite, daemon=True))
        writes[0].start()
        # The writer's open waits for the lease: the kernel shows the lease breaking.
        deadline = time.monotonic() + WAIT
        while not _lease_breaking(path.stat().st_ino):
            assert writes[0].is_alive(), "the writer was not kept waiting by a lease"
            assert time.monotonic() < deadline
            time.sleep(0.001)  # polling the kernel's lock table, not synchronising

    [outcome], kept, copy = _apply(root, tmp_path / "log", action, Phase.SWAPPED, write_kept)
    writes[0].join(WAIT)
    assert outcome.status is Status.SKIPPED, outcome
    assert "was opened for writing while being acted on" in (outcome.reason or "")
    assert copy.read_bytes() == DATA and copy.stat().st_ino != kept.stat().st_ino
    assert kept.read_bytes().startswith(b"rewritten")  # the writer went on afterwards
