"""Action logs an attacker could write, made from a genuine one: each must be refused by
``isccd dedupe --undo`` with a message and exit 2, touching nothing.

Some are written without the key (hand-made, or a genuine log edited): their MAC is missing or
wrong. Others are signed with the real key, as if the key had leaked or dedupe had a bug: they
must still be refused by the checks of every field. Used by ``tests/chaos/test_crafted_logs.py``
and ``bench/chaos.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from isccd.dedupe.log import MAC_FIELD, signed_line, split_line
from isccd.dedupe.logkey import mac


@dataclass(frozen=True, slots=True)
class Crafted:
    """One crafted log.

    Attributes:
        name: What it tries.
        data: The log's bytes.
        says: A part of the message it must be refused with.
    """

    name: str
    data: bytes
    says: str


def _records(lines: list[bytes]) -> list[dict[str, Any]]:
    out = []
    for line in lines:
        parts = split_line(line)
        assert parts is not None
        out.append(json.loads(parts[0]))
    return out


def _unsigned(records: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def _signed(key: bytes, records: list[dict[str, Any]]) -> bytes:
    return b"".join(signed_line(key, r) for r in records)


def _raw_signed(key: bytes, bodies: list[bytes]) -> bytes:
    """Lines of the JSON objects given as bytes (what ``json.dumps`` would not write), with
    their MACs."""
    return b"".join(body[:-1] + MAC_FIELD + mac(key, body).encode() + b'"}\n' for body in bodies)


def crafted_logs(genuine: bytes, key: bytes, outside: str) -> list[Crafted]:
    """Crafted logs made from ``genuine`` (a log of one link run: a run record, an intent, its
    outcome), signed with ``key`` where said; ``outside`` is a file outside every root that
    a log tries to make undo unlink, overwrite or copy."""
    lines = genuine.splitlines()
    records = _records(lines)
    intent_at = next(i for i, r in enumerate(records) if r["op"] == "intent")

    def edit(**changes: Any) -> list[dict[str, Any]]:
        out = [dict(r) for r in records]
        out[intent_at].update(changes)
        return out

    def drop(field: str) -> list[dict[str, Any]]:
        out = edit()
        del out[intent_at][field]
        return out

    signed: list[tuple[str, Callable[[], list[dict[str, Any]]], str]] = [
        ("temp outside the folder", lambda: edit(temp="../../../" + outside), "temp is not"),
        ("temp absolute", lambda: edit(temp=outside), "temp is not a temporary name"),
        ("temp a dotdot", lambda: edit(temp=".."), "temp is not a temporary name"),
        ("path outside its root", lambda: edit(path=outside), "not beneath its root"),
        ("kept file outside", lambda: edit(kept=outside), "not beneath its root"),
        (
            "path not normalized",
            lambda: edit(path=records[intent_at]["root"] + "/a/../b"),
            "normalized",
        ),
        ("relative root", lambda: edit(root="root"), "normalized absolute path"),
        ("empty digest", lambda: edit(blake3=""), "whole BLAKE3 digest"),
        ("short digest", lambda: edit(blake3="ab"), "whole BLAKE3 digest"),
        ("no digest", lambda: edit(blake3=None), "names no digest"),
        (
            "uppercase digest",
            lambda: edit(blake3=records[intent_at]["blake3"].upper()),
            "whole BLAKE3 digest",
        ),
        ("mode of a directory", lambda: edit(mode=0o40755), "mode of a regular file"),
        ("mode a string", lambda: edit(mode="4755"), "mode is not an integer"),
        ("id a string", lambda: edit(id="1"), "id is not an integer"),
        ("id zero", lambda: edit(id=0), "id is not an integer"),
        ("id a bool", lambda: edit(id=True), "id is not an integer"),
        ("size negative", lambda: edit(size=-1), "size is not an integer"),
        ("size huge", lambda: edit(size=2**70), "size is not an integer"),
        ("inode a float", lambda: edit(inode=1.5), "inode is not an integer"),
        ("uid -1", lambda: edit(uid=2**32 - 1), "uid is not an integer"),
        ("path a list", lambda: edit(path=["/etc/passwd"]), "path is not a string"),
        ("path with NUL", lambda: edit(path=records[intent_at]["path"] + "\0x"), "normalized"),
        (
            "path lone surrogate",
            lambda: edit(path=records[intent_at]["path"] + "\ud800"),
            "not a file name",
        ),
        ("unknown action", lambda: edit(action="chmod"), "action is not an action"),
        ("move without target", lambda: edit(action="move", temp=None), "names no target"),
        (
            "move target outside its folder",
            lambda: edit(action="move", temp=None, target=outside, target_root="/nonexistent"),
            "not beneath the --move folder",
        ),
        ("a field more", lambda: edit(setuid=True), "fields are not those"),
        ("a field less", lambda: drop("mode"), "fields are not those"),
        (
            "unknown op",
            lambda: [*records, {"op": "exec", "run": records[0]["run"], "seq": len(records)}],
            "not one dedupe writes",
        ),
        (
            "outcome of no action",
            lambda: [
                *records,
                {"op": "done", "run": records[0]["run"], "seq": len(records), "id": 99},
            ],
            "never logged",
        ),
        (
            "replayed intent",
            lambda: [*records[: intent_at + 1], records[intent_at], *records[intent_at + 1 :]],
            "was due",
        ),
        ("records reordered", lambda: [records[0], *reversed(records[1:])], "was due"),
        (
            "seq a string",
            lambda: [{**r, "seq": str(r["seq"])} for r in records],
            "no record number",
        ),
        (
            "reason a number",
            lambda: [*records[:-1], {**records[-1], "reason": 7}],
            "reason is not a string",
        ),
        (
            "undone of a run that is no string",
            lambda: [
                *records,
                {"op": "undone", "run": records[0]["run"], "seq": len(records), "of": 1, "id": 1},
            ],
            "of is not a string",
        ),
        ("gid huge", lambda: edit(gid=2**40), "gid is not an integer"),
        ("atime a string", lambda: edit(atime_ns="now"), "atime_ns is not an integer"),
        ("run not started", lambda: records[1:], "was due"),
        ("format 1", lambda: [{**records[0], "version": 1}, *records[1:]], "log format 1"),
        ("run id not hex", lambda: [{**r, "run": "../../x"} for r in records], "names no run"),
    ]
    out = [Crafted(f"signed: {name}", _signed(key, make()), says) for name, make, says in signed]
    deep = b'{"op":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    out += [
        Crafted("signed: nested 100,000 deep", _raw_signed(key, [deep]), "not JSON"),
        Crafted("signed: NaN", _raw_signed(key, [b'{"op":"run","time":NaN}']), "holds NaN"),
        Crafted("signed: not JSON", _raw_signed(key, [b'{"op":}']), "not JSON"),
        Crafted("unsigned: the setuid copy", _unsigned(edit(mode=0o104755)), "carries no MAC"),
        Crafted(
            "unsigned: temp outside", _unsigned(edit(temp="../../../" + outside)), "carries no MAC"
        ),
        Crafted(
            "unsigned: a format-1 log",
            _unsigned([{k: v for k, v in r.items() if k not in ("run", "seq")} for r in records]),
            "carries no MAC",
        ),
        Crafted("wrong MAC: one digit changed", _flip_mac(genuine), "MAC is wrong"),
        Crafted("wrong MAC: another key", _signed(bytes(32), records), "MAC is wrong"),
        Crafted(
            "wrong MAC: a field edited", genuine.replace(b'"uid":', b'"uid": '), "MAC is wrong"
        ),
        Crafted(
            "missing MAC field",
            b"\n".join(split_line(line)[0] for line in lines) + b"\n",  # type: ignore[index]
            "carries no MAC",
        ),
        Crafted("NUL byte in a line", genuine.replace(b'"op"', b'"o\0p"', 1), "NUL byte"),
        Crafted("binary junk", bytes(range(1, 256)) + b"\n", "carries no MAC"),
        Crafted("a huge line", b"x" * 5_000_000 + b"\n", "carries no MAC"),
        Crafted("invalid UTF-8", b'{"op":"\xff\xfe"}\n', "carries no MAC"),
    ]
    return out


def _flip_mac(genuine: bytes) -> bytes:
    lines = genuine.splitlines()
    last = lines[-1]
    digit = last[-3:-2]
    lines[-1] = last[:-3] + (b"0" if digit != b"0" else b"1") + last[-2:]
    return b"\n".join(lines) + b"\n"
