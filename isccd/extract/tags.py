"""Tags of MP3, FLAC and Ogg files, read in process as ffprobe reports them.

Starting ffprobe costs about 45 ms (it loads some 200 shared libraries), a third of what
fingerprinting a 3-minute song takes. For the common audio formats the tags the Meta-Code needs
are read here instead, from ID3v2.3 and ID3v2.4 tags (MP3) and Vorbis comments (FLAC, Ogg
Vorbis, Opus), with ffprobe's names: ``TIT2`` is ``title``, a ``TXXX`` frame is named by its
description, a Vorbis comment by its field name (all lower-cased here, as the callers compare
them).

The reader is deliberately narrow. Whenever a file holds something whose reading by ffprobe it
does not reproduce exactly (an ID3v2.2 or unsynchronised tag, a compressed frame, two values or
two frames for one wanted name, an ID3v1 or APE tag at the end, tags ahead of a FLAC stream,
several Ogg streams, text that does not decode), it returns ``None`` and the caller asks
ffprobe.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Collection, Iterator

from isccd.extract.source import SourceFile

#: The profile component of tags read here, and its version (raise it when what is read changes).
COMPONENT = "isccd-tags"
VERSION = "1"

#: Bytes of a file's beginning read for its tags; larger tags (cover art) go to ffprobe.
MAX_TAG_BYTES = 1 << 20


class _Unsure(Exception):
    """The file holds something ffprobe may read otherwise than this module would."""


def read_tags(src: SourceFile, mediatype: str, wanted: Collection[str]) -> dict[str, str] | None:
    """The tags named in ``wanted`` (lower-case) that the file has, as ffprobe reports them.

    Args:
        src: The open file.
        mediatype: Its media type: ``audio/mpeg``, ``audio/flac`` (or ``audio/x-flac``),
            ``audio/ogg`` or ``audio/opus``; others are not read here.
        wanted: The tag names of interest, lower-case.

    Returns:
        The wanted tags found (possibly none), or ``None`` when ffprobe must read them.
    """
    reader = _READERS.get(mediatype)
    if reader is None:
        return None
    try:
        return _collect(reader(src, src.head(MAX_TAG_BYTES)), wanted)
    except (_Unsure, struct.error, UnicodeDecodeError, IndexError):
        return None


def _collect(fields: Iterator[tuple[str, str]], wanted: Collection[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in fields:
        key = name.lower()
        if key in wanted:
            if key in found:
                raise _Unsure  # which one wins depends on ffmpeg's merging
            found[key] = value
    return found


# -- MP3: ID3v2.3 and ID3v2.4 --------------------------------------------------------------

_ID3_ENCODINGS = {0: "latin-1", 1: "utf-16", 2: "utf-16-be", 3: "utf-8"}
_FRAME_ID = re.compile(rb"[A-Z0-9]{4}")
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def _mp3(src: SourceFile, head: bytes) -> Iterator[tuple[str, str]]:
    tail = os.pread(src.fd, 160, max(src.size - 160, 0))
    if tail[-128:-125] == b"TAG" or b"APETAGEX" in tail:
        raise _Unsure  # an ID3v1 or APE tag: ffmpeg merges them in its own way
    if not head.startswith(b"ID3"):
        return
    version, flags = head[3], head[5]
    if version not in (3, 4) or flags:
        raise _Unsure  # ID3v2.2, unsynchronisation, an extended header, a footer
    end = 10 + _syncsafe(head[6:10])
    if end > len(head) or head[end : end + 3] == b"ID3":
        raise _Unsure  # longer than read, or a second tag follows
    at = 10
    while at + 10 <= end and head[at] != 0:
        frame_id = head[at : at + 4].decode("ascii")
        size = _syncsafe(head[at + 4 : at + 8]) if version == 4 else _u32(head, at + 4)
        frame_flags = head[at + 8 : at + 10]
        body = head[at + 10 : at + 10 + size]
        at += 10 + size
        if at > end or (at + 4 <= end and head[at] and not _FRAME_ID.fullmatch(head[at : at + 4])):
            raise _Unsure  # a frame size that does not lead to the next frame
        if frame_id == "TIT2":
            yield "title", _id3_text(body, frame_flags)[1]
        elif frame_id == "TXXX":
            yield _id3_text(body, frame_flags, described=True)


def _id3_text(body: bytes, flags: bytes, *, described: bool = False) -> tuple[str, str]:
    """A text frame's value (``TIT2``), or its description and value (``TXXX``)."""
    if flags != b"\0\0" or not body or body[0] not in _ID3_ENCODINGS:
        raise _Unsure
    encoding = _ID3_ENCODINGS[body[0]]
    wide = body[0] in (1, 2)
    terminator = b"\0\0" if wide else b"\0"
    parts = _split(body[1:], terminator, wide)
    while parts and parts[-1] == b"":
        parts.pop()  # trailing terminators
    if len(parts) != (2 if described else 1):
        raise _Unsure  # several values, or a frame without one
    if encoding == "utf-16" and not all(p[:2] in _UTF16_BOMS for p in parts):
        raise _Unsure  # ffmpeg refuses UTF-16 without a byte order mark
    texts = [p.decode(encoding) for p in parts]
    return (texts[0], texts[1]) if described else ("", texts[0])


