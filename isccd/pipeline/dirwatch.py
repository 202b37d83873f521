"""Duplicate folders kept current by the daemon: the ``dir.dup`` and ``dir.resolved`` events.

The daemon keeps every folder's sums (its files with content, their bytes, and the multiset
hash of their contents, :class:`isccd.pipeline.folders.FolderTree`) in memory, a few dozen bytes
a folder, loaded from the store once (:meth:`FolderWatch.load`) and kept current from the
committed ``file.*`` events (:meth:`FolderWatch.note`): a file added, changed, moved or removed
changes the sums of its folder and of the folders above it, nothing else. A folder whose sums
changed is **dirty** until it has been quiet for ``settle`` seconds; then
(:meth:`FolderWatch.settle`) the exact duplicate folders are found again from the sums (the
contents of folders with equal sums compared through the store, and remembered until their
sums change) and compared with what was announced:

- a folder that became an exact duplicate of others gets a ``dir.dup`` naming them (the others
  get none: the newcomer's event names them, as a file joining copies is announced; when no
  folder of the group changed, as when it was shown through its parents until then, each
  gets one);
- a folder that stopped being one (changed, emptied, or the others went) gets a
  ``dir.resolved`` naming the others it had;
- a folder that is now shown through its parent (its parent became a duplicate of the other's
  parent) is dropped silently: the parent's ``dir.dup`` says it.

A copy made file by file is announced once, when its last file has settled, and at its
highest level, not once per file or per subfolder. Nothing is decided for a folder while it,
or a folder it is or was a duplicate of, is still dirty. What was true when the daemon started
is taken as announced: a restart announces nothing again. Only this host's folders are
watched (a fleet's duplicate folders across hosts are what ``dupes --dirs`` lists).

Runs on the store's owner thread, as part of the index.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from isccd.model import Event, EventType
from isccd.pipeline.folders import Folder, FolderTree, fingerprint
from isccd.pipeline.peers import size_of
from isccd.store import FolderFile, Store
from isccd.store.base import split_path

#: The events that change a folder's files.
FILE_EVENTS = frozenset(
    {EventType.FILE_ADDED, EventType.FILE_CHANGED, EventType.FILE_MOVED, EventType.FILE_REMOVED}
)
#: Others named in one folder event at most (the count of all is given too).
OTHERS_NAMED = 100


@dataclass(frozen=True, slots=True)
class FolderEvent:
    """A ``dir.*`` event to log.

    Attributes:
        type: ``dir.dup`` or ``dir.resolved``.
        root: The folder's root.
        path: The folder.
        data: The payload.
    """

    type: EventType
    root: str
    path: str
    data: dict[str, Any]


class FolderWatch:
    """The folders' sums of one host, and the duplicate folders announced.

    Args:
        settle: Seconds a folder must be quiet before it is decided on.
    """

    def __init__(self, settle: float) -> None:
        self.quiet = settle
        self._tree: FolderTree | None = None
        self._store: Store | None = None
        self._announced: dict[Folder, frozenset[Folder]] = {}
        self._dirty: dict[Folder, float] = {}
        self._direct: set[Folder] = set()  # dirty folders whose own files changed
        # Contents compared once per state of a folder's sums: (files, size, sum) -> digest.
        self._verified: dict[Folder, tuple[tuple[int, int, int], bytes]] = {}
        #: What was announced changed since it was last kept in the store (:meth:`saved`).
        self.unsaved = False

    def load(self, store: Store) -> None:
        """Read every live file of this host once, and what was announced (kept in the store
        with the events that said it); a store that keeps none takes the duplicate folders
        found now as announced.

        The files are counted into the folders' sums a chunk at a time and not kept: the
        contents of folders with equal sums are read from the store, as after any change. A
        million files' rows held at once took about 480 MB, and the allocator kept them from
        the system for as long as the daemon ran."""
        tree = FolderTree([], self._contents)
        self._tree, self._store = tree, store
        for chunk in store.folder_files(chunk=8192):
            for f in chunk:
                tree.count(f, 1)  # an empty file counts for nothing
        shown, _, _ = tree.exact_groups()
        saved = _saved(store.get_property(announced_property(store.host)))
        if saved is None:
            self._announced = _groups(tree, shown)
            self.unsaved = True
        else:
            self._announced = {}
            for (host, root, path), others in saved.items():
                tree.folder(host, path, root)
                for other_host, other_root, other_path in others:
                    tree.folder(other_host, other_path, other_root)
                self._announced[(host, path)] = frozenset((h, p) for h, _, p in others)

    def due(self) -> float | None:
        """When the first dirty folder will have been quiet long enough (Unix time), or
        ``None`` when none is dirty."""
        if not self._dirty:
            return None
        return min(self._dirty.values()) + self.quiet

    def note(self, events: Sequence[Event], store: Store, now: float) -> bool:
        """Apply committed events to the sums (other hosts' are ignored).

        Returns:
            Some folder became dirty.
        """
        tree = self._tree
        if tree is None:
            return False
        host = store.host
        changed = False
        for event in events:
            if event.type not in FILE_EVENTS or event.host not in ("", host):
                continue
            for file, sign in _counted(event, store):
                chain = tree.count(file, sign)
                for node in chain:
                    self._dirty[tree.key(node)] = now
                if chain:
                    self._direct.add(tree.key(chain[0]))
                    changed = True
        return changed

    def settle(self, now: float, store: Store) -> list[FolderEvent]:
        """The events of the folders quiet for ``settle`` seconds whose duplicates changed."""
        tree = self._tree
        if tree is None or not self._dirty:
            return []
        if all(now - t < self.quiet for t in self._dirty.values()):
            return []
        self._store = store
        shown, member_of, covered_by = tree.exact_groups()
        now_groups = _groups(tree, shown)
        # What changed: the folders above a changed file, and those below a folder whose own
        # files changed (its subfolders are now shown, or no longer, through it).
        direct = {path for _, path in self._direct}
        dirty = set(self._dirty)
        touched = dirty | {
            k for k in set(self._announced) | set(now_groups) if _below(k[1], direct)
        }
        covered = {tree.key(n) for n in member_of} | {tree.key(n) for n in covered_by}
        covered -= set(now_groups)
        busy = {k for k, t in self._dirty.items() if now - t < self.quiet}
        events: list[FolderEvent] = []
        for folder in sorted(set(self._announced) | set(now_groups)):
            before, after = self._announced.get(folder), now_groups.get(folder)
            if before == after:
                continue
            if before is not None and after is not None and before & after:
                self._announced[folder] = after  # the group grew or shrank: no news
                self.unsaved = True
                continue
            if {folder, *(before or ()), *(after or ())} & busy:
                continue
            self.unsaved = True
            if before is not None:
                self._announced.pop(folder)
                if folder not in covered:
                    events.append(self._resolved(folder, before, folder in dirty))
            if after is not None:
                self._announced[folder] = after
                # The folders that changed are the news; the others are named by them, unless
                # none of the group changed (it was shown through its parents until now).
                if folder in touched or not (after & touched):
                    events.append(self._dup(folder, after))
        self._dirty = {k: t for k, t in self._dirty.items() if k in busy}
        self._direct &= set(self._dirty)
        return events

    def saved(self) -> str:
        """What was announced, as the store keeps it (:func:`announced_property`), and taken
        as kept."""
        tree = self._tree
        assert tree is not None
        self.unsaved = False

        def place(folder: Folder) -> list[str]:
            node = tree.nodes[tree.slot[folder]]
            return [node.host, node.root, node.path]

        return json.dumps(
            [[place(f), [place(o) for o in sorted(others)]]
             for f, others in sorted(self._announced.items())],
            separators=(",", ":"),
        )  # fmt: skip

    # -- payloads --------------------------------------------------------------------------

    def _summary(self, folder: Folder) -> dict[str, Any]:
        tree = self._tree
        assert tree is not None
        node = tree.nodes[tree.slot[folder]]
        return {"path": node.path, "root": node.root, "host": node.host, "files": node.files,
                "size": node.size}  # fmt: skip

    def _dup(self, folder: Folder, others: frozenset[Folder]) -> FolderEvent:
        mine = self._summary(folder)
        named = [self._summary(o) for o in sorted(others)[:OTHERS_NAMED]]
        data = {"kind": "exact", "files": mine["files"], "size": mine["size"],
                "others": named, "count": len(others)}  # fmt: skip
        return FolderEvent(EventType.DIR_DUP, mine["root"], folder[1], data)

    def _resolved(self, folder: Folder, others: frozenset[Folder], changed: bool) -> FolderEvent:
        mine = self._summary(folder)
        reason = "removed" if mine["files"] == 0 else "changed" if changed else "others_changed"
        named = [self._summary(o) for o in sorted(others)[:OTHERS_NAMED]]
        data = {"kind": "exact", "reason": reason, "files": mine["files"], "size": mine["size"],
                "others": named, "count": len(others)}  # fmt: skip
        return FolderEvent(EventType.DIR_RESOLVED, mine["root"], folder[1], data)

    def _contents(self, host: str, path: str) -> bytes:
        """A digest of the sorted contents below a folder, read from the store once for each
        state of its sums."""
        tree, store = self._tree, self._store
        assert tree is not None and store is not None
        node = tree.nodes[tree.slot[(host, path)]]
        state = (node.files, node.size, node.sum)
        known = self._verified.get((host, path))
        if known is not None and known[0] == state:
            return known[1]
        digest = fingerprint(
            bytes.fromhex(s.record.datahash or "")
            for s in store.files_under(path)
            if s.record.datahash is not None and size_of(s.record) != 0
        )
        self._verified[(host, path)] = (state, digest)
        return digest


def announced_property(host: str) -> str:
    """The store property keeping the duplicate folders announced on ``host``."""
    return f"folders_announced:{host}"


def _saved(text: str | None) -> dict[tuple[str, str, str], list[tuple[str, str, str]]] | None:
    """The announced folders a store kept, or ``None`` when it kept none or they cannot be
    read (then what holds now is taken as announced)."""
    if text is None:
        return None
    try:
        items = json.loads(text)
        return {
            (str(f[0]), str(f[1]), str(f[2])): [(str(o[0]), str(o[1]), str(o[2])) for o in others]
            for f, others in items
        }
    except (ValueError, TypeError, IndexError, KeyError):
        return None


def _below(path: str, folders: set[str]) -> bool:
    """Whether a folder above ``path`` is one of ``folders``."""
    while "/" in path.rstrip("/"):
        path = path.rsplit("/", 1)[0] or "/"
        if path in folders:
            return True
        if path == "/":
            return False
    return False


def _groups(tree: FolderTree, shown: list[list[int]]) -> dict[Folder, frozenset[Folder]]:
    """Each folder of the groups shown, with the others of its group."""
    found: dict[Folder, frozenset[Folder]] = {}
    for group in shown:
        keys = [tree.key(n) for n in group]
        for key in keys:
            found[key] = frozenset(k for k in keys if k != key)
    return found


def _file(root: str, path: str, brief: Any, host: str) -> FolderFile | None:
    """A file's place and content as the sums count it, from an event's ``datahash`` and
    ``size`` (``None`` when they are not there)."""
    if not isinstance(brief, dict):
        return None
    digest, size = brief.get("datahash"), brief.get("size")
    if (digest is not None and not isinstance(digest, str)) or not isinstance(size, int | None):
        return None
    directory, name = split_path(path)
    raw = bytes.fromhex(digest) if digest else None
    return FolderFile(0, host, root, directory, name, size, raw, None)


def _counted(event: Event, store: Store) -> list[tuple[FolderFile, int]]:
    """The files an event takes away from (-1) and adds to (1) the folders' sums."""
    host, data = store.host, event.data
    now = _file(event.root, event.path, data, host)
    match event.type:
        case EventType.FILE_ADDED:
            return [(now, 1)] if now is not None else []
        case EventType.FILE_REMOVED:
            return [(now, -1)] if now is not None else []
        case EventType.FILE_CHANGED:
            was = _file(event.root, event.path, data.get("previous"), host)
            return [(f, s) for f, s in ((was, -1), (now, 1)) if f is not None]
        case EventType.FILE_MOVED:
            stored = store.file_at(event.path)
            if stored is None:
                return []
            record = stored.record
            brief = {"datahash": record.datahash, "size": size_of(record)}
            after = _file(event.root, event.path, brief, host)
            before = data.get("previous", brief)
            source = str(data.get("from", ""))
            was = _file(str(data.get("from_root", event.root)), source, before, host)
            return [(f, s) for f, s in ((was, -1), (after, 1)) if f is not None and source]
    return []
