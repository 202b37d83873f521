"""Reaching a name beneath a root without following symbolic links.

Every file dedupe touches is reached from its root one directory at a time, each opened with
``O_NOFOLLOW | O_DIRECTORY``: a symbolic link anywhere below the root (a folder swapped for a
link to ``/etc`` between the plan and the action) stops the walk instead of leading out of it.
The actions then work on names relative to the parent directory's descriptor (``linkat``,
``renameat2``, ``unlinkat``), so the directory cannot be swapped under them either. This is
what ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`` does, done with the calls Python has.

The folders a ``--move`` makes below its folder (:func:`made_parent_of`) copy the owner and
mode of the folders they mirror (not the umask's, nor the running user's), and a folder found
on the way that another user could swap for a link (one of neither the running user, root, nor
the owner of the folder it mirrors; or one anybody may write without the sticky bit) is
refused.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator, Sequence

from isccd.errors import DedupeError, StaleFileError
from isccd.fspath import is_below

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _components(root: str, path: str) -> list[str]:
    if not is_below(path, root):
        raise StaleFileError(path, f"not inside its root {root}")
    parts = path[len(root.rstrip("/")) + 1 :].split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise StaleFileError(path, "not a normalized absolute path")
    return parts


def _resolved(fd: int, root: str) -> str:
    """The path without links of the directory open as ``fd`` (opened by the name ``root``):
    the kernel's name for it, one call (``os.path.realpath`` looks at every component of the
    name); ``realpath`` where ``/proc`` is not mounted."""
    name = _kernel_name(fd)
    return name if name is not None and name.startswith("/") else os.path.realpath(root)


def _open_root(root: str, path: str) -> int:
    try:
        fd = os.open(root, _DIR_FLAGS)
    except OSError as exc:
        raise StaleFileError(path, f"its root {root} cannot be opened: {exc.strerror}") from None
    # A root is recorded resolved; one that is now reached through a link is not the same.
    if _resolved(fd, root) != root:
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
    fd = _walk(root, dirs, path, create=create)
    try:
        yield fd, name
    finally:
        os.close(fd)


def _walk(root: str, dirs: Sequence[str], path: str, *, create: bool = False) -> int:
    """The directory ``dirs`` below ``root``, opened one name at a time, never through a
    link, each folder on the way closed once the next is open (see :func:`parent_of`)."""
    fd = _open_root(root, path)
    try:
        for part in dirs:
            inner = _step(fd, part, path, create=create)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


class Folders:
    """The folders holding a batch's files, each reached once, as :func:`parent_of` reaches
    it (from its root, one directory at a time, never through a link, the folders on the way
    closed behind), and held open until :meth:`close`: the batch's steps hold their folders
    open from their checks to their actions anyway, and files of one folder share it.

    Each later step in a folder first makes sure the folder is still where its path says: the
    kernel's name of the descriptor held (``/proc/self/fd``) must be the root's and the names
    below it. A folder moved, removed, or swapped for a link since is reached again (where the
    walk stops at the link, as it did), its old descriptor kept for the steps checked in it
    before. Without ``/proc`` every step walks. A folder that cannot be reached is not
    remembered. So a step's folder is checked at its own check, as when each file walked, and
    a step holds at most two folders, its own files' (what :func:`isccd.dedupe.apply.batch_most`
    counts).
    """

    __slots__ = ("_open", "_retired")

    def __init__(self) -> None:
        #: Descriptors by root and the folder's path below it ("" for the root itself).
        self._open: dict[tuple[str, str], int] = {}
        #: Descriptors of folders that moved, still used by the steps checked in them.
        self._retired: list[int] = []

    def parent_of(self, root: str, path: str) -> tuple[int, str]:
        """The directory holding ``path`` and the last name, as :func:`parent_of` (the
        descriptor is this object's: valid until :meth:`close`).

        Raises:
            StaleFileError: As :func:`parent_of`.
        """
        *dirs, name = _components(root, path)
        below = "/".join(dirs)
        key = (root, below)
        held = self._open.get(key)
        if held is not None:
            where = f"{root.rstrip('/')}/{below}" if below else root
            if _kernel_name(held) == where:
                return held, name
            self._retired.append(self._open.pop(key))
        fd = _walk(root, dirs, path)
        if _kernel_name(fd) is None:  # no way to tell where it is later: not kept for later
            self._retired.append(fd)
        else:
            self._open[key] = fd
        return fd, name

    def close(self) -> None:
        """Close every folder (the descriptors given out are invalid from now on)."""
        held = [*self._open.values(), *self._retired]
        self._open, self._retired = {}, []
        for fd in held:
            os.close(fd)


def _kernel_name(fd: int) -> str | None:
    """The kernel's name of the directory open as ``fd`` (``None`` where ``/proc`` is not
    mounted)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")  # noqa: PTH115 - a str, no Path made
    except OSError:
        return None


