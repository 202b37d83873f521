"""Media type detection and the processing mode it selects, following the ISCC SDK 0.9.7.

The type is guessed twice, from the file name (the system's MIME table plus the SDK's additions)
and from the first 4096 bytes (:mod:`isccd.extract.signatures`: a compact table of strong
signatures that names formats as ``puremagic``, the database the SDK sniffs with, does), both
normalized through the SDK's alias table, and the two guesses are reconciled by the SDK's rules:
prefer whichever is supported; prefer the name over a generic XML sniff; keep the name within
the Ogg family; upgrade XML with an ``<svg>`` root to SVG.

The SDK's sniffing also takes weak evidence for a format (two bytes, a footer, a ``{``); the
signature table does not, so a weak guess never overrides a name or gives a random binary a
decoder. Where the SDK trusts a wrong name, isccd trusts the content, so misnamed files are
still coded by what they are (the SDK would fail on them):

- a name that only says "text" (``text/*``) loses to the signature of a binary format found in
  the content (a JPEG named ``.txt`` is an image, a PDF named ``.txt`` a PDF);
- an image, audio or video name loses to content that has no binary signature and reads as
  text (a text named ``.jpg`` is text, an HTML page named ``.mp3`` is HTML): a text file is never
  sent to an image, audio or video decoder.

:func:`mediatype_detect` also says whether the content decided (``from_content``): when such a
file then cannot be decoded, the guess was wrong and the file is coded as generic data.
"""

from __future__ import annotations

import mimetypes
import posixpath
import re
from dataclasses import dataclass
from functools import cache, lru_cache

from isccd.extract.signatures import Signature, has_binary_bytes, sniff, unicode_text
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

_FIRST_ELEMENT = re.compile(rb"<([a-zA-Z][\w.-]*)")
_XML_COMMENT = re.compile(rb"<!--.*?-->", re.DOTALL)
_SVG_XMLNS = (b'xmlns="http://www.w3.org/2000/svg"', b"xmlns='http://www.w3.org/2000/svg'")

OCTET_STREAM = "application/octet-stream"

_DECODED_MODES = frozenset({Mode.IMAGE, Mode.AUDIO, Mode.VIDEO})

#: Image formats that are text: text content does not contradict their names.
_TEXT_BASED = frozenset({"image/svg+xml", "application/postscript"})


@dataclass(frozen=True, slots=True)
class MediaType:
    """A file's media type and what decided it.

    Attributes:
        mediatype: The media type, ``application/octet-stream`` when nothing is recognized.
        from_content: The content decided it against the name, or without one (the name gave
            no type, an unsupported one, or one the content contradicts). A content extractor
            that then fails means the guess was wrong, not that the file is broken.
    """

    mediatype: str
    from_content: bool


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


def _normalized_from_name(name: str) -> str | None:
    """``mediatype_normalize(mediatype_from_name(name))``, by extension where only the
    extension can matter: a name without a URL scheme (no ``:``) whose extension neither
    stands for others (``.tgz``) nor names a compression (``.gz``) has the type of any other
    name with that extension.

    A backup's name (``.bak``, ``.old``, ``~``: the system table's ``application/x-trash``)
    says what the file was kept for, not what it holds: it has the type of the name it is a
    backup of (``notes.txt.bak`` is text), and none when that name has no type, so that the
    content decides.
    """
    mediatype = _normalized_of_name(name)
    if mediatype not in _BACKUP_TYPES:
        return mediatype
    original = name[:-1] if name.endswith("~") else posixpath.splitext(name)[0]
    found = _normalized_of_name(original) if posixpath.splitext(original)[1] else None
    return None if found in _BACKUP_TYPES else found


#: What the system table calls a backup copy (``.bak``, ``.old``, ``.sik``, ``~``, ``%``).
_BACKUP_TYPES = frozenset({"application/x-trash"})


