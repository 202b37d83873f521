"""Text for people: the format chosen by flags, names on one line, progress apart from results,
and a missing tool told once."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import wave
from pathlib import Path

import pytest
import structlog

from isccd.cli.escape import shown
from isccd.cli.main import main
from isccd.cli.service import format_event
from isccd.daemon.hasher import DaemonHasher
from isccd.daemon.heartbeat import Progress as Heartbeat
from isccd.extract.missing import MissingTools, missing_tool
from isccd.model import (
    Event,
    EventType,
    FileIssue,
    FileRecord,
    IssueCode,
    IssueKind,
    UnitType,
)
from tests.cli.test_index_cli import prose
from tests.terminal import run_with_terminal_stderr

SCRIPT = Path(sys.executable).with_name("isccd")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "isccd"]
EVIL = "evil\nname.bin"


def isccd(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``isccd`` with stdout and stderr piped."""
    return subprocess.run(
        [*COMMAND, *args], capture_output=True, text=True, timeout=60, check=False, env=env
    )


# -- the format: flags, not the terminal --------------------------------------------------------


@pytest.mark.slow
def test_piped_output_is_text_unless_json_is_asked_for(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(prose(1))
    code = "ISCC:EAASKDNZNYGUUF5A"
    piped = isccd("explain", code)
    assert piped.returncode == 0
    assert piped.stdout.startswith(f"{code}  CONTENT-TEXT-V0-64  valid\n")
    assert json.loads(isccd("explain", code, "--json").stdout)[0]["iscc"] == code
    coded = isccd("code", str(tmp_path / "a.txt"))
    assert coded.stdout.startswith("ISCC:") and str(tmp_path / "a.txt") in coded.stdout
    assert json.loads(isccd("code", str(tmp_path / "a.txt"), "--json").stdout)[0]["iscc"]
    lines = isccd("code", str(tmp_path / "a.txt"), "--jsonl").stdout.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["filename"] == "a.txt"


@pytest.mark.slow
def test_scan_prints_text_when_piped(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "a.txt").write_text(prose(2))
    done = isccd("scan", "--state", str(tmp_path / "state"), str(tmp_path / "root"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{tmp_path / 'root'}: 1 files, 0 unchanged, 1 added")


def test_no_command_looks_at_the_terminal_to_choose_its_format() -> None:
    cli = Path(__file__).resolve().parents[2] / "isccd" / "cli"
    uses = [p.name for p in cli.glob("*.py") if "isatty" in p.read_text(encoding="utf-8")]
    # Progress alone asks, to draw only on a terminal.
    assert uses == ["output.py"]


# -- names on one line --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("plain/name é 日本.txt", "plain/name é 日本.txt"),
        (EVIL, "evil\\nname.bin"),
        ("tab\there\r", "tab\\there\\r"),
        ("back\\slash", "back\\\\slash"),
        ("colour\x1b[31m", "colour\\x1b[31m"),
        ("del\x7f", "del\\x7f"),
        ("latin1 \udce9t\udce9", "latin1 \\xe9t\\xe9"),  # os.fsdecode(b"latin1 \xe9t\xe9")
        ("bidi\u202etxt.exe", "bidi\\u202etxt.exe"),
    ],
)
def test_names_are_escaped_like_ls_b(name: str, text: str) -> None:
    assert shown(name) == text


def test_code_prints_a_name_with_a_newline_on_one_line(tmp_path: Path) -> None:
    (tmp_path / EVIL).write_text(prose(3))
    (tmp_path / "x\x1b[2Jy.txt").write_text(prose(5))
    done = isccd("code", str(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("ISCC:") and lines[0].endswith(f"{tmp_path}/evil\\nname.bin")
    assert lines[3].startswith("ISCC:") and lines[3].endswith(f"{tmp_path}/x\\x1b[2Jy.txt")
    assert "\x1b" not in done.stdout


@pytest.mark.slow
def test_index_answers_print_names_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    text = prose(4)
    (root / EVIL).write_text(text)
    (root / "tab\tcopy.txt").write_text(text)
    state = str(tmp_path / "state")
    assert main(["scan", "--state", state, str(root), "--json"]) == 0
    capsys.readouterr()
    assert main(["dupes", "--state", state]) == 0
    out = capsys.readouterr().out
    assert f"{root}/evil\\nname.bin\n" in out and f"{root}/tab\\tcopy.txt\n" in out
    assert main(["similar", "--state", state, str(root / EVIL)]) == 0
    assert out.count("\n") >= 2 and "tab\\tcopy.txt" in capsys.readouterr().out
    assert main(["get", "--state", state, str(root / EVIL)]) == 0
    assert capsys.readouterr().out.startswith(f"{root}/evil\\nname.bin (indexed)\n")
    assert main(["dedupe", "--link", "--state", state]) == 0  # a dry run
    plan = capsys.readouterr().out
    assert "evil\\nname.bin" in plan and "tab\\tcopy.txt" in plan and "\t" not in plan


def test_events_print_names_on_one_line() -> None:
    event = Event(
        seq=7,
        type=EventType.DUP_EXACT,
        root="/r",
        path=f"/r/{EVIL}",
        time=0.0,
        data={"others": [{"path": "/r/\x1b[2Jclear"}], "note": "a\nb"},
    )
    line = format_event(event)
    assert "\n" not in line and "\x1b" not in line
    assert "/r/evil\\nname.bin" in line and "~ /r/\\x1b[2Jclear" in line and "note=a\\nb" in line


# -- progress on stderr, cleared before results ---------------------------------------------------


def test_progress_goes_to_a_terminal_on_stderr_and_never_into_piped_results(
    tmp_path: Path,
) -> None:
    for i in range(3):
        (tmp_path / f"f{i}.txt").write_text(prose(10 + i))
    status, out, err = run_with_terminal_stderr([*COMMAND, "code", "-j", "1", str(tmp_path)])
    assert status == 0
    assert "coding" not in out and "\r" not in out and "\x1b" not in out
    assert out.count("ISCC:") == 3
    # Drawn on the terminal, and erased (CR, erase line) before the summary.
    assert b"coding: " in err and b"\r\x1b[K3 files: 3 coded, 0 failed" in err


def test_no_progress_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(prose(20))
    done = isccd("code", str(tmp_path))
    assert "coding" not in done.stderr and "\r" not in done.stderr
    assert done.stderr == "1 files: 1 coded, 0 failed\n"


# -- a missing tool, once -------------------------------------------------------------------------


def _wav(path: Path, seconds: float = 2.0) -> None:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(bytes(int(8000 * seconds) * 2))


def _path_without(tmp_path: Path, *missing: str) -> str:
    """A PATH with ffmpeg, ffprobe and fpcalc linked in, except ``missing``."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("ffmpeg", "ffprobe", "fpcalc"):
        found = subprocess.run(["which", name], capture_output=True, text=True, check=False)
        if name not in missing and found.returncode == 0:
            (tools / name).symlink_to(found.stdout.strip())
    return str(tools)


#: For a test that hides fpcalc alone: without ffmpeg, a WAV's tags (read with ffprobe) are a
#: second missing tool.
needs_ffprobe = pytest.mark.skipif(
    shutil.which("ffprobe") is None, reason="needs ffprobe (ffmpeg) for a WAV's tags"
)


@pytest.mark.slow
@needs_ffprobe
def test_a_missing_tool_is_told_once_with_its_package(tmp_path: Path) -> None:
    audio = tmp_path / "audio"
    audio.mkdir()
    for i in range(3):
        _wav(audio / f"s{i}.wav")
    env = {**os.environ, "PATH": _path_without(tmp_path, "fpcalc")}
    done = isccd("code", str(audio), env=env)
    assert done.returncode == 0, done.stderr
    told = [line for line in (done.stdout + done.stderr).splitlines() if "fpcalc" in line]
    assert told == ["isccd: fpcalc: install libchromaprint-tools (3 files)"]
    # The JSON keeps each file's issue, for programs.
    objs = json.loads("[" + isccd("code", str(audio), "--jsonl", env=env).stdout.replace(
        "\n", ",").rstrip(",") + "]")  # fmt: skip
    assert [[i["code"] for i in o["issues"]] for o in objs] == [["tool_missing"]] * 3


def test_missing_tools_are_grouped_by_package() -> None:
    tools = MissingTools()

    def issue(reason: str) -> FileIssue:
        return FileIssue("video", IssueKind.SKIPPED, reason, IssueCode.TOOL_MISSING)

    assert tools.add([issue("ffprobe not found on PATH (tags need it)")]) == [
        "ffprobe: install ffmpeg"
    ]
    assert tools.add([issue("embedded metadata not read (ffmpeg not found on PATH)")]) == []
    assert tools.add([issue("/opt/x/fpcalc not found on PATH (the Audio-Code needs it)")]) == [
        "/opt/x/fpcalc: install libchromaprint-tools"
    ]
    assert tools.lines() == [
        "ffprobe/ffmpeg: install ffmpeg (2 files)",
        "/opt/x/fpcalc: install libchromaprint-tools (1 file)",
    ]
    extra = "documents need the optional extractors: pip install 'isccd[extract]'"
    assert missing_tool(extra) == ("", extra)


class _Pool:
    """Gives each file a record whose Audio-Code is missing for want of fpcalc."""

    async def compute(self, path: str, units: object, *, root: str) -> FileRecord:
        reason = "fpcalc not found on PATH (the Audio-Code needs it)"
        issue = FileIssue("audio", IssueKind.SKIPPED, reason, IssueCode.TOOL_MISSING)
        return FileRecord(path, None, issues=(issue,))

    async def compute_many(self, files: list[tuple[str, str, object]]) -> list[FileRecord]:
        return [await self.compute(path, units, root=root) for root, path, units in files]


def test_the_daemon_logs_a_missing_tool_once() -> None:
    hasher = DaemonHasher(_Pool(), Heartbeat(60.0))  # type: ignore[arg-type]

    async def hash_three() -> None:
        for i in range(3):
            await hasher("/r", f"/r/s{i}.wav", frozenset({UnitType.AUDIO}))

    with structlog.testing.capture_logs() as logs:
        asyncio.run(hash_three())
    told = [e for e in logs if e["event"] == "tool_missing"]
    assert [(e["fix"], e["log_level"]) for e in told] == [
        ("fpcalc: install libchromaprint-tools", "warning")
    ]


@pytest.mark.parametrize(
    "module",
    [
        "isccd.cli.formats",
        "isccd.cli.escape",
        "isccd.cli.connect",
        "isccd.cli.errors",
        "isccd.cli.rescan",
        "isccd.extract.missing",
    ],
)
def test_the_output_helpers_import_nothing_heavy(module: str) -> None:
    heavy = ("numpy", "PIL", "numba", "pydantic", "isccd.pipeline", "isccd.store")
    probe = f"import sys, {module}; print([m for m in {heavy!r} if m in sys.modules])"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=30, check=True
    )
    assert done.stdout.strip() == "[]"
