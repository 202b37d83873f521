"""Undoing what an action log records, and settling actions an interrupt cut short.

Actions are reverted newest first. Each is looked at on disk, never assumed:

- a **move** is moved back, if the file at the target is still the one moved (same device,
  inode, size and modification time) and nothing took its old name;
- a **link** or **remove** is restored as an independent copy of the kept file's content, with
  the victim's logged permissions, owner (when allowed) and times; the victim's inode itself
  is gone (its bytes were the kept file's, so nothing of the content is lost). The copy is
  written beside the link under the action's temporary name, holes kept
  (:mod:`isccd.dedupe.sparse`), read back and synced: only if its length and its BLAKE3
  digest are the victim's logged ones, and the sync succeeds, does it take the victim's
  name. A copy that cannot be written whole (a full disk) is removed and the link left as it
  is, said as "cannot";
- a **reflink** needs nothing: the file has its own attributes, and blocks shared with the kept
  file are copied by the file system when either is written;
- an action an interrupt cut short is put back as it was: the temporary name holding the
  victim or its replacement is renamed back or removed.

What cannot be undone (a moved file changed or gone, a kept file whose content changed, a
name taken again, a disk too full for the copy) is said, and left as it is. Each result is
logged, so running undo again only retries what is left.

The log is read whole and verified before anything is touched (:mod:`isccd.dedupe.logread`):
a log not written by dedupe under this state directory's key is refused. The permissions put
back never include set-user-ID or set-group-ID unless undo runs as root and could give the
copy its logged owner.

Undo takes no lock of its own: a caller that keeps dedupe runs and undos of one tree apart
holds it around :func:`undo_log`.
"""

from __future__ import annotations

import contextlib
import enum
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from isccd.dedupe.actions import unlink_if
from isccd.dedupe.beneath import parent_of
from isccd.dedupe.log import ActionLog, Intent, LoggedAction
from isccd.dedupe.logread import read_log
from isccd.dedupe.plan import Action
from isccd.dedupe.sparse import copy_sparse
from isccd.dedupe.syscalls import RENAME_EXCHANGE, RENAME_NOREPLACE, renameat2
from isccd.dedupe.verify import digest_of, opened
from isccd.errors import DedupeError

_NOT_STARTED = "interrupted before it changed the file (which has changed since); left as it is"
_CREATE = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_SET_ID = stat.S_ISUID | stat.S_ISGID


class UndoStatus(enum.StrEnum):
    """What undo did with one logged action."""

    UNDONE = "undone"
    """Reverted (or put back as it was, for an action cut short)."""
    NOTHING = "nothing"
    """Nothing to undo (a reflink; an action that had not started)."""
    CANNOT = "cannot"
    """Cannot be undone; the reason says why. Left as it is."""


@dataclass(frozen=True, slots=True)
class UndoOutcome:
    """What became of one logged action.

    Attributes:
        intent: The action.
        status: What undo did.
        reason: What was done, or why it could not be.
    """

    intent: Intent
    status: UndoStatus
    reason: str


