"""The action log: an append-only JSON Lines file of everything ``--apply`` and ``--undo`` did.

Each action is written twice: an ``intent`` record, on disk (``fsync``) before the file is
touched, with everything needed to check and revert it, and a ``done`` record once it
is complete (or ``failed``: nothing was changed). An interrupt at any moment, even SIGKILL,
leaves each file untouched or fully done, and an intent without its ``done`` says which file
to look at: :mod:`isccd.dedupe.undo` looks and settles it. Skipped files get a ``skip``
record; undo adds ``undone`` (or ``not_undone``, with the reason) records to the same log, so
running it twice is harmless.

Several runs may share one log (``--log FILE`` given to each, an undo appending to the log it
undoes): each run has a random id, its records are numbered from 0 (``seq``), and its actions
from 1 (``id``), so an action is named by its run and id, whatever else writes the log. Each
line is appended whole under an exclusive ``flock`` of the log; a line a killed writer left
cut short at the end is cut off by the next writer (under the lock), and a write that fails (a
full disk) is taken back and raises :class:`~isccd.errors.ActionLogError`: the caller stops
before its next action.

Every line ends with its MAC (:mod:`isccd.dedupe.logkey`), over the bytes before it::

    {"op":"run","run":R,"seq":0,"version":2,"time":...,"pid":...,"action":"link","apply":true,
     "mac":...}
    {"op":"intent","run":R,"seq":1,"id":1,"action":"link","path":...,"root":...,"kept":...,
     "kept_root":...,"device":...,"inode":...,"size":...,"mtime_ns":...,"atime_ns":...,
     "mode":...,"uid":...,"gid":...,"blake3":...,"temp":...,"target":...,"target_root":...,
     "mac":...}
    {"op":"done","run":R,"seq":2,"id":1,"mac":...}
    {"op":"failed","run":R,"seq":3,"id":2,"reason":...,"mac":...}
    {"op":"skip","run":R,"seq":4,"path":...,"reason":...,"mac":...}
    {"op":"undone","run":U,"seq":1,"of":R,"id":1,"reason":...,"mac":...}   (or "not_undone")

:mod:`isccd.dedupe.logread` reads a log back, trusting nothing it has not verified.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from isccd.dedupe.logkey import mac, verifies
from isccd.dedupe.plan import Action
from isccd.errors import ActionLogError

#: The version of the log format (1: before lines were authenticated and runs numbered).
LOG_VERSION = 2
#: What precedes the MAC at the end of every line.
MAC_FIELD = b',"mac":"'
_OPEN = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
#: Bytes read to find the first line of a log being continued (a ``run`` record is short).
_HEAD = 64 * 1024


@dataclass(frozen=True, slots=True)
class Intent:
    """An action about to be done, as logged before doing it.

    Attributes:
        id: Its number in its run (from 1; a run and this number name it in a log).
        action: What is done.
        path: The name acted on.
        root: Its root.
        kept: The kept file's name.
        kept_root: The kept file's root.
        device: The victim's ``st_dev``.
        inode: The victim's ``st_ino``.
        size: Its size.
        mtime_ns: Its modification time.
        atime_ns: Its access time.
        mode: Its ``st_mode``.
        uid: Its owner.
        gid: Its group.
        blake3: Hex BLAKE3 of its content, computed just before (``None`` for near files).
        temp: The temporary name used in its directory (link, reflink).
        target: Where it is moved (move).
        target_root: The ``--move`` folder (move).
    """

    id: int
    action: Action
    path: str
    root: str
    kept: str
    kept_root: str
    device: int
    inode: int
    size: int
    mtime_ns: int
    atime_ns: int
    mode: int
    uid: int
    gid: int
    blake3: str | None = None
    temp: str | None = None
    target: str | None = None
    target_root: str | None = None


@dataclass(frozen=True, slots=True)
class LoggedAction:
    """An intent and how it ended, as read back from a log.

    Attributes:
        intent: The intent.
        run: The run that logged it (its id).
        outcome: ``"done"``, ``"failed"`` or ``None`` when the run was interrupted before it
            said (the file is untouched or fully done: look).
        undone: ``"undone"``, ``"not_undone"`` or ``None`` (no undo tried yet).
    """

    intent: Intent
    run: str
    outcome: str | None
    undone: str | None


#: Compact, ASCII JSON (made once: ``json.dumps`` with options makes an encoder per line).
_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)
#: The fields of an intent record, in order.
_INTENT_FIELDS = tuple(f.name for f in fields(Intent))


def signed_line(key: bytes, record: dict[str, Any]) -> bytes:
    """One log line: ``record`` as compact JSON, its MAC appended as the last field."""
    raw = _ENCODER.encode(record).encode("ascii")
    return raw[:-1] + MAC_FIELD + mac(key, raw).encode("ascii") + b'"}\n'


def split_line(line: bytes) -> tuple[bytes, bytes] | None:
    """A line's body (the JSON it authenticates) and its MAC, or ``None`` if it has none."""
    at = line.rfind(MAC_FIELD)
    if at < 0 or not line.endswith(b'"}'):
        return None
    return line[:at] + b"}", line[at + len(MAC_FIELD) : -2]


