"""The readable text of the index's answers: ``get``, ``similar`` and ``dupes``.

The same results come from the daemon or from a store read directly
(:mod:`isccd.pipeline.answers`); these functions print either, and ``--json`` prints their
protocol form (docs/protocol.md). An answer naming files of more than one host (a fleet's
shared database) shows each path as ``host:path``.
"""

from __future__ import annotations

from collections.abc import Callable

from isccd.cli.escape import shown
from isccd.cli.output import format_size
from isccd.protocol import DupesResult, DupKind, FileInfo, Relation, SimilarMatch, SimilarResult


def format_file(info: FileInfo) -> str:
    """``get``: the record, its units and issues, its other names and its duplicates."""
    where = _hosts([info.host, *(m.host for m in info.duplicates)])
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
    lines += [f"  {unit.type.value}: {unit.iscc}" for unit in info.units]
    lines += [f"  {i.kind.value} ({i.stage}): {shown(i.reason)}" for i in info.issues]
    lines += [f"  hardlink: {shown(link)}" for link in info.links]
    lines += [f"  {_relation(m)}: {where(m.host, m.path)}" for m in info.duplicates]
    return "\n".join(lines) + "\n"


def format_similar(result: SimilarResult) -> str:
    """``similar``: one line per match, how it relates and its path."""
    if not result.matches:
        return "nothing similar\n"
    where = _hosts([m.host for m in result.matches])
    lines = [f"{_relation(m):>24}  {where(m.host, m.path)}" for m in result.matches]
    if result.truncated:
        lines.append("(more not shown: raise --limit)")
    return "\n".join(lines) + "\n"


def format_dupes(result: DupesResult) -> str:
    """``dupes``: each group with its wasted bytes, members and what joins them."""
    if not result.groups:
        return "no duplicates\n"
    where = _hosts([m.host for g in result.groups for m in g.members])
    lines = []
    for group in result.groups:
        kind = "exact" if group.kind is DupKind.EXACT else f"near by {group.unit.value}"
        wasted = _size(group.wasted_bytes)
        lines.append(f"{kind}: {len(group.members)} files, {wasted} wasted")
        for i, member in enumerate(group.members):
            apart = ""
            if group.kind is DupKind.NEAR and i and member.distance is not None:
                apart = f"  (distance {member.distance})"
            lines.append(f"  {_size(member.size):>10}  {where(member.host, member.path)}{apart}")
            lines += [f"{'':>14}= {shown(link)} (hardlink)" for link in member.links]
        for pair in group.pairs:
            lines.append(
                f"    near: #{pair.a + 1} ~ #{pair.b + 1} by {pair.unit.value}, "
                f"{pair.distance}/{pair.threshold} bits"
            )
    if result.truncated:
        lines.append("(more groups not shown: raise --limit)")
    return "\n".join(lines) + "\n"


def _hosts(hosts: list[str]) -> Callable[[str, str], str]:
    """How to show a path (escaped, :func:`shown`): with its host when the answer names more
    than one."""
    if len(set(hosts)) > 1:
        return lambda host, path: f"{host}:{shown(path)}"
    return lambda host, path: shown(path)


def _relation(match: SimilarMatch) -> str:
    if match.relation is not Relation.NEAR:
        return match.relation.value
    return f"near by {match.unit.value}, {match.distance}/{match.threshold} bits"


def _size(n: int | None) -> str:
    return "?" if n is None else format_size(n)
