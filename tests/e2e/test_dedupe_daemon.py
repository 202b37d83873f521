"""``isccd dedupe --link --apply`` against a running daemon: the groups come from it, the
files are linked by the command (the daemon stays read-only), and the daemon notices the
changes and says so in its events."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable

import pytest

from isccd.client import Client
from isccd.model import EventType
from tests.e2e.conftest import Daemon, events_until

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow

DATA = os.urandom(50_000)


def test_dedupe_links_the_daemon_s_groups_and_the_daemon_notices(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon(ISCCD_WATCH__SETTLE="0.2")
    files = [daemon.root / name for name in ("a.bin", "b.bin", "sub/c.bin")]
    for i, path in enumerate(files):
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(DATA)
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    daemon.start()
    with Client(daemon.socket) as client:
        before = client.sync()
        [group] = client.dupes().groups
        assert len(group.members) == 3
    log = daemon.base / "dedupe.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "isccd", "dedupe", "--link", "--apply", "--socket",
         str(daemon.socket), "--log", str(log)],
        capture_output=True, text=True, env={**os.environ, "CONFIGURATION_DIRECTORY":
        str(daemon.base / "etc"), "STATE_DIRECTORY": str(daemon.base / "cli-state")},
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "linked 2 files in 1 of 1 groups" in done.stdout
    assert len({p.stat().st_ino for p in files}) == 1
    with Client(daemon.socket) as client:
        last = client.sync()
        # Hardlinks are one file: no duplicate group is left, and each copy is a name of a.bin.
        assert client.dupes().groups == ()
        for victim in files[1:]:
            assert str(files[0]) in client.get(str(victim)).links
    events = asyncio.run(events_until(daemon, before, last))
    # Each copy's name now holds a.bin, which changes it (it is no longer a copy but a link),
    # and the name isccd dedupe held the old file under for the instant of the swap is never
    # indexed (a default ignore pattern).
    for victim in files[1:]:
        mine = [e.type for e in events if e.path == str(victim)]
        assert EventType.FILE_CHANGED in mine, events
    assert not [e for e in events if ".isccd-dedupe-" in e.path], events
    assert daemon.stop() == 0
