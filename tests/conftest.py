"""Shared test configuration.

Hypothesis runs the ``default`` profile: derandomized, so a run is reproducible and CI never
fails on an example no developer has seen, and fast enough for the whole suite to stay under ten
minutes on two cores. ``HYPOTHESIS_PROFILE=thorough`` explores: random seeds and many more
examples; run it before a release and after touching an algorithm.
"""

from __future__ import annotations

import os

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
