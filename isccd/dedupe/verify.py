"""The checks made immediately before each action: is the file still the one the plan recorded,
and are the victim's bytes still the kept file's?

A file is opened beneath its root without following links (:mod:`isccd.dedupe.beneath`), by
its name in the parent directory's descriptor, with ``O_NOFOLLOW``; the open descriptor must be
the inode the name shows. Then its device, inode, size and modification time must be those
recorded (the change time is not compared: linking to a file changes it). For exact
duplicates the two files are read side by side and compared byte for byte, and the kept
file's BLAKE3 digest, computed during the same read, must be the one recorded.

Every check is stale the moment it is made: after the action took the victim's name, and
before the victim's inode is let go, :func:`confirm` looks again at both files, by their open
descriptors and their names, and reads them side by side once more.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from isccd.dedupe.beneath import Folders, parent_of
from isccd.dedupe.plan import Member
from isccd.errors import StaleFileError
from isccd.iscc.instance import InstanceHasherV0

_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
#: Bytes compared per read.
CHUNK = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Handle:
    """A file opened for an action.

    Attributes:
        path: Its path.
        dir_fd: The parent directory (valid while the handle is).
        name: Its name in that directory.
        fd: The file, read-only.
        stat: ``fstat`` of ``fd``.
    """

    path: str
    dir_fd: int
    name: str
    fd: int
    stat: os.stat_result


def kind_of(mode: int) -> str:
    """A short description of a file type, for messages."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "a regular file" if stat.S_ISREG(mode) else "a special file"


def lstat_at(dir_fd: int, name: str, path: str) -> os.stat_result:
    """``lstat`` of a name in a directory.

    Raises:
        StaleFileError: The name is gone or cannot be looked at.
    """
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        raise StaleFileError(path, "gone since the plan was made") from None
    except OSError as exc:
        raise StaleFileError(path, f"cannot be looked at: {exc.strerror}") from None


@contextlib.contextmanager
def opened(root: str, path: str) -> Iterator[Handle]:
    """Open the regular file ``path`` beneath ``root`` for checking and acting.

    Raises:
        StaleFileError: Gone, a symbolic link or not a regular file, not openable, or swapped
            while being opened.
    """
    with parent_of(root, path) as (dir_fd, name):
        handle = open_at(dir_fd, name, path)
        try:
            yield handle
        finally:
            os.close(handle.fd)


def open_in(folders: Folders, root: str, path: str) -> Handle:
    """:func:`opened`, in a folder of ``folders``: the caller closes the handle's ``fd``,
    ``folders`` its folder.

    Raises:
        StaleFileError: As :func:`opened`.
    """
    dir_fd, name = folders.parent_of(root, path)
    return open_at(dir_fd, name, path)


