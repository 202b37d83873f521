"""Writing a file of the report whole and private, never through a name someone planted.

The data is written to a new temporary file in the target's own folder, created with
``O_CREAT | O_EXCL | O_NOFOLLOW`` and mode 0600 (so nothing that was there, a symbolic link
least of all, is opened or written through), synced, then renamed over the target. A rename
replaces whatever the target's name held, a symbolic link included, without following it: the
file a planted link points to is never touched, and readers see the old file or the new one,
never a part.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC

#: Temporary names tried before giving up (each is random: a clash is someone's doing).
_TRIES = 16


def _create(folder: int, stem: str) -> tuple[int, str]:
    """A new file of mode 0600 in ``folder`` under a random name: its descriptor and name."""
    for _ in range(_TRIES):
        name = f".{stem}.{secrets.token_hex(8)}.tmp"
        try:
            return os.open(name, _CREATE, 0o600, dir_fd=folder), name
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {stem}")


def save_whole(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Put ``data`` at ``path``, mode 0600, by a temporary file renamed over it.

    Args:
        path: Where; its folder must exist.
        data: The content.
        durable: Sync the file and its folder (the page); a cache entry, which is only work
            saved, is not worth the wait.

    Raises:
        OSError: It cannot be written (nothing is left behind).
    """
    folder = os.open(path.parent, _DIRECTORY)
    try:
        fd, name = _create(folder, path.name)
        try:
            with os.fdopen(fd, "wb") as out:
                os.fchmod(out.fileno(), 0o600)  # whatever the umask
                out.write(data)
                out.flush()
                if durable:
                    os.fsync(out.fileno())
            os.rename(name, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=folder)
            raise
        if durable:
            os.fsync(folder)
    finally:
        os.close(folder)
