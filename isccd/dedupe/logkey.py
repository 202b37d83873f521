"""The key that authenticates action logs, and the MAC of one log line.

Undo acts on what a log names: it unlinks temporary names, copies a kept file's content to a
victim's name and gives the copy an owner and a mode. A log anyone could have written would
make undo do all of that anywhere. So every line ``isccd dedupe`` writes carries an
HMAC-SHA256 under a key only the user running dedupe can read, ``STATE/dedupe/log.key`` (32
random bytes, mode 0600, made on first use), and undo acts only on a log whose every line
verifies under the key of the state directory it runs with.

The key is refused unless it is a regular file owned by the user reading it and readable by
nobody else: a key others can read lets them forge logs; one others own lets them choose it.
Its folder, ``STATE/dedupe`` (where the logs go too), is refused unless it is a folder of the
user's own that nobody else can write: not a symbolic link to somewhere else, nor a folder in
which another user could replace the key or the logs.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import os
import stat
from pathlib import Path

from isccd.errors import ActionLogError

#: Bytes of key.
KEY_BYTES = 32
#: Hex digits of a MAC.
MAC_HEX = 64
#: Put in front of every authenticated line: a MAC made for anything else never verifies.
_DOMAIN = b"isccd dedupe action log v2\0"
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def key_path(state_dir: Path) -> Path:
    """Where the key of a state directory is."""
    return state_dir / "dedupe" / "log.key"


def mac(key: bytes, body: bytes) -> str:
    """The hex HMAC-SHA256 of one line's ``body`` (the line without its MAC)."""
    return hmac.new(key, _DOMAIN + body, hashlib.sha256).hexdigest()


def verifies(key: bytes, body: bytes, tag: bytes) -> bool:
    """True when ``tag`` is the MAC of ``body`` (compared in constant time)."""
    return hmac.compare_digest(mac(key, body).encode("ascii"), tag)


def _check_folder(folder: Path) -> None:
    """Refuse a key folder that is a link, not a folder, not the user's, or writable by others.

    Raises:
        FileNotFoundError: There is none.
        ActionLogError: It is not safe to keep the key and the logs in.
    """
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ActionLogError(f"{folder} cannot be looked at: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise ActionLogError(
            f"{folder} is not a folder (a symbolic link?): the action-log key and the logs are "
            "kept only in a folder of your own"
        )
    if st.st_uid != os.geteuid():
        raise ActionLogError(
            f"{folder} is owned by user {st.st_uid}, not by you: whoever owns it could replace "
            "the action-log key and the logs; give --state a directory of your own"
        )
    if st.st_mode & 0o022:
        raise ActionLogError(
            f"{folder} can be written by others (mode {stat.S_IMODE(st.st_mode):04o}), who "
            "could replace the action-log key and the logs: chmod go-w it"
        )


def _read(path: Path) -> bytes:
    """The key at ``path``, checked to be the user's own and private.

    Raises:
        FileNotFoundError: There is none.
        ActionLogError: It cannot be read, or is not safe to trust.
    """
    try:
        fd = os.open(path, _READ)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ActionLogError(f"the action-log key {path} cannot be read: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ActionLogError(f"the action-log key {path} is not a regular file")
        if st.st_uid != os.geteuid():
            raise ActionLogError(
                f"the action-log key {path} is owned by user {st.st_uid}, not by you: whoever "
                "owns it could forge action logs; remove it to make a new one"
            )
        if st.st_mode & 0o077:
            raise ActionLogError(
                f"the action-log key {path} can be read by others (mode "
                f"{stat.S_IMODE(st.st_mode):04o}), who could forge action logs: chmod 600 it"
            )
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) != KEY_BYTES:
        raise ActionLogError(f"the action-log key {path} is not {KEY_BYTES} bytes long")
    return data


def _make(path: Path) -> None:
    """Make a new key at ``path`` atomically (written under another name, then linked: a
    concurrent run reads either no key or a whole one); a key made meanwhile is kept."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, _CREATE, 0o600)
    try:
        if os.write(fd, os.urandom(KEY_BYTES)) != KEY_BYTES:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        with contextlib.suppress(FileExistsError):
            os.link(temp, path)
    finally:
        temp.unlink()


def load_key(state_dir: Path, *, create: bool) -> bytes:
    """The action-log key of ``state_dir``, made first if there is none and ``create``.

    Raises:
        ActionLogError: There is none (and not ``create``), or it cannot be made or read, or
            is not the user's own and private.
    """
    path = key_path(state_dir)
    try:
        _check_folder(path.parent)
        return _read(path)
    except FileNotFoundError:
        if not create:
            raise ActionLogError(
                f"there is no action-log key in {path.parent}: no log was written with this "
                "state directory (undo with the --state or --config the run had)"
            ) from None
    try:
        _make(path)
        _check_folder(path.parent)
        return _read(path)
    except FileNotFoundError:
        raise ActionLogError(f"the action-log key {path} vanished as it was made") from None
    except OSError as exc:
        raise ActionLogError(f"the action-log key {path} cannot be made: {exc.strerror}") from None
