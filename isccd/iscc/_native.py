"""The compiled kernels as C functions: their signatures, their machine code loaded without numba,
and the :class:`~isccd.iscc.kernels.Kernels` that call them.

numba compiles the kernels of :mod:`isccd.iscc._jit` to C-callable functions (:data:`SIGNATURES`)
and emits their machine code as one object file (:class:`MachineCode`). That object is all a
process needs to run them: :func:`load_machine_code` links it into memory with llvmlite, the
LLVM binding numba itself is built on, in a few milliseconds, where importing numba and loading
its cache take about half a second of CPU and 100 MB of memory in every process that hashes.
:func:`native_kernels` wraps the functions' addresses, wherever they come from (this loader, or
numba's own compiled functions), in the :class:`~isccd.iscc.kernels.Kernels` interface.

The streaming and data kernels release the interpreter lock while they run, as numba's did
(``ctypes.CFUNCTYPE``); the text kernels hold it (``ctypes.PYFUNCTYPE``), so that the scratch
buffers of their window hashes, owned by each :class:`Kernels` and used only during a call, are
shared by no two calls at once. Every result is written into a buffer of its own call. The
kernels never allocate, never raise and never call back into Python; their only external
references are the runtime's error path (numba's helpers and the Python C API), which a kernel
without exceptions never reaches. The wrappers check what the kernels would trust: buffer
types, sizes and writability, character offsets, window widths and chunker parameters.

Pure: no I/O. Reading and writing the machine code is the caller's (:mod:`isccd.hashing.machine`
keeps it on disk).
"""

from __future__ import annotations

import ctypes
import functools
import struct
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from isccd.iscc.cdc import CdcParams

__all__ = [
    "KEY_SHIFT",
    "SIGNATURES",
    "MachineCode",
    "MachineCodeError",
    "load_machine_code",
    "native_kernels",
    "undefined_symbols",
]

#: Each entry point's C signature, result first: ``i64`` a 64-bit integer, ``u8*`` and the like
#: pointers to arrays of that element type. :mod:`isccd.iscc._jit` compiles these, and
#: :func:`native_kernels` calls them with these types: the one place both sides read.
SIGNATURES: dict[str, tuple[str, ...]] = {
    # (buf, n, start, stop_at, minvec, mi, ma, cs, mask_s, mask_l, chunks out) -> stop position
    "data_scan": (
        "i64", "u8*", "i64", "i64", "i64", "u64*", "i64", "i64", "i64", "i64", "i64", "i64*",
    ),
    # (buf, n, minvec)
    "hash_fold": ("void", "u8*", "i64", "u64*"),
    # (minvec, n, lsb, out)
    "compress": ("void", "u64*", "i64", "i64", "u8*"),
    # (buf, n, mi, ma, cs, mask_s, mask_l, minvec scratch, out[32])
    "data_digest": (
        "void", "u8*", "i64", "i64", "i64", "i64", "i64", "i64", "u64*", "u8*",
    ),
    # (utf8, bytes, offsets or NULL, characters, width, minvec, block scratch, words scratch)
    "text_fold": ("void", "u8*", "i64", "i64*", "i64", "i64", "u64*", "u64*", "u32*"),
    # text_fold's arguments into a fresh minvec (scratch), then out[32]
    "text_digest": (
        "void", "u8*", "i64", "i64*", "i64", "i64", "u64*", "u64*", "u32*", "u8*",
    ),
    # (codes, ids, live, n, queries, lo, hi, q, radius, limit, out slots, out keys, out counts)
    "hamming_nearest": (
        "void", "u64*", "i64*", "u8*", "i64", "u64*", "i64*", "i64*", "i64", "i64", "i64",
        "i64*", "i64*", "i64*",
    ),
}  # fmt: skip

#: A Hamming hit's key (``hamming_nearest``): its distance above this bit, less its file id, so
#: that keys order hits nearest first, then by the larger file id.
KEY_SHIFT = 47

#: The entry points that hold the interpreter lock while they run: they share the scratch of
#: their Kernels (see the module's docstring).
_HOLDING_THE_LOCK = frozenset({"text_fold", "text_digest"})

