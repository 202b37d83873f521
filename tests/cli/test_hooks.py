"""``isccd subscribe --exec``, the parts that need no daemon: the cursor file (written whole,
0600; anything that is not one refused before a command runs), the variables made from an
event, and the usage errors."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from isccd.cli.cursor import Cursor, holding, parse_cursor, read_cursor, write_cursor
from isccd.cli.hookrun import command_environment, event_environment
from isccd.cli.main import main
from isccd.errors import CursorError
from isccd.model import EventType
from tests.e2e.test_hooks import HOOK
from tests.schemas import check
from tests.server.fakes import FakeBackend, ServerThread

ISCCD = [sys.executable, "-m", "isccd"]
STORE = "5f0c2a8e-93d4-4b6e-a1f2-7c3d9e0b4a17"


def test_a_cursor_is_written_whole_mode_0600_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "hooks" / "notify.cursor"
    assert read_cursor(path) is None  # a new cursor
    with holding(path, print):  # makes the folder
        cursor = Cursor(STORE, 41, frozenset({43}), frozenset({42, 44}))
        write_cursor(path, cursor)
        assert read_cursor(path) == cursor
        write_cursor(path, Cursor(STORE, 44))
    assert read_cursor(path) == Cursor(STORE, 44)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["notify.cursor", "notify.cursor.lock"]
    check("cursor", json.loads(path.read_text()))


def test_a_cursor_is_not_written_through_a_link_planted_at_its_temporary_name(
    tmp_path: Path,
) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("not to be touched")
    path = tmp_path / "c.cursor"
    (tmp_path / "c.cursor.tmp").symlink_to(target)
    with pytest.raises(OSError):
        write_cursor(path, Cursor(STORE, 1))
    assert target.read_text() == "not to be touched"
    assert not path.exists()


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"", "not a cursor"),
        (b"\x00\xff garbage", "not a cursor"),
        (b'{"seq": 12, "store": "x"}', '"format"'),
        (b"[1, 2]", '"format"'),
        (b'{"format": "isccd-subscribe-cursor", "version": 2}', "version 2"),
        (
            b'{"format":"isccd-subscribe-cursor","version":1,"store":"s","seq":-1,'
            b'"done":[],"started":[]}',
            "seq -1",
        ),
        (
            b'{"format":"isccd-subscribe-cursor","version":1,"store":"s","seq":true,'
            b'"done":[],"started":[]}',
            "seq True",
        ),
        (
            b'{"format":"isccd-subscribe-cursor","version":1,"store":"s","seq":5,'
            b'"done":[3],"started":[]}',
            "done",
        ),
        (
            b'{"format":"isccd-subscribe-cursor","version":1,"store":"","seq":5,'
            b'"done":[],"started":[]}',
            "store",
        ),
    ],
)
def test_what_is_not_a_cursor_is_refused_and_nothing_runs(
    short_dir: Path, content: bytes, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = short_dir / "c.cursor"
    path.write_bytes(content)
    with pytest.raises(CursorError, match="not a cursor") as refused:
        read_cursor(path)
    assert says in str(refused.value)
    marker = short_dir / "ran"
    status = main(
        [
            "subscribe",
            "--socket",
            str(short_dir / "none.sock"),  # never asked: the cursor is read first
            "--cursor",
            str(path),
            "--exec",
            f"touch {marker}",
        ]
    )
    assert status == 65
    err = capsys.readouterr().err
    assert "is not a cursor of isccd subscribe" in err and "nothing was run" in err
    assert path.read_bytes() == content  # kept as it is, for someone to look at
    assert not marker.exists()


def test_a_subscriber_waits_for_the_cursor_another_holds(short_dir: Path) -> None:
    path = short_dir / "c.cursor"
    command = [*ISCCD, "subscribe", "--socket", str(short_dir / "none.sock")]
    with holding(path, print) as fd:
        waiting = subprocess.Popen(
            [*command, "--cursor", str(path), "--exec", "true"],
            stderr=subprocess.PIPE,
            text=True,
        )
        assert waiting.stderr is not None
        line = waiting.stderr.readline()
        assert "isccd: waiting for" in line and "c.cursor.lock" in line
        # Another open file of the lock cannot take it either: it is held.
        with pytest.raises(BlockingIOError):
            other = os.open(f"{path}.lock", os.O_RDWR)
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            finally:
                os.close(other)
        assert fd >= 0
    # Let go: it takes the lock, and then finds no daemon.
    assert waiting.wait(60) == 1
    with waiting.stderr:
        assert "no isccd daemon is listening" in waiting.stderr.read()


def test_parse_cursor_takes_what_write_cursor_writes() -> None:
    cursor = Cursor(STORE, 7, frozenset({9}), frozenset({8}))
    assert parse_cursor(cursor.to_json()) == cursor


def test_the_variables_of_an_event() -> None:
    wire = {
        "event": "file.changed",
        "seq": 42,
        "time": 1718000000.25,
        "root": "/srv",
        "path": "/srv/a b/$(rm -rf ~);x\udcff",
        "host": "nas",
        "iscc": None,
        "size": 10,
        "units": {"image": "ISCC:EEA", "data": "ISCC:GAA"},
        "previous": {"iscc": "ISCC:KEC", "size": 9, "deeper": {"x": 1}},
        "from-root": "/old",
        "walked": True,
        "others": [{"path": "/srv/b"}],
        "reason": "a\0b",
    }
    env = event_environment(wire)
    assert env == {
        "ISCCD_EVENT_TYPE": "file.changed",
        "ISCCD_EVENT_SEQ": "42",
        "ISCCD_EVENT_TIME": "1718000000.25",
        "ISCCD_EVENT_ROOT": "/srv",
        "ISCCD_EVENT_PATH": "/srv/a b/$(rm -rf ~);x\udcff",
        "ISCCD_EVENT_HOST": "nas",
        "ISCCD_EVENT_ISCC": "",
        "ISCCD_EVENT_SIZE": "10",
        "ISCCD_EVENT_UNITS_IMAGE": "ISCC:EEA",
        "ISCCD_EVENT_UNITS_DATA": "ISCC:GAA",
        "ISCCD_EVENT_PREVIOUS_ISCC": "ISCC:KEC",
        "ISCCD_EVENT_PREVIOUS_SIZE": "9",
        "ISCCD_EVENT_FROM_ROOT": "/old",
        "ISCCD_EVENT_WALKED": "true",
    }
    # A member of the event wins over a nested one of the same name.
    assert event_environment({"a_b": "top", "a": {"b": "nested"}}) == {"ISCCD_EVENT_A_B": "top"}


def test_a_commands_environment_has_no_event_variable_from_elsewhere() -> None:
    base = {"HOME": "/home/me", "ISCCD_EVENT_PATH": "/stale", "ISCCD_EVENT_UNIT": "image"}
    wire = {"event": "scan.done", "seq": 3, "time": 1.0, "root": "/r", "path": ""}
    env = command_environment(base, wire, STORE, redelivered=True)
    assert env["HOME"] == "/home/me"
    assert env["ISCCD_EVENT_PATH"] == "" and "ISCCD_EVENT_UNIT" not in env
    assert env["ISCCD_HOOK_STORE"] == STORE and env["ISCCD_HOOK_REDELIVERED"] == "1"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--exec", "true", "--json"], "--json and --exec"),
        (["--exec", "'unbalanced"], "--exec: No closing quotation"),
        (["--exec", ""], "--exec: no command given"),
        (["--exec", "no-such-program-anywhere"], "is not found on PATH"),
        (["--exec", "/no/such/program"], "is not an executable file"),
        (["--cursor", "c", "--jobs", "2"], "--cursor, --jobs without --exec"),
    ],
)
def test_usage_errors(
    short_dir: Path,
    argv: list[str],
    says: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(short_dir)
    assert main(["subscribe", "--socket", str(short_dir / "none.sock"), *argv]) == 2
    assert says in capsys.readouterr().err
    assert list(short_dir.iterdir()) == []  # no cursor made, nothing asked


@pytest.mark.parametrize("argv", [["--jobs", "0"], ["--timeout", "-1"], ["--on-failure", "x"]])
def test_out_of_range_options_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["subscribe", "--exec", "true", *argv])
    assert exited.value.code == 2


@pytest.mark.slow
def test_a_subscriber_whose_commands_fall_behind_is_lagged_and_resumes_by_itself(
    short_dir: Path,
) -> None:
    root = short_dir / "root"
    root.mkdir()
    hook = short_dir / "hook.py"
    hook.write_text(HOOK)
    where = short_dir / "hook"
    where.mkdir()
    backend = FakeBackend([str(root)])
    options = {"queue_size": 10, "write_buffer_bytes": 4096, "close_timeout": 60}
    command = f"{sys.executable} -I {hook} hold-on {where} first"
    with (
        capture_logs(),
        ServerThread(backend, short_dir, **options) as daemon,
        subprocess.Popen(
            [*ISCCD, "subscribe", "--socket", str(daemon.path), "--since", "0", "--exec", command],
            stderr=subprocess.PIPE,
        ) as process,
    ):
        try:
            daemon.publish(EventType.FILE_ADDED, str(root), f"{root}/first")
            wait_until("the first command", (where / "waiting").exists, where)
            count = 0
            # Its command holds the subscriber: it reads no more, and the daemon lags it.
            while daemon.statistics().broker.lagged == 0:
                count += 1
                assert count < 5000
                pad = "x" * 100_000  # a few hundred events fill what is read ahead
                daemon.publish(EventType.FILE_ADDED, str(root), f"{root}/{count}", pad=pad)
            # Lagged after about 8 MiB read ahead and what the sockets hold, not hundreds.
            assert count < 400
            (where / "release").touch()
            wait_until("every event run", lambda: len(_runs(where)) == count + 1, where)
            assert process.poll() is None  # it went on, after the lag
            assert daemon.statistics().broker.lagged == 1
            process.send_signal(signal.SIGTERM)
            assert process.wait(60) == 0
        finally:
            process.kill()
    assert [r["seq"] for r in _runs(where)] == list(range(1, count + 2))  # each once, in order


def _runs(where: Path) -> list[dict[str, Any]]:
    """The runs the hook recorded, a line each; a line still being written (no newline yet:
    a run's line of 100 KB is more than one write) is left for the next look."""
    path = where / "runs"
    text = path.read_text() if path.exists() else ""
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines()]


def wait_until(what: str, test: Callable[[], bool], where: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not test():
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {_runs(where)}"
        time.sleep(0.02)
