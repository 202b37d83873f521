"""The daemon's lifecycle as systemd sees it: readiness, reloads (good and bad), an orderly stop,
and refusing a bad configuration with exit status 78."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import iscc_core
import pytest

from isccd.client import Client
from isccd.hashing import CodeOptions, compute_record
from isccd.model import Event, EventType, IssueCode, UnitType
from isccd.results import DupesQuery

from .conftest import Daemon, events_until, next_event, of_type

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow


def _config(path: Path, roots: list[Path], extra: str = "") -> None:
    listed = ", ".join(f'"{r}"' for r in roots)
    path.write_text(f"[watch]\nroots = [{listed}]\n{extra}", encoding="utf-8")


def test_reload_adds_and_removes_roots_and_keeps_the_old_config_when_the_new_is_bad(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon()
    first, second = daemon.root, daemon.base / "second"
    second.mkdir()
    (first / "one.txt").write_text("a file in the first root")
    (second / "two.txt").write_text("a file in the second root")
    words = [f"word{i % 97}x{i % 13}" for i in range(2000)]
    (second / "draft.txt").write_text(" ".join(words))
    words[500:503] = ["three", "new", "words"]
    (second / "final.txt").write_text(" ".join(words))
    config = daemon.base / "isccd.toml"
    _config(config, [first])
    daemon.start("--config", str(config), watch=False)

    async def scenario() -> None:
        control = await daemon.client()
        watcher = await daemon.client()
        await control.sync()
        await watcher.subscribe()
        assert [r.path for r in (await control.status()).roots] == [str(first)]

        _config(config, [first, second])
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        daemon.signal(signal.SIGHUP)
        reloading = await asyncio.to_thread(daemon.wait_notice, "RELOADING")
        assert int(reloading["MONOTONIC_USEC"]) >= before
        await asyncio.to_thread(daemon.wait_notice, "READY")
        await next_event(watcher, of_type(EventType.FILE_ADDED, second / "two.txt"))
        await control.sync()
        assert [r.path for r in (await control.status()).roots] == [str(first), str(second)]

        # Thresholds: the near duplicates found under the old ones are re-evaluated.
        _config(config, [first, second], "[match]\ntext = 0\ndata = 0\n")
        daemon.signal(signal.SIGHUP)
        resolved = await next_event(watcher, of_type(EventType.DUP_RESOLVED))
        assert resolved.data["reason"] == "threshold"
        assert resolved.data["kind"] == "near"
        await asyncio.to_thread(daemon.wait_notice, "READY")

        _config(config, [first, second], "[match]\ntext = 0\n[log]\nlevel = 'loud'\n")
        daemon.signal(signal.SIGHUP)
        await asyncio.to_thread(daemon.wait_notice, "RELOADING")
        await asyncio.to_thread(daemon.wait_notice, "READY")
        assert [r.path for r in (await control.status()).roots] == [str(first), str(second)]
        refused = [line for line in daemon.log_lines() if line.get("event") == "reload_refused"]
        assert "log.level" in refused[0]["error"]

        _config(config, [second], "[match]\ntext = 0\ndata = 0\n")
        daemon.signal(signal.SIGHUP)
        await next_event(watcher, of_type(EventType.FILE_REMOVED, first / "one.txt"))
        await asyncio.to_thread(daemon.wait_notice, "READY")
        assert [r.path for r in (await control.status()).roots] == [str(second)]

        # A new bit length: the reload's reconcile codes every unit of every file again.
        draft = second / "draft.txt"
        assert {_bits(c) for c in (await control.get(str(draft))).units.values()} == {64}
        _config(config, [second], "[match]\ntext = 0\ndata = 0\n[code]\nbits = 128\n")
        daemon.signal(signal.SIGHUP)
        done = await next_event(watcher, lambda e: e.type is EventType.SCAN_DONE)
        assert (done.data["queued"], done.data["hashed"]) == (3, 3)
        recoded = await control.get(str(draft))
        fresh = compute_record(str(draft), CodeOptions(bits=128))
        assert list(recoded.units.values()) == [u.iscc for u in fresh.units]
        assert {_bits(c) for c in recoded.units.values()} == {128}
        assert recoded.iscc == fresh.iscc
        await control.close()
        await watcher.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert daemon.stop() == 0


def test_reload_of_the_code_options_recodes_only_what_they_affect(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon()
    notes, blob = daemon.root / "notes.txt", daemon.root / "blob.bin"
    notes.write_text("Words with a Meta-Code that comes and goes. " * 30)
    blob.write_bytes(bytes(range(256)) * 16)  # Data- and Instance-Code only
    config = daemon.base / "isccd.toml"
    _config(config, [daemon.root], "[code]\nbits = 128\n")
    daemon.start("--config", str(config), watch=False)

    async def scenario() -> None:
        control = await daemon.client()
        watcher = await daemon.client()
        await control.sync()
        assert UnitType.META in (await control.get(str(notes))).units
        await watcher.subscribe()

        # The Meta-Code turned off: a reconcile computes it (away) alone, in the one file with it.
        _config(config, [daemon.root], "[code]\nbits = 128\nmeta = false\n")
        daemon.signal(signal.SIGHUP)
        done = await next_event(watcher, lambda e: e.type is EventType.SCAN_DONE)
        assert (done.data["queued"], done.data["hashed"]) == (1, 1)
        off = CodeOptions(bits=128, meta=False)
        stored = await control.get(str(notes))
        assert UnitType.META not in stored.units
        assert [i.code for i in stored.issues if i.stage == "meta"] == [IssueCode.DISABLED]
        assert stored.iscc == compute_record(str(notes), off).iscc

        # WIDE: the ISCC-CODE of the file of Data and Instance only is composed again, unread.
        _config(config, [daemon.root], "[code]\nbits = 128\nmeta = false\nwide = true\n")
        daemon.signal(signal.SIGHUP)
        changed = await next_event(watcher, of_type(EventType.FILE_CHANGED, blob))
        wide = compute_record(str(blob), CodeOptions(bits=128, meta=False, wide=True)).iscc
        assert changed.data["iscc"] == wide != compute_record(str(blob), off).iscc
        assert (await control.get(str(blob))).iscc == wide
        await asyncio.to_thread(daemon.wait_notice, "READY")
        await control.close()
        await watcher.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert daemon.stop() == 0


def test_reload_applies_min_size_to_the_stored_files(make_daemon: Callable[..., Daemon]) -> None:
    daemon = make_daemon()
    root = daemon.root
    for name in ("a.cfg", "b.cfg"):
        (root / name).write_text("x=1\n")  # 4 bytes, the same in both
    for package in ("one", "two"):
        (root / package).mkdir()
        (root / package / "__init__.py").write_text("")
    config = daemon.base / "isccd.toml"
    _config(config, [root])
    daemon.start("--config", str(config), watch=False)

    def groups() -> list[list[str]]:
        with Client(daemon.socket) as client:
            found = client.dupes(DupesQuery(near=True)).groups
        return [sorted(Path(m.path).name for m in g.members) for g in found]

    async def reload(extra: str) -> None:
        _config(config, [root], extra)
        daemon.signal(signal.SIGHUP)
        await asyncio.to_thread(daemon.wait_notice, "RELOADING")
        await asyncio.to_thread(daemon.wait_notice, "READY")

    async def scenario() -> None:
        control = await daemon.client()
        watcher = await daemon.client()
        await control.sync()
        # Empty files are indexed, never duplicates; four bytes are enough.
        assert await asyncio.to_thread(groups) == [["a.cfg", "b.cfg"]]
        assert (await control.get(str(root / "one" / "__init__.py"))).duplicates == ()
        await watcher.subscribe()

        await reload("[match]\nmin_size = 5\n")
        resolved = await next_event(watcher, of_type(EventType.DUP_RESOLVED))
        assert (resolved.data["kind"], resolved.data["reason"]) == ("exact", "threshold")
        assert {
            Path(resolved.path).name,
            *(Path(o["path"]).name for o in resolved.data["others"]),
        } == {"a.cfg", "b.cfg"}
        assert await asyncio.to_thread(groups) == []

        await reload("[match]\nmin_size = 0\n")
        found = [await next_event(watcher, of_type(EventType.DUP_EXACT)) for _ in range(2)]
        assert sorted(e.data["size"] for e in found) == [0, 4]
        assert sorted(await asyncio.to_thread(groups)) == [["__init__.py"] * 2, ["a.cfg", "b.cfg"]]
        await control.close()
        await watcher.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert daemon.stop() == 0


def test_sigterm_stops_in_order(make_daemon: Callable[..., Daemon]) -> None:
    # systemd's watchdog at 0.4 s: a heartbeat every 0.2 s while the daemon is healthy.
    daemon = make_daemon(WATCHDOG_USEC="400000")
    (daemon.root / "a.txt").write_text("some words to hash")
    daemon.start()
    assert daemon.socket.exists()
    daemon.wait_notice("WATCHDOG", 10)
    # The systemd status line tells how the startup reconcile goes.
    while "startup reconcile of" not in daemon.wait_notice("STATUS", 10)["STATUS"]:
        pass
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGTERM)
    daemon.wait_notice("STOPPING")
    assert daemon.proc.wait(30) == 0
    assert not daemon.socket.exists()
    events = [line.get("event") for line in daemon.log_lines()]
    assert events.index("daemon_stopping") < events.index("socket_closed")
    assert events[-1] == "daemon_stopped"


def _run(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "isccd", "run", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(cwd),
            "CONFIGURATION_DIRECTORY": str(cwd),
            **(env or {}),
        },
        check=False,
    )


def test_a_bad_configuration_exits_78_naming_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[watch]\nsettle = -1\n")
    result = _run("--config", str(bad), "--watch", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 78
    assert "watch.settle" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1

    result = _run("--state", str(tmp_path / "s"), cwd=tmp_path)
    assert result.returncode == 78
    assert "watch.roots: no directory to watch" in result.stderr

    (tmp_path / "file").write_text("not a directory")
    result = _run("--watch", str(tmp_path / "file"), cwd=tmp_path)
    assert result.returncode == 78
    assert "is not a directory" in result.stderr

    result = _run("--config", str(tmp_path / "nope.toml"), cwd=tmp_path)
    assert result.returncode == 78
    assert "nope.toml: cannot read" in result.stderr


def test_a_store_that_cannot_be_opened_exits_74(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "isccd.db").write_bytes(b"this is not a database" * 100)
    root = tmp_path / "root"
    root.mkdir()
    result = _run("--watch", str(root), "--state", str(state), cwd=tmp_path)
    assert result.returncode == 74
    assert "store_unavailable" in result.stderr
    assert "isccd.db" in result.stderr


def test_hashing_workers_that_cannot_start_stop_the_daemon_with_a_message(
    tmp_path: Path, fork_server_dies: dict[str, str]
) -> None:
    # Every worker start fails, and the daemon gives up after its attempts.
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("never hashed")
    state = tmp_path / "state"
    args = ("--watch", str(root), "--state", str(state), "--socket", str(tmp_path / "sock"))
    result = _run(*args, cwd=tmp_path, env=fork_server_dies)
    assert result.returncode == 1
    assert "workers_unavailable" in result.stderr
    assert result.stderr.count("the hashing workers cannot start") == 1  # said once, at exit
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "sock").exists()  # nothing left behind for a client to connect to


def test_a_policy_changed_while_stopped_is_applied_at_the_next_start_once(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon()
    root = daemon.root
    words = [f"word{i % 97}x{i % 13}" for i in range(2000)]
    (root / "draft.txt").write_text(" ".join(words))
    words[500:503] = ["three", "new", "words"]
    (root / "final.txt").write_text(" ".join(words))
    for name in ("a.cfg", "b.cfg"):
        (root / name).write_text("x=1\n")  # 4 bytes, the same in both
    config = daemon.base / "isccd.toml"
    _config(config, [root])

    async def run_until_synced(since: int) -> tuple[int, list[Event]]:
        """Sync, then read the log from ``since`` as a subscriber resuming there."""
        control = await daemon.client()
        last = await control.sync()
        await control.close()
        events = await events_until(daemon, since, last)
        return last, [e for e in events if e.type.value.startswith("dup.")]

    daemon.start("--config", str(config), watch=False)
    seen, found = asyncio.run(run_until_synced(0))
    assert {e.type for e in found} == {EventType.DUP_EXACT, EventType.DUP_NEAR}
    assert daemon.stop() == 0

    _config(config, [root], "[match]\ntext = 0\ndata = 0\nmin_size = 5\n")
    daemon.start("--config", str(config), watch=False)
    seen, found = asyncio.run(run_until_synced(seen))
    assert {(e.type, e.data["reason"]) for e in found} == {(EventType.DUP_RESOLVED, "threshold")}
    assert {e.data["kind"] for e in found} == {"exact", "near"}
    assert daemon.stop() == 0
    changed = [line for line in daemon.log_lines() if line.get("event") == "thresholds_changed"]
    assert [(line["at"], line["events"]) for line in changed] == [("startup", len(found))]

    daemon.start("--config", str(config), watch=False)  # the same policy: nothing to do
    _, found = asyncio.run(run_until_synced(seen))
    assert found == []
    assert daemon.stop() == 0


def _bits(code: str) -> int:
    """The length of a unit's body, from the unit itself."""
    return len(iscc_core.iscc_decode(code)[4]) * 8
