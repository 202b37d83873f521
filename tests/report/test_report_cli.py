"""``isccd report`` on a real library, as users run it: from a store, and from a daemon."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from isccd.cli.main import main
from isccd.protocol.messages import encode_error
from tests.e2e.conftest import daemons
from tests.report.conftest import (
    HOSTILE_BONUS,
    HOSTILE_DIR,
    HOSTILE_TEXT,
    Library,
    dupes,
    page_data,
)


def report(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["report", *args])
    out, err = capsys.readouterr()
    return status, out, err


def members(data: dict[str, Any]) -> list[list[str]]:
    return [[m["path"] for m in g["members"]] for g in data["groups"]]


@pytest.mark.slow
def test_the_report_shows_what_dupes_lists(
    library: Library, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.html"
    status, stdout, err = report(capsys, "--state", str(library.state), "--out", str(out))
    assert status == 0, err
    listed = dupes(library)
    groups: list[dict[str, Any]] = listed["groups"]  # type: ignore[assignment]
    totals: dict[str, int] = listed["totals"]  # type: ignore[assignment]
    # 19 members, 15 files: 4 are in an exact and in a near group, and count once.
    assert (len(groups), sum(len(g["members"]) for g in groups), totals["files"]) == (7, 19, 15)
    wasted = totals["reclaimable"]
    assert stdout == f"{out}: 7 groups, 15 files, {wasted / 1024:.1f} KiB reclaimable\n"
    data = page_data(out.read_text())
    assert data["totals"] == totals
    assert members(data) == [[m["path"] for m in g["members"]] for g in groups]
    assert [g["kind"] for g in data["groups"]] == [g["kind"] for g in groups]
    assert data["source"] == f"the index in {library.state}"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600  # the page shows what the files hold

    previews = {
        os.path.relpath(m["path"], library.root): m["preview"]["kind"]
        for g in data["groups"]
        for m in g["members"]
    }
    assert previews["photos/beach.jpg"] == previews["photos/forest.webp"] == "image"
    assert previews["texts/draft.txt"] == "text"
    assert previews["data.bin"] == "icon"
    hostile = next(g for g in data["groups"] if "hostile" in g["members"][0]["path"])
    assert hostile["members"][0]["preview"]["text"].split("\n")[0] == HOSTILE_TEXT.split("\n")[0]


@pytest.mark.slow
def test_a_second_report_takes_the_previews_from_the_cache(
    library: Library, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "1.html", tmp_path / "2.html"
    assert report(capsys, "--state", str(library.state), "-o", str(first))[0] == 0
    entries = list((tmp_path / "cache" / "previews").glob("*/*"))
    # Every file of the library has its lasting preview (4 files are in two groups).
    assert len(entries) == 15
    inodes = {e: e.stat().st_ino for e in entries}
    for entry in entries:
        os.utime(entry, ns=(0, 0))
    assert report(capsys, "--state", str(library.state), "-o", str(second))[0] == 0
    # Nothing was made again (a new entry would be a new file); every entry was used.
    assert {e: e.stat().st_ino for e in (tmp_path / "cache" / "previews").glob("*/*")} == inodes
    assert all(e.stat().st_mtime_ns > 0 for e in entries)
    a, b = page_data(first.read_text()), page_data(second.read_text())
    assert (a["thumbs"], a["groups"]) == (b["thumbs"], b["groups"])


@pytest.mark.slow
def test_root_and_limit_choose_the_groups(
    library: Library, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.html"
    texts = library.root / "texts"
    status, _, err = report(capsys, "--state", str(library.state), "--root", str(texts), "-o",
                            str(out))  # fmt: skip
    assert status == 0, err
    data = page_data(out.read_text())
    assert all(any(p.startswith(f"{texts}/") for p in g) for g in members(data))
    assert [g["kind"] for g in data["groups"]] == ["near", "exact"]

    status, _, err = report(capsys, "--state", str(library.state), "--limit", "2", "-o", str(out))
    assert status == 0
    assert err == "isccd: more than 2 groups: the first are shown; raise --limit\n"
    data = page_data(out.read_text())
    assert (len(data["groups"]), data["truncated"]) == (2, True)


@pytest.mark.slow
def test_the_page_goes_to_standard_output_with_a_dash(
    library: Library, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = report(capsys, "--state", str(library.state), "--out", "-")
    assert status == 0
    assert out.startswith("<!DOCTYPE html>") and out.endswith("</html>\n")
    assert err.startswith("isccd: report: 7 groups, 15 files, ")


@pytest.mark.slow
def test_open_starts_the_browser_on_the_page(
    library: Library, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    opened = tmp_path / "opened"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {opened}\n')
    browser.chmod(0o755)
    monkeypatch.setenv("BROWSER", str(browser))
    out = tmp_path / "r.html"
    assert report(capsys, "--state", str(library.state), "-o", str(out), "--open")[0] == 0
    assert opened.read_text() == out.as_uri()

    browser.write_text("#!/bin/sh\nexit 1\n")
    status, _, err = report(capsys, "--state", str(library.state), "-o", str(out), "--open")
    assert status == 1
    assert err == f"isccd: no web browser could be started; open {out}\n"


def test_failures_are_said_with_their_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    status, out, err = report(capsys, "--state", str(empty), "-o", str(tmp_path / "r.html"))
    assert (status, out) == (1, "")
    assert err.startswith("isccd: ") and not (tmp_path / "r.html").exists()

    bad = tmp_path / "bad.toml"
    bad.write_text("[code]\nbits = 7\n")
    status, _, err = report(capsys, "--config", str(bad), "--state", str(empty))
    assert status == 78
    assert "bits" in err


@pytest.mark.slow
def test_an_unwritable_page_is_an_error(
    library: Library, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "missing-folder" / "r.html"
    status, _, err = report(capsys, "--state", str(library.state), "-o", str(out))
    assert status == 1
    assert err == f"isccd: cannot write {out}: No such file or directory\n"


@pytest.mark.slow  # a daemon started, a root indexed
def test_the_daemon_and_the_store_give_the_same_report(
    library: Library, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with daemons() as make:
        daemon = make()
        shutil.copytree(library.root / "texts", daemon.root / "texts")
        daemon.start()
        assert main(["rescan", "--wait", "--socket", str(daemon.socket)]) == 0
        capsys.readouterr()
        asked, read = tmp_path / "asked.html", tmp_path / "read.html"
        status, _, err = report(capsys, "--socket", str(daemon.socket), "-o", str(asked))
        assert status == 0, err
        status, _, err = report(capsys, "--state", str(daemon.state), "-o", str(read))
        assert status == 0, err
        assert daemon.stop() == 0
    a, b = page_data(asked.read_text()), page_data(read.read_text())
    assert a["source"] == f"the daemon on {daemon.socket}"
    assert b["source"] == f"the index in {daemon.state}"
    assert a["groups"] == b["groups"]
    assert len(a["groups"]) == 2


@pytest.mark.slow
def test_a_folder_named_isccd_in_the_working_directory_leaves_the_previews_made(
    library: Library, tmp_path: Path
) -> None:
    # The README's install, run from the directory above a clone: the preview workers' fork
    # server would import the clone's folder (here an empty one) as the package, and every
    # preview would be an icon.
    (tmp_path / "isccd").mkdir()
    out = tmp_path / "report.html"
    command = Path(sys.executable).with_name("isccd")
    done = subprocess.run(
        [str(command), "report", "--state", str(library.state), "--out", str(out)],
        cwd=tmp_path,
        env={**os.environ, "CACHE_DIRECTORY": str(tmp_path / "cache")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    kinds = {
        os.path.relpath(m["path"], library.root): m["preview"]["kind"]
        for g in page_data(out.read_text())["groups"]
        for m in g["members"]
    }
    assert kinds["photos/beach.jpg"] == "image", done.stderr


def dirs(library: Library, *args: str) -> dict[str, Any]:
    """What ``isccd dupes --dirs --json`` says of the library."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["dupes", "--dirs", "--json", "--state", str(library.state), *args]) == 0
    result: dict[str, Any] = json.loads(out.getvalue())
    return result


