"""Media type detection: the SDK's decisions on real files, its rules for name against content,
and none of its weak guesses (a text is never sent to an audio decoder, a random binary never
to any decoder)."""

from __future__ import annotations

import random
from pathlib import Path

import puremagic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.extract import mediatype as mediatype_module
from isccd.extract.mediatype import (
    SUPPORTED_MEDIATYPES,
    looks_like_text,
    mediatype_detect,
    mediatype_from_data,
    mediatype_from_name,
    mediatype_guess,
    mediatype_normalize,
    mediatype_to_mode,
)
from isccd.extract.signatures import has_binary_bytes
from isccd.model import Mode
from tests.extract.media import PROSE, jpeg_bytes, make_images, make_samples, scene
from tests.extract.sdk import needs_sdk, run_sdk

NAMES = [
    "a.txt", "a.md", "a.html", "a.xml", "a.json", "a.pdf", "a.docx", "a.xlsx", "a.pptx",
    "a.odt", "a.epub", "a.jpg", "a.png", "a.gif", "a.webp", "a.bmp", "a.tif", "a.psd",
    "a.heic", "a.svg", "a.svgz", "a.mp3", "a.wav", "a.ogg", "a.opus", "a.flac", "a.m4a",
    "a.mp4", "a.mkv", "a.webm", "a.mov", "a.avi", "a.sqlite", "a.mobi", "a.py", "a.bin",
    "noext", "",
]  # fmt: skip

