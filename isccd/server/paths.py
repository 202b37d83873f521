"""Resolving a client's path without ever touching anything outside the watched roots.

A request's path is resolved like :func:`os.path.realpath`, one component at a time: ``.`` and
``..`` are applied, symbolic links are followed, and before any component is examined on disk it
must lie inside a root, or be an ancestor directory of one (``/``, ``/srv`` for the root
``/srv/media``) that is checked to be a plain directory. The first component that falls outside
ends the resolution with ``outside_roots``: nothing outside the roots is ever stat'ed, read or
hashed, and the error does not depend on whether the outside path exists.

Each component is examined relative to the directory the previous one opened (``O_PATH |
O_NOFOLLOW``), never by name from ``/``: a directory that is swapped for a symbolic link while
the path is resolved cannot lead the examination of the next component outside the roots, and
a link is read (``readlinkat``) from the very inode that was examined.

A symbolic link inside a root is read (the link itself is inside) and its target resolved by
the same rules, so a link that points out of the roots is refused without following it.
Components that do not exist are kept as given (the index may still hold a tombstone for a
removed file).

The result is a name: whoever opens it later opens it beneath its root
(:class:`isccd.beneath.RootDir`), so it cannot be redirected in between either. It is only as
trustworthy as the roots: they must be absolute with their symbolic links resolved, as the
daemon keeps them.
"""

from __future__ import annotations

import enum
import errno
import os
import posixpath
import stat
from collections.abc import Callable, Sequence

from isccd.errors import ProtocolError
from isccd.fspath import is_under
from isccd.protocol import ErrorCode, normalize_path

#: Symbolic links followed before giving up (Linux's own limit, MAXSYMLINKS, is 40).
MAX_SYMLINKS = 40


class _Where(enum.Enum):
    INSIDE = enum.auto()
    ANCESTOR = enum.auto()
    OUTSIDE = enum.auto()


def _where(path: str, roots: Sequence[str]) -> _Where:
    ancestor = False
    for root in roots:
        if is_under(path, root):
            return _Where.INSIDE
        if is_under(root, path):
            ancestor = True
    return _Where.ANCESTOR if ancestor else _Where.OUTSIDE


def _outside(path: str) -> ProtocolError:
    return ProtocolError(ErrorCode.OUTSIDE_ROOTS, f"{path!r} is not inside a watched root")


def resolve_in_roots(
    path: str, roots: Sequence[str], *, examined: Callable[[str], None] | None = None
) -> str:
    """Resolve ``path`` and check that it lies inside one of ``roots``.

    Blocking (it examines the path's components on disk): run it in a thread.

    Args:
        path: An absolute path from a client.
        roots: The watched roots, absolute, symbolic links resolved.
        examined: Told each path just before it is examined on disk (tests record them).

    Returns:
        The path with ``.``, ``..`` and symbolic links resolved; inside a root.

    Raises:
        ProtocolError: ``outside_roots`` when the path, or a symbolic link on the way, leads
            outside the roots; ``invalid_argument`` when the path is relative, contains NUL, or
            has too many symbolic links.
    """
    if not path.startswith("/") or "\0" in path:
        raise ProtocolError(ErrorCode.INVALID_ARGUMENT, f"{path!r} is not an absolute path")
    walk = _Walk(path, [normalize_path(r) for r in roots], examined or (lambda _: None))
    try:
        return walk.run()
    finally:
        walk.close()


class _Walk:
    """The state of one resolution: the path so far, and the directories it opened."""

    def __init__(self, path: str, roots: list[str], examined: Callable[[str], None]) -> None:
        self.path = path
        self.roots = roots
        self.examined = examined
        self.resolved = "/"
        # dirs[i] is the directory at depth i of ``resolved`` ("/" first), for as long as the
        # components exist on disk as directories; a missing one (or a file) ends the list,
        # and nothing below it is examined.
        self.dirs = [os.open("/", _DIR_FLAGS)]

    def close(self) -> None:
        while self.dirs:
            os.close(self.dirs.pop())

    def run(self) -> str:
        pending = _components(self.path)
        links = 0
        while pending:
            part = pending.pop()
            if part == "..":
                self.resolved = posixpath.dirname(self.resolved)
                self._truncate(_depth(self.resolved) + 1)
                continue
            candidate = posixpath.join(self.resolved, part)
            target = self._examine(candidate, part, _where(candidate, self.roots))
            if target is None:
                self.resolved = candidate
                continue
            links += 1
            if links > MAX_SYMLINKS:
                raise ProtocolError(ErrorCode.INVALID_ARGUMENT, "too many symbolic links")
            if target.startswith("/"):
                self.resolved = "/"
                self._truncate(1)
            pending.extend(_components(target))
        if _where(self.resolved, self.roots) is not _Where.INSIDE:
            raise _outside(self.path)
        return self.resolved

    def _truncate(self, keep: int) -> None:
        while len(self.dirs) > keep:
            os.close(self.dirs.pop())

    def _here(self) -> int | None:
        """The open directory ``resolved`` names, or ``None`` if it is not one on disk."""
        return self.dirs[-1] if len(self.dirs) == _depth(self.resolved) + 1 else None

    def _examine(self, candidate: str, part: str, where: _Where) -> str | None:
        """Examine one component: ``None`` to keep it as it is (an opened directory is kept
        open for the next one), or the link target to follow."""
        if where is _Where.OUTSIDE:
            raise _outside(self.path)
        here = self._here()
        if here is None:
            if where is _Where.ANCESTOR:
                raise _outside(self.path)  # the way to a root is gone
            return None  # below a missing component or a file: kept as given
        self.examined(candidate)
        try:
            fd = os.open(part, _NODE_FLAGS, dir_fd=here)
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:
                raise ProtocolError(ErrorCode.INVALID_ARGUMENT, "path name too long") from None
            if where is _Where.ANCESTOR:
                # The way to a root is gone or unreadable: nothing below it can be inside.
                raise _outside(self.path) from None
            return None  # missing or unreadable inside a root: keep the name as given
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            self.dirs.append(fd)
            return None
        try:
            if where is _Where.ANCESTOR:
                # An ancestor of a root replaced by a symbolic link could lead anywhere.
                raise _outside(self.path)
            if not stat.S_ISLNK(mode):
                return None
            # The link this descriptor holds, whatever is at its name now.
            return os.readlink("", dir_fd=fd)
        finally:
            os.close(fd)


_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
_NODE_FLAGS = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC


def _depth(path: str) -> int:
    return path.count("/") if path != "/" else 0


def _components(path: str) -> list[str]:
    """The components of ``path`` to process, last first (a stack), without ``.`` and ``""``."""
    return [p for p in reversed(path.split("/")) if p not in ("", ".")]
