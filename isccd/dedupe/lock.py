"""The lock that keeps dedupe runs and undos off the same tree at once.

Two runs acting on one tree at once can each keep the copy the other deletes; a run and an undo
can each undo the other. Every ``--apply`` and ``--undo`` therefore holds, for as long as it
acts, an exclusive ``flock`` on each watched root folder it acts in, and a shared one on every
folder above it, so that a run on ``/srv`` and one on ``/srv/photos`` exclude each other too,
while runs on ``/srv/a`` and ``/srv/b`` do not. The lock is on the folders themselves, not on a
file in a state directory: it holds whatever index, plan file or action log each run uses, and
for every user. A lock that is taken is never waited for: the run stops before touching
anything, and says which folder is locked.

``flock`` locks are released by the kernel when the process ends, however it ends (SIGKILL
included): a crashed run never leaves a stale lock behind.

The lock only keeps well-behaved runs apart; it is not what makes one run safe against other
processes changing the files meanwhile: the checks around each action are
(:mod:`isccd.dedupe.apply`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from isccd.errors import DedupeError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class TreeLockedError(DedupeError):
    """Another dedupe run or undo holds the lock on a folder this one would act in.

    Attributes:
        path: The folder locked.
    """


@dataclass(frozen=True, slots=True)
class Held:
    """The locks a run holds.

    Attributes:
        roots: The root folders locked exclusively.
        unlocked: Folders that could not be locked at all (a file system without ``flock``,
            a folder that cannot be opened), and why: runs there are not kept apart.
    """

    roots: tuple[str, ...]
    unlocked: tuple[tuple[str, str], ...]


def _ancestors(root: str) -> list[str]:
    """The folders above ``root``, ``/`` first."""
    parts = root.rstrip("/").split("/")[1:]
    return ["/" + "/".join(parts[:i]) for i in range(len(parts))]


def _take(path: str, *, exclusive: bool, owner: str) -> int | str:
    """An open descriptor of the folder ``path`` holding its lock, or why it cannot be locked.

    Raises:
        TreeLockedError: Another process holds a conflicting lock.
    """
    try:
        fd = os.open(path, _DIR_FLAGS)
    except OSError as exc:
        return f"cannot be opened: {exc.strerror}"
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            what = "it" if path == owner else f"the folder {path} above it"
            raise TreeLockedError(
                owner, f"another dedupe run or undo is acting on {what} (it holds the lock); "
                "nothing was touched: run again when it is done"
            ) from None  # fmt: skip
        return f"cannot be locked: {exc.strerror}"
    return fd


@contextlib.contextmanager
def tree_lock(roots: Iterable[str]) -> Iterator[Held]:
    """Hold the dedupe lock on ``roots`` (absolute, resolved folders) for the block.

    Each root is locked exclusively and each folder above it shared, in path order (the same
    order in every process). Nothing is waited for.

    Raises:
        TreeLockedError: Another run or undo holds a lock on one of them; none is held.
    """
    wanted = sorted({r.rstrip("/") or "/" for r in roots})
    modes: dict[str, tuple[bool, str]] = {}
    for root in wanted:
        for above in _ancestors(root):
            modes.setdefault(above, (False, root))
        modes[root] = (True, root)
    fds: list[int] = []
    unlocked: list[tuple[str, str]] = []
    try:
        for path in sorted(modes):
            exclusive, owner = modes[path]
            got = _take(path, exclusive=exclusive, owner=owner)
            if isinstance(got, int):
                fds.append(got)
            elif exclusive:
                unlocked.append((path, got))
        yield Held(tuple(wanted), tuple(unlocked))
    finally:
        for fd in fds:
            os.close(fd)  # closing the last descriptor of a flock releases it