#: Window hashes the text kernels compute before folding them (the ``block`` scratch: 32 KiB,
#: they stay in the L1 cache), and the words read ahead for them (``words``: eight more).
TEXT_BLOCK = 4096
TEXT_WORDS = TEXT_BLOCK + 8

#: The runtime helpers of numba's error path (``NRT_*``, ``numba_*``). A kernel that cannot raise
#: never calls them; where numba is not loaded they are bound to ``abort``, so that a call that
#: should be impossible ends the process (a worker, which the pool replaces) instead of
#: running on.
_RUNTIME_PREFIXES = ("NRT_", "numba_")


#: The sizes of an ELF64 section header and symbol.
_SECTION_HEADER = 64
_SYMBOL = 24


class MachineCodeError(Exception):
    """Machine code that cannot be loaded here (corrupt, for another machine, or a symbol it
    needs is missing): compile the kernels again instead."""


class MachineCode(NamedTuple):
    """The compiled entry points as one relocatable object file.

    Attributes:
        obj: The object file (ELF on Linux), as the compiler emitted it.
        symbols: The symbol of each entry point of :data:`SIGNATURES`, by name.
    """

    obj: bytes
    symbols: Mapping[str, str]


def undefined_symbols(obj: bytes) -> tuple[str, ...]:
    """The names an ELF64 little-endian object file uses but does not define.

    Raises:
        MachineCodeError: Not such an object file, or a damaged one.
    """
    try:
        if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
            raise MachineCodeError("not a 64-bit little-endian ELF object")
        header = struct.unpack_from("<QIHHHHHH", obj, 0x28)  # e_shoff .. e_shstrndx
        shoff, shentsize, shnum = header[0], header[5], header[6]
        # Section headers of ELF64's size, all within the file: the work is bounded by its size.
        if shentsize != _SECTION_HEADER or shoff + shnum * shentsize > len(obj):
            raise MachineCodeError("section headers out of the file")
        sections = [
            struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)
        ]
        names: list[str] = []
        for _, kind, _, _, offset, size, link, _, _, entsize in sections:
            if kind != 2:  # SHT_SYMTAB
                continue
            if entsize != _SYMBOL or offset + size > len(obj):
                raise MachineCodeError("a symbol table out of the file")
            strtab = sections[link]
            base, limit = strtab[4], strtab[4] + strtab[5]
            for at in range(offset + entsize, offset + size, entsize):  # entry 0 is null
                name, info, _, shndx = struct.unpack_from("<IBBH", obj, at)
                if shndx == 0 and info >> 4 != 0:  # SHN_UNDEF, not a local symbol
                    end = obj.index(b"\0", base + name, limit)
                    names.append(obj[base + name : end].decode("ascii"))
    except (struct.error, IndexError, ValueError, OverflowError, UnicodeDecodeError) as exc:
        raise MachineCodeError(f"damaged object file: {exc}") from exc
    return tuple(sorted(set(names)))


def load_machine_code(code: MachineCode) -> Mapping[str, int]:
    """Link ``code`` into this process and return the address of each entry point.

    The code stays loaded for the life of the process (the execution engine is kept).

    Raises:
        MachineCodeError: The object cannot be loaded here: it is damaged, lacks an entry
            point, or uses a symbol this process does not have (checked before linking: LLVM
            ends the process on an unresolved symbol).
        ImportError: llvmlite is not installed.
    """
    import llvmlite.binding as llvm  # noqa: PLC0415 - only processes that hash load it

    missing = set(SIGNATURES) - set(code.symbols)
    if missing:
        raise MachineCodeError(f"entry points missing: {sorted(missing)}")
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    try:
        machine = llvm.Target.from_default_triple().create_target_machine(codemodel="jitdefault")
        # The engine makes the symbols of the process (the C library, the Python C API)
        # visible to the linker: they are looked up after it exists.
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)
    except RuntimeError as exc:
        raise MachineCodeError(f"no execution engine: {exc}") from exc
    abort: int | None = None
    for name in undefined_symbols(code.obj):
        if llvm.address_of_symbol(name) is not None:
            continue
        if not name.startswith(_RUNTIME_PREFIXES):
            raise MachineCodeError(f"the symbol {name} is not defined in this process")
        if abort is None:
            abort = ctypes.cast(ctypes.CDLL(None).abort, ctypes.c_void_p).value
        llvm.add_symbol(name, abort)
    try:
        engine.add_object_file(llvm.ObjectFileRef.from_data(code.obj))
        engine.finalize_object()
        addresses = {name: engine.get_function_address(code.symbols[name]) for name in SIGNATURES}
    except RuntimeError as exc:
        raise MachineCodeError(f"the object cannot be linked: {exc}") from exc
    if not all(addresses.values()):
        raise MachineCodeError("an entry point is not in the object")
    _ENGINES.append(engine)
    return addresses


