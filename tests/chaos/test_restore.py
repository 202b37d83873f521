"""A store restored from an older copy of itself, under a real daemon: its log goes back to the
copy and counts new events with the sequence numbers a subscriber had already seen; resuming
from there is refused (``store_mismatch``) instead of silently skipping what it missed, while a
resume across an ordinary restart is still exact."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from isccd.errors import ProtocolError
from isccd.protocol import ErrorCode
from isccd.store import DB_NAME
from tests.e2e.conftest import Daemon
from tests.pg import PgServer

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow


def _write(daemon: Daemon, name: str) -> None:
    (daemon.root / name).write_text(f"the file {name}, with words of its own " * 10)


async def _sync(daemon: Daemon) -> tuple[int, str]:
    """The last seq after every change so far, and the store's identity."""
    client = await daemon.client()
    seq = await client.sync()
    store = (await client.hello()).store
    await client.close()
    assert store is not None, "the daemon names the store it serves"
    return seq, store


async def _resume(daemon: Daemon, since: int, store: str) -> int:
    """Subscribe after ``since`` of the log named ``store``; the head then."""
    client = await daemon.client()
    try:
        return (await client.subscribe(since=since, store=store)).head
    finally:
        await client.close()


def _copy_database(source: Path, target: Path) -> None:
    target.mkdir(exist_ok=True)
    for path in source.glob(f"{DB_NAME}*"):
        if not path.name.endswith(".lock"):
            shutil.copy2(path, target / path.name)


def test_a_store_restored_from_an_older_copy_refuses_a_resume_past_the_copy(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon()
    _write(daemon, "a.txt")
    daemon.start()
    copied, first_run = asyncio.run(_sync(daemon))
    assert daemon.stop() == 0
    backup = daemon.base / "backup"
    _copy_database(daemon.state, backup)  # a backup, taken while the daemon is stopped

    daemon.start()
    for name in ("b.txt", "c.txt", "d.txt"):
        _write(daemon, name)
    seen, store = asyncio.run(_sync(daemon))  # a subscriber followed the log up to here
    assert seen > copied
    assert daemon.stop() == 0

    # An ordinary restart: the store has another identity, and the resume is exact.
    daemon.start()
    assert asyncio.run(_resume(daemon, seen, store)) >= seen
    assert daemon.stop() == 0

    for path in daemon.state.glob(f"{DB_NAME}*"):
        path.unlink()
    _copy_database(backup, daemon.state)  # the administrator restores the backup
    daemon.start()
    names = iter(f"n{i}.txt" for i in range(1000))
    head, _ = asyncio.run(_sync(daemon))  # the reconcile logs b, c and d again
    while head <= seen:  # new events reuse the numbers the subscriber has seen
        _write(daemon, next(names))
        head, _ = asyncio.run(_sync(daemon))
    # The run the subscriber followed is not in the copy's log.
    with pytest.raises(ProtocolError, match="restored from an older copy") as refused:
        asyncio.run(_resume(daemon, seen, store))
    assert refused.value.code == ErrorCode.STORE_MISMATCH
    # A subscriber of the run the copy was taken in, further than the copy went (a copy taken
    # while the daemon ran).
    with pytest.raises(ProtocolError, match="went backwards") as refused:
        asyncio.run(_resume(daemon, copied + 1, first_run))
    assert refused.value.code == ErrorCode.STORE_MISMATCH
    assert f"ended at seq {copied}, before since {copied + 1}" in str(refused.value)
    # Up to where the copy ended, that run's numbers are still its events: resumed exactly.
    assert asyncio.run(_resume(daemon, copied, first_run)) == head
    assert daemon.stop() == 0


def test_a_fleet_database_restored_from_an_older_dump_refuses_a_resume_past_the_dump(
    make_daemon: Callable[..., Daemon], pg_server: PgServer, pg_url: str
) -> None:
    name = pg_url.rsplit("/", 1)[1]
    daemon = make_daemon(ISCCD_STORE__URL=pg_url, ISCCD_STORE__HOST="media-01")
    _write(daemon, "a.txt")
    daemon.start()
    copied, first_run = asyncio.run(_sync(daemon))
    assert daemon.stop() == 0
    dump = pg_server.dump(name)  # the administrator's nightly backup

    daemon.start()
    for name_ in ("b.txt", "c.txt", "d.txt"):
        _write(daemon, name_)
    seen, store = asyncio.run(_sync(daemon))  # a subscriber followed the log up to here
    assert seen > copied and store == first_run
    assert daemon.stop() == 0

    # An ordinary restart: the same identity, and the resume is exact.
    daemon.start()
    assert asyncio.run(_resume(daemon, seen, store)) >= seen
    assert daemon.stop() == 0

    pg_server.restore(name, dump)  # the database is put back as it was in the dump
    daemon.start()
    names = iter(f"n{i}.txt" for i in range(1000))
    head, now = asyncio.run(_sync(daemon))  # the reconcile logs b, c and d again
    while head <= seen:  # new events reuse the numbers the subscriber has seen
        _write(daemon, next(names))
        head, now = asyncio.run(_sync(daemon))
    assert now != store
    with pytest.raises(ProtocolError, match="went backwards") as refused:
        asyncio.run(_resume(daemon, seen, store))
    assert refused.value.code == ErrorCode.STORE_MISMATCH
    assert f"ended at seq {copied}, before since {seen}" in str(refused.value)
    # Up to where the dump ended, the numbers are still its events: resumed exactly.
    assert asyncio.run(_resume(daemon, copied, store)) == head
    assert any(line.get("event") == "fleet_log_went_backwards" for line in daemon.log_lines())
    assert daemon.stop() == 0
