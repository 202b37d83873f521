"""Image decoding and normalization: pixel for pixel what iscc-sdk 0.9.7 feeds the Image-Code."""

from __future__ import annotations

import io
import resource
from pathlib import Path
from typing import Any

import iscc_core
import pytest
from PIL import Image

from isccd.errors import ExtractionError, ImageTooLargeError
from isccd.extract.image import extract_image, normalize_image, trim_tolerant, upright
from isccd.extract.xmp import xmp_properties
from isccd.iscc import gen_image_code_v0
from tests.extract.media import jpeg_bytes, make_images, png_bomb, scene, with_border
from tests.extract.sdk import needs_sdk, run_sdk


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_images(tmp_path_factory.mktemp("images"))


@needs_sdk
@pytest.mark.slow
def test_pixels_equal_the_sdk_normalization(images: dict[str, Path], tmp_path: Path) -> None:
    names = sorted(images)
    reference = run_sdk([{"kind": "pixels", "path": str(images[n])} for n in names], tmp_path)
    for name, expected in zip(names, reference, strict=True):
        with Image.open(images[name]) as img:
            ours = normalize_image(img)
        assert "ok" in expected, (name, expected)
        assert ours == expected["ok"], name
        # And the code made from them is the reference generator's.
        assert gen_image_code_v0(ours, bits=256) == iscc_core.gen_image_code_v0(
            expected["ok"], bits=256
        )


def varied_images(folder: Path) -> dict[str, Path]:
    """Images for every branch of the normalization: each EXIF orientation, borders on one,
    two, three and four sides (flat, noisy within the tolerance, nested), none at all, alpha,
    palettes, 16-bit and 1-bit pixels, and images one pixel wide or high."""
    folder.mkdir(parents=True, exist_ok=True)
    base = scene((120, 90), seed=4)
    out: dict[str, Path] = {}

    def save(name: str, img: Image.Image, **kwargs: Any) -> None:
        out[name] = folder / name
        img.save(out[name], **kwargs)

    for orientation in range(1, 9):
        exif = Image.Exif()
        exif[0x0112] = orientation
        framed = with_border(base, 6, (255, 255, 255)) if orientation % 2 else base
        save(f"orientation-{orientation}.jpg", framed, quality=92, exif=exif.tobytes())
    white = (250, 250, 250)
    # Border widths (top, right, bottom, left): each side alone, two, three.
    for margins in ((14, 0, 0, 0), (0, 14, 0, 0), (0, 0, 14, 0), (0, 0, 0, 14), (9, 0, 0, 14),
                    (0, 11, 7, 0), (5, 5, 5, 0), (0, 6, 6, 6)):  # fmt: skip
        top, right, bottom, left = margins
        canvas = Image.new("RGB", (left + 120 + right, top + 90 + bottom), white)
        canvas.paste(base, (left, top))
        save("border-{}-{}-{}-{}.png".format(*margins), canvas)
        if not top and not left:
            # The border colour is the top-left pixel's only when the picture has it there.
            canvas.putpixel((0, 0), white)
            save("corner-border-{}-{}-{}-{}.png".format(*margins), canvas)
    noisy = with_border(base, 10, (240, 240, 240))
    for i in range(0, noisy.width, 3):
        noisy.putpixel((i, 2), (236, 244, 240))  # within the tolerance of the border colour
    save("border-noisy.png", noisy)
    save("border-nested.png", with_border(with_border(base, 5, (0, 0, 0)), 9, (255, 0, 0)))
    save("no-border.png", base)
    transparent = Image.new("RGBA", (140, 110), (0, 0, 0, 0))
    transparent.paste(base.convert("RGBA"), (10, 10))
    save("alpha-border.png", transparent)
    save("palette.png", base.convert("P", palette=Image.Palette.ADAPTIVE, colors=16))
    clear = base.convert("P", palette=Image.Palette.ADAPTIVE, colors=16)
    save("palette-transparent.png", clear, transparency=3)
    save("gray-alpha.png", with_border(base, 8, (0, 0, 0)).convert("LA"))
    save("gray16.png", with_border(base, 8, (255, 255, 255)).convert("I;16"))
    save("gray32.tiff", base.convert("I"))
    save("bilevel.png", base.convert("1"))
    save("cmyk.jpg", with_border(base, 4, (255, 255, 255)).convert("CMYK"), quality=95)
    save("row.png", base.resize((120, 1)))
    save("column.png", base.resize((1, 90)))
    save("pixel.png", Image.new("RGB", (1, 1), (9, 99, 199)))
    save("flat.png", Image.new("RGB", (40, 30), (50, 60, 70)))
    return out


@needs_sdk
@pytest.mark.slow
def test_varied_images_normalize_as_the_sdk_does(tmp_path: Path) -> None:
    images = varied_images(tmp_path / "varied")
    names = sorted(images)
    reference = run_sdk([{"kind": "pixels", "path": str(images[n])} for n in names], tmp_path)
    for name, expected in zip(names, reference, strict=True):
        with images[name].open("rb") as f:
            ours = extract_image(f).pixels
        assert "ok" in expected, (name, expected)
        assert list(ours) == expected["ok"], name


