"""numba source of the Data-Code and Text-Code kernels: chunker, xxh32 and MinHash in one pass.

The kernels are compiled to C-callable functions (``numba.cfunc``), one per entry point of
:data:`isccd.iscc._native.SIGNATURES`, which never allocate, never raise and never call back
into Python. :func:`machine_code` emits them as one object file, which a process loads without
numba (:func:`isccd.iscc._native.load_machine_code`); :func:`addresses` gives the functions numba
itself compiled, for a process that has numba loaded anyway.

Importing this module imports numba (about 0.3 s and 100 MB), so nothing imports it at module
level: :mod:`isccd.iscc.kernels` loads it on first use where no machine code is loaded, and
:mod:`isccd.hashing.machine` when it has none cached yet; importing :mod:`isccd.iscc` never
pays for numba. The entry points are compiled on the first call of :func:`addresses` (or
loaded from numba's cache) or :func:`machine_code` (compiled anew: about 2 s).

**JIT cache.** :func:`addresses` compiles the entry points with ``cache=True``: numba picks the
first writable location of: ``$NUMBA_CACHE_DIR`` (read once, when numba is imported), the
``__pycache__`` next to this file, then the user cache directory (``$XDG_CACHE_HOME/numba`` or
``~/.cache/numba``). If no location is writable they are compiled in memory for each process
(slower start, same results).

All arithmetic is done in ``uint64`` with explicit masks: numba widens 32-bit operands and turns
mixed signed/unsigned 64-bit arithmetic into floats, so every constant below is a ``uint64``.

Pure: no I/O besides numba's cache.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

from isccd.iscc._native import KEY_SHIFT, SIGNATURES, TEXT_BLOCK, TEXT_WORDS, MachineCode
from isccd.iscc._tables import CDC_GEAR, MAXH, MAXI64, MPA, MPB, MPRIME

# numba imports coverage.py when it is installed (numba.misc.coverage_support), to report the
# lines of compiled code to a measurement running in the process: 50-80 ms and 4 MB more at
# every start of the workers' fork server. With no measurement running (coverage not imported),
# numba is imported without it, and takes it for not installed; ``import coverage`` works again
# afterwards. A measured process (the tests under coverage) has it imported already.
_WITHOUT_COVERAGE = "coverage" not in sys.modules
if _WITHOUT_COVERAGE:
    sys.modules["coverage"] = None  # type: ignore[assignment]
try:
    import numba
finally:
    if _WITHOUT_COVERAGE:
        del sys.modules["coverage"]

__all__ = ["addresses", "machine_code"]

_F = TypeVar("_F", bound=Callable[..., Any])


def _njit(func: _F) -> _F:
    """A helper of the entry points, compiled as part of each caller that uses it (and inlined
    there by LLVM): it has no signature and no code of its own."""
    # A dispatcher is called like the function it compiles.
    return cast(_F, numba.njit(nogil=True)(func))


_GEAR = np.array(CDC_GEAR, dtype=np.int64)
_MPA = np.array(MPA, dtype=np.uint64)
_MPB = np.array(MPB, dtype=np.uint64)
_MPRIME = np.uint64(MPRIME)
_MAXH = np.uint64(MAXH)
#: A fresh MinHash slot (isccd.iscc.minhash.MINHASH_EMPTY: above every 32-bit hash value).
_EMPTY = np.uint64(MAXI64)
_M32 = np.uint64(0xFFFFFFFF)
_P1 = np.uint64(0x9E3779B1)
_P2 = np.uint64(0x85EBCA77)
_P3 = np.uint64(0xC2B2AE3D)
_P4 = np.uint64(0x27D4EB2F)
_P5 = np.uint64(0x165667B1)
_U0 = np.uint64(0)
_U1 = np.uint64(1)
_U2 = np.uint64(2)
_U3 = np.uint64(3)
_U8 = np.uint64(8)
_U13 = np.uint64(13)
_U15 = np.uint64(15)
_U16 = np.uint64(16)
_U24 = np.uint64(24)
_U61 = np.uint64(61)
#: The xxh32 primes and rotations as ``uint32``, for the 32-bit lanes of ``_ascii_windows``.
_Q1, _Q2, _Q3, _Q4, _Q5 = (np.uint32(q) for q in (_P1, _P2, _P3, _P4, _P5))
_R11, _R13, _R15, _R16, _R17, _R21 = (np.uint32(r) for r in (11, 13, 15, 16, 17, 21))
#: The window width (characters) that text_fold hashes in 32-bit lanes when the text is ASCII:
#: the Text-Code's (:data:`isccd.iscc.text.TEXT_NGRAM_SIZE`); other widths take the general path.
_ASCII_WIDTH = 13


@_njit
def _rotl(x: np.uint64, r: int) -> np.uint64:
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & _M32


@_njit
def _read32(buf: np.ndarray, p: int) -> np.uint64:
    # An unsigned index spares numba's negative-index wraparound, so LLVM can combine the four
    # byte loads into one unaligned 32-bit load.
    q = np.uint64(p)
    return (
        np.uint64(buf[q])
        | (np.uint64(buf[q + _U1]) << _U8)
        | (np.uint64(buf[q + _U2]) << _U16)
        | (np.uint64(buf[q + _U3]) << _U24)
    )


@_njit
def _round(acc: np.uint64, lane: np.uint64) -> np.uint64:
    acc = (acc + lane * _P2) & _M32
    return (_rotl(acc, 13) * _P1) & _M32


@_njit
def _xxh32(buf: np.ndarray, start: int, end: int) -> np.uint64:
    # The body of xxh32, without a signature so that the kernels below inline it (a call to a
    # compiled signature is an external call that passes the array by value).
    p = start
    length = end - start
    if length >= 16:
        v1 = (_P1 + _P2) & _M32
        v2 = _P2
        v3 = _U0
        v4 = (_U0 - _P1) & _M32
        limit = end - 16
        while p <= limit:
            v1 = _round(v1, _read32(buf, p))
            v2 = _round(v2, _read32(buf, p + 4))
            v3 = _round(v3, _read32(buf, p + 8))
            v4 = _round(v4, _read32(buf, p + 12))
            p += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = _P5
    h = (h + np.uint64(length)) & _M32
    while p + 4 <= end:
        h = (h + _read32(buf, p) * _P3) & _M32
        h = (_rotl(h, 17) * _P4) & _M32
        p += 4
    while p < end:
        h = (h + np.uint64(buf[p]) * _P5) & _M32
        h = (_rotl(h, 11) * _P1) & _M32
        p += 1
    h ^= h >> _U15
    h = (h * _P2) & _M32
    h ^= h >> _U13
    h = (h * _P3) & _M32
    h ^= h >> _U16
    return h


@_njit
def _lane32(h: np.uint32, word: np.uint32) -> np.uint32:
    # One 4-byte step of xxh32's tail, in uint32 (numba widens the products; the casts
    # truncate them back, which lets LLVM keep 32-bit lanes).
    h = np.uint32(h + np.uint32(word * _Q3))
    return np.uint32(np.uint32((h << _R17) | (h >> _R15)) * _Q4)


@_njit
def _ascii_windows(
    utf8: np.ndarray, first: int, count: int, block: np.ndarray, words: np.ndarray
) -> None:
    # xxh32 of the 13-byte windows starting at bytes first .. first + count - 1, into block:
    # xxh32 of 13 bytes is three 4-byte lanes, one byte and the avalanche. Written in uint32 on
    # words read ahead (into words: count + 8 of them) so that LLVM vectorizes it across
    # windows (2.6 against 8.9 µs for the windows of 2 KB of text through the general xxh32).
    for j in range(count + 8):
        words[j] = np.uint32(_read32(utf8, first + j))
    for i in range(count):
        h = np.uint32(_P5 + _U13)
        h = _lane32(h, words[i])
        h = _lane32(h, words[i + 4])
        h = _lane32(h, words[i + 8])
        h = np.uint32(h + np.uint32(np.uint32(utf8[np.uint64(first + i + 12)]) * _Q5))
        h = np.uint32(np.uint32((h << _R11) | (h >> _R21)) * _Q1)
        h = np.uint32(h ^ (h >> _R15))
        h = np.uint32(h * _Q2)
        h = np.uint32(h ^ (h >> _R13))
        h = np.uint32(h * _Q3)
        block[i] = h ^ (h >> _R16)


@_njit
def _permuted(a: np.uint64, b: np.uint64, feature: np.uint64) -> np.uint64:
    # ((a * f + b) mod 2**64) mod (2**61 - 1), then the low 32 bits, for a 32-bit feature f
    # (an xxh32 value: all the kernels fold). The uint64 multiply-add wraps exactly as the
    # specification requires. With v = a * f + b, v mod (2**61 - 1) is (v & (2**61 - 1)) +
    # (v >> 61), less 2**61 - 1 once if that reaches it, and the mask keeps the low 32 bits of
    # v itself; that subtraction (which would add 1 to the low 32 bits) never happens for
    # f < 2**32 and the 64 permutations of the standard (tests/iscc/test_kernels.py solves for
    # every such f), so it is left out: text_fold's loop takes six vector instructions per
    # four hashes instead of nine (eight micro-operations instead of eleven).
    v = a * feature + b
    return (v + (v >> _U61)) & _MAXH


@_njit
def _fold(minvec: np.ndarray, feature: np.uint64) -> None:
    for k in range(64):
        minvec[k] = min(minvec[k], _permuted(_MPA[k], _MPB[k], feature))


@_njit
def _fresh(minvec: np.ndarray) -> None:
    for k in range(64):
        minvec[k] = _EMPTY


@_njit
def _data_scan(
    buf: np.ndarray, start: int, stop_at: int, minvec: np.ndarray, params: tuple[int, ...]
) -> tuple[int, int]:
    # Chunk buf from start and fold the xxh32 of every complete chunk into minvec. A chunk is
    # complete when it ends before the end of buf (the last chunk may still grow with more
    # data, so it is never hashed here). Scanning stops at the start of the last chunk, or at
    # the first chunk start at or after stop_at, whichever comes first. params are the
    # chunker parameters (mi, ma, cs, mask_s, mask_l) of isccd.iscc.cdc.alg_cdc_params.
    mi, ma, cs, mask_s, mask_l = params
    n = buf.shape[0]
    pos = start
    count = 0
    while pos < stop_at:
        remaining = n - pos
        i = pos + min(mi, remaining)
        barrier = pos + min(cs, remaining)
        pattern = 0
        cut = -1
        while i < barrier:
            pattern = (pattern >> 1) + _GEAR[buf[np.uint64(i)]]
            i += 1
            if (pattern & mask_s) == 0:
                cut = i
                break
        if cut < 0:
            barrier = pos + min(ma, remaining)
            while i < barrier:
                pattern = (pattern >> 1) + _GEAR[buf[np.uint64(i)]]
                i += 1
                if (pattern & mask_l) == 0:
                    cut = i
                    break
            if cut < 0:
                cut = i
        if cut >= n:
            break
        _fold(minvec, _xxh32(buf, pos, cut))
        count += 1
        pos = cut
    return pos, count


@_njit
def _text_fold(  # noqa: PLR0917 - the entry points' arguments, passed on
    utf8: np.ndarray,
    offsets: np.ndarray,
    n: int,
    width: int,
    minvec: np.ndarray,
    block: np.ndarray,
    words: np.ndarray,
) -> None:
    # Fold the xxh32 of every width-character window of the n characters of utf8 into minvec.
    # offsets holds the byte offset of each character and the total length (n + 1 entries),
    # or nothing when every character is a byte (then character i is at byte i). Text shorter
    # than width is one window, also when empty.
    windows = max(n - width + 1, 1)
    one_byte = offsets.shape[0] == 0
    # A byte per character (ASCII text, the common case) and windows of 13: every window is 13
    # bytes at a stride of one, hashed by the vectorized _ascii_windows.
    ascii = one_byte and width == _ASCII_WIDTH and n >= width
    for first in range(0, windows, TEXT_BLOCK):
        count = min(windows - first, TEXT_BLOCK)
        if ascii:
            _ascii_windows(utf8, first, count, block, words)
        elif one_byte:
            for i in range(count):
                block[i] = _xxh32(utf8, first + i, min(first + i + width, n))
        else:
            for i in range(count):
                block[i] = _xxh32(utf8, offsets[first + i], offsets[min(first + i + width, n)])
        # Two permutations at a time over the block's hashes: their minima stay in registers
        # and the loop vectorizes over the hashes (a quarter faster than folding each hash
        # into all 64 minima, measured on 2 KB of text).
        for k in range(0, 64, 2):
            a0, b0, low0 = _MPA[k], _MPB[k], minvec[k]
            a1, b1, low1 = _MPA[k + 1], _MPB[k + 1], minvec[k + 1]
            for i in range(count):
                low0 = min(low0, _permuted(a0, b0, block[i]))
                low1 = min(low1, _permuted(a1, b1, block[i]))
            minvec[k], minvec[k + 1] = low0, low1


@_njit
def _compress(minvec: np.ndarray, lsb: int, out: np.ndarray) -> None:
    # The lsb least significant bit-planes of minvec into out, packed as
    # isccd.iscc.minhash.alg_minhash_compress packs them.
    n = minvec.shape[0]
    for i in range(out.shape[0]):
        out[i] = 0
    pos = (8 - (n * lsb) % 8) % 8  # leading zero bits pad the first byte, as the reference does
    for plane in range(lsb):
        shift = np.uint64(plane)
        for i in range(n):
            if (minvec[i] >> shift) & _U1:
                out[pos >> 3] |= np.uint8(0x80 >> (pos & 7))
            pos += 1


_B1 = np.uint64(0x5555555555555555)
_B2 = np.uint64(0x3333333333333333)
_B4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_B8 = np.uint64(0x0101010101010101)
_U4 = np.uint64(4)
_U56 = np.uint64(56)


@_njit
def _popcount(x: np.uint64) -> np.uint64:
    # The bits set in x (LLVM turns this form into the popcnt instruction where there is one).
    x = x - ((x >> _U1) & _B1)
    x = (x & _B2) + ((x >> _U2) & _B2)
    x = (x + (x >> _U4)) & _B4
    return (x * _B8) >> _U56


@_njit
def _nearest(  # noqa: PLR0917 - the entry point's arguments, passed on
    codes: np.ndarray,
    ids: np.ndarray,
    live: np.ndarray,
    queries: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    radius: int,
    limit: int,
    out_slots: np.ndarray,
    out_keys: np.ndarray,
    counts: np.ndarray,
) -> None:
    # Per query: every live slot within radius whose id is not in [lo, hi) counted, and the
    # limit nearest kept in out_slots/out_keys (sorted by key, -1 after the last).
    n = codes.shape[0]
    for q in range(queries.shape[0]):
        query = queries[q]
        first, last = lo[q], hi[q]
        base = q * limit
        found = 0
        kept = 0
        for s in range(n):
            d = np.int64(_popcount(codes[s] ^ query))
            if d > radius or live[s] == 0:
                continue
            fid = ids[s]
            if first <= fid < last:
                continue
            found += 1
            key = (d << KEY_SHIFT) - fid
            if kept < limit:
                j = kept
                kept += 1
            elif limit > 0 and key < out_keys[base + limit - 1]:
                j = limit - 1
            else:
                continue
            while j > 0 and out_keys[base + j - 1] > key:
                out_keys[base + j] = out_keys[base + j - 1]
                out_slots[base + j] = out_slots[base + j - 1]
                j -= 1
            out_keys[base + j] = key
            out_slots[base + j] = s
        counts[q] = found
        for j in range(kept, limit):
            out_slots[base + j] = -1


# -- the entry points: C functions over pointers and lengths (isccd.iscc._native.SIGNATURES) --

_C_TYPES = {
    "void": numba.types.void,
    "i64": numba.types.int64,
    # numba's type constructors are untyped.
    "u8*": numba.types.CPointer(numba.types.uint8),  # type: ignore[no-untyped-call]
    "u32*": numba.types.CPointer(numba.types.uint32),  # type: ignore[no-untyped-call]
    "i64*": numba.types.CPointer(numba.types.int64),  # type: ignore[no-untyped-call]
    "u64*": numba.types.CPointer(numba.types.uint64),  # type: ignore[no-untyped-call]
}


#: The entry points as Python functions, by name (compiled by :func:`_compiled`).
_ENTRY_POINTS: dict[str, Callable[..., Any]] = {}


def _entry(func: _F) -> _F:
    """Register ``func`` as the entry point of its name in :data:`SIGNATURES`."""
    assert func.__name__ in SIGNATURES, func.__name__
    _ENTRY_POINTS[func.__name__] = func
    return func


def _signature(name: str) -> Any:
    result, *args = (_C_TYPES[t] for t in SIGNATURES[name])
    return result(*args)


@functools.cache
def _compiled(cache: bool) -> dict[str, Any]:
    """The entry points compiled as C functions (``numba.cfunc``), by name. With ``cache`` numba
    keeps them in its cache when it finds a writable location (else they are compiled in
    memory); without, they are compiled here, and their LLVM code can be read back."""
    compiled = {}
    for name, func in _ENTRY_POINTS.items():
        try:
            compiled[name] = numba.cfunc(_signature(name), cache=cache)(func)
        except RuntimeError:
            # numba raises "cannot cache function ...: no locator available" when neither
            # NUMBA_CACHE_DIR, the package directory nor the user cache directory is writable.
            compiled[name] = numba.cfunc(_signature(name))(func)
    return compiled


#: An array over a pointer and a length (no copy, no ownership).
_carray = numba.carray  # type: ignore[attr-defined]
_MINVEC_SIZE = 64
_DIGEST_SIZE = 32


@_entry
def data_scan(  # noqa: PLR0917 - a C signature
    buf: Any, n: int, start: int, stop_at: int, minvec: Any,
    mi: int, ma: int, cs: int, mask_s: int, mask_l: int, chunks: Any,
) -> int:  # fmt: skip
    """Chunk ``buf`` from ``start`` and fold every complete chunk into ``minvec``; return where
    scanning stopped, and the chunks folded in ``chunks[0]``."""
    pos, count = _data_scan(
        _carray(buf, n), start, stop_at, _carray(minvec, _MINVEC_SIZE), (mi, ma, cs, mask_s, mask_l)
    )
    _carray(chunks, 1)[0] = count
    return pos


@_entry
def hash_fold(buf: Any, n: int, minvec: Any) -> None:
    """Fold the xxh32 of all of ``buf`` into ``minvec`` (the last chunk of a Data-Code)."""
    _fold(_carray(minvec, _MINVEC_SIZE), _xxh32(_carray(buf, n), 0, n))


@_entry
def compress(minvec: Any, n: int, lsb: int, out: Any) -> None:
    """The ``lsb`` least significant bit-planes of the ``n`` minima, packed into ``out``
    (``ceil(n * lsb / 8)`` bytes)."""
    _compress(_carray(minvec, n), lsb, _carray(out, (n * lsb + 7) // 8))


@_entry
def data_digest(  # noqa: PLR0917 - a C signature
    buf: Any, n: int, mi: int, ma: int, cs: int, mask_s: int, mask_l: int, minvec: Any, out: Any
) -> None:
    """The 256-bit Data-Hash of all of ``buf`` into ``out``: every chunk, the last one too,
    folded into ``minvec`` made fresh, and compressed."""
    data, vec = _carray(buf, n), _carray(minvec, _MINVEC_SIZE)
    _fresh(vec)
    pos, _ = _data_scan(data, 0, n, vec, (mi, ma, cs, mask_s, mask_l))
    _fold(vec, _xxh32(data, pos, n))  # the last chunk (xxh32(b"") of no input)
    _compress(vec, 4, _carray(out, _DIGEST_SIZE))


@_njit
def _text_fold_at(  # noqa: PLR0917 - the entry points' arguments, passed on
    utf8: Any, nbytes: int, offsets: Any, n: int, width: int, vec: Any, block: Any, words: Any
) -> None:
    # _text_fold over the entry points' pointers; offsets (n + 1 entries) is read only when
    # nbytes != n.
    _text_fold(
        _carray(utf8, nbytes),
        _carray(offsets, 0 if nbytes == n else n + 1),
        n,
        width,
        vec,
        _carray(block, TEXT_BLOCK),
        _carray(words, TEXT_WORDS),
    )


@_entry
def text_fold(  # noqa: PLR0917 - a C signature
    utf8: Any, nbytes: int, offsets: Any, n: int, width: int, minvec: Any, block: Any, words: Any
) -> None:
    """Fold the xxh32 of every ``width``-character window of the ``n`` characters of ``utf8``
    into ``minvec``; ``offsets`` (``n + 1`` entries) is read only when ``nbytes != n``."""
    vec = _carray(minvec, _MINVEC_SIZE)
    _text_fold_at(utf8, nbytes, offsets, n, width, vec, block, words)


@_entry
def text_digest(  # noqa: PLR0917 - a C signature
    utf8: Any,
    nbytes: int,
    offsets: Any,
    n: int,
    width: int,
    minvec: Any,
    block: Any,
    words: Any,
    out: Any,
) -> None:
    """The 256-bit Text-Hash into ``out``: :func:`text_fold` into ``minvec`` made fresh, and
    compressed."""
    vec = _carray(minvec, _MINVEC_SIZE)
    _fresh(vec)
    _text_fold_at(utf8, nbytes, offsets, n, width, vec, block, words)
    _compress(vec, 4, _carray(out, _DIGEST_SIZE))


@_entry
def hamming_nearest(  # noqa: PLR0917 - a C signature
    codes: Any, ids: Any, live: Any, n: int,
    queries: Any, lo: Any, hi: Any, q: int,
    radius: int, limit: int, out_slots: Any, out_keys: Any, counts: Any,
) -> None:  # fmt: skip
    """The ``limit`` nearest of ``n`` stored codes within ``radius`` of each of ``q`` queries,
    and how many there are: see :func:`isccd.iscc.kernels.Kernels`."""
    _nearest(
        _carray(codes, n), _carray(ids, n), _carray(live, n),
        _carray(queries, q), _carray(lo, q), _carray(hi, q), radius, limit,
        _carray(out_slots, q * limit), _carray(out_keys, q * limit), _carray(counts, q),
    )  # fmt: skip


def addresses() -> dict[str, int]:
    """The address of each entry point, compiled by numba in this process (or loaded from its
    cache)."""
    return {name: int(cf.address) for name, cf in _compiled(cache=True).items()}


def machine_code() -> tuple[MachineCode, dict[str, int]]:
    """The entry points as one object file, for a process to load without numba, and their
    addresses here: compiled anew (numba keeps no LLVM code of what it loads from its cache),
    their modules linked into one and emitted for the machine numba compiles for."""
    import llvmlite.binding as llvm  # noqa: PLC0415 - numba's own LLVM binding

    compiled = _compiled(cache=False)
    triple, cpu, features = _CODEGEN.magic_tuple()
    modules = [llvm.parse_assembly(cf.inspect_llvm()) for cf in compiled.values()]
    linked = modules[0]
    for module in modules[1:]:
        linked.link_in(module)
    machine = llvm.Target.from_triple(triple).create_target_machine(
        cpu=cpu, features=features, opt=3, codemodel="jitdefault"
    )
    code = MachineCode(
        obj=bytes(machine.emit_object(linked)),
        symbols={name: cf.native_name for name, cf in compiled.items()},
    )
    return code, {name: int(cf.address) for name, cf in compiled.items()}


#: What numba compiles for in this process (its target triple, CPU and features).
_CODEGEN = numba.core.registry.cpu_target.target_context.codegen()
