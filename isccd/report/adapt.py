"""The ``dupes`` answer as the report's view: the one place that reads its shape.

When the ``dupes`` result changes (its JSON contract), only :func:`view_of_dupes` changes.
"""

from __future__ import annotations

from isccd.protocol import DupesResult, DupGroup, DupKind
from isccd.report.model import GroupView, MemberView, ReportView


def view_of_dupes(result: DupesResult, host: str = "") -> ReportView:
    """The report's groups from what ``dupes`` answered (with ``near``), in its order.

    Each member gets its distance to the nearest other member of its group and the unit
    type of that distance (from the group's near pairs); exact groups' members are 0 apart by
    their Instance-Code, which the view keeps as the content's digest. A member on another
    host than ``host`` (a fleet's shared index) keeps the name of its host.
    """
    return ReportView(tuple(_group(g, host) for g in result.groups), result.truncated)


def _group(group: DupGroup, host: str) -> GroupView:
    exact = group.kind is DupKind.EXACT
    nearest: dict[int, tuple[int, str]] = {}
    for pair in group.pairs:
        for index in (pair.a, pair.b):
            known = nearest.get(index)
            if known is None or pair.distance < known[0]:
                nearest[index] = (pair.distance, pair.unit.value)
    members = []
    for index, member in enumerate(group.members):
        # A member no pair names is joined by the group's unit, at its distance to the first.
        distance, unit = nearest.get(index, (member.distance, group.unit.value))
        members.append(
            MemberView(
                path=member.path,
                links=member.links,
                root=member.root,
                size=member.size,
                unit=group.unit.value if exact else unit,
                distance=0 if exact else distance,
                instance=member.iscc if exact else None,
                host=member.host if member.host not in ("", host) else "",
            )
        )
    return GroupView(
        kind=group.kind.value,
        unit=group.unit.value,
        threshold=group.threshold,
        reclaimable=group.wasted_bytes,
        members=tuple(members),
    )
