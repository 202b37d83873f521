"""``isccd scan`` starts the fork server early: a scan that ends without hashing (a usage or
configuration error, nothing to hash) leaves no process behind it when it exits."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
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


@pytest.mark.slow
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
    with pytest.raises(SystemExit):
        cli_main.main(["scan", "--help", "/tmp"])
    assert seen[2] is None  # nor does a scan asked for its help


@pytest.mark.slow
def test_a_scan_stopped_by_sigterm_ends_as_interrupted_and_leaves_nothing(
    tmp_path: Path, short_dir: Path
) -> None:
    # SIGTERM (`timeout`, a stopped unit) mid-scan: the workers are ended, multiprocessing's
    # temporary directory removed, and what was stored so far kept in a sound store.
    root, state, temp = _texts(tmp_path, short_dir, 3000, 600)
    marker = uuid.uuid4().hex
    env = {**os.environ, "TMPDIR": str(temp), "ISCCD_TEST_MARK": marker}
    args = [sys.executable, "-m", "isccd", "scan", "--state", str(state), "-j", "2", str(root)]
    with (tmp_path / "stderr").open("wb") as err:
        scan = subprocess.Popen(args, env=env, stdout=err, stderr=err)
        deadline = time.monotonic() + 60
        # Mid-scan: the first files are stored, many are still to hash.
        while scan.poll() is None and time.monotonic() < deadline and not _stored(state):
            time.sleep(0.01)  # between polls of a real process
        scan.send_signal(signal.SIGTERM)
        _interrupted(scan, tmp_path / "stderr")
    assert _marked(marker) == []
    assert list(temp.iterdir()) == []
    with contextlib.closing(sqlite3.connect(state / "isccd.db")) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert 0 < _stored(state) < 3000


def _texts(tmp_path: Path, short_dir: Path, files: int, size: int) -> tuple[Path, Path, Path]:
    """A tree of ``files`` texts of ``size`` random bytes each (in hex), where its store goes,
    and a short TMPDIR (the fork server's socket is made there, and must fit in 107 bytes)."""
    root = tmp_path / "root"
    root.mkdir()
    for i in range(files):
        (root / f"{i}.txt").write_text(f"text number {i} " + os.urandom(size).hex())
    temp = short_dir / "tmp"
    temp.mkdir()
    return root, tmp_path / "state", temp


def _interrupted(scan: subprocess.Popen[bytes], stderr: Path, status: int = 130) -> None:
    """Wait for a scan sent a signal to end with ``status`` (130: interrupted), without a
    traceback (``stderr``: its output); one that does not end is killed, so that the tests
    after it are not charged with it."""
    try:
        returncode = scan.wait(timeout=60)
    finally:
        if scan.poll() is None:
            scan.kill()
            scan.wait()
    text = stderr.read_text()
    assert returncode == status, text
    assert "Traceback" not in text
    assert "Exception ignored" not in text


def _stored(state: Path) -> int:
    """How many files the store in ``state`` holds (0 before it has its tables)."""
    try:
        with contextlib.closing(
            sqlite3.connect(f"file:{state / 'isccd.db'}?mode=ro", uri=True)
        ) as db:
            count: int = db.execute("SELECT count(*) FROM files").fetchone()[0]
    except sqlite3.Error:
        return 0
    return count


#: Runs ``isccd`` and sends it signals at chosen points, as ``ISCCD_TEST_SIGNALS`` says
#: (``point=SIG+SIG;point=SIG``):
#: - ``put``: in the 4th ``Queue.put`` of the main thread to a queue another thread waits on (a
#:   job handed to the store's thread), after that thread's lock is released and before it
#:   leaves the condition's waiters: a signal that raises in the main thread there leaves a
#:   waiter behind that swallows the queue's next wake-up;
#: - ``workers``: as the hashing workers are let go (``WorkerPool.close``);
#: - ``store``: as the store is closed (``Pipeline.close``);
#: - ``parse``: as the command line is parsed, the fork server started already;
#: - ``exit``: as the exit handlers run, before multiprocessing's removes its files.
_SIGNALS_IN_SCAN = """
import atexit, functools, os, queue, runpy, signal, sys, threading
signal.signal(signal.SIGINT, signal.default_int_handler)  # as from a terminal, not ignored
import multiprocessing.util  # its exit handler first: ours, registered later, runs before it
import isccd.cli.main
from isccd.hashing.pool import WorkerPool
from isccd.pipeline.pipeline import Pipeline
plan = dict(step.split("=") for step in os.environ["ISCCD_TEST_SIGNALS"].split(";"))
def send(point):
    for name in plan.pop(point, "").split("+"):
        if name:
            os.kill(os.getpid(), getattr(signal, name))
put, seen = queue.Queue.put, [0]
def put_then_signal(self, item, block=True, timeout=None):
    waiters = self.not_empty._waiters
    if threading.current_thread() is threading.main_thread() and waiters:
        seen[0] += 1
        if seen[0] == 4:
            with self.not_full:
                self._put(item)
                self.unfinished_tasks += 1
                waiter = waiters[0]
                waiter.release()
                send("put")
                waiters.remove(waiter)
            return
    put(self, item, block, timeout)
queue.Queue.put = put_then_signal
def signalled_first(point, method):
    @functools.wraps(method)
    def run(*args, **kwargs):
        send(point)
        return method(*args, **kwargs)
    return run
WorkerPool.close = signalled_first("workers", WorkerPool.close)
Pipeline.close = signalled_first("store", Pipeline.close)
isccd.cli.main.build_parser = signalled_first("parse", isccd.cli.main.build_parser)
atexit.register(send, "exit")
sys.argv = ["isccd", *sys.argv[1:]]
runpy.run_module("isccd", run_name="__main__", alter_sys=True)
"""


def _signalled_scan(tmp_path: Path, short_dir: Path, signals: str, status: int = 130) -> int:
    """Scan 400 texts with one worker, signalled as ``signals`` says (:data:`_SIGNALS_IN_SCAN`);
    the scan must end with ``status`` (130: interrupted) and no traceback, its temporary files
    removed and its store sound. Returns the size of the write-ahead log the scan left (0:
    none, the store was closed)."""
    root, state, temp = _texts(tmp_path, short_dir, 400, 300)
    env = {**os.environ, "TMPDIR": str(temp), "ISCCD_TEST_SIGNALS": signals}
    args = [sys.executable, "-c", _SIGNALS_IN_SCAN, "scan", "--state", str(state), "-j", "1"]
    with (tmp_path / "stderr").open("wb") as err:
        scan = subprocess.Popen([*args, str(root)], env=env, stdout=err, stderr=err)
        _interrupted(scan, tmp_path / "stderr", status)
    assert list(temp.iterdir()) == []  # the fork server's and the workers' files removed
    wal = state / "isccd.db-wal"
    left = wal.stat().st_size if wal.exists() else 0  # before a connection of ours ends it
    if (state / "isccd.db").exists():  # not when stopped before it was opened
        with contextlib.closing(sqlite3.connect(state / "isccd.db")) as db:
            assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    return left


@pytest.mark.slow
def test_a_sigterm_while_the_scan_hands_the_store_a_job_ends_the_scan(
    tmp_path: Path, short_dir: Path
) -> None:
    # A signal cancels the scan on its event loop, not raised wherever the main thread is:
    # raised in the middle of a queue's wake-up, it left the store's thread asleep on a stop it
    # was never woken for, and the scan waiting for it for ever.
    _signalled_scan(tmp_path, short_dir, "put=SIGTERM")


@pytest.mark.slow
def test_a_second_ctrl_c_does_not_interrupt_the_scan_where_it_stands(
    tmp_path: Path, short_dir: Path
) -> None:
    # Ctrl-C twice: asyncio's own handling cancels the scan at the first and raises the
    # second wherever the main thread is, in the queue's wake-up as above.
    _signalled_scan(tmp_path, short_dir, "put=SIGINT+SIGINT")


@pytest.mark.slow
def test_a_second_sigterm_while_the_workers_stop_lets_them_stop(
    tmp_path: Path, short_dir: Path
) -> None:
    # A unit stopped twice, a `timeout` then its own SIGTERM: a second cancel in the middle of
    # letting the workers go left them attached, and the fork server's end waiting on them.
    _signalled_scan(tmp_path, short_dir, "put=SIGTERM;workers=SIGTERM")


@pytest.mark.slow
def test_a_sigterm_while_the_scan_closes_its_store_lets_it_close(
    tmp_path: Path, short_dir: Path
) -> None:
    # After the scan, as its store is closed: the signal waits for the close, so that the
    # store is left closed (its write-ahead log checkpointed and gone), not as a killed
    # writer leaves it.
    assert _signalled_scan(tmp_path, short_dir, "store=SIGTERM") == 0


@pytest.mark.slow
def test_a_signal_as_the_scan_starts_ends_it_as_interrupted(
    tmp_path: Path, short_dir: Path
) -> None:
    # The fork server is started before the command line is parsed: SIGTERM then killed the
    # scan and left the server's files, SIGINT printed a traceback.
    _signalled_scan(tmp_path, short_dir, "parse=SIGTERM+SIGINT")


@pytest.mark.slow
def test_a_signal_as_the_scan_exits_lets_it_clean_up(tmp_path: Path, short_dir: Path) -> None:
    # Done and exiting: the exit handlers remove multiprocessing's files, and a SIGTERM there
    # killed the scan before they could.
    _signalled_scan(tmp_path, short_dir, "exit=SIGTERM", status=0)
