"""The action log: an append-only JSON Lines file of everything ``--apply`` and ``--undo`` did.

Each action is written twice: an ``intent`` record, on disk (``fsync``) before the file is
touched, with everything needed to check and revert it, and a ``done`` record once it
is complete (or ``failed``: nothing was changed). An interrupt at any moment, even SIGKILL,
leaves each file untouched or fully done, and an intent without its ``done`` says which file
to look at: :mod:`isccd.dedupe.undo` looks and settles it. Skipped files get a ``skip``
record; undo adds ``undone`` (or ``not_undone``, with the reason) records to the same log, so
running it twice is harmless.

Records (one JSON object per line, ``op`` says which)::

    {"op": "run", "version": 1, "time": ..., "pid": ..., "action": "link", "apply": true}
    {"op": "intent", "id": 7, "action": "link", "path": ..., "root": ..., "kept": ...,
     "kept_root": ..., "device": ..., "inode": ..., "size": ..., "mtime_ns": ...,
     "atime_ns": ..., "mode": ..., "uid": ..., "gid": ..., "blake3": ..., "temp": ...,
     "target": ..., "target_root": ...}
    {"op": "done", "id": 7}
    {"op": "failed", "id": 7, "reason": ...}
    {"op": "skip", "path": ..., "reason": ...}
    {"op": "undone", "id": 7}   {"op": "not_undone", "id": 7, "reason": ...}
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from isccd.dedupe.plan import PLAN_VERSION, Action
from isccd.errors import PlanFileError


@dataclass(frozen=True, slots=True)
class Intent:
    """An action about to be done, as logged before doing it.

    Attributes:
        id: Its number in the log.
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
        outcome: ``"done"``, ``"failed"`` or ``None`` when the run was interrupted before it
            said (the file is untouched or fully done: look).
        undone: ``"undone"``, ``"not_undone"`` or ``None`` (no undo tried yet).
    """

    intent: Intent
    outcome: str | None
    undone: str | None


class ActionLog:
    """The writer of one log file (appends; an existing log is continued)."""

    def __init__(self, path: Path) -> None:
        """Open (or create, mode 0600) ``path`` for appending.

        Raises:
            OSError: It cannot be opened.
        """
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        self._fd = os.open(path, flags, 0o600)
        self._next = max((a.intent.id for a in read_log(path)), default=0) + 1

    def _write(self, record: dict[str, Any], *, sync: bool) -> None:
        line = json.dumps(record, ensure_ascii=True, separators=(",", ":")) + "\n"
        os.write(self._fd, line.encode("ascii"))
        if sync:
            os.fsync(self._fd)

    def run(self, action: Action | None, *, apply: bool) -> None:
        """Mark the start of a run (or of an undo, ``action`` ``None``)."""
        record = {"op": "run", "version": PLAN_VERSION, "time": time.time(), "pid": os.getpid()}
        self._write({**record, "action": action, "apply": apply}, sync=True)

    def next_id(self) -> int:
        """A fresh action number."""
        self._next += 1
        return self._next - 1

    def intent(self, intent: Intent) -> None:
        """Record an action before doing it; :meth:`sync` before doing it."""
        record = {"op": "intent"} | {f.name: getattr(intent, f.name) for f in fields(Intent)}
        self._write(record, sync=False)

    def sync(self) -> None:
        """Put everything written so far on disk (``fsync``)."""
        os.fsync(self._fd)

    def outcome(self, action_id: int, op: str, reason: str | None = None) -> None:
        """Record how an action ended (``done``, ``failed``, ``undone``, ``not_undone``).

        Not synced: after a power loss a missing outcome is settled by looking at the file.
        """
        record: dict[str, Any] = {"op": op, "id": action_id}
        if reason is not None:
            record["reason"] = reason
        self._write(record, sync=False)

    def skip(self, path: str, reason: str) -> None:
        """Record a file skipped untouched."""
        self._write({"op": "skip", "path": path, "reason": reason}, sync=False)

    def close(self) -> None:
        """Flush to disk and close (idempotent)."""
        if self._fd >= 0:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> ActionLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _record(line: bytes) -> tuple[str, Intent | int | None]:
    """One line: its ``op`` and its intent, or the id it is about (``None`` for others).

    Raises:
        ValueError, KeyError, TypeError: It is not a record.
    """
    record = json.loads(line)
    op = record["op"]
    if op == "intent":
        fields = {k: v for k, v in record.items() if k != "op"}
        fields["action"] = Action(fields["action"])
        return op, Intent(**fields)
    if op in ("done", "failed", "undone", "not_undone"):
        return op, int(record["id"])
    if op in ("run", "skip"):
        return op, None
    raise ValueError(f"unknown op {op!r}")


def read_log(path: Path) -> list[LoggedAction]:
    """Every action of a log, in order, with how it ended.

    A last line cut short by an interrupt is ignored (it was being written when the run was
    killed: its action had not started).

    Raises:
        PlanFileError: The file cannot be read, or a complete line is not a log record.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise PlanFileError(str(path), f"cannot be read: {exc.strerror}") from None
    lines = data.split(b"\n")
    intents: dict[int, Intent] = {}
    outcome: dict[int, str] = {}
    undone: dict[int, str] = {}
    for number, line in enumerate(lines[:-1], 1):
        try:
            op, value = _record(line)
        except (ValueError, KeyError, TypeError) as exc:
            message = f"line {number} is not an action record: {exc}"
            raise PlanFileError(str(path), message) from None
        if isinstance(value, Intent):
            intents[value.id] = value
        elif isinstance(value, int):
            (outcome if op in ("done", "failed") else undone)[value] = op
    return [LoggedAction(i, outcome.get(n), undone.get(n)) for n, i in intents.items()]
