"""Creating the daemon's Unix socket safely, and knowing who connects to it.

The socket lives in a directory only the daemon can write; :func:`open_socket` creates that
directory when missing (``0750``, so that the socket's group can reach it), and refuses to start
when it is writable by group or others, or owned by another user: anyone who can write there
could replace the socket with their own and collect the clients' requests.

Start-up is race-free and never removes a live socket: a lock file held for the daemon's lifetime
decides between two daemons starting at once; an existing socket file is probed, and a daemon
that answers makes start-up fail with a clear message; one that does not (a crashed daemon's
stale socket) is replaced. The new socket is bound under a temporary name, given its mode and
group, and renamed into place, so it is never reachable with looser permissions.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import grp
import os
import socket
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

from isccd.errors import SocketSetupError

#: sockaddr_un.sun_path holds 108 bytes including the terminating NUL.
MAX_SOCKET_PATH_BYTES = 107
#: Pending connections the kernel queues before ``accept``.
BACKLOG = 128
#: How long the probe of an existing socket waits for an answer.
PROBE_TIMEOUT = 1.0

_PEERCRED = struct.Struct("3i")


@dataclass(frozen=True, slots=True)
class PeerCredentials:
    """Who is at the other end of a connection (``SO_PEERCRED``, taken at ``connect``)."""

    pid: int
    uid: int
    gid: int


def peer_credentials(sock: socket.socket) -> PeerCredentials | None:
    """The credentials of the process that connected ``sock``, or ``None`` if unavailable."""
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
    except OSError:
        return None
    pid, uid, gid = _PEERCRED.unpack(raw)
    return PeerCredentials(pid, uid, gid)


class SocketFile:
    """A listening Unix socket bound at its path, and the lock that makes the path ours.

    Attributes:
        path: Where clients connect.
        sock: The listening socket (non-blocking), to hand to the event loop.
    """

    def __init__(self, path: Path, sock: socket.socket, lock_fd: int) -> None:
        self.path = path
        self.sock = sock
        self._lock_fd: int | None = lock_fd
        st = os.lstat(path)
        self._identity = (st.st_dev, st.st_ino)

    def close(self) -> None:
        """Remove the socket file, if it is still ours, and release the lock. Idempotent.

        The listening socket itself is closed by whoever serves it (or here, if it is still
        open).
        """
        if self._lock_fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            st = os.lstat(self.path)
            if (st.st_dev, st.st_ino) == self._identity:
                self.path.unlink()
        self.sock.close()
        os.close(self._lock_fd)
        self._lock_fd = None


def open_socket(path: Path, *, mode: int = 0o660, group: str | None = None) -> SocketFile:
    """Create, bind and listen on the daemon's socket at ``path``.

    Blocking (it may probe an existing socket for up to a second): run it in a thread.

    Args:
        path: Absolute socket path, at most 107 bytes.
        mode: Permission bits of the socket file; clients need write permission to connect.
        group: Group name or number to own the socket file; ``None`` keeps the daemon's group.

    Returns:
        The listening socket; close it with :meth:`SocketFile.close`.

    Raises:
        SocketSetupError: The path is too long, the directory is unsafe or cannot be created,
            the group is unknown, the path is taken by something that is not a socket, or a
            daemon answers on it.
    """
    path = Path(path).absolute()
    if len(os.fsencode(path)) > MAX_SOCKET_PATH_BYTES:
        raise SocketSetupError(
            f"socket path {str(path)!r} is longer than {MAX_SOCKET_PATH_BYTES} bytes, "
            "the limit of Unix socket addresses; choose a shorter path"
        )
    gid = _group_id(group)
    _ensure_private_dir(path.parent, 0o750 if group is not None or mode & 0o070 else 0o700)
    lock_fd = _lock(path)
    try:
        _check_existing(path)
        sock = _bind(path, mode, gid)
    except BaseException:
        os.close(lock_fd)
        raise
    return SocketFile(path, sock, lock_fd)


def _group_id(group: str | None) -> int | None:
    if group is None:
        return None
    if group.isdigit():
        return int(group)
    try:
        return grp.getgrnam(group).gr_gid
    except KeyError:
        raise SocketSetupError(f"socket group {group!r} does not exist") from None


def _ensure_private_dir(directory: Path, dir_mode: int) -> None:
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        directory.mkdir(mode=dir_mode)
        directory.chmod(dir_mode)  # mkdir's mode is masked by the umask
    except FileExistsError:
        pass
    except OSError as exc:
        raise SocketSetupError(
            f"cannot create the socket directory {str(directory)!r}: {exc.strerror}"
        ) from None
    try:
        st = directory.stat()
    except OSError as exc:
        raise SocketSetupError(f"socket directory {str(directory)!r}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise SocketSetupError(f"{str(directory)!r} is not a directory")
    if st.st_uid != os.geteuid():
        raise SocketSetupError(
            f"socket directory {str(directory)!r} is owned by uid {st.st_uid}, not by the "
            f"daemon (uid {os.geteuid()}); use a directory only the daemon owns"
        )
    if st.st_mode & 0o022:
        raise SocketSetupError(
            f"socket directory {str(directory)!r} is writable by "
            f"{'others' if st.st_mode & 0o002 else 'its group'} (mode "
            f"{stat.S_IMODE(st.st_mode):04o}); anyone who can write there could replace the "
            "socket. Use a directory only the daemon can write (e.g. chmod 0750)"
        )


def _lock(path: Path) -> int:
    lock_path = path.with_name(path.name + ".lock")
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise SocketSetupError(f"cannot open {str(lock_path)!r}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise SocketSetupError(
            f"another isccd is running with the socket {str(path)!r} (it holds "
            f"{str(lock_path)!r}); stop it first or choose another socket path"
        ) from None
    return fd


def _check_existing(path: Path) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise SocketSetupError(
            f"{str(path)!r} exists and is not a socket; it was left in place, remove it or "
            "choose another socket path"
        )
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    probe.settimeout(PROBE_TIMEOUT)
    try:
        probe.connect(os.fspath(path))
    except ConnectionRefusedError:
        return  # stale: nobody listens; it is replaced atomically when binding
    except TimeoutError:
        pass  # its backlog is full: something is listening
    except OSError as exc:
        if exc.errno != errno.EAGAIN:
            raise SocketSetupError(f"cannot probe the socket {str(path)!r}: {exc}") from None
    finally:
        probe.close()
    raise SocketSetupError(
        f"a daemon is already listening on {str(path)!r}; stop it first (isccd status shows it)"
    )


def _bind(path: Path, mode: int, gid: int | None) -> socket.socket:
    temporary = path.with_name("." + path.name)
    if len(os.fsencode(temporary)) > MAX_SOCKET_PATH_BYTES:
        raise SocketSetupError(
            f"socket path {str(path)!r} is too long (the daemon binds it under a name one byte "
            "longer first); choose a shorter path"
        )
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()  # left by a daemon that crashed while binding; we hold the lock
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        sock.bind(os.fspath(temporary))
        temporary.chmod(mode)
        if gid is not None:
            os.chown(temporary, -1, gid)
        sock.listen(BACKLOG)
        sock.setblocking(False)
        temporary.rename(path)
    except OSError as exc:
        sock.close()
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise SocketSetupError(f"cannot create the socket {str(path)!r}: {exc}") from None
    return sock
