"""What stands for a file on the report's page (isccd.report.preview), on real files."""

from __future__ import annotations

import io
import os
import random
import wave
from pathlib import Path

import pytest
from PIL import Image

from isccd.extract.tools import ToolOptions
from isccd.report.model import PreviewKind
from isccd.report.preview import PreviewOptions, first_lines, make_preview
from tests.extract.media import ffmpeg, make_pdf, needs_ffmpeg, png_bomb
from tests.report.conftest import picture

OPTIONS = PreviewOptions()


def decoded(data: bytes) -> Image.Image:
    img = Image.open(io.BytesIO(data))
    assert img.format == "WEBP"
    img.load()
    return img


def test_a_photo_becomes_a_small_upright_webp(tmp_path: Path) -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # stored landscape, shown rotated a quarter turn: portrait
    path = tmp_path / "photo.jpg"
    picture(1, (1600, 1200)).save(path, quality=90, exif=exif.tobytes())
    made = make_preview(str(path), OPTIONS)
    assert (made.preview.kind, made.preview.mediatype, made.lasting) == (
        PreviewKind.IMAGE,
        "image/jpeg",
        True,
    )
    assert decoded(made.preview.data).size == (120, 160)
    assert made.stat is not None and made.stat.st_ino == path.stat().st_ino


def test_transparency_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "alpha.png"
    img = picture(2, (300, 200)).convert("RGBA")
    img.putalpha(Image.linear_gradient("L").resize((300, 200)))
    img.save(path)
    picture_made = decoded(make_preview(str(path), OPTIONS).preview.data)
    assert picture_made.mode == "RGBA"
    assert picture_made.size == (160, 107)


def test_a_text_shows_its_first_lines(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    lines = ["", "  first\tline", "\x1b[31mcolored\x1b[0m", "", "x" * 300]
    lines += [f"line {i}" for i in range(20)]
    path.write_text("\n".join(lines))
    made = make_preview(str(path), OPTIONS)
    assert made.preview.kind is PreviewKind.TEXT
    assert made.preview.data.decode().split("\n") == [
        "  first    line",
        "[31mcolored[0m",
        "x" * 120,
        "line 0",
        "line 1",
        "line 2",
        "line 3",
        "line 4",
    ]


def test_first_lines_of_nothing_but_blanks_is_empty() -> None:
    assert first_lines("\n \n\t\n") == ""


def test_a_pdf_shows_its_first_lines(tmp_path: Path) -> None:
    pytest.importorskip("pypdfium2")
    path = make_pdf(tmp_path / "letter.pdf", "Dear reader, this letter is about duplicates.")
    made = make_preview(str(path), OPTIONS)
    assert made.preview.kind is PreviewKind.TEXT
    assert made.preview.data.decode().startswith("Dear reader, this letter")


@needs_ffmpeg
@pytest.mark.parametrize("seconds", [3, 0.4])
def test_a_video_shows_a_frame(tmp_path: Path, seconds: float) -> None:
    # A video shorter than the second the frame is taken at shows its first frame.
    path = tmp_path / "clip.mp4"
    source = f"testsrc=duration={seconds}:size=320x240:rate=10"
    ffmpeg("-f", "lavfi", "-i", source, "-pix_fmt", "yuv420p", str(path))
    made = make_preview(str(path), OPTIONS)
    assert (made.preview.kind, made.preview.mediatype) == (PreviewKind.IMAGE, "video/mp4")
    assert decoded(made.preview.data).size == (160, 120)


def test_without_ffmpeg_a_video_gets_an_icon_that_is_not_kept(tmp_path: Path) -> None:
    path = tmp_path / "clip.mp4"
    path.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(100))
    options = PreviewOptions(tools=ToolOptions(ffmpeg=str(tmp_path / "no-ffmpeg")))
    made = make_preview(str(path), options)
    assert made.preview.kind is PreviewKind.ICON
    assert "no-ffmpeg not found" in made.preview.note
    assert not made.lasting  # made again once ffmpeg is there


def test_sound_and_data_get_an_icon_without_a_note(tmp_path: Path) -> None:
    sound = tmp_path / "tone.wav"
    with wave.open(str(sound), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(bytes(16000))
    data = tmp_path / "blob.bin"
    data.write_bytes(random.Random(1).randbytes(5000))
    for path, mediatype in ((sound, "audio/wav"), (data, "application/octet-stream")):
        made = make_preview(str(path), OPTIONS)
        assert (made.preview.kind, made.preview.note, made.lasting) == (PreviewKind.ICON, "", True)
        assert made.preview.mediatype == mediatype


def test_a_corrupt_image_gets_an_icon_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "broken.jpg"
    good = io.BytesIO()
    picture(4).save(good, "JPEG")
    path.write_bytes(good.getvalue()[:2000])
    made = make_preview(str(path), OPTIONS)
    assert made.preview.kind is PreviewKind.ICON
    assert made.preview.note.startswith("cannot decode image")
    assert made.lasting  # the same bytes stay broken


def test_images_over_the_pixel_limit_are_not_decoded(tmp_path: Path) -> None:
    bomb = make_preview(str(png_bomb(tmp_path / "bomb.png")), OPTIONS)
    assert bomb.preview.kind is PreviewKind.ICON
    assert bomb.preview.note.startswith("decompression bomb refused")
    path = tmp_path / "photo.jpg"
    picture(5).save(path)
    limited = make_preview(str(path), PreviewOptions(max_pixels=640 * 480 - 1))
    assert limited.preview.kind is PreviewKind.ICON
    assert "exceeds the limit of 307,199" in limited.preview.note


def test_a_symbolic_link_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "photo.jpg"
    picture(6).save(target)
    link = tmp_path / "link.jpg"
    link.symlink_to(target)
    made = make_preview(str(link), OPTIONS)
    assert (made.preview.kind, made.preview.note, made.stat) == (
        PreviewKind.ICON,
        "a symbolic link, not a regular file",
        None,
    )
    assert not made.lasting


def test_a_fifo_is_never_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jpg"
    os.mkfifo(fifo)
    made = make_preview(str(fifo), OPTIONS)  # opening it for reading would block
    assert made.preview.kind is PreviewKind.ICON
    assert made.preview.note == "a FIFO, not a regular file"


def test_a_file_that_is_gone(tmp_path: Path) -> None:
    made = make_preview(str(tmp_path / "gone.jpg"), OPTIONS)
    assert (made.preview.kind, made.preview.note, made.lasting) == (
        PreviewKind.ICON,
        "file not found",
        False,
    )
