"""Crafted plan files for ``isccd dedupe --plan``, as their author could write them.

:func:`crafted_plans` takes a valid plan of two copies under a watched root and returns the
plans made from it that must be refused (exit 2, one line, nothing touched): paths and roots
outside this host's roots (among them a private pair of copies the plan tries to remove), move
targets inside a watched root, NUL bytes, lone surrogates, deep nesting, huge and wrong numbers,
wrong types, broken JSON, and files that are not files. Shared by ``tests/chaos`` and
``bench/chaos.py``.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isccd.dedupe.planfile import plan_document
from tests.dedupe.conftest import plan_of, write

Document = dict[str, Any]


@dataclass(frozen=True)
class Crafted:
    """One crafted plan.

    Attributes:
        name: What it tries.
        content: The plan file's bytes (``None``: ``path`` is used as it is).
        path: A file to give as the plan instead (a FIFO, a device, a directory).
        args: The action arguments (default: ``--remove``).
    """

    name: str
    content: bytes | None
    path: Path | None = None
    args: tuple[str, ...] = field(default=("--remove",))


def _edit(document: Document, change: Callable[[Document], object]) -> bytes:
    doc = copy.deepcopy(document)
    change(doc)
    return json.dumps(doc).encode()


def _member(doc: Document, index: int = 1) -> dict[str, Any]:
    member: dict[str, Any] = doc["groups"][0]["members"][index]
    return member


def _set(index: int, **values: object) -> Callable[[Document], object]:
    return lambda doc: _member(doc, index).update(values)


def _nested(depth: int, inner: str = "{}") -> str:
    return '{"a":' * depth + inner + "}" * depth


def crafted_plans(valid: Document, root: Path, other: Path, private: Path) -> list[Crafted]:
    """The crafted plans (see the module docstring).

    Args:
        valid: A valid plan: one exact group of two copies under ``root``, the second removed.
        root: A watched root (the plan's).
        other: Another watched root.
        private: A folder outside every root holding ``a.bin`` and ``b.bin``, two copies.
    """
    doc = valid
    kept = _member(doc, 0)
    victim = _member(doc, 1)
    pa, pb = str(private / "a.bin"), str(private / "b.bin")
    st_a, st_b = Path(pa).stat(), Path(pb).stat()

    def as_private(d: Document, *, root_of: str) -> None:
        for member, path, st in ((_member(d, 0), pa, st_a), (_member(d, 1), pb, st_b)):
            member.update(path=path, root=root_of, device=st.st_dev, inode=st.st_ino,
                          size=st.st_size, mtime_ns=st.st_mtime_ns)  # fmt: skip

    def private_victim(d: Document) -> None:
        _member(d, 1).update(path=pb, device=st_b.st_dev, inode=st_b.st_ino,
                             size=st_b.st_size, mtime_ns=st_b.st_mtime_ns)  # fmt: skip

    r = str(root)
    return [
        # Outside this host's roots.
        Crafted(
            "a private pair under its own root",
            _edit(doc, lambda d: as_private(d, root_of=str(private))),
        ),
        Crafted(
            "a private pair under the root /", _edit(doc, lambda d: as_private(d, root_of="/"))
        ),
        Crafted(
            "a private pair under the parent of a root",
            _edit(doc, lambda d: as_private(d, root_of=str(root.parent))),
        ),
        Crafted("a private victim under the plan's root", _edit(doc, private_victim)),
        Crafted(
            "a victim path climbing out with ..", _edit(doc, _set(1, path=f"{r}/../private/b.bin"))
        ),
        Crafted(
            "a victim path with //", _edit(doc, _set(1, path=f"{r}//{Path(victim['path']).name}"))
        ),
        Crafted(
            "a victim path with /./", _edit(doc, _set(1, path=f"{r}/./{Path(victim['path']).name}"))
        ),
        Crafted("a victim path ending in /", _edit(doc, _set(1, path=victim["path"] + "/"))),
        Crafted("a relative victim path", _edit(doc, _set(1, path="b.bin"))),
        Crafted("the root itself as the victim", _edit(doc, _set(1, path=r))),
        Crafted("a root written with a trailing /", _edit(doc, _set(1, root=r + "/"))),
        Crafted(
            "a root spelt through a symbolic link",
            _edit(doc, _set(1, root=r + "-link", path=victim["path"].replace(r, r + "-link"))),
        ),
        Crafted("a link outside the root", _edit(doc, _set(1, links=[pb]))),
        Crafted(
            "a kept file outside the roots",
            _edit(doc, lambda d: _member(d, 0).update(path=pa, root=str(private))),
        ),
        Crafted(
            "a root with an escape sequence",
            _edit(doc, _set(1, root="/tmp/\x1b]0;owned\x07", path="/tmp/\x1b]0;owned\x07/x")),
        ),
        # Move targets inside a watched root.
        Crafted(
            "a move into another watched root",
            json.dumps(doc).encode(),
            args=("--move", str(other / "attic")),
        ),
        Crafted(
            "a move into the plan's root",
            json.dumps(doc).encode(),
            args=("--move", str(root / "attic")),
        ),
        Crafted(
            "a move onto a watched root", json.dumps(doc).encode(), args=("--move", str(other))
        ),
        # NUL bytes and what no file name can hold.
        Crafted(
            "a NUL in the victim's path",
            _edit(doc, _set(1, path=victim["path"] + "\0/../../etc/passwd")),
        ),
        Crafted("a NUL in the root", _edit(doc, _set(1, root=r + "\0x"))),
        Crafted("a NUL in a link", _edit(doc, _set(1, links=[victim["path"] + "\0"]))),
        Crafted(
            "a NUL in the kept file's path",
            _edit(doc, lambda d: _member(d, 0).update(path=kept["path"] + "\0")),
        ),
        Crafted(
            "a NUL byte in the file itself",
            json.dumps(doc).encode().replace(b'"groups"', b'"gro\x00ups"'),
        ),
        Crafted("a lone surrogate in a path", _edit(doc, _set(1, path=victim["path"] + "\ud800"))),
        Crafted("a path longer than a path can be", _edit(doc, _set(1, path=r + "/x" * 3000))),
        # Deep nesting.
        Crafted("100,000 nested arrays", b"[" * 100_000 + b"]" * 100_000),
        Crafted("100,000 nested objects", _nested(100_000).encode()),
        Crafted(
            "groups nested 900 deep",
            json.dumps({**doc, "groups": None}).encode().replace(b"null", b"[" * 900 + b"]" * 900),
        ),
        Crafted(
            "a member nested 900 deep",
            json.dumps(doc)
            .encode()
            .replace(b'"keep": false', b'"keep": ' + _nested(900).encode(), 1),
        ),
        Crafted(
            "a source nested 900 deep",
            _edit(doc, lambda d: d.update(source=None)).replace(
                b'"source": null', b'"source": ' + _nested(900).encode()
            ),
        ),
        # Huge and wrong numbers.
        Crafted("a device of 10**30", _edit(doc, _set(1, device=10**30))),
        Crafted("an inode of 2**64", _edit(doc, _set(1, inode=2**64))),
        Crafted("a size of 2**63", _edit(doc, _set(1, size=2**63))),
        Crafted("an mtime of 2**63", _edit(doc, _set(1, mtime_ns=2**63))),
        Crafted("an mtime of -2**63-1", _edit(doc, _set(1, mtime_ns=-(2**63) - 1))),
        Crafted(
            "an integer of 5,000 digits",
            json.dumps(doc).encode().replace(b'"size": ', b'"size": ' + b"9" * 5000, 1),
        ),
        Crafted("a negative inode", _edit(doc, _set(1, inode=-1))),
        Crafted("a fractional size", _edit(doc, _set(1, size=1.5))),
        Crafted("a size as text", _edit(doc, _set(1, size="12"))),
        Crafted("a device as true", _edit(doc, _set(1, device=True))),
        Crafted(
            "NaN as the creation time",
            json.dumps({**doc, "created": 0.5}).encode().replace(b"0.5", b"NaN"),
        ),
        Crafted(
            "Infinity as an mtime",
            json.dumps(doc).encode().replace(b'"mtime_ns": ', b'"mtime_ns": Infinity, "x": ', 1),
        ),
        Crafted(
            "1e999 as a size",
            json.dumps(doc).encode().replace(b'"size": ', b'"size": 1e999, "x": ', 1),
        ),
        # Wrong types and shapes.
        Crafted("keep as text", _edit(doc, _set(1, keep="yes"))),
        Crafted("no keep", _edit(doc, lambda d: _member(d, 1).pop("keep"))),
        Crafted("two kept", _edit(doc, _set(1, keep=True))),
        Crafted("none kept", _edit(doc, _set(0, keep=False))),
        Crafted("a group of one", _edit(doc, lambda d: d["groups"][0]["members"].pop())),
        Crafted("members as an object", _edit(doc, lambda d: d["groups"][0].update(members={}))),
        Crafted("groups as text", _edit(doc, lambda d: d.update(groups="all"))),
        Crafted("links as text", _edit(doc, _set(1, links=victim["path"]))),
        Crafted("a path as a number", _edit(doc, _set(1, path=1))),
        Crafted("a root as null", _edit(doc, _set(1, root=None))),
        Crafted("an unknown kind", _edit(doc, lambda d: d["groups"][0].update(kind="all"))),
        Crafted("another format", _edit(doc, lambda d: d.update(format="other"))),
        Crafted("version 2", _edit(doc, lambda d: d.update(version=2))),
        Crafted("version as text", _edit(doc, lambda d: d.update(version="1"))),
        Crafted("an unknown member", _edit(doc, _set(1, mode=0o4755))),
        Crafted("an unknown top-level member", _edit(doc, lambda d: d.update(run="rm -rf /"))),
        Crafted("a short blake3", _edit(doc, _set(1, blake3="00"))),
        Crafted("an empty blake3", _edit(doc, _set(1, blake3=""))),
        Crafted("an uppercase blake3", _edit(doc, _set(1, blake3=str(victim["blake3"]).upper()))),
        Crafted(
            "an Instance-Code that is not one",
            _edit(
                doc,
                lambda d: (
                    _member(d, 1).pop("blake3"),
                    _member(d, 1).update(instance="ISCC:I" + "A" * 15000),
                ),
            ),
        ),
        Crafted(
            "a datahash of another kind",
            _edit(
                doc,
                lambda d: (
                    _member(d, 1).pop("blake3"),
                    _member(d, 1).update(datahash="1e21" + "0" * 64),
                ),
            ),
        ),
        Crafted(
            "a victim in two groups",
            _edit(doc, lambda d: d["groups"].append(copy.deepcopy(d["groups"][0]))),
        ),
        Crafted("a list at the top", b"[]"),
        Crafted("a string at the top", b'"plan"'),
        Crafted("an empty file", b""),
        Crafted("bytes that are not UTF-8", b'{"format": "\xff\xfe"}'),
        Crafted("trailing garbage", json.dumps(doc).encode() + b" ; rm -rf /"),
        Crafted("a truncated plan", json.dumps(doc).encode()[:-7]),
    ]


def special_plans(where: Path) -> list[Crafted]:
    """Plan "files" that are not regular files: a FIFO (nobody writes it), a device that never
    ends, a directory, a file that does not exist."""
    where.mkdir(parents=True, exist_ok=True)
    fifo = where / "plan.fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    return [
        Crafted("a FIFO", None, fifo),
        Crafted("/dev/zero", None, Path("/dev/zero")),
        Crafted("a directory", None, where),
        Crafted("a missing file", None, where / "missing.json"),
    ]


class Host:
    """Two watched roots, a private folder, a configuration naming the roots (no daemon, no
    index of its own), and the crafted plans against them (:attr:`plans`, by name)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = base / "root"
        self.other = base / "other"
        self.private = base / "private"
        kept = write(self.root / "a.bin", b"the same bytes\n", mtime=1_000_000)
        write(self.root / "b.bin", b"the same bytes\n", mtime=2_000_000)
        write(self.private / "a.bin", b"private bytes\n", mtime=1_000_000)
        write(self.private / "b.bin", b"private bytes\n", mtime=2_000_000)
        self.other.mkdir()
        (base / "root-link").symlink_to(self.root)
        self.config = base / "isccd.toml"
        self.config.write_text(
            f"[watch]\nroots = {json.dumps([str(self.root), str(self.other)])}\n"
            f"[store]\nstate_dir = {json.dumps(str(base / 'state'))}\n"
        )
        self.valid = plan_document(plan_of(self.root, [[kept, self.root / "b.bin"]]))
        self.plans = {
            c.name: c
            for c in crafted_plans(self.valid, self.root, self.other, self.private)
            + special_plans(base / "special")
        }

    def files(self) -> dict[str, tuple[int, bytes]]:
        """Every file under the base folder (but the plans and logs): inode and bytes."""
        out = {}
        for where in (self.root, self.other, self.private):
            for p in where.rglob("*"):
                if p.is_file():
                    out[str(p)] = (p.stat().st_ino, p.read_bytes())
        return out

    def plan_file(self, crafted: Crafted) -> Path:
        if crafted.content is None:
            assert crafted.path is not None
            return crafted.path
        path = self.base / "plan.json"
        path.write_bytes(crafted.content)
        return path

    def fault(self, status: int, err: str, before: dict[str, tuple[int, bytes]]) -> str | None:
        """Why a run of a crafted plan (its exit status and stderr) was not refused as it
        must be (exit 2, one short line, nothing touched), or ``None``."""
        faults = [
            (status != 2, f"exit status {status}"),
            ("Traceback" in err or "\x1b" in err or "\0" in err, "a traceback or a raw control"),
            (not err.startswith("isccd: ") or err.count("\n") != 1, "not one line"),
            (len(err) >= 600, "a line too long"),
            (self.files() != before, "files were touched"),
            ((self.other / "attic").exists() or (self.root / "attic").exists(), "a folder made"),
        ]
        return next((why for failed, why in faults if failed), None)

    def argv(self, crafted: Crafted) -> list[str]:
        return ["dedupe", *crafted.args, "--plan", str(self.plan_file(crafted)), "--apply",
                "--log", str(self.base / "log.jsonl"), "--config", str(self.config)]  # fmt: skip
