"""How the ``isccd`` program exits (:func:`isccd.cli.main.run`): without tearing the
interpreter down, but with its exit statuses, its output flushed or the failure to write it
reported, and the exit handlers run."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

CODE = "ISCC:KACYPXW445FTYNJ3CYSXHAFJMA2HUWULUNRFE3BLHRSCXYH2M5AEGQY"


def _isccd(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    done: subprocess.CompletedProcess[str] = subprocess.run(
        [sys.executable, "-m", "isccd", *args],
        text=True,
        timeout=120,
        check=False,
        **(streams | kwargs),  # type: ignore[call-overload]
    )
    return done


@pytest.mark.parametrize(
    ("args", "status", "says"),
    [
        (["--version"], 0, "isccd "),
        (["explain", "--help"], 0, "usage: isccd explain"),
        (["explain"], 2, "usage: isccd explain"),
        (["no-such-command"], 2, "invalid choice"),
        (["explain", "ISCC:NOT-A-CODE"], 2, "cannot read"),
        (["explain", CODE], 0, "META"),
    ],
)
def test_exit_statuses_and_output(args: list[str], status: int, says: str) -> None:
    done = _isccd(*args)
    assert done.returncode == status, done.stderr
    assert says in done.stdout + done.stderr


def test_output_that_cannot_be_written_fails_the_command() -> None:
    # A full disk behind stdout: the version, still in the buffer (argparse ignores a failed
    # write itself), is written at exit, and that must fail.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    with Path("/dev/full").open("w") as full:
        done = _isccd("--version", stdout=full, stderr=subprocess.PIPE, env=env)
    assert done.returncode != 0
    assert "the output could not be written" in done.stderr


def test_a_reader_that_goes_away_is_not_an_error() -> None:
    reader, writer = os.pipe()
    os.close(reader)  # nobody reads: the first write fails with EPIPE
    try:
        done = _isccd("explain", CODE, stdout=writer, stderr=subprocess.PIPE)
    finally:
        os.close(writer)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_the_exit_handlers_run(tmp_path: Path, short_dir: Path) -> None:
    # A scan's workers leave multiprocessing's temporary directory (its fork server's socket),
    # which an exit handler removes.
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a text to index, long enough to have a code of its own")
    temp = short_dir / "tmp"  # the socket's path must fit in 107 bytes
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    done = _isccd("scan", "--state", str(tmp_path / "state"), "-j", "1", str(root), env=env)
    assert done.returncode == 0, done.stderr
    assert list(temp.iterdir()) == []


@pytest.mark.parametrize(
    ("closed", "args", "status"),
    [
        (1, ["--version"], 0),
        (1, ["explain", CODE], 0),
        (2, ["explain", CODE], 0),
        (2, ["explain"], 2),
        (2, ["selftest"], 0),  # configures logging to stderr
        (2, ["code", __file__], 0),  # shows its progress on stderr when a terminal
    ],
)
def test_a_standard_stream_closed_at_start_is_no_crash(
    closed: int, args: list[str], status: int
) -> None:
    # Started with descriptor 1 or 2 closed (`isccd ... >&-`), Python sets that stream to None:
    # there is nothing to flush at exit, and the command's own status stands.
    shell = f'exec "$@" {closed}>&-'
    done = subprocess.run(
        ["sh", "-c", shell, "sh", sys.executable, "-m", "isccd", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == status, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize("tool", ["cProfile", "coverage"])
def test_a_measured_run_gets_the_interpreters_exit(tmp_path: Path, tool: str) -> None:
    # A profiler or coverage.py writes its report when the interpreter exits, after the
    # program's code has returned: the quick exit would lose it.
    if tool == "coverage" and importlib.util.find_spec("coverage") is None:
        pytest.skip("needs coverage.py installed")
    report = tmp_path / "report"
    runner = {
        "cProfile": ["-m", "cProfile", "-o", str(report)],
        "coverage": ["-m", "coverage", "run", f"--data-file={report}", "--source=isccd.cli"],
    }[tool]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COV_CORE", "COVERAGE"))}
    done = subprocess.run(
        [sys.executable, *runner, "-m", "isccd", "explain", CODE],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert report.stat().st_size > 0


def test_output_cut_short_by_a_full_disk_fails_the_command_even_unbuffered(tmp_path: Path) -> None:
    # With PYTHONUNBUFFERED (python -u, common in containers) stdout writes straight to the
    # file, and Python drops what a short write (a disk filling up) leaves unwritten: the
    # output was cut at 64 KiB without an error.
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], check=True)
    try:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with (disk / "out").open("w") as out:
            done = _isccd(
                "explain", "--json", *[CODE] * 500, stdout=out, stderr=subprocess.PIPE, env=env
            )
        written = (disk / "out").stat().st_size
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
    assert written == 64 * 1024  # the disk is full: the output did not fit
    assert done.returncode != 0, done.stderr
    assert "No space left on device" in done.stderr
