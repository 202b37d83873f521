"""The Linux calls dedupe needs that the os module lacks or hides: ``renameat2`` (exchange two
names atomically, or rename without replacing), the ``FICLONE`` ioctl (a reflink), and read
leases (``F_SETLEASE``: no one may open a file for writing while one is held)."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import os
import signal

#: linux/fs.h: renameat2 flags.
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
#: linux/fs.h: _IOW(0x94, 9, int).
FICLONE = 0x40049409

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_renameat2 = getattr(_libc, "renameat2", None)


def renameat2(src_dir: int, src: str, dst_dir: int, dst: str, flags: int) -> None:
    """``renameat2(2)``: rename ``src`` to ``dst`` (names relative to directory descriptors).

    With :data:`RENAME_NOREPLACE` an existing ``dst`` is an error, never replaced; with
    :data:`RENAME_EXCHANGE` the two names swap the files they point to, atomically.

    Raises:
        OSError: The call failed (``EEXIST``, ``EXDEV``, ``EINVAL`` where the file system does
            not support the flag, ...).
    """
    if _renameat2 is None:  # glibc before 2.28
        raise OSError(errno.ENOSYS, "renameat2 is not available in this C library")
    result = _renameat2(src_dir, os.fsencode(src), dst_dir, os.fsencode(dst), ctypes.c_uint(flags))
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), src)


def ficlone(dst_fd: int, src_fd: int) -> None:
    """Make ``dst_fd`` share the blocks of ``src_fd`` (a reflink).

    Raises:
        OSError: ``EOPNOTSUPP``/``ENOTTY``/``EINVAL`` where the file system cannot, ``EXDEV``
            across file systems, ...
    """
    fcntl.ioctl(dst_fd, FICLONE, src_fd)


def read_lease(fd: int) -> OSError | None:
    """Place a read lease on the read-only ``fd``: from now on, until :func:`drop_lease`, an
    ``open`` of the file for writing (or a ``truncate``) by anyone waits for it to be dropped
    (at most ``/proc/sys/fs/lease-break-time`` seconds, when the kernel takes it back).

    The kernel tells the holder of a lease someone is waiting by a signal: ``SIGURG`` here,
    which is ignored unless handled (the default, ``SIGIO``, would end the process). Whether
    someone waits is then seen with :func:`lease_intact`.

    Returns:
        ``None``, or why no lease could be placed: ``EAGAIN`` when the file is open for
        writing (now, by anyone), ``EACCES`` when the caller neither owns it nor has
        ``CAP_LEASE``, ``EINVAL`` where the file system has no leases.
    """
    try:
        fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGURG)
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
    except OSError as exc:
        return exc
    return None


def lease_intact(fd: int) -> bool:
    """True while the read lease on ``fd`` holds and no one is waiting to write the file."""
    try:
        return fcntl.fcntl(fd, fcntl.F_GETLEASE) == fcntl.F_RDLCK
    except OSError:
        return False


def drop_lease(fd: int) -> None:
    """Drop the lease on ``fd`` (a writer waiting for it goes on)."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
