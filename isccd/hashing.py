"""From a file on disk to a :class:`~isccd.model.FileRecord`: the one place extraction meets ISCC.

:func:`compute_record` is what the daemon and ``isccd scan`` run in a process pool (a top-level
function with picklable arguments and result) and what ``isccd code`` prints. For one file it:

1. opens the file safely (:mod:`isccd.extract.source`: regular files only, never a FIFO or a
   device, never through a symbolic link);
2. detects the media type from the name and the first 4096 bytes, and from it the mode;
3. reads the file once, feeding the Data- and Instance-Code hashers together;
4. extracts the content the mode needs and computes the Content-Code;
5. computes the Meta-Code from the embedded title and description, or the file name;
6. checks the file did not change, vanish or get replaced meanwhile (if it did, nothing computed
   is trusted: the record carries only an ``UNSTABLE`` or ``VANISHED`` issue, for a retry);
7. combines the units into the ISCC-CODE, as the ISCC SDK 0.9.7 does.

It never raises for a bad file: every problem becomes a :class:`~isccd.model.FileIssue` and
whatever units can still be computed are. Each unit carries a ``profile`` naming the algorithm
version, the bit length and the extractor and tool versions it depends on, so a store can
recompute just the units a new tool version affects (``units=``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TypeVar

from isccd.errors import (
    ExtractionError,
    FileAccessError,
    FileError,
    FileUnstableError,
    FileVanishedError,
    ImageTooLargeError,
    NoContentError,
    NotRegularFileError,
    ToolError,
    ToolMissingError,
    UnsupportedMediaTypeError,
)
from isccd.extract.audio import extract_audio
from isccd.extract.image import DEFAULT_MAX_PIXELS, extract_image, extract_image_metadata
from isccd.extract.image import extractor_profile as image_profile
from isccd.extract.mediatype import mediatype_guess, mediatype_to_mode
from isccd.extract.meta import Metadata, name_from_filename, pick
from isccd.extract.probe import MediaInfo, probe_media
from isccd.extract.source import SourceFile, open_source
from isccd.extract.text import MAX_CHARS, extract_text, extract_text_metadata, metadata_source
from isccd.extract.tools import ToolInput, ToolOptions, tool_input
from isccd.extract.video import DEFAULT_FPS, extract_video
from isccd.iscc import (
    IsccError,
    SumHasher,
    gen_audio_code_v0,
    gen_image_code_v0,
    gen_iscc_code_v0,
    gen_meta_code_v0,
    gen_text_code_v0,
    gen_video_code_v0,
    iscc_decode,
    text_clean,
    text_remove_newlines,
    text_trim,
)
from isccd.model import (
    CONTENT_UNIT_OF_MODE,
    FileIssue,
    FileRecord,
    FileStat,
    IssueCode,
    IssueKind,
    Mode,
    Unit,
    UnitType,
)

#: The algorithms every unit is computed with (conformant to iscc-core 1.5.0).
ALGORITHM = "iscc/1.5.0"

#: Revision of isccd's extraction recipes (normalization, metadata mapping, tool arguments).
#: Raise it when a change alters what an extractor produces, so stored units are recomputed.
EXTRACTION_REVISION = "isccd-extract/1"

#: The SDK's ``meta_trim_name``: bytes of the name the Meta-Code uses.
_META_TRIM_NAME = 128

#: The SDK's audio and video tag mappings (taglib and ffmpeg names), for the Meta-Code fields.
AUDIO_META_FIELDS = (
    ("iscc:name", "name"),
    ("iscc:description", "description"),
    ("iscc:meta", "meta"),
    ("iscc_name", "name"),
    ("iscc_description", "description"),
    ("iscc_meta", "meta"),
    ("title", "name"),
)
VIDEO_META_FIELDS = (
    ("iscc_name", "name"),
    ("iscc_description", "description"),
    ("iscc_meta", "meta"),
    ("title", "name"),
    ("track", "name"),
    ("show", "name"),
    ("album", "name"),
    ("description", "description"),
    ("synopsis", "description"),
    ("comment", "description"),
)

ALL_UNITS: frozenset[UnitType] = frozenset(UnitType) - {UnitType.MIXED}

#: Vector formats the SDK rasterizes with extra tools isccd does not ship.
_NOT_RASTERIZED = frozenset({"image/svg+xml", "application/postscript"})

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class CodeOptions:
    """How files are coded. The defaults are the ISCC SDK 0.9.7's.

    Attributes:
        bits: Length of each unit, a multiple of 32 from 64 to 256.
        wide: Make a WIDE ISCC-CODE (128-bit Data and Instance) for files without Meta- and
            Content-Code, when ``bits >= 128``.
        meta: Compute the Meta-Code.
        extract_meta: Take the Meta-Code's name and description from the file's embedded
            metadata (else from the file name only).
        max_image_pixels: Larger images are refused before decoding (decompression bombs).
        max_text_chars: Text extraction stops here (the SDK's fixed 10,000,000).
        video_fps: Frames per second the video signature samples.
        read_size: Bytes per read of the Data/Instance pass (memory used for the pass).
        noatime: Do not update files' access times when allowed.
        tools: External tools, their timeout and output limit, and the temporary directory.
    """

    bits: int = 64
    wide: bool = False
    meta: bool = True
    extract_meta: bool = True
    max_image_pixels: int = DEFAULT_MAX_PIXELS
    max_text_chars: int = MAX_CHARS
    video_fps: int = DEFAULT_FPS
    read_size: int = 2 * 1024 * 1024
    noatime: bool = True
    tools: ToolOptions = field(default_factory=ToolOptions)


@dataclass(frozen=True, slots=True)
class _Described:
    """Embedded metadata, what read it, and what went wrong reading it."""

    meta: Metadata = field(default_factory=Metadata)
    source: str = "filename"
    problem: BaseException | None = None


@dataclass(frozen=True, slots=True)
class _Content:
    """What a content extractor gave the record."""

    unit: Unit
    described: _Described
    extractor: str
    characters: int | None = None
    width: int | None = None
    height: int | None = None
    duration: float | None = None


class _Run:
    """Collects the results of one file's stages."""

    def __init__(self, path: str, options: CodeOptions) -> None:
        self.path = path
        self.options = options
        self.issues: list[FileIssue] = []
        self.timings: list[tuple[str, float]] = []

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings.append((name, round((time.perf_counter() - start) * 1000.0, 3)))

    def issue(self, stage: str, exc: BaseException) -> None:
        self.issues.append(issue_from_exception(stage, exc))

    def guarded(self, stage: str, compute: Callable[[], _T]) -> _T | None:
        """Run one stage; any failure becomes an issue of that stage instead of an exception."""
        with self.stage(stage):
            try:
                return compute()
            except Exception as exc:
                # Decoders and tools fail in ways no list of exception types covers; a bad
                # file must cost only this stage, never the record or the worker.
                self.issue(stage, exc)
                return None

    def profile(self, *parts: str) -> str:
        return " ".join((ALGORITHM, f"bits/{self.options.bits}", *parts))


def compute_record(
    path: str,
    options: CodeOptions | None = None,
    units: Collection[UnitType] | None = None,
) -> FileRecord:
    """Compute the ISCC units and ISCC-CODE of one file.

    Args:
        path: The file. A symbolic link, FIFO, socket, device or directory is refused without
            being opened.
        options: How to code; the SDK's defaults when omitted.
        units: Compute only these units (e.g. the ones whose profile changed); all by default.
            The ISCC-CODE is only composed when Data and Instance are among them.

    Returns:
        The record. Problems are in ``issues``; it is never an exception.
    """
    options = options or CodeOptions()
    wanted = ALL_UNITS if units is None else frozenset(units)
    run = _Run(path, options)
    try:
        src = open_source(path, noatime=options.noatime)
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


def _compute(src: SourceFile, run: _Run, wanted: frozenset[UnitType]) -> FileRecord:
    with run.stage("mediatype"):
        mediatype = mediatype_guess(src.head(), PurePath(src.path).name)
        mode = mediatype_to_mode(mediatype)
    if mode is None:
        run.issue("mediatype", UnsupportedMediaTypeError(f"no Content-Code for {mediatype}"))

    summed = None
    if wanted & {UnitType.DATA, UnitType.INSTANCE}:
        summed = run.guarded("read", lambda: _sum_pass(src, run))

    content: _Content | None = None
    if mode is not None and CONTENT_UNIT_OF_MODE[mode] in wanted:
        stage = CONTENT_UNIT_OF_MODE[mode].value
        content = run.guarded(stage, lambda: _content(src, mediatype, mode, run))

    meta: tuple[Unit, dict[str, str]] | None = None
    if mode is not None and run.options.meta and UnitType.META in wanted:
        meta = run.guarded("meta", lambda: _meta(src, mediatype, mode, content, run))

    units = [meta[0]] if meta else []
    if content:
        units.append(content.unit)
    if summed:
        units += [u for u in summed[0] if u.type in wanted]
    fields = meta[1] if meta else {}
    return FileRecord(
        path=src.path,
        stat=FileStat.from_os(src.stat),
        mediatype=mediatype,
        mode=mode,
        iscc=_compose(units, run.options.wide),
        name=fields.get("name"),
        units=tuple(units),
        datahash=summed[1] if summed else None,
        filesize=summed[2] if summed else None,
        characters=content.characters if content else None,
        width=content.width if content else None,
        height=content.height if content else None,
        duration=content.duration if content else None,
        extractor=content.extractor if content else None,
        timings=tuple(run.timings),
        issues=tuple(run.issues),
        description=fields.get("description"),
        metahash=fields.get("metahash"),
    )


def _sum_pass(src: SourceFile, run: _Run) -> tuple[list[Unit], str, int]:
    hasher = SumHasher()
    # A small file needs no large buffer (allocating one costs more than hashing the file).
    bufsize = min(run.options.read_size, max(src.size + 1, 65536))
    src.stream(hasher.push, bufsize=bufsize)
    result = hasher.result(bits=run.options.bits, wide=False, add_units=True)
    profile = run.profile()
    data, instance = result["units"]
    return (
        [_unit(UnitType.DATA, data, profile), _unit(UnitType.INSTANCE, instance, profile)],
        result["datahash"],
        result["filesize"],
    )


def _content(src: SourceFile, mediatype: str, mode: Mode, run: _Run) -> _Content:
    if src.size == 0:
        raise NoContentError("empty file")
    options = run.options
    if mode is Mode.IMAGE:
        _require_raster(mediatype)
        with src.reader() as fileobj:
            image = extract_image(
                fileobj,
                mediatype=mediatype,
                max_pixels=options.max_image_pixels,
                read_meta=options.extract_meta,
            )
        code = gen_image_code_v0(list(image.pixels), bits=options.bits)["iscc"]
        problem = ExtractionError(image.meta_problem) if image.meta_problem else None
        return _Content(
            _unit(UnitType.IMAGE, code, run.profile(image.extractor, EXTRACTION_REVISION)),
            _Described(image.meta, image.extractor, problem),
            image.extractor,
            width=image.width,
            height=image.height,
        )
    if mode is Mode.TEXT:
        extracted = extract_text(
            src,
            mediatype,
            max_chars=options.max_text_chars,
            read_meta=options.extract_meta,
            temp_dir=options.tools.temp_dir,
        )
        text = text_clean(extracted.text)
        if not text:
            raise NoContentError("no text found")
        result = gen_text_code_v0(text, bits=options.bits)
        problem = ExtractionError(extracted.meta_problem) if extracted.meta_problem else None
        profile = run.profile(extracted.extractor, EXTRACTION_REVISION)
        return _Content(
            _unit(UnitType.TEXT, result["iscc"], profile),
            _Described(extracted.meta, metadata_source(mediatype), problem),
            extracted.extractor,
            characters=result["characters"],
        )
    return _media_content(src, mode, run)


def _media_content(src: SourceFile, mode: Mode, run: _Run) -> _Content:
    """Audio and video: the external tools, in one private directory."""
    options = run.options
    tools = options.tools
    with tool_input(src.fd, src.path, tools.temp_dir) as inp:
        info, described = _probe(inp, tools, mode)
        if mode is Mode.AUDIO:
            audio = extract_audio(inp, tools)
            code = gen_audio_code_v0(list(audio.fingerprint), bits=options.bits)["iscc"]
            return _Content(
                _unit(UnitType.AUDIO, code, run.profile(audio.extractor, EXTRACTION_REVISION)),
                described,
                audio.extractor,
                duration=info.duration if info.duration is not None else audio.duration,
            )
        video = extract_video(inp, tools, fps=options.video_fps)
    code = gen_video_code_v0(video.frames, bits=options.bits)["iscc"]
    return _Content(
        _unit(UnitType.VIDEO, code, run.profile(video.extractor, EXTRACTION_REVISION)),
        described,
        video.extractor,
        width=info.width or video.width,
        height=info.height or video.height,
        duration=info.duration,
    )


def _probe(inp: ToolInput, tools: ToolOptions, mode: Mode) -> tuple[MediaInfo, _Described]:
    """ffprobe's report and the tags it found; an empty report if ffprobe is missing or fails
    (it only adds tags, duration and frame size)."""
    fields = AUDIO_META_FIELDS if mode is Mode.AUDIO else VIDEO_META_FIELDS
    try:
        info = probe_media(inp, tools)
    except ToolError as exc:
        return MediaInfo(), _Described(problem=exc)
    return info, _Described(pick(fields, info.tags, clean=False), info.tool)


def _describe(src: SourceFile, mediatype: str, mode: Mode, run: _Run) -> _Described:
    """The embedded metadata alone, for when the Content-Code is not being computed."""
    if src.size == 0:
        return _Described()
    try:
        if mode is Mode.IMAGE:
            _require_raster(mediatype)
            with src.reader() as fileobj:
                meta, problem = extract_image_metadata(fileobj)
            return _Described(
                meta, image_profile(mediatype), ExtractionError(problem) if problem else None
            )
        if mode is Mode.TEXT:
            meta = extract_text_metadata(src, mediatype, temp_dir=run.options.tools.temp_dir)
            return _Described(meta, metadata_source(mediatype))
        with tool_input(src.fd, src.path, run.options.tools.temp_dir) as inp:
            return _probe(inp, run.options.tools, mode)[1]
    except ExtractionError as exc:
        return _Described(problem=exc)


def _meta(
    src: SourceFile, mediatype: str, mode: Mode, content: _Content | None, run: _Run
) -> tuple[Unit, dict[str, str]]:
    options = run.options
    if not options.extract_meta:
        described = _Described()
    elif content is not None:
        described = content.described
    else:
        described = _describe(src, mediatype, mode, run)
    if described.problem is not None:
        issue = issue_from_exception("meta", described.problem)
        reason = f"embedded metadata not read ({issue.reason}); the file name stands in"
        run.issues.append(FileIssue("meta", IssueKind.SKIPPED, reason, issue.code))
    found = described.meta
    name = found.name or ""
    if not _meta_name(name):
        name = name_from_filename(src.path)
        if not _meta_name(name):
            raise NoContentError("no name in the metadata or the file name")
    try:
        result = gen_meta_code_v0(name, found.description, found.meta, bits=options.bits)
    except IsccError as exc:
        if found.meta is None:
            raise
        reason = f"embedded ISCC metadata ignored: {exc}"
        run.issues.append(FileIssue("meta", IssueKind.SKIPPED, reason, IssueCode.INVALID))
        result = gen_meta_code_v0(name, found.description, None, bits=options.bits)
    profile = run.profile(f"meta/{described.source}", EXTRACTION_REVISION)
    fields: dict[str, str] = {
        key: str(result[key]) for key in ("name", "description", "metahash") if key in result
    }
    return _unit(UnitType.META, result["iscc"], profile), fields


def _meta_name(name: str) -> str:
    """The name as the Meta-Code will use it (empty means there is none)."""
    return text_trim(text_remove_newlines(text_clean(name)), _META_TRIM_NAME)


def _require_raster(mediatype: str) -> None:
    if mediatype in _NOT_RASTERIZED:
        raise ToolMissingError(f"{mediatype} images are not rasterized by isccd")


def _compose(units: list[Unit], wide: bool) -> str | None:
    """The ISCC-CODE of the units, when Data and Instance are among them.

    As in the SDK, ``wide`` only has an effect on Data + Instance of at least 128 bits.
    """
    if not {UnitType.DATA, UnitType.INSTANCE} <= {u.type for u in units}:
        return None
    return gen_iscc_code_v0([u.iscc for u in units], wide=wide)["iscc"]


def _unit(unit_type: UnitType, code: str, profile: str) -> Unit:
    body = iscc_decode(code)[4]
    return Unit(unit_type, code if code.startswith("ISCC:") else f"ISCC:{code}", body, profile)


_ISSUES: tuple[tuple[type[BaseException], IssueKind, IssueCode], ...] = (
    (NotRegularFileError, IssueKind.ERROR, IssueCode.NOT_REGULAR),
    (FileVanishedError, IssueKind.ERROR, IssueCode.VANISHED),
    (FileUnstableError, IssueKind.ERROR, IssueCode.UNSTABLE),
    (FileAccessError, IssueKind.ERROR, IssueCode.ACCESS),
    (UnsupportedMediaTypeError, IssueKind.SKIPPED, IssueCode.UNSUPPORTED),
    (NoContentError, IssueKind.SKIPPED, IssueCode.NO_CONTENT),
    (ToolMissingError, IssueKind.SKIPPED, IssueCode.TOOL_MISSING),
    (ImageTooLargeError, IssueKind.ERROR, IssueCode.TOO_LARGE),
    (ToolError, IssueKind.ERROR, IssueCode.TOOL_FAILED),
    (ExtractionError, IssueKind.ERROR, IssueCode.INVALID),
)


def issue_from_exception(stage: str, exc: BaseException) -> FileIssue:
    """The per-file issue an exception stands for (unexpected ones are ``INTERNAL`` errors)."""
    for exc_type, kind, code in _ISSUES:
        if isinstance(exc, exc_type):
            reason = exc.reason if isinstance(exc, FileError) else str(exc)
            return FileIssue(stage, kind, reason or type(exc).__name__, code)
    detail = str(exc).strip()
    reason = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    return FileIssue(stage, IssueKind.ERROR, reason, IssueCode.INTERNAL)
