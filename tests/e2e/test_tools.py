"""A tool installed under a running daemon is used after ``systemctl reload`` (SIGHUP), or at the
next safety reconcile: the units that were skipped for want of it are computed, and only those."""

from __future__ import annotations

import asyncio
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from isccd.hashing import compute_record
from isccd.model import EventType, UnitType
from tests.extract.media import make_audio, needs_ffmpeg, needs_fpcalc, scene

from .conftest import Daemon, next_event, of_type

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow


@needs_ffmpeg
@needs_fpcalc
@pytest.mark.parametrize("noticed_by", ["reload", "periodic"])
def test_fpcalc_installed_under_the_daemon_is_used(
    make_daemon: Callable[..., Daemon], tmp_path: Path, noticed_by: str
) -> None:
    bin_dir = tmp_path / "bin"  # the daemon's PATH: ffmpeg and ffprobe, no fpcalc yet
    bin_dir.mkdir()
    for tool in ("ffmpeg", "ffprobe"):
        (bin_dir / tool).symlink_to(shutil.which(tool) or tool)
    interval = "0.3" if noticed_by == "periodic" else "0"
    daemon = make_daemon(PATH=str(bin_dir), ISCCD_WATCH__RECONCILE_INTERVAL=interval)
    tone = daemon.root / "tone.wav"
    tone.write_bytes(make_audio(tmp_path / "media")["tone.wav"].read_bytes())
    picture = daemon.root / "picture.png"
    scene().save(picture)
    daemon.start()

    async def scenario() -> None:
        control = await daemon.client()
        watcher = await daemon.client()
        await control.sync()
        before = await control.get(str(tone))
        assert UnitType.AUDIO not in before.units
        assert any(i.code == "tool_missing" for i in before.issues if i.stage == "audio")
        untouched = await control.get(str(picture))
        await watcher.subscribe()

        (bin_dir / "fpcalc").symlink_to(shutil.which("fpcalc") or "fpcalc")
        if noticed_by == "reload":
            daemon.signal(signal.SIGHUP)
        changed = await next_event(watcher, of_type(EventType.FILE_CHANGED))
        assert changed.path == str(tone)
        done = await next_event(
            watcher, lambda e: e.type is EventType.SCAN_DONE and e.data["hashed"]
        )
        assert (done.data["queued"], done.data["hashed"]) == (1, 1)
        after = await control.get(str(tone))
        fresh = compute_record(str(tone)).unit(UnitType.AUDIO)
        assert fresh is not None
        assert (after.units[UnitType.AUDIO], after.profiles[UnitType.AUDIO]) == (
            fresh.iscc,
            fresh.profile,
        )
        assert after.iscc == compute_record(str(tone)).iscc
        assert await control.get(str(picture)) == untouched
        await control.close()
        await watcher.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert daemon.stop() == 0
    reload_lines = [line for line in daemon.log_lines() if line.get("event") == "versions_changed"]
    assert reload_lines and "fpcalc" in reload_lines[0]["components"]
