"""Watchlists against real daemons: references taken from files, from a codes list and from
iscc-sdk-style JSON lines, written by ``isccd watchlist`` beside a running daemon, and the
``watch.match`` events of the files that match them, live and on a rescan; a bad codes line
adds nothing; in a fleet, a watchlist added for one host matches on another; the library's
files that match a watchlist, asked of the daemon and of its store (``similar --watchlist``,
``dupes --watchlist``); a letter from a reference's Word template matches it by neither."""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw

from isccd.hashing import compute_record
from isccd.match import Thresholds, content_apart, near_unit
from isccd.model import Event, EventType, UnitType
from isccd.protocol import RescanRequest, WatchedRequest
from isccd.results import WatchedQuery
from tests.cli.test_engine import COMMAND
from tests.pg import PgServer
from tests.schemas import check
from tests.test_content_decides import template_corpus

from .conftest import Daemon, daemons, events_until, next_event, of_type

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow

TEXT = "A reference text that a library should not hold a copy of, line by line.\n" * 60


def isccd(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, *args], capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def logo(size: int = 256) -> Image.Image:
    image = Image.new("RGB", (256, 256), "white")
    draw = ImageDraw.Draw(image)
    for i in range(0, 256, 16):
        draw.ellipse((i, i, i + 60, i + 40), fill=(i, 255 - i, 100))
    draw.rectangle((20, 180, 120, 240), fill=(10, 10, 200))
    return image.resize((size, size))


def save(image: Image.Image, path: Path, fmt: str) -> None:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **({"quality": 85} if fmt == "JPEG" else {}))
    path.write_bytes(buffer.getvalue())


def wire(event: Event) -> dict[str, Any]:
    """The event as the socket sends it."""
    envelope = {"event": event.type.value, "seq": event.seq, "time": event.time}
    return {**envelope, "root": event.root, "path": event.path, "host": event.host, **event.data}


