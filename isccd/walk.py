"""The reconcile scan: walk a root, stat every file, and diff against what the store remembers.

Only metadata is read: ``os.scandir`` gives names and types, one ``lstat`` per file gives the
validators, and a file is unchanged when identity, size, mtime and ctime all equal the stored
ones. No file is ever opened here. The walk yields one :class:`DirScan` per directory, so memory
stays bounded by the largest directory, and the caller (the pipeline) decides what to hash,
move or tombstone.

Rules:

- Every directory is opened and listed beneath the root's directory
  (:class:`isccd.beneath.RootDir`) and its entries are stat'ed relative to that descriptor, so
  a directory swapped for a symbolic link during the walk leads nowhere outside the root.
- Symbolic links are not followed unless :attr:`ScanOptions.follow_symlinks` is set; then a
  link that stays beneath the root is followed (one that leads outside it is skipped), a link
  to a file is indexed under the link's path with the target's identity, and directory loops
  are cut by remembering every directory's ``(st_dev, st_ino)``.
- Only regular files are indexed: FIFOs, sockets and devices are skipped, never opened.
- Ignore patterns are gitignore-style, relative to the root (``pathspec``'s ``GitIgnoreSpec``,
  which reproduces git's own matching, including negation and ``**``); an ignored directory is
  not entered.
- Whatever cannot be listed or stat'ed (no permission, a path longer than the kernel accepts, an
  I/O error) is reported as a :class:`ScanIssue` and marked *unknown*: the store keeps what it
  knows about it rather than tombstoning files it cannot see. Nothing here raises for one bad
  entry.

The store is reached through the ``lookup`` callable given to :class:`Walker`.
"""

from __future__ import annotations

import enum
import errno
import os
import stat as stat_module
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import pathspec

from isccd.beneath import PATH_MAX, RootDir
from isccd.fspath import is_below, is_under
from isccd.model import FileStat

#: Stored validators of the files directly in a directory: name -> validators.
Lookup = Callable[[str], Mapping[str, FileStat]]


@dataclass(frozen=True, slots=True)
class ScanOptions:
    """How a root is walked.

    Attributes:
        follow_symlinks: Follow symbolic links to files and directories.
        ignore: gitignore-style patterns, matched against paths relative to the root.
    """

    follow_symlinks: bool = False
    ignore: tuple[str, ...] = ()


class ItemKind(enum.StrEnum):
    """What the scan found for a path."""

    NEW = "new"
    """A regular file the store does not know at this path."""
    CHANGED = "changed"
    """A known path whose validators differ from the stored ones."""
    VANISHED = "vanished"
    """A known path that is no longer a (visible, not ignored) regular file."""


@dataclass(frozen=True, slots=True)
class ScanItem:
    """One path that needs the pipeline's attention.

    Attributes:
        kind: New, changed or vanished.
        path: The file's path.
        stat: Its validators now (new, changed), or the stored ones (vanished).
    """

    kind: ItemKind
    path: str
    stat: FileStat


class IssueReason(enum.StrEnum):
    """Why part of a tree could not be scanned."""

    UNREADABLE = "unreadable"
    """Permission denied, or an I/O error."""
    TOO_LONG = "too_long"
    """The path is longer than the kernel accepts (``ENAMETOOLONG``)."""
    LOOP = "loop"
    """A directory already visited under another path (a symlink or bind-mount loop)."""
    MISSING = "missing"
    """The root itself is missing or not a directory (an unmounted disk?)."""
    UNAVAILABLE = "unavailable"
    """The root is on another device than when it was indexed and holds few of the files
    indexed there (an unmounted disk's empty mount point?); nothing was tombstoned."""


@dataclass(frozen=True, slots=True)
class ScanIssue:
    """A part of the tree the scan could not see; the store keeps what it knew about it.

    Attributes:
        path: The directory or file concerned.
        reason: The kind of problem.
        message: A sentence for people.
    """

    path: str
    reason: IssueReason
    message: str


