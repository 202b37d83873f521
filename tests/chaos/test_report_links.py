"""``isccd report`` after a folder inside a root was swapped for a symbolic link to a private
folder: the private files' first lines and pictures must not reach the page.

The library is indexed; then ``ROOT/shared`` (a text and a photo, each with a copy elsewhere in
the root, so both are in groups) is moved away and replaced by a link to a private folder
holding other files of the same names. Every path the report reads is opened beneath its root,
so the link is refused, and the page shows an icon saying why.
"""

from __future__ import annotations

import base64
import stat
from pathlib import Path

import pytest

from isccd.cli.main import main
from isccd.report.preview import PreviewOptions, make_preview
from tests.cli.test_index_cli import prose
from tests.report.conftest import picture

SECRET = "PRIVATE-LINE-never-to-be-shown"

pytestmark = pytest.mark.slow


def _library(root: Path) -> None:
    (root / "shared").mkdir(parents=True)
    (root / "copies").mkdir()
    text = prose(11)
    (root / "shared" / "notes.txt").write_text(text)
    (root / "copies" / "notes.txt").write_text(text)
    picture(5, (320, 240)).save(root / "shared" / "photo.jpg", quality=90)
    (root / "copies" / "photo.jpg").write_bytes((root / "shared" / "photo.jpg").read_bytes())


def _private(where: Path) -> Path:
    where.mkdir()
    (where / "notes.txt").write_text(SECRET + "\n" + prose(12))
    picture(99, (320, 240)).save(where / "photo.jpg", quality=90)
    return where


def _report(tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str]) -> str:
    out = tmp_path / "report.html"
    status = main(["report", "--state", str(state), "-o", str(out), "-j", "1"])
    _, err = capsys.readouterr()
    assert status == 0, err
    return out.read_text()


def test_a_folder_swapped_for_a_link_to_a_private_folder_is_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "library"
    _library(root)
    state = tmp_path / "state"
    assert main(["scan", "--state", str(state), "-j", "1", str(root)]) == 0
    capsys.readouterr()
    page = _report(tmp_path, state, capsys)
    assert prose(11)[:40] in page  # the control: the shared text is shown before the swap

    private = _private(tmp_path / "private")
    (root / "shared").rename(tmp_path / "moved-away")
    (root / "shared").symlink_to(private)
    page = _report(tmp_path, state, capsys)
    assert SECRET not in page
    secret_picture = make_preview(str(private / "photo.jpg"), PreviewOptions()).preview.data
    assert secret_picture and base64.b64encode(secret_picture).decode() not in page
    assert "reached through a symbolic link" in page
    assert prose(11)[:40] in page  # the copies are still shown


def test_a_root_replaced_by_a_link_is_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "library"
    _library(root)
    state = tmp_path / "state"
    assert main(["scan", "--state", str(state), "-j", "1", str(root)]) == 0
    capsys.readouterr()
    root.rename(tmp_path / "moved-away")
    private = _private(tmp_path / "private")
    (private / "shared").mkdir()
    (private / "copies").mkdir()
    for name in ("notes.txt", "photo.jpg"):
        for folder in ("shared", "copies"):
            (private / folder / name).write_bytes((private / name).read_bytes())
    root.symlink_to(private)
    page = _report(tmp_path, state, capsys)
    assert SECRET not in page


def test_a_link_planted_at_the_pages_name_is_replaced_never_written_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "library"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    for folder in ("a", "b"):
        (root / folder / "notes.txt").write_text(prose(3))
    state = tmp_path / "state"
    assert main(["scan", "--state", str(state), "-j", "1", str(root)]) == 0
    precious = tmp_path / "precious.conf"
    precious.write_text("another file, never to be written\n")
    precious.chmod(0o644)
    pages = tmp_path / "pages"
    pages.mkdir()
    out = pages / "report.html"
    out.symlink_to(precious)  # planted where the page goes
    capsys.readouterr()
    page = _report_to(out, state, capsys)
    assert precious.read_text() == "another file, never to be written\n"
    assert stat.S_IMODE(precious.stat().st_mode) == 0o644
    assert not out.is_symlink() and out.read_text() == page
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert [p.name for p in pages.iterdir()] == ["report.html"]  # no temporary file left


def _report_to(out: Path, state: Path, capsys: pytest.CaptureFixture[str]) -> str:
    status = main(["report", "--state", str(state), "-o", str(out), "-j", "1"])
    _, err = capsys.readouterr()
    assert status == 0, err
    return out.read_text()
