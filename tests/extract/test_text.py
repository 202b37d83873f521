"""Text from plain files in any encoding and from documents; markup never reaches the text."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.errors import ExtractionError, NoContentError
from isccd.extract.source import open_source
from isccd.extract.text import decode_text, document_extractor_available, extract_text
from tests.extract.media import PROSE, make_documents, make_pdf

needs_extractors = pytest.mark.skipif(
    not document_extractor_available(), reason="isccd[extract] is not installed"
)

FRENCH = "Le café de la gare est très fréquenté; à côté, la boulangerie ouvre à l'aube. " * 4


_NATIVE = {"utf-8-sig": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}


@given(st.text(max_size=300), st.sampled_from(sorted(_NATIVE)))
@pytest.mark.slow
def test_a_bom_decides_the_encoding(text: str, encoding: str) -> None:
    # Lone surrogates cannot be encoded by any UTF: leave them out. A UTF-16 text starting
    # with U+0000 looks exactly like a UTF-32 BOM; real text does not start with NUL.
    text = text.encode("utf-8", "ignore").decode("utf-8").lstrip("\x00")
    decoded, used, guessed = decode_text(text.encode(encoding))
    assert (decoded, used, guessed) == (text, _NATIVE[encoding], False)


@given(st.text(max_size=300))
def test_utf8_without_bom(text: str) -> None:
    data = text.encode("utf-8", "ignore")
    assert decode_text(data)[:2] == (data.decode("utf-8"), "utf-8")


def test_a_character_cut_by_the_read_limit_is_dropped() -> None:
    data = "naïve €".encode()
    assert decode_text(data[:-1])[0] == "naïve "


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        (FRENCH, "cp1252"),
        (FRENCH, "latin-1"),
        ("Příliš žluťoučký kůň úpěl ďábelské ódy. " * 6, "cp1250"),
        ("Съешь же ещё этих мягких французских булок, да выпей чаю. " * 3, "cp1251"),
        ("Съешь же ещё этих мягких французских булок, да выпей чаю. " * 3, "koi8_r"),
        (
            "いろはにほへと ちりぬるを わかよたれそ つねならむ 日本語のテキストです。" * 3,
            "shift_jis",
        ),
        ("我能吞下玻璃而不伤身体。这是一个中文文本的例子。" * 3, "gb18030"),
    ],
)
def test_legacy_8bit_text_is_detected(text: str, encoding: str) -> None:
    decoded, used, guessed = decode_text(text.encode(encoding))
    assert guessed
    assert decoded == text, used


def test_binary_is_not_text() -> None:
    with pytest.raises(ExtractionError, match="not text"):
        decode_text(bytes(range(256)) * 20)


def test_a_bom_followed_by_something_else_is_a_clean_error() -> None:
    for data in (b"\xfe\xff\xd8\x00\x00\x41", b"\xff\xfe\x00\xdc\x41\x00"):  # lone surrogates
        with pytest.raises(ExtractionError, match="byte order mark"):
            decode_text(data)


def test_plain_text_is_capped(tmp_path: Path) -> None:
    path = tmp_path / "long.txt"
    path.write_text("abcdefghij" * 1000)
    with open_source(str(path)) as src:
        content = extract_text(src, "text/plain", max_chars=2500)
    assert content.text == ("abcdefghij" * 250)
    assert content.truncated


@needs_extractors
@pytest.mark.slow
def test_documents_give_their_text_without_markup(tmp_path: Path) -> None:
    docs = make_documents(tmp_path)
    types = {
        "letter.docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "notes.odt": "application/vnd.oasis.opendocument.text",
        "table.xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "slides.pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "page.html": "text/html",
        "data.xml": "text/xml",
        "story.rtf": "application/rtf",
        "report.pdf": "application/pdf",
    }
    for name, mediatype in types.items():
        with open_source(str(docs[name])) as src:
            content = extract_text(src, mediatype)
        words = " ".join(content.text.split())
        assert "quick brown fox" in words or "quick" in words.split(), (name, words[:200])
        for markup in ("<p>", "<body", "\\rtf", "var hidden", "color: red", "w:document"):
            assert markup not in content.text, (name, markup)
    with open_source(str(docs["letter.docx"])) as src:
        assert extract_text(src, types["letter.docx"]).meta.name == "A Letter"
    with open_source(str(docs["report.pdf"])) as src:
        assert extract_text(src, "application/pdf").meta.name == "Annual Report"


@needs_extractors
def test_password_protected_pdf_has_no_text(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "locked.pdf", PROSE, password="secret")
    with open_source(str(path)) as src, pytest.raises(NoContentError, match="password"):
        extract_text(src, "application/pdf")


@needs_extractors
@pytest.mark.parametrize("cut", [0.2, 0.6])
def test_broken_pdf_is_a_clean_error(tmp_path: Path, cut: float) -> None:
    good = make_pdf(tmp_path / "good.pdf", PROSE * 5).read_bytes()
    path = tmp_path / "broken.pdf"
    path.write_bytes(good[: int(len(good) * cut)])
    with open_source(str(path)) as src, pytest.raises(ExtractionError):
        extract_text(src, "application/pdf")


@pytest.mark.slow
@needs_extractors
def test_corrupt_document_is_a_clean_error(tmp_path: Path) -> None:
    docx = make_documents(tmp_path)["letter.docx"]
    docx.write_bytes(docx.read_bytes()[:700])
    with open_source(str(docx)) as src, pytest.raises(ExtractionError, match="cannot be parsed"):
        extract_text(src, "application/vnd.openxmlformats-officedocument.wordprocessingml.document")


def test_utf16_file_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "u16.txt"
    path.write_bytes(codecs.BOM_UTF16_LE + FRENCH.encode("utf-16-le"))
    with open_source(str(path)) as src:
        content = extract_text(src, "text/plain")
    assert content.text == FRENCH
    assert content.extractor == "text/utf-16-le"
