"""The bridge from watchdog's observer thread to the event loop, and what its events mean.

watchdog calls handlers on its observer thread. :class:`LoopHandler` does nothing there but
``loop.call_soon_threadsafe``; the event is translated by :func:`to_change` on the loop, where the
debouncer lives. A closed loop (shutdown) drops the event: the next start reconciles anyway.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)

from isccd.watch.debounce import Change, ChangeKind

#: The events asked of the kernel. Opening and reading files (isccd's own hashing included) is
#: left out, so hashing a file can never trigger another look at it. Attribute changes count
#: (``touch`` sets the modification time). A write (``IN_MODIFY``) and the close after writing
#: (``IN_CLOSE_WRITE``) are told apart: a file written to is coded once it is closed (see
#: :mod:`isccd.watch.debounce`).
EVENT_FILTER: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]


def to_change(event: FileSystemEvent, root: str) -> Change | None:
    """What a watchdog event means for the index, or None when it means nothing.

    Synthetic events (watchdog's guesses about the contents of a directory that was created or
    moved) are dropped: the directory itself is scanned, and the rename of a directory moves
    everything below it. Changes to a directory's own listing are dropped too; the entries'
    own events say what changed.
    """
    if event.is_synthetic:
        return None
    src, dest, is_dir = _text(event.src_path), _text(event.dest_path), event.is_directory
    kind: ChangeKind | None
    if event.event_type == "moved":
        if src and dest:
            return Change(ChangeKind.MOVED, root, src, dest, is_dir=is_dir)
        # A move across the root's boundary: a removal, or an arrival.
        if src:
            kind = ChangeKind.REMOVED
        else:
            kind, src = (ChangeKind.DIR_ADDED if is_dir else ChangeKind.TOUCHED), dest
    elif event.event_type == "deleted":
        kind = ChangeKind.REMOVED
    elif is_dir:
        kind = ChangeKind.DIR_ADDED if event.event_type == "created" else None
    else:
        kind = _CONTENT_EVENTS.get(event.event_type)
    return None if kind is None else Change(kind, root, src, is_dir=is_dir)


_CONTENT_EVENTS = {
    "created": ChangeKind.TOUCHED,
    "attrib": ChangeKind.TOUCHED,
    "modified": ChangeKind.WRITTEN,
    "closed": ChangeKind.CLOSED,
}


def _text(path: bytes | str) -> str:
    return os.fsdecode(path) if isinstance(path, bytes) else path


class LoopHandler(FileSystemEventHandler):
    """Hands every event of one root to ``sink`` on the event loop.

    Args:
        loop: The loop that owns the debouncer.
        root: The watched root, carried into every :class:`Change`.
        sink: Called on the loop with each meaningful change.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, root: str, sink: Callable[[Change], None]
    ) -> None:
        super().__init__()
        self._loop = loop
        self._root = root
        self._sink = sink

    def dispatch(self, event: FileSystemEvent) -> None:
        """Runs on the observer thread: schedule :meth:`_deliver` on the loop, nothing else."""
        try:
            self._loop.call_soon_threadsafe(self._deliver, event)
        except RuntimeError:  # the loop is closed: shutting down, the next start reconciles
            return

    def _deliver(self, event: FileSystemEvent) -> None:
        change = to_change(event, self._root)
        if change is not None:
            self._sink(change)
