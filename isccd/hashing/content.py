"""Content-Codes and the Meta-Code of one file, from the extractors' plain inputs."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

from isccd.errors import (
    ExtractionError,
    NoContentError,
    ToolError,
    ToolMissingError,
)
from isccd.extract.audio import AudioContent, extract_audio
from isccd.extract.image import extract_image, extract_image_metadata
from isccd.extract.image import extractor_profile as image_profile
from isccd.extract.meta import name_from_filename, pick
from isccd.extract.probe import MediaInfo, probe_media
from isccd.extract.source import SourceFile
from isccd.extract.tags import COMPONENT as TAGS_COMPONENT
from isccd.extract.tags import VERSION as TAGS_VERSION
from isccd.extract.tags import read_tags
from isccd.extract.text import (
    extract_text,
    extract_text_metadata,
    is_plain_text,
    metadata_source,
)
from isccd.extract.tools import ToolInput, ToolOptions, tool_input
from isccd.extract.video import VideoContent, extract_video
from isccd.hashing.issues import issue_from_exception
from isccd.hashing.options import EXTRACTION_REVISION, META_SOURCE
from isccd.hashing.run import Described, Run
from isccd.iscc import (
    IsccError,
    decode_base32,
    decode_header,
    encode_base32,
    encode_component,
    encode_header,
    encode_length,
    gen_audio_code_v0,
    gen_image_code_v0,
    gen_video_code_v0,
    soft_hash_text_v0,
    text_clean,
    text_collapse,
)
from isccd.iscc.constants import MT, ST, ST_CC, VS
from isccd.iscc.meta import meta_digest, meta_name
from isccd.model import (
    FileIssue,
    IssueCode,
    IssueKind,
    Mode,
    Unit,
    UnitType,
)

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
#: The audio tags the Meta-Code is made from, lower-case.
AUDIO_TAGS = frozenset(tag for tag, _ in AUDIO_META_FIELDS)

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

#: What plain text says of itself: nothing, and nothing was read for it.
_UNDESCRIBED = Described()

#: Vector formats the SDK rasterizes with extra tools isccd does not ship.
_NOT_RASTERIZED = frozenset({"image/svg+xml", "application/postscript"})


class Content(NamedTuple):
    """What a content extractor gave the record (a tuple: made for every file with a
    Content-Code, it costs 0.35 µs to make where a frozen dataclass cost 0.9)."""

    unit: Unit
    described: Described
    extractor: str
    characters: int | None = None
    width: int | None = None
    height: int | None = None
    duration: float | None = None


def content_unit(src: SourceFile, mediatype: str, mode: Mode, run: Run) -> Content:
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
        return Content(
            make_unit(UnitType.IMAGE, code, run.profile(image.extractor, EXTRACTION_REVISION)),
            Described(image.meta, image.extractor, problem),
            image.extractor,
            width=image.width,
            height=image.height,
        )
    if mode is Mode.TEXT:
        # Plain text is decoded in process: no tool, no temporary directory, no metadata.
        plain = is_plain_text(mediatype)
        extracted = extract_text(
            src,
            mediatype,
            max_chars=options.max_text_chars,
            read_meta=options.extract_meta,
            temp_dir=None if plain else options.tools.temp_dir,
        )
        # Kept for the Meta-Code even when the document turns out to hold no text.
        if plain:
            run.described = _UNDESCRIBED
        else:
            problem = ExtractionError(extracted.meta_problem) if extracted.meta_problem else None
            run.described = Described(extracted.meta, metadata_source(mediatype), problem)
        # gen_text_code_v0's steps, the unit made from its digest (not encoded, then decoded).
        collapsed = _collapsed(extracted.text)
        profile = run.profile(extracted.profile, EXTRACTION_REVISION)
        return Content(
            digest_unit(UnitType.TEXT, soft_hash_text_v0(collapsed), options.bits, profile),
            run.described,
            extracted.extractor,
            characters=len(collapsed),
        )
    return _media_content(src, mediatype, mode, run)


def _collapsed(text: str) -> str:
    """The text collapsed for its Text-Code, of a text that cleaning leaves something of.

    Raises:
        NoContentError: Cleaning leaves nothing (only whitespace and controls).
    """
    if text.isascii():
        # Collapsing ASCII removes all that cleaning does (controls, whitespace) and keeps the
        # order of the rest: collapsed whole, it needs cleaning only to tell an empty text.
        collapsed = text_collapse(text)
        if not collapsed and not text_clean(text):
            raise NoContentError("no text found")
        return collapsed
    text = text_clean(text)
    if not text:
        raise NoContentError("no text found")
    return text_collapse(text)


def _media_content(src: SourceFile, mediatype: str, mode: Mode, run: Run) -> Content:
    """Audio and video: the external tools, in one private directory.

    The tags are read (by ffprobe, when not in process) in a thread beside the tool that makes
    the Content-Code: that tool keeps one core busy, and ffprobe's start (about 45 ms of
    loading shared libraries, 10 % of a 30 s video's signature) then costs no wall-clock time
    on a second core. The directory is removed only after both have finished.
    """
    options = run.options
    tools = options.tools
    with (
        tool_input(src.fd, src.path, tools.temp_dir) as inp,
        ThreadPoolExecutor(1, thread_name_prefix="isccd-media-meta") as beside,
    ):
        meta = beside.submit(_media_meta, src, mediatype, inp, tools, mode)
        try:
            if mode is Mode.AUDIO:
                extracted: AudioContent | VideoContent = extract_audio(inp, tools)
            else:
                extracted = extract_video(inp, tools, fps=options.video_fps)
        finally:
            info, described = meta.result()
            run.described = described  # for the Meta-Code, should the Content-Code fail
    if isinstance(extracted, AudioContent):
        code = gen_audio_code_v0(list(extracted.fingerprint), bits=options.bits)["iscc"]
        return Content(
            make_unit(UnitType.AUDIO, code, run.profile(extracted.extractor, EXTRACTION_REVISION)),
            described,
            extracted.extractor,
            duration=info.duration if info.duration is not None else extracted.duration,
        )
    video = extracted
    code = gen_video_code_v0(video.frames, bits=options.bits)["iscc"]
    if video.decode_errors:
        reason = f"{video.decode_errors}; coded from the signature ffmpeg wrote completely"
        run.issues.append(FileIssue("video", IssueKind.WARNING, reason, IssueCode.INVALID))
    return Content(
        make_unit(UnitType.VIDEO, code, run.profile(video.extractor, EXTRACTION_REVISION)),
        described,
        video.extractor,
        width=info.width or video.width,
        height=info.height or video.height,
        duration=info.duration,
    )


def _media_meta(
    src: SourceFile, mediatype: str, inp: ToolInput, tools: ToolOptions, mode: Mode
) -> tuple[MediaInfo, Described]:
    """The tags of an audio or video file, and what ffprobe says of it when it was asked.

    MP3, FLAC and Ogg audio tags are read in process, saving ffprobe's start (about 45 ms);
    their duration comes from fpcalc. Other files, and those whose tags the in-process reader
    is not sure to read as ffprobe does, are probed.
    """
    if mode is Mode.AUDIO:
        tags = read_tags(src, mediatype, AUDIO_TAGS)
        if tags is not None:
            found = pick(AUDIO_META_FIELDS, tags, clean=False)
            return MediaInfo(), Described(found, f"{TAGS_COMPONENT}/{TAGS_VERSION}")
    return _probe(inp, tools, mode)


def _probe(inp: ToolInput, tools: ToolOptions, mode: Mode) -> tuple[MediaInfo, Described]:
    """ffprobe's report and the tags it found; an empty report if ffprobe is missing or fails
    (it only adds tags, duration and frame size)."""
    fields = AUDIO_META_FIELDS if mode is Mode.AUDIO else VIDEO_META_FIELDS
    try:
        info = probe_media(inp, tools)
    except ToolError as exc:
        return MediaInfo(), Described.failed(exc)
    return info, Described(pick(fields, info.tags, clean=False), info.tool)


def _describe(src: SourceFile, mediatype: str, mode: Mode, run: Run) -> Described:
    """The embedded metadata alone, for when the Content-Code is not being computed."""
    if src.size == 0:
        return Described()
    try:
        if mode is Mode.IMAGE:
            _require_raster(mediatype)
            with src.reader() as fileobj:
                meta, problem = extract_image_metadata(fileobj)
            return Described(
                meta, image_profile(mediatype), ExtractionError(problem) if problem else None
            )
        if mode is Mode.TEXT:
            meta = extract_text_metadata(src, mediatype, temp_dir=run.options.tools.temp_dir)
            return Described(meta, metadata_source(mediatype))
        with tool_input(src.fd, src.path, run.options.tools.temp_dir) as inp:
            return _media_meta(src, mediatype, inp, run.options.tools, mode)[1]
    except ExtractionError as exc:
        return Described.failed(exc)


#: Why a file has no Meta-Code: neither its metadata nor its file name give a name.
NO_NAME = "no name in the metadata or the file name"


def meta_unit(
    src: SourceFile, mediatype: str, mode: Mode, content: Content | None, run: Run
) -> tuple[Unit, dict[str, str], bool]:
    """The Meta-Code of a file, its fields (``name``, ``description``, ``metahash``), and
    whether the name is the file name (no embedded title).

    Raises:
        NoContentError: No name (see :data:`NO_NAME`).
        IsccError: The name and description cannot be coded.
    """
    options = run.options
    if not options.extract_meta:
        described = Described()
    elif content is not None:
        described = content.described
    elif run.described is not None:
        described = run.described  # read before the Content-Code failed
    else:
        described = _describe(src, mediatype, mode, run)
    if described.problem is not None:
        issue = issue_from_exception("meta", described.problem)
        reason = f"embedded metadata not read ({issue.reason}); the file name stands in"
        run.issues.append(FileIssue("meta", IssueKind.SKIPPED, reason, issue.code))
    found = described.meta
    name = found.name or ""
    named_by_file = not name or not meta_name(name)
    if named_by_file:
        name = name_from_filename(src.path)
        if not meta_name(name):
            raise NoContentError(NO_NAME)
    # gen_meta_code_v0's digest and fields: the unit is made from the digest (not encoded,
    # then decoded).
    try:
        digest, result = meta_digest(name, found.description, found.meta)
    except IsccError as exc:
        if found.meta is None:
            raise
        reason = f"embedded ISCC metadata ignored: {exc}"
        run.issues.append(FileIssue("meta", IssueKind.SKIPPED, reason, IssueCode.INVALID))
        digest, result = meta_digest(name, found.description, None)
    source = f"{META_SOURCE}/{options.meta_source}"
    profile = run.profile(described.source, source, EXTRACTION_REVISION)
    # The fields the record keeps: meta_digest's own fresh dictionary, without "meta".
    fields = result
    fields.pop("meta", None)
    return digest_unit(UnitType.META, digest, options.bits, profile), fields, named_by_file


def _require_raster(mediatype: str) -> None:
    if mediatype in _NOT_RASTERIZED:
        raise ToolMissingError(f"{mediatype} images are not rasterized by isccd")


def make_unit(unit_type: UnitType, code: str, profile: str) -> Unit:
    """A unit from a canonical ``ISCC:`` code its generator made (no normalizing needed)."""
    raw = decode_base32(code.removeprefix("ISCC:"))
    # A generator's header is two bytes of one-nibble fields (no varnibble continuation bit).
    body = raw[2:] if len(raw) >= 2 and not (raw[0] | raw[1]) & 0x88 else decode_header(raw)[4]
    return Unit(unit_type, code, body, profile)


def digest_unit(unit_type: UnitType, digest: bytes, bits: int, profile: str) -> Unit:
    """A unit from the digest its hasher made (nothing to decode, unlike
    :func:`~isccd.hashing.content.make_unit`).

    Raises:
        IsccError: ``bits`` is not a unit length, or longer than the digest.
    """
    header = _UNIT_HEADERS.get((unit_type, bits)) if type(bits) is int else None
    if header is not None:
        body = digest[: bits // 8]
        if len(body) * 8 == bits:
            return Unit(unit_type, "ISCC:" + encode_base32(header + body), body, profile)
    mtype, stype = HEADER_OF[unit_type]
    code = encode_component(mtype, stype, VS.V0, bits, digest)  # checks, and raises
    return Unit(unit_type, "ISCC:" + code, digest[: bits // 8], profile)


#: MainType and SubType of the units a record holds.
HEADER_OF: dict[UnitType, tuple[int, int]] = {
    UnitType.META: (MT.META, ST.NONE),
    UnitType.TEXT: (MT.CONTENT, ST_CC.TEXT),
    UnitType.IMAGE: (MT.CONTENT, ST_CC.IMAGE),
    UnitType.AUDIO: (MT.CONTENT, ST_CC.AUDIO),
    UnitType.VIDEO: (MT.CONTENT, ST_CC.VIDEO),
    UnitType.DATA: (MT.DATA, ST.NONE),
    UnitType.INSTANCE: (MT.INSTANCE, ST.NONE),
}

#: The header of each unit type at each legal length, encoded once (what
#: :func:`~isccd.iscc.encode_component` writes for it).
_UNIT_HEADERS: dict[tuple[UnitType, int], bytes] = {
    (unit_type, bits): encode_header(mtype, stype, VS.V0, encode_length(mtype, bits))
    for unit_type, (mtype, stype) in HEADER_OF.items()
    for bits in range(32, 257, 32)
}