def _normalized_of_name(name: str) -> str | None:
    if ":" not in name:
        extension = posixpath.splitext(name)[1]
        table = _name_table()
        if extension not in table.encodings_map and extension.lower() not in table.suffix_map:
            return _normalized_of_extension(extension)
    return mediatype_normalize(mediatype_from_name(name))


@lru_cache(maxsize=1024)
def _normalized_of_extension(extension: str) -> str | None:
    # Asked of the table with a stand-in stem, so that the table's own rules decide.
    return mediatype_normalize(mediatype_from_name("x" + extension))


def mediatype_from_data(head: bytes) -> str | None:
    """The media type the first bytes' signature clearly shows, or ``None``."""
    found = sniff(head)
    return found.mediatype if found else None


def mediatype_normalize(mediatype: str | None) -> str | None:
    """Map an alias to the SDK's preferred name (``image/x-ms-bmp`` -> ``image/bmp``)."""
    return None if mediatype is None else ALIASES.get(mediatype, mediatype)


def mediatype_supported(mediatype: str | None) -> bool:
    """True when the media type is in the SDK's table of supported types."""
    return mediatype_normalize(mediatype) in SUPPORTED_MEDIATYPES


@lru_cache(maxsize=256)  # a few types recur for every file
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
    """The media type of a file from its first bytes and its name (see :func:`mediatype_detect`).

    Returns:
        A media type; ``application/octet-stream`` when nothing is recognized.
    """
    return mediatype_detect(head, name).mediatype


def mediatype_detect(head: bytes, name: str | None = None) -> MediaType:
    """The media type of a file from its first bytes and its name, and whether the content
    decided it.

    Args:
        head: The first bytes of the file (4096 are enough).
        name: The file name, if known.
    """
    by_name = _normalized_from_name(name) if name else None
    signature = sniff(head)
    if signature is None:
        named = _named_alone(by_name)
        if named is not None:
            return named
    by_data = mediatype_normalize(signature.mediatype) if signature else None

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

    if chosen is not None and chosen == by_name != by_data:
        chosen = _trust_content(chosen, signature, by_data, head)

    if chosen in _GENERIC_SNIFF and head and _has_svg_root(head):
        chosen = "image/svg+xml"
    return MediaType(chosen or OCTET_STREAM, chosen is not None and chosen != by_name)


@lru_cache(maxsize=256)
def _named_alone(by_name: str | None) -> MediaType | None:
    """What :func:`mediatype_detect` decides for content without a signature from the type its
    name gives alone, when the content's bytes cannot change that (``None`` when they can: a
    name claiming an image, audio or video format, checked for text, or an XML type, checked
    for an SVG root). Decided once per type: most files' content shows no signature."""
    if by_name is None:
        return MediaType(OCTET_STREAM, False)
    if by_name in _GENERIC_SNIFF:
        return None
    if mediatype_to_mode(by_name) in _DECODED_MODES and by_name not in _TEXT_BASED:
        return None
    return MediaType(by_name, False)


def _trust_content(
    chosen: str, signature: Signature | None, by_data: str | None, head: bytes
) -> str:
    """Correct the SDK's choice of the name where it contradicts what the content clearly is."""
    mode = mediatype_to_mode(chosen)
    if (
        mode is Mode.TEXT
        and chosen.startswith("text/")
        and signature is not None
        and not signature.text
        and by_data is not None
        and mediatype_to_mode(by_data) is not None
    ):
        return by_data
    if mode in _DECODED_MODES and chosen not in _TEXT_BASED and looks_like_text(head):
        # Text, or a text format (HTML, JSON, an SVG), whatever the name says.
        return by_data or "text/plain"
    return chosen


_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


def looks_like_text(head: bytes) -> bool:
    """True when the bytes are plausibly text: a Unicode BOM and text in its encoding, or clean
    UTF-8.

    Only used to overrule a name that claims a binary format for content without any binary
    signature, so it is deliberately strict (no guessing of 8-bit encodings here).
    """
    if not head:
        return False
    if head.startswith(_BOMS):
        return unicode_text(head)
    if has_binary_bytes(head):
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
