"""Video signatures from ffmpeg, judged by what ffmpeg wrote and why it stopped."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from isccd.extract.video import DECODE_ERRORS_EXIT
from isccd.hashing import compute_record
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
