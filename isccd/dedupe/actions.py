"""The four actions on one name, each atomic: at every moment the name holds either its own
file or the finished result, never nothing and never a partial file.

Each takes the name away from the victim with one ``renameat2`` call (``RENAME_EXCHANGE``
to swap in the link or clone prepared under a temporary name in the same directory, or
``RENAME_NOREPLACE`` to move it aside), then checks that what it took is the file it
verified, unmodified. If someone replaced or wrote to the file in the instant between the
checks and the swap, the swap is reverted and the file left as it was. A link is made to the
open kept file's inode (``/proc/self/fd/N``), never to whatever its name shows at that moment.

A link, reflink or remove then returns a :class:`Swapped`: the victim's old inode still under
the temporary name, so that the caller can check the result once more (the kept file still
there, both contents still the ones verified: :func:`isccd.dedupe.verify.confirm`) and either
:func:`finish` (let the old inode go) or :func:`revert` (give the victim its name back). An
interrupt in between leaves the victim's bytes under the temporary name, which the action log
records (:mod:`isccd.dedupe.undo` settles it).

The checks of the plan's records and of the content come before (:mod:`isccd.dedupe.verify`);
the caller logs an intent between the two.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from isccd.dedupe.beneath import made_parent_of
from isccd.dedupe.syscalls import RENAME_EXCHANGE, RENAME_NOREPLACE, ficlone, renameat2
from isccd.dedupe.verify import Handle, lstat_at, name_unchanged
from isccd.errors import DedupeError, StaleFileError

_CREATE = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_NO_REFLINK = (errno.EOPNOTSUPP, errno.ENOTTY, errno.EINVAL, errno.ENOSYS)
#: Whether ``/proc/self/fd`` links to open files can be followed (procfs mounted).
_PROC_FD = Path("/proc/self/fd").is_dir()


class ReflinkUnsupportedError(DedupeError):
    """The file system cannot share blocks between files (``FICLONE`` refused).

    Attributes:
        device: The file system's device number.
    """

    def __init__(self, path: str, reason: str, device: int) -> None:
        super().__init__(path, reason)
        self.device = device


def _rename(src_dir: int, src: str, dst_dir: int, dst: str, *, flags: int, path: str) -> None:
    try:
        renameat2(src_dir, src, dst_dir, dst, flags)
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.ENOSYS):
            raise DedupeError(
                path, "its file system cannot rename atomically without replacing (renameat2): "
                "nothing was done; use --script to do it with ordinary commands"
            ) from None  # fmt: skip
        raise DedupeError(path, f"cannot be renamed: {exc.strerror}") from None


def unlink_if(dir_fd: int, name: str, inode: int) -> None:
    """Remove the temporary ``name`` if it is still the replacement made (inode ``inode``)."""
    with contextlib.suppress(OSError):
        if os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_ino == inode:
            os.unlink(name, dir_fd=dir_fd)


def _is_victim(victim: Handle, name: str) -> bool:
    """True when ``name`` (next to the victim) is the victim's inode, unmodified, and nothing
    wrote to it through another descriptor either (False when it cannot be looked at)."""
    try:
        now = os.stat(name, dir_fd=victim.dir_fd, follow_symlinks=False)
        by_fd = os.fstat(victim.fd)
    except OSError:
        return False
    was = victim.stat
    same = (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns)
    return same == (was.st_dev, was.st_ino, was.st_size, was.st_mtime_ns) and (
        by_fd.st_size,
        by_fd.st_mtime_ns,
    ) == (was.st_size, was.st_mtime_ns)


@dataclass(frozen=True, slots=True)
class Swapped:
    """A victim's name taken from it, its old file still kept aside until :func:`finish`.

    Attributes:
        victim: The victim, as opened (its inode now under ``temp``).
        temp: The name beside it that holds the victim's inode.
        exchanged: The victim's name holds a replacement (a link or a clone); otherwise it
            is free (a remove).
        replacement: The replacement's inode (``None`` for a remove).
        holder_fd: The file that holds the victim's content once the action is done: the
            kept file (link, remove) or the clone (reflink), open for reading.
        owns_holder: ``holder_fd`` is the clone's, closed by :func:`finish` or :func:`revert`.
    """

    victim: Handle
    temp: str
    exchanged: bool
    replacement: int | None
    holder_fd: int
    owns_holder: bool = False


def _exchange_in(victim: Handle, temp: str) -> None:
    """Exchange the victim's name with ``temp`` (the prepared replacement) and make sure the
    victim was what was exchanged; on any doubt, exchange back.

    Raises:
        StaleFileError: The victim changed at the last moment (it is left as it was).
        DedupeError: The exchange failed (nothing changed).
    """
    dir_fd = victim.dir_fd
    name_unchanged(victim)
    _rename(dir_fd, temp, dir_fd, victim.name, flags=RENAME_EXCHANGE, path=victim.path)
    if not _is_victim(victim, temp):
        _rename(dir_fd, temp, dir_fd, victim.name, flags=RENAME_EXCHANGE, path=victim.path)
        raise StaleFileError(victim.path, "changed at the last moment; left as it was")


def finish(swapped: Swapped) -> None:
    """Let the victim's old file go (its name beside it is removed): the action is done."""
    try:
        unlink_if(swapped.victim.dir_fd, swapped.temp, swapped.victim.stat.st_ino)
    finally:
        if swapped.owns_holder:
            os.close(swapped.holder_fd)


