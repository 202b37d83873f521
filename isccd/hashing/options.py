"""The options of :func:`~isccd.hashing.compute_record`: how files are coded."""

from __future__ import annotations

from dataclasses import dataclass, field

from isccd.extract.image import DEFAULT_MAX_PIXELS
from isccd.extract.text import MAX_CHARS
from isccd.extract.tools import ToolOptions
from isccd.extract.video import DEFAULT_FPS

#: The algorithms every unit is computed with (conformant to iscc-core 1.5.0).
ALGORITHM = "iscc/1.5.0"

#: Revision of isccd's extraction recipes (normalization, metadata mapping, tool arguments).
#: Raise it when a change alters what an extractor produces, so stored units are recomputed.
EXTRACTION_REVISION = "isccd-extract/1"

#: The profile component saying where a Meta-Code's name and description come from: the file's
#: ``embedded`` metadata (falling back to its name), its ``name`` only, or nowhere (``off``: no
#: Meta-Code; a skip records it). Changing ``meta`` or ``extract_meta`` outdates the Meta-Codes.
META_SOURCE = "meta"


@dataclass(frozen=True, slots=True)
class CodeOptions:
    """How files are coded. The defaults are the ISCC SDK 0.9.7's.

    Attributes:
        bits: Length of each unit, a multiple of 32 from 64 to 256.
        wide: Make a WIDE ISCC-CODE (128-bit Data and Instance) for files without Meta- and
            Content-Code, when ``bits >= 128``.
        meta: Compute the Meta-Code.
        extract_meta: Take the Meta-Code's name and description from the file's embedded
            metadata (else from the file name only).
        max_image_pixels: Larger images are refused before decoding (decompression bombs).
        max_text_chars: Text extraction stops here (the SDK's fixed 10,000,000).
        video_fps: Frames per second the video signature samples.
        read_size: Bytes per read of the Data/Instance pass (memory used for the pass).
        noatime: Do not update files' access times when allowed.
        tools: External tools, their timeout and output limit, and the temporary directory.
    """

    bits: int = 64
    wide: bool = False
    meta: bool = True
    extract_meta: bool = True
    max_image_pixels: int = DEFAULT_MAX_PIXELS
    max_text_chars: int = MAX_CHARS
    video_fps: int = DEFAULT_FPS
    read_size: int = 2 * 1024 * 1024
    noatime: bool = True
    tools: ToolOptions = field(default_factory=ToolOptions)

    @property
    def meta_source(self) -> str:
        """Where the Meta-Code's fields come from: ``embedded``, ``name`` or ``off``."""
        if not self.meta:
            return "off"
        return "embedded" if self.extract_meta else "name"
