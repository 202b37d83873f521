"""Hypothesis strategies for byte inputs: random, constant, periodic and low-entropy data of any
size, generated from a seed so that megabytes cost no shrinking effort."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

KINDS = ("random", "constant", "periodic", "low_entropy", "mixed")


def make_data(kind: str, size: int, seed: int) -> bytes:
    """``size`` bytes of the given kind, reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    if kind == "random":
        return rng.integers(0, 256, size, dtype=np.uint8).tobytes()
    if kind == "constant":
        return bytes([seed % 256]) * size
    if kind == "periodic":
        period = rng.integers(0, 256, int(rng.integers(1, 300)), dtype=np.uint8).tobytes()
        return (period * (size // len(period) + 1))[:size]
    if kind == "low_entropy":
        return rng.integers(0, 3, size, dtype=np.uint8).tobytes()
    # Random runs broken by constant stretches longer than the maximum chunk size.
    parts: list[bytes] = []
    total = 0
    while total < size:
        n = int(rng.integers(1, 20_000))
        parts.append(bytes(n) if rng.random() < 0.3 else rng.bytes(n))
        total += n
    return b"".join(parts)[:size]


@st.composite
def byte_inputs(draw: st.DrawFn, max_size: int = 200_000) -> bytes:
    """Bytes of every kind; sizes cluster around the chunker's limits (256, 640, 8192)."""
    kind = draw(st.sampled_from(KINDS))
    # Hypothesis favours small integers; drawing the bit length first spreads sizes evenly
    # over the orders of magnitude up to max_size.
    magnitude = draw(st.integers(10, max(max_size.bit_length(), 10)))
    size = draw(
        st.one_of(
            st.integers(0, 600),
            st.sampled_from([255, 256, 257, 640, 641, 8191, 8192, 8193, 16384, 16385]),
            st.integers(min(1 << (magnitude - 1), max_size), min(1 << magnitude, max_size)),
        )
    )
    return make_data(kind, size, draw(st.integers(0, 2**32 - 1)))


#: Piece sizes for streaming pushes: near the chunker's minimum, centre and maximum sizes,
#: the reference's 1 KiB average and the stream block size, plus anything.
PUSH_SIZES = st.one_of(
    st.integers(1, 300),
    st.sampled_from([255, 256, 257, 639, 640, 1023, 1024, 8191, 8192, 8193, 1 << 20]),
    st.integers(1, 70_000),
)


def split(data: bytes, sizes: list[int]) -> list[bytes]:
    """Cut ``data`` into pieces of ``sizes`` (cycled); the last piece takes the rest."""
    pieces = []
    pos = 0
    i = 0
    while pos < len(data):
        n = sizes[i % len(sizes)] if sizes else len(data)
        pieces.append(data[pos : pos + n])
        pos += n
        i += 1
    return pieces