def open_at(dir_fd: int, name: str, path: str) -> Handle:
    """The regular file ``name`` in the directory ``dir_fd``, opened (the caller closes it),
    never through a link, and the inode its name shows.

    Raises:
        StaleFileError: As :func:`opened`.
    """
    seen = lstat_at(dir_fd, name, path)
    if not stat.S_ISREG(seen.st_mode):
        raise StaleFileError(path, f"is now {kind_of(seen.st_mode)}")
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StaleFileError(path, "is now a symbolic link") from None
        if exc.errno == errno.ENOENT:
            raise StaleFileError(path, "gone since the plan was made") from None
        raise StaleFileError(path, f"cannot be opened: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino) or not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise StaleFileError(path, "was replaced while being opened")
    return Handle(path, dir_fd, name, fd, st)


def check_recorded(st: os.stat_result, member: Member, path: str) -> None:
    """Raise unless ``st`` is the file ``member`` recorded: same device, inode, size and
    modification time.

    Raises:
        StaleFileError: Which of them differs.
    """
    if (st.st_dev, st.st_ino) != member.identity:
        raise StaleFileError(path, "replaced by another file since the plan was made")
    if st.st_size != member.size:
        raise StaleFileError(
            path, f"its size changed since the plan was made ({st.st_size:,} bytes, was "
            f"{member.size:,})"
        )  # fmt: skip
    if st.st_mtime_ns != member.mtime_ns:
        raise StaleFileError(path, "modified since the plan was made")


def name_unchanged(handle: Handle) -> None:
    """Raise unless the handle's name still points to its file, unmodified.

    Raises:
        StaleFileError: The name is gone or was given to another file, or the file changed.
    """
    now = lstat_at(handle.dir_fd, handle.name, handle.path)
    was = handle.stat
    if (now.st_dev, now.st_ino) != (was.st_dev, was.st_ino):
        raise StaleFileError(handle.path, "replaced by another file while being acted on")
    if (now.st_size, now.st_mtime_ns) != (was.st_size, was.st_mtime_ns):
        raise StaleFileError(handle.path, "modified while being acted on")


def matches_digest(digest: bytes, recorded: str) -> bool:
    """True when the hex ``recorded`` digest (or a prefix of it) is ``digest``'s."""
    return digest.hex().startswith(recorded.lower())


def _compare(a_fd: int, b_fd: int, size: int) -> bytes | int:
    """Read two open files side by side: the BLAKE3 digest of their first ``size`` bytes when
    both hold exactly those, else the offset near which they differ."""
    hasher = InstanceHasherV0()
    offset = 0
    while offset < size:
        # No more than is left: a buffer of CHUNK bytes for a small file costs three calls to
        # the kernel (map, shrink, unmap) per read. A file that grew is seen after the loop.
        want = min(CHUNK, size - offset)
        a = os.pread(a_fd, want, offset)
        b = os.pread(b_fd, want, offset)
        if a != b or not a:
            return offset
        hasher.push(a)
        offset += len(a)
    if os.pread(a_fd, 1, size) or os.pread(b_fd, 1, size):
        return size  # one grew while being read
    return hasher.digest()


def same_bytes(victim: Handle, kept: Handle, blake3: str | None) -> bytes:
    """Compare two open files byte for byte, and the kept one's BLAKE3 with ``blake3``.

    Returns:
        The BLAKE3 digest of their content.

    Raises:
        StaleFileError: (about the victim) the contents differ; (about the kept file) its
            content is not the one recorded.
    """
    size = kept.stat.st_size
    if victim.stat.st_size != size:
        raise StaleFileError(victim.path, f"differs in size from the kept file {kept.path}")
    digest = _compare(kept.fd, victim.fd, size)
    if isinstance(digest, int):
        raise StaleFileError(
            victim.path, f"its content differs from the kept file {kept.path} near byte "
            f"{digest:,}"
        )  # fmt: skip
    if blake3 is not None and not matches_digest(digest, blake3):
        raise StaleFileError(kept.path, "its content is not the one the plan recorded")
    return digest


def _same_file(now: os.stat_result, was: os.stat_result) -> bool:
    """The same inode, with the same size, modification time, owner and permissions (the
    change time differs: linking to a file changes it)."""
    return (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns, now.st_uid, now.st_gid,
            now.st_mode) == (was.st_dev, was.st_ino, was.st_size, was.st_mtime_ns, was.st_uid,
                             was.st_gid, was.st_mode)  # fmt: skip


def confirm(
    victim: Handle, temp: str, holder_fd: int, kept: Handle, digest: bytes, *, kept_named: bool
) -> None:
    """After an action took the victim's name (its inode now under ``temp``, beside it), and
    before its inode is let go: raise unless everything is still what was verified.

    The victim's inode under ``temp``, unmodified; the kept file unmodified (the same inode,
    size, modification time, owner and permissions) and, when ``kept_named``, still under its
    name (a concurrent run may have removed it, keeping the victim); and the file that holds
    the content from now on (``holder_fd``: the kept file, or the clone) holding, byte for
    byte, the victim's content, whose digest is still ``digest`` (the one logged).

    Raises:
        StaleFileError: Something changed: the caller reverts the action.
    """
    try:
        aside = os.stat(temp, dir_fd=victim.dir_fd, follow_symlinks=False)
    except OSError:
        raise StaleFileError(victim.path, "was taken from beside it while being acted on") from None
    if not (_same_file(aside, victim.stat) and _same_file(os.fstat(victim.fd), victim.stat)):
        raise StaleFileError(victim.path, "changed while being acted on")
    now = os.fstat(kept.fd)
    if not _same_file(now, kept.stat) or now.st_nlink == 0:
        raise StaleFileError(kept.path, "the kept file changed while the copy was acted on")
    if kept_named:
        try:
            named = os.stat(kept.name, dir_fd=kept.dir_fd, follow_symlinks=False)
        except OSError:
            named = None
        if named is None or (named.st_dev, named.st_ino) != (now.st_dev, now.st_ino):
            raise StaleFileError(
                kept.path, "the kept file was removed or replaced while the copy was acted on "
                "(another run keeping the copy?)"
            )  # fmt: skip
    held = now if holder_fd == kept.fd else os.fstat(holder_fd)
    if held.st_size != victim.stat.st_size:
        raise StaleFileError(kept.path, "the kept content changed while the copy was acted on")
    seen = _compare(victim.fd, holder_fd, victim.stat.st_size)
    if seen != digest:
        raise StaleFileError(
            kept.path, "the kept content is no longer the copy's (written while the copy was "
            "acted on)"
        )  # fmt: skip


def digest_of(fd: int) -> bytes:
    """The BLAKE3 digest of an open file's content."""
    hasher = InstanceHasherV0()
    offset = 0
    while chunk := os.pread(fd, CHUNK, offset):
        hasher.push(chunk)
        offset += len(chunk)
    return hasher.digest()
