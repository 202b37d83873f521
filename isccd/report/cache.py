"""Previews kept on disk, so that a second report decodes nothing that did not change.

One file per preview under the cache directory, named by a hash of the file's path,
device, inode, size and modification time and of how previews are made: a file that changes,
moves or is replaced gets a new entry, and the old one ages out. Entries are written whole
and private (:func:`isccd.report.save.save_whole`: a new file of mode 0600 renamed into place,
never written through a link at the entry's name), so concurrent reports and an interrupted
one leave only complete entries. An unreadable entry is a miss.

The cache is bounded: :meth:`PreviewCache.prune` removes the least recently used entries
(every hit renews an entry's modification time) once they take more than ``max_bytes``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

from isccd.report.model import FileStat, Preview, PreviewKind
from isccd.report.save import save_whole

#: Revision of the entries and of how previews are made: raise it when either changes.
REVISION = 1

#: Bytes the cache may hold by default (about 50,000 pictures).
DEFAULT_MAX_BYTES = 256 * 1024 * 1024


class PreviewCache:
    """Previews on disk under ``directory`` (created, private to the user, when first written).

    Args:
        directory: Where the entries live.
        recipe: What else decides a preview's content (e.g. its size), part of every key.
        max_bytes: The most the entries may take after :meth:`prune`.
    """

    def __init__(
        self, directory: Path, recipe: str = "", max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        self.directory = directory
        self.recipe = recipe
        self.max_bytes = max_bytes

    def key(self, path: str, stat: FileStat) -> str:
        """The name of ``path``'s entry while it is the file ``stat`` describes."""
        ident = f"{REVISION}\0{self.recipe}\0{stat.device}\0{stat.inode}\0{stat.size}\0"
        ident += f"{stat.mtime_ns}\0"
        return hashlib.sha256(ident.encode() + os.fsencode(path)).hexdigest()

    def _entry(self, key: str) -> Path:
        return self.directory / key[:2] / key

    def get(self, key: str) -> Preview | None:
        """The entry ``key``, or ``None`` when there is none or it cannot be read."""
        entry = self._entry(key)
        try:
            blob = entry.read_bytes()
        except OSError:
            return None
        # Renewed on use: pruning removes what was not used for the longest time.
        with contextlib.suppress(OSError):
            os.utime(entry)
        head, sep, data = blob.partition(b"\n")
        try:
            meta = json.loads(head)
            preview = Preview(PreviewKind(meta["kind"]), meta["mediatype"], data, meta["note"])
        except (ValueError, KeyError, TypeError):
            return None
        return preview if sep else None

    def put(self, key: str, preview: Preview) -> None:
        """Store ``preview`` as the entry ``key`` (nothing is stored when the disk refuses:
        the cache only saves work)."""
        entry = self._entry(key)
        head = {"kind": preview.kind.value, "mediatype": preview.mediatype, "note": preview.note}
        blob = json.dumps(head).encode() + b"\n" + preview.data
        with contextlib.suppress(OSError):
            # Private: the pictures show what the user's files hold.
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            entry.parent.mkdir(mode=0o700, exist_ok=True)
            save_whole(entry, blob, durable=False)

    def prune(self) -> int:
        """Remove the least recently used entries until they take at most ``max_bytes``.

        Returns:
            The number of entries removed.
        """
        entries = []
        total = 0
        with contextlib.suppress(OSError):
            for sub in os.scandir(self.directory):
                if not sub.is_dir(follow_symlinks=False):
                    continue
                for item in os.scandir(sub.path):
                    with contextlib.suppress(OSError):
                        st = item.stat(follow_symlinks=False)
                        entries.append((st.st_mtime_ns, st.st_size, Path(item.path)))
                        total += st.st_size
        removed = 0
        entries.sort()
        for _, size, path in entries:
            if total <= self.max_bytes:
                break
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
            total -= size
        return removed
