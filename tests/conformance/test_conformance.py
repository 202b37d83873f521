"""The 58 conformance vectors of iscc-core 1.5.0 (ISO 24138), each run against isccd's own
function of the same name; the whole result must equal the vector's output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from isccd.iscc.conformance import Vector, iter_vectors, run_vector

DATA = json.loads((Path(__file__).parent / "data.json").read_text(encoding="utf-8"))
VECTORS = list(iter_vectors(DATA))


def test_the_data_set_is_complete() -> None:
    assert DATA["_metadata"]["generator"] == "iscc-core 1.5.0"
    assert len(VECTORS) == 58


@pytest.mark.parametrize("vector", VECTORS, ids=[v.name for v in VECTORS])
def test_vector(vector: Vector) -> None:
    outcome = run_vector(vector)
    assert outcome.error is None, outcome.error
    assert outcome.got == vector.expected()
    assert outcome.passed
