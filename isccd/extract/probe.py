"""Duration, frame size and tags of audio and video files, from ``ffprobe``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from isccd.errors import ToolError
from isccd.extract.tools import ToolInput, ToolOptions, require_tool, run_tool, tool_version

#: The profile component of the tags the Meta-Code of audio and video is made from.
COMPONENT = "ffprobe"


@dataclass(frozen=True, slots=True)
class MediaInfo:
    """What ffprobe says about a media file.

    Attributes:
        duration: Seconds (the longest of the container's and the video streams' durations).
        width: Width of the first video stream, in pixels.
        height: Height of the first video stream.
        tags: Container and stream tags, keys lower-cased; container tags take precedence.
        tool: ``ffprobe/<version>``.
    """

    duration: float | None = None
    width: int | None = None
    height: int | None = None
    tags: dict[str, str] = field(default_factory=dict)
    tool: str = ""


def probe_media(inp: ToolInput, tools: ToolOptions) -> MediaInfo:
    """Run ffprobe on the input.

    Raises:
        ToolMissingError: ffprobe is not installed.
        ToolError: It failed, timed out, or printed something unreadable.
    """
    exe = require_tool(tools.ffprobe, "duration, frame size and tags", COMPONENT)
    result = run_tool(
        [
            exe,
            "-hide_banner",
            "-loglevel",
            "error",
            "-print_format",
            "json",
            "-show_format",
            "-show_streams",
            inp.path,
        ],
        timeout=tools.timeout,
        max_output=tools.max_output,
        cwd=inp.workdir,
        pass_fds=inp.pass_fds,
    )
    if result.returncode != 0:
        raise ToolError(f"ffprobe failed: {result.last_error_line()}")
    try:
        report = json.loads(result.stdout)
    except ValueError as exc:
        raise ToolError("ffprobe printed malformed JSON") from exc
    if not isinstance(report, dict):
        raise ToolError("ffprobe printed an unexpected report")
    return parse_probe(report, f"{COMPONENT}/{tool_version(exe)}")


def parse_probe(report: dict[str, Any], tool: str = "") -> MediaInfo:
    """Read the fields isccd uses from ffprobe's JSON report."""
    fmt = report.get("format") or {}
    streams = [s for s in report.get("streams") or [] if isinstance(s, dict)]
    video = [s for s in streams if s.get("codec_type") == "video"]
    candidates = [fmt.get("duration"), *(s.get("duration") for s in video)]
    known = [d for d in map(_number, candidates) if d is not None]
    tags: dict[str, str] = {}
    for source in [fmt, *streams]:
        for key, value in (source.get("tags") or {}).items():
            if isinstance(value, str):
                tags.setdefault(str(key).lower(), value)
    first = video[0] if video else {}
    return MediaInfo(
        duration=max(known) if known else None,
        width=_int(first.get("width")),
        height=_int(first.get("height")),
        tags=tags,
        tool=tool,
    )


def _number(value: object) -> float | None:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and value > 0 else None
