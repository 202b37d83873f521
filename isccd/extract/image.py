"""Image decoding and the ISCC SDK's normalization to 32x32 grayscale pixels (Pillow).

The normalization is iscc-sdk 0.9.7's ``image_normalize`` with its defaults, step by step:

1. ``ImageOps.exif_transpose`` (only the transposition it does: no copy of an image without an
   orientation to correct);
2. transparency filled with white (RGBA/LA pasted on white through the alpha channel, palette
   images with a ``transparency`` entry through RGBA, every other mode converted to RGB);
3. the tolerant border trim (:func:`trim_tolerant`; the four one-pixel edges are checked before
   the whole frame, as most images have no border to trim);
4. conversion to ``L`` (ITU-R 601-2 luma) and a BICUBIC resize to 32x32;
5. the 1024 pixel values, row by row.

A decompression bomb is refused from the header, before any pixel is decoded. Pillow reads only
the header in ``Image.open``; its own bomb check fires there too and is reported the same way.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, BinaryIO

from isccd.errors import ExtractionError, ImageTooLargeError, ToolMissingError
from isccd.extract.meta import Metadata
from isccd.extract.tools import MISSING
from isccd.extract.xmp import image_metadata

if TYPE_CHECKING:  # Pillow is loaded by the first image read: a scan of none never loads it
    from PIL import Image

#: The SDK's tolerant trim: per-channel tolerance and the most passes.
TRIM_TOLERANCE = 16
TRIM_MAX_PASSES = 16


@cache
def _transpositions() -> dict[int, Image.Transpose]:
    """The transposition ``ImageOps.exif_transpose`` does for each EXIF orientation."""
    from PIL import Image  # noqa: PLC0415 -- see the imports

    return {
        2: Image.Transpose.FLIP_LEFT_RIGHT,
        3: Image.Transpose.ROTATE_180,
        4: Image.Transpose.FLIP_TOP_BOTTOM,
        5: Image.Transpose.TRANSPOSE,
        6: Image.Transpose.ROTATE_270,
        7: Image.Transpose.TRANSVERSE,
        8: Image.Transpose.ROTATE_90,
    }


#: The SDK's pixel limit (``image_max_pixels``).
DEFAULT_MAX_PIXELS = 128_000_000

_PLUGIN_TYPES = {"image/heic": "HEIC", "image/heif": "HEIF"}

#: The profile components of images: the decoder, and the optional HEIC/HEIF plugin.
PILLOW = "pillow"
HEIF = "pillow-heif"


@dataclass(frozen=True, slots=True)
class ImageContent:
    """What the Image-Code and the record need from an image.

    Attributes:
        pixels: 1024 grayscale values (0-255), the 32x32 normalized image row by row.
        width: Width of the stored image in pixels (before EXIF rotation).
        height: Height of the stored image in pixels.
        meta: Title and description embedded in the image.
        meta_problem: Why some embedded metadata could not be read, if so.
        extractor: The decoder and version the pixels depend on.
    """

    pixels: tuple[int, ...]
    width: int
    height: int
    meta: Metadata
    meta_problem: str | None
    extractor: str


def extractor_profile(mediatype: str = "") -> str:
    """The decoder and version the Image-Code depends on (``pillow/13.0.0``; HEIC and HEIF
    also name the plugin)."""
    versions = component_versions()
    profile = f"{PILLOW}/{versions[PILLOW]}"
    if mediatype in _PLUGIN_TYPES and _heif_available():
        profile += f" {HEIF}/{versions[HEIF]}"
    return profile


@cache
def component_versions() -> dict[str, str]:
    """The versions of :data:`PILLOW` and :data:`HEIF` in this process (``missing`` for a
    plugin that is not installed). A library upgraded on disk takes effect at a restart."""
    import PIL  # noqa: PLC0415 -- see the imports

    heif = MISSING
    if _heif_available():
        from pillow_heif import __version__ as heif_version  # noqa: PLC0415 - optional plugin

        heif = str(heif_version)
    return {PILLOW: PIL.__version__, HEIF: heif}


def extract_image(
    fileobj: BinaryIO,
    *,
    mediatype: str = "",
    max_pixels: int = DEFAULT_MAX_PIXELS,
    read_meta: bool = True,
) -> ImageContent:
    """Decode an image and normalize it for the Image-Code.

    Args:
        fileobj: The image file, positioned at its start.
        mediatype: Its detected media type (to name a missing plugin in the message).
        max_pixels: Refuse images with more pixels than this, before decoding them.
        read_meta: Also read the embedded title and description.

    Returns:
        The normalized pixels, the stored size and the metadata.

    Raises:
        ImageTooLargeError: More pixels than ``max_pixels``; nothing was decoded.
        ToolMissingError: The format needs an optional plugin that is not installed.
        ExtractionError: The data is not an image Pillow can decode, or it is corrupt.
    """
    with opened_image(fileobj, mediatype=mediatype, max_pixels=max_pixels) as img:
        width, height = img.size
        try:
            # Decode first: a failed load leaves Pillow's image half set up, and a second
            # load (metadata readers load PNGs for their EXIF) would then "succeed".
            img.load()
            pixels = normalize_image(img)
        except Exception as exc:
            # Decoders raise OSError, SyntaxError, ValueError, struct.error, EOFError, ...
            # on truncated or corrupt data; all mean the same to the caller.
            raise ExtractionError(f"cannot decode image: {_describe(exc)}") from exc
        meta, problem = image_metadata(img) if read_meta else (Metadata(), None)
    return ImageContent(tuple(pixels), width, height, meta, problem, extractor_profile(mediatype))


@contextlib.contextmanager
def opened_image(
    fileobj: BinaryIO, *, mediatype: str = "", max_pixels: int = DEFAULT_MAX_PIXELS
) -> Iterator[Image.Image]:
    """An image opened (its header read, no pixel decoded) and checked against the pixel limit.

    Pillow's warnings are silenced inside the block (see :func:`_quiet`); the image is closed
    when it ends.

    Args:
        fileobj: The image file, positioned at its start.
        mediatype: Its detected media type (to name a missing plugin in the message).
        max_pixels: Refuse images with more pixels than this, before decoding them.

    Raises:
        ImageTooLargeError: More pixels than ``max_pixels``; nothing was decoded.
        ToolMissingError: The format needs an optional plugin that is not installed.
        ExtractionError: The data is not an image Pillow can open.
    """
    from PIL import Image, UnidentifiedImageError  # noqa: PLC0415 -- see the imports

    _register_plugins()
    with _quiet():
        try:
            img = Image.open(fileobj)
        except Image.DecompressionBombError as exc:
            raise ImageTooLargeError(f"decompression bomb refused: {exc}") from exc
        except UnidentifiedImageError as exc:
            plugin = _PLUGIN_TYPES.get(mediatype)
            if plugin and not _heif_available():
                raise ToolMissingError(
                    f"{plugin} images need the optional pillow-heif plugin: "
                    "pip install 'isccd[extract]'",
                    HEIF,
                ) from exc
            raise ExtractionError("not an image Pillow can decode") from exc
        except Exception as exc:
            # Pillow's format parsers raise arbitrary exception types on malformed headers.
            raise ExtractionError(f"corrupt image header: {_describe(exc)}") from exc
        with img:
            width, height = img.size
            if width * height > max_pixels:
                raise ImageTooLargeError(
                    f"{width} x {height} = {width * height:,} pixels exceeds the limit of "
                    f"{max_pixels:,}; not decoded"
                )
            yield img


def normalize_image(img: Image.Image) -> list[int]:
    """The SDK's normalization: the 1024 gray pixel values of the 32x32 image.

    Args:
        img: An opened image (decoded here).

    Returns:
        1024 ints in 0..255, row-major.
    """
    from PIL import Image  # noqa: PLC0415 -- see the imports

    img = upright(img)
    img = fill_transparency(img)
    img = trim_tolerant(img)
    small = img.convert("L").resize((32, 32), Image.Resampling.BICUBIC)
    return list(small.tobytes())


def upright(img: Image.Image) -> Image.Image:
    """The image as its EXIF orientation says to show it: the pixels of
    ``ImageOps.exif_transpose``, but the image itself (no copy) when there is nothing to turn."""
    from PIL import ExifTags  # noqa: PLC0415 -- see the imports

    method = _transpositions().get(img.getexif().get(ExifTags.Base.Orientation, 1))
    return img if method is None else img.transpose(method)


def fill_transparency(img: Image.Image) -> Image.Image:
    """An RGB image with transparent areas made white (the SDK's ``image_fill_transparency``)."""
    from PIL import Image  # noqa: PLC0415 -- see the imports

    if img.mode == "RGB":
        return img
    white = (255, 255, 255)
    if img.mode in ("RGBA", "LA"):
        background = Image.new("RGB", img.size, white)
        background.paste(img, mask=img.getchannel("A"))
        return background
    if img.mode == "P" and "transparency" in img.info:
        rgba = img.convert("RGBA")
        background = Image.new("RGB", img.size, white)
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return img.convert("RGB")


def trim_tolerant(img: Image.Image, tolerance: int = TRIM_TOLERANCE) -> Image.Image:
    """Remove near-uniform borders, repeatedly (the SDK's ``image_trim_tolerant``).

    Each pass takes the top-left pixel as the border colour and crops to the bounding box of the
    pixels where any channel differs from it by more than ``tolerance``. A pass that would cut
    only one side must remove a flat band (nothing differs by more than ``tolerance // 2``),
    otherwise trimming stops, so smooth gradients such as skies are kept. Passes stop when one
    crops nothing, or after :data:`TRIM_MAX_PASSES`.
    """
    mask = img if img.mode in ("RGB", "L") else img.convert("RGB")
    for _ in range(TRIM_MAX_PASSES):
        if _edges_differ(mask, tolerance):
            break  # the bounding box is the whole image: nothing to crop
        bbox = border_bbox(mask, tolerance)
        if bbox is None or bbox == (0, 0, *mask.size):
            break
        width, height = mask.size
        sides = (bbox[0] > 0) + (bbox[1] > 0) + (bbox[2] < width) + (bbox[3] < height)
        if sides == 1 and border_bbox(mask, tolerance // 2) != bbox:
            break
        img, mask = img.crop(bbox), mask.crop(bbox)
    return img


def _edges_differ(img: Image.Image, tolerance: int) -> bool:
    """True when each of the four one-pixel edges has a pixel differing from the top-left one
    by more than ``tolerance``: then :func:`border_bbox` is the whole image, found without
    mapping every pixel of it."""
    width, height = img.size
    lut = _lut(img, tolerance)
    edges = ((0, 0, width, 1), (0, height - 1, width, height), (0, 0, 1, height))
    return all(
        img.crop(edge).point(lut).getbbox() is not None
        for edge in (*edges, (width - 1, 0, width, height))
    )


def _lut(img: Image.Image, tolerance: int) -> list[int]:
    """A point table marking values more than ``tolerance`` from the top-left pixel's."""
    ref = img.getpixel((0, 0))
    channels = ref if isinstance(ref, tuple) else (ref,)
    return [255 if abs(v - int(c or 0)) > tolerance else 0 for c in channels for v in range(256)]


def border_bbox(img: Image.Image, tolerance: int) -> tuple[int, int, int, int] | None:
    """Bounding box of the pixels differing from the top-left one by more than ``tolerance``.

    Args:
        img: An ``RGB`` or ``L`` image.
        tolerance: Largest per-channel difference still counted as border.

    Returns:
        ``(left, upper, right, lower)``, or ``None`` when every pixel is within tolerance.
    """
    return img.point(_lut(img, tolerance)).getbbox()


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence Pillow's warnings while decoding untrusted files.

    Pillow warns about corrupt EXIF, odd TIFF tags and images over its own pixel threshold; none
    of it is actionable for the caller, and the pixel limit is enforced here explicitly.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@cache
def _heif_available() -> bool:
    try:
        import pillow_heif  # noqa: F401, PLC0415 - optional plugin, probed on demand
    except ImportError:
        return False
    return True


@cache
def _register_plugins() -> None:
    """Register the optional HEIC/HEIF opener with Pillow once per process, if installed."""
    if _heif_available():
        from pillow_heif import register_heif_opener  # noqa: PLC0415 - optional plugin

        register_heif_opener()


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def extract_image_metadata(fileobj: BinaryIO) -> tuple[Metadata, str | None]:
    """The embedded title and description of an image, without decoding its pixels.

    Returns:
        The fields found, and why some metadata could not be read (or ``None``).

    Raises:
        ExtractionError: The data is not an image Pillow can open.
    """
    from PIL import Image  # noqa: PLC0415 -- see the imports

    _register_plugins()
    with _quiet():
        try:
            img = Image.open(fileobj)
        except Exception as exc:
            # As in extract_image: any exception type means "not an image we can open".
            raise ExtractionError(f"not an image Pillow can open: {_describe(exc)}") from exc
        with img:
            return image_metadata(img)
