"""Keep rules: which member of a group stays.

Rules are applied in order, each breaking the ties the ones before it left (as fclones'
``--priority`` and rmlint's ``-S``); the last tie-break is always the path, byte order, so the
choice never depends on the order the group was listed in. Members under a ``--keep-in``
folder are preferred over all others whatever the rules say: a reference copy is the one kept.

Pure.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from isccd.dedupe.plan import Member
from isccd.fspath import is_under


class KeepBy(enum.StrEnum):
    """A keep criterion."""

    OLDEST = "oldest"
    """The earliest modification time."""
    NEWEST = "newest"
    """The latest modification time."""
    LARGEST = "largest"
    """The most bytes (for near groups; exact duplicates are all the same size)."""
    SHORTEST_PATH = "shortest-path"
    """The fewest path components, then the fewest characters."""
    PATH = "path"
    """A path under a given prefix."""


@dataclass(frozen=True, slots=True)
class KeepRule:
    """One rule: a criterion, and the prefix of ``path=PREFIX``.

    Attributes:
        by: The criterion.
        prefix: For :attr:`KeepBy.PATH`, the folder whose files are preferred.
    """

    by: KeepBy
    prefix: str | None = None

    def __str__(self) -> str:
        return f"path={self.prefix}" if self.by is KeepBy.PATH else self.by.value


#: The rules when none is given: the original is most often the oldest copy; among copies of
#: the same age the one nearest the top of the tree.
DEFAULT_RULES = (KeepRule(KeepBy.OLDEST), KeepRule(KeepBy.SHORTEST_PATH))


def parse_rule(text: str) -> KeepRule:
    """A rule as written on the command line: ``oldest``, ``newest``, ``largest``,
    ``shortest-path`` or ``path=PREFIX`` (an absolute folder).

    Raises:
        ValueError: Not a rule.
    """
    name, sep, prefix = text.partition("=")
    if sep:
        if name != KeepBy.PATH.value or not prefix.startswith("/"):
            raise ValueError(f"{text!r}: write path=/absolute/folder")
        return KeepRule(KeepBy.PATH, prefix.rstrip("/") or "/")
    try:
        by = KeepBy(text)
    except ValueError:
        names = ", ".join(k.value for k in KeepBy if k is not KeepBy.PATH)
        raise ValueError(f"{text!r} is not a keep rule ({names}, path=PREFIX)") from None
    if by is KeepBy.PATH:
        raise ValueError("path needs a folder: path=/absolute/folder")
    return KeepRule(by)


def _key(rule: KeepRule, member: Member) -> tuple[int, ...]:
    """Smaller is preferred."""
    if rule.by is KeepBy.OLDEST:
        return (member.mtime_ns,)
    if rule.by is KeepBy.NEWEST:
        return (-member.mtime_ns,)
    if rule.by is KeepBy.LARGEST:
        return (-member.size,)
    if rule.by is KeepBy.SHORTEST_PATH:
        path = member.path
        return (path.count("/"), len(path))
    assert rule.prefix is not None
    return (0 if any(is_under(p, rule.prefix) for p in member.paths) else 1,)


def choose_keep(
    members: Sequence[Member], rules: Sequence[KeepRule], keep_in: Sequence[str] = ()
) -> int:
    """The index of the member to keep.

    Args:
        members: The group's members (at least one).
        rules: The rules, most important first.
        keep_in: Folders whose files are preferred to all others (and never touched).

    Raises:
        ValueError: ``members`` is empty.
    """
    if not members:
        raise ValueError("a group without members")

    def key(i: int) -> tuple[object, ...]:
        member = members[i]
        protected = any(is_under(p, d) for p in member.paths for d in keep_in)
        rank = tuple(_key(rule, member) for rule in rules)
        return (not protected, *rank, member.path.encode("utf-8", "surrogateescape"))

    return min(range(len(members)), key=key)
