"""Opening paths beneath a root directory, never following a symbolic link out of it.

A path checked by name and opened later by name can be redirected in between: swap a directory
on the way for a symbolic link and the open goes wherever the link points (``O_NOFOLLOW`` guards
only the last component). Everything isccd reads or stat's inside a watched root therefore goes
through a :class:`RootDir`: the root's directory is opened once, and each path is resolved
relative to that descriptor, component by component, in the process that uses the result.

- With ``openat2(2)`` (Linux 5.6+), one call does it: ``RESOLVE_BENEATH`` keeps the resolution
  beneath the root (``..`` cannot climb out of it), ``RESOLVE_NO_SYMLINKS`` refuses every link
  on the way. Kernels without it, or sandboxes whose seccomp filter refuses it, get the same
  rules from a walk: each directory opened ``O_PATH | O_DIRECTORY | O_NOFOLLOW`` relative to
  the previous one.
- With ``follow_symlinks``, links are followed only while they stay beneath the root: the
  kernel's ``RESOLVE_BENEATH`` alone, and the walk (which also accepts an absolute link whose
  target lies under the root; the kernel refuses every absolute link) where the kernel says
  ``EXDEV``.
- The root itself is opened without following any link on its own path: the daemon keeps its
  roots with their links resolved, so a link there is a changed tree, not a configured one.

Errors are :class:`OSError` with the errno of ``open(2)``, and two that mean "refused":
``ELOOP`` for a symbolic link that is not followed and ``EXDEV`` for a path that leads out of
the root. A path that is not lexically under the root is refused with ``EXDEV`` before any
lookup.

This module imports nothing of isccd.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import stat
import sys
from collections.abc import Callable
from types import TracebackType
from typing import cast

#: openat2's number where it is known (the number every architecture but alpha gives it).
_OPENAT2_SYSCALL = 437
_OPENAT2_MACHINES = frozenset(
    {"x86_64", "amd64", "aarch64", "arm64", "i386", "i686", "armv7l", "riscv64", "ppc64le"}
)

# linux/openat2.h
RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08

#: Bytes a path name may have, its terminating NUL included (Linux's PATH_MAX).
PATH_MAX = 4096
#: Symbolic links followed on one path before giving up (the kernel's MAXSYMLINKS).
MAX_SYMLINKS = 40
#: Retries of openat2 when a concurrent rename makes it answer EAGAIN, before walking instead.
_EAGAIN_RETRIES = 3

_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: How os.fsencode encodes a path, for the lookups beneath a root (without its calls).
_FS_ENCODING = sys.getfilesystemencoding()
_FS_ERRORS = sys.getfilesystemencodeerrors()
#: Errors that mean "this kernel or sandbox has no usable openat2".
_NO_OPENAT2 = frozenset({errno.ENOSYS, errno.EPERM, errno.E2BIG, errno.EINVAL})


class _OpenHow(ctypes.Structure):
    _fields_ = (
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    )


@functools.cache
def _syscall() -> Callable[..., int] | None:
    if platform.machine() not in _OPENAT2_MACHINES:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    # No argtypes: the arguments are passed as ready C values instead (_NR, c_long of the
    # descriptor, _how, _HOW_SIZE), which saves converting them on every call.
    call = libc.syscall
    call.restype = ctypes.c_long
    return cast(Callable[..., int], call)


#: The arguments of every call that never change, as C values (syscall(2) is variadic: each is
#: passed as the long it reads).
_NR = ctypes.c_long(_OPENAT2_SYSCALL)
_HOW_SIZE = ctypes.c_size_t(ctypes.sizeof(_OpenHow))


@functools.cache
def _how(flags: int, resolve: int) -> ctypes._CArgObject:
    """A reference to the ``open_how`` of ``flags`` and ``resolve``, made once per pair (the
    kernel only reads it; isccd uses a handful of pairs)."""
    return ctypes.byref(_OpenHow(flags | os.O_CLOEXEC, 0, resolve))


def _openat2(dir_fd: int, path: bytes, flags: int, resolve: int) -> int:
    """Call openat2(2); raise OSError with its errno."""
    return _openat2_c(ctypes.c_long(dir_fd), path, _how(flags, resolve))


def _openat2_c(dir_fd: ctypes.c_long, path: bytes, how: ctypes._CArgObject) -> int:
    """:func:`_openat2` with its arguments as C values already (a root's descriptor and its
    ``open_how`` made once, not on every call)."""
    call = _syscall()
    if call is None:
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))
    fd = call(_NR, dir_fd, path, how, _HOW_SIZE)
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), os.fsdecode(path))
    return fd


@functools.cache
def openat2_available() -> bool:
    """Whether this kernel, and the sandbox around this process, let us use openat2(2).

    Probed once per process with a harmless call, so that later errors of the same kinds
    (``EPERM`` from ``O_NOATIME``, say) are taken for what they are.
    """
    try:
        os.close(_openat2(-100, b"/", os.O_PATH, RESOLVE_NO_SYMLINKS))  # AT_FDCWD
    except OSError as exc:
        if exc.errno in _NO_OPENAT2:
            return False
        raise
    return True


def _components(path: str) -> list[str]:
    """The components of a relative path to process, last first (a stack)."""
    return [p for p in reversed(path.split("/")) if p not in ("", ".")]


def _refused(code: int | None, path: str) -> OSError:
    """An OSError with ``code`` (EIO when unknown) naming the whole path."""
    code = code or errno.EIO
    return OSError(code, os.strerror(code), path)


def open_root(root: str, *, kernel: bool = True) -> int:
    """Open a root directory (``O_PATH``) without following a symbolic link on its path.

    Args:
        root: An absolute path without ``..``.
        kernel: Use openat2(2) when available (``False`` forces the walk).

    Returns:
        A descriptor to resolve paths beneath the root from; the caller closes it.

    Raises:
        OSError: ``ENOENT``, ``ENOTDIR``, ``EACCES``; ``ELOOP`` when a component of the root's
            path is a symbolic link.
    """
    if not root.startswith("/") or ".." in root.split("/"):
        raise _refused(errno.EINVAL, root)
    if kernel and openat2_available():
        # Without O_NOFOLLOW: RESOLVE_NO_SYMLINKS then says ELOOP for a link at the end too.
        flags = _DIR_FLAGS & ~os.O_NOFOLLOW
        return _openat2(-100, os.fsencode(root), flags, RESOLVE_NO_SYMLINKS)
    fd = os.open("/", _DIR_FLAGS)
    for part in _components(root[1:])[::-1]:
        fd = _step(fd, part, root)  # closes the previous one, whatever happens
    return fd


def _step(fd: int, part: str, path: str) -> int:
    """Open the directory ``part`` in ``fd`` without following a link; closes ``fd``."""
    try:
        return os.open(part, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno == errno.ENOTDIR and _is_link(fd, part):
            raise _refused(errno.ELOOP, path) from None
        raise
    finally:
        os.close(fd)


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


class RootDir:
    """A root's directory, open, to open and stat paths beneath it.

    Use it as a context manager, or call :meth:`close`.

    Args:
        root: The root: absolute, normalized, its symbolic links resolved.
        follow_symlinks: Follow symbolic links that stay beneath the root (else none).
        kernel: Use openat2(2) (``None``: when available). ``False`` forces the walk.

    Raises:
        OSError: The root cannot be opened (see :func:`open_root`).
    """

    def __init__(
        self, root: str, *, follow_symlinks: bool = False, kernel: bool | None = None
    ) -> None:
        self.path = root.rstrip("/") or "/"
        self.follow_symlinks = follow_symlinks
        self._kernel = openat2_available() if kernel is None else kernel and openat2_available()
        self._resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
        if not follow_symlinks:
            self._resolve |= RESOLVE_NO_SYMLINKS
        # The last path resolved, relative and encoded: a file is looked up three times.
        self._last: tuple[str | None, bytes] = (None, b"")
        self.fd = open_root(self.path, kernel=self._kernel)
        self._identity: tuple[int, int] | None = None
        # openat2's arguments that stay the same, as C values: the descriptor, and the
        # open_how of each flags a file is opened with (a handful).
        self._cfd = ctypes.c_long(self.fd)
        self._hows: dict[int, ctypes._CArgObject] = {}
        #: What every path under the root starts with.
        self._prefix = (self.path if self.path != "/" else "") + "/"

    def close(self) -> None:
        """Close the root's descriptor (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def moved(self) -> bool:
        """Whether the root's path no longer names the directory held open: it was removed,
        renamed or replaced (or something mounted over it) since it was opened.

        Everything opened beneath the descriptor is beneath the directory that was the root
        when it was opened; this says whether it still is.
        """
        if self._identity is None:
            held = os.fstat(self.fd)
            self._identity = (held.st_dev, held.st_ino)
        try:
            now = os.lstat(self.path)
        except OSError:
            return True
        return (now.st_dev, now.st_ino) != self._identity

    def __enter__(self) -> RootDir:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def relative(self, path: str) -> str:
        """``path`` relative to the root (``.`` for the root itself).

        Raises:
            OSError: ``EXDEV`` when ``path`` is not under the root by name;
                ``ENAMETOOLONG`` when it is longer than a path name may be (though shorter
                relative to the root, nothing else could use it by name); ``EINVAL`` when it
                holds a NUL, which no path name can (the kernel would see only what precedes it).
        """
        if len(path) >= PATH_MAX // 4 and len(os.fsencode(path)) >= PATH_MAX:
            raise _refused(errno.ENAMETOOLONG, path)
        if "\0" in path:
            raise _refused(errno.EINVAL, path)
        if path == self.path:
            return "."
        if not path.startswith(self._prefix):
            raise _refused(errno.EXDEV, path)
        return path[len(self._prefix) :] or "."

    def open(self, path: str, flags: int) -> int:
        """Open ``path`` beneath the root.

        No symbolic link on the way is followed, unless :attr:`follow_symlinks` is set and it
        stays beneath the root. A link as the last component follows the same rule, except
        that ``O_NOFOLLOW`` in ``flags`` is honoured as :func:`os.open` does (with ``O_PATH``
        the link itself is opened, otherwise ``ELOOP``).

        Args:
            path: An absolute path under the root.
            flags: ``os.open`` flags (``O_CLOEXEC`` is always added; no ``O_CREAT``).

        Returns:
            The descriptor; the caller closes it.

        Raises:
            OSError: As ``open(2)``; ``ELOOP`` for a link not followed, ``EXDEV`` for a path
                that leads out of the root.
        """
        if self.fd < 0:
            raise ValueError("the root directory is closed")
        if self._kernel:
            last = self._last
            if last[0] == path:
                encoded = last[1]
            else:
                encoded = self.relative(path).encode(_FS_ENCODING, _FS_ERRORS)  # os.fsencode
                self._last = (path, encoded)
            how = self._hows.get(flags)
            if how is None:
                how = self._hows[flags] = _how(flags, self._resolve)
            for _ in range(_EAGAIN_RETRIES):
                try:
                    return _openat2_c(self._cfd, encoded, how)
                except OSError as exc:
                    if exc.errno == errno.EAGAIN:
                        continue  # a rename raced with ".."; the kernel asks to try again
                    if exc.errno == errno.EXDEV and self.follow_symlinks:
                        break  # perhaps an absolute link into the root: the walk decides
                    raise _refused(exc.errno, path) from None
        return self._walk(self.relative(path), flags, path)

    def stat(self, path: str) -> os.stat_result:
        """``lstat`` of ``path``, reached beneath the root (the last component is not
        followed; links on the way as in :meth:`open`).

        Raises:
            OSError: As :meth:`open`.
        """
        fd = self.open(path, os.O_PATH | os.O_NOFOLLOW)
        try:
            return os.fstat(fd)
        finally:
            os.close(fd)

    def _walk(self, rel: str, flags: int, path: str) -> int:
        """Resolve ``rel`` one component at a time from the root's descriptor."""
        fds: list[int] = []  # directories opened below the root, innermost last
        pending = _components(rel)
        links = 0
        try:
            if not pending:
                return _open_last(self.fd, ".", flags, path)
            while True:
                part = pending.pop()
                here = fds[-1] if fds else self.fd
                if part == "..":
                    if not fds:
                        raise _refused(errno.EXDEV, path)
                    os.close(fds.pop())
                    if not pending:
                        return _open_last(fds[-1] if fds else self.fd, ".", flags, path)
                    continue
                last = not pending
                follow = self.follow_symlinks and not (last and flags & os.O_NOFOLLOW)
                target = _readlink(here, part) if follow else None
                if target is not None:
                    links += 1
                    if links > MAX_SYMLINKS:
                        raise _refused(errno.ELOOP, path)
                    pending.extend(self._target_components(target, path, fds))
                    if not pending:  # a link to a directory on the way ("." or the root)
                        return _open_last(fds[-1] if fds else self.fd, ".", flags, path)
                    continue
                if last:
                    return _open_last(here, part, flags, path)
                fds.append(_open_dir(here, part, path))
        finally:
            for fd in fds:
                os.close(fd)

    def _target_components(self, target: str, path: str, fds: list[int]) -> list[str]:
        """The components a link's target adds to the walk; an absolute target must lie
        under the root and restarts the walk there."""
        if not target.startswith("/"):
            return _components(target)
        prefix = self.path.rstrip("/") + "/"
        if target != self.path and not target.startswith(prefix):
            raise _refused(errno.EXDEV, path)
        while fds:
            os.close(fds.pop())
        return _components(target[len(prefix) :] if target != self.path else "")


def _readlink(dir_fd: int, name: str) -> str | None:
    """The target of the link ``name`` in ``dir_fd``; ``None`` when it is not a link."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.ENOENT):
            return None  # not a link (or missing: the open that follows says so)
        raise


def _open_dir(dir_fd: int, name: str, path: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ENOTDIR and _is_link(dir_fd, name):
            raise _refused(errno.ELOOP, path) from None
        raise _refused(exc.errno, path) from None


def _open_last(dir_fd: int, name: str, flags: int, path: str) -> int:
    """Open the last component, never following it (``O_NOFOLLOW`` semantics of open(2) when
    the caller asked for them, else ``ELOOP`` for a link)."""
    try:
        fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        raise _refused(exc.errno, path) from None
    if flags & os.O_PATH and not flags & os.O_NOFOLLOW and stat.S_ISLNK(os.fstat(fd).st_mode):
        os.close(fd)
        raise _refused(errno.ELOOP, path)
    return fd
