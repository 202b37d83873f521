"""Reaching a name beneath a root without following symbolic links.

Every file dedupe touches is reached from its root one directory at a time, each opened with
``O_NOFOLLOW | O_DIRECTORY``: a symbolic link anywhere below the root (a folder swapped for a
link to ``/etc`` between the plan and the action) stops the walk instead of leading out of it.
The actions then work on names relative to the parent directory's descriptor (``linkat``,
``renameat2``, ``unlinkat``), so the directory cannot be swapped under them either. This is
what ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`` does, done with the calls Python has.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator

from isccd.errors import StaleFileError
from isccd.fspath import is_below

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _components(root: str, path: str) -> list[str]:
    if not is_below(path, root):
        raise StaleFileError(path, f"not inside its root {root}")
    parts = path[len(root.rstrip("/")) + 1 :].split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise StaleFileError(path, "not a normalized absolute path")
    return parts


def _open_root(root: str, path: str) -> int:
    try:
        fd = os.open(root, _DIR_FLAGS)
    except OSError as exc:
        raise StaleFileError(path, f"its root {root} cannot be opened: {exc.strerror}") from None
    # A root is recorded resolved; one that is now reached through a link is not the same.
    if os.path.realpath(root) != root:
        os.close(fd)
        raise StaleFileError(path, f"its root {root} is now reached through a symbolic link")
    return fd


def _step(fd: int, name: str, path: str, *, create: bool = False) -> int:
    """Open the directory ``name`` inside ``fd`` (creating it if asked), never a link."""
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o777, dir_fd=fd)
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            with contextlib.suppress(OSError):
                if stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    raise StaleFileError(
                        path, f"{name!r} on its path is now a symbolic link"
                    ) from None
            raise StaleFileError(path, f"{name!r} on its path is not a directory") from None
        if exc.errno == errno.ENOENT:
            raise StaleFileError(path, f"its folder {name!r} is gone") from None
        raise StaleFileError(
            path, f"its folder {name!r} cannot be opened: {exc.strerror}"
        ) from None


@contextlib.contextmanager
def parent_of(root: str, path: str, *, create: bool = False) -> Iterator[tuple[int, str]]:
    """The directory holding ``path``, opened from ``root`` without following links, and the
    last name; the descriptor is closed on leaving the block.

    Args:
        root: An absolute, resolved folder.
        path: A normalized absolute path below ``root``.
        create: Create the missing directories (for a ``--move`` target).

    Raises:
        StaleFileError: ``path`` is not below ``root``, or a directory on the way is missing,
            not a directory, or a symbolic link.
    """
    *dirs, name = _components(root, path)
    fd = _open_root(root, path)
    try:
        for part in dirs:
            inner = _step(fd, part, path, create=create)
            os.close(fd)
            fd = inner
        yield fd, name
    finally:
        os.close(fd)
