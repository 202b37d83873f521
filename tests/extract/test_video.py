"""Video signatures from ffmpeg, judged by what ffmpeg wrote and why it stopped."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from isccd.extract.video import DECODE_ERRORS_EXIT
from isccd.hashing import CodeOptions, compute_record
from isccd.model import IssueCode, IssueKind, UnitType
from tests.extract.media import damage_ogg_video, ffmpeg, needs_ffmpeg


@pytest.fixture(scope="module")
def theora(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("theora") / "clip.ogv"
    ffmpeg("-f", "lavfi", "-i", "testsrc=duration=2:size=160x120:rate=25", "-c:v", "libtheora",
           "-g", "250", str(path))  # fmt: skip
    return path.read_bytes()


def _signature_run(path: Path) -> int:
    """ffmpeg's exit status on the file, with isccd's signature command."""
    return subprocess.run(
        ["ffmpeg", "-nostdin", "-loglevel", "error", "-i", str(path), "-an", "-vf",
         "fps=fps=5,signature=format=binary:filename=/dev/null", "-f", "null", "-"],
        capture_output=True, timeout=60, check=False,
    ).returncode  # fmt: skip


@needs_ffmpeg
@pytest.mark.slow
def test_decode_errors_with_a_complete_signature_are_a_warning(
    theora: bytes, tmp_path: Path
) -> None:
    path = tmp_path / "damaged.ogv"
    path.write_bytes(damage_ogg_video(theora, keep=3))  # two frames in three fail
    assert _signature_run(path) == DECODE_ERRORS_EXIT  # ffmpeg complains, but finishes
    record = compute_record(str(path))
    assert not record.failed, record.issues
    assert record.unit(UnitType.VIDEO) is not None
    [issue] = record.issues
    assert (issue.stage, issue.kind, issue.code) == ("video", IssueKind.WARNING, IssueCode.INVALID)
    assert "decode" in issue.reason and "completely" in issue.reason
    intact = tmp_path / "intact.ogv"
    intact.write_bytes(theora)
    clean = compute_record(str(intact))
    assert clean.issues == () and clean.unit(UnitType.VIDEO) is not None


@needs_ffmpeg
def test_a_run_that_writes_no_complete_signature_is_an_error(theora: bytes, tmp_path: Path) -> None:
    path = tmp_path / "ruined.ogv"
    path.write_bytes(damage_ogg_video(theora, keep=10**6))  # every frame fails
    assert _signature_run(path) != 0
    record = compute_record(str(path))
    assert record.failed and record.unit(UnitType.VIDEO) is None
    assert ("video", IssueKind.ERROR, IssueCode.TOOL_FAILED) in [
        (i.stage, i.kind, i.code) for i in record.issues
    ]


#: A stand-in for a tool that runs the real one only once the other tool has started too: it
#: marks its own start, then waits (at most 3 s) for the other's mark. Run one after the other,
#: the first gives up and fails.
_RENDEZVOUS = """#!/bin/sh
[ "$1" = -version ] && exec {real} "$@"
touch {marks}/{me}
tries=0
until [ -e {marks}/{other} ]; do
    tries=$((tries + 1)); [ $tries -gt 300 ] && exit 1
    sleep 0.01
done
exec {real} "$@"
"""


def _rendezvous_tools(folder: Path) -> CodeOptions:
    """ffmpeg and ffprobe that only work when they run at the same time."""
    marks = folder / "marks"
    marks.mkdir()
    paths = {}
    for me, other in (("ffmpeg", "ffprobe"), ("ffprobe", "ffmpeg")):
        real = shutil.which(me)
        assert real is not None
        script = folder / me
        script.write_text(_RENDEZVOUS.format(real=real, marks=marks, me=me, other=other))
        script.chmod(0o755)
        paths[me] = str(script)
    return CodeOptions(ffmpeg=paths["ffmpeg"], ffprobe=paths["ffprobe"])


def _ffprobe(path: Path) -> tuple[dict[str, str], dict[str, object], float]:
    """ffprobe's own answer: the container's tags (lower-case names), the video stream and the
    container's duration."""
    report = json.loads(
        subprocess.run(
            ["ffprobe", "-v", "error", "-print_format", "json", "-show_format", "-show_streams",
             str(path)],
            capture_output=True, timeout=60, check=True,
        ).stdout
    )  # fmt: skip
    tags = {k.lower(): v for k, v in report["format"]["tags"].items()}
    [video] = [s for s in report["streams"] if s["codec_type"] == "video"]
    return tags, video, float(report["format"]["duration"])


@pytest.mark.slow
@needs_ffmpeg
@pytest.mark.parametrize("name", ["clip.mp4", "clip.mov", "clip.mkv", "clip.webm"])
def test_ffprobe_runs_beside_the_signature_and_gives_tags_duration_and_size(
    name: str, tmp_path: Path
) -> None:
    path = tmp_path / name
    codec = ("-c:v", "libvpx") if name.endswith(".webm") else ()
    ffmpeg("-f", "lavfi", "-i", "testsrc=duration=2:size=160x120:rate=25", *codec,
           "-metadata", "title=Tïtle ☃", "-metadata", "comment=A cömment", str(path))  # fmt: skip
    tags, video, duration = _ffprobe(path)
    record = compute_record(str(path), _rendezvous_tools(tmp_path))
    assert record.issues == ()
    assert record.unit(UnitType.VIDEO) is not None
    assert "ffprobe/" in record.unit(UnitType.META).profile  # type: ignore[union-attr]
    assert (record.name, record.description) == (tags["title"], tags["comment"])
    assert (record.width, record.height) == (video["width"], video["height"]) == (160, 120)
    assert record.duration == duration == 2.0


@needs_ffmpeg
def test_a_video_without_frames_keeps_the_tags_ffprobe_read_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "sound-only.mp4"
    ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:duration=1", "-metadata", "title=Only Sound",
           str(path))  # fmt: skip
    log = tmp_path / "ffprobe-runs"
    counting = tmp_path / "ffprobe"
    counting.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {shutil.which("ffprobe")} "$@"\n')
    counting.chmod(0o755)
    record = compute_record(str(path), CodeOptions(ffprobe=str(counting)))
    assert record.unit(UnitType.VIDEO) is None
    assert [(i.stage, i.code) for i in record.issues] == [("video", IssueCode.NO_CONTENT)]
    assert record.name == "Only Sound" and not record.named_by_file
    assert "ffprobe/" in record.unit(UnitType.META).profile  # type: ignore[union-attr]
    runs = [line for line in log.read_text().splitlines() if line != "-version"]
    assert len(runs) == 1, runs  # read once, for the Meta-Code too
