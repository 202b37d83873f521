"""Audio tags read in process: what ffprobe reports, or ``None`` (ask ffprobe) when unsure."""

from __future__ import annotations

from pathlib import Path

import pytest

from isccd.extract.probe import probe_media
from isccd.extract.source import open_source
from isccd.extract.tags import read_tags
from isccd.extract.tools import ToolOptions, tool_input
from isccd.hashing import CodeOptions, compute_record
from isccd.hashing.content import AUDIO_TAGS
from isccd.model import UnitType
from tests.extract.media import ffmpeg, needs_ffmpeg, needs_fpcalc

TONE = ("-f", "lavfi", "-i", "sine=frequency=440:duration=0.5")
ISCC = ("-metadata", "iscc_name=Näme", "-metadata", "iscc:description=Dèscription ☃")

#: File name, media type, ffmpeg options: tags the reader must read as ffprobe does.
READABLE: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("v24.mp3", "audio/mpeg", ("-metadata", "title=Tïtle ☃", *ISCC)),
    ("v23.mp3", "audio/mpeg", ("-id3v2_version", "3", "-metadata", "title=Tïtle", *ISCC)),
    ("v23-wide.mp3", "audio/mpeg", ("-id3v2_version", "3", "-metadata", "title=Snow ☃")),
    ("untagged.mp3", "audio/mpeg", ("-write_id3v2", "0", "-map_metadata", "-1")),
    ("plain.mp3", "audio/mpeg", ("-fflags", "+bitexact", "-map_metadata", "-1")),
    ("song.flac", "audio/flac", ("-metadata", "TITLE=Flac Tïtle", *ISCC)),
    ("song.ogg", "audio/ogg", ("-c:a", "libvorbis", "-metadata", "title=Ogg ☃", *ISCC)),
    ("song.opus", "audio/ogg", ("-c:a", "libopus", "-metadata", "title=Opus", *ISCC)),
)

#: Files whose tags ffprobe must read: an ID3v1 tag at the end, an ID3v2.2 tag, two titles.
UNSURE: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("v1.mp3", "audio/mpeg", ("-write_id3v1", "1", "-metadata", "title=Both")),
    ("wave.wav", "audio/wav", ("-metadata", "title=Wave")),
)


def _ffprobe_tags(path: Path) -> dict[str, str]:
    with open_source(str(path)) as src, tool_input(src.fd, src.path) as inp:
        tags = probe_media(inp, ToolOptions()).tags
    return {k: v for k, v in tags.items() if k in AUDIO_TAGS}


def _read(path: Path, mediatype: str) -> dict[str, str] | None:
    with open_source(str(path)) as src:
        return read_tags(src, mediatype, AUDIO_TAGS)


@needs_ffmpeg
@pytest.mark.slow
def test_tags_are_read_as_ffprobe_reports_them(tmp_path: Path) -> None:
    for name, mediatype, options in READABLE:
        path = tmp_path / name
        ffmpeg(*TONE, *options, str(path))
        ours = _read(path, mediatype)
        assert ours is not None, name
        assert ours == _ffprobe_tags(path), name
    assert _read(tmp_path / "v24.mp3", "audio/mpeg") == {
        "title": "Tïtle ☃",
        "iscc_name": "Näme",
        "iscc:description": "Dèscription ☃",
    }
    for name, mediatype, options in UNSURE:
        ffmpeg(*TONE, *options, str(tmp_path / name))
        assert _read(tmp_path / name, mediatype) is None, name


def _id3(version: int, flags: int, frames: bytes) -> bytes:
    size = len(frames)
    syncsafe = bytes([(size >> 21) & 0x7F, (size >> 14) & 0x7F, (size >> 7) & 0x7F, size & 0x7F])
    return b"ID3" + bytes([version, 0, flags]) + syncsafe + frames


def _frame(frame_id: bytes, body: bytes, flags: bytes = b"\0\0") -> bytes:
    return frame_id + len(body).to_bytes(4, "big") + flags + body


def test_what_ffprobe_may_read_otherwise_is_left_to_it(tmp_path: Path) -> None:
    title = _frame(b"TIT2", b"\0Title")
    cases = {
        "two titles": _id3(3, 0, title + _frame(b"TIT2", b"\0Other")),
        "a title twice": _id3(3, 0, title + _frame(b"TXXX", b"\0TITLE\0Other")),
        "unsynchronised": _id3(3, 0x80, title),
        "ID3v2.2": _id3(2, 0, b"TT2\0\0\x06\0Title"),
        "compressed": _id3(3, 0, _frame(b"TIT2", b"\0Title", b"\0\x80")),
        "two values": _id3(3, 0, _frame(b"TIT2", b"\0One\0Two")),
        "UTF-16 without BOM": _id3(3, 0, _frame(b"TIT2", b"\x01T\0i\0")),
        "a wrong frame size": _id3(
            3, 0, b"TIT2\0\0\0\x09\0\0\0Title" + _frame(b"TXXX", b"\0iscc_name\0Name")
        ),
    }
    audio = b"\xff\xfb\x90\x00" + bytes(413)
    for case, tag in cases.items():
        path = tmp_path / "song.mp3"
        path.write_bytes(tag + audio * 4)
        assert _read(path, "audio/mpeg") is None, case
    path.write_bytes(_id3(3, 0, title) + audio * 4)
    assert _read(path, "audio/mpeg") == {"title": "Title"}
    assert _read(path, "audio/x-wav") is None  # not read here


@needs_ffmpeg
@needs_fpcalc
@pytest.mark.slow
def test_an_mp3_is_coded_without_ffprobe(tmp_path: Path) -> None:
    path = tmp_path / "song.mp3"
    ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:duration=8", "-metadata", "title=Song",
           str(path))  # fmt: skip
    without = CodeOptions(ffprobe=str(tmp_path / "no-ffprobe"))
    record = compute_record(str(path), without)
    assert record.issues == ()
    assert record.name == "Song"
    assert record.duration is not None and 7.9 < record.duration < 8.2  # fpcalc's
    meta = record.unit(UnitType.META)
    assert meta is not None and "isccd-tags/1" in meta.profile
    assert record.units == compute_record(str(path)).units
    # A format the reader leaves to ffprobe needs it.
    wave = tmp_path / "song.wav"
    ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:duration=8", str(wave))
    assert any(i.stage == "meta" for i in compute_record(str(wave), without).issues)


@pytest.mark.parametrize("mediatype", ["audio/mpeg", "audio/flac", "audio/ogg"])
def test_garbage_is_left_to_ffprobe(tmp_path: Path, mediatype: str) -> None:
    path = tmp_path / "noise"
    for head in (b"ID3\x03\0\0\0\0\x7f\x7f", b"fLaC\0\0\0\x22", b"OggS\0\2" + bytes(30)):
        path.write_bytes(head + bytes(range(256)) * 8)
        found = _read(path, mediatype)
        assert found is None or found == {}, (head, found)
