"""The hot loops of the Data-Code and Text-Code, compiled with numba when it is available.

Five kernels do all per-byte and per-window work, one the digest, and one the index's search:

- ``data_scan`` chunks a buffer (content-defined chunking), hashes each complete chunk with
  xxh32 and folds it into a running MinHash vector, in one pass and without a feature list;
- ``hash_fold`` hashes and folds the last chunk the same way;
- ``text_fold`` hashes every 13-character window of UTF-8 text and folds it the same way;
- ``compress`` turns a MinHash vector into the 256-bit digest;
- ``hamming_nearest`` is the Hamming search's flat scan: the nearest few stored codes of
  each query and how many are near, in one pass without a list of pairs;
- ``data_digest`` and ``text_digest`` are the Data-Hash of a whole buffer and the Text-Hash of
  a text at once, from a fresh vector to the digest in one call (a small file read whole, a
  text: for small inputs the calls around the hashing cost more than the hashing).

:func:`load_kernels` picks the compiled implementation and falls back to a pure-Python one
built on the reference chunker of :mod:`isccd.iscc.cdc` (a few MB/s, same results) where numba
cannot be imported. The compiled kernels are C functions (:mod:`isccd.iscc._native`): numba
compiles them (:mod:`isccd.iscc._jit`, about 1.4 GB/s for the Data-Code), and a process that
has their machine code loads them without numba (:func:`use_loader`:
:mod:`isccd.hashing.machine`). Nothing is loaded before the first
call: importing :mod:`isccd.iscc` costs neither. Long-running workers call :func:`warmup` at
start so that the first file does not pay for it; see :mod:`isccd.iscc._jit` for where numba
caches what it compiles (``NUMBA_CACHE_DIR``).

Pure: no I/O besides numba's cache.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import NamedTuple, cast

import numpy as np
import numpy.typing as npt
import xxhash

from isccd.iscc._native import KEY_SHIFT, native_kernels
from isccd.iscc.cdc import CdcParams, alg_cdc_offset, alg_cdc_params
from isccd.iscc.minhash import alg_minhash_compress, minhash_fold, minhash_init

__all__ = [
    "KEY_SHIFT",
    "PYTHON_KERNELS",
    "SMALL_DATA",
    "SMALL_TEXT",
    "Kernels",
    "kernels_for",
    "load_kernels",
    "use_loader",
    "warmup",
]

Bytes = npt.NDArray[np.uint8]
MinVec = npt.NDArray[np.uint64]
Offsets = npt.NDArray[np.int64]

#: Windows hashed per step by the pure-Python text kernel (bounds its feature list).
_PY_TEXT_BLOCK = 65536


class Kernels(NamedTuple):
    """One implementation of the hashing kernels.

    ``data_scan(buf, start, stop_at, minvec, params) -> (pos, chunks)`` chunks ``buf`` from
    ``start`` with the chunker parameters ``params`` of :func:`~isccd.iscc.cdc.alg_cdc_params`,
    folds the xxh32 of every chunk that ends before the end of ``buf`` into ``minvec``, and
    stops at the start of the last chunk or at the first chunk start at or after ``stop_at``.
    It returns where it stopped and how many chunks it folded.

    ``hash_fold(buf, minvec)`` folds the xxh32 of all of ``buf`` into ``minvec``.

    ``compress(minvec)`` is the 256-bit digest of a MinHash vector (its four least
    significant bit-planes, as :func:`~isccd.iscc.minhash.alg_minhash_compress` packs them).

    ``data_digest(buf, params)`` is the 256-bit Data-Hash of all of ``buf`` (``bytes`` or a
    ``uint8`` array), with the chunker parameters ``params``.

    ``text_fold(utf8, offsets, width, minvec)`` folds the xxh32 of every ``width``-character
    window of the UTF-8 text ``utf8`` into ``minvec``; ``offsets`` (``int64``) holds the byte
    offset of each character followed by ``len(utf8)``, or is ``None`` when every character is
    one byte (ASCII). Text shorter than ``width`` (also empty text) is one window.
    ``text_digest(utf8, offsets, width)`` is the 256-bit digest of that fold into a fresh
    vector.

    ``hamming_nearest(codes, ids, live, queries, (lo, hi), radius, limit)`` is the search of the
    index's flat scan (:mod:`isccd.hamming`): for each query, the live stored codes within
    ``radius`` bits whose file id is not in ``[lo[q], hi[q])`` are counted, and the ``limit``
    nearest kept, nearest first, then the larger file id. It returns their slots (``-1`` past
    the last found) and keys (the distance shifted left by :data:`KEY_SHIFT`, less the id),
    ``q x limit`` each, and the counts. One pass over the codes a query, no pair held: a query
    in a family of thousands of near-identical files costs what a query among strangers does.

    Buffers are C-contiguous ``uint8`` arrays (or ``bytes`` where named), MinHash vectors
    ``uint64`` arrays of 64.
    """

    accelerated: bool
    data_scan: Callable[[Bytes, int, int, MinVec, CdcParams], tuple[int, int]]
    hash_fold: Callable[[Bytes, MinVec], None]
    compress: Callable[[MinVec], bytes]
    data_digest: Callable[[bytes | Bytes, CdcParams], bytes]
    text_fold: Callable[[bytes | Bytes, Offsets | None, int, MinVec], None]
    text_digest: Callable[[bytes | Bytes, Offsets | None, int], bytes]
    hamming_nearest: Callable[
        [
            npt.NDArray[np.uint64],
            npt.NDArray[np.int64],
            npt.NDArray[np.bool_],
            npt.NDArray[np.uint64],
            tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
            int,
            int,
        ],
        tuple[Offsets, Offsets, Offsets],
    ]


def _py_data_scan(
    buf: Bytes, start: int, stop_at: int, minvec: MinVec, params: CdcParams
) -> tuple[int, int]:
    view = buf.data
    size = len(view)
    features: list[int] = []
    pos = start
    while pos < stop_at:
        cut = pos + alg_cdc_offset(view[pos:], *params)
        if cut >= size:
            break
        features.append(xxhash.xxh32_intdigest(view[pos:cut]))
        pos = cut
    minhash_fold(minvec, features)
    return pos, len(features)


def _py_hash_fold(buf: Bytes, minvec: MinVec) -> None:
    minhash_fold(minvec, [xxhash.xxh32_intdigest(buf.data)])


def _py_compress(minvec: MinVec) -> bytes:
    return alg_minhash_compress(minvec, 4)


def _as_array(buf: bytes | Bytes) -> Bytes:
    return np.frombuffer(buf, dtype=np.uint8) if isinstance(buf, bytes) else buf


def _py_data_digest(buf: bytes | Bytes, params: CdcParams) -> bytes:
    data, minvec = _as_array(buf), minhash_init()
    pos, _ = _py_data_scan(data, 0, data.size, minvec, params)
    _py_hash_fold(data[pos:], minvec)  # the last chunk (xxh32(b"") of no input)
    return _py_compress(minvec)


def _py_text_fold(utf8: bytes | Bytes, offsets: Offsets | None, width: int, minvec: MinVec) -> None:
    data = utf8 if isinstance(utf8, bytes) else utf8.tobytes()
    bounds: list[int] = list(range(len(data) + 1)) if offsets is None else offsets.tolist()
    n = len(bounds) - 1
    windows = max(n - width + 1, 1)
    for first in range(0, windows, _PY_TEXT_BLOCK):
        minhash_fold(
            minvec,
            [
                xxhash.xxh32_intdigest(data[bounds[i] : bounds[min(i + width, n)]])
                for i in range(first, min(first + _PY_TEXT_BLOCK, windows))
            ],
        )


def _py_text_digest(utf8: bytes | Bytes, offsets: Offsets | None, width: int) -> bytes:
    minvec = minhash_init()
    _py_text_fold(utf8, offsets, width, minvec)
    return _py_compress(minvec)


def _py_hamming_nearest(  # noqa: PLR0917 - the kernel's arguments
    codes: npt.NDArray[np.uint64],
    ids: npt.NDArray[np.int64],
    live: npt.NDArray[np.bool_],
    queries: npt.NDArray[np.uint64],
    spans: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
    radius: int,
    limit: int,
) -> tuple[Offsets, Offsets, Offsets]:
    q = queries.size
    slots = np.full((q, limit), -1, dtype=np.int64)
    keys = np.zeros((q, limit), dtype=np.int64)
    counts = np.zeros(q, dtype=np.int64)
    stored, names, alive = codes.tolist(), ids.tolist(), live.tolist()
    lo, hi = (span.tolist() for span in spans)
    for at, (query, first, last) in enumerate(zip(queries.tolist(), lo, hi, strict=True)):
        found = sorted(
            ((int(code ^ query).bit_count() << KEY_SHIFT) - fid, slot)
            for slot, (code, fid, ok) in enumerate(zip(stored, names, alive, strict=True))
            if ok and (code ^ query).bit_count() <= radius and not first <= fid < last
        )
        counts[at] = len(found)
        for j, (key, slot) in enumerate(found[:limit]):
            keys[at, j], slots[at, j] = key, slot
    return slots, keys, counts


#: The pure-Python kernels: the reference chunker, the xxhash package and numpy MinHash.
PYTHON_KERNELS = Kernels(
    accelerated=False,
    data_scan=_py_data_scan,
    hash_fold=_py_hash_fold,
    compress=_py_compress,
    data_digest=_py_data_digest,
    text_fold=_py_text_fold,
    text_digest=_py_text_digest,
    hamming_nearest=_py_hamming_nearest,
)


#: Where the compiled kernels come from in this process, when not from numba here
#: (:func:`use_loader`).
_loader: list[Callable[[], Kernels]] = []

#: Held while the kernels load: threads asking at once (the store's owner for the index, a
#: command coding a file) wait for one load instead of each compiling or linking its own.
_loading = threading.Lock()
#: What the load found, kept while :func:`load_kernels`'s cache may be cleared to measure it.
_first: list[Kernels] = []


def use_loader(loader: Callable[[], Kernels] | None) -> None:
    """Get the compiled kernels from ``loader`` from now on (``None``: compile them with numba
    again), called once, at the first call that needs them. :mod:`isccd.hashing` sets
    :func:`isccd.hashing.machine.compiled_kernels`, which loads their machine code from its
    cache without numba."""
    with _loading:
        _loader[:] = [] if loader is None else [loader]
        _first.clear()
        load_kernels.cache_clear()


@functools.cache
def load_kernels() -> Kernels:
    """The fastest kernels this interpreter can run (loaded once per process, by one thread
    while the others wait).

    Returns:
        The loader's kernels (:func:`use_loader`), else those numba compiles here (or loads
        from its cache), or :data:`PYTHON_KERNELS` when numba cannot be imported.
    """
    with _loading:
        if not _first:
            _first.append(_load())
        return _first[0]


def _load() -> Kernels:
    if _loader:
        return _loader[0]()
    try:
        # Imported here, not at module level: numba costs ~0.3 s and ~100 MB of memory, which
        # only processes that hash data or text should pay.
        from isccd.iscc import _jit  # noqa: PLC0415
    except ImportError:
        return PYTHON_KERNELS
    return cast(Kernels, native_kernels(_jit.addresses()))


#: Inputs up to these sizes (bytes of data; bytes of UTF-8 text, a window per character) are
#: hashed by the pure-Python kernels while the compiled ones are not loaded: measured here they
#: take at most about 45 ms (data) and 35 ms (text) for them, where loading numba takes about
#: 0.3 s and 100 MB. So ``isccd code`` of a small file never loads numba; a worker process has
#: loaded it at start (:func:`warmup`) and uses it for every input.
SMALL_DATA = 256 * 1024
SMALL_TEXT = 16 * 1024


def kernels_for(size: int, small: int) -> Kernels:
    """The kernels for an input of ``size`` bytes (so far): the compiled ones when they are
    loaded or the input is larger than ``small``, else the pure-Python ones.

    Both give the same results on every input (tests/iscc/test_kernels.py), so a stream may
    switch from one to the other between calls.

    Args:
        size: Bytes of the input, or of the part of a stream hashed so far.
        small: :data:`SMALL_DATA` or :data:`SMALL_TEXT`.
    """
    if size <= small and load_kernels.cache_info().currsize == 0:
        return PYTHON_KERNELS
    return load_kernels()


def warmup() -> bool:
    """Load the kernels now (compiling them or reading numba's cache) and run each once.

    Worker processes call this at start so that the first file hashed is not slowed by it.

    Returns:
        True if the compiled (numba) kernels are in use, False for the pure-Python fallback.
    """
    kernels = load_kernels()
    data = np.zeros(16, dtype=np.uint8)
    kernels.data_scan(data, 0, data.size, minhash_init(), alg_cdc_params(1024))
    kernels.hash_fold(data, minhash_init())
    kernels.compress(minhash_init())
    kernels.data_digest(data, alg_cdc_params(1024))
    kernels.text_digest(data, None, 13)
    return kernels.accelerated
