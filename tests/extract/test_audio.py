"""Chromaprint features from fpcalc, judged by output (Debian's fpcalc exits 3 when done)."""

from __future__ import annotations

import json
from pathlib import Path

import iscc_core
import pytest

from isccd.errors import NoContentError, ToolError, ToolMissingError
from isccd.extract.audio import extract_audio, parse_fpcalc
from isccd.extract.source import open_source
from isccd.extract.tools import ToolOptions, run_tool, tool_input
from isccd.iscc import gen_audio_code_v0
from tests.extract.media import HAVE_FFMPEG, make_audio, needs_fpcalc


@pytest.fixture(scope="module")
def audio(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if not HAVE_FFMPEG:
        pytest.skip("ffmpeg is not installed")
    return make_audio(tmp_path_factory.mktemp("audio"))


def _extract(path: Path, tools: ToolOptions | None = None) -> object:
    with open_source(str(path)) as src, tool_input(src.fd, src.path) as inp:
        return extract_audio(inp, tools or ToolOptions())


@needs_fpcalc
@pytest.mark.parametrize("name", ["tone.mp3", "tone.wav", "chirp.flac", "chirp.ogg"])
@pytest.mark.slow
def test_features_are_fpcalcs_and_codes_the_references(audio: dict[str, Path], name: str) -> None:
    content = _extract(audio[name])
    direct = run_tool(
        ["fpcalc", "-raw", "-json", "-signed", "-length", "0", str(audio[name])],
        timeout=60,
        max_output=1 << 24,
    )
    fingerprint, duration = parse_fpcalc(direct.stdout)
    # fpcalc's own JSON, read without isccd's parser.
    assert list(content.fingerprint) == json.loads(direct.stdout)["fingerprint"]  # type: ignore[attr-defined]
    assert len(fingerprint) > 20
    assert duration is not None and 7.5 < duration < 8.5
    for bits in (64, 256):
        ours = gen_audio_code_v0(list(fingerprint), bits)
        assert ours == iscc_core.gen_audio_code_v0(list(fingerprint), bits)


@pytest.mark.slow
@needs_fpcalc
def test_too_short_is_a_skip(audio: dict[str, Path]) -> None:
    with pytest.raises(NoContentError, match="too short"):
        _extract(audio["blip.wav"])


@needs_fpcalc
def test_not_audio_is_a_tool_error(tmp_path: Path) -> None:
    path = tmp_path / "fake.mp3"
    path.write_bytes(b"this is not audio at all" * 100)
    with pytest.raises(ToolError, match="fpcalc failed"):
        _extract(path)


def test_missing_fpcalc_is_a_skip(tmp_path: Path) -> None:
    path = tmp_path / "x.wav"
    path.write_bytes(b"RIFF")
    with pytest.raises(ToolMissingError, match="not found"):
        _extract(path, ToolOptions(fpcalc="no-such-fpcalc"))


def test_output_is_judged_not_the_exit_status() -> None:
    assert parse_fpcalc(b'{"duration": 1.5, "fingerprint": [1, -2, 2147483647]}') == (
        (1, -2, 2147483647),
        1.5,
    )
    assert parse_fpcalc(b"") == ((), None)
    with pytest.raises(ToolError):
        parse_fpcalc(b'{"fingerprint": [1, 4294967296]}')
