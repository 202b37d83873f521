"""A subscriber that resumes with ``since`` after the daemon was stopped, while files changed on
disk, gets exactly the events it missed: each change once, nothing it had already seen, no gap."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable

import pytest

from isccd.cli.main import main
from isccd.errors import ProtocolError
from isccd.model import Event, EventType

from .conftest import Daemon, events_until

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow


def test_events_missed_while_stopped_are_replayed_exactly(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon()
    for name in ("keep", "change", "delete", "rename"):
        (daemon.root / f"{name}.txt").write_text(f"the {name} file, with its own words")
    daemon.start()

    async def before() -> int:
        client = await daemon.client()
        seq = await client.sync()
        await client.close()
        return seq

    seen = asyncio.run(before())
    assert daemon.stop() == 0

    (daemon.root / "change.txt").write_text("the change file, now with other words entirely")
    (daemon.root / "delete.txt").unlink()
    (daemon.root / "rename.txt").rename(daemon.root / "renamed.txt")
    (daemon.root / "new.txt").write_text("a new file that appeared while the daemon was down")

    daemon.start()

    async def after() -> tuple[list[Event], list[Event]]:
        client = await daemon.client()
        last = await client.sync()
        await client.close()
        first = await events_until(daemon, seen, last)
        again = await events_until(daemon, seen, last)
        return first, again

    replayed, again = asyncio.run(after())
    assert daemon.stop() == 0

    # Exactly the log after `seen`: contiguous, nothing earlier, the same for every reader.
    assert [e.seq for e in replayed] == list(range(seen + 1, replayed[-1].seq + 1))
    assert replayed == again
    files = {
        (e.type, e.path.rsplit("/", 1)[-1]) for e in replayed if e.type.value.startswith("file.")
    }
    assert files == {
        (EventType.FILE_CHANGED, "change.txt"),
        (EventType.FILE_REMOVED, "delete.txt"),
        (EventType.FILE_MOVED, "renamed.txt"),
        (EventType.FILE_ADDED, "new.txt"),
    }
    moved = next(e for e in replayed if e.type is EventType.FILE_MOVED)
    assert moved.data["from"] == str(daemon.root / "rename.txt")
    assert any(e.type is EventType.SCAN_DONE for e in replayed)


def test_a_since_from_a_store_that_was_replaced_is_refused(
    make_daemon: Callable[..., Daemon], capsys: pytest.CaptureFixture[str]
) -> None:
    daemon = make_daemon()
    for name in ("one", "two", "three"):
        (daemon.root / f"{name}.txt").write_text(f"the {name} file, with its own words")
    daemon.start()

    async def told() -> tuple[str | None, int, str | None]:
        client = await daemon.client()
        hello = await client.hello()
        seq = await client.sync()
        subscribed = await client.subscribe(since=seq)
        await client.close()
        return hello.store, seq, subscribed.store

    old, seen, subscribed = asyncio.run(told())
    assert old is not None and subscribed == old
    assert daemon.stop() == 0
    shutil.rmtree(daemon.state)  # the store is replaced: a new one, a new event log
    (daemon.root / "four.txt").write_text("the four file, with its own words")
    daemon.start()

    async def resumed() -> tuple[str | None, str]:
        client = await daemon.client()
        new = (await client.hello()).store
        last = await client.sync()
        assert last >= seen  # the new log reaches past the old resume point: seq alone passes
        with pytest.raises(ProtocolError) as refused:
            await client.subscribe(since=seen, store=old)
        result = await client.subscribe(since=0, store=new)
        await client.close()
        assert result.store == new
        return new, refused.value.code

    new, code = asyncio.run(resumed())
    assert new is not None and new != old
    assert code == "store_mismatch"
    command = ["subscribe", "--since", str(seen), "--store", str(old), "--socket"]
    assert main([*command, str(daemon.socket)]) == 1
    err = capsys.readouterr().err
    assert f"the store {old} is not this daemon's ({new})" in err and "(store_mismatch)" in err
    assert daemon.stop() == 0
