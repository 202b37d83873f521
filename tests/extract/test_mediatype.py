"""Media type detection: the SDK's answers, except where the SDK trusts a wrong file name."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from isccd.extract.mediatype import looks_like_text, mediatype_guess, mediatype_to_mode
from isccd.model import Mode
from tests.extract.media import PROSE, jpeg_bytes, make_images, scene
from tests.extract.sdk import needs_sdk, run_sdk

NAMES = [
    "a.txt", "a.md", "a.html", "a.xml", "a.json", "a.pdf", "a.docx", "a.xlsx", "a.pptx",
    "a.odt", "a.epub", "a.jpg", "a.png", "a.gif", "a.webp", "a.bmp", "a.tif", "a.psd",
    "a.heic", "a.svg", "a.svgz", "a.mp3", "a.wav", "a.ogg", "a.opus", "a.flac", "a.m4a",
    "a.mp4", "a.mkv", "a.webm", "a.mov", "a.avi", "a.sqlite", "a.mobi", "a.py", "a.bin",
    "noext", "",
]  # fmt: skip


def _heads(tmp_path: Path) -> dict[str, bytes]:
    images = make_images(tmp_path)
    heads = {name: path.read_bytes()[:4096] for name, path in images.items()}
    heads.update(
        {
            "text": PROSE.encode(),
            "html": b"<!DOCTYPE html><html><body><p>hi</p></body></html>",
            "xml": b'<?xml version="1.0"?><root><a>1</a></root>',
            "svg": b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"></svg>',
            "pdf": b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj",
            "zip": b"PK\x03\x04" + bytes(200),
            "ogg": b"OggS\x00\x02" + bytes(100),
            "empty": b"",
            "binary": bytes(range(256)),
        }
    )
    return heads


@needs_sdk
def test_agrees_with_the_sdk(tmp_path: Path) -> None:
    heads = _heads(tmp_path)
    cases = [(h, n) for h in sorted(heads) for n in NAMES]
    jobs = [{"kind": "mediatype", "head": heads[h].hex(), "name": n} for h, n in cases]
    expected = run_sdk(jobs, tmp_path)
    differ = []
    for (head, name), ref in zip(cases, expected, strict=True):
        ours = mediatype_guess(heads[head], name)
        if ours != ref.get("ok"):
            differ.append((head, name, ours, ref))
    # Only where the name contradicts content with a clear signature (or clear text) do we
    # follow the content; the SDK follows the name there.
    for head, name, ours, ref in differ:
        assert ref["ok"] == mediatype_guess(b"", name), (head, name, ours, ref)  # the name's
        if head == "text":
            assert ours == "text/plain", (head, name, ours)
        else:
            assert mediatype_guess(heads[head]) == ours, (head, name, ours, ref)
    assert len(differ) < len(cases) // 4


def test_misnamed_files_are_what_their_content_is() -> None:
    jpeg = jpeg_bytes(scene())[:4096]
    assert mediatype_guess(jpeg, "photo.txt") == "image/jpeg"
    assert mediatype_guess(PROSE.encode(), "notes.jpg") == "text/plain"
    assert mediatype_guess(b"%PDF-1.4\n", "report.txt") == "application/pdf"
    # A correct name keeps the SDK's answer.
    assert mediatype_guess(jpeg, "photo.jpg") == "image/jpeg"
    assert mediatype_guess(PROSE.encode(), "notes.md") == "text/markdown"


def test_modes() -> None:
    assert mediatype_to_mode("image/webp") is Mode.IMAGE  # by top-level type, as the SDK
    assert mediatype_to_mode("text/x-python") is Mode.TEXT
    assert mediatype_to_mode("application/pdf") is Mode.TEXT
    assert mediatype_to_mode("video/ogg") is Mode.VIDEO
    assert mediatype_to_mode("application/x-sqlite3") is None
    assert mediatype_to_mode("application/octet-stream") is None
    assert mediatype_guess(b"", None) == "application/octet-stream"


@given(st.binary(max_size=600))
def test_guessing_never_fails(head: bytes) -> None:
    assert "/" in mediatype_guess(head, "x.jpg")
    assert isinstance(looks_like_text(head), bool)
