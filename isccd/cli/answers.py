"""The readable text of the index's answers: ``get``, ``similar`` and ``dupes``.

The same results (:mod:`isccd.results`) come from the daemon or from a store read directly;
these functions print either, and ``--json`` prints their wire form (docs/schema/). An answer
naming a file of another host than ``here`` (this machine's, in a fleet's shared database), or
of more than one host, shows each path as ``host:path``. A file's hardlinks are one entry, its
other names listed under it.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from typing import TextIO

from isccd.cli.escape import shown
from isccd.cli.output import format_size
from isccd.model import RelationKind
from isccd.results import (
    DirGroup,
    DirsResult,
    DupesResult,
    DupGroup,
    DupKind,
    FileInfo,
    Match,
    SimilarResult,
    Totals,
    WatchedResult,
    WatchGroup,
)


def format_file(info: FileInfo, here: str = "") -> str:
    """``get``: the record, its units and issues, its other names and its duplicates."""
    where = _hosts([info.host, *(m.host for m in info.duplicates)], here)
    state = "removed" if info.removed is not None else "indexed"
    lines = [f"{where(info.host, info.path)} ({state})"]
    fields = {
        "iscc": info.iscc,
        "mediatype": info.mediatype,
        "mode": info.mode.value if info.mode else None,
        "size": None if info.size is None else f"{info.size:,} bytes",
        "datahash": info.datahash,
    }
    lines += [f"  {key}: {value}" for key, value in fields.items() if value is not None]
    lines += [f"  {unit_type.value}: {code}" for unit_type, code in info.units.items()]
    lines += [f"  {i.kind.value} ({i.stage}): {shown(i.reason)}" for i in info.issues]
    lines += [f"  hardlink: {shown(link)}" for link in info.links]
    for match in info.duplicates:
        lines.append(f"  {_relation(match)}: {where(match.host, match.path)}")
        lines += [f"    = {shown(link)} (hardlink)" for link in match.links]
    return "\n".join(lines) + "\n"


def format_similar(result: SimilarResult, here: str = "") -> str:
    """``similar``: one line per related file (its other names under it), how it relates."""
    if not result.matches:
        return "nothing similar\n"
    where = _hosts([m.host for m in result.matches], here)
    lines = []
    for match in result.matches:
        lines.append(f"{_relation(match):>24}  {where(match.host, match.path)}")
        lines += [f"{'':>24}  = {shown(link)} (hardlink)" for link in match.links]
    if result.truncated:
        lines.append("(more not shown: raise --limit)")
    return "\n".join(lines) + "\n"


def format_totals(totals: Totals) -> str:
    """The line that sums up ``dupes``: groups, distinct files (a file in an exact and a near
    group counts once) and the bytes on disk that keeping one file of each set of groups
    sharing files would free; with their apparent size when sparse files make it differ."""
    groups = "group" if totals.groups == 1 else "groups"
    files = "file" if totals.files == 1 else "files"
    line = f"{totals.groups:,} {groups}, {totals.files:,} {files}, "
    line += f"{format_size(totals.reclaimable)} reclaimable"
    if totals.reclaimable_size > totals.reclaimable:
        line += f" on disk ({format_size(totals.reclaimable_size)} by size: sparse files)"
    return line


def format_dupes(result: DupesResult, here: str = "") -> str:
    """``dupes``: each group with its reclaimable bytes and its members, then the totals.

    A near group lists its centre first (marked ``centre``), then each other member with its
    distance to the centre by the group's unit type (``~d/t by text to #1``); the pairs are
    not listed.
    """
    if not result.groups:
        return "no duplicates\n"
    where = _hosts([m.host for g in result.groups for m in g.members], here)
    lines = []
    for group in result.groups:
        lines += _group_lines(group, where)
    if result.truncated:
        lines.append(f"(only the first {len(result.groups):,} groups shown: raise --limit)")
    lines.append(format_totals(result.totals))
    return "\n".join(lines) + "\n"


#: The columns of ``dupes --csv``: one row per file name, a file's hardlinks on rows of their own
#: with the same ``member`` (and ``link`` true).
CSV_COLUMNS = (
    "group", "kind", "group_unit", "reclaimable", "member", "link", "path", "root", "host",
    "size", "mediatype", "unit", "distance", "threshold", "nearest", "iscc", "code",
    "allocated", "centre",
)  # fmt: skip


def write_dupes_csv(result: DupesResult, stream: TextIO) -> None:
    """``dupes --csv``: a header, then a row per file name of every group (groups and members
    numbered from 1, ``nearest`` by its member number: a near group's centre, which
    ``distance`` is measured to; ``centre`` true on the centre's rows), in the order of the
    text."""
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for g, group in enumerate(result.groups, start=1):
        for m, member in enumerate(group.members, start=1):
            nearest = "" if member.nearest is None else member.nearest + 1
            centre = "true" if group.centre == m - 1 else "false"
            for link, path in enumerate((member.path, *member.links)):
                writer.writerow((
                    g, group.kind.value, group.unit.value, group.reclaimable, m,
                    "true" if link else "false", path, member.root, member.host,
                    "" if member.size is None else member.size, member.mediatype or "",
                    member.unit.value, member.distance, member.threshold, nearest,
                    member.iscc or "", member.code or "",
                    "" if member.allocated is None else member.allocated, centre,
                ))  # fmt: skip
    stream.flush()


def format_dirs(result: DirsResult, here: str = "") -> str:
    """``dupes --dirs``: each group of folders, then the totals.

    An exact group lists its folders (the first is the one keeping it would keep), with what
    keeping only the first frees. A near group lists its centre first, then each other folder
    with its share (``91% shared with #1``) and, below it, its files with no duplicate in the
    centre (``+ name``) and the centre's with none in it (``- name``).
    """
    if not result.groups:
        return "no duplicate folders\n"
    where = _hosts([m.host for g in result.groups for m in g.members], here)
    lines = []
    for group in result.groups:
        lines += _dir_lines(group, where)
    if result.truncated:
        lines.append(f"(only the first {len(result.groups):,} groups shown: raise --limit)")
    groups = "group" if len(result.groups) == 1 and not result.truncated else "groups"
    folders = "folder" if result.folders == 1 else "folders"
    lines.append(
        f"{len(result.groups):,}{'+' if result.truncated else ''} {groups}, "
        f"{result.folders:,} {folders}, {format_size(result.reclaimable)} reclaimable"
    )
    return "\n".join(lines) + "\n"


def _dir_lines(group: DirGroup, where: Callable[[str, str], str]) -> list[str]:
    first = group.members[0]
    head = f"{first.files:,} {'file' if first.files == 1 else 'files'}"
    if group.kind is DupKind.EXACT:
        lines = [f"exact folders: {head} each, {format_size(group.reclaimable)} reclaimable"]
    else:
        lines = [f"near folders: centre of {head}"]
    for i, member in enumerate(group.members, start=1):
        note = ""
        if group.kind is DupKind.NEAR:
            note = "  centre" if i == 1 else f"  {_percent(member.share)} shared with #1"
        size = format_size(member.size)
        lines.append(f"  #{i:<3}{size:>10}  {where(member.host, member.path)}/{note}")
        lines += [f"{'':>16}+ {shown(name)}" for name in member.unmatched]
        if member.unmatched_count > len(member.unmatched):
            lines.append(f"{'':>16}+ ({member.unmatched_count - len(member.unmatched):,} more)")
        lines += [f"{'':>16}- {shown(name)}" for name in member.missing]
        if member.missing_count > len(member.missing):
            lines.append(f"{'':>16}- ({member.missing_count - len(member.missing):,} more)")
    return lines


def _percent(share: float) -> str:
    """A share as a whole percentage, never rounded up to 100 unless it is."""
    # The margin keeps a share such as 29/50 from showing as 57% by its float's last bit.
    percent = min(int(share * 100 + 1e-9), 99) if share < 1 else 100
    return f"{percent}%"


#: The columns of ``dupes --dirs --csv``: one row per folder.
DIRS_CSV_COLUMNS = (
    "group", "kind", "reclaimable", "member", "path", "root", "host", "files", "size",
    "share", "unmatched", "missing", "centre",
)  # fmt: skip


def write_dirs_csv(result: DirsResult, stream: TextIO) -> None:
    """``dupes --dirs --csv``: a header, then a row per folder of every group (numbered from
    1; ``unmatched`` and ``missing`` count the files of a near group's member with no
    duplicate in the centre, and the centre's with none in it; ``centre`` true on a near
    group's centre)."""
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(DIRS_CSV_COLUMNS)
    for g, group in enumerate(result.groups, start=1):
        for m, member in enumerate(group.members, start=1):
            centre = "true" if group.kind is DupKind.NEAR and m == 1 else "false"
            writer.writerow((
                g, group.kind.value, group.reclaimable, m, member.path, member.root,
                member.host, member.files, member.size, f"{member.share:.4f}",
                member.unmatched_count, member.missing_count, centre,
            ))  # fmt: skip
    stream.flush()


def format_watched(result: WatchedResult, here: str = "") -> str:
    """``similar --watchlist``: per reference that matched, its id, label and code, then one
    line per matching file as ``similar`` prints it."""
    where = _hosts([m.host for g in result.groups for m in g.matches], here)
    lines = [_watched_head(result)]
    for group in result.groups:
        lines.append(_reference(group))
        for match in group.matches:
            lines.append(f"{_relation(match):>24}  {where(match.host, match.path)}")
            lines += [f"{'':>24}  = {shown(link)} (hardlink)" for link in match.links]
    if result.truncated:
        lines.append("(more references not shown: raise --limit)")
    return "\n".join(lines) + "\n"


def format_watched_dupes(result: WatchedResult, here: str = "") -> str:
    """``dupes --watchlist``: per reference that matched, its id, label and code, then its
    matching files as ``dupes`` lists a group's members (``~d/t by unit`` to the reference)."""
    where = _hosts([m.host for g in result.groups for m in g.matches], here)
    lines = [_watched_head(result)]
    for group in result.groups:
        lines.append(f"{_reference(group)}: {len(group.matches)} files")
        for i, match in enumerate(group.matches, start=1):
            apart = "  exact" if match.relation is RelationKind.EXACT else (
                f"  ~{match.distance}/{match.threshold} by {match.unit.value}"
            )  # fmt: skip
            name = where(match.host, match.path)
            lines.append(f"  #{i:<3}{_size(match.size):>10}  {name}{apart}")
            lines += [f"{'':>16}= {shown(link)} (hardlink)" for link in match.links]
    if result.truncated:
        lines.append(f"(only the first {len(result.groups):,} references shown: raise --limit)")
    return "\n".join(lines) + "\n"


def _watched_head(result: WatchedResult) -> str:
    threshold = "[match]" if result.threshold is None else f"{result.threshold} bits"
    return (
        f"watchlist {shown(result.watchlist)} (threshold {threshold}): {len(result.groups):,} "
        f"of {result.references:,} references matched"
    )


def _reference(group: WatchGroup) -> str:
    return f"reference {group.ref} {shown(group.label)} {group.iscc or ''}".rstrip()


#: The columns of ``dupes --watchlist --csv``: one row per file name of every reference's
#: matches, a file's hardlinks on rows of their own with the same ``member`` (and ``link``
#: true).
WATCHED_CSV_COLUMNS = (
    "watchlist", "group", "ref", "label", "reference", "member", "link", "path", "root",
    "host", "size", "relation", "unit", "distance", "threshold", "iscc", "code",
)  # fmt: skip


def write_watched_csv(result: WatchedResult, stream: TextIO) -> None:
    """``dupes --watchlist --csv``: a header, then a row per file name of every reference's
    matches (references and members numbered from 1), in the order of the text."""
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(WATCHED_CSV_COLUMNS)
    for g, group in enumerate(result.groups, start=1):
        for m, match in enumerate(group.matches, start=1):
            for link, path in enumerate((match.path, *match.links)):
                writer.writerow((
                    result.watchlist, g, group.ref, group.label, group.iscc or "", m,
                    "true" if link else "false", path, match.root, match.host,
                    "" if match.size is None else match.size, match.relation.value,
                    match.unit.value, match.distance, match.threshold, match.iscc or "",
                    match.code or "",
                ))  # fmt: skip
    stream.flush()


def _group_lines(group: DupGroup, where: Callable[[str, str], str]) -> list[str]:
    kind = "exact" if group.kind is DupKind.EXACT else f"near by {group.unit.value}"
    files = len(group.members)
    lines = [f"{kind}: {files} files, {_size(group.reclaimable)} reclaimable"]
    for i, member in enumerate(group.members, start=1):
        apart = ""
        if group.centre == i - 1:
            apart = "  centre"
        elif group.kind is DupKind.NEAR and member.nearest is not None:
            apart = (
                f"  ~{member.distance}/{member.threshold} by {member.unit.value} "
                f"to #{member.nearest + 1}"
            )
        sparse = ""
        if member.allocated is not None and member.allocated < (member.size or 0):
            sparse = f"  ({format_size(member.allocated)} on disk)"
        name = where(member.host, member.path)
        lines.append(f"  #{i:<3}{_size(member.size):>10}  {name}{apart}{sparse}")
        lines += [f"{'':>16}= {shown(link)} (hardlink)" for link in member.links]
    return lines


def _hosts(hosts: list[str], here: str) -> Callable[[str, str], str]:
    """How to show a path (escaped, :func:`shown`): with its host when the answer names
    another host than ``here`` (``""``: not known), or more than one."""
    if len(set(hosts) | ({here} if here else set())) > 1:
        return lambda host, path: f"{host}:{shown(path)}"
    return lambda host, path: shown(path)


def _relation(match: Match) -> str:
    if match.relation is not RelationKind.NEAR:
        return match.relation.value
    return f"near by {match.unit.value}, {match.distance}/{match.threshold} bits"


def _size(n: int | None) -> str:
    return "?" if n is None else format_size(n)
