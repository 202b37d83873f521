"""``isccd scan`` remembers the tools' versions in the cache directory."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from isccd.hashing import current_versions
from isccd.hashing.tool_versions import CACHE_FILE
from tests.cli.test_index_cli import _scan_command
from tests.extract.media import needs_fpcalc


@needs_fpcalc
def test_scan_remembers_the_tools_versions_in_the_cache_directory(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "notes.txt").write_text("Words about nothing in particular. " * 40)
    cache = tmp_path / "cache"
    env = {**os.environ, "CACHE_DIRECTORY": str(cache)}
    done = subprocess.run(
        _scan_command(tmp_path / "state", root),
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    remembered = json.loads((cache / CACHE_FILE).read_text())["tools"]
    asked = current_versions()
    assert {entry["version"] for entry in remembered.values()} == {
        asked[tool] for tool in ("fpcalc", "ffmpeg", "ffprobe") if asked[tool] != "missing"
    }
