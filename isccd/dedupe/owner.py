"""Whose file may stand for whose: the owner rules of ``--link`` and ``--remove``.

A hard link *is* the kept file: after ``--link`` the victim's name has the kept file's owner,
group, permissions and ACL, and whoever may write the kept file may rewrite what the victim's
name shows. After ``--remove`` the kept file is the only copy left. So a file of one user must
never be made to stand for the file of another who could not already have written it: root
linking its own file to a copy a user made (and backdated, to be "the oldest") would hand the
user root's file. The rules are checked by ``--apply`` on the open files (never on what a plan or
an index says), and by the dry run, its JSON plan and ``--script sh`` on the files as their names
show them then (:func:`judged`: a step ``--apply`` would refuse is shown as left, with the
reason, and is not in the script):

- **the kept file's owner must be able to write the victim** already (the same owner, root, or
  a write permission through the victim's group or others bits; a victim with an ACL counts only
  for its owner and root), for ``--link`` and ``--remove``, always;
- **with ``--remove``, the victim's owner must be able to read the kept file** (by the same
  judgement: root, its owner, or a read bit for their group or others): removing a user's copy
  of a file they cannot read would leave them without their content;
- **a link joins files of the same owner, group, permissions and ACL** unless asked
  (``--link-any-owner``): otherwise the victim's name silently changes hands or permissions;
- **a set-user-ID or set-group-ID file is never linked to one of another owner or group**,
  even with ``--link-any-owner``, either side: the victim's name would run as the kept file's
  owner or group (a user's name for root's set-user-ID program, kept even after root updates
  it), or a program that ran as its own owner would run as another.

``--reflink`` and ``--move`` leave every file with its own attributes and blocks: no rule.
"""

from __future__ import annotations

import os
import pwd
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from isccd.dedupe.plan import Action, GroupKind, Step, Untouched
from isccd.errors import DedupeError

#: The extended attribute holding a regular file's POSIX ACL (a default ACL, the other one,
#: is a directory's only: the kernel refuses it on a file).
ACL_KEY = "system.posix_acl_access"


def acl_of(fd: int) -> tuple[tuple[str, bytes], ...]:
    """The POSIX ACL of an open regular file, as its raw extended attribute (empty without
    one)."""
    try:
        return ((ACL_KEY, os.getxattr(fd, ACL_KEY)),)
    except OSError:  # ENODATA: none; ENOTSUP: the file system has none
        return ()


def acl_at(path: str) -> tuple[tuple[str, bytes], ...]:
    """The POSIX ACL of the regular file named ``path`` itself (a link's own, never its
    target's)."""
    try:
        return ((ACL_KEY, os.getxattr(path, ACL_KEY, follow_symlinks=False)),)
    except OSError:
        return ()


def _groups_of(uid: int) -> frozenset[int]:
    """The groups of user ``uid`` (none known for a user the system does not name)."""
    try:
        entry = pwd.getpwuid(uid)
    except KeyError:
        return frozenset()
    try:
        return frozenset(os.getgrouplist(entry.pw_name, entry.pw_gid))
    except OSError:
        return frozenset({entry.pw_gid})


def may_write(uid: int, st: os.stat_result, *, has_acl: bool) -> bool:
    """True when user ``uid`` can already change the content of the file ``st`` describes:
    root, its owner (who may always ``chmod`` it), or a write bit for its group or others
    (not counted when the file has an ACL, whose entries are not judged here)."""
    if uid in (0, st.st_uid):
        return True
    if has_acl:
        return False
    if st.st_mode & stat.S_IWOTH:
        return True
    return bool(st.st_mode & stat.S_IWGRP) and st.st_gid in _groups_of(uid)


@dataclass(frozen=True, slots=True)
class Side:
    """One file of a step as the owner rules judge it.

    Attributes:
        path: Its name.
        stat: Its ``fstat`` (the engine) or ``lstat`` (a dry run, a script).
        acl: Its POSIX ACL (:func:`acl_of`, :func:`acl_at`).
    """

    path: str
    stat: os.stat_result
    acl: tuple[tuple[str, bytes], ...]


def refusal(victim: Side, kept: Side, *, action: Action, any_owner: bool) -> str | None:
    """Why the kept file may not stand for the victim (see the module docstring), or ``None``
    when it may: the one place the rules are written, for the engine and the dry run alike.

    Args:
        victim: The victim.
        kept: The kept file.
        action: ``Action.LINK`` or ``Action.REMOVE`` (the others have no rule).
        any_owner: ``--link-any-owner``: links between different owners, groups,
            permissions or ACLs are allowed (the first rule still applies).
    """
    why = _whose(victim, kept, action)
    if why is None and action is Action.LINK:
        why = _link_refusal(victim, kept, any_owner=any_owner)
    return why


