"""The cursor file of ``isccd subscribe --exec CMD --cursor FILE``: how far a hook got.

One JSON object (docs/schema/cursor.schema.json)::

    {"format": "isccd-subscribe-cursor", "version": 1,
     "store": "5f0c2a8e-93d4-4b6e-a1f2-7c3d9e0b4a17", "seq": 41, "done": [43], "started": [42]}

- ``store`` and ``seq``: every event of that store's log up to ``seq`` was handled (its command
  succeeded, or failed and was skipped by ``--on-failure skip``). The subscriber resumes with
  ``since`` = ``seq`` and ``store``.
- ``done``: events after ``seq`` that were handled already (with ``--jobs`` above 1 a later
  event's command may finish first): they are not run again.
- ``started``: events after ``seq`` whose command was started and is not known to have
  succeeded (the subscriber was killed, or the command failed under ``--on-failure stop``):
  they are run again, with ``ISCCD_HOOK_REDELIVERED=1``.

The file is written whole, mode 0600, as a new file (``FILE.tmp``, flushed to disk) renamed over
the name, and its directory flushed: a crash leaves the old cursor or the new one, never a part.
``FILE.lock`` (kept, as lock files must be) is flocked while a subscriber uses the cursor, and
its commands inherit it: a subscriber started again waits until no other subscriber, and no
command of a subscriber that was killed, holds it, so that no event's command runs twice at
once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from isccd.errors import CursorError

FORMAT = "isccd-subscribe-cursor"
VERSION = 1
#: A cursor is a few hundred bytes; a larger file is not one.
_MAX_BYTES = 1 << 20


@dataclasses.dataclass(frozen=True, slots=True)
class Cursor:
    """What a cursor file holds (see the module's docstring)."""

    store: str
    seq: int
    done: frozenset[int] = frozenset()
    started: frozenset[int] = frozenset()

    def to_json(self) -> dict[str, Any]:
        """The file's object."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "store": self.store,
            "seq": self.seq,
            "done": sorted(self.done),
            "started": sorted(self.started),
        }


def read_cursor(path: Path) -> Cursor | None:
    """The cursor in ``path``; ``None`` when there is no such file (a new cursor).

    Raises:
        CursorError: It cannot be read, or it is not a cursor of this version.
    """
    try:
        with path.open("rb") as file:
            data = file.read(_MAX_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CursorError(f"the cursor {str(path)!r} cannot be read: {exc.strerror}") from None
    if len(data) > _MAX_BYTES:
        raise CursorError(f"{str(path)!r} is not a cursor of isccd subscribe: over 1 MiB")
    try:
        return parse_cursor(json.loads(data))
    except (ValueError, UnicodeDecodeError) as exc:
        raise CursorError(f"{str(path)!r} is not a cursor of isccd subscribe: {exc}") from None


def parse_cursor(obj: object) -> Cursor:
    """The cursor of a file's JSON object.

    Raises:
        ValueError: It is not a cursor of this version; the message says why.
    """
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise ValueError(f'no "format": "{FORMAT}"')
    if obj.get("version") != VERSION:
        raise ValueError(f"version {obj.get('version')!r}, this isccd reads version {VERSION}")
    if set(obj) != {"format", "version", "store", "seq", "done", "started"}:
        raise ValueError(f"members {sorted(obj)}")
    store, seq = obj["store"], obj["seq"]
    if not isinstance(store, str) or not store:
        raise ValueError("no store identity")
    if not _seq(seq):
        raise ValueError(f"seq {seq!r} is not a sequence number")
    sets = {}
    for key in ("done", "started"):
        items = obj[key]
        if not isinstance(items, list) or not all(_seq(s) and s > seq for s in items):
            raise ValueError(f"{key} is not a list of sequence numbers after seq")
        sets[key] = frozenset(items)
    return Cursor(store, seq, sets["done"], sets["started"])


def _seq(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def write_cursor(path: Path, cursor: Cursor) -> None:
    """Replace the cursor in ``path`` by ``cursor``, atomically and durably.

    Raises:
        OSError: It cannot be written (a full disk, permissions); the old one is intact.
    """
    data = (json.dumps(cursor.to_json(), separators=(",", ":")) + "\n").encode("ascii")
    tmp = path.with_name(path.name + ".tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o600)
    try:
        os.fchmod(fd, 0o600)  # a FILE.tmp left by a crash may have been made otherwise
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    tmp.replace(path)
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(directory)  # the rename itself reaches the disk
    finally:
        os.close(directory)


@contextlib.contextmanager
def holding(path: Path, on_wait: Callable[[str], None]) -> Iterator[int]:
    """Hold ``path``'s lock (``FILE.lock``) for the block, waiting for it while another holds
    it (``on_wait`` is told so, once); the lock's descriptor. The folder is made (0700) when
    missing.

    The lock is an open file: a command given the descriptor holds it too, until it and every
    process it started that kept the descriptor have ended.

    Raises:
        CursorError: The lock cannot be made.
    """
    lock = path.with_name(path.name + ".lock")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise CursorError(f"the lock {str(lock)!r} cannot be made: {exc.strerror}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait(
                f"waiting for {str(lock)!r}: another isccd subscribe with this cursor, or a "
                "command a subscriber started, still holds it"
            )
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)
