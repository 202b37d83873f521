"""Chaos tests run real daemons (as the end-to-end tests do), with deterministic seeds."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.e2e.conftest import Daemon, daemons


@pytest.fixture
def make_daemon() -> Iterator[Callable[..., Daemon]]:
    """Build daemons (not started) in a short temporary directory; all are killed at the end."""
    with daemons() as make:
        yield make
