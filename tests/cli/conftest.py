"""Fixtures of the command-line tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_index_cli import make_library


@pytest.fixture
def library(tmp_path: Path) -> Path:
    """A small folder with exact and near duplicates (:func:`make_library`)."""
    return make_library(tmp_path / "library")