def _require_trusted(st: os.stat_result, like: os.stat_result | None, name: str, path: str) -> None:
    """Raise when another user could swap the folder ``name`` on the way to a move's target.

    Raises:
        DedupeError: It belongs to someone else than the running user, root and the owner of
            the folder it mirrors, or anyone may write it and it has no sticky bit.
    """
    owners = {os.geteuid(), 0} | ({like.st_uid} if like is not None else set())
    where = f"the folder {name!r} on the way to its target"
    if st.st_uid not in owners:
        raise DedupeError(
            path, f"{where} belongs to user {st.st_uid}, neither the running user, root nor "
            "the owner of the folder it mirrors: they could swap it for a link; not moved"
        )  # fmt: skip
    if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
        raise DedupeError(
            path, f"{where} is writable by everyone without the sticky bit: anyone could swap "
            "it for a link; not moved"
        )  # fmt: skip


def _made_step(fd: int, name: str, path: str, like: os.stat_result | None) -> int:
    """Open the folder ``name`` inside ``fd`` for a move's target, made if missing with the
    owner and mode of ``like`` (the folder it mirrors; without one, private to the running
    user), and refused if someone else could swap it.

    Raises:
        StaleFileError: ``name`` is a link or not a folder.
        DedupeError: It is a folder someone else could swap, or it cannot be made.
    """
    made = False
    try:
        os.mkdir(name, 0o700, dir_fd=fd)  # private until it has its owner and mode
        made = True
    except FileExistsError:
        pass
    except OSError as exc:
        raise DedupeError(path, f"its folder {name!r} cannot be made: {exc.strerror}") from None
    inner = _step(fd, name, path)
    try:
        st = os.fstat(inner)
        if made and st.st_uid == os.geteuid():
            _like(inner, like)
        else:
            _require_trusted(st, like, name, path)
    except BaseException:
        os.close(inner)
        raise
    return inner


def _like(fd: int, like: os.stat_result | None) -> None:
    """Give the folder just made the owner and mode of ``like`` (as far as the running user
    may: root gives any owner; another user keeps the folder, and the right to go on in it)."""
    if like is None:
        return
    root = os.geteuid() == 0
    mode = stat.S_IMODE(like.st_mode) | (0 if root else stat.S_IRWXU)
    with contextlib.suppress(PermissionError):  # a user gives only their own groups
        os.fchown(fd, like.st_uid if root else -1, like.st_gid)
    os.fchmod(fd, mode)


@contextlib.contextmanager
def made_parent_of(
    root: str, path: str, like: Sequence[os.stat_result | None]
) -> Iterator[tuple[int, str]]:
    """The directory holding a move's target ``path``, reached from ``root`` without following
    links, the missing folders made as the folders they mirror (see the module docstring),
    and the last name; the descriptor is closed on leaving the block.

    Args:
        root: The ``--move`` folder, absolute and resolved.
        path: The target, below ``root``.
        like: For each folder between ``root`` and the target, the ``stat`` of the folder it
            mirrors (``None``: not known; made private to the running user).

    Raises:
        StaleFileError: ``path`` is not below ``root``, or a folder on the way is a link or
            not a folder.
        DedupeError: A folder on the way could be swapped by another user, or cannot be made.
    """
    *dirs, name = _components(root, path)
    fd = _open_root(root, path)
    try:
        for i, part in enumerate(dirs):
            inner = _made_step(fd, part, path, like[i] if i < len(like) else None)
            os.close(fd)
            fd = inner
        yield fd, name
    finally:
        os.close(fd)
