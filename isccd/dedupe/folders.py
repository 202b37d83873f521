"""Duplicate folders in a plan (``dedupe --dirs``): each file of a duplicate folder is a group
with its copy in the folder kept (made by :mod:`isccd.cli.dedupe` from ``dupes --dirs``), and
each such group records its folder's listing (:class:`isccd.dedupe.plan.FolderGuard`), so that
a folder that changed since the plan is left whole.

:func:`listing` reads a folder beneath its root without following any symbolic link;
:func:`changed` says which of a plan's folders no longer hold what they held.
"""

from __future__ import annotations

import hashlib
import os
import stat

from isccd.beneath import RootDir
from isccd.dedupe.plan import Plan
from isccd.fspath import is_below

#: Why a folder's files are left alone, when it changed since the plan.
FOLDER_CHANGED = "its folder changed since the plan: the folder is left whole"


def listing(root: str, path: str) -> tuple[str, int]:
    """A digest of what the folder ``path`` holds (every name below it with its type,
    device, inode, size and modification time), reached beneath ``root`` without following
    any symbolic link, and how many names.

    Raises:
        OSError: The folder cannot be reached or read.
    """
    with RootDir(root) as beneath:
        fd = beneath.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    lines = sorted(_entries(fd))
    digest = hashlib.sha256(b"\n".join(lines)).hexdigest()
    return digest, len(lines)


def _entries(top: int) -> list[bytes]:
    """Each name below the open directory ``top`` (closed here), as a line; no recursion,
    so that no depth of folders is too deep."""
    lines: list[bytes] = []
    todo = [(top, b"")]
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        while todo:
            fd, prefix = todo.pop()
            try:
                with os.scandir(fd) as listed:
                    entries = list(listed)
                for entry in entries:
                    st = entry.stat(follow_symlinks=False)
                    name = prefix + os.fsencode(entry.name)
                    kind = stat.S_IFMT(st.st_mode)
                    lines.append(b"%s\0%o\0%d\0%d\0%d\0%d" % (
                        name, kind, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns
                    ))  # fmt: skip
                    if stat.S_ISDIR(st.st_mode):
                        todo.append((os.open(entry.name, flags, dir_fd=fd), name + b"/"))
            finally:
                os.close(fd)
    finally:
        for fd, _ in todo:
            os.close(fd)
    return lines


def changed(plan: Plan) -> dict[int, str]:
    """The groups of ``plan`` whose folder no longer holds what it held when the plan was
    made (or cannot be read now), with the reason: none of their files is acted on."""
    verdicts: dict[tuple[str, str], str | None] = {}
    left: dict[int, str] = {}
    for index, group in enumerate(plan.groups):
        folder = group.folder
        if folder is None:
            continue
        key = (folder.root, folder.path)
        if key not in verdicts:
            verdicts[key] = _verdict(folder.root, folder.path, folder.listing)
        reason = verdicts[key]
        if reason is not None:
            left[index] = reason
    return left


def _verdict(root: str, path: str, recorded: str) -> str | None:
    try:
        now, _ = listing(root, path)
    except OSError as exc:
        return f"its folder cannot be read now ({exc.strerror}): the folder is left whole"
    return None if now == recorded else FOLDER_CHANGED


def remove_empty(root: str, path: str) -> int:
    """Remove the folder ``path`` and the folders below it that are empty, from the deepest
    up, reached beneath ``root`` without following any symbolic link (after ``--remove`` took
    a duplicate folder's files away). A folder that still holds anything stays, and so do
    the folders above it: nothing but an empty folder is ever removed.

    Returns:
        How many folders were removed.
    """
    parent, _, name = path.rstrip("/").rpartition("/")
    if not parent or not is_below(path, root):
        return 0
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        with RootDir(root) as beneath:
            up = beneath.open(parent or "/", flags)
    except OSError:
        return 0
    try:
        return _remove_below(up, name)
    finally:
        os.close(up)


def _remove_below(parent: int, name: str) -> int:
    """Remove the empty folders at and below ``name`` in the open folder ``parent``."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    removed = 0
    # Depth first without recursion: (descriptor of a folder's parent, its name, its own
    # descriptor once its children are on the stack above it, else -1).
    stack: list[tuple[int, str, int]] = [(parent, name, -1)]
    opened: list[int] = []
    try:
        while stack:
            up, here, fd = stack.pop()
            if fd < 0:
                try:
                    fd = os.open(here, flags, dir_fd=up)
                except OSError:
                    continue  # gone, a link, or no folder: nothing to remove
                opened.append(fd)
                stack.append((up, here, fd))
                with os.scandir(fd) as entries:
                    below = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
                stack += [(fd, child, -1) for child in below]
                continue
            try:
                os.rmdir(here, dir_fd=up)
                removed += 1
            except OSError:
                pass  # not empty (a file it still holds, one made meanwhile): it stays
    finally:
        for fd in opened:
            os.close(fd)
    return removed
