"""``isccd status``, ``subscribe`` and ``rescan`` against a real server, as real processes."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import pty
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from isccd.cli import rescan
from isccd.cli.main import main
from isccd.cli.service import format_event, format_status
from isccd.client import Client
from isccd.model import Event, EventType
from isccd.protocol import from_wire
from isccd.results import DaemonStatus, DatabaseStatus, FleetHost, HashingStatus
from tests.server.fakes import FakeBackend, ServerThread

ISCCD = [sys.executable, "-m", "isccd"]


@pytest.fixture
def root_dir(short_dir: Path) -> Path:
    """A watched root."""
    root = short_dir / "root"
    (root / "sub").mkdir(parents=True)
    return root


@pytest.fixture
def daemon(root_dir: Path, short_dir: Path) -> Iterator[ServerThread]:
    # The server logs to stdout by default: keep its lines out of the commands' output.
    with (
        capture_logs(),
        ServerThread(FakeBackend([str(root_dir)]), short_dir, queue_size=1000) as server,
    ):
        yield server


def _spawn(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([*ISCCD, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _lines(process: subprocess.Popen[bytes], count: int) -> list[dict[str, object]]:
    assert process.stdout is not None
    return [json.loads(process.stdout.readline()) for _ in range(count)]


def test_no_daemon_is_a_clear_failure(short_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["status"], ["subscribe"], ["rescan"]):
        assert main([*command, "--socket", str(short_dir / "none.sock")]) == 1
        err = capsys.readouterr().err
        assert "no isccd daemon is listening" in err
        assert str(short_dir / "none.sock") in err


def test_status_as_json_and_as_text(
    daemon: ServerThread, root_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    daemon.publish(EventType.FILE_ADDED, str(root_dir), f"{root_dir}/a.txt")
    assert main(["status", "--socket", str(daemon.path), "--json"]) == 0
    status = from_wire(DaemonStatus, json.loads(capsys.readouterr().out))
    assert status.last_seq == 1
    assert status.pid == os.getpid()
    assert status.server is not None
    assert status.server.events_published == 1
    assert status.server.connections == 1

    # Not a terminal, and no --json: text all the same.
    assert main(["status", "--socket", str(daemon.path)]) == 0
    assert "  last seq       1\n" in capsys.readouterr().out


def test_readable_status_on_a_terminal(daemon: ServerThread, root_dir: Path) -> None:
    parent, child = pty.openpty()
    try:
        done = subprocess.run(
            [*ISCCD, "status", "--socket", str(daemon.path)],
            stdout=child,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
        os.close(child)
        child = -1
        out = os.read(parent, 65536).decode()
    finally:
        os.close(parent)
        if child >= 0:
            os.close(child)
    assert done.returncode == 0, done.stderr
    assert "isccd test: ready" in out
    assert str(root_dir) in out
    assert "inotify" in out
    assert "last seq       0" in out


def test_readable_status_lists_the_problems() -> None:
    status = DaemonStatus(
        version="1.0",
        pid=1,
        state="ready",
        started=0.0,
        roots=(),
        queue_depth=0,
        files_indexed=0,
        last_seq=0,
        problems=("the store cannot be written", "the reload was refused"),
    )
    text = format_status(status, now=60.0)
    assert "  problem        the store cannot be written\n" in text
    assert "  problem        the reload was refused\n" in text


def test_readable_status_says_whether_the_workers_run() -> None:
    status = DaemonStatus("1.0", 1, "ready", 0.0, (), 0, 0, 0)
    running = dataclasses.replace(status, hashing=HashingStatus(2, "running", 60.0))
    idle = dataclasses.replace(status, hashing=HashingStatus(0, "idle", 60.0))
    assert "  hash workers   2 running\n" in format_status(running, now=60.0)
    assert "  hash workers   idle (let go after 60 s without a file)\n" in format_status(
        idle, now=60.0
    )


def test_subscribe_replays_streams_and_prints_where_to_resume_on_sigint(
    daemon: ServerThread, root_dir: Path
) -> None:
    for name in ("a", "b"):
        daemon.publish(EventType.FILE_ADDED, str(root_dir), f"{root_dir}/{name}")
    with _spawn("subscribe", "--socket", str(daemon.path), "--since", "0", "--json") as process:
        try:
            assert [e["seq"] for e in _lines(process, 2)] == [1, 2]  # piped: NDJSON
            daemon.publish(
                EventType.DUP_EXACT,
                str(root_dir),
                f"{root_dir}/b",
                others=[{"path": f"{root_dir}/a", "root": str(root_dir)}],
            )
            (live,) = _lines(process, 1)
            assert live["event"] == "dup.exact"
            assert live["others"] == [{"path": f"{root_dir}/a", "root": str(root_dir)}]
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=30)
        finally:
            process.kill()
    assert process.returncode == 0
    assert err.decode().strip().endswith(f"isccd: last seq 3 store {daemon.backend.store}")
    assert b"Traceback" not in err


def test_subscribe_filters_and_stops_cleanly_on_sigterm(
    daemon: ServerThread, root_dir: Path
) -> None:
    daemon.publish(EventType.FILE_ADDED, str(root_dir), f"{root_dir}/a")
    daemon.publish(EventType.DUP_EXACT, "/elsewhere", "/elsewhere/x")
    daemon.publish(EventType.DUP_EXACT, str(root_dir), f"{root_dir}/b")
    with _spawn(
        "subscribe",
        "--socket",
        str(daemon.path),
        "--since",
        "0",
        "--type",
        "dup.exact",
        "--root",
        f"{root_dir}/sub/..",
        "--json",
    ) as process:
        try:
            assert [e["seq"] for e in _lines(process, 1)] == [3]
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=30)
        finally:
            process.kill()
    assert process.returncode == 0
    assert "isccd: last seq 3" in err.decode()


def test_subscribe_exits_quietly_when_its_reader_goes_away(
    daemon: ServerThread, root_dir: Path
) -> None:
    daemon.publish(EventType.FILE_ADDED, str(root_dir), f"{root_dir}/a")
    with _spawn("subscribe", "--socket", str(daemon.path), "--since", "0", "--json") as process:
        try:
            _lines(process, 1)
            assert process.stdout is not None
            process.stdout.close()  # like `isccd subscribe | head -1`
            for i in range(50):  # the next writes fail with EPIPE
                daemon.publish(EventType.FILE_ADDED, str(root_dir), f"{root_dir}/n{i}")
                if process.poll() is not None:
                    break
            assert process.wait(timeout=30) == 0
            assert process.stderr is not None
            err = process.stderr.read().decode()
        finally:
            process.kill()
    assert "isccd: last seq" in err
    assert "Traceback" not in err
    assert "Exception ignored" not in err


def test_a_stopped_subscriber_lags_and_is_told_where_to_resume(
    root_dir: Path, short_dir: Path
) -> None:
    backend = FakeBackend([str(root_dir)])
    options = {"queue_size": 10, "write_buffer_bytes": 4096, "close_timeout": 60}
    with (
        ServerThread(backend, short_dir, **options) as daemon,
        _spawn("subscribe", "--socket", str(daemon.path), "--since", "0", "--json") as process,
    ):
        try:
            daemon.publish(EventType.FILE_ADDED, str(root_dir), f"{root_dir}/first")
            _lines(process, 1)
            process.send_signal(signal.SIGSTOP)  # it stops reading
            count = 0
            while daemon.statistics().broker.lagged == 0:
                count += 1
                assert count < 20_000
                daemon.publish(
                    EventType.FILE_ADDED, str(root_dir), f"{root_dir}/{count}", pad="x" * 500
                )
            process.send_signal(signal.SIGCONT)
            out, err = process.communicate(timeout=60)
        finally:
            process.kill()
    events = [json.loads(line) for line in out.splitlines()]
    assert events[-1]["event"] == "subscriber.lagged"
    resume = events[-1]["seq"]
    assert [e["seq"] for e in events[:-1]] == list(range(2, resume + 1))
    assert process.returncode == 1
    assert f"resume with --since {resume} --store {backend.store}" in err.decode()
    assert err.decode().strip().endswith(f"isccd: last seq {resume} store {backend.store}")


def test_rescan_resolves_its_path_and_can_wait(
    daemon: ServerThread, root_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = root_dir.parent / "link-to-sub"
    link.symlink_to(root_dir / "sub")
    assert main(["rescan", "--socket", str(daemon.path), str(link), "--wait", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "roots": [f"{root_dir}/sub"],
        "seq": 0,
        "changes": {},
    }
    calls = [c for c in daemon.backend.calls if c[0] != "status"]  # status: the progress
    assert calls == [("rescan", f"{root_dir}/sub"), ("sync", f"{root_dir}/sub")]

    assert main(["rescan", "--socket", str(daemon.path), "/etc"]) == 1
    err = capsys.readouterr().err
    assert "outside_roots" in err


def _syncing(backend: FakeBackend) -> threading.Event:
    """An event set once the daemon is asked to sync (a rescan's wait has begun)."""
    asked = threading.Event()
    sync = backend.sync

    async def noted(path: str | None) -> int:
        asked.set()
        return await sync(path)

    backend.sync = noted  # type: ignore[method-assign]
    return asked


def test_rescan_wait_ends_at_once_when_interrupted(daemon: ServerThread) -> None:
    # Ctrl-C while the daemon rescans: the command ends (130) without waiting for the
    # rescan's end. It used to join its waiting thread first: Python 3.13 waits there for the
    # daemon's answer; 3.11 and 3.12 mark a thread whose join was interrupted as stopped, and
    # let the command go by accident.
    gate = daemon.backend.sync_gate = asyncio.Event()  # the daemon's rescan never ends
    asked = _syncing(daemon.backend)
    process = _spawn("rescan", "--socket", str(daemon.path), "--wait")
    try:
        assert asked.wait(timeout=60)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
        daemon.loop.call_soon_threadsafe(gate.set)  # the server's close need not wait for it
    assert process.returncode == 130, err
    assert err.decode().splitlines()[-1] == "isccd: interrupted"


def test_rescan_wait_interrupted_anywhere_leaves_at_once(
    daemon: ServerThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Interrupted while it asks for the progress (not while it waits for its thread), it left
    # through a join of the thread that waits for the daemon's sync: the whole rescan.
    gate = daemon.backend.sync_gate = asyncio.Event()
    asked = _syncing(daemon.backend)
    released = threading.Event()

    def release() -> None:  # a bound, for code that waits for the sync's end: the test fails
        released.set()
        daemon.loop.call_soon_threadsafe(gate.set)

    late = threading.Timer(30, release)

    def interrupted(client: Client, path: str | None, progress: object) -> None:
        client.status()  # a real round trip, as the progress asks
        assert asked.wait(timeout=60)  # the daemon rescans
        late.start()
        raise KeyboardInterrupt

    monkeypatch.setattr(rescan, "_show", interrupted)
    try:
        with pytest.raises(KeyboardInterrupt):
            rescan.wait(lambda: Client(daemon.path), None, 0)
        assert not released.is_set()
    finally:
        late.cancel()
        release()


def test_readable_event_lines_name_the_duplicates() -> None:
    event = Event(
        7,
        EventType.DUP_NEAR,
        0.0,
        "/r",
        "/r/b.jpg",
        {
            "unit": "image",
            "threshold": 12,
            "distance": 3,
            "others": [{"path": "/r/a.jpg", "distance": 3}],
            "count": 4,
        },
    )
    line = format_event(event)
    assert "#7 dup.near" in line
    assert "/r/b.jpg" in line
    assert "~ /r/a.jpg (image 3/12)" in line
    assert "and 3 more" in line


def test_a_readable_resolved_line_names_the_unit_whose_relation_ended() -> None:
    # The Data-Codes drifted apart; the texts are still near, as another event of theirs says.
    event = Event(
        9,
        EventType.DUP_RESOLVED,
        0.0,
        "/r",
        "/r/b.txt",
        {"kind": "near", "unit": "data", "reason": "threshold", "others": [{"path": "/r/a.txt"}]},
    )
    line = format_event(event)
    assert line.endswith("/r/b.txt  ~ /r/a.txt  kind=near  unit=data  reason=threshold"), line


def test_readable_status_shows_the_shared_database_and_the_other_hosts() -> None:
    database = DatabaseStatus(
        url="postgresql://isccd:***@db.example/isccd",
        host="ingest-01",
        connected=True,
        latency_ms=0.84,
        checked=50.0,
        position=95140,
        hosts=(FleetHost("ingest-02", 48.0, 95133), FleetHost("nas-lab", None, 0)),
    )
    status = DaemonStatus("1.0", 1, "ready", 0.0, (), 0, 0, 95140, database=database)
    text = format_status(status, now=60.0)
    assert "database         postgresql://isccd:***@db.example/isccd (as host ingest-01)\n" in text
    assert "  state          connected, 0.8 ms\n" in text
    assert "  log read to    seq 95140\n" in text
    assert "    ingest-02                heard from 12 s ago, last seq 95133\n" in text
    assert "    nas-lab                  heard from never, last seq 0\n" in text
    down = dataclasses.replace(database, connected=False, error="connection refused")
    text = format_status(dataclasses.replace(status, database=down), now=60.0)
    assert "  state          unavailable: connection refused\n" in text


def test_readable_event_lines_name_another_hosts_file_with_its_host() -> None:
    event = Event(
        8,
        EventType.DUP_EXACT,
        0.0,
        "/r",
        "/r/b.jpg",
        {"others": [{"path": "/r/a.jpg", "host": "other"}, {"path": "/r/c.jpg", "host": "me"}]},
        host="me",
    )
    assert "~ other:/r/a.jpg  ~ /r/c.jpg" in format_event(event)
    assert " me:/r/b.jpg" in format_event(event, fleet=True)
