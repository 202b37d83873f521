"""alg_wtahash against iscc-core 1.5.0, and its input checks."""

from __future__ import annotations

import iscc_core
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.iscc._tables import WTA_VIDEO_ID_PERMUTATIONS
from isccd.iscc.exceptions import IsccError
from isccd.iscc.wtahash import alg_wtahash

byte_bits = st.sampled_from(range(8, 257, 8))

# Small value ranges make ties (which give 0) frequent.
vectors = st.one_of(
    st.lists(st.integers(0, 3), min_size=380, max_size=380),
    st.lists(st.integers(0, 10_000), min_size=380, max_size=380),
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=380, max_size=380),
)


@given(vectors, byte_bits)
@pytest.mark.slow
def test_equals_reference(vec: list[float], bits: int) -> None:
    assert alg_wtahash(vec, bits) == iscc_core.alg_wtahash(vec, bits)


@given(vectors)
@pytest.mark.slow
def test_numpy_input_equals_list_input(vec: list[float]) -> None:
    assert alg_wtahash(np.array(vec), 256) == alg_wtahash(vec, 256)


def test_pair_k_sets_bit_k_msb_first() -> None:
    # Independent of the reference: raise only the second index of pair 0, then of pair 9.
    p1 = WTA_VIDEO_ID_PERMUTATIONS[0][1]
    vec = [0] * 380
    vec[p1] = 1
    assert alg_wtahash(vec, 8) == b"\x80"
    vec = [0] * 380
    q1 = WTA_VIDEO_ID_PERMUTATIONS[9][1]
    vec[q1] = 1
    assert alg_wtahash(vec, 16)[1] & 0x40


def test_ties_give_zero() -> None:
    assert alg_wtahash([5] * 380, 256) == bytes(32)


@pytest.mark.parametrize("bits", [0, 4, 12, 264, 512, -8])
def test_bad_bits_are_refused(bits: int) -> None:
    with pytest.raises(IsccError, match="multiple of 8"):
        alg_wtahash([0] * 380, bits)


@pytest.mark.parametrize("bits", [64.0, "64", True])
def test_non_int_bits_are_a_type_error(bits: object) -> None:
    with pytest.raises(TypeError):
        alg_wtahash([0] * 380, bits)  # type: ignore[arg-type]


@pytest.mark.parametrize("length", [0, 379, 381])
def test_wrong_vector_length_is_refused(length: int) -> None:
    with pytest.raises(IsccError, match="380"):
        alg_wtahash([0] * length, 64)


def test_non_numbers_are_a_type_error() -> None:
    with pytest.raises(TypeError):
        alg_wtahash(["a"] * 380, 64)  # type: ignore[list-item]
