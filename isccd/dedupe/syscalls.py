"""The two Linux calls dedupe needs that the os module lacks: ``renameat2`` (exchange two
names atomically, or rename without replacing) and the ``FICLONE`` ioctl (a reflink)."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import fcntl
import os

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
