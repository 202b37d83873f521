"""Audio-Code against iscc-core 1.5.0 and iscc-lib at every bit length, and its input checks."""

from __future__ import annotations

import iscc_core
import iscc_lib
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from isccd.iscc.audio import gen_audio_code, gen_audio_code_v0, soft_hash_audio_v0
from isccd.iscc.exceptions import IsccError

ALL_BITS = range(32, 257, 32)
INT32 = st.integers(-(2**31), 2**31 - 1)

#: Fingerprints of 0 to 300 values: full int32 range, the range edges, and few distinct small
#: values (many SimHash ties, and sorting that moves equal values).
fingerprints = st.one_of(
    st.lists(INT32, max_size=300),
    st.lists(st.sampled_from([-(2**31), -1, 0, 1, 2**31 - 1]), max_size=40),
    st.lists(st.integers(-3, 3), max_size=300),
    st.lists(INT32, min_size=1, max_size=9),  # fewer values than buckets
)


@pytest.mark.parametrize("bits", ALL_BITS)
@given(cv=fingerprints)
@example(cv=[])
@example(cv=[1])
@example(cv=[1, 2])
@example(cv=[-1, 0, 1])
def test_equals_reference(cv: list[int], bits: int) -> None:
    expected = iscc_core.gen_audio_code_v0(cv, bits)
    assert gen_audio_code_v0(cv, bits) == expected
    assert dict(iscc_lib.gen_audio_code_v0(cv, bits)) == expected
    assert soft_hash_audio_v0(cv, bits) == iscc_core.soft_hash_audio_v0(cv, bits)


@given(fingerprints, st.sampled_from(ALL_BITS))
def test_array_tuple_and_iterator_inputs_equal_list_input(cv: list[int], bits: int) -> None:
    expected = gen_audio_code_v0(cv, bits)
    assert gen_audio_code_v0(np.array(cv, dtype=np.int32), bits) == expected
    assert gen_audio_code_v0(tuple(cv), bits) == expected
    assert gen_audio_code_v0(iter(cv), bits) == expected
    assert gen_audio_code(cv, bits) == expected


def test_spec_example() -> None:
    # cv=[1, 2] at 256 bits, from the digest's worked example.
    assert soft_hash_audio_v0([1, 2], 256).hex() == (
        "0000000300000001000000020000000000000000000000010000000200000000"
    )


@pytest.mark.parametrize("bits", [0, 16, 48, 288, 512])
def test_bad_bits_are_refused(bits: int) -> None:
    with pytest.raises(IsccError, match="multiple of 32"):
        gen_audio_code_v0([1, 2, 3], bits)


@pytest.mark.parametrize("bits", [64.0, "64", None, False])
def test_non_int_bits_are_a_type_error(bits: object) -> None:
    with pytest.raises(TypeError, match="bits"):
        gen_audio_code_v0([1, 2, 3], bits)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, 2**63, -(2**64), 2**100])
def test_values_beyond_int32_are_refused(value: int) -> None:
    with pytest.raises(IsccError, match="32-bit"):
        gen_audio_code_v0([0, value, 1])


def test_values_beyond_int32_in_arrays_are_refused() -> None:
    with pytest.raises(IsccError, match="32-bit"):
        gen_audio_code_v0(np.array([0, 2**40], dtype=np.int64))
    with pytest.raises(IsccError, match="32-bit"):
        gen_audio_code_v0(np.array([2**32 - 1], dtype=np.uint32))


@pytest.mark.parametrize(
    "cv",
    [
        [1.5, 2],
        [1, "2"],
        [1, None],
        [True, False],
        [[1, 2], [3, 4]],
        [[1], [2, 3]],
        "1234",
        b"\x01\x02",
        np.array([1.0, 2.0]),
    ],
)
def test_non_int_values_are_a_type_error(cv: object) -> None:
    with pytest.raises(TypeError, match="cv"):
        gen_audio_code_v0(cv)  # type: ignore[arg-type]
