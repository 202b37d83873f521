"""The reference chunker equals iscc-core's, and the compiled chunker cuts exactly where it does."""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from isccd.iscc.cdc import alg_cdc_chunks, alg_cdc_offset, alg_cdc_params
from isccd.iscc.exceptions import IsccError
from isccd.iscc.kernels import PYTHON_KERNELS, Kernels, load_kernels
from isccd.iscc.minhash import minhash_init
from tests.iscc._data import byte_inputs, make_data

ic = pytest.importorskip("iscc_core")


def _load_reference_cdc_source() -> ModuleType:
    # iscc-core ships cdc.py next to its compiled (Cython) build, which hides alg_cdc_offset:
    # load the plain source module to compare against.
    path = Path(ic.__file__).with_name("cdc.py")
    spec = importlib.util.spec_from_file_location("iscc_core_cdc_source", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ic_cdc = _load_reference_cdc_source()

DATA_PARAMS = alg_cdc_params(1024)

#: The 8192-byte conformance input (little-endian uint32 1..2048) and its chunk sizes (spec 2.4).
CONFORMANCE_INPUT = struct.pack("<2048I", *range(1, 2049))
CONFORMANCE_SIZES = [1332, 694, 1245, 876, 815, 1628, 1602]


@given(st.integers(2, 100_000))
@example(1024)
@example(2048)
def test_params_match_reference(avg: int) -> None:
    assert alg_cdc_params(avg) == tuple(ic_cdc.alg_cdc_params(avg))


def test_params_of_the_data_code() -> None:
    assert alg_cdc_params(1024) == (256, 8192, 640, 2047, 511)


@pytest.mark.parametrize("avg", [1, 0, -5])
def test_params_reject_small_average(avg: int) -> None:
    with pytest.raises(IsccError, match="at least 2"):
        alg_cdc_params(avg)


def test_params_reject_non_int() -> None:
    with pytest.raises(TypeError):
        alg_cdc_params(1024.0)  # type: ignore[arg-type]


def test_conformance_input_chunk_sizes() -> None:
    assert [len(c) for c in alg_cdc_chunks(CONFORMANCE_INPUT, False)] == CONFORMANCE_SIZES


@given(byte_inputs(max_size=40_000), st.sampled_from([64, 256, 1024, 4096]))
def test_offset_matches_reference(data: bytes, avg: int) -> None:
    params = alg_cdc_params(avg)
    assert alg_cdc_offset(data, *params) == ic_cdc.alg_cdc_offset(data, *params)


@given(byte_inputs(max_size=40_000), st.booleans(), st.sampled_from([16, 256, 1024, 2048]))
@example(b"", False, 1024)
@example(CONFORMANCE_INPUT, True, 1024)
def test_chunks_match_reference(data: bytes, utf32: bool, avg: int) -> None:
    if utf32:
        # UTF-32 text is whole code units; on anything else the reference never terminates.
        data = data[: len(data) - len(data) % 4]
    ours = list(alg_cdc_chunks(data, utf32, avg))
    assert ours == list(ic.alg_cdc_chunks(data, utf32, avg))
    assert b"".join(ours) == data


def test_utf32_chunks_never_stall_on_short_cuts() -> None:
    # avg 8 allows cuts below 4 bytes, which would round to 0 (the reference loops forever).
    data = bytes(range(256)) * 4
    chunks = list(alg_cdc_chunks(data, True, 8))
    assert b"".join(chunks) == data
    assert all(len(c) % 4 == 0 for c in chunks)


def boundaries(kernels: Kernels, data: bytes) -> list[int]:
    """Chunk ends found by a kernel, one chunk per call (``stop_at`` just past the start)."""
    buf = np.frombuffer(data, dtype=np.uint8)
    minvec = minhash_init()
    ends = []
    pos = 0
    while True:
        nxt, folded = kernels.data_scan(buf, pos, pos + 1, minvec, DATA_PARAMS)
        if not folded:
            break
        ends.append(nxt)
        pos = nxt
    return [*ends, len(data)] if data else ends


def reference_boundaries(data: bytes) -> list[int]:
    return list(np.cumsum([len(c) for c in alg_cdc_chunks(data, False)]))[: None if data else 0]


@pytest.mark.parametrize("kernels", [load_kernels(), PYTHON_KERNELS], ids=["fast", "python"])
@given(data=byte_inputs(max_size=100_000))
@example(data=b"")
@example(data=b"\x07" * 100)
@example(data=b"\x00" * 50_000)
@example(data=CONFORMANCE_INPUT)
def test_kernel_cuts_where_the_reference_does(kernels: Kernels, data: bytes) -> None:
    assert boundaries(kernels, data) == reference_boundaries(data)


@pytest.mark.parametrize("kind", ["constant", "periodic"])
def test_kernel_cuts_repetitive_data_at_max_size(kind: str) -> None:
    data = make_data(kind, 100_000, seed=7)
    ends = boundaries(load_kernels(), data)
    assert ends == reference_boundaries(data)
    if kind == "constant":
        assert ends[:-1] == list(range(8192, 100_000, 8192))


def test_kernel_on_data_shorter_than_min_size() -> None:
    assert boundaries(load_kernels(), b"x" * 200) == [200]
