"""The daemon's configuration carries the current profile versions, asked anew each time it is
built (at start and on every reload), so a tool installed meanwhile is noticed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from isccd.config import build_config
from isccd.settings import load_settings
from tests.extract.media import needs_fpcalc


@needs_fpcalc
def test_versions_are_asked_again_when_the_config_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fpcalc = shutil.which("fpcalc")
    assert fpcalc is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    settings = load_settings(env={}, overrides={"watch": {"roots": [tmp_path]}})
    env = {"STATE_DIRECTORY": str(tmp_path / "state")}

    before = build_config(settings, env=env).pipeline.versions
    assert before["fpcalc"] == "missing"
    assert before["bits"] == "64" and before["iscc"] == "1.5.0"

    (bin_dir / "fpcalc").symlink_to(fpcalc)  # installed under the running daemon
    after = build_config(settings, env=env).pipeline.versions
    reported = subprocess.run([fpcalc, "-version"], capture_output=True, text=True, check=False)
    assert after["fpcalc"] != "missing" and after["fpcalc"] in reported.stdout
    assert {k: v for k, v in after.items() if k != "fpcalc"} == {
        k: v for k, v in before.items() if k != "fpcalc"
    }
