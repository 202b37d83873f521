"""The symlink-swap race against every request that takes a path, over the real socket of a real
daemon: no reply and no event may be computed from the file outside the root."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from tests.e2e.conftest import Daemon

from .race import make_files, run_race


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_no_request_reads_outside_the_root_while_a_directory_is_swapped_for_a_link(
    make_daemon: Callable[..., Daemon], capsys: pytest.CaptureFixture[str]
) -> None:
    daemon = make_daemon(ISCCD_HASHING__WORKERS="2")
    files = make_files(daemon.root, daemon.base, seed=9)
    daemon.start()

    async def scenario() -> None:
        client = await daemon.client()
        await client.sync()
        datahash = (await client.get(str(files.copy))).datahash
        await client.close()
        assert datahash
        started = time.monotonic()
        figures = await run_race(daemon.socket, files, datahash, clients=4, rounds=150)
        seconds = time.monotonic() - started
        with capsys.disabled():
            print(
                f"\nrace: {figures.swaps} swaps, {figures.requests} requests "
                f"{dict(sorted(figures.by_command.items()))}, {figures.events} events, "
                f"{len(figures.leaks)} computed from outside, {seconds:.1f} s"
            )
        assert figures.leaks == []
        assert figures.requests == 4 * 150
        assert figures.swaps > 100  # the race really ran alongside

    asyncio.run(scenario())
    assert daemon.stop() == 0
