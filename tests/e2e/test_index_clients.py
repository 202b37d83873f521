"""``isccd get``, ``similar`` and ``dupes`` against a real daemon, and without one.

One daemon serves the module. Its root holds a text, an exact copy of it with a second name
(a hardlink), an edited draft (a near duplicate), an unrelated text, an ignored file and a
symbolic link to a file outside the roots; a file created once the daemon has settled everything
stays unindexed (the settle time is long). The commands run in this process, as ``isccd`` would
run them.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from isccd.cli.main import main
from isccd.client import AsyncClient
from isccd.protocol import SimilarRequest, event_to_wire
from isccd.results import SimilarQuery
from tests.cli.test_index_cli import prose
from tests.e2e.conftest import Daemon, daemons, events_until
from tests.schemas import check

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    with daemons() as make:
        # Changes settle only after a minute (or at a sync): "fresh.txt" stays unindexed.
        d = make(
            ISCCD_WATCH__SETTLE="60", ISCCD_WATCH__MAX_DELAY="600", ISCCD_WATCH__IGNORE='["*.skip"]'
        )
        (d.root / "docs").mkdir()
        (d.root / "docs" / "report.txt").write_text(prose(1))
        (d.root / "backup.txt").write_text(prose(1))
        (d.root / "backup-link.txt").hardlink_to(d.root / "backup.txt")
        (d.root / "docs" / "draft.txt").write_text(prose(1)[:-40] + " and a new closing line")
        (d.root / "other.txt").write_text(prose(3))
        (d.root / "secret.skip").write_text(prose(1))
        (d.base / "outside.txt").write_text(prose(1))
        (d.root / "escape.txt").symlink_to(d.base / "outside.txt")
        d.start()
        assert main(["rescan", "--wait", "--socket", str(d.socket)]) == 0
        (d.root / "fresh.txt").write_text(prose(1)[:-40] + " and another closing line")
        yield d
        assert d.stop() == 0


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    """A command with ``--json``: its status, its output parsed and its stderr."""
    status = main([*args, "--json"])
    out, err = capsys.readouterr()
    return status, json.loads(out) if out else None, err


def processed(daemon: Daemon) -> set[str]:
    """The paths the daemon hashed."""
    return {
        str(line["path"]) for line in daemon.log_lines() if line.get("event") == "file_processed"
    }


@pytest.mark.parametrize(
    "command",
    [
        ["get", "docs/report.txt"],
        ["get", "backup-link.txt"],
        ["similar", "docs/report.txt"],
        ["similar", "fresh.txt"],
        ["similar", "backup.txt", "--max-distance", "0"],
        ["similar", "docs/report.txt", "--unit", "text"],
        ["similar", "outside.txt"],
        ["dupes", "--near"],
        ["dupes", "--limit", "1"],
        ["dupes", "--near", "--type", "text", "--unit", "text"],
        ["dupes", "--near", "--root", "docs/"],
    ],
)
def test_the_daemon_and_the_store_give_the_same_answer(
    daemon: Daemon, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    args = [_place(daemon, a) for a in command]
    status, asked, err = run(capsys, *args, "--socket", str(daemon.socket))
    assert status == 0, err
    status, read, err = run(capsys, *args, "--state", str(daemon.state))
    assert status == 0, err
    assert asked == read
    assert asked.get("matches") != [] and asked.get("groups") != []  # something to compare
    assert str(daemon.base / "outside.txt") not in processed(daemon)  # never read by it


def _place(daemon: Daemon, arg: str) -> str:
    """A file or folder argument in the daemon's root (``outside.txt`` next to it)."""
    if arg == "outside.txt":
        return str(daemon.base / arg)
    return str(daemon.root / arg) if arg.endswith((".txt", "/")) else arg


