"""Shared test configuration.

Hypothesis runs the ``default`` profile: derandomized, so a run is reproducible and CI never
fails on an example no developer has seen, and fast enough for the whole suite to stay under ten
minutes on two cores. ``HYPOTHESIS_PROFILE=thorough`` explores: random seeds and many more
examples; run it before a release and after touching an algorithm.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def fork_server_dies(tmp_path: Path) -> dict[str, str]:
    """Environment variables under which the multiprocessing fork server, that every hashing
    worker is forked from, dies as it starts (as when it cannot import isccd): for an isccd
    run as ``python -m isccd``."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(
        "import os, sys\n"
        "if sys.argv[:1] == ['-c']:  # the fork server; isccd runs as python -m isccd\n"
        "    os._exit(3)\n"
    )
    return {"PYTHONPATH": os.pathsep.join([str(hooks), *sys.path])}
