"""``isccd scan`` keeps the cyclic garbage collector to a few large steps, and leaves the
collector as it found it; a long-running process freezes no garbage."""

from __future__ import annotations

import gc
import random
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from isccd.cli.main import main
from isccd.collector import YOUNG_THRESHOLD, fewer_collections


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of each collection that starts while the test runs."""
    started: list[int] = []

    def note(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(note)
    try:
        yield started
    finally:
        gc.callbacks.remove(note)


def _tree(root: Path, files: int) -> Path:
    rng = random.Random(files)
    for n in range(files):
        folder = root / f"d{n // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n}.bin").write_bytes(rng.randbytes(rng.randrange(100, 2000)))
    return root


def test_the_block_restores_the_collector() -> None:
    before = gc.get_threshold()
    with fewer_collections() as collector:
        assert not gc.isenabled()
        collector.settled()
        assert gc.isenabled()
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled() -> None:
    gc.disable()
    try:
        with fewer_collections() as collector:
            collector.settled()
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_a_long_running_process_freezes_no_garbage() -> None:
    with fewer_collections() as collector:
        garbage = weakref.ref(_Cycle())  # unreachable at once, in a reference cycle
        collector.settled(collect=True)
        assert garbage() is None
    with fewer_collections() as collector:
        frozen = weakref.ref(_Cycle())
        collector.settled()  # a command that ends soon: left as it is, until the block ends
        gc.collect()
        assert frozen() is not None
    gc.collect()
    assert frozen() is None


@pytest.mark.slow
def test_a_scan_collects_in_a_few_steps(
    tmp_path: Path, collections: list[int], capsys: pytest.CaptureFixture[str]
) -> None:
    # A first scan loads every module the scan uses, so that the one counted allocates only
    # for its files.
    assert main(["scan", "--state", str(tmp_path / "warm"), str(_tree(tmp_path / "a", 5))]) == 0
    before = gc.get_threshold()
    root = _tree(tmp_path / "b", 600)
    collections.clear()
    assert main(["scan", "--state", str(tmp_path / "state"), str(root), "--json"]) == 0
    capsys.readouterr()
    # At the default pace (700 allocations) these 600 files cost dozens of collections.
    assert len(collections) <= 3, collections
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
