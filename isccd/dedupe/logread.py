"""Reading an action log back for undo, trusting nothing that has not been verified.

A log is accepted only whole: every complete line must carry the MAC of its bytes under the
state directory's key (:mod:`isccd.dedupe.logkey`), each run's records must be numbered
0, 1, 2, ... with none missing or repeated, every outcome must name an action logged before
it, and every field must have its type and a sane value: paths absolute, normalized, free of
NUL bytes and beneath their root; a temporary name a plain name of dedupe's own pattern;
modes of regular files; digests of full length. The first line that fails says why, and
nothing is touched. Only a last line cut short (a run killed while writing it; its action had
not started) is left out.

Logs written before lines were authenticated (format 1, no MAC) are refused: undo cannot tell
them from a log written by hand.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from isccd.dedupe.log import LOG_VERSION, Intent, LoggedAction, split_line
from isccd.dedupe.logkey import MAC_HEX, verifies
from isccd.dedupe.plan import Action
from isccd.errors import PlanFileError
from isccd.fspath import is_below

_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_RUN_ID = re.compile(r"[0-9a-f]{16}")
_HEX_MAC = re.compile(rb"[0-9a-f]{%d}" % MAC_HEX)
_DIGEST = re.compile(r"[0-9a-f]{64}")
#: The temporary names apply uses (:func:`isccd.dedupe.apply.temp_name`): one plain name in
#: the victim's directory.
_TEMP = re.compile(r"\.isccd-dedupe-[0-9A-Za-z_-]{1,64}\.tmp")
_INT64 = 2**63
_UNSIGNED = 2**64
_ID = 2**62
_OWNER = 2**32 - 1  # (uid_t) -1 means "unchanged" to chown
_REASON = frozenset({"reason"})


class _Bad(Exception):
    """A record that is not what dedupe writes (the message says which field)."""


def _int(value: object, low: int, high: int, name: str) -> int:
    if type(value) is not int or not low <= value < high:
        raise _Bad(f"{name} is not an integer in [{low}, {high})")
    return value


def _str(value: object, name: str) -> str:
    if type(value) is not str:
        raise _Bad(f"{name} is not a string")
    return value


def _path(value: object, name: str) -> str:
    path = _str(value, name)
    try:
        encoded = os.fsencode(path)
    except UnicodeError:
        raise _Bad(f"{name} is not a file name") from None
    if b"\0" in encoded or path[:1] != "/" or path[:2] == "//" or os.path.normpath(path) != path:
        raise _Bad(f"{name} is not a normalized absolute path")
    return path


def _optional(check: Callable[[object, str], object]) -> Callable[[object, str], object]:
    return lambda value, name: None if value is None else check(value, name)


def _digest(value: object, name: str) -> str:
    if type(value) is not str or not _DIGEST.fullmatch(value):
        raise _Bad(f"{name} is not a whole BLAKE3 digest (64 lowercase hex digits)")
    return value


def _temp(value: object, name: str) -> str:
    if type(value) is not str or not _TEMP.fullmatch(value):
        raise _Bad(f"{name} is not a temporary name dedupe makes")
    return value


def _mode(value: object, name: str) -> int:
    mode = _int(value, 0, 2**32, name)
    if not stat.S_ISREG(mode):
        raise _Bad(f"{name} is not the mode of a regular file")
    return mode


def _action(value: object, name: str) -> Action:
    try:
        return Action(_str(value, name))
    except ValueError:
        raise _Bad(f"{name} is not an action") from None


_FIELDS: dict[str, Callable[[object, str], object]] = {
    "id": lambda v, n: _int(v, 1, _ID, n),
    "action": _action,
    "path": _path,
    "root": _path,
    "kept": _path,
    "kept_root": _path,
    "device": lambda v, n: _int(v, 0, _UNSIGNED, n),
    "inode": lambda v, n: _int(v, 0, _UNSIGNED, n),
    "size": lambda v, n: _int(v, 0, _INT64, n),
    "mtime_ns": lambda v, n: _int(v, -_INT64, _INT64, n),
    "atime_ns": lambda v, n: _int(v, -_INT64, _INT64, n),
    "mode": _mode,
    "uid": lambda v, n: _int(v, 0, _OWNER, n),
    "gid": lambda v, n: _int(v, 0, _OWNER, n),
    "blake3": _optional(_digest),
    "temp": _optional(_temp),
    "target": _optional(_path),
    "target_root": _optional(_path),
}


def _keys(
    record: dict[str, Any], required: set[str], optional: frozenset[str] = frozenset()
) -> None:
    keys = set(record) - {"op", "run", "seq"}
    if not required <= keys or not keys <= required | optional:
        odd = sorted((required - keys) | (keys - required - optional))
        raise _Bad(f"its fields are not those of its kind ({', '.join(odd)})")


def _intent(record: dict[str, Any]) -> Intent:
    _keys(record, set(_FIELDS))
    values = {name: check(record[name], name) for name, check in _FIELDS.items()}
    intent = Intent(**values)  # type: ignore[arg-type]
    if not is_below(intent.path, intent.root) or not is_below(intent.kept, intent.kept_root):
        raise _Bad("a path is not beneath its root")
    if intent.action is Action.MOVE:
        if intent.target is None or intent.target_root is None or intent.temp is not None:
            raise _Bad("a move names no target, or a temporary name")
        if not is_below(intent.target, intent.target_root):
            raise _Bad("the target is not beneath the --move folder")
    elif intent.temp is None or intent.target is not None or intent.target_root is not None:
        raise _Bad(f"a {intent.action.value} names no temporary name, or a target")
    elif intent.action is not Action.REFLINK and intent.blake3 is None:
        raise _Bad(f"a {intent.action.value} names no digest of the content")
    return intent


def _run(record: dict[str, Any]) -> None:
    _keys(record, {"version", "time", "pid", "action", "apply"})
    version = record["version"]
    if type(version) is not int or version != LOG_VERSION:
        raise _Bad(f"it is of log format {version!r}, not {LOG_VERSION}")
    if type(record["time"]) not in (int, float) or type(record["apply"]) is not bool:
        raise _Bad("its time or apply field has the wrong type")
    _int(record["pid"], 0, _INT64, "pid")
    if record["action"] is not None:
        _action(record["action"], "action")


class _Reader:
    """The state of one log read so far."""

    def __init__(self) -> None:
        self.next_seq: dict[str, int] = {}
        self.intents: dict[tuple[str, int], Intent] = {}
        self.outcome: dict[tuple[str, int], str] = {}
        self.undone: dict[tuple[str, int], str] = {}

    def take(self, record: object) -> None:
        if not isinstance(record, dict):
            raise _Bad("it is not a JSON object")
        op, run, seq = record.get("op"), record.get("run"), record.get("seq")
        if type(run) is not str or not _RUN_ID.fullmatch(run) or type(seq) is not int:
            raise _Bad("it names no run, or no record number")
        expected = self.next_seq.get(run, 0)
        if seq != expected or (seq == 0) != (op == "run"):
            raise _Bad(f"record {seq} of run {run} comes where record {expected} was due")
        self.next_seq[run] = seq + 1
        if op == "run":
            _run(record)
        elif op == "intent":
            intent = _intent(record)
            if (run, intent.id) in self.intents:
                raise _Bad(f"action {intent.id} of run {run} is logged twice")
            self.intents[run, intent.id] = intent
        elif op in ("done", "failed"):
            _keys(record, {"id"}, _REASON)
            self.outcome[self._about(run, record)] = op
        elif op in ("undone", "not_undone"):
            _keys(record, {"of", "id"}, _REASON)
            self.undone[self._about(_str(record["of"], "of"), record)] = op
        elif op == "skip":
            _keys(record, {"path", "reason"})
            _str(record["path"], "path")
        else:
            raise _Bad(f"its op {op!r} is not one dedupe writes")
        if "reason" in record:
            _str(record["reason"], "reason")

    def _about(self, run: str, record: dict[str, Any]) -> tuple[str, int]:
        key = (run, _int(record["id"], 1, _ID, "id"))
        if key not in self.intents:
            raise _Bad(f"it is about action {key[1]} of run {run}, which was never logged")
        return key

    def actions(self) -> list[LoggedAction]:
        return [
            LoggedAction(i, run, self.outcome.get((run, n)), self.undone.get((run, n)))
            for (run, n), i in self.intents.items()
        ]


def _authentic(key: bytes, line: bytes) -> bytes:
    """The body of ``line`` once its MAC verifies (no other byte of it is looked at before).

    Raises:
        _Bad: It has no MAC, or the wrong one.
    """
    if b"\0" in line:
        raise _Bad("it holds a NUL byte")
    parts = split_line(line)
    if parts is None or not _HEX_MAC.fullmatch(parts[1]):
        raise _Bad(
            "it carries no MAC: it was written by hand, or by an isccd from before action "
            "logs were authenticated, and undo cannot tell which"
        )
    if not verifies(key, *parts):
        raise _Bad(
            "its MAC is wrong: it was changed since isccd wrote it, or written with another "
            "state directory's key (undo with the --state or --config the run had)"
        )
    return parts[0]


def _read_bytes(path: Path) -> bytes:
    try:
        fd = os.open(path, _READ)
    except FileNotFoundError:
        raise PlanFileError(str(path), "no such action log") from None
    except OSError as exc:
        raise PlanFileError(str(path), f"cannot be read: {exc.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PlanFileError(str(path), "is not a regular file")
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    except OSError as exc:
        raise PlanFileError(str(path), f"cannot be read: {exc.strerror}") from None
    finally:
        os.close(fd)


def _no_constant(name: str) -> object:
    raise _Bad(f"it holds {name}")


def read_log(path: Path, key: bytes) -> list[LoggedAction]:
    """Every action of the log at ``path``, in order, with how it ended.

    Args:
        path: The log (never followed if it is a symbolic link).
        key: The action-log key its lines must be authenticated with.

    Raises:
        PlanFileError: It cannot be read, or a line is not an authentic, valid record (the
            message says which and why).
    """
    reader = _Reader()
    lines = _read_bytes(path).split(b"\n")
    for number, line in enumerate(lines[:-1], 1):
        try:
            reader.take(json.loads(_authentic(key, line), parse_constant=_no_constant))
        except _Bad as exc:
            why = str(exc)
        except (ValueError, RecursionError):
            why = "it is not JSON"
        else:
            continue
        raise PlanFileError(str(path), f"line {number} is refused, {why}; undo refuses the log")
    return reader.actions()
