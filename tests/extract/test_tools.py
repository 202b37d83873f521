"""Running external tools: timeouts kill the whole group, output is bounded, nothing is left."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from isccd.errors import ToolError, ToolMissingError
from isccd.extract.source import open_source
from isccd.extract.tools import ToolResult, require_tool, run_tool, tool_input, tool_version


@pytest.mark.slow
def test_timeout_kills_the_tool_and_its_children(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    script = f"sleep 60 & echo $! > {pidfile}; wait"
    start = time.monotonic()
    with pytest.raises(ToolError, match="timed out"):
        run_tool(["sh", "-c", script], timeout=1.0, max_output=1000)
    assert time.monotonic() - start < 10
    child = int(pidfile.read_text())
    # The grandchild was in the tool's process group and was killed with it.
    for _ in range(100):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)  # reaping by init is asynchronous
    else:
        pytest.fail("the tool's child process survived the timeout")


def test_output_is_bounded() -> None:
    with pytest.raises(ToolError, match="more than 10000 bytes"):
        run_tool(["yes"], timeout=30, max_output=10_000)


def test_stderr_keeps_its_tail_and_a_failure_is_not_an_exception() -> None:
    result = run_tool(
        ["sh", "-c", "i=0; while [ $i -lt 5000 ]; do echo line $i >&2; i=$((i+1)); done; exit 3"],
        timeout=30,
        max_output=1000,
        stderr_tail=1000,
    )
    assert result.returncode == 3
    assert len(result.stderr) <= 1000
    assert result.last_error_line() == "line 4999"


def test_the_reason_is_not_ffmpegs_repeat_note() -> None:
    stderr = "[theora] error in unpack_block_qpis\nError while decoding\n"
    stderr += "    Last message repeated 2 times\n"
    assert ToolResult(69, b"", stderr).last_error_line() == "Error while decoding"
    assert ToolResult(1, b"", "").last_error_line() == "exit status 1"


def test_stdin_is_closed() -> None:
    # `cat` would wait forever on an open stdin.
    result = run_tool(["cat"], timeout=10, max_output=100)
    assert (result.returncode, result.stdout) == (0, b"")


def test_missing_tools_say_so() -> None:
    with pytest.raises(ToolMissingError):
        run_tool(["/nonexistent/fpcalc"], timeout=5, max_output=10)
    with pytest.raises(ToolMissingError, match="the Audio-Code needs it"):
        require_tool("no-such-tool-isccd", "the Audio-Code")


def test_tool_input_reads_the_opened_file_and_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "clip.MP3"
    path.write_bytes(b"original content")
    work = tmp_path / "tmp"
    work.mkdir()
    with open_source(str(path)) as src, tool_input(src.fd, src.path, str(work)) as inp:
        assert inp.path.endswith("input.mp3")  # the extension hint survives
        # Whatever happens to the path now, the tool reads the file that was opened.
        path.unlink()
        path.write_bytes(b"swapped")
        result = run_tool(
            ["cat", inp.path], timeout=10, max_output=100, pass_fds=inp.pass_fds, cwd=inp.workdir
        )
        assert result.stdout == b"original content"
    assert list(work.iterdir()) == []


def test_tool_input_is_removed_on_errors(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"x")
    with (
        open_source(str(path)) as src,
        pytest.raises(RuntimeError),
        tool_input(src.fd, src.path, str(tmp_path)) as inp,
    ):
        (inp.workdir / "leftover").write_bytes(b"partial output")
        raise RuntimeError("tool crashed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]


def test_tool_version_is_read_from_the_tool(tmp_path: Path) -> None:
    fake = tmp_path / "fake-tool"
    fake.write_text("#!/bin/sh\necho 'fake-tool version 9.8.7 (built today)'\n")
    fake.chmod(0o755)
    assert tool_version(str(fake)) == "9.8.7"


def test_a_tool_replaced_by_one_of_the_same_size_and_time_is_asked_again(tmp_path: Path) -> None:
    tool = tmp_path / "same-tool"
    tool.write_text("#!/bin/sh\necho 'same-tool version 1.0.1'\n")
    tool.chmod(0o755)
    assert tool_version(str(tool)) == "1.0.1"
    before = tool.stat()
    upgrade = tmp_path / "same-tool.new"
    upgrade.write_text("#!/bin/sh\necho 'same-tool version 1.0.2'\n")  # as many bytes
    upgrade.chmod(0o755)
    os.utime(upgrade, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same time
    upgrade.replace(tool)
    assert (tool.stat().st_size, tool.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert tool_version(str(tool)) == "1.0.2"
