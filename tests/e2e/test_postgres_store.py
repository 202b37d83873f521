"""A daemon whose store is a PostgreSQL database: it indexes its root, answers ``dupes``, and
without it the commands read the database; ``isccd scan`` writes there too. One host here;
several hosts on one database are the store's tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from isccd.cli.main import main
from tests.cli.test_index_cli import prose
from tests.e2e.conftest import Daemon
from tests.pg import PASSWORD, PgServer

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    status = main([*args, "--json"])
    out, err = capsys.readouterr()
    return status, json.loads(out) if out else None, err


def _groups(found: Any) -> list[set[str]]:
    return sorted(({m["path"] for m in g["members"]} for g in found["groups"]), key=sorted)


def test_the_daemon_indexes_into_postgres_and_answers(
    make_daemon: Any,
    pg_server: PgServer,
    pg_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # With a password, as in production: it must appear nowhere the daemon writes.
    url = pg_server.url(pg_url.rsplit("/", 1)[1], "isccd_pw", PASSWORD)
    env = {"ISCCD_STORE__URL": url, "ISCCD_STORE__HOST": "media-01"}
    daemon: Daemon = make_daemon(**env)
    (daemon.root / "a.txt").write_text(prose(1))
    (daemon.root / "copy.txt").write_text(prose(1))
    (daemon.root / "other.txt").write_text(prose(3))
    daemon.start()
    status, _, err = _run(capsys, "rescan", "--wait", "--socket", str(daemon.socket))
    assert status == 0, err
    expected = [{str(daemon.root / "a.txt"), str(daemon.root / "copy.txt")}]
    status, asked, err = _run(capsys, "dupes", "--socket", str(daemon.socket))
    assert status == 0, err
    assert _groups(asked) == expected
    assert daemon.stop() == 0
    assert PASSWORD not in daemon.log.read_text()
    rows = pg_server.sql(
        pg_url.rsplit("/", 1)[1], "SELECT DISTINCT host FROM files UNION SELECT name FROM hosts"
    )
    assert rows == [("media-01",)]

    # No daemon: the commands read the database the configuration names.
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("CONFIGURATION_DIRECTORY", str(daemon.base / "etc"))
    monkeypatch.setenv("RUNTIME_DIRECTORY", str(daemon.base / "no-daemon"))
    # The commands' own state (a scan's mark of the fleet's log) is theirs, not the system's.
    monkeypatch.setenv("STATE_DIRECTORY", str(daemon.base / "commands"))
    status, read, err = _run(capsys, "dupes")
    # Which store answered, on stderr: the database's URL.
    assert status == 0 and err.startswith("isccd: no daemon answers on ") and "postgres" in err
    assert _groups(read) == expected

    # `isccd scan` writes there too: a new copy is found, under the same host.
    (daemon.root / "third.txt").write_text(prose(1))
    status, _, err = _run(capsys, "scan", str(daemon.root))
    assert status == 0, err
    status, read, err = _run(capsys, "dupes")
    assert status == 0, err
    assert _groups(read) == [{*expected[0], str(daemon.root / "third.txt")}]


def test_a_second_daemon_with_the_same_host_name_is_refused(make_daemon: Any, pg_url: str) -> None:
    env = {"ISCCD_STORE__URL": pg_url, "ISCCD_STORE__HOST": "media-01"}
    first: Daemon = make_daemon(**env)
    first.start()
    second: Daemon = make_daemon(**env)
    with pytest.raises(AssertionError, match="exited with 74"):
        second.start()
    assert "host name 'media-01' is in use" in second.log.read_text()
    assert first.stop() == 0


def test_an_unreachable_database_exits_so_that_systemd_retries(
    make_daemon: Any, pg_server: PgServer
) -> None:
    daemon: Daemon = make_daemon()
    url = pg_server.url("postgres", "isccd_pw", PASSWORD).replace("%2Ftmp%2F", "%2Ftmp%2Fgone-")
    env = {**os.environ, "ISCCD_STORE__URL": url, "ISCCD_HASHING__WORKERS": "1"}
    env["CONFIGURATION_DIRECTORY"] = str(daemon.base)
    where = ["--state", str(daemon.state), "--socket", str(daemon.socket)]
    done = subprocess.run(
        [sys.executable, "-m", "isccd", "run", "--watch", str(daemon.root), *where],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr  # not 74: RestartPreventExitStatus= would stop it
    assert "cannot connect to the index database" in done.stderr + done.stdout
    assert PASSWORD not in done.stderr + done.stdout
