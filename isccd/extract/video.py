"""MPEG-7 frame signatures of video files, from ffmpeg's ``signature`` filter.

The ISCC SDK runs ``ffmpeg -i FILE -vf fps=fps=5,signature=format=binary:filename=SIG -f null -``
and decodes the binary signature file (see :mod:`isccd.extract.mp7`); so does this module, in a
private directory with a bounded signature size.

The SDK uses the signature when ffmpeg exits with status 0. ffmpeg also finishes, writing every
output completely, when more frames failed to decode than its ``-max_error_rate`` allows (two
thirds by default), and then exits with status 69; a damaged stream some of whose frames decode
(or that another ffmpeg build decodes entirely) still has a Video-Code then, with the decoder's
complaint kept as a warning. Any other failure (a crash, a fatal error part-way, a signature
that is missing or cut short) is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from isccd.errors import ExtractionError, NoContentError, ToolError
from isccd.extract.mp7 import Signature, read_signature
from isccd.extract.tools import ToolInput, ToolOptions, require_tool, run_tool, tool_version

#: The SDK's frame rate for signatures (``video_fps``).
DEFAULT_FPS = 5

#: The profile components the Video-Code depends on: the tool, and the frame rate sampled.
COMPONENT = "ffmpeg"
FPS_COMPONENT = "fps"

_VIDEO_ONLY = ("-an", "-sn", "-dn")

#: ffmpeg's exit status when the share of frames that failed to decode exceeded
#: ``-max_error_rate``: processing went on to the end and the outputs were written.
DECODE_ERRORS_EXIT = 69

#: Largest signature file read (about 20 hours of video at 5 frames per second).
MAX_SIGNATURE_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class VideoContent:
    """ffmpeg's view of a video file.

    Attributes:
        frames: The frame signatures, one row of 380 ternary values per frame, in order.
        width: Frame width the signature saw.
        height: Frame height.
        extractor: ``ffmpeg/<version>`` and the frame rate (the Video-Code depends on both).
        decode_errors: What ffmpeg reported when frames failed to decode but it finished and
            wrote the signature completely (exit status 69); ``None`` after a clean run.
    """

    frames: npt.NDArray[np.uint8]
    width: int
    height: int
    extractor: str
    decode_errors: str | None = None


def extract_video(inp: ToolInput, tools: ToolOptions, *, fps: int = DEFAULT_FPS) -> VideoContent:
    """Compute the MPEG-7 frame signatures of the input's first video stream.

    Raises:
        ToolMissingError: ffmpeg is not installed.
        NoContentError: The file has no video frames.
        ToolError: ffmpeg failed or timed out.
        ExtractionError: The signature it wrote is corrupt or too large.
    """
    exe = require_tool(tools.ffmpeg, "the Video-Code", COMPONENT)
    sigfile = inp.workdir / "signature.bin"
    # The filter option parser treats ':' and '\' specially; our private path has neither,
    # and being relative to the working directory keeps it short.
    vf = f"fps=fps={fps},signature=format=binary:filename={sigfile.name}"
    # The SDK's command, plus -an -sn -dn: other streams are not decoded (ffmpeg's choice of
    # video stream is the same without them).
    argv = [exe, "-nostdin", "-hide_banner", "-loglevel", "error", "-i", inp.path]
    result = run_tool(
        [*argv, *_VIDEO_ONLY, "-vf", vf, "-f", "null", "-"],
        timeout=tools.timeout,
        max_output=tools.max_output,
        cwd=inp.workdir,
        pass_fds=inp.pass_fds,
    )
    decode_errors = None
    if result.returncode != 0:
        if "does not contain any stream" in result.stderr:
            raise NoContentError("no video stream")
        if result.returncode != DECODE_ERRORS_EXIT:
            raise ToolError(f"ffmpeg failed: {result.last_error_line()}")
        decode_errors = f"frames failed to decode ({result.last_error_line()})"
    try:
        signature = _signature(sigfile)
    except (NoContentError, ExtractionError) as exc:
        if decode_errors is None:
            raise
        raise ToolError(f"ffmpeg failed: {decode_errors}; {exc}") from exc
    return VideoContent(
        signature.frames,
        signature.width,
        signature.height,
        f"{COMPONENT}/{tool_version(exe)} {FPS_COMPONENT}/{fps}",
        decode_errors,
    )


def _signature(sigfile: Path) -> Signature:
    """The signature ffmpeg wrote, complete (every frame its header announces) and not empty.

    Raises:
        NoContentError: No signature, or one without frames.
        ExtractionError: The signature is over the size limit, cut short or corrupt.
    """
    try:
        size = sigfile.stat().st_size
    except FileNotFoundError as exc:
        raise NoContentError("ffmpeg wrote no video signature (no video frames)") from exc
    if size > MAX_SIGNATURE_BYTES:
        raise ExtractionError(f"video signature of {size} bytes is over the limit")
    try:
        signature = read_signature(sigfile.read_bytes())
    except ValueError as exc:
        raise ExtractionError(str(exc)) from exc
    if not signature.times:
        raise NoContentError("no video frames")
    return signature
