"""``isccd scan`` starts the fork server early: a scan that ends without hashing (a usage or
configuration error, nothing to hash) leaves no process behind it when it exits."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest


def _marked(marker: str) -> list[int]:
    """The processes whose environment holds ``ISCCD_TEST_MARK=marker``."""
    found = []
    needle = f"ISCCD_TEST_MARK={marker}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="start_early needs two CPUs")
@pytest.mark.parametrize(
    "case", ["config error", "not a directory", "empty tree", "rescan", "usage error", "help"]
)
def test_a_scan_that_hashes_nothing_leaves_no_process_behind(tmp_path: Path, case: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    state = tmp_path / "state"
    env = {**os.environ}
    if case == "config error":
        env["ISCCD_HASHING__WORKERS"] = "abc"
    args = [sys.executable, "-m", "isccd", "scan", "--state", str(state)]
    if case in ("usage error", "help"):  # the fork server starts before the parser runs
        args.append("--no-such-option" if case == "usage error" else "--help")
    target = str(tmp_path / "missing") if case == "not a directory" else str(root)
    if case == "rescan":
        (root / "a.txt").write_text("some text to index once")
        subprocess.run([*args, target], env=env, capture_output=True, check=True, timeout=60)
    marker = uuid.uuid4().hex
    env["ISCCD_TEST_MARK"] = marker
    with (tmp_path / "stderr").open("wb") as err:
        scan = subprocess.Popen([*args, target], env=env, stdout=err, stderr=err)
        returncode = scan.wait(timeout=60)
    left = _marked(marker)  # the command has exited: nothing it started may outlive it
    stderr = (tmp_path / "stderr").read_text()
    expected = {"config error": 78, "not a directory": 2, "usage error": 2}.get(case, 0)
    assert returncode == expected, stderr
    assert left == [], [Path(f"/proc/{pid}/cmdline").read_bytes()[:80] for pid in left]


def _server_pid() -> int | None:
    """The pid of this process's fork server, if it runs (multiprocessing keeps it private)."""
    from multiprocessing import forkserver

    pid: int | None = getattr(forkserver._forkserver, "_forkserver_pid", None)
    return pid


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="start_early needs two CPUs")
def test_the_fork_server_of_a_scan_starts_before_the_parser_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from isccd.cli import main as cli_main

    seen: list[int | None] = []

    def build_parser() -> None:
        seen.append(_server_pid())
        raise SystemExit(2)  # as a usage error would

    monkeypatch.setattr(cli_main, "build_parser", build_parser)
    with pytest.raises(SystemExit):
        cli_main.main(["scan", "--no-such-option"])
    assert seen and seen[0] is not None  # started before the parser
    assert _server_pid() is None  # and ended with the usage error
    with pytest.raises(SystemExit):
        cli_main.main(["status"])
    assert seen[1] is None  # other commands start nothing
