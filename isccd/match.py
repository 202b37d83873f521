"""Pure duplicate decisions: how two files relate, given their identities, hashes and units.

Three relations, in this order of precedence:

- **hardlink**: the same ``(st_dev, st_ino)``: one file under two names. Hashed once; never a
  duplicate.
- **exact**: different identities with equal Instance datahash and size: the same bytes twice.
- **near**: neither of the above, and a unit type's codes are within that type's threshold;
  but where both files have a Content-Code of one type (text, image, audio, video) and it is
  beyond its threshold, their Data- and Meta-Codes do not make them near
  (:func:`content_apart`): two letters from one Word template share the ZIP's styles and
  theme, not their text.

Files smaller than the policy's ``min_size`` (by default: empty files) take part in neither
exact nor near relations: every empty file has the same bytes as every other, and a tree of
source code holds hundreds of them, none worth reporting. They are still coded and indexed, and
their hardlinks are still recognized.

Thresholds are Hamming distances for 64-bit units (:class:`Thresholds`). Units are compared over
their common length (``iscc_nph_compare`` in the reference does the same); for a longer common
length ``b`` the threshold scales linearly to ``t * b // 64``, and the first 64 bits must also be
within ``t``, which is what the in-memory index searches exactly. So a 256-bit Text-Code pair is
near when its first 64 bits differ in at most 15 bits and all 256 in at most 60.

This module does no I/O and keeps no state.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from isccd.errors import OptionError
from isccd.model import RelationKind, UnitType

#: Default near-duplicate unit types, in the order findings are reported.
NEAR_UNITS: tuple[UnitType, ...] = (
    UnitType.TEXT,
    UnitType.IMAGE,
    UnitType.AUDIO,
    UnitType.VIDEO,
    UnitType.DATA,
    UnitType.META,
)


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The duplicate policy: per unit type the largest Hamming distance, in bits of a 64-bit
    unit, at which two units of that type count as near duplicates (``None`` switches the type
    off); and the smallest file that is reported at all (``min_size``).

    Defaults: text 15, image 12, audio 4 are the ISCC project's published F1-optimal values for
    64-bit Content-Codes. Data 8 comes from isccd's own measurement of edited files
    (``bench/datacode_edits.py``): edits of up to 256 bytes or 1% of a file stay within 8 bits in
    95-98% of cases (100% within 4 bits for files of 64 KiB and more), while unrelated files
    follow a binomial(64, 1/2) distance (0.1% quantile: 18 bits), so a pair of unrelated files
    falls within 8 bits with probability 2.8e-10: about one chance pair in an index of 100,000
    files, about 140 at 1,000,000 (lower it to 6, or use 128-bit units, for indexes that large).
    Video 12 follows the Image-Code, whose frame features it aggregates (no published
    measurement). Meta is off: file names alone make too many false alarms.

    ``min_size`` 1 leaves out empty files only, as duplicate finders do by default (rdfind's
    ``-minsize 1``); 0 reports them too.

    ``max_links`` bounds the near relations a file keeps per unit type, its nearest first
    (ties by file id): a family of files (a growing log's snapshots, a burst of photos) costs
    the store, the in-memory index and the events a number of relations linear in its files,
    not in their pairs. 16 keeps every relation of the families ``bench/near_families.py``
    measures whose groups around a centre are at most 17 files, and bounds the rest; ``None``
    (no bound) is only what a store decided before relations were bounded records.
    """

    text: int | None = 15
    image: int | None = 12
    audio: int | None = 4
    video: int | None = 12
    data: int | None = 8
    meta: int | None = None
    min_size: int = 1
    max_links: int | None = 16

    def __post_init__(self) -> None:
        """Check the values.

        Raises:
            OptionError: A threshold outside 0..64 bits, a negative ``min_size``, or a
                ``max_links`` under 1.
        """
        if self.max_links is not None and self.max_links < 1:
            raise OptionError("max_links", f"{self.max_links} is less than 1")
        for unit_type in NEAR_UNITS:
            value = self.of(unit_type)
            if value is not None and not 0 <= value <= 64:
                raise OptionError(unit_type.value, f"{value} is outside 0..64 bits")
        if self.min_size < 0:
            raise OptionError(
                "min_size", f"{self.min_size} is negative: it must be greater than or equal to 0"
            )

    def of(self, unit_type: UnitType) -> int | None:
        """The 64-bit threshold of a unit type, or ``None`` when it is not compared."""
        # A unit type is the string of its field's name (read without the enum's slow
        # ``.value``: this is asked once a relation).
        value: int | None = getattr(self, unit_type, None)
        return value

    def enabled(self) -> tuple[UnitType, ...]:
        """Unit types with a threshold, in reporting order."""
        return tuple(t for t in NEAR_UNITS if self.of(t) is not None)

    def scaled(self, unit_type: UnitType, bits: int) -> int | None:
        """The threshold for ``bits`` compared bits: ``t * bits // 64``."""
        value = self.of(unit_type)
        return None if value is None else value * bits // 64

    def admits(self, size: int | None) -> bool:
        """Whether a file of ``size`` bytes can be a duplicate: at least ``min_size``. A file
        of unknown size (a code asked about without its file) can."""
        return size is None or size >= self.min_size

    def as_dict(self) -> dict[str, int | None]:
        """``{unit type: threshold}`` for reports."""
        return {t.value: self.of(t) for t in NEAR_UNITS}


