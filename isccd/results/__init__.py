"""The answers of the index and the daemon, defined once: files, their matches, duplicate groups,
the daemon's status, and the questions that ask for them.

The pipeline returns these frozen dataclasses, the daemon builds its status from them, the
protocol encodes them on the socket (docs/protocol.md) and the command line renders them as
text or JSON (docs/schema/ has a JSON Schema for each). One name and one shape per thing
everywhere, events included:

- ``iscc`` is always a file's whole ISCC-CODE; ``unit`` names the unit type compared and
  ``code`` is the file's unit of that type; ``units`` maps each unit type to the file's unit;
- ``size`` is a file's size in bytes (iscc-sdk calls it ``filesize``);
- ``path`` is a file's first name and ``links`` its other names (hardlinks are one file);
- ``host`` is the host a file is on.

Imports only :mod:`isccd.model`, so every layer above may use it.

- :mod:`.files`: :class:`Match`, :class:`FileInfo`, :class:`SimilarResult`;
- :mod:`.groups`: :class:`DupMember`, :class:`DupGroup`, :class:`Totals`, :class:`DupesResult`;
- :mod:`.status`: :class:`DaemonStatus` and its parts;
- :mod:`.queries`: :class:`SimilarQuery`, :class:`DupesQuery` and their limits.
"""

from __future__ import annotations

from .files import FileInfo, Match, SimilarResult, file_type, units_of
from .groups import DupesResult, DupGroup, DupKind, DupMember, Totals
from .queries import (
    DUPES_LIMIT,
    DUPES_LIMIT_MAX,
    FILE_TYPES,
    MAX_DISTANCE,
    SIMILAR_LIMIT,
    SIMILAR_LIMIT_MAX,
    DupesQuery,
    SimilarQuery,
)
from .status import (
    DaemonStatus,
    DatabaseStatus,
    FleetHost,
    HashingStatus,
    RootStatus,
    ScanProgress,
    ServiceStatistics,
)

__all__ = [
    "DUPES_LIMIT",
    "DUPES_LIMIT_MAX",
    "FILE_TYPES",
    "MAX_DISTANCE",
    "SIMILAR_LIMIT",
    "SIMILAR_LIMIT_MAX",
    "DaemonStatus",
    "DatabaseStatus",
    "DupGroup",
    "DupKind",
    "DupMember",
    "DupesQuery",
    "DupesResult",
    "FileInfo",
    "FleetHost",
    "HashingStatus",
    "Match",
    "RootStatus",
    "ScanProgress",
    "ServiceStatistics",
    "SimilarQuery",
    "SimilarResult",
    "Totals",
    "file_type",
    "units_of",
]
