"""``isccd rescan --wait``: progress on a terminal's stderr while the daemon works, then what
changed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.e2e.conftest import Daemon
from tests.e2e.test_socket_discovery import COMMAND, _client
from tests.terminal import run_with_terminal_stderr


@pytest.mark.slow
def test_rescan_wait_shows_progress_and_ends_with_what_changed(
    make_daemon: Callable[..., Daemon],
) -> None:
    # A settle longer than any start of the command, however busy the machine, keeps the
    # watcher from indexing the new files before the rescan is asked.
    daemon = make_daemon(ISCCD_WATCH__SETTLE="60", ISCCD_WATCH__MAX_DELAY="600")
    (daemon.root / "gone.txt").write_text("to be removed " * 200)
    daemon.start()
    _client(daemon, "rescan", "--wait", "--socket", str(daemon.socket))
    (daemon.root / "one.txt").write_text("the first new file " * 200)
    (daemon.root / "two.txt").write_text("the second new file " * 200)
    (daemon.root / "gone.txt").unlink()
    done = _client(daemon, "rescan", "--wait", "--socket", str(daemon.socket))
    assert done.returncode == 0, done.stderr
    last = done.stdout.splitlines()[-1]
    assert last.startswith("indexed up to seq ")
    assert last.endswith(
        ": 2 added, 0 changed, 0 moved, 1 removed, 0 errors, 0 unstable, 0 duplicates"
    )
    assert "\r" not in done.stdout and "rescanning" not in done.stderr  # stderr is a pipe


@pytest.mark.slow
def test_rescan_wait_draws_progress_on_a_terminal(make_daemon: Callable[..., Daemon]) -> None:
    # As above: the rescan, not the watcher, finds the new file; and the first scan, which
    # may still be running when the daemon is ready, is waited for before it is written.
    daemon = make_daemon(ISCCD_WATCH__SETTLE="60", ISCCD_WATCH__MAX_DELAY="600")
    daemon.start()
    _client(daemon, "rescan", "--wait", "--socket", str(daemon.socket))
    (daemon.root / "new.txt").write_text("a new file " * 200)
    status, out, err = run_with_terminal_stderr(
        [*COMMAND, "rescan", "--wait", "--socket", str(daemon.socket)]
    )
    assert status == 0
    assert b"rescanning: " in err and err.endswith(b"\r\x1b[K")
    assert "\r" not in out and out.splitlines()[-1].endswith("1 added, 0 changed, 0 moved, "
        "0 removed, 0 errors, 0 unstable, 0 duplicates")  # fmt: skip
