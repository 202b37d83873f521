"""Test media made on the spot: images with Pillow, documents with the libraries that write them,
audio and video with ffmpeg, and a PNG decompression bomb written by hand."""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw, PngImagePlugin

HAVE_FFMPEG = shutil.which("ffmpeg") is not None
HAVE_FPCALC = shutil.which("fpcalc") is not None
needs_ffmpeg = pytest.mark.skipif(not HAVE_FFMPEG, reason="ffmpeg is not installed")
needs_fpcalc = pytest.mark.skipif(not HAVE_FPCALC, reason="fpcalc is not installed")

XMP_TEMPLATE = (
    '<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?>'
    '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF '
    'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
    '<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">'
    '<dc:title><rdf:Alt><rdf:li xml:lang="x-default">{title}</rdf:li></rdf:Alt></dc:title>'
    '<dc:description><rdf:Alt><rdf:li xml:lang="x-default">{description}</rdf:li></rdf:Alt>'
    "</dc:description></rdf:Description></rdf:RDF></x:xmpmeta>"
    '<?xpacket end="w"?>'
)


def scene(size: tuple[int, int] = (320, 240), seed: int = 0) -> Image.Image:
    """An RGB picture with shapes and a gradient, so its Image-Code is not degenerate."""
    width, height = size
    img = Image.linear_gradient("L").resize(size).convert("RGB")
    draw = ImageDraw.Draw(img)
    for i in range(6):
        x = (seed * 37 + i * 53) % max(width - 40, 1)
        y = (seed * 23 + i * 41) % max(height - 40, 1)
        color = ((seed * 50 + i * 70) % 256, (i * 90) % 256, (seed * 30 + i * 20) % 256)
        draw.ellipse((x, y, x + 30 + i * 5, y + 20 + i * 7), fill=color)
    return img


def with_border(img: Image.Image, border: int, color: tuple[int, int, int]) -> Image.Image:
    out = Image.new("RGB", (img.width + 2 * border, img.height + 2 * border), color)
    out.paste(img, (border, border))
    return out


def make_images(folder: Path) -> dict[str, Path]:
    """Images covering the SDK's normalization steps, in many formats."""
    folder.mkdir(parents=True, exist_ok=True)
    base = scene()
    out: dict[str, Path] = {}

    def save(name: str, img: Image.Image, **kwargs: Any) -> None:
        path = folder / name
        img.save(path, **kwargs)
        out[name] = path

    save("plain.png", base)
    save("photo.jpg", base, quality=90)
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90 CW to display
    save("rotated.jpg", base, quality=90, exif=exif.tobytes())
    save("bordered.png", with_border(base, 25, (250, 250, 250)))
    noisy = with_border(with_border(base, 10, (200, 30, 30)), 12, (12, 12, 14))
    save("nested-border.png", noisy)
    sky = Image.linear_gradient("L").resize((300, 200)).convert("RGB")
    save("sky.png", sky)
    rgba = base.convert("RGBA")
    rgba.putalpha(Image.linear_gradient("L").resize(base.size))
    save("alpha.png", rgba)
    save("gray-alpha.png", base.convert("LA"))
    palette = base.convert("P", palette=Image.Palette.ADAPTIVE, colors=32)
    palette.info["transparency"] = 0
    save("palette.gif", palette, transparency=0)
    save("opaque-palette.png", base.convert("P"))
    save("cmyk.jpg", base.convert("CMYK"))
    save("bitmap.bmp", base)
    save("picture.tiff", base)
    save("picture.webp", base, lossless=True)
    save("gray16.png", base.convert("I;16"))
    info = PngImagePlugin.PngInfo()
    info.add_itxt(
        "XML:com.adobe.xmp",
        XMP_TEMPLATE.format(title="Harbour at Dusk", description="Boats &amp; lights"),
    )
    save("titled.png", base, pnginfo=info)
    xmp = XMP_TEMPLATE.format(title="Mountain Lake", description="A calm morning").encode()
    save("titled.jpg", base, quality=90, xmp=xmp)
    return out


def png_bomb(path: Path, width: int = 60_000, height: int = 60_000) -> Path:
    """A small PNG whose header claims ``width x height`` pixels (a decompression bomb).

    The IDAT stream is a few rows of zeros, compressed: the file is tiny, decoding it would need
    gigabytes.
    """

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit grayscale
    rows = zlib.compress(b"\x00" * ((width + 1) * 4), 9)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")
    )
    return path


