"""``isccd scan`` run where fpcalc is missing, then where it is installed: the Audio-Code skipped
the first time is computed the second, for that file alone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from isccd.hashing import compute_record
from isccd.model import IssueCode, UnitType
from isccd.store import open_store, state_url
from tests.cli.test_index_cli import _scan_command
from tests.extract.media import make_audio, needs_ffmpeg, needs_fpcalc, scene


def _scan(state: Path, root: Path, path: str) -> dict[str, Any]:
    done = subprocess.run(
        _scan_command(state, root),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PATH": path},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [stats] = json.loads(done.stdout)["roots"]
    return stats  # type: ignore[no-any-return]


@needs_ffmpeg
@needs_fpcalc
@pytest.mark.slow
def test_an_audio_code_skipped_without_fpcalc_is_computed_once_it_is_installed(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    tone = root / "tone.wav"
    tone.write_bytes(make_audio(tmp_path / "media")["tone.wav"].read_bytes())
    scene().save(root / "picture.png")
    (root / "notes.txt").write_text("Words about nothing in particular. " * 40)
    # A PATH with the tools isccd uses for audio, except fpcalc.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("ffmpeg", "ffprobe"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    state = tmp_path / "state"

    first = _scan(state, root, str(bin_dir))
    assert (first["added"], first["hashed"]) == (3, 3)
    store = open_store(state_url(state), readonly=True)
    try:
        before = {Path(f.path).name: f for f in store.files_under("/")}
        seq = store.last_seq()
    finally:
        store.close()
    skipped = before["tone.wav"].record
    assert skipped.unit(UnitType.AUDIO) is None
    [issue] = [i for i in skipped.issues if i.stage == "audio"]
    assert issue.code is IssueCode.TOOL_MISSING and "fpcalc/missing" in (issue.profile or "")

    second = _scan(state, root, f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    assert (second["queued"], second["hashed"], second["changed"]) == (1, 1, 1)
    assert (second["added"], second["removed"], second["unchanged"]) == (0, 0, 3)
    store = open_store(state_url(state), readonly=True)
    try:
        after = {Path(f.path).name: f for f in store.files_under("/")}
        events = store.events_since(seq)
    finally:
        store.close()
    assert [(e.type.value, Path(e.path).name) for e in events] == [
        ("file.changed", "tone.wav"),
        ("scan.done", ""),
    ]
    computed = after["tone.wav"].record
    assert computed.unit(UnitType.AUDIO) == compute_record(str(tone)).unit(UnitType.AUDIO)
    assert not [i for i in computed.issues if i.stage == "audio"]
    for kept in (UnitType.DATA, UnitType.INSTANCE):
        assert computed.unit(kept) == skipped.unit(kept)
    assert computed.iscc == compute_record(str(tone)).iscc
    for name in ("picture.png", "notes.txt"):
        assert after[name] == before[name]  # not read, not even stored again
