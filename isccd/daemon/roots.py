"""Watching the roots: the watcher, roots that cannot be watched, and roots that come and go.

:class:`Roots` owns the :class:`~isccd.watch.watcher.Watcher` (a reload with other watch
options replaces it) and knows why a root is not watched. Each root's parent is watched too,
whether the root is there or not, so that a root coming back is noticed at once.

A root is checked every ``poll_interval`` and at once when the watcher tells of it (the root's
own watch saw it moved, deleted or unmounted; its parent saw an entry of its name come, go or
change). :meth:`Roots.check` compares what is watched with what the path holds now:

- a watched root whose path no longer leads to the directory watched (moved away, deleted,
  replaced, a disk unmounted or mounted over it) is unwatched; if a directory is there now it
  is watched instead, and either way the root is reconciled. A reconcile of a root that is
  missing, or on another device with few of its files, reports it unavailable and keeps its
  index (:meth:`isccd.daemon.scans.Scans.unavailable`, :mod:`isccd.pipeline.rootdev`); the
  daemon announces that as ``root.unavailable``, and its return as ``root.available``;
- a root not watched (missing at start, gone since, unreadable) whose directory is there is
  watched and reconciled;
- a watched root with directories that could not be read, one of which can be now, is watched
  again whole (which watches them) and reconciled. The watcher asks for this check when a
  directory's mode changes, and the daemon after each reconcile a client asked for
  (``rescan``, ``sync``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence

import structlog

from isccd.daemon.feed import Feed
from isccd.watch.presence import identity
from isccd.watch.watcher import RootStatus, Watcher, WatcherClosedError, WatcherOptions


class Roots:
    """The watcher and the presence of every root.

    Args:
        options: How roots are watched.
        feed: Where the watcher's changes, lost events and degradations go.
        roots: The configured roots now.
        request: Asks for a reconcile of a root, with its reason.
        interval: Seconds between checks of every root (read at each wait).
    """

    def __init__(
        self,
        options: WatcherOptions,
        feed: Feed,
        *,
        roots: Callable[[], Sequence[str]],
        request: Callable[[str, str], object],
        interval: Callable[[], float],
    ) -> None:
        self._options = options
        self._feed = feed
        self._roots = roots
        self._request = request
        self._interval = interval
        self._watcher: Watcher | None = None
        self._unwatched: dict[str, str] = {}
        self._due: set[str] = set()
        self._wake = asyncio.Event()

    # -- watching ------------------------------------------------------------------------------

    def start(self) -> None:
        """Make the watcher (on the loop); roots are added with :meth:`watch`."""
        feed = self._feed
        self._watcher = Watcher(
            asyncio.get_running_loop(),
            self._options,
            feed.on_change,
            feed.on_recrawl,
            feed.on_degraded,
            on_root=self.wake,
        )

    async def close(self) -> None:
        """Stop watching everything (idempotent). Until :meth:`start` makes another watcher,
        nothing is watched again: the loop checking the roots may still run (a shutdown
        closes the watcher first), and a check must not start what no one would stop."""
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            await asyncio.to_thread(watcher.close)

    async def watch(self, root: str) -> bool:
        """Watch a root (and its parent, to notice it come and go); one that cannot be read
        is reported, not fatal, and watched once it can.

        Returns:
            Whether the root is watched.
        """
        watcher = self._watcher
        if watcher is None:
            return False
        log = structlog.get_logger()
        await asyncio.to_thread(watcher.track, root)
        try:
            status = await asyncio.to_thread(watcher.watch, root)
        except WatcherClosedError:  # closed meanwhile (a shutdown, a rewatch): not this root's
            return False
        except OSError as exc:
            note = f"not watched: {exc.strerror or exc}"
        else:
            self._unwatched.pop(root, None)
            log.info("watching", root=root, mode=status.mode.value, fstype=status.fstype)
            return True
        if self._unwatched.get(root) != note:  # said once, not at every retry
            log.error("root_unavailable", root=root, error=note)
        self._unwatched[root] = note
        return False

    async def unwatch(self, root: str, why: str) -> None:
        """Stop watching a root that is not the directory watched any more."""
        if self._watcher is not None:
            await asyncio.to_thread(self._watcher.unwatch, root)
        self._unwatched[root] = f"not watched: {why}"

    async def drop(self, root: str) -> None:
        """Forget a root that is no longer configured."""
        if self._watcher is not None:
            await asyncio.to_thread(self._watcher.unwatch, root)
            await asyncio.to_thread(self._watcher.untrack, root)
        self._unwatched.pop(root, None)

    async def rewatch(self, options: WatcherOptions, roots: Sequence[str]) -> None:
        """Watch ``roots`` again with new options (a new watcher), and reconcile them."""
        await self.close()
        self._options = options
        self.start()
        for root in roots:
            await self.watch(root)
            self._request(root, "rewatch")

    async def retry_limited(self) -> None:
        """Watch again the roots that hit an inotify limit: the administrator may have raised
        it (the sysctl ``isccd status`` named) before reloading."""
        if self._watcher is None:
            return
        for status in self._watcher.status():
            if status.root in self._roots() and any(d.fix for d in status.degradations):
                await asyncio.to_thread(self._watcher.unwatch, status.root)
                await self.watch(status.root)
                self._request(status.root, "rewatch")

    async def polled_paths(self) -> list[tuple[str, str]]:
        """``(root, directory)`` pairs to poll (see :meth:`Watcher.polled_paths`)."""
        if self._watcher is None:
            return []
        return await asyncio.to_thread(self._watcher.polled_paths)

    def status(self) -> dict[str, RootStatus]:
        """How each watched root is watched."""
        return {s.root: s for s in (self._watcher.status() if self._watcher else [])}

    def unwatched(self, root: str) -> str | None:
        """Why ``root`` is not watched, if it is not."""
        return self._unwatched.get(root)

    def notes(self, root: str) -> list[str]:
        """Why ``root`` is not fully watched and what would fix it, for ``isccd status``."""
        notes = []
        status = self.status().get(root)
        if status is not None:
            for d in status.degradations:
                where = ", ".join(d.paths[:3]) + (" ..." if len(d.paths) > 3 else "")
                notes.append(f"{where}: {d.reason}" + (f"; fix: sysctl {d.fix}" if d.fix else ""))
            if status.overflows:
                notes.append(f"{status.overflows} event queue overflows; fix: sysctl {status.hint}")
        if root in self._unwatched:
            notes.append(self._unwatched[root])
        return notes

    # -- presence ------------------------------------------------------------------------------

    def wake(self, root: str) -> None:
        """Check ``root`` now (on the loop)."""
        self._due.add(root)
        self._wake.set()

    async def run(self) -> None:
        """Check the roots told of at once, and every root every interval; until cancelled."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._interval())
            self._wake.clear()
            due, self._due = self._due, set()
            for root in sorted(due) if due else list(self._roots()):
                await self.check(root)

    async def check(self, root: str) -> None:
        """Compare what is watched of ``root`` with what its path holds, and act (see the module
        docstring)."""
        watcher = self._watcher
        if watcher is None or root not in self._roots():
            return
        await asyncio.to_thread(watcher.track, root)
        log = structlog.get_logger()
        if watcher.watching(root):
            if await asyncio.to_thread(watcher.stale, root):
                log.warning("root_left", root=root)
                await self.unwatch(root, "the root was moved, deleted or unmounted")
                there = await asyncio.to_thread(identity, root) is not None
                self._request(
                    root, "root replaced" if there and await self.watch(root) else "root gone"
                )
            elif await asyncio.to_thread(watcher.readable_again, root):
                log.info("directories_readable", root=root)
                await self.unwatch(root, "watched again")
                if await self.watch(root):
                    self._request(root, "readable again")
        elif await asyncio.to_thread(identity, root) is not None and await self.watch(root):
            log.info("root_back", root=root)
            self._request(root, "root back")
