"""``isccd errors`` and the failures ``isccd scan`` lists: every file with issues, by kind, with
its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from isccd.cli.errors import fix
from isccd.model import FileIssue, IssueCode, IssueKind
from tests.cli.test_index_cli import prose
from tests.cli.test_text_output import _path_without, _wav, needs_ffprobe
from tests.schemas import check

SCRIPT = Path(sys.executable).with_name("isccd")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "isccd"]


@pytest.fixture
def indexed(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A root scanned without fpcalc: a broken PNG, a WAV, a text and a data file; the root,
    the state directory and the environment."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\nbroken")
    _wav(root / "tone.wav")
    (root / "fine.txt").write_text(prose(30))
    (root / "data.bin").write_bytes(os.urandom(3000))
    env = {
        **os.environ,
        "PATH": _path_without(tmp_path, "fpcalc"),
        "CONFIGURATION_DIRECTORY": str(tmp_path / "etc"),
    }
    return root, tmp_path / "state", env


def _isccd(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, *args], capture_output=True, text=True, timeout=60, check=False, env=env
    )


@pytest.mark.slow
def test_scan_lists_the_files_it_could_not_index(
    indexed: tuple[Path, Path, dict[str, str]],
) -> None:
    root, state, env = indexed
    first = _isccd(env, "scan", "--state", str(state / "first"), str(root), "--json")
    check("scan", json.loads(first.stdout))
    failed = json.loads(first.stdout)["failed"]
    assert [(f["path"], [i["code"] for i in f["issues"]]) for f in failed] == [
        (f"{root}/bad.png", ["invalid"])
    ]
    done = _isccd(env, "scan", "--state", str(state), str(root))
    assert done.returncode == 1
    assert done.stdout.splitlines()[1:] == [
        "1 files could not be indexed:",
        f"  {root}/bad.png: not an image Pillow can decode (fix: check the file: it is corrupt "
        "or truncated)",
    ]
    assert "isccd: fpcalc: install libchromaprint-tools (1 file)" in done.stderr.splitlines()
    # A scan that finds nothing changed has nothing new to tell (`isccd errors` lists them).
    again = _isccd(env, "scan", "--state", str(state), str(root), "--json")
    assert json.loads(again.stdout)["failed"] == []


@pytest.mark.slow
@needs_ffprobe
def test_errors_lists_files_by_kind_with_their_fixes(
    indexed: tuple[Path, Path, dict[str, str]],
) -> None:
    root, state, env = indexed
    _isccd(env, "scan", "--state", str(state), str(root))
    done = _isccd(env, "errors", "--state", str(state))
    assert done.returncode == 1
    assert done.stderr == f"isccd: read {state / 'isccd.db'}\n"
    assert done.stdout.splitlines() == [
        "invalid: 1 file",
        "  fix: check the file: it is corrupt or truncated",
        f"  {root}/bad.png: not an image Pillow can decode",
        "tool_missing: 1 file",
        "  fix: fpcalc: install libchromaprint-tools",
        f"  {root}/tone.wav: fpcalc not found on PATH (the Audio-Code needs it)",
    ]
    every = _isccd(env, "errors", "--state", str(state), "--all").stdout
    assert f"unsupported: 1 file\n  {root}/data.bin: no Content-Code" in every
    document = json.loads(_isccd(env, "errors", "--state", str(state), "--json").stdout)
    check("errors", document)
    assert document["store"] == str(state / "isccd.db")
    assert [f["path"] for f in document["files"]] == [f"{root}/bad.png", f"{root}/tone.wav"]
    assert document["files"][1]["issues"][0]["fix"] == "fpcalc: install libchromaprint-tools"
    lines = _isccd(env, "errors", "--state", str(state), "--jsonl").stdout.splitlines()
    for line in lines:
        check("errors", json.loads(line), "#/$defs/file")
    assert [json.loads(line)["path"] for line in lines] == [f"{root}/bad.png", f"{root}/tone.wav"]
    only = _isccd(env, "errors", "--state", str(state), "--json", str(root / "tone.wav"))
    assert [f["path"] for f in json.loads(only.stdout)["files"]] == [f"{root}/tone.wav"]


@pytest.mark.slow
def test_errors_without_issues_says_so_and_exits_0(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "fine.txt").write_text(prose(31))
    env = {**os.environ, "CONFIGURATION_DIRECTORY": str(tmp_path / "etc")}
    assert _isccd(env, "scan", "--state", str(tmp_path / "state"), str(root)).returncode == 0
    done = _isccd(env, "errors", "--state", str(tmp_path / "state"))
    assert (done.returncode, done.stdout) == (0, "no files with issues\n")


@pytest.mark.parametrize(
    ("code", "says"),
    [
        (IssueCode.ACCESS, "check the permissions"),
        (IssueCode.TOO_LARGE, "raise [hashing] worker_memory"),
        (IssueCode.INTERNAL, "a bug in isccd"),
    ],
)
def test_each_kind_has_its_fix(code: IssueCode, says: str) -> None:
    found = fix(FileIssue("read", IssueKind.ERROR, "whatever", code))
    assert found is not None and says in found
    assert fix(FileIssue("meta", IssueKind.SKIPPED, "off", IssueCode.DISABLED)) is None
