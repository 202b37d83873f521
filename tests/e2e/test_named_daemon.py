"""A command answers from the daemon it was told to ask, or from the index that daemon uses, or
not at all: a socket the user named that does not answer is a failure unless ``--state`` names
the index; a user without a daemon of their own reaches the system daemon."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from isccd.cli.connect import connect, find_daemon
from isccd.client import Client
from tests.e2e.conftest import Daemon

COMMAND = [sys.executable, "-m", "isccd"]
CONTENT = b"the same bytes in two files " * 4096


def _client(daemon: Daemon, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A client command whose default places are the test's: its default index is another
    one than the daemon's (``other-state``), and it has no configuration file."""
    environ = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(daemon.base / "home"),
        "RUNTIME_DIRECTORY": str(daemon.base / "nothing-here"),
        "STATE_DIRECTORY": str(daemon.base / "other-state"),
        "CONFIGURATION_DIRECTORY": str(daemon.base / "no-etc"),
        **env,
    }
    return subprocess.run(
        [*COMMAND, *args], capture_output=True, text=True, timeout=120, check=False, env=environ
    )


def _indexed(make_daemon: Callable[..., Daemon]) -> Daemon:
    """A running daemon whose root holds two copies, indexed; and another index, the client's
    default one, holding other files with their own copies."""
    daemon = make_daemon()
    (daemon.root / "a.bin").write_bytes(CONTENT)
    (daemon.root / "b.bin").write_bytes(CONTENT)
    daemon.start()
    with Client(daemon.socket) as client:
        client.sync()
    other = daemon.base / "other-root"
    other.mkdir()
    for name in ("x.txt", "y.txt"):
        (other / name).write_text("another library's copies " * 100)
    scanned = _client(daemon, "scan", str(other))
    assert scanned.returncode == 0, scanned.stderr
    return daemon


@pytest.mark.slow
def test_a_named_socket_that_does_not_answer_fails_unless_state_names_the_index(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = _indexed(make_daemon)
    assert daemon.stop() == 0
    named = {"ISCCD_SERVER__SOCKET": str(daemon.socket)}
    for command in (["dupes"], ["errors"], ["get", str(daemon.root / "a.bin")]):
        done = _client(daemon, *command, **named)
        # Not the client's default index, which would answer with its own files.
        assert done.returncode == 1, (command, done.stdout, done.stderr)
        assert done.stdout == "", command
        assert str(daemon.socket) in done.stderr, done.stderr
        assert "named by ISCCD_SERVER__SOCKET" in done.stderr, done.stderr
        assert "give --state DIR" in done.stderr, done.stderr
    flag = _client(daemon, "dupes", "--socket", str(daemon.socket))
    assert flag.returncode == 1 and "named by --socket" in flag.stderr, flag.stderr
    # --state says which index to read: the daemon's, as it left it.
    state = ["--state", str(daemon.state)]
    dupes = _client(daemon, "dupes", *state, "--json", **named)
    assert dupes.returncode == 0, dupes.stderr
    assert "a.bin" in dupes.stdout and "x.txt" not in dupes.stdout
    errors = _client(daemon, "errors", *state, **named)
    assert errors.returncode == 0, errors.stderr
    assert str(daemon.state) in errors.stderr


@pytest.mark.slow
def test_errors_and_the_dedupe_log_are_the_index_of_the_daemon_that_answers(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = _indexed(make_daemon)
    named = {"ISCCD_SERVER__SOCKET": str(daemon.socket)}
    # The client's configuration does not say where that daemon keeps its index: its own
    # default index is another one, and neither is read nor written beside.
    errors = _client(daemon, "errors", **named)
    assert errors.returncode == 1, errors.stderr
    assert "keeps another index than" in errors.stderr, errors.stderr
    link = _client(daemon, "dedupe", "--link", "--apply", **named)
    assert link.returncode == 1, link.stderr
    assert "keeps another index than" in link.stderr, link.stderr
    assert (daemon.root / "a.bin").stat().st_nlink == 1  # nothing was touched
    assert not (daemon.base / "other-state" / "dedupe").exists()
    # Told where it is (the daemon's configuration), they use it.
    config = daemon.base / "daemon.toml"
    config.write_text(f'[store]\nstate_dir = "{daemon.state}"\n')
    errors = _client(daemon, "errors", "--config", str(config), **named)
    assert errors.returncode == 0, errors.stderr
    assert f"read {daemon.state / 'isccd.db'}" in errors.stderr
    link = _client(daemon, "dedupe", "--link", "--apply", "--config", str(config), **named)
    assert link.returncode == 0, link.stderr
    assert (daemon.root / "a.bin").stat().st_nlink == 2
    assert len(list((daemon.state / "dedupe").glob("*.jsonl"))) == 1
    assert not (daemon.base / "other-state" / "dedupe").exists()


@pytest.mark.slow
def test_a_user_without_a_daemon_of_their_own_reaches_the_system_daemon(
    make_daemon: Callable[..., Daemon], tmp_path: Path
) -> None:
    daemon = make_daemon()
    daemon.start()
    # The system daemon's places, as systemd gives them to it (here the test's daemon's).
    system = {
        "RUNTIME_DIRECTORY": str(daemon.socket.parent),
        "STATE_DIRECTORY": str(daemon.state),
        "CONFIGURATION_DIRECTORY": str(daemon.base / "etc"),
    }
    own = tmp_path / "xdg" / "isccd" / "isccd.sock"
    user = {"XDG_RUNTIME_DIR": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home")}
    found = find_daemon(argparse.Namespace(), user, {**user, **system})
    assert (found.socket, found.system, found.looked) == (daemon.socket, True, own)
    with connect(found.socket):
        pass
    # The user's own socket, when it exists, is theirs to ask, daemon or not.
    own.parent.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(own))
        assert find_daemon(argparse.Namespace(), user, {**user, **system}).socket == own
    own.unlink()
    # So is their own configuration's daemon.
    config = tmp_path / "home" / ".config" / "isccd" / "isccd.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[watch]\nroots = []\n")
    assert find_daemon(argparse.Namespace(), user, {**user, **system}).socket == own


@pytest.mark.skipif(
    os.path.lexists("/run/isccd/isccd.sock"), reason="a system daemon runs on this machine"
)
def test_no_daemon_anywhere_says_where_it_looked(tmp_path: Path) -> None:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "XDG_RUNTIME_DIR": str(tmp_path),
        "HOME": str(tmp_path),
    }
    done = subprocess.run(
        [*COMMAND, "status"], capture_output=True, text=True, timeout=60, check=False, env=env
    )
    assert done.returncode == 1
    assert str(tmp_path / "isccd" / "isccd.sock") in done.stderr, done.stderr
    assert "the system daemon's socket, '/run/isccd/isccd.sock', does not exist" in done.stderr
