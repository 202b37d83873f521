"""The watchlists' rows, read and written in the SQL both backends share.

A watchlist is a named set of references (a file the codes were computed from, a line of a
codes list), each with a label and its ISCC units (``watch_units``: one row per unit, whose id
keys the in-memory search of the references). ``threshold`` is the list's own largest
distance, in bits of 64, for every unit type; ``NULL``: each type's ``[match]`` threshold.

Every change to the tables adds one to the property ``watchlists`` in its transaction, so that
a writer polling it (once per batch) reloads them when another process changed them. The
statements are written with ``?`` placeholders; the PostgreSQL backend passes an executor
that turns them into ``%s``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from isccd.errors import StoreError
from isccd.model import UnitType


class WatchlistRefused(StoreError):
    """A change to the watchlists that their rows refuse: an unknown watchlist or
    reference, a threshold other than the watchlist's."""


#: The property counting changes to the watchlists.
VERSION_PROPERTY = "watchlists"
#: Unit rows per ``IN (...)`` list.
_CHUNK = 500


class Rows(Protocol):
    """What a statement gives back (a DB-API cursor)."""

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


#: Runs one statement written with ``?`` placeholders.
Execute = Callable[[str, Sequence[Any]], Rows]


@dataclass(frozen=True, slots=True)
class Watchlist:
    """One watchlist.

    Attributes:
        id: The store's number for it.
        name: Its name, unique.
        threshold: Its largest distance in bits of 64, for every unit type; ``None``: each
            type's ``[match]`` threshold.
        created: Unix time it was made.
        refs: How many references it holds.
    """

    id: int
    name: str
    threshold: int | None
    created: float
    refs: int


@dataclass(frozen=True, slots=True)
class WatchUnit:
    """One unit of a reference, with what a match names.

    Attributes:
        id: The unit's row (the key of the in-memory search).
        ref: The reference's id.
        label: The reference's label (the file name its codes were computed from, ...).
        watchlist: The watchlist's id.
        name: The watchlist's name.
        threshold: The watchlist's own threshold (see :class:`Watchlist`).
        type: The unit type.
        iscc: The unit as an ISCC.
        digest: The unit's digest (its body, without the header).
        reference: The reference's ISCC-CODE (or the single unit it was given as).
    """

    id: int
    ref: int
    label: str
    watchlist: int
    name: str
    threshold: int | None
    type: UnitType
    iscc: str
    digest: bytes
    reference: str | None = None


@dataclass(frozen=True, slots=True)
class NewRef:
    """A reference to add: its label, its ISCC-CODE (or single unit) and its units."""

    label: str
    iscc: str | None
    units: Sequence[tuple[UnitType, str, bytes]]


_UNIT = (
    "SELECT u.id, r.id, r.label, w.id, w.name, w.threshold, u.type, u.iscc, u.digest, r.iscc "
    "FROM watch_units u JOIN watch_refs r ON r.id = u.ref_id "
    "JOIN watchlists w ON w.id = r.watchlist_id"
)


def _unit(row: Sequence[Any]) -> WatchUnit:
    uid, ref, label, wid, name, threshold, type_, iscc, digest, reference = row
    return WatchUnit(
        uid, ref, label, wid, name, threshold, UnitType(type_), iscc, bytes(digest), reference
    )


def version(execute: Execute, property_row: tuple[str, Sequence[Any]]) -> int:
    """The count of changes to the watchlists (``property_row``: the backend's statement
    reading the property)."""
    row = execute(*property_row).fetchone()
    return int(row[0]) if row is not None else 0


def watchlists(execute: Execute) -> list[Watchlist]:
    """Every watchlist, by name."""
    rows = execute(
        "SELECT w.id, w.name, w.threshold, w.created, "
        "(SELECT count(*) FROM watch_refs r WHERE r.watchlist_id = w.id) "
        "FROM watchlists w ORDER BY w.name",
        (),
    ).fetchall()
    return [Watchlist(int(i), n, t, float(c), int(k)) for i, n, t, c, k in rows]


def units_of_type(execute: Execute, unit_type: UnitType) -> list[tuple[int, int, bytes]]:
    """``(unit row, watchlist, digest)`` of every reference unit of one type."""
    rows = execute(
        "SELECT u.id, r.watchlist_id, u.digest FROM watch_units u "
        "JOIN watch_refs r ON r.id = u.ref_id WHERE u.type = ? ORDER BY u.id",
        (unit_type.value,),
    ).fetchall()
    return [(int(u), int(w), bytes(d)) for u, w, d in rows]