@dataclass(frozen=True, slots=True)
class Side:
    """What the decisions need to know about one file.

    Attributes:
        file_id: The store's id.
        identity: ``(st_dev, st_ino)``, if known.
        datahash: The Instance datahash, if computed.
        size: Size in bytes, if known.
        digests: Unit type -> unit digest.
    """

    file_id: int
    identity: tuple[int, int] | None
    datahash: str | None
    size: int | None
    digests: Mapping[UnitType, bytes]


@dataclass(frozen=True, slots=True)
class Relation:
    """One finding about a file and another.

    Attributes:
        kind: Hardlink, exact or near.
        other: The other file's id.
        unit: The unit type compared (Instance for hardlinks and exact duplicates).
        distance: Hamming distance over the compared bits (0 for hardlink and exact).
        threshold: The threshold applied to that many bits (0 for hardlink and exact).
        bits: How many bits were compared (the Instance digest length for exact).
    """

    kind: RelationKind
    other: int
    unit: UnitType
    distance: int
    threshold: int
    bits: int


def hamming(a: bytes, b: bytes) -> int:
    """Hamming distance over the common prefix of two digests."""
    n = min(len(a), len(b))
    return (int.from_bytes(a[:n], "big") ^ int.from_bytes(b[:n], "big")).bit_count()


def is_hardlink(a: Side, b: Side) -> bool:
    """The same file under two names."""
    return a.identity is not None and a.identity == b.identity


def admitted(a: Side, b: Side, thresholds: Thresholds) -> bool:
    """Whether both files are large enough to be duplicates (:attr:`Thresholds.min_size`)."""
    return thresholds.admits(a.size) and thresholds.admits(b.size)


def is_exact(a: Side, b: Side, thresholds: Thresholds) -> bool:
    """The same bytes in two different files, both large enough to be reported."""
    return not is_hardlink(a, b) and admitted(a, b, thresholds) and _same_bytes(a, b)


def _same_bytes(a: Side, b: Side) -> bool:
    return a.datahash is not None and a.datahash == b.datahash and a.size == b.size


def near_unit(
    unit_type: UnitType, a: bytes, b: bytes, thresholds: Thresholds
) -> tuple[int, int, int] | None:
    """Compare two digests of one unit type.

    Returns:
        ``(distance, threshold, bits)`` when they are near duplicates, else ``None``.
    """
    base = thresholds.of(unit_type)
    return None if base is None else within(a, b, base)


def within(a: bytes, b: bytes, base: int) -> tuple[int, int, int] | None:
    """Whether two digests of one unit type are within ``base`` bits of 64 (scaled to their
    common length, the first 64 bits within ``base`` too).

    Returns:
        ``(distance, threshold, bits)`` when they are, else ``None``.
    """
    bits = min(len(a), len(b)) * 8
    if bits == 64:  # most units: one comparison
        distance = (int.from_bytes(a[:8], "big") ^ int.from_bytes(b[:8], "big")).bit_count()
        return (distance, base, 64) if distance <= base else None
    if bits == 0 or hamming(a[:8], b[:8]) > base:
        return None
    limit = base * bits // 64
    distance = hamming(a, b)
    return (distance, limit, bits) if distance <= limit else None


