"""Resolving a client's path without ever touching anything outside the watched roots.

A request's path is resolved like :func:`os.path.realpath`, one component at a time: ``.`` and
``..`` are applied, symbolic links are followed, and before any component is examined on disk it
must lie inside a root, or be an ancestor directory of one (``/``, ``/srv`` for the root
``/srv/media``) that is checked to be a plain directory. The first component that falls outside
ends the resolution with ``outside_roots``: nothing outside the roots is ever stat'ed, read or
hashed, and the error does not depend on whether the outside path exists.

A symbolic link inside a root is read (``readlink``, the link itself is inside) and its target
resolved by the same rules, so a link that points out of the roots is refused without following
it. Components that do not exist are kept as given (the index may still hold a tombstone for a
removed file).

The result is only as trustworthy as the roots: they must be absolute with their symbolic links
resolved, as the daemon keeps them.
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
    path: str,
    roots: Sequence[str],
    *,
    lstat: Callable[[str], os.stat_result] = os.lstat,
    readlink: Callable[[str], str] = os.readlink,
) -> str:
    """Resolve ``path`` and check that it lies inside one of ``roots``.

    Blocking (it calls ``lstat`` on the path's components): run it in a thread.

    Args:
        path: An absolute path from a client.
        roots: The watched roots, absolute, symbolic links resolved.
        lstat: :func:`os.lstat` (injectable, so tests can record what is examined).
        readlink: :func:`os.readlink` (injectable, likewise).

    Returns:
        The path with ``.``, ``..`` and symbolic links resolved; inside a root.

    Raises:
        ProtocolError: ``outside_roots`` when the path, or a symbolic link on the way, leads
            outside the roots; ``invalid_argument`` when the path is relative, contains NUL, or
            has too many symbolic links.
    """
    if not path.startswith("/") or "\0" in path:
        raise ProtocolError(ErrorCode.INVALID_ARGUMENT, f"{path!r} is not an absolute path")
    root_list = [normalize_path(r) for r in roots]
    pending = _components(path)
    resolved = "/"
    links = 0
    while pending:
        part = pending.pop()
        if part == "..":
            resolved = posixpath.dirname(resolved)
            continue
        candidate = posixpath.join(resolved, part)
        target = _examine(candidate, _where(candidate, root_list), path, lstat, readlink)
        if target is None:
            resolved = candidate
            continue
        links += 1
        if links > MAX_SYMLINKS:
            raise ProtocolError(ErrorCode.INVALID_ARGUMENT, "too many symbolic links")
        if target.startswith("/"):
            resolved = "/"
        pending.extend(_components(target))
    if _where(resolved, root_list) is not _Where.INSIDE:
        raise _outside(path)
    return resolved


def _examine(
    candidate: str,
    where: _Where,
    path: str,
    lstat: Callable[[str], os.stat_result],
    readlink: Callable[[str], str],
) -> str | None:
    """Examine one component: ``None`` to keep it as it is, or the link target to follow."""
    if where is _Where.OUTSIDE:
        raise _outside(path)
    try:
        info = lstat(candidate)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise ProtocolError(ErrorCode.INVALID_ARGUMENT, "path name too long") from None
        if where is _Where.ANCESTOR:
            # The way to a root is gone or unreadable: nothing below it can be inside.
            raise _outside(path) from None
        return None  # missing or unreadable inside a root: keep the name as given
    if where is _Where.ANCESTOR:
        if not stat.S_ISDIR(info.st_mode):
            # An ancestor of a root replaced by a symbolic link could lead anywhere.
            raise _outside(path)
        return None
    if not stat.S_ISLNK(info.st_mode):
        return None
    try:
        return readlink(candidate)
    except OSError:
        return None  # removed since lstat: keep the name as given


def _components(path: str) -> list[str]:
    """The components of ``path`` to process, last first (a stack), without ``.`` and ``""``."""
    return [p for p in reversed(path.split("/")) if p not in ("", ".")]
