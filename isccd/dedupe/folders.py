"""Duplicate folders in a plan (``dedupe --dirs``): each file of a duplicate folder is a group
with its copy in the folder kept (made by :mod:`isccd.cli.dedupe` from ``dupes --dirs``), and
each such group records its folder's listing (:class:`isccd.dedupe.plan.FolderGuard`), so that
a folder that changed since the plan is left whole.

:func:`listing` reads a folder beneath its root without following any symbolic link;
:func:`changed` says which of a plan's folders no longer hold what they held.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass

from isccd.beneath import RootDir
from isccd.dedupe.plan import Plan

#: Why a folder's files are left alone, when it changed since the plan.
FOLDER_CHANGED = "its folder changed since the plan: the folder is left whole"


@dataclass(frozen=True, slots=True)
class Listing:
    """What a folder holds.

    Attributes:
        digest: SHA-256 of every name below it with its type, device, inode, size and
            modification time, sorted.
        entries: How many names.
        folders: ``(st_dev, st_ino)`` of the folder and of every folder below it: a folder
            bind-mounted in another is the same folder in both.
    """

    digest: str
    entries: int
    folders: frozenset[tuple[int, int]]


def listing(root: str, path: str) -> Listing:
    """What the folder ``path`` holds, reached beneath ``root`` without following any
    symbolic link.

    Raises:
        OSError: The folder cannot be reached or read, or holds a mount point of another file
            system (``EXDEV``: what is mounted there may be any other folder).
    """
    with RootDir(root) as beneath:
        fd = beneath.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    st = os.fstat(fd)
    folders = {(st.st_dev, st.st_ino)}
    lines = sorted(_entries(fd, path, folders))
    digest = hashlib.sha256(b"\n".join(lines)).hexdigest()
    return Listing(digest, len(lines), frozenset(folders))


def _entries(top: int, path: str, seen: set[tuple[int, int]]) -> list[bytes]:
    """Each name below the open directory ``top`` (closed here), as a line: depth first,
    without recursion, holding open only the folders from ``top`` down to the one listed."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    device = os.fstat(top).st_dev
    lines: list[bytes] = []
    # Each open folder with its prefix and the names of its folders not listed yet.
    frames: list[tuple[int, bytes, list[str]]] = []
    try:
        frames.append((top, b"", _listed(top, b"", device, lines, path, seen=seen)))
        while frames:
            fd, prefix, folders = frames[-1]
            if not folders:
                os.close(fd)
                frames.pop()
                continue
            name = folders.pop()
            child = os.open(name, flags, dir_fd=fd)
            here = prefix + os.fsencode(name) + b"/"
            frames.append((child, here, _listed(child, here, device, lines, path, seen=seen)))
    finally:
        for fd, _, _ in frames:
            os.close(fd)
    return lines


def _listed(
    fd: int, prefix: bytes, device: int, lines: list[bytes], path: str, *,
    seen: set[tuple[int, int]],
) -> list[str]:  # fmt: skip
    """Add the lines of the names in the open folder ``fd``, and its folders to ``seen``;
    return its folders' names."""
    with os.scandir(fd) as listed:
        entries = list(listed)
    folders = []
    for entry in entries:
        st = entry.stat(follow_symlinks=False)
        if st.st_dev != device:
            raise OSError(errno.EXDEV, "it holds a mount point", path)
        name = prefix + os.fsencode(entry.name)
        kind = stat.S_IFMT(st.st_mode)
        lines.append(b"%s\0%o\0%d\0%d\0%d\0%d" % (
            name, kind, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns
        ))  # fmt: skip
        if stat.S_ISDIR(st.st_mode):
            folders.append(entry.name)
            seen.add((st.st_dev, st.st_ino))
    return folders


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
        now = listing(root, path)
    except OSError as exc:
        return f"its folder cannot be read now ({exc.strerror}): the folder is left whole"
    return None if now.digest == recorded else FOLDER_CHANGED