def test_similar_to_a_code_finds_the_files_with_its_bytes_and_its_near_files(
    daemon: Daemon, capsys: pytest.CaptureFixture[str]
) -> None:
    report = str(daemon.root / "docs" / "report.txt")
    status, info, _ = run(capsys, "get", report, "--socket", str(daemon.socket))
    assert status == 0
    for source in ("--socket", "--state"):
        place = str(daemon.socket if source == "--socket" else daemon.state)
        status, found, err = run(capsys, "similar", "--code", info["iscc"], source, place)
        assert status == 0, err
        exact = {
            (m["path"], tuple(m["links"])) for m in found["matches"] if m["relation"] == "exact"
        }
        # The file itself and its copy, whose two names are one match.
        assert exact == {
            (str(daemon.root / "docs" / "report.txt"), ()),
            (str(daemon.root / "backup-link.txt"), (str(daemon.root / "backup.txt"),)),
        }
        near = {m["path"] for m in found["matches"] if m["relation"] == "near"}
        assert str(daemon.root / "docs" / "draft.txt") in near
        assert all(m["iscc"] and m["code"] for m in found["matches"])
        status, text_only, _ = run(
            capsys, "similar", "--code", info["iscc"], "--unit", "text", source, place
        )
        assert {m["unit"] for m in text_only["matches"]} == {"text"}
        # A code that cannot be decoded is a bad argument: exit 2, from the daemon or a store.
        status = main(["similar", "--code", "ISCC:$$$", source, place])
        assert status == 2, capsys.readouterr().err
        assert "(invalid_argument)" in capsys.readouterr().err


def test_a_files_hardlinks_are_one_match(
    daemon: Daemon, capsys: pytest.CaptureFixture[str]
) -> None:
    report = str(daemon.root / "docs" / "report.txt")
    status, found, _ = run(capsys, "similar", report, "--socket", str(daemon.socket))
    assert status == 0
    named = [m for m in found["matches"] if "backup" in m["path"]]
    assert [(m["path"], m["links"]) for m in named] == [
        (str(daemon.root / "backup-link.txt"), [str(daemon.root / "backup.txt")])
    ]


def test_a_file_not_indexed_is_coded_by_the_daemon_but_not_stored(
    daemon: Daemon, capsys: pytest.CaptureFixture[str]
) -> None:
    fresh = str(daemon.root / "fresh.txt")
    status, found, _ = run(capsys, "similar", fresh, "--socket", str(daemon.socket))
    assert status == 0 and fresh in processed(daemon)
    near = {(m["path"], m["unit"]) for m in found["matches"] if m["relation"] == "near"}
    assert (str(daemon.root / "docs" / "draft.txt"), "text") in near
    status, _, err = run(capsys, "get", fresh, "--socket", str(daemon.socket))
    assert status == 1 and "is not in the index (not_found)" in err


