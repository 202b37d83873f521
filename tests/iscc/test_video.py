"""Video-Code against iscc-core 1.5.0 and iscc-lib at every bit length, and its input checks."""

from __future__ import annotations

import random

import iscc_core
import iscc_lib
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.iscc.exceptions import IsccError
from isccd.iscc.video import gen_video_code, gen_video_code_v0, soft_hash_video_v0

ALL_BITS = range(32, 257, 32)


@st.composite
def frame_sets(draw: st.DrawFn) -> list[list[int]]:
    """1 to 40 ternary frames of 380 values, often repeating frames of a small pool."""
    rng = random.Random(draw(st.integers(0, 2**64)))
    pool = [[rng.randrange(3) for _ in range(380)] for _ in range(draw(st.integers(1, 5)))]
    frames = []
    for _ in range(draw(st.integers(1, 40))):
        if rng.random() < 0.5:
            frames.append(list(rng.choice(pool)))
        else:
            frames.append([rng.randrange(3) for _ in range(380)])
    return frames


@pytest.mark.parametrize("bits", ALL_BITS)
@given(frames=frame_sets())
def test_equals_reference(frames: list[list[int]], bits: int) -> None:
    expected = iscc_core.gen_video_code_v0(frames, bits)
    assert gen_video_code_v0(frames, bits) == expected
    assert dict(iscc_lib.gen_video_code_v0(frames, bits)) == expected
    digest = iscc_core.soft_hash_video_v0(frames, bits)
    assert soft_hash_video_v0(frames, bits) == digest
    assert bytes(iscc_lib.soft_hash_video_v0(frames, bits)) == digest


@pytest.mark.slow
@given(frame_sets(), st.sampled_from(ALL_BITS), st.randoms(use_true_random=False))
def test_order_repetition_and_container_do_not_matter(
    frames: list[list[int]], bits: int, rng: random.Random
) -> None:
    expected = gen_video_code_v0(frames, bits)
    shuffled = frames + frames[: rng.randrange(len(frames) + 1)]
    rng.shuffle(shuffled)
    assert gen_video_code_v0(shuffled, bits) == expected
    assert gen_video_code_v0([tuple(f) for f in frames], bits) == expected
    assert gen_video_code_v0(np.array(frames, dtype=np.uint8), bits) == expected
    assert gen_video_code_v0(iter(frames), bits) == expected
    assert gen_video_code(frames, bits) == expected


@given(st.integers(0, 2**64), st.sampled_from(ALL_BITS))
def test_wide_values_equal_reference(seed: int, bits: int) -> None:
    # The reference accepts any ints (a conformance vector uses 0..379); so do we, within int32.
    rng = random.Random(seed)
    frames = [[rng.randrange(-(2**31), 2**31) for _ in range(380)] for _ in range(3)]
    assert gen_video_code_v0(frames, bits) == iscc_core.gen_video_code_v0(frames, bits)


def test_empty_input_is_refused() -> None:
    with pytest.raises(IsccError, match="at least one frame"):
        gen_video_code_v0([])
    with pytest.raises(IsccError, match="at least one frame"):
        gen_video_code_v0(np.zeros((0, 380), dtype=np.uint8))


@pytest.mark.parametrize("lengths", [[379], [381], [0], [380, 379], [380, 380, 400]])
def test_frames_not_380_long_are_refused(lengths: list[int]) -> None:
    with pytest.raises(IsccError, match="380"):
        gen_video_code_v0([[0] * n for n in lengths])


def test_flat_input_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="sequence"):
        gen_video_code_v0([0] * 380)  # type: ignore[list-item]
    with pytest.raises(IsccError, match="380"):
        gen_video_code_v0(np.zeros(380, dtype=np.uint8))


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, 2**64, 2**100])
def test_values_beyond_int32_are_refused(value: int) -> None:
    frame = [0] * 380
    frame[7] = value
    with pytest.raises(IsccError, match="32-bit"):
        gen_video_code_v0([[1] * 380, frame])


@pytest.mark.parametrize("value", [0.5, "1", None, 1j])
def test_non_int_values_are_a_type_error(value: object) -> None:
    frame: list[object] = [0] * 380
    frame[3] = value
    with pytest.raises(TypeError, match="ints"):
        gen_video_code_v0([frame])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="ints"):
        gen_video_code_v0(np.array([frame]))


def test_string_frames_are_a_type_error() -> None:
    with pytest.raises(TypeError, match="ints"):
        gen_video_code_v0(["0" * 380])  # type: ignore[list-item]


@pytest.mark.parametrize("frames", ["0" * 380, b"\x00" * 380])
def test_strings_are_a_type_error(frames: object) -> None:
    with pytest.raises(TypeError, match="sequence of frames"):
        gen_video_code_v0(frames)  # type: ignore[arg-type]


@pytest.mark.parametrize("bits", [0, 16, 48, 288])
def test_bad_bits_are_refused(bits: int) -> None:
    with pytest.raises(IsccError, match="multiple of 32"):
        gen_video_code_v0([[0] * 380], bits)


@pytest.mark.parametrize("bits", [64.0, "64", None])
def test_non_int_bits_are_a_type_error(bits: object) -> None:
    with pytest.raises(TypeError, match="bits"):
        gen_video_code_v0([[0] * 380], bits)  # type: ignore[arg-type]
