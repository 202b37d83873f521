"""watchdog's inotify reader and observer, hooked to tell what watchdog only logs or swallows.

:class:`InotifyReader` passes on to the watcher (:mod:`isccd.watch.watcher`) a kernel queue
overflow, a directory that could not be watched (and why: the watch limit, or no permission to
read it), and the root's own watch reporting that the root was moved, deleted or unmounted;
from then on it passes on nothing more, since watchdog would report the moved tree's later
changes under the root's old path. :class:`InotifyObserver` gives each root its own reader (so
an overflow is attributed to exactly one root).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
from collections.abc import Callable

from watchdog.observers.api import BaseObserver
from watchdog.observers.inotify import InotifyEmitter
from watchdog.observers.inotify_c import (
    CallbackId,
    InotifyConstants,
    InotifyEvent,
    InotifyFD,
    Mask,
    WatchCallback,
    WatchDescriptor,
)

#: inotify events on the root's own watch that mean the path no longer leads to it (the last
#: one is ``IN_UNMOUNT``, which watchdog does not name).
_ROOT_LEFT = InotifyConstants.IN_MOVE_SELF | InotifyConstants.IN_DELETE_SELF | 0x2000


_log = logging.getLogger(__name__)


class InotifyReader(InotifyFD):
    """watchdog's inotify reader, telling us what it otherwise only logs or swallows, and not
    warning of what is harmless.

    Args:
        root: The watched root.
        on_overflow: The kernel queue overflowed.
        on_watch_failed: A directory could not be watched (its path and the errno).
        on_root_left: The root was moved, deleted or unmounted; no event is passed on after it.
        on_dir_attrib: A directory's mode or owner changed (it may be readable now).
    """

    def __init__(
        self,
        root: bytes,
        on_overflow: Callable[[], None],
        on_watch_failed: Callable[[bytes, int], None],
        on_root_left: Callable[[], None],
        on_dir_attrib: Callable[[], None],
    ) -> None:
        super().__init__()
        self._root = root
        self._root_wd: WatchDescriptor | None = None
        self._left = False
        self._on_overflow = on_overflow
        self._on_watch_failed = on_watch_failed
        self._on_root_left = on_root_left
        self._on_dir_attrib = on_dir_attrib

    @property
    def root(self) -> str:
        """The root watched."""
        return os.fsdecode(self._root)

    def handle_event(self, event: InotifyEvent) -> None:
        if self._left:
            return  # the tree is elsewhere now: its events would name the wrong paths
        if event.wd == self._root_wd and event.mask & _ROOT_LEFT:
            # watchdog would report a deleted root as one removal of everything below it,
            # and ignores a moved one; the daemon decides what the root's absence means.
            self._left = True
            self._on_root_left()
            return
        super().handle_event(event)
        # After watchdog has rebuilt its watches (it removes and re-adds them): the reconcile
        # this triggers then starts once the root is watched again, and finds whatever changed
        # while it was not.
        if event.is_queue_overflow:
            self._on_overflow()
        elif event.is_attrib and event.is_directory:
            self._on_dir_attrib()

    def _add_callback(
        self, path: bytes, mask: Mask, callback: WatchCallback, id_: CallbackId
    ) -> WatchDescriptor:
        # watchdog's own version, without its warning. When a tree is created quickly, watchdog
        # adds the watch of a new subdirectory twice (once walking its new parent, once for its
        # own creation event) and warns that the callback "will be overwritten" with the very
        # same callback: harmless. Silencing it with a warnings filter would change
        # process-wide state, and warnings.catch_warnings is not thread-safe (the emitter and
        # the event loop's threads add watches concurrently); so the warning is not raised.
        # Called by add_callback under watchdog's lock, as the original.
        watch = self._get_or_create_watch(path, mask)
        watch.callbacks[id_] = callback
        return watch.wd

    def add_callback(
        self, path: bytes, mask: Mask, callback: WatchCallback, id_: CallbackId
    ) -> WatchDescriptor:
        if path == self._root:
            mask = Mask(mask | InotifyConstants.IN_MOVE_SELF)
        try:
            wd = super().add_callback(path, mask, callback, id_)
        except OSError as exc:
            # watchdog drops this for every directory but the root; we poll instead, or try
            # again once the directory can be read.
            if exc.errno in (errno.ENOSPC, errno.EPERM):
                self._on_watch_failed(path, exc.errno)
            raise
        if wd == -1:
            # watchdog ignores EACCES from inotify_add_watch and returns the failed descriptor.
            self._on_watch_failed(path, errno.EACCES)
        elif path == self._root:
            self._root_wd = wd
        return wd


class InotifyObserver(BaseObserver):
    """An observer with its own (hooked) inotify instance."""

    def __init__(self, inotify_fd: InotifyReader) -> None:
        self._inotify_fd = inotify_fd
        inotify_fd.start()
        super().__init__(InotifyEmitter, inotify_fd=inotify_fd)

    def on_thread_stop(self) -> None:
        try:
            super().on_thread_stop()
        except Exception:
            # watchdog keys its inotify watches by path: a watched directory that was swapped
            # for a link or renamed can make it fail to take one down (KeyError), and then
            # neither the remaining emitters nor the observer's own thread would ever stop.
            _log.warning("watch_stop_failed", exc_info=True, extra={"root": self._inotify_fd.root})
            for emitter in list(self.emitters):
                with contextlib.suppress(Exception):
                    emitter.stop()
        finally:
            self._inotify_fd.stop()
            if self._inotify_fd.is_alive():
                self._inotify_fd.join()