def _whose(victim: Side, kept: Side, action: Action) -> str | None:
    """The rules between the two owners, for a link and a remove."""
    v, k = victim.stat, kept.stat
    if not may_write(k.st_uid, v, has_acl=bool(victim.acl)):
        return (
            f"the kept file {kept.path} belongs to user {k.st_uid}, who cannot write this "
            f"file of user {v.st_uid}: keeping it would hand them this file; left as it is"
        )
    if action is Action.REMOVE and not may_read(v.st_uid, k, has_acl=bool(kept.acl)):
        return (
            f"its owner, user {v.st_uid}, cannot read the kept file {kept.path} (user "
            f"{k.st_uid}'s, mode {stat.S_IMODE(k.st_mode):04o}): removing it would leave them "
            "without its content; left as it is"
        )
    return None


def _link_refusal(victim: Side, kept: Side, *, any_owner: bool) -> str | None:
    """The rules of a link: the victim's name would take the kept file's attributes."""
    v, k, kept_path = victim.stat, kept.stat, kept.path
    set_id = (v.st_mode | k.st_mode) & (stat.S_ISUID | stat.S_ISGID)
    if set_id and (v.st_uid, v.st_gid) != (k.st_uid, k.st_gid):
        which = "it" if v.st_mode & (stat.S_ISUID | stat.S_ISGID) else f"the kept file {kept_path}"
        return (
            f"{which} is set-user-ID or set-group-ID, and it is owned by {v.st_uid}:{v.st_gid}, "
            f"the kept file by {k.st_uid}:{k.st_gid}: a link would change who a program runs "
            "as; never linked, even with --link-any-owner"
        )
    if any_owner:
        return None
    if (v.st_uid, v.st_gid) != (k.st_uid, k.st_gid):
        return (
            f"owned by {v.st_uid}:{v.st_gid}, the kept file {kept_path} by "
            f"{k.st_uid}:{k.st_gid}: a link would change its owner (--link-any-owner to allow)"
        )
    if stat.S_IMODE(v.st_mode) != stat.S_IMODE(k.st_mode):
        return (
            f"its permissions {stat.S_IMODE(v.st_mode):04o} differ from the kept file's "
            f"{stat.S_IMODE(k.st_mode):04o}: a link would change them (--link-any-owner to "
            "allow)"
        )
    if victim.acl != kept.acl:
        return (
            f"its ACL differs from the kept file {kept_path}'s: a link would change it "
            "(--link-any-owner to allow)"
        )
    return None


def may_read(uid: int, st: os.stat_result, *, has_acl: bool) -> bool:
    """True when user ``uid`` can read the content of the file ``st`` describes, by its
    permission bits: root, its owner (who may always ``chmod`` it), or a read bit for its group
    or others (not counted when the file has an ACL, whose entries are not judged here)."""
    if uid in (0, st.st_uid):
        return True
    if has_acl:
        return False
    if st.st_mode & stat.S_IROTH:
        return True
    return bool(st.st_mode & stat.S_IRGRP) and st.st_gid in _groups_of(uid)


def check_owners(
    victim: tuple[str, int, os.stat_result],
    kept: tuple[str, int, os.stat_result],
    *,
    action: Action,
    any_owner: bool,
) -> None:
    """Raise unless the kept file may stand for the victim (:func:`refusal`), judged on the
    open files.

    Args:
        victim: The victim's path, open descriptor and ``fstat``.
        kept: The kept file's path, open descriptor and ``fstat``.
        action: ``Action.LINK`` or ``Action.REMOVE``.
        any_owner: ``--link-any-owner``.

    Raises:
        DedupeError: A rule is broken; the message names it.
    """
    path, victim_fd, v = victim
    kept_path, kept_fd, k = kept
    why = refusal(
        Side(path, v, acl_of(victim_fd)), Side(kept_path, k, acl_of(kept_fd)),
        action=action, any_owner=any_owner,
    )  # fmt: skip
    if why is not None:
        raise DedupeError(path, why)


