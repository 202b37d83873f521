"""Reconciles requested while one runs are queued and merged: directories inside another are
walked once, and a request for the whole root covers every directory."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from isccd.daemon.scans import Scans
from isccd.pipeline import ScanStats
from isccd.walk import ScanOptions


class _Pipeline:
    """Records the walks asked of it."""

    def __init__(self) -> None:
        self.walks: list[str | None] = []

    async def reconcile(
        self, root: str, *, start: str | None, scan: ScanOptions, progress: Callable[..., Any]
    ) -> ScanStats:
        self.walks.append(start)
        return ScanStats(root, start or root)


def _walks(*requests: str | None) -> list[str | None]:
    async def main() -> list[str | None]:
        pipeline = _Pipeline()
        scans = Scans(pipeline, ScanOptions())  # type: ignore[arg-type]
        first = scans.request("/r", "startup")  # running from now on: the rest is queued
        futures = [scans.request("/r", "request", start) for start in requests]
        results = await asyncio.gather(first, *futures)
        assert all(r is not None for r in results)
        await scans.close()
        return pipeline.walks[1:]

    return asyncio.run(main())


def test_queued_directories_are_merged_and_the_root_covers_them() -> None:
    assert _walks("/r/a/x", "/r/a", "/r/b", "/r/b/y") == ["/r/a", "/r/b"]
    assert _walks("/r/a", None, "/r/b") == [None]
    assert _walks("/r", "/r/a") == [None]  # the root named as a directory is the whole root
    assert _walks("/r/a") == ["/r/a"]