def _split(data: bytes, terminator: bytes, wide: bool) -> list[bytes]:
    if not wide:
        return data.split(terminator)
    parts, start = [], 0
    for i in range(0, len(data) - 1, 2):  # UTF-16 code units: the terminator is aligned
        if data[i : i + 2] == terminator:
            parts.append(data[start:i])
            start = i + 2
    parts.append(data[start:])
    return parts


def _syncsafe(data: bytes) -> int:
    if any(b & 0x80 for b in data):
        raise _Unsure
    return (data[0] << 21) | (data[1] << 14) | (data[2] << 7) | data[3]


def _u32(data: bytes, at: int) -> int:
    return int(struct.unpack_from(">I", data, at)[0])


# -- Vorbis comments: FLAC, Ogg Vorbis, Opus -------------------------------------------------


def _comments(data: bytes) -> Iterator[tuple[str, str]]:
    """The fields of a Vorbis comment block (vendor string, count, ``NAME=value`` entries)."""
    (vendor,) = struct.unpack_from("<I", data, 0)
    at = 4 + vendor
    (count,) = struct.unpack_from("<I", data, at)
    at += 4
    for _ in range(count):
        (length,) = struct.unpack_from("<I", data, at)
        entry = data[at + 4 : at + 4 + length]
        if len(entry) != length:
            raise _Unsure
        at += 4 + length
        name, sep, value = entry.decode("utf-8").partition("=")
        if sep:
            yield name, value


def _flac(_src: SourceFile, head: bytes) -> Iterator[tuple[str, str]]:
    if not head.startswith(b"fLaC"):
        raise _Unsure  # an ID3 tag ahead of the stream, or not FLAC after all
    at, last, comments = 4, False, None
    while not last:
        if at + 4 > len(head):
            raise _Unsure
        last, kind = bool(head[at] & 0x80), head[at] & 0x7F
        size = int.from_bytes(head[at + 1 : at + 4], "big")
        if kind == 4:
            if at + 4 + size > len(head) or comments is not None:
                raise _Unsure  # longer than read, or a second comment block
            comments = head[at + 4 : at + 4 + size]
        at += 4 + size
    if comments is not None:
        yield from _comments(comments)


_OGG_COMMENTS = {b"\x01vorbis": b"\x03vorbis", b"OpusHead": b"OpusTags"}


def _ogg(_src: SourceFile, head: bytes) -> Iterator[tuple[str, str]]:
    packets = _ogg_packets(head)
    first = next(packets, b"")
    comment_tag = next((v for k, v in _OGG_COMMENTS.items() if first.startswith(k)), None)
    second = next(packets, b"")
    if comment_tag is None or not second.startswith(comment_tag):
        raise _Unsure  # Speex, FLAC in Ogg, or a stream ffprobe reads otherwise
    yield from _comments(second[len(comment_tag) :])


def _ogg_packets(head: bytes) -> Iterator[bytes]:
    """The packets of the file's only logical stream, from its pages (within ``head``)."""
    at, serial, packet = 0, None, b""
    while head[at : at + 4] == b"OggS":
        kind, page_serial = head[at + 5], head[at + 14 : at + 18]
        if serial is None:
            serial = page_serial
        elif page_serial != serial or kind & 2:
            raise _Unsure  # several streams: which tags are whose is ffprobe's to say
        segments = head[at + 26]
        table = head[at + 27 : at + 27 + segments]
        data = at + 27 + segments
        for lacing in table:
            packet += head[data : data + lacing]
            data += lacing
            if lacing < 255:
                yield packet
                packet = b""
        if data > len(head):
            raise _Unsure
        at = data
    raise _Unsure  # ran out of pages before the packets wanted


_READERS = {
    "audio/mpeg": _mp3,
    "audio/flac": _flac,
    "audio/x-flac": _flac,
    "audio/ogg": _ogg,
    "audio/opus": _ogg,
}
