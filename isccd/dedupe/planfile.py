"""The plan file: a versioned JSON document (docs/schema/plan.schema.json), read and written.

A plan file is validated against its JSON Schema when it is loaded (by the schema compiled once,
:mod:`isccd.dedupe.schemacheck`; jsonschema says what is wrong with a plan that is not), then
checked for what a schema cannot say (paths normalized and inside their roots, no file in two
groups); any fault is a :class:`~isccd.errors.PlanFileError` naming the place in one line, and
nothing is touched. A plan is whatever its author wrote: it is read as strict JSON (no ``NaN``),
from a regular file of at most :data:`MAX_PLAN_BYTES`, nested no deeper than the format, and its
roots must be the acting host's own (:func:`check_roots`), since a member's ``root`` is only
what the file says. The file must be the user's own (or root's) and writable by nobody else: a
plan says which files to link, remove or move, and a near move trusts the codes it records, so a
plan another user could have written or changed is not acted on (copy it, read it, and use the
copy).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Collection, Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from isccd.dedupe.plan import (
    PLAN_VERSION,
    Action,
    FolderGuard,
    Group,
    GroupKind,
    Member,
    Plan,
    Step,
    Untouched,
)
from isccd.dedupe.schemacheck import Check, compile_schema
from isccd.errors import PlanFileError
from isccd.fspath import is_below, is_under
from isccd.iscc import IsccError, iscc_decode
from isccd.iscc.constants import MT

#: The ``format`` member of every plan file.
PLAN_FORMAT = "isccd-dedupe-plan"

#: The largest plan file read (a million files take about 400 MB).
MAX_PLAN_BYTES = 1 << 30

#: Characters of a value quoted in a message about a plan.
_QUOTED = 120


@cache
def plan_schema() -> dict[str, Any]:
    """The plan file's JSON Schema (shipped with the package; docs/schema/ has the same)."""
    text = resources.files("isccd.dedupe").joinpath("plan.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _inlined(node: Any, defs: dict[str, Any]) -> Any:
    """``node`` with every local ``$ref`` replaced by its definition (the schema has no
    recursion): validating against it skips resolving ten thousands of references."""
    if isinstance(node, dict):
        if "$ref" in node:
            return _inlined(defs[node["$ref"].rpartition("/")[2]], defs)
        return {k: _inlined(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inlined(v, defs) for v in node]
    return node


def _where(location: Sequence[object]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in location) or "the plan"


@cache
def _plan_check() -> Check:
    """The plan schema compiled (:mod:`isccd.dedupe.schemacheck`)."""
    schema = plan_schema()
    return compile_schema(_inlined(schema, schema["$defs"]))


def _validate(document: object, name: str) -> None:
    if _plan_check()(document):
        return
    # Not valid: jsonschema says why (and has the last word).
    import jsonschema  # noqa: PLC0415  (only plan files need it)

    schema = plan_schema()
    validator = jsonschema.Draft202012Validator(_inlined(schema, schema["$defs"]))
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is not None:
        where = _short(_where(error.absolute_path).lstrip("."))
        raise PlanFileError(
            name, f"not a valid plan: {where or 'top level'}: {_short(error.message)}"
        )


def _short(text: str) -> str:
    """``text`` on one line, cut short: a message quotes values the plan's author chose."""
    text = text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text
    return text if len(text) <= _QUOTED else text[: _QUOTED - 3] + "..."


def _digest(member: Mapping[str, Any], name: str, where: str) -> str | None:
    """The member's BLAKE3 (hex, or a prefix), from whichever form the file gives."""
    if "blake3" in member:
        return str(member["blake3"])
    if "datahash" in member:
        return str(member["datahash"])[4:]
    if "instance" in member:
        try:
            return blake3_of_instance(member["instance"])
        except ValueError as exc:
            raise PlanFileError(name, f"{where}.instance: {_short(str(exc))}") from None
    return None


def blake3_of_instance(code: str) -> str:
    """The BLAKE3 prefix an Instance-Code carries, in hex.

    Raises:
        ValueError: ``code`` is not an Instance-Code.
    """
    try:
        maintype, _, _, _, body = iscc_decode(code)
    except IsccError as exc:
        raise ValueError(f"cannot decode {code!r}: {exc}") from None
    if maintype != MT.INSTANCE:
        raise ValueError(f"{code!r} is not an Instance-Code")
    return body.hex()


def _member(data: Mapping[str, Any], name: str, where: str) -> Member:
    paths = (data["path"], *data.get("links", ()))
    root = data["root"]
    for path in (root, *paths):
        shown = _short(repr(path))
        if "\0" in path:
            raise PlanFileError(name, f"{where}: {shown} holds a NUL, which no path can")
        try:
            os.fsencode(path)
        except UnicodeEncodeError:
            raise PlanFileError(name, f"{where}: {shown} is not a file name here") from None
        if os.path.normpath(path) != path:
            raise PlanFileError(name, f"{where}: {shown} is not a normalized absolute path")
    for path in paths:
        if not is_below(path, root):
            shown = _short(repr(path))
            raise PlanFileError(name, f"{where}: {shown} is not inside its root {_short(root)!r}")
    return Member(
        paths, root, data["device"], data["inode"], data["size"], data["mtime_ns"],
        _digest(data, name, where), data.get("allocated"), data.get("nlink", 1),
        data.get("code"), data.get("centre", False),
    )  # fmt: skip


def plan_from_document(document: object, name: str = "the plan") -> Plan:
    """A plan from its JSON form.

    Raises:
        PlanFileError: The document is not a valid plan; the message says where.
    """
    try:
        _validate(document, name)
    except RecursionError:
        raise PlanFileError(name, "not a valid plan: nested deeper than a plan is") from None
    assert isinstance(document, dict)
    groups = []
    # A file acted on must be in no other group; a kept file may be kept in several.
    seen: dict[str, tuple[str, bool]] = {}
    for g, group in enumerate(document["groups"]):
        members = []
        for m, data in enumerate(group["members"]):
            where = f"groups[{g}].members[{m}]"
            member = _member(data, name, where)
            for path in member.paths:
                earlier = seen.get(path)
                if earlier is not None and not (earlier[1] and data["keep"]):
                    raise PlanFileError(
                        name,
                        f"{where}: {_short(repr(path))} is also in {earlier[0]}, "
                        "and not kept in both",
                    )
                seen[path] = (where, data["keep"])
            members.append(member)
        keep = next(i for i, data in enumerate(group["members"]) if data["keep"])
        kind = GroupKind(group["kind"])
        threshold = group.get("threshold") if kind is GroupKind.NEAR else None
        folder = _folder(group, members, keep, name, f"groups[{g}]")
        groups.append(Group(kind, tuple(members), keep, threshold, folder))
    return Plan(tuple(groups), document["version"])


def _folder(
    group: Mapping[str, Any], members: Sequence[Member], keep: int, name: str, where: str
) -> FolderGuard | None:
    """A group's folder: normalized, inside its root (or the root itself), which is the root of
    every member acted on, holding each of them and not the member kept. (The root is checked
    to be one of this host's with the members', :func:`check_roots`.)"""
    data = group.get("folder")
    if data is None:
        return None
    path, root, kept = data["path"], data["root"], data["kept"]
    for value in (path, root, kept):
        if "\0" in value or os.path.normpath(value) != value:
            raise PlanFileError(
                name, f"{where}.folder: {_short(repr(value))} is not a normalized path"
            )
    if not is_under(path, root):
        raise PlanFileError(name, f"{where}.folder: {_short(repr(path))} is not inside its root")
    if not kept.startswith("/"):
        raise PlanFileError(name, f"{where}.folder.kept: {_short(repr(kept))} is not absolute")
    for i, member in enumerate(members):
        if i != keep and member.root != root:
            why = f"its root is not the folder's root {_short(repr(root))}"
            raise PlanFileError(name, f"{where}.members[{i}]: {why}")
        inside = all(is_below(p, path) for p in member.paths)
        if i == keep and any(is_below(p, path) for p in member.paths):
            raise PlanFileError(
                name, f"{where}.members[{i}]: the file kept is in the folder acted on"
            )
        if i != keep and not inside:
            raise PlanFileError(name, f"{where}.members[{i}]: not inside the group's folder")
    return FolderGuard(path, root, kept, data["listing"], data["entries"])


def check_roots(plan: Plan, roots: Collection[str], name: str = "the plan") -> None:
    """Check that every member's root is one of ``roots`` (the acting host's own): its paths
    are then inside it (checked on loading), and acted on beneath it.

    Raises:
        PlanFileError: A member's root is not one of ``roots``; the message says which.
    """
    allowed = set(roots)
    for g, group in enumerate(plan.groups):
        if group.folder is not None and group.folder.root not in allowed:
            shown = _short(repr(group.folder.root))
            raise PlanFileError(
                name,
                f"groups[{g}].folder: its root {shown} is not a watched root of this host "
                f"({', '.join(sorted(allowed)) or 'none is known'})",
            )
        for m, member in enumerate(group.members):
            if member.root not in allowed:
                shown = _short(repr(member.root))
                raise PlanFileError(
                    name,
                    f"groups[{g}].members[{m}]: its root {shown} is not a watched root of "
                    f"this host ({', '.join(sorted(allowed)) or 'none is known'})",
                )


def _constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def _untrusted(st: os.stat_result) -> str | None:
    """Why a plan file with this status is not acted on, or ``None``."""
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if st.st_uid not in (os.geteuid(), 0):
        return (
            f"is owned by user {st.st_uid}, not by you: a plan acts with your rights, so one "
            "another user wrote is not acted on (copy it, read it, and give the copy)"
        )
    if st.st_mode & 0o022:
        return (
            f"can be written by others (mode {stat.S_IMODE(st.st_mode):04o}): a plan acts with "
            "your rights, so one another user could change is not acted on (chmod go-w it)"
        )
    return None


def _read(path: Path) -> bytes:
    """The bytes of a plan file: a regular file (not a FIFO or a device that never ends), of
    at most :data:`MAX_PLAN_BYTES`.

    Raises:
        PlanFileError: It cannot be read, or is not such a file.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise PlanFileError(str(path), f"cannot be read: {exc.strerror}") from None
    st = os.fstat(fd)
    fault = _untrusted(st)
    if fault is not None:
        os.close(fd)
        raise PlanFileError(str(path), fault)
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(MAX_PLAN_BYTES + 1)
        except OSError as exc:
            raise PlanFileError(str(path), f"cannot be read: {exc.strerror}") from None
    if len(data) > MAX_PLAN_BYTES:
        raise PlanFileError(str(path), f"is larger than {MAX_PLAN_BYTES >> 20} MiB")
    return data


def load_plan(path: Path) -> Plan:
    """Read and validate a plan file.

    Raises:
        PlanFileError: It cannot be read, is not JSON, or is not a valid plan.
    """
    data = _read(path)
    try:
        document = json.loads(data, parse_constant=_constant)
    except RecursionError:
        raise PlanFileError(str(path), "is not a plan: nested deeper than a plan is") from None
    except ValueError as exc:  # UnicodeDecodeError too
        raise PlanFileError(str(path), f"is not JSON: {_short(str(exc))}") from None
    return plan_from_document(document, str(path))


def _member_document(member: Member) -> dict[str, Any]:
    """What a plan file records of a member (``keep`` and the dry run's words aside)."""
    data: dict[str, Any] = {"path": member.path}
    if len(member.paths) > 1:
        data["links"] = list(member.paths[1:])
    data |= {
        "root": member.root,
        "device": member.device,
        "inode": member.inode,
        "size": member.size,
        "mtime_ns": member.mtime_ns,
    }
    if member.allocated is not None:
        data["allocated"] = member.allocated
    if member.nlink != 1:
        data["nlink"] = member.nlink
    if member.blake3 is not None:
        data["blake3"] = member.blake3
    return data | _near_fields(member)


def plan_document(
    plan: Plan,
    *,
    action: Action | None = None,
    steps: Sequence[Step] = (),
    untouched: Sequence[Untouched] = (),
    source: str | None = None,
    created: float | None = None,
) -> dict[str, Any]:
    """The JSON form of a plan; with the ``steps`` and ``untouched`` members of a dry run,
    each member says what would be done to it (``action``) and why not (``note``)."""
    acting = {(s.group, s.member.path): s.action.value for s in steps}
    notes = {(u.group, u.path): u.reason for u in untouched}
    groups = []
    for g, group in enumerate(plan.groups):
        members = []
        for i, member in enumerate(group.members):
            data = _member_document(member)
            data["keep"] = i == group.keep
            if steps or untouched:
                if i == group.keep:
                    data["action"] = "keep"
                else:
                    data["action"] = acting.get((g, member.path), "leave")
                note = notes.get((g, member.path))
                if note is not None:
                    data["note"] = note
            members.append(data)
        shown: dict[str, Any] = {"kind": group.kind.value}
        if group.threshold is not None:
            shown["threshold"] = group.threshold
        if group.folder is not None:
            folder = group.folder
            shown["folder"] = {"path": folder.path, "root": folder.root, "kept": folder.kept,
                               "listing": folder.listing, "entries": folder.entries}  # fmt: skip
        groups.append(shown | {"members": members})
    document: dict[str, Any] = {"format": PLAN_FORMAT, "version": PLAN_VERSION}
    if created is not None:
        document["created"] = created
    if source is not None:
        document["source"] = source
    if action is not None:
        document["action"] = action.value
    document["groups"] = groups
    return document


def _near_fields(member: Member) -> dict[str, Any]:
    """A near group's member's code and whether it is the centre, when known."""
    fields: dict[str, Any] = {}
    if member.code is not None:
        fields["code"] = member.code
    if member.centre:
        fields["centre"] = True
    return fields
