"""Whether a root is still the directory that is watched: its identity, and a watch on its parent.

inotify watches inodes, not paths. A root moved away (``mv W W.old``) keeps its watches, which
go on reporting changes under the old path; a root deleted and created again (``rm -rf W;
cp -a backup W``) is a new directory nobody watches. So each root's identity (``st_dev`` and
``st_ino`` of the directory) is noted when it is watched and compared with the path's now
(:func:`identity`), and the parent directory of every root is watched (:class:`ParentWatch`)
so that a root appearing, disappearing or renamed there is noticed at once; a periodic check
covers what inotify cannot see (a disk mounted or unmounted, a parent that is itself gone).

Only :func:`identity` and :class:`ParentWatch` touch the disk; the callbacks run on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat as stat_module
import threading
from collections.abc import Callable
from pathlib import Path

from watchdog.observers.inotify_c import (
    CallbackId,
    InotifyConstants,
    InotifyEvent,
    InotifyFD,
    Mask,
    WatchDescriptor,
)

#: ``(st_dev, st_ino)`` of a directory.
Identity = tuple[int, int]

_PARENT_MASK = Mask(
    InotifyConstants.IN_CREATE
    | InotifyConstants.IN_DELETE
    | InotifyConstants.IN_MOVED_FROM
    | InotifyConstants.IN_MOVED_TO
    | InotifyConstants.IN_ATTRIB
    | InotifyConstants.IN_ONLYDIR
)


def identity(path: str) -> Identity | None:
    """The identity of the directory at ``path`` now (symbolic links followed), or None when
    there is no directory there (or it cannot be stat'ed)."""
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat_module.S_ISDIR(st.st_mode) else None


class ParentWatch:
    """Watches the parent directories of roots for entries named like a root.

    One inotify instance (and reader thread) for all parents, started with the first root.
    ``on_root(root)`` is called on the loop when an entry of a root's name is created,
    deleted, renamed or has its attributes changed in its parent (``chmod`` of an unreadable
    root), when the parent itself goes, and for every root when the kernel queue overflows.
    A parent that cannot be watched (it is missing too) is retried by :meth:`add`.

    Args:
        loop: Where ``on_root`` runs.
        on_root: Told which root may have appeared, gone or changed.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, on_root: Callable[[str], None]) -> None:
        self._loop = loop
        self._on_root = on_root
        self._lock = threading.Lock()
        self._inotify: InotifyFD | None = None
        self._roots: dict[str, tuple[bytes, bytes]] = {}  # root -> (parent, name)
        self._watches: dict[bytes, WatchDescriptor] = {}  # parent -> wd
        self._id = CallbackId(id(self))
        self._closed = False

    def add(self, root: str) -> bool:
        """Watch the parent of ``root`` (blocking; idempotent). Returns False when the parent
        cannot be watched now (a later call tries again)."""
        parent, name = os.path.split(os.fsencode(root))
        # Held while the watch is added (watchdog's reader calls back without its own lock
        # held, so this cannot deadlock): two roots in one parent add one watch.
        with self._lock:
            if self._closed:  # a reader started now would be stopped by no one
                return False
            self._roots[root] = (parent, name)
            if parent in self._watches:
                return True
            if self._inotify is None:
                self._inotify = InotifyFD()
                self._inotify.start()
            try:
                self._watches[parent] = self._inotify.add_callback(
                    parent, _PARENT_MASK, self, self._id
                )
            except OSError:
                return False
        return True

    def remove(self, root: str) -> None:
        """Stop watching the parent of ``root`` unless another root shares it (blocking)."""
        with self._lock:
            found = self._roots.pop(root, None)
            if found is None or any(p == found[0] for p, _ in self._roots.values()):
                return
            wd = self._watches.pop(found[0], None)
            inotify = self._inotify
        if wd is not None and inotify is not None:
            with contextlib.suppress(OSError, KeyError):
                inotify.remove_callbacks([(wd, self._id)])

    def close(self) -> None:
        """Stop the reader thread (blocking); idempotent. Nothing is watched afterwards:
        :meth:`add` returns False."""
        with self._lock:
            self._closed = True
            inotify, self._inotify = self._inotify, None
            self._watches.clear()
        if inotify is not None:
            inotify.stop()
            if inotify.is_alive():
                inotify.join()

    # -- watchdog's WatchCallback protocol (on the reader thread) -------------------------------

    def on_event(self, event: InotifyEvent) -> None:
        """An entry of a watched parent changed: tell about the root of that name."""
        with self._lock:
            parent = next((p for p, wd in self._watches.items() if wd == event.wd), None)
            roots = [r for r, (p, n) in self._roots.items() if p == parent and n == event.name]
        for root in roots:
            self._tell(root)

    def on_watch_deleted(self, wd: WatchDescriptor) -> None:
        """The parent itself is gone: its roots are too."""
        with self._lock:
            parent = next((p for p, w in self._watches.items() if w == wd), None)
            if parent is None:
                return
            del self._watches[parent]
            roots = [r for r, (p, _) in self._roots.items() if p == parent]
        for root in roots:
            self._tell(root)

    def on_queue_overflow(self) -> None:
        """Events were lost: any root may have changed."""
        with self._lock:
            roots = list(self._roots)
        for root in roots:
            self._tell(root)

    def on_events_lost(self) -> None:
        """Called once every callback heard of an overflow: the roots were told of then."""

    def _tell(self, root: str) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: shutting down
            self._loop.call_soon_threadsafe(self._on_root, root)
