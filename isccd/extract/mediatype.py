"""Media type detection and the processing mode it selects, following the ISCC SDK 0.9.7.

The type is guessed twice, from the file name (the system's MIME table plus the SDK's additions)
and from the first 4096 bytes (``puremagic``, the pure-Python signature database the SDK sniffs
with), both normalized through the SDK's alias table, and the two guesses are reconciled by the
SDK's rules: prefer whichever is supported; prefer the name over a generic XML sniff; keep the
name within the OGG family; upgrade XML with an ``<svg>`` root to SVG.

Where the SDK trusts a wrong name, isccd trusts the content, so misnamed files are still coded
by what they are (the SDK would fail on them):

- a name that only says "text" (``text/*``) loses to a binary signature found in the content
  (a JPEG named ``.txt`` is an image, a PDF named ``.txt`` a PDF);
- an image, audio or video name loses to content that has no binary signature and reads as
  text (a text named ``.jpg`` is text).
"""

from __future__ import annotations

import mimetypes
import re
from functools import cache

import puremagic

from isccd.model import Mode

#: Media types with a Content-Code, and their mode (the SDK's SUPPORTED_MEDIATYPES).
SUPPORTED_MEDIATYPES: dict[str, Mode] = {
    # Text and documents
    "application/rtf": Mode.TEXT,
    "application/msword": Mode.TEXT,
    "application/pdf": Mode.TEXT,
    "application/epub+zip": Mode.TEXT,
    "text/xml": Mode.TEXT,
    "application/json": Mode.TEXT,
    "application/xhtml+xml": Mode.TEXT,
    "application/vnd.oasis.opendocument.text": Mode.TEXT,
    "text/html": Mode.TEXT,
    "text/plain": Mode.TEXT,
    "application/x-ibooks+zip": Mode.TEXT,
    "text/markdown": Mode.TEXT,
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": Mode.TEXT,
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": Mode.TEXT,
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": Mode.TEXT,
    "application/vnd.ms-powerpoint": Mode.TEXT,
    "application/vnd.ms-excel": Mode.TEXT,
    # Images
    "image/bmp": Mode.IMAGE,
    "image/gif": Mode.IMAGE,
    "image/jpeg": Mode.IMAGE,
    "image/png": Mode.IMAGE,
    "image/tiff": Mode.IMAGE,
    "image/vnd.adobe.photoshop": Mode.IMAGE,
    "application/postscript": Mode.IMAGE,
    "image/avif": Mode.IMAGE,
    "image/heic": Mode.IMAGE,
    "image/svg+xml": Mode.IMAGE,
    # Audio
    "audio/mpeg": Mode.AUDIO,
    "audio/wav": Mode.AUDIO,
    "audio/x-wav": Mode.AUDIO,
    "audio/ogg": Mode.AUDIO,
    "audio/aiff": Mode.AUDIO,
    "audio/x-aiff": Mode.AUDIO,
    "audio/x-flac": Mode.AUDIO,
    "audio/opus": Mode.AUDIO,
    "audio/x-wavpack": Mode.AUDIO,
    "audio/mp4": Mode.AUDIO,
    # Video
    "application/vnd.rn-realmedia": Mode.VIDEO,
    "video/x-dirac": Mode.VIDEO,
    "video/3gpp": Mode.VIDEO,
    "video/3gpp2": Mode.VIDEO,
    "video/x-ms-asf": Mode.VIDEO,
    "video/avi": Mode.VIDEO,
    "video/webm": Mode.VIDEO,
    "video/mpeg": Mode.VIDEO,
    "video/mp4": Mode.VIDEO,
    "video/x-m4v": Mode.VIDEO,
    "video/x-matroska": Mode.VIDEO,
    "video/ogg": Mode.VIDEO,
    "video/quicktime": Mode.VIDEO,
    "video/x-flv": Mode.VIDEO,
    "application/x-shockwave-flash": Mode.VIDEO,
    "video/h264": Mode.VIDEO,
    "video/x-ms-wmv": Mode.VIDEO,
}

#: The SDK's aliases (MEDIATYPE_NORM).
ALIASES: dict[str, str] = {
    "audio/x-aiff": "audio/aiff",
    "audio/x-wav": "audio/wav",
    "audio/x-m4a": "audio/mp4",
    "image/x-ms-bmp": "image/bmp",
    "video/x-msvideo": "video/avi",
    "application/ogg": "video/ogg",
    "application/xml": "text/xml",
    "application/vnd.ms-asf": "video/x-ms-asf",
    "application/vnd.adobe.flash.movie": "application/x-shockwave-flash",
}

#: Extensions the SDK adds to the system table.
_EXTRA_EXTENSIONS = (
    ("text/markdown", ".md"),
    ("text/markdown", ".markdown"),
    ("application/x-mobipocket-ebook", ".mobi"),
    ("application/x-sqlite3", ".sqlite"),
    ("video/mp4", ".f4v"),
    ("video/h264", ".h264"),
    ("audio/x-wavpack", ".wv"),
    ("audio/mp4", ".m4a"),
    ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", ".docx"),
    ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", ".xlsx"),
    ("image/heic", ".heic"),
    ("image/avif", ".avif"),
)

#: Sniffed types that yield to a supported type from the name.
_GENERIC_SNIFF = frozenset({"text/xml", "application/xml"})

#: Text-like types whose sniff says nothing about a binary format.
_TEXTUAL_SNIFF = frozenset({"text/xml", "application/xml", "application/json"})