#: The Content-Code types: where both files have one, it decides whether they are alike.
CONTENT_UNITS: tuple[UnitType, ...] = (
    UnitType.TEXT,
    UnitType.IMAGE,
    UnitType.AUDIO,
    UnitType.VIDEO,
)

#: The unit types that hash a file's container rather than its content (the bytes of a DOCX's
#: ZIP, a PDF producer's boilerplate, a camera's JPEG header; or its name): overruled by a
#: Content-Code that says the content differs.
CONTAINER_UNITS = frozenset({UnitType.DATA, UnitType.META})

_DEFAULTS = Thresholds()


def content_apart(
    a: Mapping[UnitType, bytes], b: Mapping[UnitType, bytes], thresholds: Thresholds
) -> bool:
    """Whether two files' units hold a Content-Code type both have, beyond its threshold: then
    their content differs, whatever their Data- or Meta-Code says.

    A type the policy switches off is judged at its default threshold: turning the Text-Code
    off for near duplicates does not make unrelated documents alike by their containers.
    """
    for unit_type in CONTENT_UNITS:
        mine, theirs = a.get(unit_type), b.get(unit_type)
        if mine is None or theirs is None:
            continue
        base = thresholds.of(unit_type)
        if base is None:
            base = _DEFAULTS.of(unit_type) or 0
        if within(mine, theirs, base) is None:
            return True
    return False


_Enabled = list[tuple[UnitType, int, bytes]]


@functools.lru_cache(maxsize=16)
def _bases(thresholds: Thresholds) -> tuple[tuple[UnitType, int], ...]:
    """The enabled unit types and their thresholds, in :data:`NEAR_UNITS` order."""
    return tuple((t, base) for t in NEAR_UNITS if (base := thresholds.of(t)) is not None)


@functools.lru_cache(maxsize=16)
def near_radii(thresholds: Thresholds) -> Mapping[UnitType, int]:
    """The 64-bit threshold of each unit type compared for near duplicates (the types of
    :data:`NEAR_UNITS` with a threshold)."""
    return dict(_bases(thresholds))


def _enabled(subject: Side, thresholds: Thresholds) -> _Enabled:
    """The unit types to compare: enabled, and present in ``subject``."""
    digests = subject.digests
    return [(t, base, digests[t]) for t, base in _bases(thresholds) if t in digests]


def _relate(
    subject: Side, other: Side, enabled: _Enabled, thresholds: Thresholds
) -> list[Relation]:
    if subject.file_id == other.file_id:
        return []
    if is_hardlink(subject, other):
        return [Relation(RelationKind.HARDLINK, other.file_id, UnitType.INSTANCE, 0, 0, 0)]
    if not admitted(subject, other, thresholds):
        return []
    if _same_bytes(subject, other):
        bits = _bits_of(subject.datahash or "")
        return [Relation(RelationKind.EXACT, other.file_id, UnitType.INSTANCE, 0, 0, bits)]
    found = []
    for unit_type, base, mine in enabled:
        theirs = other.digests.get(unit_type)
        if theirs is None:
            continue
        near = within(mine, theirs, base)
        if near is not None:
            distance, limit, bits = near
            found.append(
                Relation(RelationKind.NEAR, other.file_id, unit_type, distance, limit, bits)
            )
    for relation in found:
        if relation.unit in CONTAINER_UNITS:
            if content_apart(subject.digests, other.digests, thresholds):
                return [r for r in found if r.unit not in CONTAINER_UNITS]
            break
    return found


def relate(subject: Side, other: Side, thresholds: Thresholds) -> list[Relation]:
    """Every relation between two files: one hardlink or exact relation, or the unit types
    by which they are near duplicates (in :data:`NEAR_UNITS` order); none but a hardlink when
    either is smaller than ``thresholds.min_size``."""
    return _relate(subject, other, _enabled(subject, thresholds), thresholds)


