"""Content signatures: which format the first bytes of a file are in, if they clearly say so.

A compact table of the signatures that matter for the media types isccd codes (images, audio,
video, documents, text), matched by one dictionary lookup on the first two bytes (and one on the
box type at offset 4, for ISO base media files), so sniffing costs a few microseconds whatever
the content. It replaces a walk over the ~1,400 signatures of ``puremagic`` (the database the
ISCC SDK sniffs with; about 3,000 Python calls per file) and gives the same media type names for
real files, except where that walk is fooled. Only strong evidence counts:

- every binary signature is long (four fixed bytes or more, or three that text cannot hold, as
  JPEG's ``FF D8 FF``) or checked for structure: a BMP's reserved bytes and header size, an
  MPEG audio frame followed by a second one where the first says it ends, a PNM header's
  numbers, an ICO directory entry; short ASCII signatures also need control bytes where the
  format puts binary fields. Footers are not used (a random file ending in an MPEG end code is
  not a video) nor are two-byte guesses (a text beginning with "if" is not a 669 tracker
  module, a binary beginning with ``{`` is not JSON);
- signatures of text formats (markup, JSON, RTF, PostScript, scripts, patches) only count for
  content that reads as text (:func:`has_binary_bytes` is false), and they say ``text=True`` so
  that a caller lets them overrule no name;
- containers are looked into where that tells audio from video or images: the codecs of an Ogg
  file's first pages, the stream types of an ASF header, the brands of an ISO base media file
  (M4A is audio, HEIC and AVIF are images), the entries of a ZIP file (DOCX, XLSX, PPTX, ODF,
  EPUB are told apart; any other ZIP is an archive, not a document).
"""

from __future__ import annotations

import codecs
import re
import struct
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class Signature:
    """What a file's first bytes say it is.

    Attributes:
        mediatype: The media type, named as the ISCC SDK's sniffing names it (``audio/wave``,
            ``image/x-ms-bmp``, ``application/ogg``), so that its aliases apply.
        text: The signature is that of a text format (markup, JSON, a script): the content is
            text, which a text name describes as well.
    """

    mediatype: str
    text: bool = False


_Matcher = Callable[[bytes], str | None]

# Bytes that do not occur in text: C0 controls but TAB, LF, VT, FF, CR and ESC, and DEL.
_CONTROL = bytes(sorted(set(range(0x20)) - {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1B} | {0x7F}))
_NOT_CONTROL = bytes(b for b in range(256) if b not in _CONTROL)


def has_binary_bytes(head: bytes) -> bool:
    """True when ``head`` holds a control byte that text does not contain (NUL, BEL, ...)."""
    return bool(head.translate(None, _NOT_CONTROL))


_UNICODE_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
    (codecs.BOM_UTF8, "utf-8"),
)
_CONTROL_CHARS = re.compile(f"[{re.escape(_CONTROL.decode('ascii'))}]")


def unicode_text(head: bytes) -> bool:
    """True when ``head`` begins with a Unicode byte order mark and what follows is text in
    that encoding (two bytes alone begin one random file in 32,768 with a UTF-16 mark)."""
    for bom, encoding in _UNICODE_BOMS:
        if head.startswith(bom):
            try:
                # A character cut by the end of the sample is still text.
                text = codecs.getincrementaldecoder(encoding)().decode(head[len(bom) :])
            except UnicodeDecodeError:
                return False
            return _CONTROL_CHARS.search(text) is None and _assigned(text)
    return False


def _assigned(text: str) -> bool:
    """No unassigned or private-use characters: random bytes decoded as UTF-16 are mostly
    such characters, text hardly ever."""
    printable = text.isprintable()  # fast and mostly true for text: no need to look further
    return printable or all(unicodedata.category(c) not in ("Cn", "Co", "Cs") for c in text)


def sniff(head: bytes) -> Signature | None:
    """The format the first bytes of a file show, or ``None`` when they show none clearly.

    Args:
        head: The first bytes of the file (4096 are enough; fewer for a short file).
    """
    for match in _BINARY.get(head[:2], ()):
        found = match(head)
        if found:
            return Signature(found, text=found == "text/plain")
    box = _BOXES.get(head[4:8])
    if box is not None:
        found = box(head)
        if found:
            return Signature(found)
    if head[257:263] in _TAR and has_binary_bytes(head[:512]):
        return Signature("application/x-tar")
    if head[60:68] == b"BOOKMOBI":
        return Signature("application/x-mobipocket-ebook")
    return _sniff_text(head)