def added(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, result.stderr


async def matched(daemon: Daemon, path: Path, write: Callable[[], object]) -> Event:
    """The ``watch.match`` of ``path`` once ``write`` made it."""
    async with await daemon.client() as client:
        await client.subscribe(types=[EventType.WATCH_MATCH.value])
        write()
        event = await next_event(client, of_type(EventType.WATCH_MATCH, path))
    check("event", wire(event))
    return event


def test_a_watchlist_of_files_added_beside_the_daemon_matches_new_files_live(
    make_daemon: Callable[..., Daemon], tmp_path: Path
) -> None:
    daemon = make_daemon(ISCCD_WATCH__SETTLE="0.1")
    daemon.start()
    references = tmp_path / "refs"  # outside the daemon's root
    references.mkdir()
    save(logo(), references / "logo.png", "PNG")
    (references / "report.txt").write_text(TEXT)
    state = ["--state", str(daemon.state)]
    added(isccd("watchlist", "add", "brand", str(references / "logo.png"),
                str(references / "report.txt"), *state))  # fmt: skip
    listed = json.loads(isccd("watchlist", "list", "--json", *state).stdout)
    assert [(w["name"], w["refs"]) for w in listed["watchlists"]] == [("brand", 2)]

    async def scenario() -> None:
        copy = daemon.root / "shrunk.jpg"
        event = await matched(daemon, copy, lambda: save(logo(180), copy, "JPEG"))
        assert event.data["watchlist"] == "brand"
        assert (event.data["label"], event.data["unit"]) == ("logo.png", "image")
        assert event.data["relation"] == "near"
        assert event.data["distance"] <= event.data["threshold"] == 12
        text = daemon.root / "copy.txt"
        event = await matched(daemon, text, lambda: text.write_text(TEXT))
        assert (event.data["label"], event.data["unit"]) == ("report.txt", "instance")
        assert (event.data["relation"], event.data["distance"]) == ("exact", 0)
        assert {m["unit"] for m in event.data["matches"]} >= {"instance", "text", "data"}
        # Something else matches nothing: the next match is the one after it.
        other = daemon.root / "other.txt"
        again = daemon.root / "again.txt"

        def write() -> None:
            other.write_text("Nothing like the reference at all, a shopping list: eggs.\n")
            again.write_text(TEXT + "one more line\n")

        event = await matched(daemon, again, write)
        assert event.data["label"] == "report.txt"

    asyncio.run(scenario())


def test_codes_lists_and_sdk_lines_match_on_a_rescan(
    make_daemon: Callable[..., Daemon], tmp_path: Path
) -> None:
    # Settled only after a minute: a file written while the daemon runs is found by a rescan.
    daemon = make_daemon(ISCCD_WATCH__SETTLE="60", ISCCD_WATCH__MAX_DELAY="600")
    daemon.start()
    save(logo(), tmp_path / "logo.png", "PNG")
    (tmp_path / "report.txt").write_text(TEXT)
    coded = isccd("code", "--jsonl", "--units", str(tmp_path / "report.txt"))
    assert coded.returncode == 0, coded.stderr
    image = json.loads(isccd("code", "--json", str(tmp_path / "logo.png")).stdout)[0]
    # As iscc-sdk prints it: its field names, its ISCC-CODE.
    sdk = {
        "@context": "http://purl.org/iscc/context", "@type": "ImageObject",
        "iscc": image["iscc"], "name": "logo", "filename": "brand-logo.png",
        "filesize": image["size"], "mediatype": "image/png", "datahash": image["datahash"],
    }  # fmt: skip
    codes = tmp_path / "codes.txt"
    codes.write_text(f"# references\n\n{coded.stdout.strip()}\n{json.dumps(sdk)}\n")
    added(isccd("watchlist", "add", "press", "--codes", str(codes), "--state", str(daemon.state)))
    shown = json.loads(isccd("watchlist", "show", "press", "--json", "--state",
                             str(daemon.state)).stdout)  # fmt: skip
    assert [r["label"] for r in shown["references"]] == ["report.txt", "brand-logo.png"]
    assert set(shown["references"][0]["units"]) >= {"text", "data", "instance"}

    async def scenario() -> None:
        async with await daemon.client() as client, await daemon.client() as listener:
            await client.sync()
            await listener.subscribe(types=[EventType.WATCH_MATCH.value])
            save(logo(200), daemon.root / "found.jpg", "JPEG")
            reply = await client.request(RescanRequest(0, None))
            assert reply.unwrap() == {"roots": [str(daemon.root)]}
            event = await next_event(listener, of_type(EventType.WATCH_MATCH))
        assert event.path == str(daemon.root / "found.jpg")
        assert (event.data["watchlist"], event.data["label"]) == ("press", "brand-logo.png")
        assert event.data["unit"] == "image"

    asyncio.run(scenario())


def test_a_bad_code_line_is_named_and_adds_nothing(tmp_path: Path) -> None:
    state = ["--state", str(tmp_path / "state")]
    codes = tmp_path / "codes.txt"
    good = "ISCC:KACYPXW445FTYNJ3CYSXHAFJMA2HUWULUNRFE3BLHRSCXYH2M5AEGQY"
    codes.write_text(f"{good}\n\nISCC:NOTACODE\n")
    result = isccd("watchlist", "add", "broken", "--codes", str(codes), *state)
    assert result.returncode == 1
    assert "line 3" in result.stderr and "NOTACODE" in result.stderr
    codes.write_text(f'{good}\n{{"name": "no code"}}\n')
    result = isccd("watchlist", "add", "broken", "--codes", str(codes), *state)
    assert result.returncode == 1 and 'line 2: a JSON line needs an "iscc"' in result.stderr
    listed = isccd("watchlist", "list", "--json", *state)
    assert json.loads(listed.stdout) == {"watchlists": []}
    result = isccd("watchlist", "remove", "broken", *state)
    assert result.returncode == 1 and "no watchlist 'broken'" in result.stderr


@pytest.fixture
def fleet(pg_server: PgServer) -> Iterator[tuple[Daemon, Daemon, str]]:
    database = pg_server.new_database()
    url = pg_server.url(database)
    env = {"ISCCD_STORE__URL": url, "ISCCD_WATCH__SETTLE": "0.1"}
    with daemons(owned_wider=False) as make:
        a, b = make(ISCCD_STORE__HOST="wl-a", **env), make(ISCCD_STORE__HOST="wl-b", **env)
        a.start()
        b.start()
        yield a, b, url
    pg_server.drop_database(database)


def test_a_watchlist_added_on_one_host_matches_on_another(
    fleet: tuple[Daemon, Daemon, str], tmp_path: Path
) -> None:
    a, b, url = fleet
    (tmp_path / "report.txt").write_text(TEXT)
    env = {"ISCCD_STORE__URL": url, "ISCCD_STORE__HOST": "wl-b"}
    added(isccd("watchlist", "add", "fleet", str(tmp_path / "report.txt"),
                "--socket", str(b.socket), env=env))  # fmt: skip

    async def scenario() -> None:
        copy = a.root / "copy.txt"
        event = await matched(a, copy, lambda: copy.write_text(TEXT))
        assert (event.host, event.data["watchlist"]) == ("wl-a", "fleet")
        assert event.data["relation"] == "exact"

    asyncio.run(scenario())


def test_similar_and_dupes_of_a_watchlist_from_the_daemon_and_the_store(
    make_daemon: Callable[..., Daemon], tmp_path: Path
) -> None:
    daemon = make_daemon(ISCCD_WATCH__SETTLE="0.1")
    daemon.start()
    (tmp_path / "report.txt").write_text(TEXT)
    (daemon.root / "copy.txt").write_text(TEXT)
    (daemon.root / "again.txt").write_text(TEXT + "one more line\n")
    (daemon.root / "other.txt").write_text("Nothing like the reference, a shopping list.\n" * 9)
    added(isccd("watchlist", "add", "press", str(tmp_path / "report.txt"),
                "--state", str(daemon.state)))  # fmt: skip

    async def indexed() -> None:
        async with await daemon.client() as client:
            await client.sync()

    asyncio.run(indexed())
    socket = ("--socket", str(daemon.socket))
    asked = isccd("similar", "--watchlist", "press", "--json", *socket)
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    check("watched", answer)
    [group] = answer["groups"]
    assert (group["label"], answer["references"]) == ("report.txt", 1)
    found = {Path(m["path"]).name: (m["relation"], m["unit"]) for m in group["matches"]}
    assert found == {"copy.txt": ("exact", "instance"), "again.txt": ("near", "text")}
    # The store read directly, beside the running daemon, gives the same answer.
    read = isccd("similar", "--watchlist", "press", "--json", "--state", str(daemon.state))
    assert read.returncode == 0, read.stderr
    assert json.loads(read.stdout) == answer
    exact = isccd("dupes", "--watchlist", "press", "--csv", *socket)
    assert exact.returncode == 0, exact.stderr
    header, *rows = exact.stdout.splitlines()
    assert header.startswith("watchlist,group,ref,label,reference,member,link,path,")
    assert [row.split(",")[7] for row in rows] == [str(daemon.root / "copy.txt")]
    near = isccd("dupes", "--watchlist", "press", "--near", *socket)
    assert near.returncode == 0, near.stderr
    assert "reference 1 report.txt" in near.stdout and "~" in near.stdout
    for where in (socket, ("--state", str(daemon.state))):
        unknown = isccd("similar", "--watchlist", "nope", *where)
        assert unknown.returncode == 1
        assert "there is no watchlist 'nope' (not_found)" in unknown.stderr

    async def refused_then_answered() -> None:
        async with await daemon.client() as client:
            reply = await client.request(WatchedRequest(0, WatchedQuery("nope")))
            assert reply.error is not None and reply.error.code == "not_found"
            reply = await client.request(WatchedRequest(0, WatchedQuery("press", near=False)))
            [again] = reply.unwrap()["groups"]
            assert [m["path"] for m in again["matches"]] == [str(daemon.root / "copy.txt")]

    asyncio.run(refused_then_answered())


def test_a_letter_from_the_references_template_matches_neither_live_nor_asked(
    make_daemon: Callable[..., Daemon], tmp_path: Path
) -> None:
    """Two unrelated letters from one Word template have near Data-Codes (the template's ZIP)
    and far Text-Codes: the text decides, as it does for duplicates."""
    letters = sorted(p for p in template_corpus(tmp_path) if p.suffix == ".docx")
    records = {p: compute_record(str(p)) for p in letters}
    policy = Thresholds()

    def digests(path: Path) -> dict[UnitType, bytes]:
        return {u.type: u.digest for u in records[path].units}

    pairs = [
        (a, b) for a, b in itertools.combinations(letters, 2)
        if near_unit(UnitType.DATA, digests(a)[UnitType.DATA], digests(b)[UnitType.DATA], policy)
        and content_apart(digests(a), digests(b), policy)
    ]  # fmt: skip
    assert pairs, "no two letters of the template are near by their Data-Codes"
    reference, unrelated = pairs[0]
    daemon = make_daemon(ISCCD_WATCH__SETTLE="0.1")
    daemon.start()
    added(isccd("watchlist", "add", "letters", str(reference), "--state", str(daemon.state)))

    async def scenario() -> tuple[int, int]:
        async with await daemon.client() as client:
            since = await client.sync()
            shutil.copyfile(unrelated, daemon.root / "unrelated.docx")
            shutil.copyfile(reference, daemon.root / "copy.docx")
            return since, await client.sync()

    since, last = asyncio.run(scenario())
    events = asyncio.run(events_until(daemon, since, last))
    watched = [e for e in events if e.type is EventType.WATCH_MATCH]
    assert [e.path for e in watched] == [str(daemon.root / "copy.docx")]
    asked = isccd("similar", "--watchlist", "letters", "--json", "--socket", str(daemon.socket))
    assert asked.returncode == 0, asked.stderr
    [group] = json.loads(asked.stdout)["groups"]
    assert [Path(m["path"]).name for m in group["matches"]] == ["copy.docx"]
