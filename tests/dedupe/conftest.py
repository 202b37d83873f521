"""Helpers of the dedupe tests: real files, plans made from them as the command makes them from
the index, and file systems mounted for the cases that need another one (as root)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from blake3 import blake3

from isccd.dedupe.apply import Outcome, apply_steps
from isccd.dedupe.build import Found, FoundGroup, build_plan, observe
from isccd.dedupe.keep import DEFAULT_RULES, KeepRule
from isccd.dedupe.log import ActionLog
from isccd.dedupe.plan import Action, GroupKind, Plan, steps_of
from isccd.iscc import encode_component
from isccd.iscc.constants import MT, ST, VS


def write(path: Path, data: bytes, mtime: int | None = None) -> Path:
    """A file with ``data`` (and, if given, that modification time in seconds)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def data_code(flipped: int, shift: int = 0) -> str:
    """A 64-bit Data-Code: ``flipped`` bits (from bit ``shift`` on) from the one of all
    zeros."""
    digest = (((1 << flipped) - 1) << shift).to_bytes(8, "big")
    return "ISCC:" + encode_component(MT.DATA, ST.NONE, VS.V0, 64, digest)


def plan_of(
    root: Path,
    groups: Sequence[Sequence[Path]],
    kind: GroupKind = GroupKind.EXACT,
    rules: Sequence[KeepRule] = DEFAULT_RULES,
    keep_in: Sequence[str] = (),
    *,
    codes: Mapping[Path, str] | None = None,
) -> Plan:
    """The plan the command would make from these groups (digests computed here, with the
    blake3 library, as the index records them; near groups: each member's code in ``codes``,
    all near each other by default, the first member the centre, the threshold 8)."""
    found = []
    for group in groups:
        members = []
        for i, p in enumerate(group):
            digest = blake3(p.read_bytes()).hexdigest()[:16] if kind is GroupKind.EXACT else None
            code = None
            if kind is GroupKind.NEAR:
                code = codes[p] if codes is not None else data_code(i % 2)
            members.append(
                Found((str(p),), str(root), p.stat().st_size, digest, code, centre=i == 0)
            )
        threshold = 8 if kind is GroupKind.NEAR else None
        found.append(FoundGroup(kind, tuple(members), threshold))
    observed = observe(found, [str(root)])
    return build_plan(observed.groups, rules, keep_in, observed.thresholds)


#: The action-log key of the tests that call the engine directly (the commands make theirs in
#: the state directory).
KEY = bytes(range(32))


def run_plan(
    plan: Plan,
    action: Action,
    log: Path,
    *,
    move_to: Path | None = None,
    near: bool = False,
    keep_in: Sequence[str] = (),
    key: bytes = KEY,
    any_owner: bool = False,
) -> list[Outcome]:
    """Apply ``plan`` as ``isccd dedupe --apply`` does (``any_owner``: ``--link-any-owner``)."""
    target = str(move_to) if move_to is not None else None
    steps, _ = steps_of(plan, action, near=near, move_to=target, protected=tuple(keep_in))
    with ActionLog(log, key) as action_log:
        action_log.run(action, apply=True)
        return apply_steps(steps, action_log, move_to=target, any_owner=any_owner)


@pytest.fixture(autouse=True)
def _own_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default state directory of the commands these tests run (where they keep the
    action-log key): the test's own, never the user's or the system's."""
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path / "default-state"))


def needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a file system needs root")


@contextlib.contextmanager
def mounted(kind: str, where: Path, work: Path, size: str = "64m") -> Iterator[Path]:
    """A file system of ``kind`` (``tmpfs``, ``btrfs``, ``ext4``) mounted at ``where``
    (``size``: of a tmpfs)."""
    needs_root()
    where.mkdir(parents=True, exist_ok=True)
    if kind == "tmpfs":
        options = f"size={size}"
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], check=True)
    else:
        mkfs = shutil.which(f"mkfs.{kind}")
        if mkfs is None:
            pytest.skip(f"mkfs.{kind} is not installed (Debian: btrfs-progs, e2fsprogs)")
        image = work / f"{kind}.img"
        with image.open("wb") as f:
            f.truncate(160 * 1024 * 1024)  # btrfs wants at least ~110 MiB
        subprocess.run([mkfs, "-q", str(image)], check=True, capture_output=True)
        done = subprocess.run(
            ["mount", "-o", "loop", str(image), str(where)], check=False, capture_output=True
        )
        if done.returncode != 0:
            pytest.skip(f"cannot loop-mount a {kind} image: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(mnt: Path, leave: int = 0) -> Path:
    """Fill the file system at ``mnt`` up to ``leave`` free bytes with one file (its path)."""
    filler = mnt / "filler"
    with filler.open("ab") as f:
        while (free := os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize) > leave:
            try:
                f.write(bytes(min(free - leave, 1 << 20)))
                f.flush()
            except OSError:
                break
    return filler
