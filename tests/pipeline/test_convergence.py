"""Incremental updates converge to what a fresh scan finds: any sequence of changes, applied with
reconciles in between, leaves the store as a fresh scan of the final tree does."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isccd.store import state_url
from tests.pipeline.harness import Harness, snapshot

operations = st.lists(
    st.tuples(
        st.sampled_from(["write", "copy", "rename", "delete", "link", "move_dir", "touch"]),
        st.integers(0, 5),
        st.integers(0, 5),
        st.sampled_from(["A:0", "A:2", "A:6", "A:11", "B:0", "B:1"]),
        st.booleans(),
    ),
    min_size=1,
    max_size=12,
)


def _apply(root: Path, op: str, x: int, y: int, content: str) -> None:
    names = [
        root / "f0",
        root / "f1",
        root / "d" / "f2",
        root / "d" / "f3",
        root / "e" / "f4",
        root / "f5",
    ]
    src, dst = names[x], names[y]
    if op == "write":
        src.parent.mkdir(exist_ok=True)
        src.write_text(content)
    elif src.is_file() and op == "copy" and src != dst:
        dst.parent.mkdir(exist_ok=True)
        shutil.copyfile(src, dst)
    elif src.is_file() and op == "rename" and src != dst:
        dst.parent.mkdir(exist_ok=True)
        src.rename(dst)
    elif src.is_file() and op == "delete":
        src.unlink()
    elif src.is_file() and op == "link" and not dst.exists():
        dst.parent.mkdir(exist_ok=True)
        dst.hardlink_to(src)
    elif src.is_file() and op == "touch":
        os.utime(src, ns=(y, y))
    elif op == "move_dir" and (root / "d").is_dir() and not (root / "e").exists():
        (root / "d").rename(root / "e")


@settings(max_examples=25)
@given(ops=operations, scan_every=st.integers(1, 4))
@pytest.mark.slow
def test_incremental_updates_converge_to_a_fresh_scan(
    tmp_path_factory: pytest.TempPathFactory,
    ops: list[tuple[str, int, int, str, bool]],
    scan_every: int,
) -> None:
    tmp = tmp_path_factory.mktemp("conv")
    live = Harness(tmp, state="live")
    try:
        for i, (op, x, y, content, _) in enumerate(ops):
            _apply(live.root, op, x, y, content)
            if i % scan_every == 0:
                live.scan()
        live.scan()
        # The per-root counters the store keeps agree with its files, after every change.
        counted = Counter(f.root for f in live.stored())
        assert live.run(live.pipeline.counts()).files == counted
    finally:
        live.close()
    fresh = Harness(tmp, state="fresh")
    try:
        fresh.scan()
    finally:
        fresh.close()
    assert snapshot(state_url(tmp / "live")) == snapshot(state_url(tmp / "fresh"))


def test_snapshot_sees_differences(tmp_path: Path) -> None:
    # The convergence test can fail: a store that missed a change differs from a fresh scan.
    stale = Harness(tmp_path, state="stale")
    stale.write("a", "A:0")
    stale.scan()
    stale.close()
    (stale.root / "a").write_text("A:6")
    fresh = Harness(tmp_path, state="fresh")
    fresh.scan()
    fresh.close()
    assert snapshot(state_url(tmp_path / "stale")) != snapshot(state_url(tmp_path / "fresh"))