class _DiskFullError(OSError):
    """A short write: the disk filled up after the first ``kept`` bytes of whole lines."""

    def __init__(self, kept: int) -> None:
        super().__init__(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.kept = kept


def _write_all(fd: int, data: bytes) -> None:
    """Append ``data`` (whole lines); a short write (the disk filled up) is an ``ENOSPC``
    error that says how many bytes of whole lines it wrote."""
    written = os.write(fd, data)
    if written != len(data):
        raise _DiskFullError(data.rfind(b"\n", 0, written) + 1)


class ActionLog:
    """The writer of one run's records in a log file (appends; an existing log is continued,
    also by other runs at the same time)."""

    def __init__(self, path: Path, key: bytes) -> None:
        """Open (or create, mode 0600) ``path`` for appending, as a new run.

        Args:
            path: The log.
            key: The action-log key (:func:`isccd.dedupe.logkey.load_key`).

        Raises:
            ActionLogError: It cannot be opened, or it holds lines not authenticated with
                ``key`` (an older isccd's log, another state directory's): a run continuing it
                would make it a log no undo accepts.
        """
        self.path = path
        self.run_id = secrets.token_hex(8)
        self._key = key
        self._seq = 0
        self._ids = 0
        #: Intent and skip lines not yet written: they go to the log together, in one write
        #: under one lock, at the next :meth:`sync` (before any of their actions), or before
        #: the next line written at once.
        self._held: list[bytes] = []
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(path, _OPEN, 0o600)
        except OSError as exc:
            raise ActionLogError(
                f"the action log {path} cannot be opened: {exc.strerror}"
            ) from None
        try:
            with self._locked():
                self._check_continued()
        except BaseException:
            os.close(self._fd)
            raise

    @contextlib.contextmanager
    def _locked(self) -> Iterator[int]:
        """Hold the log's lock; yields its length, a cut-short last line cut off."""
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except OSError as exc:
            raise ActionLogError(
                f"the action log {self.path} cannot be locked: {exc.strerror}"
            ) from None
        try:
            yield self._cut_torn_tail()
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _cut_torn_tail(self) -> int:
        """Cut off a last line without its newline (a writer killed while writing it: its
        action had not started); the log's length."""
        end = os.fstat(self._fd).st_size
        if end == 0 or os.pread(self._fd, 1, end - 1) == b"\n":
            return end
        start = max(0, end - _HEAD)
        while True:
            chunk = os.pread(self._fd, end - start, start)
            at = chunk.rfind(b"\n")
            if at >= 0 or start == 0:
                keep = start + at + 1
                break
            start = max(0, start - _HEAD)
        try:
            os.ftruncate(self._fd, keep)
        except OSError as exc:
            raise ActionLogError(
                f"the action log {self.path} cannot be repaired: {exc.strerror}"
            ) from None
        return keep

    def _check_continued(self) -> None:
        head = os.pread(self._fd, _HEAD, 0)
        if not head:
            return
        parts = split_line(head.split(b"\n", 1)[0])
        if parts is None or not verifies(self._key, *parts):
            raise ActionLogError(
                f"the action log {self.path} was not written with this state directory's key "
                "(or by an older isccd): choose another --log"
            )

    def _line(self, record: dict[str, Any]) -> bytes:
        """The next line of this run: ``record`` numbered and signed."""
        line = signed_line(
            self._key, {"op": record["op"], "run": self.run_id, "seq": self._seq} | record
        )
        self._seq += 1
        return line

    def _write(self, record: dict[str, Any], *, sync: bool) -> None:
        """Append the lines held back and ``record``'s, under the log's lock."""
        self._append(self._line(record), sync=sync)

    def _append(self, line: bytes, *, sync: bool) -> None:
        """Append the lines held back, then ``line``, in one write under the log's lock (and
        ``fsync`` when ``sync``); of a write that fails, only the whole lines it wrote first
        stay (a full disk), none when it wrote nothing.

        Raises:
            ActionLogError: They cannot all be written.
        """
        data = b"".join(self._held) + line
        self._held.clear()
        if not data and not sync:
            return
        with self._locked() as end:
            try:
                if data:
                    _write_all(self._fd, data)
                if sync:
                    os.fsync(self._fd)
            except OSError as exc:
                # Take back what is not whole lines (under the lock: nobody wrote after
                # them), so that the log stays a sequence of whole lines; the lines kept
                # are intents not acted on (the sync their actions wait for failed) or skips.
                kept = exc.kept if isinstance(exc, _DiskFullError) else 0
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, end + kept)
                raise ActionLogError(
                    f"the action log {self.path} cannot be written: {exc.strerror}"
                ) from None

    def run(self, action: Action | None, *, apply: bool) -> None:
        """Mark the start of a run (or of an undo, ``action`` ``None``).

        Raises:
            ActionLogError: It cannot be written (nothing was done yet).
        """
        record = {"op": "run", "version": LOG_VERSION, "time": time.time(), "pid": os.getpid()}
        self._write({**record, "action": action, "apply": apply}, sync=True)

    def next_id(self) -> int:
        """A fresh action number (unique in this run)."""
        self._ids += 1
        return self._ids

    def intent(self, intent: Intent) -> None:
        """Record an action before doing it; :meth:`sync` before doing it (the line is held
        back until then, or until a line written at once: an intent reaches the log only with
        the sync that must precede its action).

        Raises:
            ActionLogError: It cannot be written: do not do it (raised by :meth:`sync`).
        """
        record = {"op": "intent"} | {name: getattr(intent, name) for name in _INTENT_FIELDS}
        self._held.append(self._line(record))

    def sync(self) -> None:
        """Write the lines held back and put everything written so far on disk (``fsync``).

        Raises:
            ActionLogError: They cannot all be written, or the log cannot be synced: do not
                act on any of them.
        """
        if self._held:
            self._append(b"", sync=True)
            return
        try:
            os.fsync(self._fd)
        except OSError as exc:
            raise ActionLogError(
                f"the action log {self.path} cannot be synced: {exc.strerror}"
            ) from None

    def outcome(
        self, action_id: int, op: str, reason: str | None = None, *, of: str | None = None
    ) -> None:
        """Record how an action ended (``done``, ``failed``, ``undone``, ``not_undone``).

        Not synced: after a power loss a missing outcome is settled by looking at the file.

        Args:
            action_id: The action's id in its run.
            op: How it ended.
            reason: Why (optional).
            of: The run that did the action, for ``undone`` and ``not_undone``.

        Raises:
            ActionLogError: It cannot be written.
        """
        record: dict[str, Any] = {"op": op}
        if of is not None:
            record["of"] = of
        record["id"] = action_id
        if reason is not None:
            record["reason"] = reason
        self._write(record, sync=False)

    def skip(self, path: str, reason: str) -> None:
        """Record a file skipped untouched (held back with the intents, see :meth:`intent`).

        Raises:
            ActionLogError: It cannot be written (raised by :meth:`sync`).
        """
        self._held.append(self._line({"op": "skip", "path": path, "reason": reason}))

    def close(self) -> None:
        """Flush to disk and close (idempotent).

        Raises:
            ActionLogError: It cannot be flushed (it is closed all the same).
        """
        if self._fd < 0:
            return
        try:
            self._append(b"", sync=False)
        except ActionLogError:
            os.close(self._fd)
            self._fd = -1
            raise
        fd, self._fd = self._fd, -1
        try:
            os.fsync(fd)
        except OSError as exc:
            raise ActionLogError(
                f"the action log {self.path} cannot be synced: {exc.strerror}"
            ) from None
        finally:
            os.close(fd)

    def __enter__(self) -> ActionLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
