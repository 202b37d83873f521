"""The compiled kernels as C functions: their signatures, their machine code loaded without numba,
and the :class:`~isccd.iscc.kernels.Kernels` that call them.

numba compiles the kernels of :mod:`isccd.iscc._jit` to C-callable functions (:data:`SIGNATURES`)
and emits their machine code as one object file (:class:`MachineCode`). That object is all a
process needs to run them: :func:`load_machine_code` links it into memory with llvmlite, the
LLVM binding numba itself is built on, in a few milliseconds, where importing numba and loading
its cache take about half a second of CPU and 100 MB of memory in every process that hashes.
:func:`native_kernels` wraps the functions' addresses, wherever they come from (this loader, or
numba's own compiled functions), in the :class:`~isccd.iscc.kernels.Kernels` interface.

The functions run with the interpreter lock held (``ctypes.PYFUNCTYPE``): each
:class:`Kernels` owns the scratch buffers its calls share, which no two threads may use at
once. The kernels never allocate, never raise and never call back into Python; their only
external references are the runtime's error path (numba's helpers and the Python C API) that a
kernel without exceptions never reaches.

Pure: no I/O. Reading and writing the machine code is the caller's (:mod:`isccd.hashing.machine`
keeps it on disk).
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from isccd.iscc.cdc import CdcParams

__all__ = [
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
}  # fmt: skip

#: Window hashes the text kernels compute before folding them (the ``block`` scratch), and the
#: words read ahead for them (``words``: eight more).
TEXT_BLOCK = 4096
TEXT_WORDS = TEXT_BLOCK + 8

#: The runtime helpers of numba's error path (``NRT_*``, ``numba_*``). A kernel that cannot raise
#: never calls them; where numba is not loaded they are bound to ``abort``, so that a call that
#: should be impossible ends the process (a worker, which the pool replaces) instead of
#: running on.
_RUNTIME_PREFIXES = ("NRT_", "numba_")


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
        sections = [
            struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)
        ]
        names: list[str] = []
        for _, kind, _, _, offset, size, link, _, _, entsize in sections:
            if kind != 2:  # SHT_SYMTAB
                continue
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


def _function(address: int, signature: tuple[str, ...]) -> Callable[..., Any]:
    result, *args = signature
    types = [ctypes.c_int64 if a == "i64" else ctypes.c_void_p for a in args]
    restype = ctypes.c_int64 if result == "i64" else None
    return ctypes.PYFUNCTYPE(restype, *types)(address)


def _address(array: npt.NDArray[Any], dtype: type[np.generic]) -> int:
    """The data address of a C-contiguous array of ``dtype`` (the kernels trust their sizes)."""
    if array.dtype != dtype or not array.flags.c_contiguous:
        raise TypeError(f"expected a contiguous {np.dtype(dtype)} array, got {array.dtype}")
    return int(array.ctypes.data)


def _data(buf: bytes | npt.NDArray[np.uint8]) -> tuple[bytes | int, int]:
    """What to pass for a byte buffer (a ``bytes`` object as it is), and its length."""
    if type(buf) is bytes:
        return buf, len(buf)
    return _address(buf, np.uint8), buf.size  # type: ignore[union-attr,arg-type]


def _minvec(minvec: npt.NDArray[np.uint64]) -> int:
    if minvec.size != 64:
        raise ValueError(f"a MinHash vector has 64 slots, not {minvec.size}")
    return _address(minvec, np.uint64)


def _text_args(
    utf8: bytes | npt.NDArray[np.uint8], offsets: npt.NDArray[np.int64] | None
) -> tuple[bytes | int, int, int | None, int]:
    data, nbytes = _data(utf8)
    if offsets is None:
        return data, nbytes, None, nbytes  # a byte per character
    if offsets.size < 1 or int(offsets[-1]) != nbytes:
        raise ValueError("offsets must end with the length of the text")
    nchars = offsets.size - 1
    return data, nbytes, None if nchars == nbytes else _address(offsets, np.int64), nchars


def native_kernels(addresses: Mapping[str, int]) -> Any:
    """The :class:`~isccd.iscc.kernels.Kernels` that call the entry points at ``addresses``.

    Typed loosely: :mod:`isccd.iscc.kernels` imports this module, not the other way round.
    """
    from isccd.iscc.kernels import Kernels  # noqa: PLC0415 - see above

    f = {name: _function(addresses[name], SIGNATURES[name]) for name in SIGNATURES}
    scan, fold, pack, digest_data = f["data_scan"], f["hash_fold"], f["compress"], f["data_digest"]
    fold_text, digest_text = f["text_fold"], f["text_digest"]
    # The scratch of one call at a time (the lock is held during each): the 32-byte digest,
    # a MinHash vector, a block of window hashes and the words read ahead for it.
    out = (ctypes.c_uint8 * 32)()
    minvec = (ctypes.c_uint64 * 64)()
    block = (ctypes.c_uint64 * TEXT_BLOCK)()
    words = (ctypes.c_uint32 * TEXT_WORDS)()
    chunks = ctypes.c_int64()
    chunks_ref = ctypes.byref(chunks)

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
        pos = scan(data, n, start, stop_at, _minvec(vec), *params, chunks_ref)
        return int(pos), chunks.value

    def hash_fold(buf: npt.NDArray[np.uint8], vec: npt.NDArray[np.uint64]) -> None:
        data, n = _data(buf)
        fold(data, n, _minvec(vec))

    def compress(vec: npt.NDArray[np.uint64]) -> bytes:
        pack(_minvec(vec), 64, 4, out)
        return bytes(out)

    def data_digest(buf: bytes | npt.NDArray[np.uint8], params: CdcParams) -> bytes:
        data, n = _data(buf)
        digest_data(data, n, *params, minvec, out)
        return bytes(out)

    def text_fold(
        utf8: bytes | npt.NDArray[np.uint8],
        offsets: npt.NDArray[np.int64] | None,
        width: int,
        vec: npt.NDArray[np.uint64],
    ) -> None:
        data, nbytes, offs, nchars = _text_args(utf8, offsets)
        fold_text(data, nbytes, offs, nchars, width, _minvec(vec), block, words)

    def text_digest(
        utf8: bytes | npt.NDArray[np.uint8], offsets: npt.NDArray[np.int64] | None, width: int
    ) -> bytes:
        data, nbytes, offs, nchars = _text_args(utf8, offsets)
        digest_text(data, nbytes, offs, nchars, width, minvec, block, words, out)
        return bytes(out)

    return Kernels(
        accelerated=True,
        data_scan=data_scan,
        hash_fold=hash_fold,
        compress=compress,
        data_digest=data_digest,
        text_fold=text_fold,
        text_digest=text_digest,
    )


def compress_planes(
    addresses: Mapping[str, int], minima: npt.NDArray[np.uint64], lsb: int
) -> bytes:
    """The ``lsb`` (1-64) least significant bit-planes of any number of ``minima``, packed by the
    compiled ``compress`` at ``addresses`` (the kernels use four planes of 64; this is for
    checking it against the reference's packing at every size)."""
    if not 1 <= lsb <= 64:
        raise ValueError(f"lsb must be 1 to 64, not {lsb}")
    out = (ctypes.c_uint8 * ((minima.size * lsb + 7) // 8))()
    _function(addresses["compress"], SIGNATURES["compress"])(
        _address(minima, np.uint64), minima.size, lsb, out
    )
    return bytes(out)
