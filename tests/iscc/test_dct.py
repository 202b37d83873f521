"""alg_dct and dct_rows are bit-identical to iscc-core 1.5.0's DCT (compiled and pure Python)."""

from __future__ import annotations

import importlib.util
import math
import struct
from collections.abc import Callable
from pathlib import Path

import iscc_core
import iscc_core.dct
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.iscc.dct import alg_dct, dct_rows
from isccd.iscc.exceptions import IsccError


def _load_pure_python_reference() -> Callable[[list[float]], list[float]]:
    """iscc-core's dct.py source, which the installed compiled module shadows."""
    source = Path(iscc_core.__file__).with_name("dct.py")
    spec = importlib.util.spec_from_file_location("iscc_core_dct_pure", source)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    function: Callable[[list[float]], list[float]] = module.alg_dct
    return function


pure_reference_dct = _load_pure_python_reference()


def bits_of(values: list[float]) -> list[bytes]:
    """Exact float64 bit patterns (so -0.0 and 0.0 differ, unlike ==)."""
    return [struct.pack(">d", float(v)) for v in values]


@st.composite
def vectors(draw: st.DrawFn, n: int | None = None) -> list[float]:
    n = 2 ** draw(st.integers(0, 6)) if n is None else n
    element = draw(
        st.sampled_from(
            [
                st.integers(0, 255),
                st.floats(-1e9, 1e9, allow_nan=False),
                st.sampled_from([0.0, 1.0, 127.5, 255.0, 1e-300, -0.0]),
            ]
        )
    )
    return draw(st.lists(element, min_size=n, max_size=n))


@pytest.mark.slow
@given(vectors())
def test_bit_identical_to_reference(v: list[float]) -> None:
    ours = bits_of(alg_dct(v))
    assert ours == bits_of(iscc_core.dct.alg_dct(v))
    assert ours == bits_of(pure_reference_dct(v))


@st.composite
def matrices(draw: st.DrawFn) -> list[list[float]]:
    n = 2 ** draw(st.integers(0, 6))
    return draw(st.lists(vectors(n), min_size=1, max_size=6))


@pytest.mark.slow
@given(matrices())
def test_rows_at_once_equal_one_by_one(rows: list[list[float]]) -> None:
    matrix = np.array(rows, dtype=np.float64)
    got = dct_rows(matrix)
    for row, expected in zip(got.tolist(), rows, strict=True):
        assert bits_of(row) == bits_of(iscc_core.dct.alg_dct(expected))


@given(st.lists(st.integers(0, 255), min_size=1024, max_size=1024))
@pytest.mark.slow
def test_32x32_rows_then_columns_equal_reference(pixels: list[int]) -> None:
    matrix = np.array(pixels, dtype=np.float64).reshape(32, 32)
    got = dct_rows(dct_rows(matrix).T).T
    rows = [iscc_core.dct.alg_dct(pixels[i : i + 32]) for i in range(0, 1024, 32)]
    columns = [iscc_core.dct.alg_dct(list(col)) for col in zip(*rows, strict=True)]
    expected = [list(row) for row in zip(*columns, strict=True)]
    assert [bits_of(row) for row in got.tolist()] == [bits_of(row) for row in expected]


def test_is_the_unscaled_dct_ii() -> None:
    # Independent check of the definition: X_k = sum x_n cos(pi/N (n + 1/2) k).
    v = [3.0, -1.0, 4.0, 1.5, -5.0, 9.0, 2.0, 6.0]
    n = len(v)
    expected = [
        sum(x * math.cos(math.pi / n * (i + 0.5) * k) for i, x in enumerate(v)) for k in range(n)
    ]
    assert alg_dct(v) == pytest.approx(expected, abs=1e-9)


def test_length_one_is_identity() -> None:
    assert alg_dct([7.5]) == [7.5]


@pytest.mark.parametrize("n", [0, 3, 6, 12, 33])
def test_length_not_a_power_of_two_is_refused(n: int) -> None:
    with pytest.raises(IsccError, match="power of two"):
        alg_dct([1.0] * n)
    with pytest.raises(IsccError, match="power of two"):
        dct_rows(np.ones((2, n)))


def test_non_numbers_are_a_type_error() -> None:
    with pytest.raises(TypeError):
        alg_dct(["1", "2"])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        dct_rows(np.ones((2, 4), dtype=np.int64))


def test_nested_input_is_refused() -> None:
    with pytest.raises(IsccError, match="flat"):
        alg_dct([[1.0, 2.0], [3.0, 4.0]])  # type: ignore[list-item]
    with pytest.raises(IsccError, match="2-D"):
        dct_rows(np.ones(4))
