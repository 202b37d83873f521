"""Chromaprint features of audio files, from ``fpcalc -raw -json -signed -length 0``.

Debian's fpcalc 1.5.1 exits with status 3 ("Error decoding audio frame (End of file)") at the end
of many streams after printing a complete fingerprint, so a run is judged by its output: a JSON
object with a non-empty ``fingerprint`` is a result whatever the exit status; "Empty
fingerprint" means the audio is too short.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from isccd.errors import NoContentError, ToolError
from isccd.extract.tools import ToolInput, ToolOptions, require_tool, run_tool, tool_version

_INT32 = range(-(2**31), 2**31)

#: The profile component the Audio-Code depends on.
COMPONENT = "fpcalc"


@dataclass(frozen=True, slots=True)
class AudioContent:
    """Chromaprint's view of an audio file.

    Attributes:
        fingerprint: The raw fingerprint as signed 32-bit integers.
        duration: Seconds, as fpcalc measured.
        extractor: ``fpcalc/<version>`` (the Audio-Code depends on it).
    """

    fingerprint: tuple[int, ...]
    duration: float | None
    extractor: str


def extract_audio(inp: ToolInput, tools: ToolOptions) -> AudioContent:
    """Fingerprint the whole input with fpcalc.

    Raises:
        ToolMissingError: fpcalc is not installed.
        NoContentError: The audio is too short to fingerprint.
        ToolError: fpcalc could not decode the input, failed or timed out.
    """
    exe = require_tool(tools.fpcalc, "the Audio-Code", COMPONENT)
    result = run_tool(
        [exe, "-raw", "-json", "-signed", "-length", "0", inp.path],
        timeout=tools.timeout,
        max_output=tools.max_output,
        cwd=inp.workdir,
        pass_fds=inp.pass_fds,
    )
    version = f"{COMPONENT}/{tool_version(exe)}"
    fingerprint, duration = parse_fpcalc(result.stdout)
    if fingerprint:
        return AudioContent(fingerprint, duration, version)
    if "Empty fingerprint" in result.stderr:
        raise NoContentError("audio too short to fingerprint")
    raise ToolError(f"fpcalc failed: {result.last_error_line()}")


def parse_fpcalc(stdout: bytes) -> tuple[tuple[int, ...], float | None]:
    """The fingerprint and duration from fpcalc's JSON output.

    Returns:
        The fingerprint (empty when the output has none) and the duration in seconds.

    Raises:
        ToolError: The output is JSON but its fingerprint is not a list of int32 values.
    """
    try:
        report = json.loads(stdout)
    except ValueError:
        return (), None
    if not isinstance(report, dict):
        return (), None
    raw = report.get("fingerprint")
    if raw is None:
        return (), None
    if not isinstance(raw, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v in _INT32 for v in raw
    ):
        raise ToolError("fpcalc printed a fingerprint that is not a list of int32 values")
    duration = report.get("duration")
    seconds = float(duration) if isinstance(duration, int | float) else None
    return tuple(raw), seconds