def test_outside_the_roots_or_ignored_is_refused_and_nothing_is_hashed(
    daemon: Daemon, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = daemon.base / "outside.txt"
    ignored = daemon.root / "secret.skip"
    for command in (["get", str(outside)], ["get", str(daemon.root / "escape.txt")]):
        status, out, err = run(capsys, *command, "--socket", str(daemon.socket))
        assert (status, out) == (1, None)
        assert "is not inside a watched root (outside_roots)" in err
    status, out, err = run(capsys, "similar", str(ignored), "--socket", str(daemon.socket))
    assert (status, out) == (1, None) and "an ignore pattern excludes it (not_found)" in err
    assert not {str(outside), str(ignored)} & processed(daemon)


def test_a_socket_named_but_dead_is_an_error_not_a_fallback(
    daemon: Daemon, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STATE_DIRECTORY", str(daemon.state))  # a store to fall back on: unused
    dead = daemon.base / "dead.sock"
    with socket.socket(socket.AF_UNIX) as stale:  # a socket file nobody listens on any more
        stale.bind(str(dead))
    for command in (["get", str(daemon.root / "other.txt")], ["dupes"]):
        status, out, err = run(capsys, *command, "--socket", str(dead))
        assert (status, out) == (1, None)
        assert f"no isccd daemon is listening on {str(dead)!r}" in err


def test_the_default_socket_is_asked_and_without_a_daemon_the_default_store_is_read(
    daemon: Daemon, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STATE_DIRECTORY", str(daemon.state))
    outside = str(daemon.base / "outside.txt")
    # The daemon at the default socket answers: it refuses a path outside its roots.
    monkeypatch.setenv("RUNTIME_DIRECTORY", str(daemon.socket.parent))
    status, _, err = run(capsys, "get", outside)
    assert status == 1 and "outside_roots" in err
    # No daemon there: the default store answers, says so on stderr, and codes the outside
    # file itself.
    monkeypatch.setenv("RUNTIME_DIRECTORY", str(daemon.base / "nothing-here"))
    status, found, err = run(capsys, "similar", outside)
    told = (
        f"isccd: no daemon answers on {daemon.base / 'nothing-here' / 'isccd.sock'}: read "
        f"{daemon.state / 'isccd.db'}\n"
    )
    assert (status, err) == (0, told)
    assert str(daemon.root / "docs" / "report.txt") in {
        m["path"] for m in found["matches"] if m["relation"] == "exact"
    }
    status, groups, err = run(capsys, "dupes")
    assert (status, err) == (0, told) and groups["groups"]
    # Neither a daemon nor a store: both are named.
    monkeypatch.setenv("STATE_DIRECTORY", str(daemon.base / "no-state"))
    status, _, err = run(capsys, "dupes")
    assert status == 1 and "no index at" in err and "no isccd daemon is listening" in err


def test_a_scan_next_to_the_daemon_is_told_to_ask_it(
    daemon: Daemon, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert daemon.proc is not None
    monkeypatch.setenv("RUNTIME_DIRECTORY", str(daemon.socket.parent))
    status, _, err = run(capsys, "scan", "--state", str(daemon.state), str(daemon.root))
    assert status == 1
    assert f"(pid {daemon.proc.pid})" in err
    assert (
        f"it is the daemon; ask it to reconcile instead: `isccd rescan --wait {daemon.root}`" in err
    )
    elsewhere = daemon.base / "elsewhere"
    elsewhere.mkdir()
    status, _, err = run(capsys, "scan", "--state", str(daemon.state), str(elsewhere))
    assert status == 1 and f"which does not watch {elsewhere}" in err


def test_a_max_distance_beyond_64_bits_is_refused_clearly_by_the_socket_and_offline(
    daemon: Daemon, capsys: pytest.CaptureFixture[str]
) -> None:
    target = str(daemon.root / "backup.txt")

    async def ask() -> list[Any]:
        async with await AsyncClient.connect(daemon.socket) as client:
            return [
                await client.request(SimilarRequest(0, SimilarQuery(target, max_distance=d)))
                for d in (65, 100, 256, 64)
            ]

    *refused, served = asyncio.run(ask())
    for reply in refused:
        assert reply.error is not None and reply.error.code == "invalid_argument", reply
        assert "max_distance" in reply.error.message and "64" in reply.error.message
    assert served.unwrap()["matches"]  # the connection carried on
    for source in ("--socket", "--state"):
        place = str(daemon.socket if source == "--socket" else daemon.state)
        with pytest.raises(SystemExit) as exited:
            main(["similar", target, "--max-distance", "100", source, place])
        err = capsys.readouterr().err
        assert exited.value.code == 2
        assert "--max-distance: must be 0 to 64, got 100" in err and "Traceback" not in err


def test_the_daemons_replies_and_events_follow_the_schemas(
    daemon: Daemon, capsys: pytest.CaptureFixture[str]
) -> None:
    sock = ("--socket", str(daemon.socket))
    report = str(daemon.root / "docs" / "report.txt")
    # A copy that comes and goes (dup.exact, then dup.resolved), and a broken image (file.error).
    extra, broken = daemon.root / "extra.txt", daemon.root / "broken.png"
    extra.write_text(prose(3))
    broken.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    assert run(capsys, "rescan", "--wait", "--json", *sock)[0] == 0
    extra.unlink()
    broken.unlink()
    status, rescan, _ = run(capsys, "rescan", "--wait", "--json", *sock)
    assert status == 0
    check("rescan", rescan)
    status, state, _ = run(capsys, "status", "--json", *sock)
    assert status == 0
    check("status", state)
    check("get", run(capsys, "get", report, "--json", *sock)[1])
    check("similar", run(capsys, "similar", report, "--json", *sock)[1])
    check("dupes", run(capsys, "dupes", "--near", "--json", *sock)[1])
    events = asyncio.run(events_until(daemon, 0, state["last_seq"]))
    wire = [event_to_wire(e) for e in events]
    for event in wire:
        check("event", event)
    seen = {e["event"] for e in wire}
    assert {"file.added", "dup.exact", "dup.near", "dup.resolved", "file.error"} <= seen, seen
    assert all(e["host"] for e in wire)  # every logged event names its host