# -- images ---------------------------------------------------------------------------------


def _fixed(prefix: bytes, mediatype: str) -> _Matcher:
    return lambda head: mediatype if head.startswith(prefix) else None


def _jpeg(head: bytes) -> str | None:
    # SOI followed by the first marker's 0xFF.
    return "image/jpeg" if head[2:3] == b"\xff" else None


_BMP_HEADER_SIZES = frozenset({12, 16, 40, 52, 56, 64, 108, 124})


def _bmp(head: bytes) -> str | None:
    if len(head) < 18 or head[6:10] != b"\0\0\0\0":
        return None
    header = int.from_bytes(head[14:18], "little")
    return "image/x-ms-bmp" if header in _BMP_HEADER_SIZES else None


def _tiff(head: bytes) -> str | None:
    order: Literal["little", "big"] = "little" if head[:2] == b"II" else "big"
    magic = int.from_bytes(head[2:4], order)
    if magic == 42 and len(head) >= 8 and int.from_bytes(head[4:8], order) >= 8:
        return "image/tiff"
    if magic == 43 and int.from_bytes(head[4:6], order) == 8:  # BigTIFF
        return "image/tiff"
    return None


def _ico(head: bytes) -> str | None:
    # ICONDIR (reserved 0, type 1, count) and the first ICONDIRENTRY.
    if len(head) < 22 or head[2:4] != b"\x01\x00":
        return None
    count, planes, bpp, size, offset = struct.unpack_from("<H4xHHII", head, 4)
    ok = (
        count >= 1
        and head[9] == 0
        and planes <= 1
        and bpp in (0, 1, 4, 8, 16, 24, 32)
        and size > 0
        and offset >= 6 + 16 * count
    )
    return "image/x-icon" if ok else None


def _pcx(head: bytes) -> str | None:
    ok = len(head) >= 4 and head[1] in (0, 2, 3, 4, 5) and head[2] <= 1 and head[3] in (1, 2, 4, 8)
    return "image/x-pcx" if ok else None


_PNM = re.compile(rb"P([1-6])\s+(?:#[^\n]*\n\s*)*\d+\s+(?:#[^\n]*\n\s*)*\d+\s")
_PNM_TYPES = ("bitmap", "graymap", "pixmap")


def _pnm(head: bytes) -> str | None:
    """Netpbm images: P1 to P3 are text (numbers), P4 to P6 a text header and binary pixels."""
    match = _PNM.match(head)
    if match is None:
        return None
    kind = int(match.group(1))
    if kind > 3 and not has_binary_bytes(head[match.end() : match.end() + 256]):
        return None
    return f"image/x-portable-{_PNM_TYPES[(kind - 1) % 3]}"


def _sgi(head: bytes) -> str | None:
    ok = len(head) >= 6 and head[2] <= 1 and head[3] in (1, 2) and head[4:5] == b"\0"
    return "image/x-rgb" if ok and 1 <= head[5] <= 3 else None


def _psd(head: bytes) -> str | None:
    return "image/vnd.adobe.photoshop" if head[:6] in (b"8BPS\0\1", b"8BPS\0\2") else None


def _dds(head: bytes) -> str | None:
    return "image/x-dds" if head[:8] == b"DDS |\0\0\0" else None


def _gif(head: bytes) -> str | None:
    # The screen size's high bytes are control characters but for images over 8,191 pixels.
    ok = head[:6] in (b"GIF87a", b"GIF89a") and has_binary_bytes(head[6:13])
    return "image/gif" if ok else None


_JP2 = b"\0\0\0\x0cjP  \r\n\x87\n"


# -- audio ----------------------------------------------------------------------------------

