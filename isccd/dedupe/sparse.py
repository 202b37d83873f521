"""Copying a file's content into a new file without filling its holes.

Undo restores a linked or removed file as a copy of the kept file's content. A byte-by-byte
copy allocates every block, so a 600 MiB sparse disk image holding a few MiB of data came
back as 600 MiB on disk. Here the copy is, in order of preference:

- a clone sharing the kept file's blocks (``FICLONE``: btrfs, XFS), which takes no space;
- otherwise, only the kept file's data is read (``SEEK_DATA``/``SEEK_HOLE`` skip its holes),
  and of that, whole blocks of zeros are not written either, so the copy has holes wherever
  the content is zeros (as ``cp --sparse=always`` makes them): it never takes more space than
  the kept file, and takes as little as the victim did when its holes were its zeros.

Every write is checked to be whole: a full disk raises ``ENOSPC``, never leaves a short copy
unsaid. The caller still verifies the copy's length and digest before using it.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator

from isccd.dedupe.syscalls import ficlone

#: Bytes read at a time.
CHUNK = 1024 * 1024
#: The unit of holes looked for in the data (the usual file system block).
BLOCK = 4096
_ZEROS = bytes(CHUNK)
_ZERO_BLOCK = memoryview(_ZEROS)[:BLOCK]
#: The errors of a file system (or a pair of files) that cannot clone: copy instead.
_NO_CLONE = frozenset(
    {errno.EOPNOTSUPP, errno.ENOTTY, errno.EINVAL, errno.EXDEV, errno.ENOSYS, errno.EPERM}
)


def _data(fd: int, size: int) -> Iterator[tuple[int, int]]:
    """The ranges of ``fd``'s first ``size`` bytes that hold data (all of it where the file
    system cannot say)."""
    offset = 0
    while offset < size:
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # only a hole is left
                return
            yield offset, size  # SEEK_DATA unsupported: all of it is data
            return
        if start >= size:
            return
        try:
            end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
        except OSError:
            end = size
        yield start, end
        offset = end


def _runs(chunk: bytes) -> Iterator[tuple[int, int]]:
    """The ranges of ``chunk`` that are not whole blocks of zeros."""
    if chunk == _ZEROS[: len(chunk)]:
        return
    view = memoryview(chunk)
    start = None
    for at in range(0, len(chunk), BLOCK):
        block = view[at : at + BLOCK]
        zero = len(block) == BLOCK and block == _ZERO_BLOCK
        if zero and start is not None:
            yield start, at
            start = None
        elif not zero and start is None:
            start = at
    if start is not None:
        yield start, len(chunk)


def _write_at(fd: int, data: memoryview, offset: int) -> None:
    """Write all of ``data`` at ``offset``.

    Raises:
        OSError: ``ENOSPC`` when the file system takes no more (a write returning short).
    """
    while data:
        written = os.pwrite(fd, data, offset)
        if written <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        data = data[written:]
        offset += written


def copy_sparse(src: int, dst: int, size: int) -> None:
    """Make the empty file ``dst`` a copy of the first ``size`` bytes of ``src``, holes kept.

    Raises:
        OSError: A read or write failed (``ENOSPC`` on a full disk); ``dst`` is then partial.
    """
    try:
        ficlone(dst, src)
    except OSError as exc:
        if exc.errno not in _NO_CLONE:
            raise
    else:
        os.ftruncate(dst, size)  # a clone is of the whole file: cut to what is restored
        return
    for start, end in _data(src, size):
        offset = start
        while offset < end:
            chunk = os.pread(src, min(CHUNK, end - offset), offset)
            if not chunk:
                break  # the file shrank: the caller's length check says so
            view = memoryview(chunk)
            for begin, stop in _runs(chunk):
                _write_at(dst, view[begin:stop], offset + begin)
            offset += len(chunk)
    os.ftruncate(dst, size)