def revert(swapped: Swapped) -> None:
    """Give the victim its name back and drop the replacement: the action never happened.

    Raises:
        DedupeError: The name could not be given back (the victim stays under ``temp``, which
            the action log names; undo puts it back).
    """
    victim, dir_fd, temp = swapped.victim, swapped.victim.dir_fd, swapped.temp
    try:
        if swapped.exchanged:
            try:
                renameat2(dir_fd, temp, dir_fd, victim.name, RENAME_EXCHANGE)
            except FileNotFoundError:  # someone removed the replacement's name meanwhile
                _rename(dir_fd, temp, dir_fd, victim.name, flags=RENAME_NOREPLACE,
                        path=victim.path)  # fmt: skip
            else:
                assert swapped.replacement is not None
                unlink_if(dir_fd, temp, swapped.replacement)
        else:
            _rename(dir_fd, temp, dir_fd, victim.name, flags=RENAME_NOREPLACE, path=victim.path)
    except OSError as exc:
        raise DedupeError(
            victim.path, f"could not be given its name back ({exc.strerror}): it is {temp} "
            "beside it; `isccd dedupe --undo` puts it back"
        ) from None  # fmt: skip
    finally:
        if swapped.owns_holder:
            os.close(swapped.holder_fd)


def _require_same(made: os.stat_result, kept: Handle) -> None:
    """Raise unless the link just made is to the kept file's inode (not to a file that took
    its name at the last moment)."""
    if (made.st_dev, made.st_ino) != (kept.stat.st_dev, kept.stat.st_ino):
        raise StaleFileError(kept.path, "was replaced while being linked to")


def _link_to_open(kept: Handle, dir_fd: int, temp: str) -> None:
    """Make ``temp`` a hard link to the open kept file's inode itself, whatever its name
    shows now: ``linkat`` of ``/proc/self/fd/N`` (links to the inode behind the descriptor;
    ``AT_EMPTY_PATH`` would need ``CAP_DAC_READ_SEARCH``). Without ``/proc``, by its name (the
    inode linked to is compared with the open one next).

    Raises:
        OSError: The link cannot be made (``ENOENT``: the kept file was deleted meanwhile).
    """
    if _PROC_FD:
        os.link(f"/proc/self/fd/{kept.fd}", temp, dst_dir_fd=dir_fd, follow_symlinks=True)
    else:
        os.link(kept.name, temp, src_dir_fd=kept.dir_fd, dst_dir_fd=dir_fd,
                follow_symlinks=False)  # fmt: skip


def link(victim: Handle, kept: Handle, temp: str) -> Swapped:
    """Put a hard link to the open kept file in the victim's name, the victim aside.

    Raises:
        StaleFileError: A file changed at the last moment; nothing was changed.
        DedupeError: The link could not be made (another file system, too many links, no
            permission); nothing was changed.
    """
    if victim.stat.st_dev != kept.stat.st_dev:
        raise DedupeError(
            victim.path, f"is on another file system than the kept file {kept.path}: a hard "
            "link cannot cross file systems"
        )  # fmt: skip
    try:
        _link_to_open(kept, victim.dir_fd, temp)
    except FileNotFoundError:
        raise StaleFileError(kept.path, "was deleted while being linked to") from None
    except OSError as exc:
        raise DedupeError(victim.path, f"cannot link to {kept.path}: {exc.strerror}") from None
    made = lstat_at(victim.dir_fd, temp, victim.path)
    try:
        _require_same(made, kept)
        _exchange_in(victim, temp)
    except BaseException:
        unlink_if(victim.dir_fd, temp, made.st_ino)
        raise
    return Swapped(victim, temp, exchanged=True, replacement=made.st_ino, holder_fd=kept.fd)