# Bitrates in kbit/s by (MPEG-1?, layer), index 1..14; sample rates by version.
_MPA_BITRATES = {
    (True, 1): (32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448),
    (True, 2): (32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384),
    (True, 3): (32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
    (False, 1): (32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256),
    (False, 2): (8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
    (False, 3): (8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
}
_MPA_RATES = {3: (44100, 48000, 32000), 2: (22050, 24000, 16000), 0: (11025, 12000, 8000)}


def _mpa_frame(head: bytes, at: int) -> tuple[str, int] | None:
    """The media type and length of the MPEG audio or ADTS (AAC) frame at ``at``, if one is."""
    if len(head) < at + 7 or head[at] != 0xFF or head[at + 1] & 0xE0 != 0xE0:
        return None
    version, layer = (head[at + 1] >> 3) & 3, (head[at + 1] >> 1) & 3
    if layer == 0:  # ADTS: a 12-bit sync, and the frame length in the header
        if head[at + 1] & 0xF6 != 0xF0 or (head[at + 2] >> 2) & 0xF > 12:
            return None
        length = ((head[at + 3] & 3) << 11) | (head[at + 4] << 3) | (head[at + 5] >> 5)
        return ("audio/aac", length) if length >= 7 else None
    bitrate_index, rate_index = head[at + 2] >> 4, (head[at + 2] >> 2) & 3
    if version == 1 or bitrate_index in (0, 15) or rate_index == 3:
        return None
    layer = 4 - layer
    bitrate = _MPA_BITRATES[(version == 3, layer)][bitrate_index - 1] * 1000
    rate = _MPA_RATES[version][rate_index]
    padding = (head[at + 2] >> 1) & 1
    if layer == 1:
        length = (12 * bitrate // rate + padding) * 4
    else:
        length = (144 if layer == 2 or version == 3 else 72) * bitrate // rate + padding
    return "audio/mpeg", length


def _mpeg_audio(head: bytes) -> str | None:
    # Two bytes of sync say little; a second frame header where the first frame ends does.
    first = _mpa_frame(head, 0)
    if first is None:
        return None
    second = _mpa_frame(head, first[1])
    return first[0] if second is not None and second[0] == first[0] else None


def _id3(head: bytes) -> str | None:
    ok = len(head) >= 10 and head[3] in (2, 3, 4) and head[4] != 0xFF
    return "audio/mpeg" if ok and all(b < 0x80 for b in head[6:10]) else None


def _riff(head: bytes) -> str | None:
    if not head.startswith(b"RIFF") or not has_binary_bytes(head[:24]):
        return None
    return _RIFF_FORMS.get(head[8:12])


_RIFF_FORMS = {b"WAVE": "audio/wave", b"AVI ": "video/avi", b"WEBP": "image/webp"}


def _aiff(head: bytes) -> str | None:
    ok = head.startswith(b"FORM") and head[8:12] in (b"AIFF", b"AIFC")
    ok = ok and has_binary_bytes(head[:24])
    return "audio/x-aiff" if ok else None


def _flac(head: bytes) -> str | None:
    # The first metadata block is STREAMINFO (type 0) of 34 bytes.
    return "audio/flac" if head[4:8] in (b"\0\0\0\x22", b"\x80\0\0\x22") else None


_OGG_VIDEO = (b"\x80theora", b"BBCD\0", b"\x80kate")
_OGG_AUDIO = (b"\x01vorbis", b"OpusHead", b"Speex   ", b"\x7fFLAC")


def _ogg(head: bytes) -> str | None:
    """An Ogg file: video when a stream of its first (beginning-of-stream) pages is video,
    audio when they are all audio; ``application/ogg`` when the codecs are not told."""
    if not head.startswith(b"OggS\0"):
        return None
    at, kinds = 0, set()
    while head[at : at + 4] == b"OggS" and len(head) >= at + 27 and head[at + 5] & 2:
        segments = head[at + 26]
        table = head[at + 27 : at + 27 + segments]
        packet = head[at + 27 + segments : at + 27 + segments + 8]
        if packet.startswith(_OGG_VIDEO):
            kinds.add("video")
        elif packet.startswith(_OGG_AUDIO):
            kinds.add("audio")
        at += 27 + segments + sum(table)
    if "video" in kinds:
        return "video/ogg"
    return "audio/ogg" if kinds == {"audio"} else "application/ogg"


_ASF_HEADER = b"0&\xb2u\x8ef\xcf\x11\xa6\xd9\x00\xaa\x00b\xcel"
_ASF_VIDEO = b"\xc0\xef\x19\xbcM[\xcf\x11\xa8\xfd\x00\x80_\\D+"
_ASF_AUDIO = b"@\x9ei\xf8M[\xcf\x11\xa8\xfd\x00\x80_\\D+"


def _asf(head: bytes) -> str | None:
    """ASF (WMV, WMA): audio only when its stream properties name audio streams and no video."""
    if not head.startswith(_ASF_HEADER):
        return None
    if _ASF_AUDIO in head and _ASF_VIDEO not in head:
        return "audio/x-ms-wma"
    return "video/x-ms-wmv"


def _wavpack(head: bytes) -> str | None:
    ok = head.startswith(b"wvpk") and 0x402 <= int.from_bytes(head[8:10], "little") <= 0x410
    return "audio/x-wavpack" if ok else None


def _tracker(head: bytes) -> str | None:
    """FastTracker 2 and Impulse Tracker modules (ffmpeg decodes them with libopenmpt)."""
    if head.startswith(b"Extended Module: ") and head[37:38] == b"\x1a":
        return "audio/x-xm"
    return "audio/x-it" if head.startswith(b"IMPM") and has_binary_bytes(head[:64]) else None


def _ac3(head: bytes) -> str | None:
    ok = len(head) >= 6 and head[4] >> 6 != 3 and head[4] & 0x3F < 38 and head[5] >> 3 <= 16
    return "audio/ac3" if ok else None


# -- video ----------------------------------------------------------------------------------


def _ebml(head: bytes) -> str | None:
    if not head.startswith(b"\x1aE\xdf\xa3"):
        return None
    return "video/x-matroska" if b"matroska" in head[:64] else "video/webm"


def _flv(head: bytes) -> str | None:
    return "video/x-flv" if head[:4] == b"FLV\x01" and head[5:9] == b"\0\0\0\x09" else None


def _swf(head: bytes) -> str | None:
    ok = head[1:3] == b"WS" and 1 <= head[3] <= 60 and has_binary_bytes(head[4:16])
    return "application/x-shockwave-flash" if ok else None


def _realmedia(head: bytes) -> str | None:
    if head.startswith(b".RMF"):
        if head[4:8] == b"\0\0\0\x12":
            return "audio/x-pn-realaudio"
        return "application/vnd.rn-realmedia"
    return "audio/x-pn-realaudio" if head.startswith(b".ra\xfd\0") else None


def _zero(head: bytes) -> str | None:
    """Signatures beginning with two zero bytes: MPEG program and video streams, ICO, JPEG 2000
    (ISO base media files, which also start with zeros, are told by their box type)."""
    third = head[2:4]
    if third == b"\x01\xba":
        return "video/dvd"  # an MPEG program stream, named as the SDK's sniffing names it
    if third == b"\x01\xb3":
        return "video/mpeg"
    if third == b"\x01\x00":
        return _ico(head)
    return "image/jp2" if head.startswith(_JP2) else None


# -- documents ------------------------------------------------------------------------------

_OOXML = (
    (b"word/", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    (b"xl/", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    (b"ppt/", "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
)
_ODF_MIMETYPE = re.compile(rb"application/[\w.+-]+")


def _zip(head: bytes) -> str | None:
    """A ZIP file: an office document or e-book by its entries, else an archive."""
    if head[2:4] != b"\x03\x04":
        return None
    at, content_types = 0, False
    while head[at : at + 4] == b"PK\x03\x04" and len(head) >= at + 30:
        flags, method = struct.unpack_from("<HH", head, at + 6)
        size, _, name_len, extra_len = struct.unpack_from("<IIHH", head, at + 18)
        name = head[at + 30 : at + 30 + name_len]
        data = at + 30 + name_len + extra_len
        if name == b"mimetype" and method == 0:
            # ODF and EPUB: the first entry, stored, is the media type.
            match = _ODF_MIMETYPE.match(head, data, data + size)
            if match:
                return match.group(0).decode("ascii")
        content_types = content_types or name == b"[Content_Types].xml"
        for prefix, mediatype in _OOXML:
            if name.startswith(prefix):
                return mediatype
        if flags & 8 and size == 0:
            break  # the size follows the data: the next entry cannot be found
        at = data + size
    return _OOXML[0][1] if content_types else "application/zip"


_TAR = frozenset({b"ustar\0", b"ustar "})


def _ole(head: bytes) -> str | None:
    # A Compound File (Word, Excel, PowerPoint 97-2003), named as the SDK's sniffing names it.
    return "application/msword" if head[:8] == b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" else None


# -- ISO base media (MP4, QuickTime, 3GPP, HEIF, AVIF) -----------------------------------------

_AVIF = frozenset({b"avif", b"avis"})
_HEIC = frozenset({b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"hevm", b"hevs"})
_HEIF = frozenset({b"mif1", b"msf1"})
_M4A = frozenset({b"M4A ", b"M4B ", b"M4P "})


def _ftyp(head: bytes) -> str | None:
    if head[:2] != b"\0\0" or len(head) < 12:
        return None
    size = min(int.from_bytes(head[:4], "big"), len(head))
    major = head[8:12]
    brands = {major} | {head[i : i + 4] for i in range(16, size - 3, 4)}
    if major in _HEIF or major in _AVIF or major in _HEIC:
        if brands & _AVIF:
            return "image/avif"
        return "image/heic" if brands & _HEIC else "image/heif"
    if major in _M4A:
        return "audio/mp4"
    if major == b"qt  ":
        return "video/quicktime"
    return "video/mp4"


def _quicktime(head: bytes) -> str | None:
    # A QuickTime file without a file type box starts with one of these atoms; its size
    # rules out text that merely has the word at offset 4.
    return "video/quicktime" if head[0] == 0 or has_binary_bytes(head[:64]) else None


_BOXES: dict[bytes, _Matcher] = {b"ftyp": _ftyp}
_BOXES.update(dict.fromkeys((b"moov", b"mdat", b"wide", b"free", b"skip", b"pnot"), _quicktime))


# -- the binary table, by the first two bytes -------------------------------------------------

_BINARY: dict[bytes, tuple[_Matcher, ...]] = {
    b"\xff\xd8": (_jpeg,),
    b"\x89P": (_fixed(b"\x89PNG\r\n\x1a\n", "image/png"),),
    b"GI": (_gif,),
    b"BM": (_bmp,),
    b"II": (_tiff,),
    b"MM": (_tiff,),
    b"RI": (_riff,),
    b"8B": (_psd,),
    b"DD": (_dds,),
    b"\x01\xda": (_sgi,),
    b"\xc5\xd0": (_fixed(b"\xc5\xd0\xd3\xc6", "application/postscript"),),
    b"ID": (_id3,),
    b"fL": (_flac,),
    b"Og": (_ogg,),
    b"FO": (_aiff,),
    b"ca": (_fixed(b"caff\0\1", "audio/x-caf"),),
    b"wv": (_wavpack,),
    b".s": (_fixed(b".snd\0\0\0", "audio/x-au"),),
    b"\x0bw": (_ac3,),
    b"0&": (_asf,),
    b"Ex": (_tracker,),
    b"IM": (_tracker,),
    b"\x1aE": (_ebml,),
    b"\0\0": (_zero,),
    b"FL": (_flv,),
    b"FW": (_swf,),
    b"CW": (_swf,),
    b"ZW": (_swf,),
    b".R": (_realmedia,),
    b".r": (_realmedia,),
    b"YU": (_fixed(b"YUV4MPEG2 ", "video/x-yuv4mpeg"),),
    b"%P": (_fixed(b"%PDF-", "application/pdf"),),
    b"PK": (_zip,),
    b"\xd0\xcf": (_ole,),
    b"\x1f\x8b": (_fixed(b"\x1f\x8b\x08", "application/x-gzip"),),
}
for _second in range(0xE0, 0x100):
    _BINARY[bytes((0xFF, _second))] = (_mpeg_audio,)
for _kind in b"456":
    _BINARY[bytes((0x50, _kind))] = (_pnm,)  # P4, P5, P6: binary pixel data
for _version in range(6):
    _BINARY[bytes((0x0A, _version))] = (_pcx,)
# UTF-16 and UTF-32 text: its NUL bytes hide it from the text signatures, its byte order mark
# and what follows it tell it (after the MPEG audio check, whose sync FF FE also is).
_BINARY[b"\xff\xfe"] = (_mpeg_audio, lambda head: "text/plain" if unicode_text(head) else None)
_BINARY[b"\xfe\xff"] = _BINARY[b"\xff\xfe"][1:]


# -- text formats ----------------------------------------------------------------------------

#: Beginnings of text formats (the SDK's sniffing names them), longest first within each first
#: byte. They only count for text.
_TEXT_PREFIXES: tuple[tuple[bytes, str], ...] = (
    (b"<?xml", "application/xml"),
    (b"<svg ", "image/svg+xml"),
    (b"<mrml ", "text/x-mrml"),
    (b"{\\rtf", "application/rtf"),
    (b"{0}", "text/x-microdvd"),
    (b"{1}", "text/x-microdvd"),
    (b"{", "application/json"),
    (b"%!PS", "application/postscript"),
    (b"% This file was created with JabRef", "text/x-bibtex"),
    (b"%!encoding", "text/x-txt2tags"),
    (b"%!postproc", "text/x-txt2tags"),
    (b"%define ", "text/x-rpm-spec"),
    (b"#!/usr/local/bin/python", "text/x-python"),
    (b"#! /usr/local/bin/python", "text/x-python"),
    (b"#!/usr/bin/env python", "text/x-python"),
    (b"#! /usr/bin/python", "text/x-python"),
    (b"#!/usr/bin/python", "text/x-python"),
    (b"#! /bin/python", "text/x-python"),
    (b"#!/bin/python", "text/x-python"),
    (b"# -*- coding", "text/x-python"),
    (b"# download the free Google Video Player", "text/x-google-video-pointer"),
    (b"#.download.the.free.Google.Video.Player", "text/x-google-video-pointer"),
    (b"#import", "text/x-objcsrc"),
    (b"# xmcd", "text/xmcd"),
    (b"import ", "text/x-python"),
    (b"Common subdirectories: ", "text/x-patch"),
    (b"Only in ", "text/x-patch"),
    (b"Index:", "text/x-patch"),
    (b"diff ", "text/x-patch"),
    (b"***  Ins", "text/plain"),
    (b"*** ", "text/x-patch"),
    (b"--- ", "text/x-patch"),
    (b"=== ", "text/x-patch"),
    (b"strict digraph ", "text/vnd.graphviz"),
    (b"strict graph ", "text/vnd.graphviz"),
    (b"digraph ", "text/vnd.graphviz"),
    (b"graph ", "text/vnd.graphviz"),
    (b"Windows Registry Editor Version 5.00", "text/x-ms-regedit"),
    (b"BEGIN:VCALENDAR", "text/calendar"),
    (b"begin:vcalendar", "text/calendar"),
    (b"BEGIN:IMELODY", "text/x-iMelody"),
    (b"BEGIN:VCARD", "text/vcard"),
    (b"begin:vcard", "text/vcard"),
    (b"begin ", "text/x-uuencode"),
    (b"CACHE MANIFEST", "text/cache-manifest"),
    (b"[INFORMATION]", "text/x-subviewer"),
    (b"0123456789", "text/ascii"),
    (b"dn: mail=", "text/x-ldif"),
    (b"dn: cn=", "text/x-ldif"),
    (b"MIDlet-", "text/vnd.sun.j2me.app-descriptor"),
    (b"//!Mup", "text/x-mup"),
    (b"WEBVTT", "text/vtt"),
    (b"function", "text/x-matlab"),
    (b"record", "text/x-modelica"),
    (b"MARC", "text/plain"),
    (b"xsi", "text/plain"),
    (b"ID;", "text/spreadsheet"),
)
_TEXT: dict[int, tuple[tuple[bytes, str], ...]] = {}
for _prefix, _mediatype in sorted(_TEXT_PREFIXES, key=lambda p: -len(p[0])):
    _TEXT[_prefix[0]] = (*_TEXT.get(_prefix[0], ()), (_prefix, _mediatype))

_HTML = (b"<!doctype", b"<html", b"<body", b"<h1", b"<!--")
#: First bytes of the text signatures: any other text has none (checked before the whole head).
_TEXT_STARTS = frozenset(_TEXT) | {ord("<"), ord("P")}
_UTF8_BOM = b"\xef\xbb\xbf"


def _sniff_text(head: bytes) -> Signature | None:
    body = head.removeprefix(_UTF8_BOM)
    if not body or (body is head and body[0] not in _TEXT_STARTS) or has_binary_bytes(head):
        return None
    for prefix, mediatype in _TEXT.get(body[0] if body else -1, ()):
        if body.startswith(prefix):
            return Signature(mediatype, text=True)
    if body[:1] == b"<" and body[:9].lower().startswith(_HTML):
        return Signature("text/html", text=True)
    pnm = _pnm(body) if body[:1] == b"P" else None  # P1, P2, P3: pixels written as numbers
    if pnm:
        return Signature(pnm, text=True)
    return Signature("text/plain", text=True) if body is not head else None