@dataclass(slots=True)
class DirScan:
    """What one directory held compared with the store.

    Attributes:
        path: The directory.
        items: New, changed and vanished files in it.
        unchanged: Files whose validators matched.
        skipped: Entries skipped on purpose (ignored, non-regular, symlinks not followed).
        issues: What could not be seen.
    """

    path: str
    items: list[ScanItem] = field(default_factory=list)
    unchanged: int = 0
    skipped: int = 0
    issues: list[ScanIssue] = field(default_factory=list)


def compile_ignore(patterns: Sequence[str]) -> pathspec.GitIgnoreSpec | None:
    """Compile gitignore-style patterns (``None`` when there are none).

    Raises:
        ValueError: A pattern is malformed.
    """
    if not patterns:
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(patterns)
    except Exception as exc:  # pathspec raises its own error types for bad patterns
        raise ValueError(f"invalid ignore pattern: {exc}") from exc


def is_ignored(spec: pathspec.GitIgnoreSpec | None, root: str, path: str, is_dir: bool) -> bool:
    """Whether ``path`` below ``root`` is left out by the patterns (a directory matches
    patterns ending in ``/``); the root itself and paths outside it never are."""
    if spec is None or not is_below(path, root):
        return False
    rel = path[len(root.rstrip("/")) + 1 :]
    return bool(spec.match_file(rel + "/" if is_dir else rel))


def _message(exc: OSError) -> str:
    return exc.strerror or str(exc)


#: What examining a path beneath its root says when no file or directory of the tree is there:
#: gone, a directory on the way is a file, a symbolic link on the way is not followed, or it
#: leads out of the root.
NO_FILE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EXDEV})


#: Paths this long (in characters) may be too long in bytes (at most four per character).
_LONG_PATH = PATH_MAX // 4


def _check_length(path: str) -> None:
    """Refuse a path longer than a path name may be: listed through its directory's
    descriptor, it could be stat'ed, but nothing else (isccd or a client) could use it."""
    if len(os.fsencode(path)) >= PATH_MAX:
        raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG), path)


def _stat_beneath(top: RootDir, path: str) -> os.stat_result:
    """The stat of what ``path`` is beneath the root, links followed as the root's rule says."""
    fd = top.open(path, os.O_PATH)
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def examine(
    root: str, paths: Iterable[str], *, follow_symlinks: bool = False
) -> dict[str, os.stat_result | OSError]:
    """The ``lstat`` of each path, reached beneath the root's directory (opened once), or the
    error that says why not (:data:`NO_FILE` when no file of the tree is there). For the
    pipeline, which asks before it submits the job that depends on the answer, so that no
    file-system call is made on the store's thread.

    Args:
        root: The root (absolute, normalized).
        paths: Paths under it.
        follow_symlinks: Follow symbolic links that stay beneath the root.
    """
    paths = list(paths)
    try:
        top = RootDir(root, follow_symlinks=follow_symlinks)
    except OSError as exc:
        return dict.fromkeys(paths, exc)
    found: dict[str, os.stat_result | OSError] = {}
    with top:
        for path in paths:
            try:
                found[path] = top.stat(path)
            except OSError as exc:
                found[path] = exc
    return found


