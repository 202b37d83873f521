"""The options of :func:`~isccd.hashing.compute_record`: how files are coded."""

from __future__ import annotations

from dataclasses import dataclass

from isccd.errors import OptionError
from isccd.extract.image import DEFAULT_MAX_PIXELS
from isccd.extract.text import MAX_CHARS
from isccd.extract.tools import ToolOptions
from isccd.extract.video import DEFAULT_FPS
from isccd.model import UNIT_BITS

#: The algorithms every unit is computed with (conformant to iscc-core 1.5.0).
ALGORITHM = "iscc/1.5.0"

#: Revision of isccd's extraction recipes (normalization, metadata mapping, tool arguments).
#: Raise it when a change alters what an extractor produces, so stored units are recomputed.
EXTRACTION_REVISION = "isccd-extract/1"

#: The profile component saying where a Meta-Code's name and description come from: the file's
#: ``embedded`` metadata (falling back to its name), its ``name`` only, or nowhere (``off``: no
#: Meta-Code; a skip records it). Changing ``meta`` or ``extract_meta`` outdates the Meta-Codes.
META_SOURCE = "meta"


#: The most pixels :attr:`CodeOptions.max_image_pixels` may admit: Pillow refuses larger images
#: itself (twice its ``MAX_IMAGE_PIXELS``).
PILLOW_MAX_PIXELS = 178_956_970

_TOOLS = ToolOptions()


@dataclass(frozen=True, slots=True)
class CodeOptions:
    """How files are coded: the ``[code]`` settings. The defaults are the ISCC SDK 0.9.7's.

    Attributes:
        bits: Length of each unit, a multiple of 32 from 64 to 256. Changing it recomputes
            every stored unit.
        wide: Compose a WIDE ISCC-CODE (128-bit Data- and Instance-Code) for files that have
            neither Meta- nor Content-Code; needs ``bits`` of 128 or more.
        meta: Compute the Meta-Code.
        extract_meta: Take the Meta-Code's name and description from the file's embedded
            metadata (else from the file name only).
        max_image_pixels: Images with more pixels are refused before they are decoded
            (decompression bombs); at most :data:`PILLOW_MAX_PIXELS`.
        max_text_chars: Characters of text extracted at most (the SDK's fixed 10,000,000).
        video_fps: Frames per second the video signature samples (more than a video's own rate
            adds nothing). Changing it recomputes every Video-Code.
        tool_timeout: Seconds one run of fpcalc, ffmpeg or ffprobe may take before it is killed.
        fpcalc: Chromaprint's ``fpcalc``: a name looked up on ``PATH``, or an absolute path.
        ffmpeg: ``ffmpeg``: a name looked up on ``PATH``, or an absolute path.
        ffprobe: ``ffprobe``: a name looked up on ``PATH``, or an absolute path.
    """

    bits: int = 64
    wide: bool = False
    meta: bool = True
    extract_meta: bool = True
    max_image_pixels: int = DEFAULT_MAX_PIXELS
    max_text_chars: int = MAX_CHARS
    video_fps: int = DEFAULT_FPS
    tool_timeout: float = _TOOLS.timeout
    fpcalc: str = _TOOLS.fpcalc
    ffmpeg: str = _TOOLS.ffmpeg
    ffprobe: str = _TOOLS.ffprobe

    def __post_init__(self) -> None:
        """Check the values.

        Raises:
            OptionError: A value out of its range, named.
        """
        if self.bits not in UNIT_BITS:
            legal = ", ".join(map(str, UNIT_BITS))
            raise OptionError("bits", f"{self.bits} is not a unit length; use one of {legal}")
        if self.wide and self.bits < 128:
            raise OptionError(
                "wide", f"a WIDE ISCC-CODE needs bits of 128 or more (bits is {self.bits})"
            )
        _within("max_image_pixels", self.max_image_pixels, 1, PILLOW_MAX_PIXELS)
        _within("max_text_chars", self.max_text_chars, 1)
        _within("video_fps", self.video_fps, 1, 60)
        if not self.tool_timeout > 0:
            raise OptionError("tool_timeout", f"must be greater than 0 (got {self.tool_timeout})")
        for name in ("fpcalc", "ffmpeg", "ffprobe"):
            tool = getattr(self, name)
            if not tool or ("/" in tool and not tool.startswith("/")):
                raise OptionError(name, f"{tool!r} is neither a program name nor an absolute path")

    @property
    def tools(self) -> ToolOptions:
        """The external tools and their time limit."""
        return ToolOptions(
            fpcalc=self.fpcalc, ffmpeg=self.ffmpeg, ffprobe=self.ffprobe, timeout=self.tool_timeout
        )

    @property
    def meta_source(self) -> str:
        """Where the Meta-Code's fields come from: ``embedded``, ``name`` or ``off``."""
        if not self.meta:
            return "off"
        return "embedded" if self.extract_meta else "name"


def _within(name: str, value: int, low: int, high: int | None = None) -> None:
    if value < low or (high is not None and value > high):
        bound = f" and at most {high}" if high is not None else ""
        raise OptionError(name, f"must be greater than {low - 1}{bound} (got {value})")
