"""Opening a file without being tricked, and reading it once.

The rules every reader in isccd follows:

- A file inside a watched root is reached beneath the root's directory
  (:class:`isccd.beneath.RootDir`): no symbolic link on its path is followed (with
  ``follow_symlinks``, only links that stay beneath the root), so a directory swapped for a
  link between a check and the open cannot lead outside. A path a user names on the command
  line is opened by name; only its last component is not followed.
- ``lstat`` first. Anything but a regular file (FIFO, socket, device, directory, symbolic link) is
  refused and never opened, so a FIFO can never block a worker and a device never streams forever.
- Open with ``O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`` (plus ``O_NOATIME`` when the kernel allows it,
  so indexing does not touch access times), then ``fstat`` the descriptor: it must still be a
  regular file with the inode ``lstat`` saw, or the path was swapped under us.
- Every later reader (Pillow, text decoders, external tools) reads through this descriptor, never
  by re-opening the path.
- After all reading, :meth:`SourceFile.check_unchanged` compares the validators again: a file that
  changed, vanished or was replaced while it was read raises, and nothing computed from it is
  trusted. So does a file whose root's path no longer names the root's directory it was
  opened beneath (the root was moved, removed or replaced meanwhile).
- The root's directory may be opened once for a run of files (:class:`RootDirs`, a worker's
  job): each file is still opened beneath it, and the check after reading each file says
  whether the root is still in place, so a root replaced before or during any file of the run
  is noticed as if it had been opened for that file alone.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable
from typing import BinaryIO

from isccd.beneath import RootDir
from isccd.errors import (
    FileAccessError,
    FileError,
    FileUnstableError,
    FileVanishedError,
    NotRegularFileError,
)

#: Bytes a media type is sniffed from (what the SDK reads).
HEAD_SIZE = 4096
#: Files smaller than this are read whole by their first read (:meth:`SourceFile.head`): one
#: read instead of a head and then the rest (what hashing a file this small reads anyway).
WHOLE_READ = 64 * 1024

_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NOATIME = getattr(os, "O_NOATIME", 0)

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def file_kind(mode: int) -> str:
    """A short description of a file type, for messages ("a FIFO", "a regular file")."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "an unknown kind of file"