def _copy_attributes(src: Handle, dst_fd: int) -> None:
    """Give ``dst_fd`` the owner, permissions, extended attributes (ACLs among them) and times
    of ``src``.

    Raises:
        DedupeError: One of them cannot be kept (the file would silently differ).
    """
    st = src.stat
    try:
        if (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
            os.fchown(dst_fd, st.st_uid, st.st_gid)
        os.fchmod(dst_fd, stat.S_IMODE(st.st_mode))
        for key in os.listxattr(src.fd):
            os.setxattr(dst_fd, key, os.getxattr(src.fd, key))
        os.utime(dst_fd, ns=(st.st_atime_ns, st.st_mtime_ns))
    except OSError as exc:
        raise DedupeError(
            src.path, f"its owner, permissions or attributes cannot be kept: {exc.strerror}"
        ) from None


def reflink(victim: Handle, kept: Handle, temp: str) -> Swapped:
    """Put a clone of the open kept file sharing its blocks (``FICLONE``), with the victim's
    own owner, permissions, attributes and times, in the victim's name, the victim aside.

    Raises:
        ReflinkUnsupportedError: The file system cannot (nothing was changed).
        StaleFileError: A file changed at the last moment (nothing was changed).
        DedupeError: Anything else failed (nothing was changed).
    """
    dir_fd = victim.dir_fd
    try:
        fd = os.open(temp, _CREATE, 0o600, dir_fd=dir_fd)
    except OSError as exc:
        raise DedupeError(victim.path, f"cannot create a file beside it: {exc.strerror}") from None
    try:
        try:
            ficlone(fd, kept.fd)
        except OSError as exc:
            if exc.errno == errno.EXDEV:
                raise DedupeError(
                    victim.path, f"is on another file system than the kept file {kept.path}: "
                    "a reflink cannot cross file systems"
                ) from None  # fmt: skip
            if exc.errno in _NO_REFLINK:
                raise ReflinkUnsupportedError(
                    victim.path, "its file system cannot share blocks between files (FICLONE: "
                    f"{exc.strerror}); reflinks need btrfs, XFS or another file system with "
                    "them; use --link instead", victim.stat.st_dev
                ) from None  # fmt: skip
            raise DedupeError(victim.path, f"cannot be reflinked: {exc.strerror}") from None
        _copy_attributes(victim, fd)
        clone = os.fstat(fd).st_ino
        _exchange_in(victim, temp)
    except BaseException:
        unlink_if(dir_fd, temp, os.fstat(fd).st_ino)
        os.close(fd)
        raise
    return Swapped(victim, temp, exchanged=True, replacement=clone, holder_fd=fd,
                   owns_holder=True)  # fmt: skip


def remove(victim: Handle, kept: Handle, temp: str) -> Swapped:
    """Take the victim's name away (moved aside under ``temp`` atomically) once checked to be
    the file verified; :func:`finish` deletes it.

    Raises:
        StaleFileError: It changed at the last moment (it is left as it was).
        DedupeError: It could not be removed (nothing was changed).
    """
    dir_fd = victim.dir_fd
    name_unchanged(victim)
    _rename(dir_fd, victim.name, dir_fd, temp, flags=RENAME_NOREPLACE, path=victim.path)
    if not _is_victim(victim, temp):
        _rename(dir_fd, temp, dir_fd, victim.name, flags=RENAME_NOREPLACE, path=victim.path)
        raise StaleFileError(victim.path, "changed at the last moment; left as it was")
    return Swapped(victim, temp, exchanged=False, replacement=None, holder_fd=kept.fd)


def _mirrored(victim: Handle, target_root: str, target: str) -> list[os.stat_result | None]:
    """The folders the folders below ``target_root`` on the way to ``target`` mirror (the
    target is the victim's whole path under the root), as they are now: the victim's own
    folder as opened, the others by name (``None`` where there is no folder)."""
    if target != target_root.rstrip("/") + victim.path:
        return []
    parts = victim.path.split("/")[1:-1]
    out: list[os.stat_result | None] = []
    for i in range(len(parts) - 1):
        try:
            st = os.lstat("/" + "/".join(parts[: i + 1]))
        except OSError:
            st = None
        out.append(st if st is not None and stat.S_ISDIR(st.st_mode) else None)
    return [*out, os.fstat(victim.dir_fd)] if parts else out


def move(victim: Handle, target_root: str, target: str) -> None:
    """Move the victim to ``target`` (beneath ``target_root``, its folders made as needed with
    the owner and mode of the folders they mirror; one another user could swap is refused:
    :func:`isccd.dedupe.beneath.made_parent_of`), never replacing a file there and never across
    file systems.

    Raises:
        StaleFileError: It changed at the last moment (it is moved back).
        DedupeError: It could not be moved: the target exists, is on another file system, ...
            (nothing was changed).
    """
    name_unchanged(victim)
    try:
        Path(target_root).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DedupeError(victim.path, f"{target_root} cannot be made: {exc.strerror}") from None
    like = _mirrored(victim, target_root, target)
    with made_parent_of(target_root, target, like) as (dir_fd, name):
        if os.fstat(dir_fd).st_dev != victim.stat.st_dev:
            raise DedupeError(
                victim.path, f"{target_root} is on another file system: files are only moved "
                "within one (a rename, never a copy)"
            )  # fmt: skip
        try:
            renameat2(victim.dir_fd, victim.name, dir_fd, name, RENAME_NOREPLACE)
        except FileExistsError:
            raise DedupeError(victim.path, f"{target} already exists; nothing replaced") from None
        except OSError as exc:
            raise DedupeError(victim.path, f"cannot be moved: {exc.strerror}") from None
        now = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        was = victim.stat
        if (now.st_ino, now.st_size, now.st_mtime_ns) != (was.st_ino, was.st_size, was.st_mtime_ns):
            _rename(
                dir_fd, name, victim.dir_fd, victim.name, flags=RENAME_NOREPLACE, path=victim.path
            )
            raise StaleFileError(victim.path, "changed at the last moment; left as it was")
