"""``isccd scan`` asks the external tools their versions only when a stored unit's profile
names a tool: a scan of texts and data starts none of them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from isccd.extract.tools import tool_version
from isccd.model import UnitType
from isccd.store import open_store, state_url
from tests.extract.media import make_audio, needs_ffmpeg, needs_fpcalc


def _tools(folder: Path, log: Path) -> None:
    """fpcalc, ffmpeg and ffprobe that say a version and note each run in ``log``."""
    folder.mkdir()
    for name in ("fpcalc", "ffmpeg", "ffprobe"):
        tool = folder / name
        tool.write_text(f"#!/bin/sh\necho \"{name} $*\" >> '{log}'\necho '{name} version 1.2.3'\n")
        tool.chmod(0o755)


@pytest.mark.slow
def test_a_scan_of_texts_and_data_starts_no_tool(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    for i in range(5):
        (root / f"note-{i}.txt").write_text(f"note number {i} about nothing in particular")
        (root / f"blob-{i}.bin").write_bytes(bytes([i]) * 300)
    log = tmp_path / "runs"
    _tools(tmp_path / "bin", log)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    args = [sys.executable, "-m", "isccd", "scan", "--state", str(tmp_path / "state"), str(root)]
    for _ in range(2):  # a first scan, then a rescan that judges the stored units' profiles
        done = subprocess.run(
            args, env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr
    assert not log.exists(), log.read_text()


def _audio_profile_after(tmp_path: Path, path: str) -> str:
    """The profile of a WAV file's stored Audio-Code after a scan with the tools installed,
    then a scan with ``path`` as ``PATH``."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "tone.wav").write_bytes(make_audio(tmp_path / "media")["tone.wav"].read_bytes())
    state = tmp_path / "state"
    args = [sys.executable, "-m", "isccd", "scan", "--state", str(state), str(root)]
    for each in (os.environ["PATH"], path):
        env = {**os.environ, "PATH": each}
        done = subprocess.run(
            args, env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr
    store = open_store(state_url(state), readonly=True)
    try:
        [stored] = store.files_under("/")
    finally:
        store.close()
    unit = stored.record.unit(UnitType.AUDIO)
    assert unit is not None, stored.record.issues
    return unit.profile


@pytest.mark.slow
@needs_ffmpeg
@needs_fpcalc
def test_a_tool_whose_version_cannot_be_told_outdates_none_of_its_units(tmp_path: Path) -> None:
    # fpcalc as installed, except that it answers -version with nothing (as one that hangs
    # until the timeout, or fails, does): its version cannot be told.
    real = shutil.which("fpcalc")
    assert real is not None
    folder = tmp_path / "bin"
    folder.mkdir()
    mute = folder / "fpcalc"
    mute.write_text(f'#!/bin/sh\n[ "$1" = -version ] && exit 1\nexec {real} "$@"\n')
    mute.chmod(0o755)
    profile = _audio_profile_after(tmp_path, f"{folder}{os.pathsep}{os.environ['PATH']}")
    # Not computed again, under a version nobody knows: the next scan would compute it again.
    assert f"fpcalc/{tool_version(real)}" in profile.split(), profile


@pytest.mark.slow
@needs_ffmpeg
@needs_fpcalc
def test_a_tool_missing_now_outdates_none_of_its_units(tmp_path: Path) -> None:
    # A PATH with the other tools but not fpcalc (removed for an upgrade, a cron job's PATH).
    real = shutil.which("fpcalc")
    assert real is not None
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in ("ffmpeg", "ffprobe"):
        found = shutil.which(tool)
        assert found is not None
        (folder / tool).symlink_to(found)
    profile = _audio_profile_after(tmp_path, str(folder))
    # Kept: computing it again without the tool would only have replaced it by a skip.
    assert f"fpcalc/{tool_version(real)}" in profile.split(), profile
