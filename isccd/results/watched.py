"""The library's files that match a watchlist (``similar --watchlist``, ``dupes --watchlist``):
a group per reference, by the rule the ``watch.match`` events follow."""

from __future__ import annotations

from dataclasses import dataclass

from isccd.results.files import Match


@dataclass(frozen=True, slots=True)
class WatchGroup:
    """One reference of a watchlist and the indexed files that match it.

    Attributes:
        ref: The reference's id (as ``isccd watchlist show`` lists it).
        label: Its label (the file name its codes were computed from, a codes line's name).
        iscc: Its ISCC-CODE (or the single unit it was given as).
        matches: One per file (its hardlinks in ``links``): its best match to the reference
            (exact by the Instance-Code first, then by unit type in reporting order), exact
            matches first, then nearest.
    """

    ref: int
    label: str
    iscc: str | None
    matches: tuple[Match, ...]


@dataclass(frozen=True, slots=True)
class WatchedResult:
    """The indexed files that match a watchlist's references.

    Attributes:
        watchlist: The watchlist's name.
        threshold: Its own threshold for every unit type; ``None``: each type's ``[match]``
            threshold.
        references: How many references it holds.
        groups: The references with at least one match, by reference id, at most the query's
            ``limit``.
        truncated: ``limit`` cut the list of groups.
    """

    watchlist: str
    threshold: int | None
    references: int
    groups: tuple[WatchGroup, ...]
    truncated: bool = False