class SourceFile:
    """An open regular file, checked against the path it came from.

    Use :func:`open_source` to create one and close it with :meth:`close` (or ``with``).

    Attributes:
        path: The path that was opened.
        fd: The open descriptor (read-only, close-on-exec).
        stat: ``fstat`` of the descriptor right after opening.
    """

    def __init__(
        self,
        path: str,
        fd: int,
        st: os.stat_result,
        beneath: RootDir | None = None,
        *,
        owns_root: bool = True,
    ) -> None:
        self.path = path
        self.fd = fd
        self.stat = st
        self._beneath = beneath
        self._owns_root = owns_root
        #: The whole content, once a read got all the bytes ``fstat`` counted (a small file):
        #: later reads take it from here. A file changed in between fails the final check.
        self._whole: bytes | None = None

    @property
    def size(self) -> int:
        """The size at open time."""
        return self.stat.st_size

    def head(self, size: int = HEAD_SIZE) -> bytes:
        """The first ``size`` bytes (fewer for a shorter file), read without moving the offset.

        A file under :data:`WHOLE_READ` bytes is read whole by this first read (a byte more
        than ``fstat`` counts is asked for, to see its end), for the readers after it.
        """
        whole = self._whole
        if whole is not None:
            return whole if size >= len(whole) else whole[:size]
        counted = self.stat.st_size
        asked = max(size, counted + 1) if counted < WHOLE_READ else size
        data = os.pread(self.fd, asked, 0)
        # Fewer bytes than asked is the end of the file: all of it, if fstat counted as many.
        if len(data) < asked and len(data) == counted:
            self._whole = data
        return data if len(data) <= size else data[:size]

    def reader(self) -> BinaryIO:
        """A buffered binary file object positioned at the start, for libraries that want one.

        It reads through a duplicate of the descriptor; closing it leaves this file open. The
        duplicate shares the file offset, so use one reader at a time.
        """
        os.lseek(self.fd, 0, os.SEEK_SET)
        return os.fdopen(os.dup(self.fd), "rb")

    def stream(
        self, sink: Callable[[memoryview], object], *, bufsize: int = 2 * 1024 * 1024
    ) -> int:
        """Read the whole file once, in order, handing each piece to ``sink``.

        Memory stays bounded by one buffer of ``bufsize`` bytes whatever the file's size. The
        view passed to ``sink`` is only valid during the call: a sink that keeps data must copy.

        Args:
            sink: Called with consecutive, non-empty pieces of the content.
            bufsize: Bytes per read.

        Returns:
            The number of bytes read.

        Raises:
            FileAccessError: A read failed (an I/O error).
        """
        buf = bytearray(bufsize)
        view = memoryview(buf)
        offset = 0
        with contextlib.suppress(OSError):  # advice only; some filesystems refuse it
            os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        while True:
            try:
                n = os.preadv(self.fd, [buf], offset)
            except OSError as exc:
                raise FileAccessError(self.path, f"read failed: {exc.strerror}") from exc
            if n == 0:
                return offset
            sink(view[:n])
            offset += n

    def check_unchanged(self) -> None:
        """Confirm that the file read is still the file at the path, unchanged.

        Raises:
            FileVanishedError: The path no longer exists.
            FileUnstableError: The path now names another file, or the file's size, mtime or
                ctime changed since it was opened (it was written, truncated or renamed while
                it was read), or its root's path no longer names the directory it was opened
                beneath.
        """
        try:
            now = _lookup(self.path, self._beneath)
        except FileNotFoundError as exc:
            raise FileVanishedError(self.path, "file removed while it was read") from exc
        except OSError as exc:
            raise FileUnstableError(self.path, f"cannot stat after reading: {_why(exc)}") from exc
        st = self.stat
        if now.st_ino != st.st_ino or now.st_dev != st.st_dev:
            raise FileUnstableError(self.path, "file replaced while it was read")
        # The same inode as the descriptor's: its stat now is the descriptor's (no fstat more).
        if (
            now.st_mtime_ns != st.st_mtime_ns
            or now.st_ctime_ns != st.st_ctime_ns
            or now.st_size != st.st_size
        ):
            raise FileUnstableError(
                self.path, f"file changed while it was read (size {st.st_size} -> {now.st_size})"
            )
        if self._beneath is not None and self._beneath.moved():
            raise FileUnstableError(self.path, "its root was moved or replaced while it was read")

    def close(self) -> None:
        """Close the descriptor, and the root's unless it is shared (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self._beneath is not None and self._owns_root:
            self._beneath.close()

    def __enter__(self) -> SourceFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RootDirs:
    """The directories of the roots a run of files lies in, each opened once for the run.

    For a worker's job of small files: opening the root's directory costs about as much as
    opening the file. A root that cannot be opened is tried again for the next file, as it
    would be alone. Close it (or use ``with``) when the run is over; the files opened with it
    must be closed first.
    """

    def __init__(self) -> None:
        self._open: dict[tuple[str, bool], RootDir] = {}

    def get(self, root: str, follow_symlinks: bool, path: str) -> RootDir:
        """The open directory of ``root`` (opened now if it is not yet).

        Raises:
            FileVanishedError: The root does not exist (said of ``path``).
            FileAccessError: The root cannot be opened (said of ``path``).
        """
        key = (root, follow_symlinks)
        beneath = self._open.get(key)
        if beneath is None:
            beneath = self._open[key] = _open_root(root, follow_symlinks, path)
        return beneath

    def forget(self, root: str, follow_symlinks: bool) -> None:
        """Close the directory held for ``root`` (it is no longer the root): the next file of
        the run opens the root again."""
        beneath = self._open.pop((root, follow_symlinks), None)
        if beneath is not None:
            beneath.close()

    def close(self) -> None:
        """Close every root's directory (idempotent)."""
        while self._open:
            self._open.popitem()[1].close()

    def __enter__(self) -> RootDirs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_source(
    path: str,
    *,
    noatime: bool = True,
    root: str | None = None,
    follow_symlinks: bool = False,
    roots: RootDirs | None = None,
) -> SourceFile:
    """Open a regular file for reading, refusing anything else without opening it.

    Args:
        path: The file to open. A symbolic link is refused, not followed.
        noatime: Ask the kernel not to update the access time (when we own the file or are
            privileged; silently skipped otherwise).
        root: The watched root ``path`` lies in: the path is resolved beneath the root's
            directory, and a symbolic link anywhere on it is refused. ``None`` for a path a
            user names (``isccd code``), opened by name.
        follow_symlinks: With ``root``, follow symbolic links (the last component's too) as
            long as they stay beneath the root.
        roots: With ``root``, take the root's directory from these (shared by a run of files)
            instead of opening it for this file alone.

    Returns:
        The open file, with its ``fstat``.

    Raises:
        FileVanishedError: The path (or its root) does not exist.
        NotRegularFileError: The path is not a regular file, or leads through a symbolic link
            that is not followed or out of its root; it was not opened.
        FileAccessError: Permission denied or another OS error.
        FileUnstableError: The path was replaced between ``lstat`` and ``open``.
    """
    if root is None:
        return _open(path, noatime, None, owns_root=True)
    if roots is not None:
        shared = roots.get(root, follow_symlinks, path)
        try:
            return _open(path, noatime, shared, owns_root=False)
        except FileError as exc:
            # Looked up in a directory that may no longer be the root: what it says of the
            # path (gone, not a regular file, refused) only counts while it still is.
            if shared.moved():
                roots.forget(root, follow_symlinks)
                raise FileUnstableError(path, "its root was moved or replaced") from exc
            raise
    beneath = _open_root(root, follow_symlinks, path)
    try:
        return _open(path, noatime, beneath, owns_root=True)
    except BaseException:
        beneath.close()
        raise


