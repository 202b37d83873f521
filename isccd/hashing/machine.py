"""The compiled kernels' machine code, kept on disk so that a process loads them without numba.

numba compiles the Data- and Text-Code kernels (:mod:`isccd.iscc._jit`) once per machine and
version; their machine code, one object file of about 45 KB, is kept in the cache directory
(:func:`isccd.dirs.default_cache_dir`, under ``kernels/``). A process that hashes loads it with
llvmlite (:func:`isccd.iscc._native.load_machine_code`): measured here about 0.1 s of CPU with
the imports, against about 0.6 s and 100 MB for importing numba and loading its own cache. The
workers' fork server does this once; every worker forked from it has the kernels.

A file is used only when its name's key matches: a digest of the kernels' source, the Python,
numba and llvmlite versions, the CPU (its name and features, as numba compiles for them) and
numba's settings (every ``NUMBA_*`` variable but where it caches and how many threads it runs,
and its ``.numba_config.yaml``), so an upgrade or another machine sharing the directory compiles
its own. Its content is checked against a digest before it is loaded: the digest guards against
damage, not against someone who may write the cache directory (which no one but isccd's user
may, as for numba's own cache).

When it is missing or damaged the kernels are compiled with numba and the file written once
compiled (to a temporary name, then renamed: processes starting together each write a whole
file; a temporary file left by a writer that was stopped is removed after an hour); when the
directory is not writable they are taken from numba's own cache in every process that starts
the workers, and the workers' pool says so once in the log.

Importing this module loads nothing: :func:`compiled_kernels` does, the first time the kernels
are needed (:func:`isccd.iscc.kernels.use_loader` is set to it when :mod:`isccd.hashing` is
imported).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import platform
import stat
import struct
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from isccd import dirs
from isccd.iscc import kernels
from isccd.iscc._native import MachineCode, MachineCodeError, load_machine_code, native_kernels

__all__ = ["Loaded", "cache_path", "compiled_kernels", "last_loaded", "problem", "read", "write"]

#: The first bytes of a machine-code file, and the version of its layout.
MAGIC = b"isccd-kernels 1\n"
#: The files whose text makes the kernels (the key changes with any of them).
SOURCES = ("_jit.py", "_native.py", "_tables.py")
#: numba's settings that do not change what it compiles (where it caches, how it reports, how
#: many threads it runs): a process started with other values shares the machine code.
_NOT_CODE = frozenset(
    {"NUMBA_CACHE_DIR", "NUMBA_DEBUG_CACHE", "NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER"}
)
#: The largest machine-code file read (it is about 45 KB).
MAX_SIZE = 16 << 20
#: Temporary files of writers that ended before renaming them are removed after this long.
STALE_SECONDS = 3600


class Loaded(NamedTuple):
    """How this process got its compiled kernels.

    Attributes:
        kernels: The kernels.
        source: ``cache`` (the machine code was on disk), ``compiled`` (numba compiled them and
            the machine code was written), ``compiled, not cached`` (it could not be written),
            or ``python`` (numba or llvmlite is missing: the pure-Python kernels).
        reason: Why the cache was not used or not written, when it was not.
    """

    kernels: kernels.Kernels
    source: str
    reason: str | None = None


#: What :func:`compiled_kernels` did in this process (one load per process).
_loaded: list[Loaded] = []


def last_loaded() -> Loaded | None:
    """What :func:`compiled_kernels` did in this process, if it ran."""
    return _loaded[0] if _loaded else None


def problem() -> str | None:
    """What is wrong with this process's kernels, for the log: ``None`` when they came from the
    cache or were compiled into it (or are not loaded)."""
    loaded = last_loaded()
    if loaded is None or loaded.source in ("cache", "compiled"):
        return None
    if loaded.source == "python":
        return f"the pure-Python kernels hash data and text (slowly): {loaded.reason}"
    return f"the kernels are compiled at every start of the workers, not cached: {loaded.reason}"


def cache_path(env: Mapping[str, str] | None = None) -> Path:
    """The machine-code file of this machine and version of the kernels (it may not exist).

    Raises:
        ImportError: llvmlite is not installed (then nothing is cached).
    """
    return dirs.default_cache_dir(env) / "kernels" / f"{_key(env)}.o"


def _key(env: Mapping[str, str] | None) -> str:
    import llvmlite  # noqa: PLC0415 - only processes that hash load it
    import llvmlite.binding as llvm  # noqa: PLC0415

    env = os.environ if env is None else env
    digest = hashlib.sha256()
    package = Path(kernels.__file__).parent
    for name in SOURCES:
        digest.update((package / name).read_bytes())
    numba = importlib.util.find_spec("numba")
    if numba is not None and numba.origin is not None:
        version = Path(numba.origin).with_name("_version.py")
        digest.update(version.read_bytes() if version.is_file() else b"")
    # numba's settings change what it compiles (the CPU, the optimizations, the vectorizers):
    # all of them, from the environment and from its configuration file in the working
    # directory, where numba reads it.
    numba_config = Path(".numba_config.yaml")
    facts = [
        sys.version,
        platform.machine(),
        llvmlite.__version__,
        llvm.get_host_cpu_name(),
        llvm.get_host_cpu_features().flatten(),
        *sorted(
            f"{k}={v}" for k, v in env.items() if k.startswith("NUMBA_") and k not in _NOT_CODE
        ),
        numba_config.read_text(errors="replace") if numba_config.is_file() else "",
    ]
    digest.update("\n".join(facts).encode())
    return digest.hexdigest()[:32]


def compiled_kernels() -> kernels.Kernels:
    """The compiled kernels for this process: from the cache when it holds them, else compiled
    with numba (and cached), else the pure-Python ones. Never raises: a cache that cannot be
    read or written costs time, not results."""
    if _loaded:
        return _loaded[0].kernels
    try:
        loaded = _load()
    except Exception as exc:  # never the end of hashing: numba, or the Python kernels, still work
        loaded = _compile(None, f"cannot load the machine code: {type(exc).__name__}: {exc}")
    _loaded.append(loaded)
    return loaded.kernels


def _load() -> Loaded:
    try:
        path = cache_path()
    except ImportError:
        return _compile(None, "llvmlite is not installed")
    except OSError as exc:  # the kernels' source cannot be read: nothing to key a file by
        return _compile(None, f"cannot key the cache: {exc.strerror or exc}")
    try:
        code = read(path)
    except FileNotFoundError:
        return _compile(path, None)
    except (OSError, MachineCodeError) as exc:
        return _compile(path, f"{path}: {exc}")
    try:
        return Loaded(native_kernels(load_machine_code(code)), "cache")
    except MachineCodeError as exc:
        return _compile(path, f"{path}: {exc}")


def _compile(path: Path | None, reason: str | None) -> Loaded:
    """Compile the kernels with numba and write their machine code to ``path``; where it cannot
    be written, take them from numba's own cache (which may be writable elsewhere); where numba
    fails, the pure-Python kernels."""
    try:
        from isccd.iscc import _jit  # noqa: PLC0415 - numba, only when there is no cache
    except ImportError:
        return Loaded(kernels.PYTHON_KERNELS, "python", "numba is not installed")
    if path is not None:
        writable = _writable(path.parent)
        if writable is not None:
            reason = writable
        else:
            # Compiled anew (about 2 s): numba keeps no machine code of what it loads from its
            # cache. Only then is a file written, so a process stopped while compiling leaves
            # nothing behind.
            try:
                code, addresses = _jit.machine_code()
            except Exception as exc:  # numba's errors have no common base: never the end
                reason = f"cannot emit the machine code: {type(exc).__name__}: {exc}"
            else:
                compiled = native_kernels(addresses)
                try:
                    write(path, code)
                except OSError as exc:
                    why = f"cannot write {path}: {exc.strerror or exc}"
                    return Loaded(compiled, "compiled, not cached", why)
                return Loaded(compiled, "compiled", reason)
    try:
        return Loaded(native_kernels(_jit.addresses()), "compiled, not cached", reason)
    except Exception as exc:  # as above
        return Loaded(kernels.PYTHON_KERNELS, "python", f"numba failed: {exc}")


def _writable(directory: Path) -> str | None:
    """Why files cannot be written in ``directory`` (made if missing), or ``None``."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot write in {directory}: {exc.strerror or exc}"
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"cannot write in {directory}: permission denied"
    return None


