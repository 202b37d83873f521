"""MinHash equals iscc-core 1.5.0, including the wrap-around arithmetic and bit-plane layout."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from isccd.iscc.exceptions import IsccError
from isccd.iscc.minhash import (
    alg_minhash,
    alg_minhash_64,
    alg_minhash_256,
    alg_minhash_compress,
    minhash_fold,
    minhash_init,
)

ic = pytest.importorskip("iscc_core")

uint32_features = st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=300)
#: The reference masks ``a * f + b`` to 64 bits: every unsigned 64-bit feature counts.
any_int_features = st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=50)


def test_spec_reference_values() -> None:
    assert alg_minhash_256([1, 2, 3]).hex() == (
        "5768d47fa44192dccb61dce6284dbee5a5548f88d365103b6634ec685e506717"
    )
    assert alg_minhash_64([1, 2, 3]).hex() == "5768d47fa44192dc"


@given(uint32_features | any_int_features)
@example([0])
@example([2**32 - 1])
def test_minhash_matches_reference(features: list[int]) -> None:
    assert alg_minhash(features) == ic.alg_minhash(features)


@pytest.mark.slow
@given(uint32_features)
def test_digests_match_reference(features: list[int]) -> None:
    assert alg_minhash_64(features) == ic.alg_minhash_64(features)
    assert alg_minhash_256(features) == ic.alg_minhash_256(features)
    assert alg_minhash_256(np.array(features, dtype=np.uint32)) == ic.alg_minhash_256(features)


def test_many_features_fold_in_blocks() -> None:
    features = np.random.default_rng(1).integers(0, 2**32, 20_000, dtype=np.uint64)
    assert alg_minhash(features) == ic.alg_minhash(features.tolist())


@given(st.lists(uint32_features, min_size=1, max_size=5))
def test_folding_in_pieces_equals_folding_at_once(pieces: list[list[int]]) -> None:
    minvec = minhash_init()
    for piece in pieces:
        minhash_fold(minvec, piece)
    assert minvec.tolist() == alg_minhash([f for piece in pieces for f in piece])


@given(
    st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=80),
    st.integers(1, 8),
)
@example([5, 9, 1], 1)
def test_compress_matches_reference(mhash: list[int], lsb: int) -> None:
    assert alg_minhash_compress(mhash, lsb) == ic.alg_minhash_compress(mhash, lsb)


def test_empty_features_are_refused() -> None:
    with pytest.raises(IsccError, match="at least one feature"):
        alg_minhash([])


def test_non_integer_features_are_refused() -> None:
    with pytest.raises(TypeError):
        alg_minhash([1.5, 2])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        alg_minhash([True])
    with pytest.raises(TypeError):
        alg_minhash(np.array([1.5]))


@pytest.mark.parametrize("features", [[-1], [2**64], np.array([3, -1])])
def test_out_of_range_features_are_refused(features: list[int]) -> None:
    with pytest.raises(IsccError, match="unsigned 64-bit"):
        alg_minhash(features)


@pytest.mark.parametrize(("mhash", "lsb"), [([], 4), ([1, 2], 0), ([1, 2], 65)])
def test_compress_refuses_nothing_to_compress(mhash: list[int], lsb: int) -> None:
    with pytest.raises(IsccError):
        alg_minhash_compress(mhash, lsb)