def _open_root(root: str, follow_symlinks: bool, path: str) -> RootDir:
    try:
        return RootDir(root, follow_symlinks=follow_symlinks)
    except FileNotFoundError as exc:
        raise FileVanishedError(path, "its root is gone") from exc
    except OSError as exc:
        raise FileAccessError(path, f"cannot open its root: {_why(exc)}") from exc


def _regular(path: str, beneath: RootDir | None) -> os.stat_result:
    """The ``lstat`` of a regular file at ``path``; anything else raises."""
    try:
        before = _lookup(path, beneath)
    except FileNotFoundError as exc:
        raise FileVanishedError(path, "file not found") from exc
    except OSError as exc:
        if exc.errno in _REFUSED:
            raise NotRegularFileError(path, _REFUSED[exc.errno]) from exc
        raise FileAccessError(path, f"cannot stat: {_why(exc)}") from exc
    if not stat.S_ISREG(before.st_mode):
        raise NotRegularFileError(path, f"{file_kind(before.st_mode)}, not a regular file")
    return before


def _open(path: str, noatime: bool, beneath: RootDir | None, *, owns_root: bool) -> SourceFile:
    before = _regular(path, beneath)
    flags = _OPEN_FLAGS
    if beneath is not None and beneath.follow_symlinks:
        flags &= ~os.O_NOFOLLOW  # the last link is followed too, beneath the root only
    if noatime and _NOATIME and (os.geteuid() in (0, before.st_uid)):
        flags |= _NOATIME
    try:
        try:
            fd = _open_flags(path, flags, beneath)
        except PermissionError:
            if not flags & _NOATIME:
                raise
            # O_NOATIME needs ownership or CAP_FOWNER; without them the kernel says EPERM.
            fd = _open_flags(path, flags & ~_NOATIME, beneath)
    except FileNotFoundError as exc:
        raise FileVanishedError(path, "file removed before it could be opened") from exc
    except PermissionError as exc:
        raise FileAccessError(path, "permission denied") from exc
    except OSError as exc:
        if exc.errno in _REFUSED:
            raise FileUnstableError(path, f"replaced while opening: {_REFUSED[exc.errno]}") from exc
        raise FileAccessError(path, f"cannot open: {_why(exc)}") from exc

    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_ino != before.st_ino or st.st_dev != before.st_dev:
        os.close(fd)
        raise FileUnstableError(path, "replaced between listing and opening")
    return SourceFile(path, fd, st, beneath, owns_root=owns_root)


#: Why a path was refused without being opened, by the errno :mod:`isccd.beneath` gives.
_REFUSED = {
    errno.ELOOP: "a symbolic link on its path is not followed",
    errno.EXDEV: "its path leads outside its root",
}


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _lookup(path: str, beneath: RootDir | None) -> os.stat_result:
    """``lstat`` of ``path`` by name, or beneath its root (a last link is followed there when
    the root's rule says so)."""
    if beneath is None:
        return os.lstat(path)
    st = beneath.stat(path)
    if beneath.follow_symlinks and stat.S_ISLNK(st.st_mode):
        fd = beneath.open(path, os.O_PATH)
        try:
            return os.fstat(fd)
        finally:
            os.close(fd)
    return st


def _open_flags(path: str, flags: int, beneath: RootDir | None) -> int:
    return os.open(path, flags) if beneath is None else beneath.open(path, flags)


def read_limited(src: SourceFile, limit: int) -> bytes:
    """Read at most ``limit`` bytes from the start of the file.

    A read goes to the end of the file (or the limit), whatever size ``fstat`` gave: a file
    system may count fewer bytes than a file holds. A small file read whole once (by
    :meth:`SourceFile.head` or here: to its end, as many bytes as ``fstat`` counted) is not
    read again.

    Raises:
        FileAccessError: A read failed.
    """
    whole = src._whole
    if whole is not None:
        return whole if len(whole) <= limit else whole[:limit]
    pieces: list[bytes] = []
    offset = 0
    end = False
    while offset < limit:
        try:
            piece = os.pread(src.fd, min(limit - offset, 1 << 20), offset)
        except OSError as exc:
            raise FileAccessError(src.path, f"read failed: {exc.strerror}") from exc
        if not piece:
            end = True
            break
        pieces.append(piece)
        offset += len(piece)
    # A small file is one piece: returned as it is, without a copy.
    data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
    if end and len(data) == src.stat.st_size:
        src._whole = data
    return data