#: Execution engines whose code is in use: freeing one would unmap its functions.
_ENGINES: list[Any] = []


def _function(address: int, name: str) -> Callable[..., Any]:
    result, *args = SIGNATURES[name]
    types = [ctypes.c_int64 if a == "i64" else ctypes.c_void_p for a in args]
    restype = ctypes.c_int64 if result == "i64" else None
    prototype = ctypes.PYFUNCTYPE if name in _HOLDING_THE_LOCK else ctypes.CFUNCTYPE
    return prototype(restype, *types)(address)


def _address(array: npt.NDArray[Any], dtype: type[np.generic], *, written: bool = False) -> int:
    """The data address of a C-contiguous array of ``dtype`` (writable when the kernel writes
    into it; the kernels trust their sizes)."""
    if not isinstance(array, np.ndarray) or array.dtype != dtype or not array.flags.c_contiguous:
        kind = getattr(array, "dtype", type(array).__name__)
        raise TypeError(f"expected a contiguous {np.dtype(dtype)} array, got {kind}")
    if written and not array.flags.writeable:
        raise ValueError("the array the kernel writes into is read-only")
    return int(array.ctypes.data)


def _data(buf: bytes | npt.NDArray[np.uint8]) -> tuple[bytes | int, int]:
    """What to pass for a byte buffer (a ``bytes`` object as it is), and its length."""
    if type(buf) is bytes:
        return buf, len(buf)
    array = cast("npt.NDArray[np.uint8]", buf)
    return _address(array, np.uint8), array.size


def _minvec(minvec: npt.NDArray[np.uint64], *, written: bool = True) -> int:
    if getattr(minvec, "size", None) != 64:
        raise ValueError(f"a MinHash vector has 64 slots, not {getattr(minvec, 'size', None)}")
    return _address(minvec, np.uint64, written=written)


@functools.lru_cache(maxsize=16)
def _params(params: CdcParams) -> CdcParams:
    """Chunker parameters the data kernels can run with (each chunk at least a byte)."""
    mi, ma, cs, mask_s, mask_l = params
    if min(mi, cs, mask_s, mask_l) < 0 or ma < 1 or max(params) >= 1 << 62:
        raise ValueError(f"chunker parameters out of range: {params}")
    return params


def _text_args(
    utf8: bytes | npt.NDArray[np.uint8], offsets: npt.NDArray[np.int64] | None, width: int
) -> tuple[bytes | int, int, int | None, int]:
    if not 1 <= width < 1 << 31:
        raise ValueError(f"the window width must be at least 1, not {width}")
    data, nbytes = _data(utf8)
    if offsets is None:
        return data, nbytes, None, nbytes  # a byte per character
    address = _address(offsets, np.int64)
    nchars = offsets.size - 1
    # Where each character starts: from 0 up to the length of the text, a byte at least each.
    if nchars < 0 or offsets[0] != 0 or offsets[-1] != nbytes or np.any(np.diff(offsets) < 1):
        raise ValueError("offsets must rise from 0 to the length of the text")
    return data, nbytes, None if nchars == nbytes else address, nchars


