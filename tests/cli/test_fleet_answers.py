"""The command line's answers in a fleet: two hosts scan into one PostgreSQL database, and a
file of the other host is always shown with its ``host:`` prefix, in ``similar`` as in
``dupes`` and ``get``, even when the answer names that host alone."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from isccd.cli.main import main
from tests.cli.test_index_cli import prose

#: Each test scans with worker processes into a PostgreSQL database.
pytestmark = pytest.mark.slow


def run(*args: str) -> str:
    out = io.StringIO()
    saved, sys.stdout = sys.stdout, out
    try:
        assert main(list(args)) == 0
    finally:
        sys.stdout = saved
    return out.getvalue()


def test_another_hosts_file_shows_its_host_in_every_answer(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No daemon: the commands read the shared database, as host-a.
    monkeypatch.setenv("RUNTIME_DIRECTORY", str(tmp_path / "run"))
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path / "state"))
    monkeypatch.setenv("ISCCD_STORE__URL", pg_url)
    mine, theirs = tmp_path / "a", tmp_path / "b"
    mine.mkdir()
    theirs.mkdir()
    (mine / "report.txt").write_text(prose(1))
    (theirs / "report-copy.txt").write_text(prose(1))
    for host, root in (("host-b", theirs), ("host-a", mine)):
        monkeypatch.setenv("ISCCD_STORE__HOST", host)
        run("scan", "-j", "1", str(root))
    copy = f"host-b:{theirs / 'report-copy.txt'}"
    # Only host-b's file is similar to host-a's: still named with its host.
    similar = run("similar", str(mine / "report.txt"))
    assert f"  {copy}" in similar, similar
    assert copy in run("get", str(mine / "report.txt"))
    assert copy in run("dupes")
    # Narrowed to host-b's files, the answer names host-b alone, which is not this host.
    assert copy in run("dupes", "--host", "host-b")
    # As host-b, its own file is bare and host-a's is named.
    monkeypatch.setenv("ISCCD_STORE__HOST", "host-b")
    similar = run("similar", str(theirs / "report-copy.txt"))
    assert f"host-a:{mine / 'report.txt'}" in similar
    assert f"  {theirs / 'report-copy.txt'}" not in similar
