"""A daemon whose store URL holds its password in forms libpq accepts and a pattern misses (an
unencoded ``#``; a percent-encoded ``password`` parameter name): the daemon connects with it, and
the password is nowhere in ``isccd status``, the status reply, or the daemon's log.

A real PostgreSQL server (:mod:`tests.pg`) asking this role for its password (SCRAM).
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import pytest

from isccd.cli.main import main
from tests.e2e.conftest import Daemon
from tests.pg import PgServer

#: The role's password: '#' and '?' unencoded are where a pattern stops reading it.
SECRET = "Hash#Pw?x9"

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("form", ["hash in the userinfo", "encoded parameter name"])
def test_the_password_is_used_and_shown_nowhere(
    make_daemon: Any,
    pg_server: PgServer,
    pg_url: str,
    capsys: pytest.CaptureFixture[str],
    form: str,
) -> None:
    database = pg_url.rsplit("/", 1)[1]
    role = "isccd_hash_" + database
    pg_server.sql("postgres", f"CREATE ROLE {role} LOGIN PASSWORD '{SECRET}'")
    pg_server.sql(database, f"GRANT ALL ON SCHEMA public TO {role}")
    (pg_server.data / "pg_hba.conf").write_text(
        f"local all {role} scram-sha-256\n" + (pg_server.data / "pg_hba.conf").read_text()
    )
    pg_server.sql("postgres", "SELECT pg_reload_conf()")
    host = urllib.parse.quote(pg_server.socket_dir, safe="")
    if form == "hash in the userinfo":
        url = f"postgresql://{role}:{SECRET}@{host}/{database}"
    else:
        url = f"postgresql://{role}@{host}/{database}?%70assword={urllib.parse.quote(SECRET)}"
    daemon: Daemon = make_daemon(ISCCD_STORE__URL=url, ISCCD_STORE__HOST="media-01")
    daemon.start()  # it connected: the password was read as libpq reads it
    status = main(["status", "--socket", str(daemon.socket)])
    text, _ = capsys.readouterr()
    assert status == 0
    status = main(["status", "--socket", str(daemon.socket), "--json"])
    reply, _ = capsys.readouterr()
    assert status == 0
    assert json.loads(reply)["database"]["url"].count("***") == 1
    assert daemon.stop() == 0
    log = daemon.log.read_text()
    for shown in (text, reply, log):
        assert SECRET not in shown and urllib.parse.quote(SECRET) not in shown
        assert "Hash" not in shown