def test_an_image_without_orientation_is_not_copied() -> None:
    img = scene((40, 30))
    assert upright(img) is img
    exif = Image.Exif()
    exif[0x0112] = 6
    buf = io.BytesIO()
    img.save(buf, "JPEG", exif=exif.tobytes())
    with Image.open(buf) as rotated:
        assert upright(rotated).size == (30, 40)


def test_extract_reads_size_and_embedded_title(images: dict[str, Path]) -> None:
    with images["titled.png"].open("rb") as f:
        content = extract_image(f)
    assert (content.width, content.height) == (320, 240)
    assert content.meta.name == "Harbour at Dusk"
    assert content.meta.description == "Boats & lights"
    assert len(content.pixels) == 1024
    with images["rotated.jpg"].open("rb") as f:
        rotated = extract_image(f)
    # The stored size, before the EXIF rotation (as exiv2 reports it to the SDK).
    assert (rotated.width, rotated.height) == (320, 240)


def test_trim_stops_at_a_smooth_gradient() -> None:
    # A gradient sky is not a border: the one-sided cut would not remove a flat band.
    sky = Image.linear_gradient("L").resize((100, 100)).convert("RGB")
    assert trim_tolerant(sky).size == (100, 100)
    framed = with_border(scene((60, 40)), 7, (255, 255, 255))
    assert trim_tolerant(framed).size == (60, 40)


def test_decompression_bomb_is_refused_before_decoding(tmp_path: Path) -> None:
    bomb = png_bomb(tmp_path / "bomb.png")
    assert bomb.stat().st_size < 10_000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with bomb.open("rb") as f, pytest.raises(ImageTooLargeError, match="decompression bomb"):
        extract_image(f)
    # Refused from the header: nothing near the 3.6 GB of pixels was allocated.
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # KiB


def test_our_pixel_limit_applies_below_pillows(tmp_path: Path) -> None:
    path = png_bomb(tmp_path / "big.png", 12_000, 12_000)  # 144 Mpx: over 128 M, under Pillow's
    with path.open("rb") as f, pytest.raises(ImageTooLargeError, match="exceeds the limit"):
        extract_image(f)
    with path.open("rb") as f, pytest.raises(ImageTooLargeError, match="12000 x 12000"):
        extract_image(f, max_pixels=1000)


@pytest.mark.parametrize("cut", [200, 1000, 3000])
def test_truncated_jpeg_is_a_clean_error(cut: int) -> None:
    data = jpeg_bytes(scene())[:cut]
    with pytest.raises(ExtractionError):
        extract_image(io.BytesIO(data))


def test_corrupt_images_are_clean_errors() -> None:
    png = io.BytesIO()
    scene().save(png, "PNG")
    damaged = bytearray(png.getvalue())
    idat = damaged.index(b"IDAT") + 4
    damaged[idat : idat + 40] = b"\xff" * 40  # the zlib header and first deflate block
    for data in (bytes(damaged), b"\x89PNG\r\n\x1a\n" + b"\0" * 50, b"not an image at all"):
        with pytest.raises(ExtractionError):
            extract_image(io.BytesIO(data))


def test_xmp_properties_take_the_default_language_and_attributes() -> None:
    packet = (
        '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF '
        'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description '
        'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:iscc="http://purl.org/iscc/schema/" '
        'iscc:name="Attribute Name"><dc:title><rdf:Alt><rdf:li xml:lang="de">Titel</rdf:li>'
        '<rdf:li xml:lang="x-default">Title</rdf:li></rdf:Alt></dc:title><dc:creator><rdf:Seq>'
        "<rdf:li>Ann</rdf:li><rdf:li>Bob</rdf:li></rdf:Seq></dc:creator></rdf:Description>"
        "</rdf:RDF></x:xmpmeta>"
    )
    assert xmp_properties(packet) == {
        "Xmp.iscc.name": "Attribute Name",
        "Xmp.dc.title": "Title",
        "Xmp.dc.creator": "Ann, Bob",
    }


def test_xmp_with_a_document_type_is_refused() -> None:
    laughs = (
        '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa">'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]><x>&b;</x>'
    )
    with pytest.raises(ValueError, match="document type"):
        xmp_properties(laughs)


def test_unreadable_metadata_costs_only_the_metadata() -> None:
    buf = io.BytesIO()
    scene().save(buf, "JPEG", xmp=b"<x:xmpmeta><unclosed>")
    buf.seek(0)
    content = extract_image(buf)
    assert content.meta.name is None
    assert content.meta_problem is not None and "XMP" in content.meta_problem
    assert len(content.pixels) == 1024


def test_heic_when_the_plugin_is_installed(tmp_path: Path) -> None:
    pillow_heif = pytest.importorskip("pillow_heif")
    pillow_heif.register_heif_opener()
    path = tmp_path / "photo.heic"
    try:
        scene().save(path, "HEIF", quality=90)
    except (OSError, KeyError, ValueError) as exc:
        pytest.skip(f"this libheif cannot encode HEIC: {exc}")
    with path.open("rb") as f:
        content = extract_image(f, mediatype="image/heic")
    assert (content.width, content.height) == (320, 240)
    assert "pillow-heif/" in content.extractor
