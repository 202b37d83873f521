"""compute_record: one file from opening to the ISCC-CODE."""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence

from isccd.errors import (
    FileError,
    FileUnstableError,
    FileVanishedError,
    UnsupportedMediaTypeError,
)
from isccd.extract.mediatype import OCTET_STREAM, mediatype_detect, mediatype_to_mode
from isccd.extract.meta import file_name
from isccd.extract.source import RootDirs, SourceFile, open_source, read_limited
from isccd.hashing.content import HEADER_OF, Content, content_unit, digest_unit, meta_unit
from isccd.hashing.issues import issue_from_exception
from isccd.hashing.options import EXTRACTION_REVISION, META_SOURCE, CodeOptions
from isccd.hashing.run import Run
from isccd.iscc import SumHasher, hash_instance_v0, soft_hash_data_v0
from isccd.iscc.instance import MULTIHASH_BLAKE3
from isccd.iscc.iscc_code import compose_plan, compose_planned
from isccd.model import (
    CONTENT_UNIT_OF_MODE,
    FileIssue,
    FileRecord,
    FileStat,
    IssueCode,
    IssueKind,
    Unit,
    UnitType,
)

ALL_UNITS: frozenset[UnitType] = frozenset(UnitType) - {UnitType.MIXED}

#: The units of the Data- and Instance-Code pass.
_SUMMED = frozenset((UnitType.DATA, UnitType.INSTANCE))
#: The stage of each mode's Content-Code (its unit type's name).
_STAGE_OF_MODE = {mode: unit_type.value for mode, unit_type in CONTENT_UNIT_OF_MODE.items()}

#: The SDK's defaults, made and checked once.
_DEFAULT_OPTIONS = CodeOptions()

#: Bytes per read of the Data- and Instance-Code pass (the memory the pass uses).
READ_SIZE = 2 * 1024 * 1024

#: Files smaller than this are read in one piece and hashed at once, not streamed: for a small
#: file the calls of a stream cost more than its hashing.
ONE_READ = 64 * 1024


def compute_record(
    path: str,
    options: CodeOptions | None = None,
    units: Collection[UnitType] | None = None,
    *,
    root: str | None = None,
    follow_symlinks: bool = False,
    roots: RootDirs | None = None,
    timed: bool = False,
) -> FileRecord:
    """Compute the ISCC units and ISCC-CODE of one file.

    Args:
        path: The file. A symbolic link, FIFO, socket, device or directory is refused without
            being opened.
        options: How to code; the SDK's defaults when omitted.
        units: Compute only these units (e.g. the ones whose profile changed); all by default.
            The ISCC-CODE is only composed when Data and Instance are among them.
        root: The watched root the file lies in: it is opened beneath the root's directory,
            and a path that leads through a symbolic link or out of the root is refused (see
            :func:`isccd.extract.source.open_source`). ``None`` for a file a user names.
        follow_symlinks: With ``root``, follow links that stay beneath it.
        roots: With ``root``, the root directories a run of files shares (a worker's job), so
            that each root is opened once for the run (the guarantees are the same).
        timed: Record the milliseconds each stage lasts in ``timings`` (empty otherwise: a
            worker's records do without them).

    Returns:
        The record. Problems are in ``issues``; it is never an exception.
    """
    options = options or _DEFAULT_OPTIONS
    wanted = ALL_UNITS if units is None else frozenset(units)
    run = Run(options, timed=timed)
    try:
        src = open_source(path, root=root, follow_symlinks=follow_symlinks, roots=roots)
    except FileError as exc:
        run.issue("read", exc)
        return FileRecord(path=path, stat=None, issues=tuple(run.issues))
    with src:
        record = _compute(src, run, wanted)
        try:
            src.check_unchanged()
        except (FileUnstableError, FileVanishedError) as exc:
            # Nothing computed from a file that changed while it was read can be trusted.
            return FileRecord(
                path=path,
                stat=record.stat,
                mediatype=record.mediatype,
                mode=record.mode,
                timings=record.timings,
                issues=(issue_from_exception("read", exc),),
            )
    return record


def _compute(src: SourceFile, run: Run, wanted: frozenset[UnitType]) -> FileRecord:
    with run.stage("mediatype"):
        detected = mediatype_detect(src.head(), file_name(src.path))
        mediatype, mode = detected.mediatype, mediatype_to_mode(detected.mediatype)
    if mode is None:
        run.issues.append(_unsupported(mediatype))

    summed = None
    if not wanted.isdisjoint(_SUMMED):
        summed = run.guarded("read", lambda: _sum_pass(src, run))

    content: Content | None = None
    if mode is not None and CONTENT_UNIT_OF_MODE[mode] in wanted:
        stage, sniffed = _STAGE_OF_MODE[mode], mode
        content = run.guarded(stage, lambda: content_unit(src, mediatype, sniffed, run))
        if content is None and detected.from_content and _undecodable(run, stage, mediatype):
            mediatype, mode = OCTET_STREAM, None  # coded as generic data: no Meta-Code either

    meta: tuple[Unit, dict[str, str], bool] | None = None
    if mode is not None and UnitType.META in wanted:
        if run.options.meta:
            meta = run.guarded("meta", lambda: meta_unit(src, mediatype, mode, content, run))
        else:
            # Recorded with its profile, so that turning the Meta-Code on again outdates it.
            off = run.profile(f"{META_SOURCE}/off", EXTRACTION_REVISION)
            reason = "the Meta-Code is turned off"
            run.issues.append(FileIssue("meta", IssueKind.SKIPPED, reason, IssueCode.DISABLED, off))

    units = [meta[0]] if meta else []
    if content:
        units.append(content.unit)
    if summed:
        units += summed[0] if wanted is ALL_UNITS else [u for u in summed[0] if u.type in wanted]
    fields = meta[1] if meta else {}
    # Positional, in the order of FileRecord's fields: 19 keywords cost 0.7 µs more per file.
    return FileRecord(
        src.path,
        FileStat.from_os(src.stat),
        mediatype,
        mode,
        compose_iscc(units, run.options.wide),  # iscc
        fields.get("name"),
        tuple(units),
        summed[1] if summed else None,  # datahash
        summed[2] if summed else None,  # filesize
        content.characters if content else None,
        content.width if content else None,
        content.height if content else None,
        content.duration if content else None,
        content.extractor if content else None,
        tuple(run.timings),
        tuple(run.issues),
        fields.get("description"),
        fields.get("metahash"),
        meta[2] if meta else None,  # named_by_file
    )


