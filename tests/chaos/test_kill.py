"""SIGKILL at random moments, during scans and during live changes, restarted each time: the
index ends equal to a fresh scan of the same tree (files, codes, duplicate groups), the
database passes ``PRAGMA integrity_check``, and no process of a killed daemon lives on.

The moments and the changes come from a fixed seed; ``bench/chaos.py`` runs more kills.
"""

from __future__ import annotations

import asyncio
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from tests.e2e.conftest import Daemon, daemons

from .harness import descendants, fresh_scan, make_tree, mutate, snapshot, wait_gone

SEED = 20240917


@pytest.fixture
def make_daemon() -> Iterator[Callable[..., Daemon]]:
    with daemons() as make:
        yield make


def kill_at_random(daemon: Daemon, rng: random.Random, *, live: bool) -> None:
    """Start the daemon, SIGKILL it after a random delay (while ``live``, changes are made
    meanwhile), and check that every process it had is gone."""
    daemon.start()
    writer_rng = random.Random(rng.random())
    stop = threading.Event()

    def write() -> None:
        while not stop.is_set():
            mutate(daemon.root, writer_rng)
            stop.wait(0.01)  # a steady trickle of changes, not a flood

    writer = threading.Thread(target=write)
    if live:
        writer.start()
    try:
        time.sleep(rng.uniform(0.05, 1.5))  # the random moment
        assert daemon.proc is not None
        left_behind = descendants(daemon.proc.pid)
        daemon.proc.send_signal(signal.SIGKILL)
        daemon.proc.wait(10)
    finally:
        stop.set()
        if live:
            writer.join()
    daemon.kill()  # its notification socket
    assert wait_gone(left_behind) == set(), "processes of the killed daemon live on"


@pytest.mark.slow
def test_sigkill_during_scans_and_changes_leaves_the_index_of_a_fresh_scan(
    make_daemon: Callable[..., Daemon],
) -> None:
    rng = random.Random(SEED)
    daemon = make_daemon(ISCCD_LOG__LEVEL="warning", ISCCD_HASHING__WORKERS="2")
    make_tree(daemon.root, rng, 300)
    for cycle in range(6):
        for _ in range(40):  # changes while it is down: the next start has work to do
            mutate(daemon.root, rng)
        kill_at_random(daemon, rng, live=cycle % 2 == 1)
    daemon.start()
    _sync(daemon)
    assert daemon.stop() == 0
    index = snapshot(daemon.state, daemon.root)
    fresh = fresh_scan(daemon.root, daemon.base / "fresh")
    assert index.integrity == ["ok"]
    assert index.files == fresh.files
    assert index.groups == fresh.groups
    assert len(index.files) > 250
    assert {kind for kind, _, _ in index.groups} == {"exact", "near"}


def _sync(daemon: Daemon) -> None:
    async def sync() -> None:
        client = await daemon.client()
        await client.sync()
        await client.close()

    asyncio.run(asyncio.wait_for(sync(), 120))