#: Where isccd decides a real file otherwise than the SDK, and why: (sample, named) -> (SDK,
#: isccd). ``named`` False is the file's content without a name (a download, an extensionless
#: file). Everything else must be decided as the SDK decides.
DIFFERENCES: dict[tuple[str, bool], tuple[str, str]] = {
    # An ASF file whose only stream is audio is WMA, not a video (the SDK then finds no video).
    ("speech.wma", True): ("video/x-ms-wmv", "audio/x-ms-wma"),
    ("speech.wma", False): ("video/x-ms-wmv", "audio/x-ms-wma"),
    # JPEG 2000 is not JPEG (both are decoded by Pillow: the same Image-Code).
    ("picture.jp2", True): ("image/jpeg", "image/jp2"),
    ("picture.jp2", False): ("image/jpeg", "image/jp2"),
    # Without a name, the SDK cannot tell M4A audio or HEIC images from MP4 video, nor Ogg
    # audio from Ogg video: it sends them to the video decoder, which finds no video.
    ("music.m4a", False): ("video/mp4", "audio/mp4"),
    ("picture.heic", False): ("video/mp4", "image/heic"),
    ("vorbis.ogg", False): ("video/ogg", "audio/ogg"),
    ("voice.opus", False): ("video/ogg", "audio/ogg"),
    # Nor ODF and OOXML documents other than DOCX (all three are text either way).
    ("notes.odt", False): (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.oasis.opendocument.text",
    ),
    ("table.xlsx", False): (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ),
    ("slides.pptx", False): (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ),
    # Text with a byte order mark: the SDK's sniff names it with an empty media type.
    ("utf16be.txt", False): ("", "text/plain"),
    ("utf32.txt", False): ("", "text/plain"),
    ("utf8-bom.txt", False): ("", "text/plain"),
}


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The first 4096 bytes of a real file of every supported media type, by file name."""
    paths = make_samples(tmp_path_factory.mktemp("samples"))
    return {name: path.read_bytes()[:4096] for name, path in paths.items()}


@needs_sdk
@pytest.mark.slow
def test_real_files_are_decided_as_the_sdk_decides(
    samples: dict[str, bytes], tmp_path: Path
) -> None:
    cases = [(name, named) for name in sorted(samples) for named in (True, False)]
    jobs = [
        {"kind": "mediatype", "head": samples[name].hex(), "name": name if named else None}
        for name, named in cases
    ]
    differences = {}
    decided = set()
    for (name, named), ref in zip(cases, run_sdk(jobs, tmp_path), strict=True):
        ours = mediatype_guess(samples[name], name if named else None)
        assert "ok" in ref, (name, ref)
        if ours != ref["ok"]:
            differences[name, named] = (ref["ok"], ours)
        if named:
            decided.add(ref["ok"])
    assert differences == DIFFERENCES
    # The samples cover the media types the SDK supports, but for the formats no library here
    # writes (old Office, RealMedia, Dirac, iBooks).
    unwritten = {
        "application/vnd.ms-powerpoint",
        "application/vnd.ms-excel",
        "application/x-ibooks+zip",
        "application/vnd.rn-realmedia",
        "video/x-dirac",
        "audio/x-wavpack",  # the system's MIME table names .wv otherwise
        "audio/x-wav",
        "audio/x-aiff",
        "audio/x-flac",
        "audio/opus",
        "video/x-m4v",
        "video/3gpp",
        "video/3gpp2",
    }
    assert set(SUPPORTED_MEDIATYPES) - unwritten <= decided | {"audio/mp4"}, (
        set(SUPPORTED_MEDIATYPES) - unwritten - decided
    )


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
@pytest.mark.slow
def test_name_and_content_are_reconciled_by_the_sdks_rules(tmp_path: Path) -> None:
    """Given the same sniff of the content, the SDK's rules decide as isccd does, but where the
    name contradicts content with a clear signature, or content that is text."""
    heads = _heads(tmp_path)
    cases = [(h, n) for h in sorted(heads) for n in NAMES]
    jobs = [
        {
            "kind": "mediatype_sniffed",
            "head": heads[h].hex(),
            "name": n,
            "sniffed": mediatype_from_data(heads[h]),
        }
        for h, n in cases
    ]
    overruled = 0
    for (head, name), ref in zip(cases, run_sdk(jobs, tmp_path), strict=True):
        ours = mediatype_detect(heads[head], name)
        if ours.mediatype == ref["ok"]:
            continue
        # The SDK followed the name; isccd followed the content.
        overruled += 1
        named = mediatype_guess(b"", name)
        assert ref["ok"] == named and ours.from_content, (head, name, ours, ref)
        mode = mediatype_to_mode(named)
        if mode is Mode.TEXT:  # a text name, content with a binary format's signature
            assert not looks_like_text(heads[head]), (head, name)
            assert ours.mediatype == mediatype_normalize(mediatype_from_data(heads[head]))
        else:  # an image, audio or video name, content that is text
            assert mode in {Mode.IMAGE, Mode.AUDIO, Mode.VIDEO} and looks_like_text(heads[head])
            text_format = mediatype_to_mode(ours.mediatype) is Mode.TEXT
            assert text_format or ours.mediatype == "image/svg+xml", (head, name, ours)
    assert 0 < overruled < len(cases) // 4


def test_misnamed_files_are_what_their_content_is() -> None:
    jpeg = jpeg_bytes(scene())[:4096]
    assert mediatype_guess(jpeg, "photo.txt") == "image/jpeg"
    assert mediatype_guess(PROSE.encode(), "notes.jpg") == "text/plain"
    assert mediatype_guess(b"%PDF-1.4\n", "report.txt") == "application/pdf"
    assert mediatype_guess(b"<!DOCTYPE html><p>Not found</p>", "song.mp3") == "text/html"
    # A correct name keeps the SDK's answer.
    assert mediatype_guess(jpeg, "photo.jpg") == "image/jpeg"
    assert mediatype_guess(PROSE.encode(), "notes.md") == "text/markdown"
    assert mediatype_detect(jpeg, "photo.jpg").from_content is False
    assert mediatype_detect(jpeg, "photo.bin").from_content is True
    assert mediatype_detect(jpeg, None) == mediatype_detect(jpeg, "photo.bin")


WORDS = ["if", "JN", "MTM", "BM", "P6", "FWS", "ID3", "the", "of", "and", "to", "in", "at", "by"]

#: Beginnings puremagic takes for a format, though they say little: texts and random data that
#: start (or, for a footer, end) so.
TRAPS = [
    b"if the weather holds",  # 669 tracker module
    b"JN is here",  # extended 669 module
    b"MTM report",  # MultiTracker module
    b"BMW and Audi",  # Windows bitmap
    b"P6 is the next phase",  # binary PPM
    b"%! this is not PostScript",
    b"FWS stands for",  # Shockwave Flash
    b"{ not json",
]


def _mode_of(mediatype: str) -> Mode | None:
    """The mode of a media type puremagic names, by its preferred name."""
    normalized = mediatype_normalize(mediatype)
    assert normalized is not None
    return mediatype_to_mode(normalized)


def test_weak_evidence_never_decides() -> None:
    rng = random.Random(12)
    texts = [trap + b" " + " ".join(rng.choices(WORDS, k=60)).encode() for trap in TRAPS]
    # The traps are real: puremagic gives every one of these texts an image, audio or video
    # type, or JSON.
    fooled = [puremagic.from_string(t, mime=True) for t in texts]
    assert all(m and _mode_of(m) is not None for m in fooled)
    for text in texts:
        for name in ("notes.txt", "notes.md"):
            assert mediatype_to_mode(mediatype_guess(text, name)) is Mode.TEXT, (text, name)
        found = mediatype_from_data(text)  # nothing, or a text format ("{" begins JSON)
        assert found is None or mediatype_to_mode(found) is Mode.TEXT, text
    binaries = [b"{" + rng.randbytes(300), rng.randbytes(300) + b"\x00\x00\x01\xb7"]
    binaries.append(b"\xff\xfb\x90\x00" + rng.randbytes(600))  # one MPEG audio frame header
    binaries.append(b"BM" + rng.randbytes(600))
    binaries.append(b"\xff\xfe" + rng.randbytes(600))  # a UTF-16 byte order mark
    for data in binaries:
        assert puremagic.from_string(data, mime=True)  # puremagic names a format
        for maybe_name in ("blob.bin", "blob", None):
            guessed = mediatype_guess(data, maybe_name)
            assert mediatype_to_mode(guessed) is None, (data[:8], maybe_name)


@pytest.mark.slow
def test_random_binaries_get_no_decoder() -> None:
    rng = random.Random(13)
    fooled = 0
    for _ in range(3000):
        data = rng.randbytes(rng.randrange(100, 8192))[:4096]
        for name in ("blob.bin", None):
            assert mediatype_to_mode(mediatype_guess(data, name)) is None, data[:16]
        try:
            found = puremagic.from_string(data, mime=True)
        except puremagic.PureError:
            continue
        fooled += bool(found and _mode_of(found))
    assert fooled > 0  # about 1 in 256 random files take a weak guess with puremagic


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")), min_size=1))
def test_text_is_never_sent_to_an_audio_or_video_decoder(text: str) -> None:
    data = text.encode()[:4096]
    assert not has_binary_bytes(data)
    for name in ("a.mp3", "a.wav", "a.mp4", "a.mkv", "a.jpg", "a.txt"):
        mode = mediatype_to_mode(mediatype_guess(data, name))
        assert mode not in {Mode.AUDIO, Mode.VIDEO}, (data[:20], name)
        if name == "a.txt":
            assert mode is Mode.TEXT, data[:20]


@pytest.mark.slow
def test_containers_are_told_by_what_they_hold(samples: dict[str, bytes]) -> None:
    assert mediatype_from_data(samples["vorbis.ogg"]) == "audio/ogg"
    assert mediatype_from_data(samples["clip.ogv"]) == "video/ogg"
    assert mediatype_from_data(samples["speech.wma"]) == "audio/x-ms-wma"
    assert mediatype_from_data(samples["clip.wmv"]) == "video/x-ms-wmv"
    assert mediatype_from_data(samples["music.m4a"]) == "audio/mp4"
    assert mediatype_from_data(samples["clip.mp4"]) == "video/mp4"
    assert mediatype_from_data(samples["clip.mov"]) == "video/quicktime"
    zipped = b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + bytes(16) + b"\x05\x00\x00\x00a.txt"
    assert mediatype_from_data(zipped) == "application/zip"  # an archive, not a DOCX


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


#: Names whose type is not their last extension's alone: URLs (a file name may hold ":"),
#: extensions that stand for others, compressions, case.
_TRICKY_NAMES = [
    "data:image/png,x.txt", "data:,x.jpg", "http:a.png", "C:a.txt", "x.tgz", "x.TGZ", "a.svg.gz",
    "a.txt.Z", "a.txt.z", "a.tar.bz2", "a.svgz", "a.JPG", "A.Txt", ".txt", "..txt", "a.", "a..md",
    "a.tar.xz", "notes.md", "a.b.c.pdf",
]  # fmt: skip


@pytest.mark.parametrize("name", NAMES + _TRICKY_NAMES)
def test_a_name_gives_the_type_the_system_table_gives(name: str) -> None:
    expected = mediatype_normalize(mediatype_from_name(name)) if name else None
    # Twice: the second answer may come from what the first one learned.
    for _ in range(2):
        assert mediatype_detect(b"", name).mediatype == (expected or "application/octet-stream")


@given(st.text(alphabet="aZ.:/,;gzTGXtx0", max_size=12))
def test_any_name_gives_the_type_the_system_table_gives(name: str) -> None:
    expected = mediatype_normalize(mediatype_from_name(name)) if name else None
    for _ in range(2):
        assert mediatype_detect(b"", name).mediatype == (expected or "application/octet-stream")


_NAMES = [
    None, "a", "a.txt", "a.bin", "a.TXT", "a.md", "a.csv", "a.json", "a.html", "a.xml", "a.svg",
    "a.svgz", "a.ps", "a.jpg", "a.png", "a.webp", "a.mp3", "a.ogg", "a.mp4", "a.pdf", "a.docx",
    "a.tar.gz", "a.gz", "a.py", "a.unknownext", "http://x/a.txt",
]  # fmt: skip
_HEADS = [
    b"",
    b"plain words in a line\n" * 20,
    bytes(random.Random(7).randrange(256) for _ in range(4096)),
    b'<svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>',
    b'  <svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>',  # no signature: an SVG root
    b"<?xml version='1.0'?><note>hi</note>",
    "caf\u00e9 na\u00efve".encode() * 10,
    b"\xff\xfe" + "utf-16 text".encode("utf-16-le"),
]


@pytest.mark.parametrize("name", _NAMES)
def test_a_type_decided_by_the_name_alone_is_the_one_the_full_decision_makes(
    name: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    shortcut = [mediatype_detect(head, name) for head in _HEADS]
    monkeypatch.setattr(mediatype_module, "_named_alone", lambda by_name: None)
    assert [mediatype_detect(head, name) for head in _HEADS] == shortcut


@pytest.mark.parametrize(
    ("name", "head", "expected"),
    [
        # The system table calls these application/x-trash: a backup holds what it backs up.
        ("notes.bak", PROSE.encode(), "application/octet-stream"),
        ("settings.old", bytes(random.Random(3).randrange(256) for _ in range(4096)),
         "application/octet-stream"),
        ("notes.txt.bak", PROSE.encode(), "text/plain"),
        ("photo.bak", jpeg_bytes(scene(seed=1)), "image/jpeg"),
        ("photo.jpg.bak", jpeg_bytes(scene(seed=1)), "image/jpeg"),
        ("twice.bak.bak", PROSE.encode(), "application/octet-stream"),
    ],
)  # fmt: skip
def test_a_backup_is_typed_by_what_it_backs_up_or_by_its_content(
    name: str, head: bytes, expected: str
) -> None:
    assert mediatype_guess(head, name) == expected