@functools.lru_cache(maxsize=64)
def _unsupported(mediatype: str) -> FileIssue:
    """The issue of a media type without a Content-Code, made once per type (a frozen value
    that every file of the type shares)."""
    return issue_from_exception(
        "mediatype", UnsupportedMediaTypeError(f"no Content-Code for {mediatype}")
    )


#: Content failures that, after a guess from the content, mean the guess was wrong.
_UNDECODABLE = frozenset({IssueCode.INVALID, IssueCode.TOOL_FAILED})


def _undecodable(run: Run, stage: str, mediatype: str) -> bool:
    """Turn the content stage's decoding error into a warning, when it is one.

    A file whose media type came from its content (its name said nothing, or something else)
    and whose content then cannot be decoded as that type was sniffed wrongly: a random binary
    that begins like a JPEG is not a broken JPEG. It is coded as generic data and the issue
    says so as a warning, not an error.

    Returns:
        True when the error was replaced by the warning.
    """
    last = run.issues[-1] if run.issues else None
    if last is None or last.stage != stage or last.kind is not IssueKind.ERROR:
        return False
    if last.code not in _UNDECODABLE:
        return False
    reason = f"content looked like {mediatype} but is not ({last.reason}); coded as generic data"
    run.issues[-1] = FileIssue(stage, IssueKind.WARNING, reason, last.code)
    run.described = None
    return True


def _sum_pass(src: SourceFile, run: Run) -> tuple[list[Unit], str, int]:
    # The two units alone: the record composes its ISCC-CODE from all its units.
    bits, profile = run.options.bits, run.profile()
    if src.size < ONE_READ:
        content = read_limited(src, ONE_READ)
        if len(content) < ONE_READ:  # all of it (a file that grew meanwhile is streamed)
            checksum = hash_instance_v0(content)
            units = [
                digest_unit(UnitType.DATA, soft_hash_data_v0(content), bits, profile),
                digest_unit(UnitType.INSTANCE, checksum, bits, profile),
            ]
            return units, (MULTIHASH_BLAKE3 + checksum).hex(), len(content)
    hasher = SumHasher()
    # A small file needs no large buffer (allocating one costs more than hashing the file).
    bufsize = min(READ_SIZE, max(src.size + 1, ONE_READ))
    src.stream(hasher.push, bufsize=bufsize)
    data = digest_unit(UnitType.DATA, hasher.data.digest(), bits, profile)
    instance = digest_unit(UnitType.INSTANCE, hasher.instance.digest(), bits, profile)
    return [data, instance], hasher.instance.multihash(), hasher.filesize


def compose_iscc(units: Sequence[Unit], wide: bool) -> str | None:
    """The ISCC-CODE of a file's units, when Data and Instance are among them (else ``None``).

    As in the SDK, ``wide`` only has an effect on Data + Instance of at least 128 bits.
    """
    plan = _plan(tuple([(u.type, len(u.digest)) for u in units]), wide)
    if plan is None:
        return None
    order, header, nbytes = plan
    return compose_planned(header, [units[i].digest for i in order], nbytes)


@functools.lru_cache(maxsize=64)
def _plan(
    units: tuple[tuple[UnitType, int], ...], wide: bool
) -> tuple[tuple[int, ...], bytes, int] | None:
    """Which of these units (type, body bytes) an ISCC-CODE takes in which order, its header and
    the bytes of each (:func:`~isccd.iscc.iscc_code.compose_plan`), or ``None`` when they make
    none (no Data or no Instance). Once per set of units: the header of each unit follows
    from its type, no need to decode the codes just made.

    Raises:
        IsccError: As :func:`~isccd.iscc.compose_iscc_code` (every time: not cached).
    """
    types = [t for t, _ in units]
    if UnitType.DATA not in types or UnitType.INSTANCE not in types:
        return None
    taken = [i for i, t in enumerate(types) if t is not UnitType.MIXED]
    order, header, nbytes = compose_plan(
        tuple([(*HEADER_OF[units[i][0]], units[i][1]) for i in taken]), bool(wide)
    )
    return tuple([taken[i] for i in order]), header, nbytes
