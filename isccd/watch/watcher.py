"""One inotify observer per root, and the detection of everything watchdog keeps quiet.

watchdog recovers from a kernel queue overflow (``IN_Q_OVERFLOW``) by re-adding its watches,
skips subdirectories it cannot watch (``ENOSPC`` from ``inotify_add_watch`` once
``fs.inotify.max_user_watches`` is used up, ``EACCES`` for a directory it may not read), and
ignores the root itself being moved (``IN_MOVE_SELF``); in each case events are lost, or
reported under the wrong path, without a word to the handler. The reader of
:mod:`isccd.watch.inotify` hooks the public methods of watchdog's through which they pass, so
isccd learns of them and answers:

- an overflow becomes a :class:`~isccd.watch.debounce.Recrawl` of the root (stat-only reconcile);
- a directory that cannot be watched for the watch limit becomes a polled subtree, announced as
  a :class:`Degradation` with the sysctl that would fix it, and scanned at once;
- a directory that cannot be read is announced as a :class:`Degradation` too; the daemon asks
  :meth:`Watcher.readable_again` periodically, and at once when a directory's mode changes
  (``on_root``), and watches the root again once it is;
- the root moved, deleted or unmounted detaches its observer at once (later events of the
  moved tree would name paths that are no longer its) and tells ``on_root``; so does a change
  of the root's entry in its parent (:class:`~isccd.watch.presence.ParentWatch`). The daemon
  then compares the root's identity (:meth:`Watcher.stale`) and watches it again, or reports
  it unavailable.

Roots (and mounts below roots) on network or FUSE filesystems are polled from the start, because
inotify never hears of changes made on another machine. Polling itself is the daemon's job (a
periodic stat-only reconcile of :meth:`Watcher.polled_paths`): the store already holds every
file's validators, so no second in-memory snapshot of the tree is kept.

Each root has its own inotify instance (and so its own event queue), so an overflow is
attributed to exactly one root. Callbacks run on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import errno
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from isccd.fspath import is_below
from isccd.watch import mounts, presence
from isccd.watch.debounce import Change, Recrawl, RecrawlReason
from isccd.watch.handler import EVENT_FILTER, LoopHandler
from isccd.watch.inotify import InotifyObserver, InotifyReader

#: Seconds to wait for an observer's thread to end when a root is no longer watched.
_STOP_TIMEOUT = 10.0

FORCED = "polling forced by configuration"
#: The reason of a :class:`Degradation` for directories that cannot be read.
UNREADABLE = (
    "cannot be read (permission denied): tried again when its mode changes, periodically and at "
    "every rescan"
)


class WatcherClosedError(RuntimeError):
    """The watcher was closed: the root is not watched (and nothing was started)."""

    def __init__(self, root: str) -> None:
        super().__init__(f"the watcher is closed: {root} is not watched")
        self.root = root


class WatchMode(enum.StrEnum):
    """How a root's changes are noticed."""

    INOTIFY = "inotify"
    """Every directory is watched by inotify."""
    PARTIAL = "partial"
    """inotify, with some subtrees polled (watch limit, or a network mount below the root) or
    not watched because they cannot be read."""
    POLLING = "polling"
    """The whole root is polled."""


@dataclass(frozen=True, slots=True)
class Degradation:
    """Part of a root is polled instead of watched, and why.

    Attributes:
        root: The watched root.
        paths: The polled directories (the root itself when the whole root is polled).
        reason: Why, in words.
        fix: The sysctl setting that would let inotify watch it, when one would.
    """

    root: str
    paths: tuple[str, ...]
    reason: str
    fix: str | None = None


@dataclass(frozen=True, slots=True)
class RootStatus:
    """How one root is watched, for ``isccd status``.

    Attributes:
        root: The watched root.
        mode: inotify, partial or polling.
        fstype: The filesystem type of the root's mount.
        degradations: What is polled and why.
        overflows: Kernel queue overflows seen since the root was added.
        hint: What would prevent the overflows, when there were any.
    """

    root: str
    mode: WatchMode
    fstype: str
    degradations: tuple[Degradation, ...] = ()
    overflows: int = 0
    hint: str | None = None


@dataclass(frozen=True, slots=True)
class WatcherOptions:
    """How roots are watched.

    Attributes:
        force_polling: Poll every root instead of using inotify.
        follow_symlinks: Watch directories reached through symbolic links.
        mountinfo: Where the mount table is read.
        proc_sys: Where the inotify limits are read (to name the one reached and suggest a
            better value).
    """

    force_polling: bool = False
    follow_symlinks: bool = False
    mountinfo: Path = Path("/proc/self/mountinfo")
    proc_sys: Path = Path("/proc/sys")


