"""``isccd code`` and ``isccd scan`` hash in the daemon's worker processes: a file over the time
limit costs only its own record, and workers that cannot start fail the command with one
message, recording nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from isccd.hashing import compute_record
from isccd.model import IssueCode
from isccd.store import open_store, state_url


def _tree(root: Path, files: int) -> dict[str, Path]:
    """Small text files, and one sparse file of 8 GiB that takes seconds to hash."""
    root.mkdir()
    small = {}
    for i in range(files):
        path = root / f"note-{i:02}.txt"
        path.write_text(f"note number {i}, " * (i + 3))
        small[path.name] = path
    with (root / "huge.bin").open("wb") as fh:
        fh.truncate(8 << 30)
    return small


def _isccd(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "isccd", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        check=False,
    )


@pytest.mark.slow
def test_code_gives_up_a_file_over_the_time_limit_and_codes_the_rest(tmp_path: Path) -> None:
    small = _tree(tmp_path / "root", 40)
    result = _isccd("code", "--jsonl", "-j", "2", "--file-timeout", "0.5", str(tmp_path / "root"))
    assert result.returncode == 1, result.stderr
    records = {Path(r["path"]).name: r for r in map(json.loads, result.stdout.splitlines())}
    assert set(records) == {*small, "huge.bin"}
    [issue] = records["huge.bin"]["issues"]
    assert issue["code"] == IssueCode.INTERNAL.value
    assert "longer than 0.5 s" in issue["reason"]
    for name, path in small.items():
        assert records[name]["iscc"] == compute_record(str(path)).iscc


@pytest.mark.slow
def test_scan_gives_up_a_file_over_the_time_limit_and_indexes_the_rest(tmp_path: Path) -> None:
    small = _tree(tmp_path / "root", 5)
    state = tmp_path / "state"
    root = str(tmp_path / "root")
    env = {"ISCCD_HASHING__FILE_TIMEOUT": "0.5"}
    result = _isccd("scan", "--state", str(state), "--json", "-j", "2", root, env=env)
    assert result.returncode == 1, result.stderr
    [report] = json.loads(result.stdout)["roots"]
    assert (report["added"], report["errors"]) == (6, 1)
    store = open_store(state_url(state), readonly=True)
    try:
        stored: dict[str, Any] = {Path(f.path).name: f.record for f in store.files_under(root)}
    finally:
        store.close()
    assert [i.code for i in stored["huge.bin"].issues] == [IssueCode.INTERNAL]
    for name, path in small.items():
        assert stored[name].iscc == compute_record(str(path)).iscc


@pytest.mark.slow
def test_workers_that_cannot_start_fail_the_command_and_record_nothing(
    tmp_path: Path, fork_server_dies: dict[str, str]
) -> None:
    _tree(tmp_path / "root", 40)
    root = str(tmp_path / "root")
    env = fork_server_dies

    code = _isccd("code", "--jsonl", "-j", "2", root, env=env)
    assert code.returncode == 1
    assert code.stderr.count("the hashing workers cannot start") == 1
    assert "Traceback" not in code.stderr

    state = tmp_path / "state"
    scan = _isccd("scan", "--state", str(state), "-j", "2", root, env=env)
    assert scan.returncode == 1
    assert "the hashing workers cannot start" in scan.stderr
    assert "Traceback" not in scan.stderr
    store = open_store(state_url(state), readonly=True)
    try:
        assert store.files_under("/") == []  # no file was recorded as failed
    finally:
        store.close()