class Walker:
    """Walks a root (or a subtree of it) one directory at a time.

    Iterate it to get a :class:`DirScan` per directory; afterwards :meth:`vanished_dirs` tells
    which stored directories were not seen at all, and :meth:`is_known` whether a path was
    visible to the walk.
    """

    def __init__(
        self,
        root: str,
        lookup: Lookup,
        options: ScanOptions | None = None,
        *,
        start: str | None = None,
    ) -> None:
        """Prepare a walk.

        Args:
            root: The root (absolute, normalized); ignore patterns are relative to it.
            lookup: Stored validators of a directory's files.
            options: Symlink policy and ignore patterns.
            start: A directory inside the root to walk instead of the whole root.

        Raises:
            ValueError: ``start`` is outside ``root``, or an ignore pattern is malformed.
        """
        self.root = root
        self.start = start or root
        if not is_under(self.start, root):
            raise ValueError(f"{self.start!r} is not inside the root {root!r}")
        self._lookup = lookup
        self._options = options or ScanOptions()
        self._ignore = compile_ignore(self._options.ignore)
        self._visited_ids: dict[tuple[int, int], str] = {}
        self._top: RootDir | None = None  # the root's directory, open during the walk
        self.visited: set[str] = set()
        self.unknown: list[str] = []
        self.files_seen = 0

    def _ignored(self, path: str, is_dir: bool) -> bool:
        return is_ignored(self._ignore, self.root, path, is_dir)

    def __iter__(self) -> Iterator[DirScan]:
        """Scan directory after directory, depth first."""
        if self._ignored(self.start, True):
            return
        try:
            top = RootDir(self.root, follow_symlinks=self._options.follow_symlinks)
        except OSError as exc:
            if exc.errno in NO_FILE:
                yield from self._missing()
            else:
                self.unknown.append(self.start)
                yield DirScan(self.start, issues=[self._issue(self.start, exc)])
            return
        self._top = top
        with top:
            start_stat = self._stat_dir(self.start)
            if isinstance(start_stat, ScanIssue):
                self.unknown.append(self.start)
                yield DirScan(self.start, issues=[start_stat])
                return
            if start_stat is None:
                yield from self._missing()
                return
            self._visited_ids[(start_stat.st_dev, start_stat.st_ino)] = self.start
            stack = [self.start]
            while stack:
                directory = stack.pop()
                result, subdirs = self._scan_dir(directory)
                stack.extend(reversed(subdirs))
                yield result

    def _missing(self) -> Iterator[DirScan]:
        """The start is not a directory: a missing root is reported, a missing subtree is
        simply gone."""
        if self.start == self.root:
            # A missing root is far more often an unmounted disk or share than a deleted tree:
            # report it and keep what the store knows, rather than tombstone everything.
            self.unknown.append(self.start)
            issue = ScanIssue(self.start, IssueReason.MISSING, "the root is not a directory")
            yield DirScan(self.start, issues=[issue])
        # a subtree that is gone: everything below it vanished

    def _stat_dir(self, path: str) -> os.stat_result | ScanIssue | None:
        assert self._top is not None
        try:
            st = _stat_beneath(self._top, path)
        except OSError as exc:
            if exc.errno in NO_FILE:
                return None
            return self._issue(path, exc)
        return st if stat_module.S_ISDIR(st.st_mode) else None

    def _issue(self, path: str, exc: OSError) -> ScanIssue:
        if exc.errno == errno.ENAMETOOLONG:
            return ScanIssue(path, IssueReason.TOO_LONG, f"path too long: {_message(exc)}")
        return ScanIssue(path, IssueReason.UNREADABLE, f"cannot read: {_message(exc)}")

    def _scan_dir(self, directory: str) -> tuple[DirScan, list[str]]:
        assert self._top is not None
        result = DirScan(directory)
        subdirs: list[str] = []
        try:
            fd = self._top.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            if exc.errno not in NO_FILE:
                self.unknown.append(directory)
                result.issues.append(self._issue(directory, exc))
            # Otherwise gone, or replaced by a file or a link, since its parent was listed:
            # not visited, so what the store held there counts as vanished.
            return result, subdirs
        try:
            try:
                with os.scandir(fd) as it:
                    entries = list(it)
            except OSError as exc:  # the listing failed midway (an I/O error)
                self.unknown.append(directory)
                result.issues.append(self._issue(directory, exc))
                return result, subdirs
            self.visited.add(directory)
            # The entries stat themselves relative to fd (fstatat): it stays open till then.
            self._compare(directory, entries, result, subdirs)
        finally:
            os.close(fd)
        return result, subdirs

    def _compare(
        self,
        directory: str,
        entries: list[os.DirEntry[str]],
        result: DirScan,
        subdirs: list[str],
    ) -> None:
        stored = self._lookup(directory)
        seen: set[str] = set()
        prefix = directory if directory != "/" else ""
        for entry in entries:
            name = entry.name
            path = f"{prefix}/{name}"
            st = self._file_stat(entry, path, result, subdirs, seen)
            if st is None:
                continue
            seen.add(name)
            self.files_seen += 1
            now = FileStat.from_os(st)
            before = stored.get(name)
            if before is None:
                result.items.append(ScanItem(ItemKind.NEW, path, now))
            elif before.same_content_version(now):
                result.unchanged += 1
            else:
                result.items.append(ScanItem(ItemKind.CHANGED, path, now))
        for name, before in stored.items():
            if name not in seen:
                result.items.append(ScanItem(ItemKind.VANISHED, f"{prefix}/{name}", before))

    def _file_stat(
        self,
        entry: os.DirEntry[str],
        path: str,
        result: DirScan,
        subdirs: list[str],
        seen: set[str],
    ) -> os.stat_result | None:
        """The stat of a regular file to compare; ``None`` for anything else (a directory is
        queued in ``subdirs``; an entry that cannot be stat'ed is reported and kept in
        ``seen``, so that the store keeps what it knows)."""
        st: os.stat_result | None
        try:
            if len(path) >= _LONG_PATH:
                _check_length(path)
            if entry.is_file(follow_symlinks=False):  # most entries: the quick way first
                if self._ignored(path, False):
                    result.skipped += 1
                    return None
                st = entry.stat(follow_symlinks=False)
            else:
                st = self._not_a_file(entry, path, result, subdirs)
                if st is None:
                    return None
        except FileNotFoundError:
            return None  # vanished (or a dangling link) since the listing
        except OSError as exc:
            seen.add(entry.name)
            self.unknown.append(path)
            result.issues.append(self._issue(path, exc))
            return None
        if not stat_module.S_ISREG(st.st_mode):  # replaced since the listing
            result.skipped += 1
            return None
        return st

    def _not_a_file(
        self, entry: os.DirEntry[str], path: str, result: DirScan, subdirs: list[str]
    ) -> os.stat_result | None:
        """A directory (queued in ``subdirs`` unless ignored or a loop), a symbolic link
        (followed as the options say) or anything else (skipped); the stat of a file a link
        leads to."""
        st: os.stat_result | None
        if entry.is_dir(follow_symlinks=False):
            st = entry.stat(follow_symlinks=False)
        elif entry.is_symlink() and self._options.follow_symlinks:
            st = self._followed(path, result)
        else:
            result.skipped += 1  # FIFOs, sockets, devices, and links not followed
            return None
        if st is None:
            return None
        if stat_module.S_ISDIR(st.st_mode):
            if self._enter(path, st, result):
                subdirs.append(path)
            return None
        if self._ignored(path, False):
            result.skipped += 1
            return None
        return st

    def _followed(self, path: str, result: DirScan) -> os.stat_result | None:
        """What a symbolic link leads to, when it stays beneath the root; ``None`` (skipped)
        otherwise."""
        assert self._top is not None
        try:
            return _stat_beneath(self._top, path)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EXDEV):
                result.skipped += 1  # out of the root, or a chain of links too long
                return None
            raise

    def _enter(self, path: str, st: os.stat_result, result: DirScan) -> bool:
        """Whether to walk into a subdirectory (loop and ignore checks)."""
        if self._ignored(path, True):
            result.skipped += 1
            return False
        key = (st.st_dev, st.st_ino)
        first = self._visited_ids.get(key)
        if first is not None:
            result.issues.append(
                ScanIssue(path, IssueReason.LOOP, f"the same directory as {first}: not entered")
            )
            return False
        self._visited_ids[key] = path
        return True

    def is_known(self, path: str) -> bool:
        """True unless ``path`` is at or below something the walk could not see."""
        return not any(is_under(path, top) for top in self.unknown)

    def vanished_dirs(self, stored_dirs: Sequence[str]) -> list[str]:
        """Of the directories the store holds files in (at or below the start), those the walk
        did not visit and that are not below an unreadable part: their files vanished (removed,
        moved away, replaced by a file, ignored now, or reachable only through a symlink)."""
        return [
            d
            for d in stored_dirs
            if is_under(d, self.start) and d not in self.visited and self.is_known(d)
        ]