def _side_by_name(path: str) -> Side | None:
    """A file as its name shows it now (``lstat``, never following a link), or ``None`` when
    it is not a regular file there (the engine skips it for that)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return Side(path, st, acl_at(path))


def judged(
    steps: Sequence[Step], *, any_owner: bool
) -> tuple[tuple[Step, ...], tuple[Untouched, ...]]:
    """The steps the owner rules let through, judged on the files as they are now (``lstat``),
    and the members they leave, with the reason: what a dry run shows and a script does, so
    that both agree with what ``--apply`` would do.

    Args:
        steps: The steps.
        any_owner: ``--link-any-owner``.
    """
    kept_steps: list[Step] = []
    left: dict[tuple[int, str], Untouched] = {}
    for step in steps:
        if step.kind is not GroupKind.EXACT or step.action not in (Action.LINK, Action.REMOVE):
            kept_steps.append(step)
            continue
        victim, kept = _side_by_name(step.path), _side_by_name(step.kept.path)
        why = None
        if victim is not None and kept is not None:
            why = refusal(victim, kept, action=step.action, any_owner=any_owner)
        if why is None:
            kept_steps.append(step)
        else:
            key = (step.group, step.member.path)
            left.setdefault(key, Untouched(step.group, step.member.path, why))
    return tuple(kept_steps), tuple(left.values())


def _folder_risk(
    folder: Path, st: os.stat_result, trusted: tuple[int, int], in_sticky: bool
) -> str | None:
    """Why another user could swap what the folder ``folder`` (its ``lstat``) holds, or
    replace it, or ``None``; ``in_sticky``: its own folder is sticky."""
    if in_sticky and st.st_uid not in trusted:
        return (
            f"{str(folder)!r} belongs to user {st.st_uid}, who could rename it in its sticky folder"
        )
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        return f"{str(folder)!r} on the way is not a folder but a link or a file"
    if st.st_uid not in trusted:
        return (
            f"the folder {str(folder)!r} belongs to user {st.st_uid}, who could swap what it holds"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        return f"the folder {str(folder)!r} can be written by other users, who could swap its names"
    return None


def _named_in_sticky(path: Path, trusted: tuple[int, int]) -> str | None:
    """Why the name ``path``, in a sticky folder, could be renamed by another user."""
    try:
        st = os.lstat(path)
    except OSError:
        return None  # not there: the script's checks skip it
    if st.st_uid in trusted:
        return None
    return f"{str(path)!r} belongs to user {st.st_uid}, who could rename it in its sticky folder"


def swappable(path: str, uid: int) -> str | None:
    """Why another user than ``uid`` (and root) could change what ``path`` names between a
    check and an act made by name, as a shell script's are, or ``None`` when nobody could.

    Every folder from ``/`` to ``path``'s own (those that exist: a move's target may not yet)
    must be a folder, not a link, that only ``uid`` or root owns and only they may write, or
    that is sticky (``/tmp``): there others may add names but not rename those of ``uid`` or
    root, so the next name on the way, ``path`` itself included, must be theirs. Judged on
    ``lstat``, when asked: ``--apply`` needs none of it, as it acts on open folders.
    """
    trusted = (0, uid)
    target = Path(os.path.normpath(path))
    in_sticky = False
    for folder in reversed(target.parents):
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            if in_sticky:  # anyone may make it first, and own it
                return f"{str(folder)!r} is not there, and another user could make it first"
            return None  # made by the script itself, private to its user
        except OSError as exc:
            return f"the folder {str(folder)!r} cannot be looked at ({exc.strerror})"
        why = _folder_risk(folder, st, trusted, in_sticky)
        if why is not None:
            return why
        in_sticky = bool(st.st_mode & stat.S_ISVTX)
    return _named_in_sticky(target, trusted) if in_sticky else None


def scriptable(steps: Sequence[Step], uid: int) -> tuple[tuple[Step, ...], tuple[Untouched, ...]]:
    """The steps a shell script run by user ``uid`` may take by name (:func:`swappable` of
    every path a step names: the file, the kept file, a move's target), and the members left,
    with the reason (``--apply`` takes them: it acts on open folders)."""
    kept_steps: list[Step] = []
    left: dict[tuple[int, str], Untouched] = {}
    for step in steps:
        paths = [step.path, step.kept.path] + ([step.target] if step.target else [])
        why = next((w for p in paths if (w := swappable(p, uid)) is not None), None)
        if why is None:
            kept_steps.append(step)
        else:
            reason = f"{why}; not in a script, which acts by name (--apply acts on open folders)"
            left.setdefault(
                (step.group, step.member.path), Untouched(step.group, step.member.path, reason)
            )
    return tuple(kept_steps), tuple(left.values())


def stamp_of(path: str) -> str | None:
    """The owner, group and permissions of the file at ``path`` (``lstat``) as GNU ``stat -c
    '%u %g %a'`` prints them, or ``None`` when it cannot be looked at."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return f"{st.st_uid} {st.st_gid} {stat.S_IMODE(st.st_mode):o}"
