"""``isccd scan`` asks the external tools their versions only when a stored unit's profile
names a tool: a scan of texts and data starts none of them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _tools(folder: Path, log: Path) -> None:
    """fpcalc, ffmpeg and ffprobe that say a version and note each run in ``log``."""
    folder.mkdir()
    for name in ("fpcalc", "ffmpeg", "ffprobe"):
        tool = folder / name
        tool.write_text(f"#!/bin/sh\necho \"{name} $*\" >> '{log}'\necho '{name} version 1.2.3'\n")
        tool.chmod(0o755)


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
