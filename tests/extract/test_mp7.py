"""The MPEG-7 signature reader, on real ffmpeg output and on damaged files."""

from __future__ import annotations

import subprocess
from pathlib import Path

import iscc_core
import pytest

from isccd.extract.mp7 import read_signature
from isccd.iscc import gen_video_code_v0
from tests.extract.media import make_video, needs_ffmpeg
from tests.extract.sdk import needs_sdk, run_sdk

pytestmark = needs_ffmpeg


@pytest.fixture(scope="module")
def signature(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("mp7")
    video = make_video(folder)["bars.mp4"]  # 3 s at 25 fps
    out = folder / "bars.sig"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-loglevel", "error", "-i", str(video), "-vf",
         f"fps=fps=5,signature=format=binary:filename={out}", "-f", "null", "-"],
        check=True,
        timeout=120,
    )  # fmt: skip
    return out


@pytest.mark.slow
def test_reads_what_ffmpeg_wrote(signature: Path) -> None:
    sig = read_signature(signature.read_bytes())
    assert len(sig.times) == 15  # 3 seconds sampled at 5 frames per second
    assert (sig.width, sig.height) == (320, 240)
    assert sig.frames.shape == (15, 380)
    assert set(sig.frames.ravel().tolist()) <= {0, 1, 2}
    assert list(sig.times) == sorted(sig.times)


@needs_sdk
@pytest.mark.slow
def test_equals_the_sdk_reader(signature: Path, tmp_path: Path) -> None:
    (reference,) = run_sdk([{"kind": "mp7", "path": str(signature)}], tmp_path)
    sig = read_signature(signature.read_bytes())
    frames = sig.frames.tolist()
    assert [list(f) for f in frames] == reference["ok"]
    for bits in (64, 256):
        assert gen_video_code_v0(sig.frames, bits) == iscc_core.gen_video_code_v0(frames, bits)


@pytest.mark.slow
def test_truncated_signature_is_refused(signature: Path) -> None:
    data = signature.read_bytes()
    for cut in (0, 10, 40, len(data) // 2, len(data) - 1):
        with pytest.raises(ValueError, match="truncated"):
            read_signature(data[:cut])


@pytest.mark.slow
def test_corrupt_signature_is_refused(signature: Path) -> None:
    data = bytearray(signature.read_bytes())
    data[-5] = 0xFF  # not a valid group of five ternary digits (>= 243)
    with pytest.raises(ValueError, match="corrupt"):
        read_signature(bytes(data))


def test_a_huge_frame_count_is_refused_without_allocating(signature: Path) -> None:
    data = bytearray(signature.read_bytes())
    bits = 129  # NumOfFrames follows the 129-bit header
    value = int.from_bytes(data[:24], "big")
    shift = 24 * 8 - bits - 32
    value = (value & ~((2**32 - 1) << shift)) | ((2**32 - 1) << shift)
    data[:24] = value.to_bytes(24, "big")
    with pytest.raises(ValueError, match="truncated"):
        read_signature(bytes(data))
