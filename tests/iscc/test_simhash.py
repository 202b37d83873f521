"""alg_simhash against the reference (iscc-core 1.5.0) and iscc-lib, and its input checks."""

from __future__ import annotations

import random

import iscc_core
import iscc_lib
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.iscc.exceptions import IsccError
from isccd.iscc.simhash import alg_simhash


@st.composite
def digest_lists(draw: st.DrawFn) -> list[bytes]:
    nbytes = draw(st.sampled_from([1, 4, 8, 16, 32]))
    digest = st.binary(min_size=nbytes, max_size=nbytes)
    # Few distinct digests repeated often make ties (count == n / 2) common.
    pool = draw(st.lists(digest, min_size=1, max_size=4))
    return draw(
        st.one_of(
            st.lists(st.sampled_from(pool), min_size=1, max_size=40),
            st.lists(digest, min_size=1, max_size=40),
            # More rows than the unpacking path takes, to cover the histogram path.
            st.lists(st.sampled_from(pool), min_size=600, max_size=700),
        )
    )


@given(digest_lists())
@pytest.mark.slow
def test_equals_reference(digests: list[bytes]) -> None:
    expected = iscc_core.alg_simhash(digests)
    assert alg_simhash(digests) == expected
    assert bytes(iscc_lib.alg_simhash(digests)) == expected


@pytest.mark.parametrize("n", range(1, 16))
def test_few_digests_equal_reference(n: int) -> None:
    # Counted with Python ints up to a dozen digests, with numpy above: both sides, with ties.
    rng = random.Random(n)
    pool = [rng.randbytes(32) for _ in range(3)]
    for digests in ([rng.randbytes(32) for _ in range(n)], [rng.choice(pool) for _ in range(n)]):
        assert alg_simhash(digests) == iscc_core.alg_simhash(digests)


@given(
    st.integers(1, 32).flatmap(
        lambda n: st.lists(st.binary(min_size=n, max_size=n), min_size=1, max_size=3)
    )
)
def test_one_to_three_digests_equal_reference(digests: list[bytes]) -> None:
    # Taken without counting: one digest is itself, two their bits' union, three the majority.
    assert alg_simhash(digests) == iscc_core.alg_simhash(digests)


@given(st.binary(min_size=1, max_size=32))
def test_single_digest_is_its_own_simhash(digest: bytes) -> None:
    assert alg_simhash([digest]) == digest


def test_ties_set_the_bit() -> None:
    # Spec example: each bit is set in exactly one of two digests.
    assert alg_simhash([bytes.fromhex("00000001"), bytes.fromhex("00000002")]).hex() == "00000003"


def test_accepts_iterables_and_bytes_like() -> None:
    digests: list[bytes | bytearray | memoryview] = [
        b"\x0f\xf0",
        bytearray(b"\x0f\x0f"),
        memoryview(b"\xff\x00"),
    ]
    expected = iscc_core.alg_simhash([bytes(d) for d in digests])
    assert alg_simhash(iter(digests)) == expected
    assert alg_simhash(tuple(digests)) == expected


def test_empty_list_is_refused() -> None:
    with pytest.raises(IsccError, match="at least one digest"):
        alg_simhash([])
    with pytest.raises(IsccError, match="at least one digest"):
        alg_simhash(iter(()))


def test_unequal_lengths_are_refused() -> None:
    with pytest.raises(IsccError, match="equal lengths"):
        alg_simhash([b"\x00\x01", b"\x00"])


@pytest.mark.parametrize("value", [b"\x00\x01", "ab", bytearray(b"ab")])
def test_a_single_byte_string_is_a_type_error(value: object) -> None:
    with pytest.raises(TypeError, match="sequence of digests"):
        alg_simhash(value)  # type: ignore[arg-type]


def test_non_bytes_items_are_a_type_error() -> None:
    with pytest.raises(TypeError):
        alg_simhash(["ab", "cd"])  # type: ignore[list-item]
