"""The pipeline's settings, and the rule that decides when a stored unit is outdated."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from isccd.hashing import MISSING, UNKNOWN
from isccd.match import Thresholds

DAY = 86400.0


@dataclass(frozen=True, slots=True)
class PipelineOptions:
    """How records become index entries and events.

    Attributes:
        thresholds: The duplicate policy: near-duplicate thresholds per unit type, and the
            smallest file reported (``min_size``).
        others_limit: Other files listed in one duplicate event at most (the count of all is
            given too).
        near_named: Other files a ``dup.near`` names at most, the nearest (the count of all
            is given too; ``similar`` lists them all): a file that joins a family of
            thousands is announced in a few hundred bytes, as a stranger's file is.
        tombstone_retention: Seconds a removed file is remembered (``isccd get`` and event
            replay can still name it).
        event_retention: Seconds events are kept for replay with ``since``.
        versions: The current version of every profile component, as
            :func:`isccd.hashing.current_versions` gives them (``{"iscc": "1.5.0", "bits":
            "64", "fpcalc": "1.5.1", ...}``). A stored unit whose profile names a component at
            another version, or a unit skipped under such a profile (``fpcalc/missing`` once
            fpcalc is installed), is computed again, alone; empty: never.
        wide: Whether ISCC-CODEs are composed WIDE (as the hashing options say), used when
            recomputed units are combined with kept ones.
        unstable_attempts: Reads of a file that keeps changing before it is reported unstable.
        unstable_delay: Seconds before the first retry; doubled for each further one.
        hash_concurrency: Files hashed at once by a reconcile (at least the hashing pool's size,
            so that it never idles).
        follow_symlinks: Paths a watcher reports are examined following symbolic links that
            stay beneath their root (as the reconcile walk's options say); else none.
        folder_settle: Seconds a folder's files must be quiet before the daemon says it
            became, or stopped being, a duplicate of other folders (``dir.dup``,
            ``dir.resolved``); 0: no folder events.
    """

    thresholds: Thresholds = field(default_factory=Thresholds)
    others_limit: int = 100
    near_named: int = 4
    tombstone_retention: float = 30 * DAY
    event_retention: float = 30 * DAY
    versions: Mapping[str, str] = field(default_factory=dict)
    wide: bool = False
    unstable_attempts: int = 4
    unstable_delay: float = 0.5
    hash_concurrency: int = 8
    follow_symlinks: bool = False
    folder_settle: float = 5.0


def profile_is_stale(profile: str, versions: Mapping[str, str]) -> bool:
    """True when ``profile`` (space-separated ``name/version`` components, e.g.
    ``"iscc/1.5.0 bits/64 pillow/11.0.0 isccd-extract/1"``) names a component whose current
    version in ``versions`` is different. Components ``versions`` does not mention are trusted,
    and so are those whose version cannot be told now (:data:`~isccd.hashing.UNKNOWN`: a tool
    that failed or timed out at ``-version``) or that are not installed now
    (:data:`~isccd.hashing.MISSING`): else every unit the tool made would be computed again,
    labelled unknown or replaced by a skip, and once more when the tool answers.
    """
    for part in profile.split():
        name, sep, version = part.partition("/")
        if sep and name in versions:
            current = versions[name]
            if current not in (version, UNKNOWN, MISSING):
                return True
    return False