def units_by_id(execute: Execute, ids: Sequence[int]) -> list[WatchUnit]:
    """The unit rows with these ids, in id order."""
    found: list[WatchUnit] = []
    for start in range(0, len(ids), _CHUNK):
        chunk = list(ids[start : start + _CHUNK])
        marks = ",".join("?" * len(chunk))
        rows = execute(f"{_UNIT} WHERE u.id IN ({marks})", chunk).fetchall()
        found += [_unit(r) for r in rows]
    return sorted(found, key=lambda u: u.id)


def units_of_refs_of(execute: Execute, ids: Sequence[int]) -> list[WatchUnit]:
    """Every unit of the references that hold the unit rows ``ids`` (those rows included),
    in id order: what judges a match by a unit also needs the reference's other units."""
    found: list[WatchUnit] = []
    for start in range(0, len(ids), _CHUNK):
        chunk = list(ids[start : start + _CHUNK])
        marks = ",".join("?" * len(chunk))
        inner = f"SELECT ref_id FROM watch_units WHERE id IN ({marks})"  # noqa: S608 -- only ?s
        rows = execute(f"{_UNIT} WHERE u.ref_id IN ({inner})", chunk).fetchall()
        found += [_unit(r) for r in rows]
    return sorted({u.id: u for u in found}.values(), key=lambda u: u.id)


def units_of_list(execute: Execute, name: str) -> list[WatchUnit]:
    """Every unit of a watchlist's references, by reference, then unit row."""
    rows = execute(f"{_UNIT} WHERE w.name = ? ORDER BY r.id, u.id", (name,)).fetchall()
    return [_unit(r) for r in rows]


def add(
    execute: Execute,
    name: str,
    threshold: int | None,
    refs: Sequence[NewRef],
    now: float,
    *,
    insert_id: Callable[[str, Sequence[Any]], int],
) -> tuple[int, list[int]]:
    """Add references to a watchlist, made with ``threshold`` when it does not exist yet.

    Args:
        insert_id: Runs an ``INSERT ... RETURNING id`` and gives the id.

    Returns:
        The watchlist's id and the new references' ids.

    Raises:
        StoreError: The watchlist exists with another threshold.
    """
    row = execute("SELECT id, threshold FROM watchlists WHERE name = ?", (name,)).fetchone()
    if row is None:
        list_id = insert_id(
            "INSERT INTO watchlists (name, threshold, created) VALUES (?, ?, ?) RETURNING id",
            (name, threshold, now),
        )
    else:
        list_id = int(row[0])
        if threshold is not None and row[1] != threshold:
            raise WatchlistRefused(
                f"the watchlist {name!r} has the threshold {row[1]}, not {threshold}: remove "
                "it first to change its threshold"
            )
    ids = []
    for ref in refs:
        ref_id = insert_id(
            "INSERT INTO watch_refs (watchlist_id, label, iscc) VALUES (?, ?, ?) RETURNING id",
            (list_id, ref.label, ref.iscc),
        )
        ids.append(ref_id)
        for unit_type, iscc, digest in ref.units:
            execute(
                "INSERT INTO watch_units (ref_id, type, iscc, digest) VALUES (?, ?, ?, ?)",
                (ref_id, unit_type.value, iscc, digest),
            )
    return list_id, ids


def remove(execute: Execute, name: str, ref: int | None) -> int:
    """Remove a watchlist, or one of its references; how many references went.

    Raises:
        StoreError: No such watchlist, or no such reference in it.
    """
    row = execute("SELECT id FROM watchlists WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise WatchlistRefused(f"there is no watchlist {name!r}")
    list_id = int(row[0])
    if ref is not None:
        found = execute(
            "SELECT count(*) FROM watch_refs WHERE id = ? AND watchlist_id = ?", (ref, list_id)
        ).fetchone()
        if not found[0]:
            raise WatchlistRefused(f"the watchlist {name!r} has no reference {ref}")
        execute("DELETE FROM watch_units WHERE ref_id = ?", (ref,))
        execute("DELETE FROM watch_refs WHERE id = ?", (ref,))
        return 1
    count = int(
        execute("SELECT count(*) FROM watch_refs WHERE watchlist_id = ?", (list_id,)).fetchone()[0]
    )
    execute(
        "DELETE FROM watch_units WHERE ref_id IN "
        "(SELECT id FROM watch_refs WHERE watchlist_id = ?)",
        (list_id,),
    )
    execute("DELETE FROM watch_refs WHERE watchlist_id = ?", (list_id,))
    execute("DELETE FROM watchlists WHERE id = ?", (list_id,))
    return count