def native_kernels(addresses: Mapping[str, int]) -> Any:
    """The :class:`~isccd.iscc.kernels.Kernels` that call the entry points at ``addresses``.

    Typed loosely: :mod:`isccd.iscc.kernels` imports this module, not the other way round.
    """
    from isccd.iscc.kernels import Kernels  # noqa: PLC0415 - see above

    f = {name: _function(addresses[name], name) for name in SIGNATURES}
    scan, fold, pack, digest_data = f["data_scan"], f["hash_fold"], f["compress"], f["data_digest"]
    fold_text, digest_text = f["text_fold"], f["text_digest"]
    nearest = f["hamming_nearest"]
    # The text kernels' scratch, used during a call only (they hold the lock): a block of
    # window hashes, the words read ahead for it, and the vector of a digest.
    block = (ctypes.c_uint64 * TEXT_BLOCK)()
    words = (ctypes.c_uint32 * TEXT_WORDS)()
    text_minvec = (ctypes.c_uint64 * 64)()
    digest = ctypes.c_uint8 * 32
    vector = ctypes.c_uint64 * 64

    def data_scan(
        buf: npt.NDArray[np.uint8],
        start: int,
        stop_at: int,
        vec: npt.NDArray[np.uint64],
        params: CdcParams,
    ) -> tuple[int, int]:
        data, n = _data(buf)
        if not 0 <= start <= n:
            raise ValueError(f"start {start} is outside the buffer of {n} bytes")
        chunks = ctypes.c_int64()
        stop = max(-1, min(stop_at, n))  # past the end scans to it, as far as an int64 goes
        pos = scan(data, n, start, stop, _minvec(vec), *_params(params), ctypes.byref(chunks))
        return int(pos), chunks.value

    def hash_fold(buf: npt.NDArray[np.uint8], vec: npt.NDArray[np.uint64]) -> None:
        data, n = _data(buf)
        fold(data, n, _minvec(vec))

    def compress(vec: npt.NDArray[np.uint64]) -> bytes:
        out = digest()
        pack(_minvec(vec, written=False), 64, 4, out)
        return bytes(out)

    def data_digest(buf: bytes | npt.NDArray[np.uint8], params: CdcParams) -> bytes:
        data, n = _data(buf)
        out = digest()
        digest_data(data, n, *_params(params), vector(), out)
        return bytes(out)

    def text_fold(
        utf8: bytes | npt.NDArray[np.uint8],
        offsets: npt.NDArray[np.int64] | None,
        width: int,
        vec: npt.NDArray[np.uint64],
    ) -> None:
        data, nbytes, offs, nchars = _text_args(utf8, offsets, width)
        fold_text(data, nbytes, offs, nchars, width, _minvec(vec), block, words)

    def text_digest(
        utf8: bytes | npt.NDArray[np.uint8], offsets: npt.NDArray[np.int64] | None, width: int
    ) -> bytes:
        data, nbytes, offs, nchars = _text_args(utf8, offsets, width)
        out = digest()
        digest_text(data, nbytes, offs, nchars, width, text_minvec, block, words, out)
        return bytes(out)

    def hamming_nearest(  # noqa: PLR0917 - the Kernels field's arguments
        codes: npt.NDArray[np.uint64],
        ids: npt.NDArray[np.int64],
        live: npt.NDArray[np.bool_],
        queries: npt.NDArray[np.uint64],
        spans: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
        radius: int,
        limit: int,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        n, q = codes.size, queries.size
        lo, hi = spans
        if ids.size != n or live.size != n or lo.size != q or hi.size != q:
            raise ValueError("the codes, ids and live flags, or the queries and spans, differ")
        if limit < 0:
            raise ValueError(f"the hits kept a query must be at least 0, not {limit}")
        # One byte a flag, read as such: a wider array's bytes are not its flags.
        flags = live.view(np.uint8) if live.dtype == np.bool_ else live
        slots = np.empty(q * limit, dtype=np.int64)
        keys = np.zeros(q * limit, dtype=np.int64)  # 0 past the last found, as in Python
        counts = np.empty(q, dtype=np.int64)
        nearest(
            _address(codes, np.uint64), _address(ids, np.int64), _address(flags, np.uint8), n,
            _address(queries, np.uint64), _address(lo, np.int64), _address(hi, np.int64), q,
            # A distance is 0 to 64: a radius past either end is one there (ctypes would wrap
            # an integer beyond 64 bits around, not refuse it).
            min(max(radius, -1), 64), limit, _address(slots, np.int64, written=True),
            _address(keys, np.int64, written=True), _address(counts, np.int64, written=True),
        )  # fmt: skip
        return slots.reshape(q, limit), keys.reshape(q, limit), counts

    return Kernels(
        accelerated=True,
        data_scan=data_scan,
        hash_fold=hash_fold,
        compress=compress,
        data_digest=data_digest,
        text_fold=text_fold,
        text_digest=text_digest,
        hamming_nearest=hamming_nearest,
    )
