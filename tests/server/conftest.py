"""Fixtures for the socket server tests: short socket paths, a fake backend, a running server."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def root_dir(short_dir: Path) -> Path:
    """A watched root with a few files, symbolic links resolved."""
    root = short_dir / "root"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("a")
    (root / "sub" / "b.txt").write_text("b")
    return root.resolve()


@pytest.fixture(scope="module")
def tmp_tree() -> Iterator[Path]:
    """A root with links in and out of it, shared by the examples of a property test."""
    base = Path(tempfile.mkdtemp(prefix="isccd-", dir="/tmp")).resolve()
    root = base / "root"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("a")
    (root / "sub" / "b.txt").write_text("b")
    (base / "outside").mkdir()
    (base / "outside" / "secret.txt").write_text("s")
    (root / "link_in").symlink_to("sub")
    (root / "link_abs_in").symlink_to(root / "sub" / "b.txt")
    (root / "link_out").symlink_to(base / "outside")
    (root / "link_up").symlink_to("../outside")
    (root / "loop").symlink_to("loop")
    try:
        yield root
    finally:
        shutil.rmtree(base, ignore_errors=True)
