"""The ``dupes`` and ``dirs`` answers as the report's view: the one place that reads their
shapes.

When the ``dupes`` result changes (its JSON contract), only :func:`view_of_dupes` changes; when
the ``dirs`` result does, only :func:`view_of_dirs`.
"""

from __future__ import annotations

from isccd.report.model import (
    FolderGroupView,
    FoldersView,
    FolderView,
    GroupView,
    MemberView,
    ReportView,
)
from isccd.results import DirsResult, DupesResult, DupKind


def view_of_dupes(
    result: DupesResult, host: str = "", folders: FoldersView | None = None
) -> ReportView:
    """The report's groups from what ``dupes`` answered (with ``near``), in its order.

    A near group's members keep their distance to its centre (marked) by the group's unit
    type; an exact group's members are 0 apart by their Instance-Code, which
    the view keeps as the content's digest. A member on another host than ``host`` (a fleet's
    shared index) keeps the name of its host. ``folders``: the duplicate folders
    (:func:`view_of_dirs`), none by default.
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
    return ReportView(tuple(groups), result.truncated, folders or FoldersView())


def view_of_dirs(result: DirsResult, host: str = "") -> FoldersView:
    """The report's duplicate folders from what ``dirs`` answered, in its order: a near
    group's first folder is its centre. A folder on another host than ``host`` keeps the
    name of its host."""
    groups = tuple(
        FolderGroupView(
            kind=group.kind.value,
            reclaimable=group.reclaimable,
            members=tuple(
                FolderView(
                    path=m.path,
                    root=m.root,
                    files=m.files,
                    size=m.size,
                    host=m.host if m.host not in ("", host) else "",
                    centre=group.kind is DupKind.NEAR and i == 0,
                    share=m.share,
                    unmatched=m.unmatched,
                    unmatched_count=m.unmatched_count,
                    missing=m.missing,
                    missing_count=m.missing_count,
                )
                for i, m in enumerate(group.members)
            ),
        )
        for group in result.groups
    )
    return FoldersView(groups, result.truncated, result.folders, result.reclaimable)