def folder_rows(data: dict[str, Any]) -> list[tuple[str, int, list[tuple[str, int, int, bool]]]]:
    return [
        (
            g["kind"],
            g["reclaimable"],
            [(m["path"], m["files"], m["size"], m["centre"]) for m in g["members"]],
        )
        for g in data["folders"]["groups"]
    ]


@pytest.mark.slow
def test_the_report_shows_the_duplicate_folders(
    folders: Library, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.html"
    status, stdout, err = report(capsys, "--state", str(folders.state), "-o", str(out))
    assert (status, err) == (0, "")
    assert stdout.startswith(f"{out}: 8 groups, 16 files, ")
    assert stdout.endswith(" reclaimable; 2 groups of folders\n")
    data = page_data(out.read_text())
    docs, copy = folders.path("docs"), folders.path(HOSTILE_DIR)
    summer, plus = folders.path("music/summer"), folders.path("backup/summer-plus")
    assert folder_rows(data) == [
        ("exact", 6501, [(copy, 3, 6501, False), (docs, 3, 6501, False)]),
        ("near", 0, [(plus, 6, 20010, True), (summer, 5, 15010, False)]),
    ]
    centre, near = data["folders"]["groups"][1]["members"]
    assert centre["share"] == 1
    assert near["share"] == pytest.approx(10 / 11)
    assert (near["unmatched"], near["unmatched_count"]) == ([], 0)
    assert (near["missing"], near["missing_count"]) == ([HOSTILE_BONUS], 1)
    assert {k: data["folders"][k] for k in ("truncated", "folders", "reclaimable", "error")} == {
        "truncated": False, "folders": 4, "reclaimable": 6501, "error": ""
    }  # fmt: skip
    # The hostile names come with the forms the command line shows them in.
    assert data["shown"][copy] == folders.path(
        "<img src=x onerror=\"window.pwned=3\"> 'q' &\\nline\\u202eexe"
    )
    assert data["shown"][HOSTILE_BONUS] == "bonus <b>\"x\" & 'y'\\n\\u202e.bin"
    # As `dupes --dirs --near` lists them.
    listed = dirs(folders, "--near")
    assert [[m["path"] for m in g["members"]] for g in listed["groups"]] == [
        [m["path"] for m in g["members"]] for g in data["folders"]["groups"]
    ]


@pytest.mark.slow
def test_the_folders_follow_near_root_and_limit(
    folders: Library, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.html"
    state = str(folders.state)
    assert report(capsys, "--state", state, "--no-near", "-o", str(out))[0] == 0
    assert [g[0] for g in folder_rows(page_data(out.read_text()))] == ["exact"]

    assert report(capsys, "--state", state, "--root", folders.path("music"), "-o", str(out))[0] == 0
    [(kind, _, members)] = folder_rows(page_data(out.read_text()))
    assert (kind, members[1][0]) == ("near", folders.path("music/summer"))

    status, stdout, err = report(capsys, "--state", state, "--limit", "1", "-o", str(out))
    assert status == 0
    assert err.splitlines() == [
        "isccd: more than 1 groups: the first are shown; raise --limit",
        "isccd: more than 1 groups of folders: the first are shown; raise --limit",
    ]
    assert stdout.endswith("; 1+ groups of folders\n")
    data = page_data(out.read_text())["folders"]
    assert (len(data["groups"]), data["truncated"], data["folders"]) == (1, True, 4)


@pytest.mark.slow
def test_a_library_without_duplicate_folders_says_none(
    library: Library, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.html"
    status, stdout, _ = report(capsys, "--state", str(library.state), "-o", str(out))
    assert status == 0
    assert "folders" not in stdout
    folders = page_data(out.read_text())["folders"]
    assert (folders["groups"], folders["error"]) == ([], "")


@contextlib.contextmanager
def without_dirs(upstream: Path, path: Path) -> Iterator[Path]:
    """A socket at ``path`` that passes every request on to the daemon at ``upstream`` and its
    replies back, but answers ``dirs`` as a daemon older than that request does:
    ``unknown_command``."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen()
    threads: list[threading.Thread] = []
    connections: list[socket.socket] = []

    def serve(client: socket.socket) -> None:
        daemon = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        daemon.connect(str(upstream))
        connections.append(daemon)
        lock = threading.Lock()

        def replies() -> None:
            with contextlib.suppress(OSError):
                for line in daemon.makefile("rb"):
                    with lock:
                        client.sendall(line)

        back = threading.Thread(target=replies, daemon=True)
        back.start()
        threads.append(back)
        with contextlib.suppress(OSError):
            for line in client.makefile("rb"):
                request = json.loads(line)
                if request.get("cmd") == "dirs":
                    with lock:
                        client.sendall(encode_error(request["id"], "unknown_command",
                                                    "unknown command 'dirs'"))  # fmt: skip
                else:
                    daemon.sendall(line)
        daemon.shutdown(socket.SHUT_RDWR)

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = listener.accept()
                connections.append(client)
                thread = threading.Thread(target=serve, args=(client,), daemon=True)
                thread.start()
                threads.append(thread)

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield path
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        for thread in (acceptor, *threads):
            thread.join(timeout=10)
        for connection in connections:
            connection.close()


@pytest.mark.slow  # a daemon started, a root indexed
def test_the_daemon_gives_the_folders_and_an_older_one_the_files_alone(
    folders: Library, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with daemons() as make:
        daemon = make()
        shutil.copytree(folders.root, daemon.root, dirs_exist_ok=True)
        daemon.start()
        assert main(["rescan", "--wait", "--socket", str(daemon.socket)]) == 0
        capsys.readouterr()
        asked, old = tmp_path / "asked.html", tmp_path / "old.html"
        status, _, err = report(capsys, "--socket", str(daemon.socket), "-o", str(asked))
        assert (status, err) == (0, "")
        with without_dirs(daemon.socket, daemon.base / "old.sock") as older:
            status, stdout, err = report(capsys, "--socket", str(older), "-o", str(old))
        assert daemon.stop() == 0
    note = "the daemon does not list duplicate folders (it is older than this isccd)"
    assert status == 0
    assert err == f"isccd: duplicate folders not shown: {note}\n"
    assert "folders" not in stdout
    a, b = page_data(asked.read_text()), page_data(old.read_text())
    assert [g[0] for g in folder_rows(a)] == ["exact", "near"]
    assert a["folders"]["groups"][1]["members"][0]["path"] == str(
        daemon.root / "backup/summer-plus"
    )
    # The file groups are all there; the page says why the folders are not.
    assert b["groups"] == a["groups"] and len(b["groups"]) == 8
    assert (b["folders"]["groups"], b["folders"]["error"]) == ([], note)