_FIRST_ELEMENT = re.compile(rb"<([a-zA-Z][\w.-]*)")
_XML_COMMENT = re.compile(rb"<!--.*?-->", re.DOTALL)
_SVG_XMLNS = (b'xmlns="http://www.w3.org/2000/svg"', b"xmlns='http://www.w3.org/2000/svg'")

OCTET_STREAM = "application/octet-stream"


@cache
def _name_table() -> mimetypes.MimeTypes:
    """The system MIME table (as :func:`mimetypes.guess_type` reads it) plus the SDK's entries.

    Built on first use and kept per process; the global :mod:`mimetypes` state is not touched.
    """
    table = mimetypes.MimeTypes()
    for known in mimetypes.knownfiles:
        try:
            table.read(known)
        except OSError:
            continue
    for mediatype, extension in _EXTRA_EXTENSIONS:
        table.add_type(mediatype, extension)
    return table


def mediatype_from_name(name: str) -> str | None:
    """The media type a file name suggests; ``None`` if unknown or compressed (``.svgz``)."""
    mediatype, encoding = _name_table().guess_type(name, strict=True)
    return None if encoding is not None else mediatype


def mediatype_from_data(head: bytes) -> str | None:
    """The media type the first bytes' signature suggests, or ``None``."""
    if not head:
        return None
    try:
        found = puremagic.from_string(head, mime=True)
    except (puremagic.PureError, ValueError):  # no signature matched
        return None
    return found or None


def mediatype_normalize(mediatype: str | None) -> str | None:
    """Map an alias to the SDK's preferred name (``image/x-ms-bmp`` -> ``image/bmp``)."""
    return None if mediatype is None else ALIASES.get(mediatype, mediatype)


def mediatype_supported(mediatype: str | None) -> bool:
    """True when the media type is in the SDK's table of supported types."""
    return mediatype_normalize(mediatype) in SUPPORTED_MEDIATYPES


def mediatype_to_mode(mediatype: str) -> Mode | None:
    """The processing mode for a media type, or ``None`` when it has no Content-Code.

    Types not in the table get the mode named by their top-level type (``text/x-python`` is
    text, ``image/webp`` is an image), as the SDK does.
    """
    mediatype = mediatype.split(";", maxsplit=1)[0].strip()
    if mediatype in SUPPORTED_MEDIATYPES:
        return SUPPORTED_MEDIATYPES[mediatype]
    top = mediatype.split("/")[0]
    return Mode(top) if top in {"text", "image", "audio", "video"} else None


def mediatype_guess(head: bytes, name: str | None = None) -> str:
    """The media type of a file from its first bytes and its name.

    Args:
        head: The first bytes of the file (4096 are enough).
        name: The file name, if known.

    Returns:
        A media type; ``application/octet-stream`` when nothing is recognized.
    """
    by_name = mediatype_normalize(mediatype_from_name(name)) if name else None
    by_data = mediatype_normalize(mediatype_from_data(head))

    if by_name and by_data and by_name != by_data:
        if (mediatype_supported(by_name) and not mediatype_supported(by_data)) or (
            mediatype_supported(by_name) and by_data in _GENERIC_SNIFF
        ):
            chosen: str | None = by_name
        elif mediatype_supported(by_data) and not mediatype_supported(by_name):
            chosen = by_data
        else:
            chosen = by_name
        if "ogg" in by_name and "ogg" in by_data:
            # Sniffing cannot tell OGG audio from OGG video; the name can.
            chosen = by_name
    else:
        chosen = by_name or by_data

    chosen = _trust_content(chosen, by_name, by_data, head)

    if chosen in _GENERIC_SNIFF and head and _has_svg_root(head):
        chosen = "image/svg+xml"
    return chosen or OCTET_STREAM


def _trust_content(
    chosen: str | None, by_name: str | None, by_data: str | None, head: bytes
) -> str | None:
    """Correct the SDK's choice where the name contradicts what the content clearly is."""
    if chosen is None or chosen != by_name:
        return chosen
    if (
        chosen.startswith("text/")
        and by_data is not None
        and not by_data.startswith("text/")
        and by_data not in _TEXTUAL_SNIFF
        and mediatype_to_mode(by_data) is not None
    ):
        return by_data
    if (
        mediatype_to_mode(chosen) in {Mode.IMAGE, Mode.AUDIO, Mode.VIDEO}
        and by_data in {None, "text/plain"}
        and looks_like_text(head)
    ):
        return "text/plain"
    return chosen


_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")
# Control characters that do not occur in text: everything below 0x20 but TAB, LF, VT, FF, CR
# and ESC, plus DEL.
_BINARY_BYTES = frozenset(range(0x20)) - {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1B} | {0x7F}


def looks_like_text(head: bytes) -> bool:
    """True when the bytes are plausibly text: a Unicode BOM, or clean UTF-8.

    Only used to overrule a name that claims a binary format for content without any binary
    signature, so it is deliberately strict (no guessing of 8-bit encodings here).
    """
    if not head:
        return False
    if head.startswith(_BOMS):
        return True
    if any(b in _BINARY_BYTES for b in head):
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by the end of the sample is still text.
        return exc.start >= len(head) - 3 and exc.reason == "unexpected end of data"
    return True


def _has_svg_root(head: bytes) -> bool:
    cleaned = _XML_COMMENT.sub(b"", head)
    match = _FIRST_ELEMENT.search(cleaned)
    return (
        match is not None
        and match.group(1) == b"svg"
        and any(xmlns in cleaned for xmlns in _SVG_XMLNS)
    )
