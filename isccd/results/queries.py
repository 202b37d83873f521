"""The questions asked of the index: ``similar`` and ``dupes``, with their limits.

The socket protocol carries them as request arguments (docs/protocol.md); the command line
fills them from its flags; the pipeline answers them.
"""

from __future__ import annotations

from dataclasses import dataclass

from isccd.model import UnitType

#: Largest Hamming distance a query may ask for. Distances are counted in bits of a unit's first
#: 64, as the ``[match]`` thresholds are, and scale with longer units (``d * bits / 64``), so 64
#: already reaches every unit of every length.
MAX_DISTANCE = 64
#: Default and largest number of matches ``similar`` returns.
SIMILAR_LIMIT = 100
SIMILAR_LIMIT_MAX = 10_000
#: Default and largest number of groups ``dupes`` returns.
DUPES_LIMIT = 1_000
DUPES_LIMIT_MAX = 100_000

#: The file types ``dupes`` filters by: a content mode, or ``data`` for the rest.
FILE_TYPES: tuple[str, ...] = ("image", "text", "audio", "video", "data")


@dataclass(frozen=True, slots=True)
class SimilarQuery:
    """What ``similar`` looks for: files related to an indexed file, or to a code.

    Attributes:
        path: A file (exclusive with ``code``): an indexed one, or one the daemon codes on the
            fly when it is inside its roots.
        code: An ISCC-CODE or ISCC unit (exclusive with ``path``); its Instance-Code, when it
            has one, finds the files with the same bytes.
        max_distance: Largest Hamming distance per unit, 0 to :data:`MAX_DISTANCE`, in bits of
            a unit's first 64 (scaled for longer units, as the thresholds are); ``None`` uses
            the configured thresholds.
        limit: Most matches returned.
        host: Only files on this host (in a store a fleet shares); ``None``: every host's.
        units: Compare only these unit types (``instance``: exact copies and hardlinks);
            ``None``: every type the thresholds enable, and exact copies.
    """

    path: str | None = None
    code: str | None = None
    max_distance: int | None = None
    limit: int = SIMILAR_LIMIT
    host: str | None = None
    units: tuple[UnitType, ...] | None = None


@dataclass(frozen=True, slots=True)
class DupesQuery:
    """Which duplicate groups ``dupes`` lists.

    Attributes:
        near: Include near-duplicate groups, not only exact ones.
        root: Only groups with a member under this path (resolved inside the roots).
        limit: Most groups returned.
        host: Only groups with a member on this host; ``None``: every group of the fleet.
        units: Only groups by these unit types: ``instance`` for exact groups, the others for
            near groups joined by relations of those types; ``None``: every type.
        max_distance: Only near relations within this distance (bits of a unit's first 64,
            scaled as the thresholds are; it never widens them); ``None``: the thresholds.
        min_size: Only files of at least this many bytes (besides the policy's ``min_size``).
        types: Only files of these types (:data:`FILE_TYPES`); ``None``: every type.
    """

    near: bool = False
    root: str | None = None
    limit: int = DUPES_LIMIT
    host: str | None = None
    units: tuple[UnitType, ...] | None = None
    max_distance: int | None = None
    min_size: int = 0
    types: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class WatchedQuery:
    """Which indexed files ``similar --watchlist`` and ``dupes --watchlist`` list: those that
    match a watchlist's references, by the rule of the ``watch.match`` events.

    Attributes:
        watchlist: The watchlist's name.
        near: Near matches too, not only exact ones (the same bytes).
        root: Only files under this path (resolved inside the roots).
        limit: Most references (groups) returned.
        host: Only files on this host; ``None``: every host's.
        units: Only matches by these unit types (``instance``: exact); ``None``: every type.
        min_size: Only files of at least this many bytes (besides the policy's ``min_size``).
        types: Only files of these types (:data:`FILE_TYPES`); ``None``: every type.
    """

    watchlist: str
    near: bool = True
    root: str | None = None
    limit: int = DUPES_LIMIT
    host: str | None = None
    units: tuple[UnitType, ...] | None = None
    min_size: int = 0
    types: tuple[str, ...] | None = None


#: Default share of a near duplicate folder's files that have a duplicate in the other folder.
DIRS_SHARE = 0.9


@dataclass(frozen=True, slots=True)
class DirsQuery:
    """Which duplicate folders ``dupes --dirs`` lists.

    Attributes:
        near: Near duplicate folders too, not only exact ones.
        share: For near folders, the least share of the two folders' files that have an
            exact or near duplicate in the other one, above 0 and at most 1.
        root: Only groups with a folder at or under this path, or holding it (resolved inside
            the roots).
        limit: Most groups returned.
        host: Only groups with a folder on this host; ``None``: every group of the fleet.
        files: Each exact group's folders with their files (what ``dedupe --dirs`` pairs).
    """

    near: bool = False
    share: float = DIRS_SHARE
    root: str | None = None
    limit: int = DUPES_LIMIT
    host: str | None = None
    files: bool = False
