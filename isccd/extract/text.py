"""Text from plain-text files and documents, for the Text-Code.

- Plain text (``text/*`` other than markup, and JSON) is decoded here: a Unicode BOM decides
  (UTF-8, UTF-16, UTF-32), else strict UTF-8, else the legacy 8-bit encoding
  ``charset-normalizer`` finds most plausible. Content that fits no encoding is not text.
- Documents (PDF, DOCX, ODT, EPUB, HTML, XML, RTF, DOC, XLSX, PPTX, ...) go through the ISCC
  project's native Apache Tika build ``iscc-tika`` (no Java), and PDF through ``pypdfium2``, as
  the ISCC SDK does. Both are optional (``pip install 'isccd[extract]'``); without them documents
  are skipped with that advice. Markup never reaches the text.

Extraction stops at :data:`MAX_CHARS` characters, the SDK's fixed cap, so the same file gives the
same text everywhere. The text returned is raw; the caller applies ``text_clean``.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from isccd.errors import ExtractionError, NoContentError, ToolMissingError
from isccd.extract.meta import Metadata, pick
from isccd.extract.source import SourceFile, read_limited
from isccd.extract.tools import MISSING, tool_input

#: The SDK's cap on extracted characters (``TEXT_EXTRACT_MAX_LENGTH``).
MAX_CHARS = 10_000_000

#: The profile components of text: the document extractor, the PDF extractor, and the
#: detector of legacy encodings (distribution names in :data:`_DISTRIBUTIONS`).
TIKA = "tika"
PDFIUM = "pdfium"
CHARSET = "charset-normalizer"
_DISTRIBUTIONS = {TIKA: "iscc-tika", PDFIUM: "pypdfium2", CHARSET: "charset-normalizer"}

#: The SDK's TEXT_META_MAP for the fields the Meta-Code uses, in its order of preference.
DOCUMENT_META_FIELDS: tuple[tuple[str, str], ...] = (
    ("iscc_name", "name"),
    ("iscc_description", "description"),
    ("iscc_meta", "meta"),
    ("custom:iscc_name", "name"),
    ("custom:iscc_description", "description"),
    ("custom:iscc_meta", "meta"),
    ("pdf:docinfo:title", "name"),
    ("pdf:docinfo:subject", "description"),
    ("dc:title", "name"),
    ("dc:description", "description"),
)

#: The legacy encodings plain text is guessed among. Left free, charset-normalizer prefers
#: rare DOS and Mac code pages for ordinary Western text (cp775 for French, measured with
#: 3.5.2); these are the code pages text files are actually written in.
LEGACY_ENCODINGS = (
    "cp1252",
    "cp1250",
    "cp1251",
    "cp1253",
    "cp1254",
    "cp1255",
    "cp1256",
    "cp1257",
    "cp1258",
    "koi8_r",
    "koi8_u",
    "shift_jis",
    "cp932",
    "euc_jp",
    "gb18030",
    "big5",
    "euc_kr",
)

_MARKUP = frozenset({"text/html", "text/xml", "application/xhtml+xml", "text/rtf"})
_MISSING_EXTRA = "documents need the optional extractors: pip install 'isccd[extract]'"

# BOMs, longest first: the UTF-32-LE BOM begins with the UTF-16-LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
#: The first bytes of the byte order marks: text starting otherwise has none.
_BOM_LEADS = frozenset(bom[:1] for bom, _ in _BOMS)
#: What plain text says of itself (a frozen value every such text shares).
_NOTHING = Metadata()


@dataclass(frozen=True, slots=True)
class TextContent:
    """Text extracted for the Text-Code.

    Attributes:
        text: The extracted text, at most ``max_chars`` characters, not yet cleaned.
        truncated: True when the cap cut the text.
        meta: Title and description from the document's metadata.
        meta_problem: Why the document's metadata could not be read, if so.
        extractor: What extracted the text, with versions (``tika/0.6.0``), for people.
        profile: The components the text depends on, as ``name/version`` parts
            (``pdfium/5.1``; empty for text decoded by its BOM or as strict UTF-8).
    """

    text: str
    truncated: bool
    meta: Metadata
    meta_problem: str | None
    extractor: str
    profile: str = ""


def is_plain_text(mediatype: str) -> bool:
    """True for media types decoded as plain text rather than parsed as documents."""
    return mediatype == "application/json" or (
        mediatype.startswith("text/") and mediatype not in _MARKUP
    )


def extract_text(
    src: SourceFile,
    mediatype: str,
    *,
    max_chars: int = MAX_CHARS,
    read_meta: bool = True,
    temp_dir: str | None = None,
) -> TextContent:
    """The text of a plain-text file or document.

    Args:
        src: The open file.
        mediatype: Its detected media type.
        max_chars: Stop extracting after this many characters.
        read_meta: Also read the document's title and description.
        temp_dir: Parent of the private directory the document extractor reads from.

    Returns:
        The text, and what the document says about itself.

    Raises:
        ToolMissingError: A document, but the optional extractors are not installed.
        NoContentError: An encrypted document.
        ExtractionError: The content is not text in any encoding, or the document is corrupt.
    """
    if is_plain_text(mediatype):
        # UTF-8 needs at most 4 bytes per character (UTF-32 exactly 4, plus a BOM).
        data = read_limited(src, 4 * max_chars + 4)
        text, encoding, detected = decode_text(data)
        truncated = len(text) > max_chars or len(data) < src.size
        # Only a guessed encoding depends on the detector (and its version).
        profile = _component(CHARSET) if detected else ""
        extractor = f"{profile} ({encoding})" if detected else f"text/{encoding}"
        return TextContent(text[:max_chars], truncated, _NOTHING, None, extractor, profile)
    if mediatype == "application/pdf":
        return _extract_pdf(src, max_chars=max_chars, read_meta=read_meta, temp_dir=temp_dir)
    with tool_input(src.fd, src.path, temp_dir) as inp:
        text, meta_values = _tika_extract(inp.path, max_chars)
    meta = pick(DOCUMENT_META_FIELDS, meta_values) if read_meta else Metadata()
    tika = _component(TIKA)
    return TextContent(text[:max_chars], len(text) >= max_chars, meta, None, tika, tika)


def decode_text(data: bytes) -> tuple[str, str, bool]:
    """Decode plain text, detecting its encoding.

    A multi-byte character cut at the end of ``data`` (by a read limit) is dropped.

    Returns:
        The text (without BOM), the encoding used, and whether it was guessed by the charset
        detector (rather than known from a BOM or strict UTF-8).

    Raises:
        ExtractionError: No encoding fits (the content is binary), or the text does not decode
            in the encoding its byte order mark names.
    """
    for bom, encoding in _BOMS if data[:1] in _BOM_LEADS else ():
        if data.startswith(bom):
            try:
                return _decode_prefix(data[len(bom) :], encoding), encoding, False
            except UnicodeDecodeError as exc:
                raise ExtractionError(f"not {encoding} text after its byte order mark") from exc
    try:
        return _decode_prefix(data, "utf-8"), "utf-8", False
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes  # noqa: PLC0415 - slow import, rarely needed

    best = from_bytes(data, cp_isolation=list(LEGACY_ENCODINGS)).best()
    if best is None:
        raise ExtractionError("content is not text in any known character encoding")
    return str(best), best.encoding, True


def _decode_prefix(data: bytes, encoding: str) -> str:
    """Decode strictly, tolerating only an incomplete character at the very end."""
    try:
        return data.decode(encoding)  # the common case, whole: no incremental decoder needed
    except UnicodeDecodeError:
        decoder = codecs.getincrementaldecoder(encoding)(errors="strict")
        return decoder.decode(data, final=False)


def _tika_extract(path: str, max_chars: int) -> tuple[str, dict[str, Any]]:
    extractor = _tika(max_chars)
    try:
        text, values = extractor.extract_file_to_string(path)
    except TypeError as exc:
        # iscc-tika reports every parse failure as a TypeError wrapping Tika's exception.
        raise ExtractionError(f"document cannot be parsed: {_tika_reason(exc)}") from exc
    return str(text), dict(values)


def _extract_pdf(
    src: SourceFile, *, max_chars: int, read_meta: bool, temp_dir: str | None
) -> TextContent:
    pdfium = _pdfium()
    pages: list[str] = []
    count = 0
    with src.reader() as fileobj:
        try:
            doc = pdfium.PdfDocument(fileobj)
        except pdfium.PdfiumError as exc:
            if getattr(exc, "err_code", None) == _PDF_PASSWORD_ERROR:
                raise NoContentError("PDF is password-protected: no text to extract") from exc
            raise ExtractionError(f"PDF cannot be parsed: {exc}") from exc
        try:
            for page in doc:
                textpage = page.get_textpage()
                text = str(textpage.get_text_bounded())
                textpage.close()
                page.close()
                pages.append(text)
                count += len(text) + 1
                if count > max_chars:
                    break
        except pdfium.PdfiumError as exc:
            raise ExtractionError(f"PDF page cannot be read: {exc}") from exc
        finally:
            doc.close()
    text = "\n".join(pages)
    meta, problem = Metadata(), None
    if read_meta:
        try:
            meta = extract_text_metadata(src, "application/pdf", temp_dir=temp_dir)
        except (ToolMissingError, ExtractionError) as exc:
            problem = f"PDF metadata not read: {exc}"
    # The text is pdfium's alone; the metadata read by Tika is the Meta-Code's concern.
    profile = _component(PDFIUM)
    extractor = profile
    if read_meta and problem is None:
        extractor += f" {_component(TIKA)}"
    truncated = len(text) > max_chars
    return TextContent(text[:max_chars], truncated, meta, problem, extractor, profile)


def extract_text_metadata(
    src: SourceFile, mediatype: str, *, temp_dir: str | None = None
) -> Metadata:
    """A document's title and description, without extracting its text.

    Plain text has no embedded metadata: the result is empty.

    Raises:
        ToolMissingError: The optional document extractor is not installed.
        ExtractionError: The document cannot be parsed.
    """
    if is_plain_text(mediatype):
        return Metadata()
    with tool_input(src.fd, src.path, temp_dir) as inp:
        return pick(DOCUMENT_META_FIELDS, _tika_metadata(inp.path))


def metadata_source(mediatype: str) -> str:
    """The profile component a document's metadata is read with (``tika/0.6.0``, or
    ``tika/missing``); empty for plain text, which has none."""
    return "" if is_plain_text(mediatype) else _component(TIKA)


def _tika_metadata(path: str) -> dict[str, Any]:
    try:
        values = _tika(MAX_CHARS).extract_file_metadata(path)
    except TypeError as exc:
        raise ExtractionError(_tika_reason(exc)) from exc
    return dict(values)


_PDF_PASSWORD_ERROR = 4  # FPDF_ERR_PASSWORD
_JAVA_ADDRESS = re.compile(r"@[0-9a-f]{4,16}\b")


@cache
def _tika(max_chars: int) -> Any:
    try:
        import iscc_tika  # noqa: PLC0415 - optional dependency, imported on first use
    except ImportError as exc:
        raise ToolMissingError(_MISSING_EXTRA, TIKA) from exc
    return iscc_tika.Extractor().set_extract_string_max_length(max_chars)


def _pdfium() -> Any:
    try:
        import pypdfium2  # noqa: PLC0415 - optional dependency, imported on first use
    except ImportError as exc:
        raise ToolMissingError(_MISSING_EXTRA, PDFIUM) from exc
    return pypdfium2


def _tika_reason(exc: BaseException) -> str:
    """Tika's message without its wrapper and Java object addresses (they differ per run)."""
    text = str(exc)
    if "TIKA-198" in text:
        text = text.rsplit("TIKA-198: ", maxsplit=1)[-1].rstrip('")')
    return _JAVA_ADDRESS.sub("", text)


@cache
def component_versions() -> dict[str, str]:
    """The versions of :data:`TIKA`, :data:`PDFIUM` and :data:`CHARSET` as installed when first
    asked in this process (:data:`~isccd.extract.tools.MISSING` for one that is not). A library
    upgraded on disk takes effect at a restart."""
    # Imported here: importlib.metadata (and the email parser it loads) costs every process
    # that imports the text extraction about 30 ms, and most never ask for a version.
    from importlib import metadata as importlib_metadata  # noqa: PLC0415

    versions = {}
    for component, distribution in _DISTRIBUTIONS.items():
        try:
            versions[component] = importlib_metadata.version(distribution)
        except importlib_metadata.PackageNotFoundError:
            versions[component] = MISSING
    return versions


def _component(component: str) -> str:
    """``name/version`` of one component, as profiles name it."""
    return f"{component}/{component_versions()[component]}"


def document_extractor_available() -> bool:
    """True when the optional document extractors are installed."""
    try:
        _tika(MAX_CHARS)
        _pdfium()
    except ToolMissingError:
        return False
    return True
