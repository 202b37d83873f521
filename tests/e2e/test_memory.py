"""A file that needs more memory than a hashing worker may use (``[hashing] worker_memory``),
with a real daemon: the file is reported ``too_large`` with the units that fit, its worker is
replaced, and the files around it are indexed as usual."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from isccd.model import EventType
from tests.extract.media import huge_png

from .conftest import Daemon, next_event, of_type

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow


def test_a_file_over_the_worker_memory_is_too_large_and_nothing_else_is_lost(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon(ISCCD_HASHING__WORKER_MEMORY="400")
    huge = huge_png(daemon.root / "huge.png")  # 127 MP of 16-bit RGBA: about 1 GB decoded
    for name in ("before", "after"):
        (daemon.root / f"{name}.txt").write_text(f"the {name} file, an ordinary one " * 20)
    daemon.start()

    async def scenario() -> None:
        client = await daemon.client()
        await client.subscribe(since=0)
        error = await next_event(client, of_type(EventType.FILE_ERROR, huge))
        assert [i["code"] for i in error.data["issues"]] == ["too_large"]
        control = await daemon.client()
        await control.sync()
        info = await control.get(str(huge))
        assert set(info.units) == {"meta", "data", "instance"} and info.iscc
        for name in ("before", "after"):
            assert (await control.get(str(daemon.root / f"{name}.txt"))).iscc
        await control.close()
        await client.close()

    asyncio.run(scenario())
    assert daemon.stop() == 0
    lines = daemon.log_lines()
    [exceeded] = [line for line in lines if line.get("event") == "worker_memory_exceeded"]
    assert (exceeded["path"], exceeded["limit_mib"], exceeded["level"]) == (
        str(huge),
        400,
        "warning",
    )
    assert not [line for line in lines if line.get("event") == "worker_died"]