def huge_png(path: Path, width: int = 11_300, height: int = 11_240) -> Path:
    """A 16-bit RGBA PNG of ``width x height`` black pixels (by default 127 MP, just under the
    SDK's pixel limit: about 1 GB decoded), written in a moment and 1 MB on disk.

    The zlib stream is one compressed segment of zero rows repeated: each ends in a full flush,
    so the segments are independent deflate blocks, and the checksum of all-zero data is known.
    """

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    row = 1 + width * 8  # the filter byte, then 4 channels of 2 bytes
    rows = 64
    segment = zlib.compressobj(9, zlib.DEFLATED, -15)
    repeated = segment.compress(bytes(row * rows)) + segment.flush(zlib.Z_FULL_FLUSH)
    last = zlib.compressobj(9, zlib.DEFLATED, -15)
    tail = last.compress(bytes(row * (height % rows))) + last.flush(zlib.Z_FINISH)
    adler = ((row * height % 65521) << 16) | 1  # Adler-32 of zeros: a = 1, b = length
    stream = b"\x78\xda" + repeated * (height // rows) + tail + struct.pack(">I", adler)
    header = struct.pack(">IIBBBBB", width, height, 16, 6, 0, 0, 0)  # 16-bit RGBA
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", stream) + chunk(b"IEND", b"")
    )
    return path


def make_pdf(
    path: Path, text: str, *, title: str | None = None, password: str | None = None
) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    if title:
        pdf.set_title(title)
    pdf.multi_cell(0, 8, text)
    if password:
        pdf.set_encryption(owner_password="owner-" + password, user_password=password)
    pdf.output(str(path))
    return path


PROSE = (
    "The quick brown fox jumps over the lazy dog near the riverbank. "
    "Meanwhile, a small village prepares for the annual harvest festival, "
    "with music, dancing and plenty of food for everyone who comes along. "
)


def make_documents(folder: Path) -> dict[str, Path]:
    """Documents in the formats the Text-Code covers, written by the libraries that make them."""
    import docx
    import openpyxl
    import pptx
    from odf.opendocument import OpenDocumentText
    from odf.text import P

    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}

    path = folder / "letter.docx"
    document = docx.Document()
    document.core_properties.title = "A Letter"
    document.add_paragraph(PROSE * 3)
    document.save(str(path))
    out[path.name] = path

    path = folder / "notes.odt"
    odt = OpenDocumentText()
    odt.text.addElement(P(text=PROSE * 2))
    odt.save(str(path))
    out[path.name] = path

    path = folder / "table.xlsx"
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    for row, word in enumerate(PROSE.split()[:30], start=1):
        sheet.cell(row=row, column=1, value=word)
        sheet.cell(row=row, column=2, value=row * 3)
    book.save(str(path))
    out[path.name] = path

    path = folder / "slides.pptx"
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Harvest festival"
    slide.placeholders[1].text = PROSE
    deck.save(str(path))
    out[path.name] = path

    path = folder / "page.html"
    path.write_text(
        "<!DOCTYPE html><html><head><title>Festival page</title><style>p {color: red}</style>"
        f"<script>var hidden = 1;</script></head><body><h1>Festival</h1><p>{PROSE}</p>"
        "<p>Tickets &amp; times</p></body></html>",
        encoding="utf-8",
    )
    out[path.name] = path

    path = folder / "data.xml"
    path.write_text(
        f'<?xml version="1.0"?><doc lang="en"><p>{PROSE}</p><p>second part</p></doc>',
        encoding="utf-8",
    )
    out[path.name] = path

    path = folder / "story.rtf"
    path.write_text("{\\rtf1\\ansi\\deff0 {\\fonttbl {\\f0 Times;}}\\f0 " + PROSE + "\\par}")
    out[path.name] = path

    out["report.pdf"] = make_pdf(folder / "report.pdf", PROSE * 4, title="Annual Report")
    return out