def relate_all(
    subject: Side, others: Iterable[Side], thresholds: Thresholds
) -> tuple[list[Relation], dict[UnitType, int]]:
    """Relations of ``subject`` with many files, and how many files it is near per unit type.

    Near relations are kept per unit type up to ``thresholds.max_links`` (closest first, ties
    to the larger file id: the file indexed last, so that the relations of a family of files
    of one code spread over it instead of all ending on its first file), so that a family
    (thousands of snapshots of one log, of blank images with one Image-Code) stays bounded.

    Each pair is related as :func:`relate` relates it; what holds for every pair (the subject's
    size admitted, its 64-bit digests as integers, whether it has a Content-Code that could
    overrule a container unit) is worked out once, and a near relation is made only if it is
    among those kept: a file of a family is compared with a few dozen others.
    """
    if not thresholds.admits(subject.size):  # too small: only its other names count
        return _hardlinks(subject, others), {}
    me, identity = subject.file_id, subject.identity
    admits, datahash, size = thresholds.admits, subject.datahash, subject.size
    mine = subject.digests
    # Per enabled unit type: its threshold, the subject's digest, and its first 64 bits as an
    # integer when that is all of it (most units: one comparison, as within makes it).
    enabled: _Compared = [
        (t, base, digest, int.from_bytes(digest, "big") if len(digest) == 8 else None)
        for t, base, digest in _enabled(subject, thresholds)
    ]
    # Without a Content-Code of its own, nothing overrules a near container unit.
    judged = any(t in mine for t in CONTENT_UNITS)
    kept: list[Relation] = []
    # Per unit type, ``(distance, -other, threshold, bits)`` of each near relation.
    near: dict[UnitType, list[tuple[int, int, int, int]]] = {}
    exact_bits: int | None = None  # the digest's bits, worked out at the first copy
    for other in others:
        other_id = other.file_id
        if other_id == me:
            continue
        if identity is not None and identity == other.identity:
            kept.append(Relation(RelationKind.HARDLINK, other_id, UnitType.INSTANCE, 0, 0, 0))
            continue
        if not admits(other.size):
            continue
        if datahash is not None and datahash == other.datahash and size == other.size:
            exact_bits = _bits_of(datahash) if exact_bits is None else exact_bits
            kept.append(Relation(RelationKind.EXACT, other_id, UnitType.INSTANCE, 0, 0, exact_bits))
            continue
        theirs = other.digests
        found = _near_units(enabled, theirs)
        if not found:
            continue
        if (
            judged
            and any(f[0] in CONTAINER_UNITS for f in found)
            and content_apart(mine, theirs, thresholds)
        ):
            found = [f for f in found if f[0] not in CONTAINER_UNITS]
        for unit_type, distance, limit, bits in found:
            entry = (distance, -other_id, limit, bits)
            if (some := near.get(unit_type)) is None:
                near[unit_type] = [entry]
            else:
                some.append(entry)
    most = thresholds.max_links
    for unit_type, entries in near.items():
        entries.sort(key=_nearest_first)  # stable: the same file twice keeps its order
        kept.extend(
            Relation(RelationKind.NEAR, -negated, unit_type, distance, limit, bits)
            for distance, negated, limit, bits in entries[:most]
        )
    return kept, {unit: len(entries) for unit, entries in near.items()}


#: A near relation's order among a file's: nearest first, ties to the larger file id.
_nearest_first = operator.itemgetter(0, 1)


def _bits_of(datahash: str) -> int:
    """The bits of the digest of a hex multihash datahash (its two header bytes left out)."""
    return 8 * len(bytes.fromhex(datahash)[2:])


def _hardlinks(subject: Side, others: Iterable[Side]) -> list[Relation]:
    """The relations of ``subject`` with those of ``others`` that are the same file."""
    return [
        Relation(RelationKind.HARDLINK, other.file_id, UnitType.INSTANCE, 0, 0, 0)
        for other in others
        if other.file_id != subject.file_id and is_hardlink(subject, other)
    ]


#: Per enabled unit type: its threshold, the subject's digest, and that digest as an integer
#: when it is 64 bits long.
_Compared = list[tuple[UnitType, int, bytes, int | None]]


def _near_units(
    enabled: _Compared, theirs: Mapping[UnitType, bytes]
) -> list[tuple[UnitType, int, int, int]]:
    """``(unit type, distance, threshold, bits)`` of each enabled unit type by which another
    file's digests ``theirs`` are near (:func:`within`, one comparison for 64-bit units)."""
    found = []
    for unit_type, base, digest, whole in enabled:
        their = theirs.get(unit_type)
        if their is None:
            continue
        if whole is not None and len(their) == 8:
            distance = (whole ^ int.from_bytes(their, "big")).bit_count()
            if distance <= base:
                found.append((unit_type, distance, base, 64))
        elif (close := within(digest, their, base)) is not None:
            found.append((unit_type, *close))
    return found