@dataclass
class _Root:
    root: str
    fstype: str
    identity: presence.Identity | None = None
    observer: InotifyObserver | None = None
    degradations: list[Degradation] = field(default_factory=list)
    polled: set[str] = field(default_factory=set)
    unreadable: set[str] = field(default_factory=set)
    overflows: int = 0
    left: bool = False


class Watcher:
    """Watches roots and reports changes, lost events and degradations on the event loop.

    Args:
        loop: The loop every callback runs on.
        options: How roots are watched.
        on_change: Each meaningful change (to the debouncer).
        on_recrawl: A root lost events and must be reconciled.
        on_degraded: Part of a root is now polled, or cannot be read.
        on_root: A root (watched or only tracked) may have been moved, deleted, unmounted or
            created: check it (:meth:`stale`).

    :meth:`watch`, :meth:`unwatch`, :meth:`track`, :meth:`stale` and :meth:`readable_again`
    block (adding watches walks the tree); call them from a worker thread. Everything else is
    cheap.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        options: WatcherOptions,
        on_change: Callable[[Change], None],
        on_recrawl: Callable[[Recrawl], None],
        on_degraded: Callable[[Degradation], None],
        *,
        on_root: Callable[[str], None] = lambda root: None,
    ) -> None:
        self._loop = loop
        self._options = options
        self._on_change = on_change
        self._on_recrawl = on_recrawl
        self._on_degraded = on_degraded
        self._on_root = on_root
        self._lock = threading.Lock()
        self._roots: dict[str, _Root] = {}
        self._failed: dict[str, dict[str, int]] = {}
        self._parents = presence.ParentWatch(loop, on_root)
        self._closed = False

    def watch(self, root: str) -> RootStatus:
        """Start watching ``root`` (blocking). Watching a root twice does nothing.

        Returns:
            How the root is watched. A degradation found while adding watches is also
            reported through ``on_degraded``.

        Raises:
            OSError: The root cannot be read at all.
            WatcherClosedError: The watcher was closed (before or during the call): nothing
                is left watching.
        """
        if self._closed:
            raise WatcherClosedError(root)
        os.scandir(root).close()  # fail early on a missing or unreadable root
        table = mounts.read_mountinfo(self._options.mountinfo)
        real = mounts.resolve(root)
        mount = mounts.mount_of(real, table)
        state = _Root(root, mount.fstype if mount else "unknown", presence.identity(root))
        with self._lock:
            if self._closed:
                raise WatcherClosedError(root)
            if root in self._roots:
                return self._status(self._roots[root])
            # Registered before the observer starts: watch failures found while it adds its
            # watches are reported on the loop, possibly before this call returns.
            self._roots[root] = state
        degradations: list[Degradation] = []
        if self._options.force_polling:
            degradations.append(Degradation(root, (root,), FORCED))
        elif mounts.is_remote(state.fstype):
            degradations.append(
                Degradation(
                    root,
                    (root,),
                    f"{state.fstype} filesystem: changes made by other machines are not "
                    "reported by inotify",
                )
            )
        else:
            try:
                self._observe(state)
            except OSError as exc:
                degradations.append(self._limit_degradation(root, root, exc))
            for below in mounts.mounts_below(real, table):
                if mounts.is_remote(below.fstype):
                    path = str(Path(root) / os.path.relpath(below.mount_point, real))
                    degradations.append(
                        Degradation(
                            root,
                            (path,),
                            f"{below.fstype} filesystem mounted below the root: changes made "
                            "by other machines are not reported by inotify",
                        )
                    )
        with self._lock:
            for degradation in degradations:
                state.degradations.append(degradation)
                state.polled.update(degradation.paths)
            status = self._status(state)
        for degradation in degradations:
            if degradation.reason != FORCED:
                self._loop.call_soon_threadsafe(self._on_degraded, degradation)
        return status

    def unwatch(self, root: str) -> None:
        """Stop watching ``root`` (blocking); unknown roots are ignored."""
        with self._lock:
            state = self._roots.pop(root, None)
        if state is not None and state.observer is not None:
            _stop(state.observer)

    def close(self) -> None:
        """Stop every observer (blocking); idempotent. A closed watcher watches nothing
        again: :meth:`watch` raises :class:`WatcherClosedError` and :meth:`track` returns
        False, so that a call made from a thread as the watcher closes leaves nothing
        running."""
        with self._lock:
            self._closed = True
            roots = list(self._roots)
        for root in roots:
            self.unwatch(root)
        self._parents.close()

    def roots(self) -> list[str]:
        """The roots being watched."""
        with self._lock:
            return list(self._roots)

    def watching(self, root: str) -> bool:
        """Whether ``root`` is watched (possibly by polling)."""
        with self._lock:
            return root in self._roots

    def track(self, root: str) -> bool:
        """Watch the parent of ``root``, watched or not, so that it is noticed at once when it
        appears, goes or is renamed (blocking; idempotent). Returns False when the parent
        cannot be watched now; call again later."""
        return self._parents.add(root)

    def untrack(self, root: str) -> None:
        """Stop watching the parent of a root that is no longer configured (blocking)."""
        self._parents.remove(root)

    def stale(self, root: str) -> bool:
        """Whether the watched ``root`` is no longer the directory at its path: it was moved,
        deleted, replaced or unmounted since :meth:`watch` (blocking: one ``stat``). A stale
        root must be unwatched, and watched again if a directory is there now."""
        with self._lock:
            state = self._roots.get(root)
        if state is None:
            return False
        return state.left or presence.identity(root) != state.identity

    def readable_again(self, root: str) -> bool:
        """Whether a directory of ``root`` that could not be read can be now, or is gone
        (blocking): then watching the root again watches it."""
        with self._lock:
            state = self._roots.get(root)
            paths = sorted(state.unreadable) if state is not None else []
        for path in paths:
            try:
                os.scandir(path).close()
            except (FileNotFoundError, NotADirectoryError):
                return True
            except OSError:
                continue
            return True
        return False

    def status(self) -> list[RootStatus]:
        """How each root is watched."""
        with self._lock:
            return [self._status(state) for state in self._roots.values()]

    def polled_paths(self) -> list[tuple[str, str]]:
        """``(root, directory)`` pairs to poll, outermost only; vanished directories are
        dropped from the list."""
        with self._lock:
            pairs = [(s.root, p) for s in self._roots.values() for p in sorted(s.polled)]
        kept = [(root, path) for root, path in pairs if path == root or Path(path).is_dir()]
        gone = set(pairs) - set(kept)
        if gone:
            with self._lock:
                for root, path in gone:
                    if root in self._roots:
                        self._roots[root].polled.discard(path)
        return kept

    def _observe(self, state: _Root) -> None:
        """Start the root's observer and keep it, unless the watcher was closed (or the root
        unwatched) while it started: that found the root without an observer to stop, and
        nothing would ever stop this one."""
        observer = self._start_inotify(state)
        with self._lock:
            kept = not self._closed and self._roots.get(state.root) is state
            if kept:
                state.observer = observer
        if not kept:
            _stop(observer)
            if self._closed:
                raise WatcherClosedError(state.root)

    def _start_inotify(self, state: _Root) -> InotifyObserver:
        root = state.root

        # These run on watchdog's threads; a closed loop means shutdown, when nothing matters.
        def overflowed() -> None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._overflowed, root)

        def watch_failed(path: bytes, err: int) -> None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._watch_failed, root, os.fsdecode(path), err)

        def left() -> None:
            with self._lock:
                state.left = True
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._on_root, root)

        def attrib() -> None:
            with self._lock:
                unreadable = bool(state.unreadable)
            if unreadable:  # one of them may be readable now: have them checked at once
                with contextlib.suppress(RuntimeError):
                    self._loop.call_soon_threadsafe(self._on_root, root)

        inotify_fd = InotifyReader(os.fsencode(root), overflowed, watch_failed, left, attrib)
        observer = InotifyObserver(inotify_fd)
        observer.schedule(
            LoopHandler(self._loop, root, self._on_change),
            root,
            recursive=True,
            event_filter=EVENT_FILTER,
            follow_symlink=self._options.follow_symlinks,
        )
        try:
            observer.start()
        except BaseException:
            observer.stop()
            raise
        return observer

    def _overflowed(self, root: str) -> None:
        with self._lock:
            state = self._roots.get(root)
            if state is None:
                return
            state.overflows += 1
        self._on_recrawl(Recrawl(root, RecrawlReason.OVERFLOW))

    def _watch_failed(self, root: str, path: str, err: int) -> None:
        """A directory below ``root`` could not be watched: poll it, or note that it cannot
        be read (batched per loop turn)."""
        pending = self._failed.setdefault(root, {})
        if not pending:
            self._loop.call_soon(self._poll_failed, root)
        pending[path] = err

    def _poll_failed(self, root: str) -> None:
        failed = self._failed.pop(root, {})
        limited = {path for path, err in failed.items() if err == errno.ENOSPC}
        self._unreadable(root, set(failed) - limited)
        with self._lock:
            state = self._roots.get(root)
            if state is None or not limited:
                return
            new = _outermost(limited - {root}, already=state.polled)
            if not new:
                return
            state.polled = {p for p in state.polled if not any(is_below(p, n) for n in new)}
            state.polled.update(new)
            limit, fix = self._limit("watches", 524_288)
            degradation = Degradation(
                root, tuple(sorted(new)), f"inotify watch limit reached ({limit} watches)", fix
            )
            # One entry per cause in the status: later failures widen the earlier one.
            for i, old in enumerate(state.degradations):
                if old.reason == degradation.reason and old.paths != (root,):
                    paths = tuple(sorted({*old.paths, *new} & state.polled))
                    state.degradations[i] = Degradation(root, paths, old.reason, old.fix)
                    break
            else:
                state.degradations.append(degradation)
        self._on_degraded(degradation)
        # Whatever happened in those directories before they were polled is found by a
        # reconcile of the root.
        self._on_recrawl(Recrawl(root, RecrawlReason.WATCH_LIMIT))

    def _unreadable(self, root: str, paths: set[str]) -> None:
        """Directories below ``root`` that inotify may not watch because they cannot be read:
        say so; nothing is lost meanwhile (a reconcile reports them as unreadable too)."""
        with self._lock:
            state = self._roots.get(root)
            if state is None or not paths:
                return
            new = _outermost(paths - {root}, already=state.unreadable)
            if not new:
                return
            state.unreadable.update(new)
            degradation = Degradation(root, tuple(sorted(new)), UNREADABLE)
            for i, old in enumerate(state.degradations):
                if old.reason == UNREADABLE:
                    paths_now = tuple(sorted(state.unreadable))
                    state.degradations[i] = Degradation(root, paths_now, UNREADABLE)
                    break
            else:
                state.degradations.append(degradation)
        self._on_degraded(degradation)

    def _limit_degradation(self, root: str, path: str, exc: OSError) -> Degradation:
        if exc.errno == errno.EMFILE:
            limit, fix = self._limit("instances", 1024)
            return Degradation(
                root, (path,), f"inotify instance limit reached ({limit} instances)", fix
            )
        if exc.errno == errno.ENOSPC:
            limit, fix = self._limit("watches", 524_288)
            return Degradation(root, (path,), f"inotify watch limit reached ({limit} watches)", fix)
        return Degradation(root, (path,), f"inotify failed: {exc.strerror or exc}")

    def _limit(self, what: str, floor: int) -> tuple[int | None, str]:
        """The limit on inotify ``watches``, ``instances`` or ``events`` in force, and the
        sysctl setting that would raise it.

        Watches and instances are limited per user (``fs.inotify.max_user_*``) and, in a user
        namespace such as a container, per namespace (``user.max_inotify_*``); the lower one
        binds.
        """
        names = {
            "watches": ["fs.inotify.max_user_watches", "user.max_inotify_watches"],
            "instances": ["fs.inotify.max_user_instances", "user.max_inotify_instances"],
            "events": ["fs.inotify.max_queued_events"],
        }[what]
        found = [(value, name) for name in names if (value := self._read(name)) is not None]
        if not found:
            return None, f"{names[0]}={floor}"
        value, name = min(found)
        return value, f"{name}={max(floor, value * 2)}"

    def _read(self, sysctl: str) -> int | None:
        try:
            return int((self._options.proc_sys / sysctl.replace(".", "/")).read_text().strip())
        except (OSError, ValueError):
            return None

    def _status(self, state: _Root) -> RootStatus:
        if state.observer is None:
            mode = WatchMode.POLLING
        elif state.polled or state.unreadable:
            mode = WatchMode.PARTIAL
        else:
            mode = WatchMode.INOTIFY
        hint = self._limit("events", 65_536)[1] if state.overflows else None
        return RootStatus(
            state.root,
            mode,
            state.fstype,
            tuple(state.degradations),
            state.overflows,
            hint,
        )


def _stop(observer: InotifyObserver) -> None:
    """Stop an observer and wait a while for its thread (blocking)."""
    observer.stop()
    if observer.is_alive():
        observer.join(_STOP_TIMEOUT)


def _outermost(paths: set[str], already: set[str]) -> set[str]:
    """The paths below no other path of the set and no already polled one."""
    kept: set[str] = set()
    for path in sorted(paths, key=len):  # a parent is shorter than its children
        parents = {str(p) for p in Path(path).parents}
        if path in already or parents & already or parents & kept:
            continue
        kept.add(path)
    return kept