def make_texts(folder: Path) -> dict[str, Path]:
    """Plain text in several encodings, Markdown and JSON."""
    folder.mkdir(parents=True, exist_ok=True)
    french = "Le café de la gare est très fréquenté; à côté, la boulangerie ouvre à l'aube. " * 8
    files = {
        "utf8.txt": (PROSE * 5).encode("utf-8"),
        "utf8-bom.txt": b"\xef\xbb\xbf" + french.encode("utf-8"),
        "utf16.txt": french.encode("utf-16"),
        "utf16be.txt": b"\xfe\xff" + french.encode("utf-16-be"),
        "utf32.txt": french.encode("utf-32"),
        "latin.txt": french.encode("cp1252"),
        "readme.md": ("# Title\n\n" + PROSE + "\n\n* item one\n* item two\n").encode(),
        "values.json": b'{"title": "Report", "values": [1, 2, 3], "note": "'
        + PROSE.encode()
        + b'"}',
    }
    out = {}
    for name, data in files.items():
        (folder / name).write_bytes(data)
        out[name] = folder / name
    return out


def ffmpeg(*args: str) -> None:
    subprocess.run(
        ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", *args],
        check=True,
        timeout=120,
    )


def make_audio(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    tones = "sine=frequency=440:duration=8"
    chirp = "aevalsrc=sin(2*PI*(200+150*t)*t)|sin(2*PI*(300+50*t)*t):duration=8"
    for name, source, extra in (
        ("tone.mp3", tones, ["-metadata", "title=Concert Pitch"]),
        ("tone.wav", tones, []),
        ("chirp.flac", chirp, []),
        ("chirp.ogg", chirp, ["-c:a", "libvorbis"]),
    ):
        ffmpeg("-f", "lavfi", "-i", source, *extra, str(folder / name))
        out[name] = folder / name
    ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:duration=0.5", str(folder / "blip.wav"))
    out["blip.wav"] = folder / "blip.wav"
    return out


def make_video(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, source, extra in (
        ("bars.mp4", "testsrc=duration=3:size=320x240:rate=25", ["-pix_fmt", "yuv420p"]),
        ("mandel.webm", "mandelbrot=size=160x120:rate=10", ["-t", "2", "-c:v", "libvpx"]),
        ("life.mkv", "life=size=160x120:rate=15:seed=7", ["-t", "3"]),
    ):
        ffmpeg(
            "-f",
            "lavfi",
            "-i",
            source,
            *extra,
            "-metadata",
            "title=Test Pattern",
            str(folder / name),
        )
        out[name] = folder / name
    return out


def jpeg_bytes(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=85)
    return buf.getvalue()


#: ffmpeg arguments of audio and video samples: (file name, lavfi source, encoder options).
_TONE = "sine=frequency=440:duration=0.5"
_PATTERN = "testsrc=duration=0.4:size=96x64:rate=25"
_MEDIA_SAMPLES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("song.mp3", _TONE, ("-metadata", "title=Song")),
    ("bare.mp3", _TONE, ("-write_id3v2", "0", "-write_xing", "0")),
    ("sound.wav", _TONE, ()),
    ("vorbis.ogg", _TONE, ("-c:a", "libvorbis")),
    ("voice.opus", _TONE, ("-c:a", "libopus")),
    ("lossless.flac", _TONE, ()),
    ("sound.aiff", _TONE, ()),
    ("packed.wv", _TONE, ()),
    ("music.m4a", _TONE, ()),
    ("speech.wma", _TONE, ("-c:a", "wmav2")),
    ("clip.mp4", _PATTERN, ("-pix_fmt", "yuv420p")),
    ("clip.m4v", _PATTERN, ("-c:v", "libx264", "-f", "mp4")),
    ("clip.mov", _PATTERN, ()),
    ("clip.mkv", _PATTERN, ()),
    ("clip.webm", _PATTERN, ("-c:v", "libvpx")),
    ("clip.avi", _PATTERN, ()),
    ("clip.mpeg", _PATTERN, ("-c:v", "mpeg2video")),
    ("clip.ogv", _PATTERN, ("-c:v", "libtheora")),
    ("clip.flv", _PATTERN, ()),
    ("clip.swf", _PATTERN, ("-c:v", "flv")),
    ("clip.wmv", _PATTERN, ("-c:v", "wmv2")),
    ("clip.asf", _PATTERN, ("-c:v", "wmv2")),
    ("clip.3gp", _PATTERN, ("-c:v", "h263", "-s", "176x144")),
    ("clip.3g2", _PATTERN, ("-c:v", "h263", "-s", "176x144")),
    ("clip.rm", _PATTERN, ("-c:v", "rv10")),
    ("clip.h264", _PATTERN, ("-c:v", "libx264")),
)


def make_samples(folder: Path) -> dict[str, Path]:
    """A sample of every media type the SDK supports (and a few it codes by their top-level
    type): images, documents, text, audio and video, written by the programs that make them.

    Audio and video need ffmpeg (they are left out without it); documents need the writers of
    the test extra. The clips are short: only their beginning matters for media types.
    """
    out = dict(make_images(folder / "images"))
    out.update(make_texts(folder / "texts"))
    out.update(make_documents(folder / "documents"))
    img = scene((64, 48))
    for name in ("picture.eps", "icon.ico", "picture.jp2"):
        img.save(folder / "images" / name)
        out[name] = folder / "images" / name
    try:
        import pillow_heif

        pillow_heif.register_heif_opener()
        for name in ("picture.heic", "picture.avif"):
            img.save(folder / "images" / name)
            out[name] = folder / "images" / name
    except ImportError:
        pass
    docs = folder / "documents"
    extra = {
        # A Photoshop header (Pillow reads PSD but does not write it): signature, version 1,
        # 3 channels of 48 x 64 pixels, 8 bits, RGB.
        "layers.psd": b"8BPS\0\1" + bytes(6) + struct.pack(">HIIHH", 3, 48, 64, 8, 3),
        # A Compound File header, as Word 97-2003 documents begin.
        "legacy.doc": b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(16) + b"\x3e\0\x03\0\xfe\xff",
        "drawing.svg": b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" '
        b'width="9" height="9"><rect width="4" height="4"/></svg>',
        "page.xhtml": b'<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org'
        b'/1999/xhtml"><head><title>Page</title></head><body><p>'
        + PROSE.encode()
        + b"</p></body></html>",
    }
    for name, data in extra.items():
        (docs / name).write_bytes(data)
        out[name] = docs / name
    book = docs / "story.epub"
    with zipfile.ZipFile(book, "w") as epub:
        epub.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        epub.writestr("META-INF/container.xml", '<?xml version="1.0"?><container/>')
        epub.writestr("content.xhtml", f"<html><body><p>{PROSE}</p></body></html>")
    out[book.name] = book
    if shutil.which("ffmpeg"):
        media = folder / "media"
        media.mkdir(parents=True, exist_ok=True)
        for name, source, options in _MEDIA_SAMPLES:
            ffmpeg("-f", "lavfi", "-i", source, *options, str(media / name))
            out[name] = media / name
    return out


def _ogg_crc_table() -> list[int]:
    table = []
    for i in range(256):
        crc = i << 24
        for _ in range(8):
            crc = ((crc << 1) ^ 0x04C11DB7) if crc & 0x80000000 else crc << 1
        table.append(crc & 0xFFFFFFFF)
    return table


_OGG_CRC = _ogg_crc_table()


def _ogg_crc(page: bytes) -> int:
    crc = 0
    for byte in page:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _OGG_CRC[(crc >> 24) ^ byte]
    return crc


def damage_ogg_video(data: bytes, keep: int) -> bytes:
    """An Ogg Theora file with all but every ``keep``-th video frame damaged.

    Two bytes near the start of each damaged frame's packet are inverted and every page's CRC
    is recomputed, so that the demuxer passes the packets on and the decoder fails on them.
    """
    buf = bytearray(data)
    at = frames = 0
    while buf[at : at + 4] == b"OggS":
        segments = buf[at + 26]
        pos = at + 27 + segments
        starts_packet = True
        for lacing in buf[at + 27 : at + 27 + segments]:
            # Data packets have the high bit clear (the three headers have it set).
            if starts_packet and not buf[pos] & 0x80 and lacing > 6:
                frames += 1
                if frames % keep:
                    buf[pos + 2] ^= 0xFF
                    buf[pos + 3] ^= 0xFF
            starts_packet = lacing < 255
            pos += lacing
        buf[at + 22 : at + 26] = bytes(4)
        buf[at + 22 : at + 26] = _ogg_crc(bytes(buf[at:pos])).to_bytes(4, "little")
        at = pos
    return bytes(buf)
