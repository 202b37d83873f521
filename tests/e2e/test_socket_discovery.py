"""Every client command finds the daemon the same way: ``--socket``, ``ISCCD_SERVER__SOCKET``,
the configuration's ``[server] socket``, then the default socket."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest

from tests.e2e.conftest import Daemon

COMMAND = [sys.executable, "-m", "isccd"]


def _client(daemon: Daemon, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A client command in an environment with no default daemon: the default socket is in an
    empty directory, and the default configuration file is the test's."""
    empty = daemon.base / "nothing-here"
    empty.mkdir(exist_ok=True)
    environ = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(daemon.base),
        "RUNTIME_DIRECTORY": str(empty),
        "STATE_DIRECTORY": str(empty),
        "CONFIGURATION_DIRECTORY": str(daemon.base / "etc"),
        **env,
    }
    return subprocess.run(
        [*COMMAND, *args], capture_output=True, text=True, timeout=60, check=False, env=environ
    )


@pytest.mark.slow
def test_each_client_command_finds_the_daemon_in_the_same_order(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon()
    daemon.start()
    config = daemon.base / "named.toml"
    config.write_text(f'[server]\nsocket = "{daemon.socket}"\n')
    elsewhere = str(daemon.base / "elsewhere.sock")
    for command in (["status"], ["rescan", "--wait"], ["dupes"], ["get", str(daemon.root)]):
        # The configuration names the socket: every command finds the daemon there.
        named = _client(daemon, *command, "--config", str(config))
        assert named.returncode in (0, 1) and "no daemon" not in named.stderr, named.stderr
        assert "read from" not in named.stderr  # the daemon answered, not its store
        # ISCCD_SERVER__SOCKET wins over the file...
        env = _client(daemon, *command, "--config", str(config), ISCCD_SERVER__SOCKET=elsewhere)
        assert elsewhere in env.stderr, env.stderr
        # ...and --socket over both.
        flag = _client(
            daemon, *command, "--config", str(config), "--socket", str(daemon.socket),
            ISCCD_SERVER__SOCKET=elsewhere,
        )  # fmt: skip
        assert elsewhere not in flag.stderr and "no daemon" not in flag.stderr, flag.stderr
    # The default configuration file counts as --config does; without it, the default socket.
    (daemon.base / "etc" / "isccd.toml").write_text(config.read_text())
    assert _client(daemon, "status").returncode == 0
    (daemon.base / "etc" / "isccd.toml").unlink()
    lost = _client(daemon, "status")
    assert lost.returncode == 1 and "nothing-here/isccd.sock" in lost.stderr
    # subscribe too: it replays the log (the rescans above logged their scans).
    subscribed = subprocess.Popen(
        [*COMMAND, "subscribe", "--config", str(config), "--since", "0", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin", "HOME": str(daemon.base)},
    )
    try:
        assert subscribed.stdout is not None
        assert b'"event"' in subscribed.stdout.readline()
    finally:
        subscribed.terminate()
        subscribed.communicate(timeout=30)