def read(path: Path) -> MachineCode:
    """The machine code in ``path``, its digest checked.

    Raises:
        OSError: It cannot be read (or it is a symbolic link).
        MachineCodeError: It is not a whole machine-code file (or not a regular file, or
            larger than any is).
    """
    # Not through a link, and without waiting on a FIFO: the file is isccd's own.
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SIZE:
            raise MachineCodeError("not a machine-code file")
        data = f.read(MAX_SIZE + 1)
    body, digest = data[:-32], data[-32:]
    if not data.startswith(MAGIC) or hashlib.sha256(body).digest() != digest:
        raise MachineCodeError("not a whole machine-code file")
    try:
        (size,) = struct.unpack_from("<I", body, len(MAGIC))
        start = len(MAGIC) + 4
        symbols = json.loads(body[start : start + size])
        return MachineCode(body[start + size :], {str(k): str(v) for k, v in symbols.items()})
    except (struct.error, ValueError, AttributeError) as exc:
        raise MachineCodeError(f"damaged machine-code file: {exc}") from exc


def write(path: Path, code: MachineCode) -> None:
    """Write ``code`` to ``path`` as a whole, and remove what writers that were stopped before
    renaming left behind: it is written to a new file beside ``path`` and renamed, so a reader
    sees no file or a whole one, whoever writes at the same time.

    Raises:
        OSError: The directory cannot be made or written.
    """
    symbols = json.dumps(dict(code.symbols), sort_keys=True).encode()
    body = MAGIC + struct.pack("<I", len(symbols)) + symbols + code.obj
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".kernels-", dir=path.parent)
    temporary = Path(name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(body + hashlib.sha256(body).digest())
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    now = time.time()
    for left in path.parent.glob(".kernels-*"):
        with contextlib.suppress(OSError):  # another writer's, renamed or removed meanwhile
            if now - left.lstat().st_mtime > STALE_SECONDS:
                left.unlink()
