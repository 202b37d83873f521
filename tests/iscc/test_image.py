"""Image-Code against iscc-core 1.5.0 and iscc-lib at every bit length, and its input checks."""

from __future__ import annotations

import random

import iscc_core
import iscc_lib
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.iscc.exceptions import IsccError
from isccd.iscc.image import gen_image_code, gen_image_code_v0, soft_hash_image_v0

ALL_BITS = range(32, 257, 32)

#: Seeds for random.Random: Hypothesis draws (and shrinks) one int instead of 1024 values.
seeds = st.integers(0, 2**64)


@st.composite
def images(draw: st.DrawFn) -> list[int]:
    """32x32 gray images, many of them flat or nearly so: their DCT coefficients tie with the
    block median, where a last-bit difference would flip a code bit."""
    rng = random.Random(draw(seeds))
    kind = draw(st.sampled_from(["noise", "flat", "near_flat", "two_levels", "gradient"]))
    if kind == "noise":
        return [rng.randrange(256) for _ in range(1024)]
    base = rng.randrange(256)
    pixels = [base] * 1024
    if kind == "near_flat":
        for _ in range(rng.randrange(1, 12)):
            i = rng.randrange(1024)
            pixels[i] = min(255, max(0, pixels[i] + rng.choice((-1, 1))))
    elif kind == "two_levels":
        other = rng.randrange(256)
        for i in rng.sample(range(1024), rng.randrange(1, 1024)):
            pixels[i] = other
    elif kind == "gradient":
        step = rng.randrange(1, 8)
        pixels = [
            min(255, (i % 32) * step + (i // 32) * rng.choice((0, step))) for i in range(1024)
        ]
    return pixels


@pytest.mark.parametrize("bits", ALL_BITS)
@given(pixels=images())
@pytest.mark.slow
def test_equals_reference(pixels: list[int], bits: int) -> None:
    expected = iscc_core.gen_image_code_v0(pixels, bits)
    assert gen_image_code_v0(pixels, bits) == expected
    assert dict(iscc_lib.gen_image_code_v0(pixels, bits)) == expected
    assert soft_hash_image_v0(pixels, bits) == iscc_core.soft_hash_image_v0(pixels, bits)


@pytest.mark.slow
@given(seeds, st.sampled_from(ALL_BITS))
def test_float_pixels_equal_reference(seed: int, bits: int) -> None:
    rng = random.Random(seed)
    pixels = [rng.uniform(0, 255) for _ in range(1024)]
    assert gen_image_code_v0(pixels, bits) == iscc_core.gen_image_code_v0(pixels, bits)


@pytest.mark.slow
@given(images(), st.sampled_from(ALL_BITS))
def test_array_bytes_and_iterator_inputs_equal_list_input(pixels: list[int], bits: int) -> None:
    expected = gen_image_code_v0(pixels, bits)
    assert gen_image_code_v0(np.array(pixels, dtype=np.uint8), bits) == expected
    assert gen_image_code_v0(np.array(pixels).reshape(32, 32), bits) == expected
    assert gen_image_code_v0(bytes(pixels), bits) == expected
    assert gen_image_code_v0(iter(pixels), bits) == expected
    assert gen_image_code(pixels, bits) == expected


def test_black_and_white_images() -> None:
    # From the spec: black is all zeros; white has only the DC term above the median.
    assert soft_hash_image_v0([0] * 1024, 64) == bytes(8)
    assert soft_hash_image_v0([255] * 1024, 64) == b"\x80" + bytes(7)


@pytest.mark.parametrize("bits", [0, 16, 48, 288, 512, -64])
def test_bad_bits_are_refused(bits: int) -> None:
    with pytest.raises(IsccError, match="multiple of 32"):
        gen_image_code_v0([0] * 1024, bits)


@pytest.mark.parametrize("bits", [64.0, "64", None, True])
def test_non_int_bits_are_a_type_error(bits: object) -> None:
    with pytest.raises(TypeError, match="bits"):
        gen_image_code_v0([0] * 1024, bits)  # type: ignore[arg-type]


@pytest.mark.parametrize("count", [0, 1, 1023, 1025, 4096])
def test_wrong_pixel_count_is_refused(count: int) -> None:
    with pytest.raises(IsccError, match="1024"):
        gen_image_code_v0([0] * count)


def test_wrong_shapes_are_refused() -> None:
    with pytest.raises(IsccError, match="1024"):
        gen_image_code_v0(np.zeros((16, 64)))
    with pytest.raises(IsccError, match="1024"):
        gen_image_code_v0([[0] * 32] * 31 + [[0] * 31])  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [-1, 256, 1e9, float("nan"), float("inf")])
def test_out_of_range_pixels_are_refused(value: float) -> None:
    with pytest.raises(IsccError, match="0 to 255"):
        gen_image_code_v0([0] * 1023 + [value])


@pytest.mark.parametrize("value", ["a", None, b"x", 1j])
def test_non_number_pixels_are_a_type_error(value: object) -> None:
    with pytest.raises(TypeError, match="pixels"):
        gen_image_code_v0([0] * 1023 + [value])  # type: ignore[list-item]


def test_numpy_int_bits_are_accepted() -> None:
    pixels = list(range(256)) * 4
    assert gen_image_code_v0(pixels, np.int64(128)) == iscc_core.gen_image_code_v0(pixels, 128)  # type: ignore[arg-type]
