"""What stands for a file on the report's page: a small picture, its first lines, or an icon.

:func:`make_preview` opens the file as every reader in isccd does
(:func:`~isccd.extract.source.open_source`: reached beneath its watched root, no symbolic link
on the way followed (with ``follow_symlinks``, only those staying beneath the root), nothing
but a regular file opened, every later reader on that descriptor), sniffs its media type, and
makes

- for an image, a WebP picture of at most :attr:`PreviewOptions.size` pixels a side, decoded
  at a reduced scale where the format allows it (JPEG's draft mode) and never past the pixel
  limit isccd's own decoding refuses;
- for a video, the same picture of a frame one second in (or the first frame), from ffmpeg,
  run within the bounds of :mod:`isccd.extract.tools`;
- for a text or document, its first lines, by isccd's own text extraction;
- for anything else (audio, data) or whatever fails, an icon, with the reason when it failed.

It runs in the report's worker processes, never in the daemon.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, ImageOps

from isccd.errors import ExtractionError, FileError, ToolError
from isccd.extract.image import DEFAULT_MAX_PIXELS, opened_image
from isccd.extract.mediatype import mediatype_guess, mediatype_to_mode
from isccd.extract.source import SourceFile, open_source
from isccd.extract.text import extract_text
from isccd.extract.tools import ToolOptions, require_tool, run_tool, tool_input
from isccd.model import Mode
from isccd.report.model import Preview, PreviewKind

#: Lines of a text shown, and characters per line.
TEXT_LINES = 8
TEXT_LINE_CHARS = 120

#: Characters extracted from a text or document for its first lines.
_TEXT_CHARS = 4 * TEXT_LINES * TEXT_LINE_CHARS

#: WebP quality of the pictures: small files that still show what a picture is.
WEBP_QUALITY = 70

#: Bytes of one video frame ffmpeg may write (a PNG of at most twice the picture size).
_FRAME_BYTES = 16 * 1024 * 1024

#: Where a video's frame is taken, in seconds (the first frame for shorter videos): past a
#: fade-in or a black first frame.
_FRAME_AT = 1.0


@dataclass(frozen=True, slots=True)
class PreviewOptions:
    """How previews are made.

    Attributes:
        size: Longest side of a picture, in pixels.
        max_pixels: Larger images are not decoded (isccd's decompression-bomb limit).
        tools: ffmpeg, its time limit and temporary directory, for video frames.
        follow_symlinks: Follow symbolic links that stay beneath a file's root, as the daemon
            does with ``[watch] follow_symlinks`` (else none).
    """

    size: int = 160
    max_pixels: int = DEFAULT_MAX_PIXELS
    tools: ToolOptions = field(default_factory=lambda: ToolOptions(timeout=30.0))
    follow_symlinks: bool = False


@dataclass(frozen=True, slots=True)
class Made:
    """A preview and what it was made from.

    Attributes:
        preview: The preview.
        stat: ``fstat`` of the file read (``None`` when it could not be opened).
        lasting: The preview stays right while the file is unchanged: a failure that may go
            away by itself (a tool not installed yet, a file that cannot be read now) is not.
    """

    preview: Preview
    stat: os.stat_result | None
    lasting: bool


def make_preview(path: str, options: PreviewOptions, root: str | None = None) -> Made:
    """The preview of the file at ``path``.

    Args:
        path: The file.
        options: How the preview is made.
        root: The watched root ``path`` is read beneath (the report's files all are); ``None``
            opens a file a user names by name, its last component not followed.

    Never raises for a bad file: what fails gives an icon whose note says why.
    """
    try:
        with open_source(path, root=root, follow_symlinks=options.follow_symlinks) as src:
            preview, lasting = _preview(src, options)
            src.check_unchanged()
            return Made(preview, src.stat, lasting)
    except FileError as exc:
        return Made(Preview(PreviewKind.ICON, note=exc.reason), None, lasting=False)


def _preview(src: SourceFile, options: PreviewOptions) -> tuple[Preview, bool]:
    mediatype = mediatype_guess(src.head(), Path(src.path).name)
    try:
        return _content(src, mediatype, options), True
    except ToolError as exc:
        # A tool not installed yet, or a time limit hit on a busy machine: not the file's
        # fault, so not kept.
        return Preview(PreviewKind.ICON, mediatype, note=str(exc)), False
    except ExtractionError as exc:
        return Preview(PreviewKind.ICON, mediatype, note=str(exc)), True


def _content(src: SourceFile, mediatype: str, options: PreviewOptions) -> Preview:
    """The preview of ``src`` by its mode.

    Raises:
        ExtractionError: The content cannot be decoded; ToolError: ffmpeg failed.
    """
    mode = mediatype_to_mode(mediatype)
    if mode is Mode.IMAGE:
        return Preview(PreviewKind.IMAGE, mediatype, _image_preview(src, mediatype, options))
    if mode is Mode.VIDEO:
        return Preview(PreviewKind.IMAGE, mediatype, _video_preview(src, options))
    if mode is Mode.TEXT:
        extracted = extract_text(
            src, mediatype, max_chars=_TEXT_CHARS, read_meta=False,
            temp_dir=options.tools.temp_dir,
        )  # fmt: skip
        text = first_lines(extracted.text)
        if text:
            return Preview(PreviewKind.TEXT, mediatype, text.encode("utf-8"))
        return Preview(PreviewKind.ICON, mediatype, note="no text")
    return Preview(PreviewKind.ICON, mediatype)


def first_lines(text: str) -> str:
    """The first :data:`TEXT_LINES` lines of ``text`` that are not blank, each cut at
    :data:`TEXT_LINE_CHARS` characters, with tabs as spaces and other control characters
    left out."""
    lines = []
    for line in text.splitlines():
        clean = "".join(c for c in line.replace("\t", "    ") if c.isprintable()).rstrip()
        if clean.strip():
            lines.append(clean[:TEXT_LINE_CHARS])
            if len(lines) == TEXT_LINES:
                break
    return "\n".join(lines)


def _image_preview(src: SourceFile, mediatype: str, options: PreviewOptions) -> bytes:
    with (
        src.reader() as fileobj,
        opened_image(fileobj, mediatype=mediatype, max_pixels=options.max_pixels) as img,
    ):
        # JPEG decodes at 1/2, 1/4 or 1/8 scale, still at least the picture's size: a
        # fraction of the memory and time of the whole image.
        img.draft(None, (options.size, options.size))
        try:
            return webp_picture(ImageOps.exif_transpose(img), options.size)
        except Exception as exc:
            # Decoders raise OSError, SyntaxError, ValueError, struct.error, EOFError, ... on
            # truncated or corrupt data; all mean the same here.
            raise ExtractionError(f"cannot decode image: {type(exc).__name__}: {exc}") from exc


def webp_picture(img: Image.Image, size: int) -> bytes:
    """``img`` scaled to fit ``size`` x ``size`` pixels, as WebP.

    Raises:
        Exception: Whatever Pillow raises decoding the image.
    """
    if img.mode not in ("RGB", "RGBA"):
        transparent = img.mode in ("LA", "PA") or "transparency" in img.info
        img = img.convert("RGBA" if transparent else "RGB")
    img.thumbnail((size, size), Image.Resampling.BICUBIC)
    out = io.BytesIO()
    img.save(out, "WEBP", quality=WEBP_QUALITY)
    return out.getvalue()


def _video_preview(src: SourceFile, options: PreviewOptions) -> bytes:
    """A frame of a video as a picture.

    Raises:
        ToolMissingError: ffmpeg is not installed.
        ToolError: ffmpeg failed, timed out, or gave no frame.
        ExtractionError: The frame cannot be decoded.
    """
    tools = options.tools
    exe = require_tool(tools.ffmpeg, "video previews")
    with tool_input(src.fd, src.path, tools.temp_dir) as inp:
        result = None
        for at in (_FRAME_AT, 0.0):
            argv = [exe, "-nostdin", "-hide_banner", "-loglevel", "error", "-ss", f"{at:g}"]
            argv += ["-i", inp.path, "-an", "-sn", "-dn", "-frames:v", "1"]
            argv += ["-vf", f"scale={2 * options.size}:-2", "-f", "image2pipe", "-c:v", "png", "-"]
            result = run_tool(
                argv,
                timeout=tools.timeout,
                max_output=_FRAME_BYTES,
                cwd=inp.workdir,
                pass_fds=inp.pass_fds,
            )
            if result.returncode == 0 and result.stdout:
                break
        assert result is not None
        if not result.stdout:
            raise ToolError(f"ffmpeg gave no frame: {result.last_error_line()}")
    try:
        with Image.open(io.BytesIO(result.stdout)) as frame:
            return webp_picture(frame, options.size)
    except Exception as exc:
        raise ExtractionError(f"cannot decode the video frame: {exc}") from exc
