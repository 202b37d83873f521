"""Races of ``isccd dedupe --apply`` against a second run, an undo, or a writer of the kept file.

A run is held at a known moment without any hook in isccd: its standard output is a pipe that
was filled before it started, so the run blocks in writing the line that reports its first
step, after that step and before anything is done to the next (whose files it may already
have checked: the steps of a batch are checked and logged together). Meanwhile the race does
its worst; then the pipe is drained and the run goes on. Every race ends by counting the
bytes that exist nowhere any more (must be 0).

Importable, so that ``bench/chaos.py`` runs it longer; :func:`remove_race` and
:func:`rewrite_race` return its figures.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from isccd.dedupe.plan import Group, Plan
from isccd.dedupe.planfile import plan_document
from tests.dedupe.conftest import plan_of, write

#: Longest a run may take to reach the moment it is held at.
DEADLINE = 60.0


def isccd(*args: str) -> list[str]:
    """The command line of ``isccd ARGS`` in this interpreter."""
    return [sys.executable, "-m", "isccd", *args]


def env_for(root: Path) -> dict[str, str]:
    """The environment of a command acting on ``root``: a watched root of this host (a plan
    acts on nothing else), with a state directory of its own beside it (the log's key)."""
    return {
        **os.environ,
        "ISCCD_WATCH__ROOTS": str(root),
        "STATE_DIRECTORY": str(root.parent / "state"),
    }


def _full_pipe() -> tuple[int, int, int]:
    """A pipe whose buffer is full (a write to it blocks): read end, write end, bytes in it."""
    r, w = os.pipe()
    flags = fcntl.fcntl(w, fcntl.F_GETFL)
    fcntl.fcntl(w, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    filled = 0
    for size in (4096, 1):  # whole pages first (as the buffer holds them), then any room left
        with contextlib.suppress(BlockingIOError):
            while True:
                filled += os.write(w, b"\0" * size)
    fcntl.fcntl(w, fcntl.F_SETFL, flags)
    return r, w, filled


def _outcomes(log: Path) -> int:
    try:
        data = log.read_bytes()
    except FileNotFoundError:
        return 0
    return data.count(b'"op":"done"') + data.count(b'"op":"failed"')


@dataclass(frozen=True, slots=True)
class Held:
    """A run held at the line of its first step.

    Attributes:
        proc: The run.
        read_fd: The read end of its standard output.
        filled: Bytes put in the pipe before it started.
    """

    proc: subprocess.Popen[bytes]
    read_fd: int
    filled: int


@contextlib.contextmanager
def held_run(args: list[str], log: Path, env: dict[str, str]) -> Iterator[Held]:
    """Start ``isccd dedupe ARGS --apply --log LOG`` and wait until it has done its first step
    and is blocked reporting it; the run is killed if the block is left early.

    Raises:
        AssertionError: The run ended, or did not get there within :data:`DEADLINE`.
    """
    r, w, filled = _full_pipe()
    command = isccd("dedupe", *args, "--apply", "--log", str(log))
    proc = subprocess.Popen(command, stdout=w, stderr=subprocess.DEVNULL, env=env)
    os.close(w)
    try:
        deadline = time.monotonic() + DEADLINE
        while _outcomes(log) < 1:
            assert proc.poll() is None, f"the run ended ({proc.returncode}) before its first step"
            assert time.monotonic() < deadline, "the run did not get to its first step"
            time.sleep(0.002)  # polling a real process's progress, not synchronising with it
        yield Held(proc, r, filled)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        os.close(r)


def release(held: Held) -> tuple[int, str]:
    """Drain the run's output until it ends; its exit status and what it printed."""
    chunks = []
    while chunk := os.read(held.read_fd, 65536):
        chunks.append(chunk)
    status = held.proc.wait(DEADLINE)
    return status, b"".join(chunks)[held.filled :].decode(errors="replace")


def keeping(plan: Plan, group: int, path: Path) -> Plan:
    """``plan`` with its ``group`` keeping the member at ``path``."""
    groups = list(plan.groups)
    members = groups[group].members
    keep = next(i for i, m in enumerate(members) if m.path == str(path))
    groups[group] = Group(groups[group].kind, members, keep)
    return replace(plan, groups=tuple(groups))


def save(plan: Plan, where: Path) -> Path:
    where.write_text(json.dumps(plan_document(plan)))
    return where


def lost(originals: dict[str, bytes], top: Path) -> int:
    """Bytes of ``originals`` whose content is nowhere under ``top`` any more."""
    present = set()
    for path in top.rglob("*"):
        if path.is_file() and not path.is_symlink():
            present.add(path.read_bytes())
    return sum(len(data) for data in set(originals.values()) if data not in present)


@dataclass(frozen=True, slots=True)
class RaceResult:
    """What one race left.

    Attributes:
        first: Exit status of the held run.
        second: Exit status of what raced it (``None`` for a writer).
        second_said: What it said on standard error.
        lost: Bytes that exist nowhere any more.
        copies: Names left holding the contested content.
    """

    first: int
    second: int | None
    second_said: str
    lost: int
    copies: int


def _filler(root: Path, rng: random.Random) -> list[Path]:
    """A group acted on first, so that the run is held before the contested one."""
    data = rng.randbytes(4096)
    return [write(root / "filler" / f"{c}.bin", data, mtime=1_000_000) for c in "ab"]


def remove_race(base: Path, seed: int = 0) -> RaceResult:
    """Two ``--remove --apply`` runs whose plans keep opposite copies of one file: the first is
    held after checking both its steps, the second runs whole, then the first goes on."""
    rng = random.Random(seed)
    root = base / "root"
    filler = _filler(root, rng)
    data = rng.randbytes(rng.randint(1, 64) * 1024)
    x = write(root / "x" / "photo.jpg", data, mtime=1_000_000)
    y = write(root / "y" / "photo.jpg", data, mtime=1_000_001)
    originals = {str(p): p.read_bytes() for p in (*filler, x, y)}
    plan = plan_of(root, [filler, [x, y]])
    mine = save(keeping(plan, 1, x), base / "mine.json")
    theirs = save(keeping(plan_of(root, [[x, y]]), 0, y), base / "theirs.json")
    env = env_for(root)
    with held_run(["--remove", "--plan", str(mine)], base / "mine.jsonl", env) as held:
        other = subprocess.run(
            isccd("dedupe", "--remove", "--plan", str(theirs), "--apply", "--log",
                  str(base / "theirs.jsonl")),
            capture_output=True, text=True, check=False, timeout=DEADLINE, env=env,
        )  # fmt: skip
        first, _ = release(held)
    copies = sum(p.exists() and p.read_bytes() == data for p in (x, y))
    return RaceResult(first, other.returncode, other.stderr, lost(originals, root), copies)


def rewrite_race(base: Path, action: str = "--link", seed: int = 0) -> RaceResult:
    """One run whose kept file is rewritten in place (same size, its modification time put
    back) after the run checked it and before it acts on its copy."""
    rng = random.Random(seed)
    root = base / "root"
    filler = _filler(root, rng)
    data = rng.randbytes(rng.randint(1, 64) * 1024)
    kept = write(root / "a" / "report.pdf", data, mtime=1_000_000)
    copy = write(root / "b" / "report.pdf", data, mtime=1_000_001)
    originals = {str(p): p.read_bytes() for p in (*filler, kept, copy)}
    plan = save(plan_of(root, [filler, [kept, copy]]), base / "plan.json")
    with held_run([action, "--plan", str(plan)], base / "run.jsonl", env_for(root)) as held:
        st = kept.stat()
        with kept.open("r+b") as f:  # in place: the same inode, size and (put back) mtime
            f.write(bytes(b ^ 0xFF for b in data[:4096]))
        os.utime(kept, ns=(st.st_atime_ns, st.st_mtime_ns))
        first, _ = release(held)
    copies = int(copy.exists() and copy.read_bytes() == data)
    return RaceResult(first, None, "", lost(originals, root), copies)