def _stat_at(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _is_logged(st: os.stat_result | None, intent: Intent) -> bool:
    """True when ``st`` is the victim as logged (device, inode, size, modification time)."""
    if st is None or not stat.S_ISREG(st.st_mode):
        return False
    now = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    return now == (intent.device, intent.inode, intent.size, intent.mtime_ns)


def _cannot_write(intent: Intent, why: str) -> DedupeError:
    return DedupeError(
        intent.path, f"its copy cannot be written ({why}); the copy was removed and the link "
        "left as it is"
    )  # fmt: skip


def _write_copy(intent: Intent, kept: int, fd: int) -> None:
    """Fill the new file ``fd`` with the kept file's content and check it is the victim's:
    its length and its BLAKE3 digest, read back from the copy itself.

    Raises:
        DedupeError: It cannot be written whole (the disk is full), or it is not the victim's
            content (the kept file changed).
    """
    try:
        copy_sparse(kept, fd, intent.size)
        size = os.fstat(fd).st_size
        digest = digest_of(fd) if size == intent.size else b""
    except OSError as exc:
        raise _cannot_write(intent, exc.strerror or str(exc)) from None
    if size != intent.size:
        raise _cannot_write(intent, f"it came out {size:,} bytes long, not {intent.size:,}")
    assert intent.blake3 is not None
    if digest.hex() != intent.blake3:
        raise DedupeError(intent.path, f"the kept file {intent.kept} no longer holds its content")


def restored_mode(logged: int, *, owner_restored: bool, root: bool) -> int:
    """The permissions a restored copy gets: the logged ones, without set-user-ID and
    set-group-ID unless root gave the copy its logged owner (a set-ID copy owned by whoever
    runs undo would be a program running as them)."""
    mode = stat.S_IMODE(logged)
    return mode if owner_restored and root else mode & ~_SET_ID


def _set_attributes(intent: Intent, fd: int) -> str:
    """Give the copy the victim's logged owner (as root), permissions and times; a note on
    what could not be given (for the outcome)."""
    note = ""
    owned = (intent.uid, intent.gid) == (os.getuid(), os.getgid())
    if not owned:
        with contextlib.suppress(PermissionError):  # said in the outcome
            os.fchown(fd, intent.uid, intent.gid)
            owned = True
    mode = restored_mode(intent.mode, owner_restored=owned, root=os.geteuid() == 0)
    if mode != stat.S_IMODE(intent.mode):
        note = " (without its set-user-ID/set-group-ID bits: only root restores those)"
    os.fchmod(fd, mode)
    os.utime(fd, ns=(intent.atime_ns, intent.mtime_ns))
    return note


def _copy_into(intent: Intent, dir_fd: int, temp: str) -> str:
    """Create ``temp`` holding the kept file's content, checked against the victim's logged
    length and digest, with the victim's logged permissions, owner and times; a note on the
    attributes that could not be given.

    Raises:
        DedupeError: The kept file cannot be read, the copy cannot be written whole, or its
            content is no longer the victim's (``temp`` is then removed).
    """
    if intent.blake3 is None:
        raise DedupeError(intent.path, "no digest was logged for it; it cannot be restored")
    with opened(intent.kept_root, intent.kept) as kept:
        if kept.stat.st_size != intent.size:
            raise DedupeError(
                intent.path, f"the kept file {intent.kept} no longer holds its content"
            )
        try:
            fd = os.open(temp, _CREATE, 0o600, dir_fd=dir_fd)
        except OSError as exc:
            raise DedupeError(
                intent.path, f"cannot create its copy beside it: {exc.strerror}"
            ) from None
        try:
            _write_copy(intent, kept.fd, fd)
            note = _set_attributes(intent, fd)  # its times last: reading it back set them
            try:
                os.fsync(fd)  # where blocks are allocated late, a full disk shows here
            except OSError as exc:
                raise _cannot_write(intent, exc.strerror or str(exc)) from None
        except BaseException:
            os.unlink(temp, dir_fd=dir_fd)
            raise
        finally:
            os.close(fd)
        return note


def _owner_note(intent: Intent, dir_fd: int, name: str) -> str:
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if (st.st_uid, st.st_gid) != (intent.uid, intent.gid):
        return f" (owned by you: its owner {intent.uid}:{intent.gid} needs root)"
    return ""


def _link_sibling(intent: Intent, sibling: str, dir_fd: int, temp: str) -> bool:
    """Link ``temp`` to the copy already restored for another name of the same victim, if
    that copy is still as restored (same size and times, not a link out of the root)."""
    try:
        with opened(intent.root, sibling) as copy:
            st = copy.stat
            if (st.st_size, st.st_mtime_ns) != (intent.size, intent.mtime_ns):
                return False
            os.link(copy.name, temp, src_dir_fd=copy.dir_fd, dst_dir_fd=dir_fd,
                    follow_symlinks=False)  # fmt: skip
            return True
    except (DedupeError, OSError):
        return False


def _undo_move(intent: Intent) -> UndoOutcome:
    assert intent.target is not None and intent.target_root is not None
    with parent_of(intent.target_root, intent.target) as (target_dir, target_name):
        moved = _stat_at(target_dir, target_name)
        with parent_of(intent.root, intent.path, create=True) as (dir_fd, name):
            if not _is_logged(moved, intent):
                if _is_logged(_stat_at(dir_fd, name), intent):
                    return UndoOutcome(intent, UndoStatus.NOTHING, "it had not been moved")
                return UndoOutcome(
                    intent, UndoStatus.CANNOT, f"the moved file is no longer {intent.target} "
                    "as it was moved"
                )  # fmt: skip
            try:
                renameat2(target_dir, target_name, dir_fd, name, RENAME_NOREPLACE)
            except FileExistsError:
                return UndoOutcome(
                    intent, UndoStatus.CANNOT, f"a file took its name again; the moved one is "
                    f"left at {intent.target}"
                )  # fmt: skip
    return UndoOutcome(intent, UndoStatus.UNDONE, f"moved back from {intent.target}")


def _undo_replace(
    intent: Intent, restored: dict[tuple[int, int], str], *, interrupted: bool
) -> UndoOutcome:
    """Undo a link, reflink or remove (``restored``: the copies made so far, by the victim
    they stand for; ``interrupted``: the log has no outcome for it)."""
    temp = intent.temp
    if temp is None:
        raise DedupeError(intent.path, "the log does not name its temporary file")
    with parent_of(intent.root, intent.path, create=True) as (dir_fd, name):
        aside = _stat_at(dir_fd, temp)
        here = _stat_at(dir_fd, name)
        if _is_logged(aside, intent):
            # Cut short after the victim was swapped out: swap (or rename) it back.
            assert aside is not None
            if here is None:
                renameat2(dir_fd, temp, dir_fd, name, RENAME_NOREPLACE)
            else:
                renameat2(dir_fd, temp, dir_fd, name, RENAME_EXCHANGE)
                unlink_if(dir_fd, temp, here.st_ino)
            return UndoOutcome(intent, UndoStatus.UNDONE, "put back as it was (interrupted)")
        if aside is not None and here is not None and aside.st_ino != here.st_ino:
            unlink_if(dir_fd, temp, aside.st_ino)  # a link or clone never swapped in
        verdict = _verdict(intent, here, interrupted=interrupted)
        if verdict is not None:
            return verdict
        return _restore(intent, dir_fd=dir_fd, name=name, temp=temp, here=here, restored=restored)


def _is_result(intent: Intent, here: os.stat_result | None) -> bool:
    """True when the victim's name holds what the link or remove made of it."""
    if intent.action is Action.REMOVE:
        return here is None
    with opened(intent.kept_root, intent.kept) as kept:
        return here is not None and (here.st_dev, here.st_ino) == (
            kept.stat.st_dev,
            kept.stat.st_ino,
        )


def _holds_its_content(intent: Intent) -> bool:
    """True when the victim's name holds a file of its own with the victim's logged length
    and digest."""
    if intent.blake3 is None:
        return False
    try:
        with opened(intent.root, intent.path) as here:
            if here.stat.st_size != intent.size:
                return False
            return digest_of(here.fd).hex() == intent.blake3
    except (DedupeError, OSError):
        return False


def _verdict(
    intent: Intent, here: os.stat_result | None, *, interrupted: bool
) -> UndoOutcome | None:
    """Why the victim is not to be restored, or ``None`` when it is."""
    if _is_logged(here, intent):
        return UndoOutcome(intent, UndoStatus.NOTHING, "it had not been changed")
    if intent.action is Action.REFLINK:
        return UndoOutcome(
            intent, UndoStatus.NOTHING, "a reflinked file keeps its own attributes and gets its "
            "own blocks when written: nothing to undo"
        )  # fmt: skip
    if _is_result(intent, here):
        return None
    if interrupted:  # it never got as far as changing the file
        return UndoOutcome(intent, UndoStatus.NOTHING, _NOT_STARTED)
    return _not_restored(intent, here)


def _not_restored(intent: Intent, here: os.stat_result | None) -> UndoOutcome:
    """Why a done action's name, holding neither the victim nor the action's result, is left
    as it is."""
    if here is not None and _holds_its_content(intent):
        # Restored by an undo that could not log it (a full disk), or copied back by hand.
        return UndoOutcome(intent, UndoStatus.NOTHING, "already a file of its own again")
    if intent.action is Action.REMOVE:
        return UndoOutcome(intent, UndoStatus.CANNOT, "a file took its name again")
    why = "gone" if here is None else "no longer the link made"
    return UndoOutcome(intent, UndoStatus.CANNOT, f"it is {why}; left as it is")


def _restore(
    intent: Intent,
    *,
    dir_fd: int,
    name: str,
    temp: str,
    here: os.stat_result | None,
    restored: dict[tuple[int, int], str],
) -> UndoOutcome:
    """Put an independent copy of the kept content at the victim's name; a victim with
    several names gets one copy, the other names are linked to it as they were."""
    with contextlib.suppress(FileNotFoundError):  # a stale temporary of this action
        os.unlink(temp, dir_fd=dir_fd)
    sibling = restored.get((intent.device, intent.inode))
    note = ""
    try:
        if sibling is None or not _link_sibling(intent, sibling, dir_fd, temp):
            note = _copy_into(intent, dir_fd, temp)
    except DedupeError as exc:
        return UndoOutcome(intent, UndoStatus.CANNOT, exc.reason)
    copy = os.stat(temp, dir_fd=dir_fd, follow_symlinks=False).st_ino
    try:
        if here is None:
            renameat2(dir_fd, temp, dir_fd, name, RENAME_NOREPLACE)
        else:
            renameat2(dir_fd, temp, dir_fd, name, RENAME_EXCHANGE)
    except OSError:
        unlink_if(dir_fd, temp, copy)
        raise
    if here is not None:
        # temp now holds the link to the kept file that was there: drop only that.
        unlink_if(dir_fd, temp, here.st_ino)
    restored.setdefault((intent.device, intent.inode), intent.path)
    note = _owner_note(intent, dir_fd, name) + note
    return UndoOutcome(
        intent, UndoStatus.UNDONE, f"restored as a copy of {intent.kept}'s content{note}"
    )


def undo_action(
    logged: LoggedAction, restored: dict[tuple[int, int], str] | None = None
) -> UndoOutcome | None:
    """Undo one logged action (``None`` when there is nothing to look at: it failed, leaving
    everything as it was, or was undone already).

    Args:
        logged: The action.
        restored: Copies restored so far in this undo, by the victim they stand for (device,
            inode), so that the names of one victim are restored as one file again.
    """
    intent = logged.intent
    if logged.outcome == "failed" or logged.undone == "undone":
        return None
    try:
        if intent.action is Action.MOVE:
            return _undo_move(intent)
        restored = {} if restored is None else restored
        return _undo_replace(intent, restored, interrupted=logged.outcome is None)
    except DedupeError as exc:
        return UndoOutcome(intent, UndoStatus.CANNOT, exc.reason)
    except OSError as exc:
        return UndoOutcome(intent, UndoStatus.CANNOT, exc.strerror or str(exc))


def undo_log(
    path: Path, key: bytes, on_outcome: Callable[[UndoOutcome], None] | None = None
) -> list[UndoOutcome]:
    """Undo every action of the log at ``path``, newest first, and log each result there.

    Args:
        path: The log.
        key: The action-log key its lines must be authenticated with.
        on_outcome: Called with each outcome as it is known (progress, output).

    Raises:
        PlanFileError: The log cannot be read, or is not authentic or valid (nothing was
            touched).
        ActionLogError: It cannot be appended to (a full disk): undo stops before its next
            action; what it did before is logged, and running it again finishes.
    """
    actions = read_log(path, key)
    outcomes = []
    restored: dict[tuple[int, int], str] = {}
    with ActionLog(path, key) as log:
        log.run(None, apply=True)
        for logged in reversed(actions):
            outcome = undo_action(logged, restored)
            if outcome is None:
                continue
            outcomes.append(outcome)
            if on_outcome is not None:
                on_outcome(outcome)
            op = "not_undone" if outcome.status is UndoStatus.CANNOT else "undone"
            log.outcome(logged.intent.id, op, outcome.reason, of=logged.run)
    return outcomes
