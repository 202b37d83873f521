"""Forged rows in a fleet's shared PostgreSQL: another machine with access to the database
writes rows under this host's name, naming a private folder as their root (here by running
``isccd scan`` as this host on it: any client can write any row). This host's ``report`` must
not read the private file, and its ``dedupe --link --apply`` must not touch it: a host acts on,
and reads, only files under its own roots, each beneath its root.

A real PostgreSQL server (:mod:`tests.pg`), real files, the real commands.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from isccd.cli.main import main
from isccd.dedupe.build import NOT_UNDER_A_ROOT, Found, FoundGroup, observe
from isccd.dedupe.plan import GroupKind
from isccd.report.preview import PreviewOptions
from isccd.report.thumbs import look_at
from tests.cli.test_index_cli import prose
from tests.pg import PgServer

SECRET = "PRIVATE-LINE-of-another-machine"

pytestmark = pytest.mark.slow


@pytest.fixture
def fleet(
    tmp_path: Path, pg_server: PgServer, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path]:
    """This host's root (two copies of a text) and a private folder (a third copy), both
    indexed under this host's name; the configuration watches only the root."""
    root = tmp_path / "root"
    private = tmp_path / "private"
    for folder in (root, private):
        folder.mkdir()
    text = prose(21)
    (root / "a.txt").write_text(text)
    (root / "b.txt").write_text(text)
    (private / "secret.txt").write_text(text)
    (tmp_path / "etc").mkdir()
    monkeypatch.setenv("ISCCD_STORE__URL", pg_url)
    monkeypatch.setenv("ISCCD_STORE__HOST", "media-01")
    monkeypatch.setenv("CONFIGURATION_DIRECTORY", str(tmp_path / "etc"))
    monkeypatch.setenv("RUNTIME_DIRECTORY", str(tmp_path / "no-daemon"))
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path / "state"))
    # The forger: rows under this host's name, for a folder that is not one of its roots.
    assert main(["scan", "-j", "1", str(private)]) == 0
    assert main(["scan", "-j", "1", str(root)]) == 0
    monkeypatch.setenv("ISCCD_WATCH__ROOTS", json.dumps([str(root)]))
    return root, private


def test_dedupe_never_acts_on_a_file_a_forged_row_names(
    fleet: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, private = fleet
    capsys.readouterr()
    # The forged row is there: the index groups the private copy with this host's.
    assert main(["dupes", "--json"]) == 0
    [group] = json.loads(capsys.readouterr().out)["groups"]
    assert str(private / "secret.txt") in {m["path"] for m in group["members"]}

    secret = private / "secret.txt"
    before = secret.stat()
    status = main(["dedupe", "--link", "--apply", "--keep", "path=" + str(private),
                   "--log", str(tmp_path / "log.jsonl")])  # fmt: skip
    out, err = capsys.readouterr()
    assert status == 0, err
    assert f"left out {secret}: {NOT_UNDER_A_ROOT}" in out
    after = secret.stat()
    assert (after.st_ino, after.st_nlink, after.st_mtime_ns) == (
        before.st_ino, before.st_nlink, before.st_mtime_ns,
    )  # fmt: skip
    # This host's own copies were deduplicated, between themselves.
    assert (root / "a.txt").stat().st_ino == (root / "b.txt").stat().st_ino != after.st_ino


def test_the_report_never_reads_a_file_a_forged_row_names(
    fleet: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, private = fleet
    (private / "secret.txt").write_text(SECRET + "\n" + prose(22))
    out = tmp_path / "report.html"
    status = main(["report", "-o", str(out), "-j", "1"])
    _, err = capsys.readouterr()
    assert status == 0, err
    page = out.read_text()
    assert SECRET not in page
    assert prose(21)[:40] in page  # this host's copies are shown
    assert "not under a watched root of this host" in page


def test_a_row_naming_a_path_outside_its_own_root_is_left_out(tmp_path: Path) -> None:
    # A row may say its root is one of this host's and name a path outside it.
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("same")
    outside = tmp_path / "outside.txt"
    outside.write_text("same")
    r = str(root)
    forged = [Found((str(root / "a.txt"),), r, 4), Found((str(outside),), r, 4),
              Found((f"{r}/../outside.txt",), r, 4)]  # fmt: skip
    observed = observe([FoundGroup(GroupKind.EXACT, tuple(forged))], [r])
    assert observed.groups == ()
    assert {e.path: e.reason for e in observed.excluded} == {
        str(outside): NOT_UNDER_A_ROOT,
        f"{r}/../outside.txt": NOT_UNDER_A_ROOT,
    }
    facts = look_at({str(outside): r, f"{r}/../outside.txt": r}, PreviewOptions(), None,
                    roots=[r])  # fmt: skip
    assert {f.preview.note for f in facts.values()} == {
        "not under a watched root of this host: not looked at"
    }
