"""``rescan PATH`` walks only that directory, and each file's log line has the level of how it
went, against a real daemon.

The daemon settles changes only after a minute, so files written while it runs stay unindexed
until a reconcile finds them: what a rescan indexes shows which directories it walked.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable

import numpy as np
import pytest
from PIL import Image

from isccd.errors import ProtocolError
from isccd.model import EventType
from isccd.protocol import RescanRequest

from .conftest import Daemon, next_event, of_type

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow


def _truncated_png() -> bytes:
    pixels = np.random.default_rng(7).integers(0, 255, (64, 64, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "PNG")
    return out.getvalue()[: len(out.getvalue()) // 2]


def test_rescan_of_a_directory_walks_only_it_and_problems_log_as_warnings(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon(ISCCD_WATCH__SETTLE="60", ISCCD_WATCH__MAX_DELAY="600")
    inside, beside = daemon.root / "inside", daemon.root / "beside"
    inside.mkdir()
    beside.mkdir()
    daemon.start()

    async def scenario() -> None:
        client = await daemon.client()
        await client.sync()  # the startup reconcile is over
        (inside / "new.txt").write_text("a file written behind the watcher's back, inside")
        (inside / "broken.png").write_bytes(_truncated_png())
        (beside / "new.txt").write_text("a file written behind the watcher's back, beside")
        listener = await daemon.client()
        await listener.subscribe(types=[EventType.SCAN_DONE.value])
        reply = await client.request(RescanRequest(0, str(inside)))
        assert reply.unwrap() == {"roots": [str(inside)]}
        done = await next_event(listener, of_type(EventType.SCAN_DONE))
        assert done.data["start"] == str(inside)
        assert done.data["added"] == 2
        assert (await client.get(str(inside / "new.txt"))).iscc
        try:
            await client.get(str(beside / "new.txt"))
            raise AssertionError("the directory beside was walked too")
        except ProtocolError as exc:
            assert exc.code == "not_found"
        await listener.close()
        await client.close()

    asyncio.run(scenario())
    assert daemon.stop() == 0
    lines = {
        line["path"]: line for line in daemon.log_lines() if line.get("event") == "file_processed"
    }
    assert lines.keys() == {str(inside / "new.txt"), str(inside / "broken.png")}
    broken, fine = lines[str(inside / "broken.png")], lines[str(inside / "new.txt")]
    assert (broken["outcome"], broken["level"]) == ("partial", "warning")
    assert "image file is truncated" in broken["errors"][0]
    assert (fine["outcome"], fine["level"], fine["errors"]) == ("coded", "info", [])
    assert broken.keys() == fine.keys() and "partial" not in fine
