"""The pipeline's tests share a harness over a temporary root."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pipeline.harness import Harness


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    """A pipeline over ``tmp_path / "root"`` hashing with designed codes, closed afterwards."""
    harness = Harness(tmp_path)
    yield harness
    harness.close()
