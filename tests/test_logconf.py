"""Logging: JSON lines off a terminal, console lines on one, stdlib loggers through the same
processors, and journald priorities when stderr is the journal."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import structlog

from isccd.logconf import configure_logging

JSON = dict[str, Any]


pytestmark = pytest.mark.usefixtures("restored_logging")


def _lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_json_lines_when_not_on_a_terminal() -> None:
    out = io.StringIO()
    configure_logging("info", "auto", stream=out, env={})
    structlog.get_logger("isccd.test").info(
        "file_processed", path="/srv/a\udcff.jpg", bytes=12, outcome="added"
    )
    structlog.get_logger("isccd.test").debug("not_written")
    (line,) = _lines(out)
    assert line["event"] == "file_processed"
    assert line["level"] == "info"
    assert line["logger"] == "isccd.test"
    assert line["path"] == "/srv/a\udcff.jpg"  # a non-UTF-8 name survives as an escape
    assert line["bytes"] == 12
    assert str(line["timestamp"]).endswith("Z")


def test_stdlib_loggers_go_through_the_same_pipeline() -> None:
    out = io.StringIO()
    configure_logging("info", "json", stream=out, env={})
    logging.getLogger("watchdog.observers.inotify_c").warning("queue overflowed below %r", "/srv")
    logging.getLogger("asyncio").debug("filtered by level")
    (line,) = _lines(out)
    assert line == {
        "event": "queue overflowed below '/srv'",
        "level": "warning",
        "logger": "watchdog.observers.inotify_c",
        "timestamp": line["timestamp"],
    }


def test_the_extra_fields_of_stdlib_calls_are_kept(json_log: Callable[[], list[JSON]]) -> None:
    logging.getLogger("isccd.pipeline").warning(
        "root_device_unavailable", extra={"root": "/srv/disk", "present": 1, "missing": 4}
    )
    (line,) = json_log()
    assert line == {
        "event": "root_device_unavailable",
        "level": "warning",
        "logger": "isccd.pipeline",
        "timestamp": line["timestamp"],
        "root": "/srv/disk",
        "present": 1,
        "missing": 4,
    }


def test_an_extra_field_does_not_replace_the_standard_keys(
    json_log: Callable[[], list[JSON]],
) -> None:
    logging.getLogger("isccd.pipeline").info("composed", extra={"level": "x", "logger": "y"})
    (line,) = json_log()
    assert (line["level"], line["logger"]) == ("info", "isccd.pipeline")


def test_exceptions_are_structured_in_json() -> None:
    out = io.StringIO()
    configure_logging("info", "json", stream=out, env={})
    try:
        int("bad input")
    except ValueError:
        structlog.get_logger().exception("worker_failed", path="/x")
    (line,) = _lines(out)
    assert line["event"] == "worker_failed"
    frames = line["exception"]
    assert isinstance(frames, list)
    assert frames[0]["exc_type"] == "ValueError"
    assert "bad input" in frames[0]["exc_value"]
    assert "locals" not in frames[0]["frames"][0]  # local variables can hold file contents


#: Logs an exception to a console in a fresh interpreter; prints what was written, then whether
#: rich was imported.
_CONSOLE_EXCEPTION = """\
import io, sys
from isccd.logconf import configure_logging
import structlog
out = io.StringIO()
configure_logging("info", "console", stream=out, env={})
try:
    int("bad input")
except ValueError:
    structlog.get_logger().exception("worker_failed")
print(out.getvalue())
print("rich imported:", "rich" in sys.modules)
"""


def test_console_tracebacks_are_plain_text_and_rich_is_not_loaded() -> None:
    """The same plain traceback on every host, whether rich is installed or not (it is in
    the test environment), and no 40 ms import of rich at the start of every command."""
    done = subprocess.run(
        [sys.executable, "-c", _CONSOLE_EXCEPTION],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    out = done.stdout
    assert "worker_failed" in out
    assert "Traceback (most recent call last):" in out
    assert "ValueError: invalid literal for int() with base 10: 'bad input'" in out
    assert "╭" not in out and "│" not in out  # no rich panel
    assert out.rstrip().endswith("rich imported: False")


def test_reconfiguring_replaces_the_handler_and_level() -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_logging("info", "json", stream=first, env={})
    configure_logging("debug", "json", stream=second, env={})
    structlog.get_logger().debug("now_visible")
    assert first.getvalue() == ""
    assert [line["event"] for line in _lines(second)] == ["now_visible"]


def test_console_lines_on_a_terminal() -> None:
    master, slave = os.openpty()
    with os.fdopen(slave, "w", encoding="utf-8") as tty:
        configure_logging("info", "auto", stream=tty, env={})
        structlog.get_logger("isccd.test").warning("watch_degraded", root="/srv/nfs")
        tty.flush()
        text = os.read(master, 65536).decode()
    os.close(master)
    assert "watch_degraded" in text
    assert "root" in text
    assert "/srv/nfs" in text
    assert not text.lstrip().startswith("{")


def test_journal_lines_carry_the_syslog_priority(tmp_path: Path) -> None:
    with (tmp_path / "journal").open("w+", encoding="utf-8") as stream:
        st = os.fstat(stream.fileno())
        configure_logging(
            "info", "auto", stream=stream, env={"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"}
        )
        structlog.get_logger().warning("watch_recrawl", root="/srv")
        logging.getLogger("asyncio").error("loop trouble")
        stream.flush()
        stream.seek(0)
        lines = stream.read().splitlines()
    assert lines[0].startswith("<4>{")
    assert json.loads(lines[0][3:])["event"] == "watch_recrawl"
    assert lines[1].startswith("<3>{")


def test_another_stream_is_not_mistaken_for_the_journal(tmp_path: Path) -> None:
    with (tmp_path / "log").open("w+", encoding="utf-8") as stream:
        configure_logging("info", "auto", stream=stream, env={"JOURNAL_STREAM": "1:2"})
        structlog.get_logger().info("started")
        stream.flush()
        stream.seek(0)
        assert stream.read().startswith("{")


def test_a_commands_configuration_loads_structlog_without_rich() -> None:
    """Every command that reads the configuration loads the components that log: structlog
    comes in through :mod:`isccd.logconf` first, so rich is not loaded on the way either."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys, isccd.config; print('rich' in sys.modules)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "False"
