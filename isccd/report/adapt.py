"""The ``dupes`` answer as the report's view: the one place that reads its shape.

When the ``dupes`` result changes (its JSON contract), only :func:`view_of_dupes` changes.
"""

from __future__ import annotations

from isccd.report.model import GroupView, MemberView, ReportView
from isccd.results import DupesResult, DupKind


def view_of_dupes(result: DupesResult, host: str = "") -> ReportView:
    """The report's groups from what ``dupes`` answered (with ``near``), in its order.

    A near group's members keep their distance to its centre (marked) by the group's unit
    type; an exact group's members are 0 apart by their Instance-Code, which
    the view keeps as the content's digest. A member on another host than ``host`` (a fleet's
    shared index) keeps the name of its host.
    """
    groups = []
    for group in result.groups:
        exact = group.kind is DupKind.EXACT
        members = tuple(
            MemberView(
                path=m.path,
                links=m.links,
                root=m.root,
                size=m.size,
                unit=m.unit.value,
                distance=m.distance,
                instance=m.code if exact else None,
                host=m.host if m.host not in ("", host) else "",
                allocated=m.allocated,
                centre=i == group.centre,
                code=None if exact else m.code,
            )
            for i, m in enumerate(group.members)
        )
        groups.append(
            GroupView(
                kind=group.kind.value,
                unit=group.unit.value,
                threshold=group.threshold,
                reclaimable=group.reclaimable,
                members=members,
            )
        )
    return ReportView(tuple(groups), result.truncated)
