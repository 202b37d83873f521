"""The ``dupes`` answer as the report's view (isccd.report.adapt)."""

from __future__ import annotations

from isccd.model import UnitType
from isccd.report.adapt import view_of_dirs, view_of_dupes
from isccd.report.model import (
    FileFacts,
    FileStat,
    FolderGroupView,
    FoldersView,
    FolderView,
    GroupView,
    MemberView,
    Preview,
    PreviewKind,
)
from isccd.report.page import page_data
from isccd.results import (
    DirGroup,
    DirMember,
    DirsResult,
    DupesResult,
    DupGroup,
    DupKind,
    DupMember,
    Totals,
)

INSTANCE = "ISCC:IAAZV3ZSNCAD3X7B"


def test_each_member_keeps_its_distance_and_unit_to_its_nearest_other_member() -> None:
    # a's nearest is c (data, 1), b's is c (image, 2), c's is a (data, 1).
    members = tuple(
        DupMember(f"/r/{name}", "/r", size, "ISCC:KEC", unit, "ISCC:EEA", distance, 12, nearest)
        for name, size, unit, distance, nearest in (
            ("a", 400, UnitType.DATA, 1, 2),
            ("b", 300, UnitType.IMAGE, 2, 2),
            ("c", 200, UnitType.DATA, 1, 0),
        )
    )
    group = DupGroup(DupKind.NEAR, UnitType.IMAGE, 12, 500, members)
    view = view_of_dupes(DupesResult((group,)))
    assert [(m.path, m.unit, m.distance) for m in view.groups[0].members] == [
        ("/r/a", "data", 1),
        ("/r/b", "image", 2),
        ("/r/c", "data", 1),
    ]
    assert all(m.instance is None for m in view.groups[0].members)
    assert (view.groups[0].kind, view.groups[0].unit, view.groups[0].threshold) == (
        "near",
        "image",
        12,
    )


def test_exact_members_carry_their_instance_code_and_links() -> None:
    members = (
        DupMember(
            "/r/x", "/r", 10, "ISCC:KAC", UnitType.INSTANCE, INSTANCE, 0, 0, links=("/r/x-link",)
        ),
        DupMember("/r/y", "/r", 10, "ISCC:KAC", UnitType.INSTANCE, INSTANCE, 0, 0),
    )
    group = DupGroup(DupKind.EXACT, UnitType.INSTANCE, 0, 10, members)
    view = view_of_dupes(DupesResult((group,), truncated=True))
    assert view.truncated
    assert view.groups == (
        GroupView(
            "exact",
            "instance",
            0,
            10,
            (
                MemberView("/r/x", ("/r/x-link",), "/r", 10, "instance", 0, INSTANCE),
                MemberView("/r/y", (), "/r", 10, "instance", 0, INSTANCE),
            ),
        ),
    )


def test_totals_count_groups_members_and_reclaimable_bytes() -> None:
    exact = DupGroup(
        DupKind.EXACT,
        UnitType.INSTANCE,
        0,
        30,
        tuple(
            DupMember(f"/r/{i}", "/r", 10, None, UnitType.INSTANCE, INSTANCE, 0, 0)
            for i in range(4)
        ),
    )
    near = DupGroup(
        DupKind.NEAR,
        UnitType.TEXT,
        15,
        5,
        (
            DupMember("/r/t", "/r", 9, None, UnitType.TEXT, None, 3, 15, 1),
            DupMember("/r/u", "/r", 5, None, UnitType.TEXT, None, 3, 15, 0),
        ),
    )
    assert view_of_dupes(DupesResult((exact, near))).totals() == Totals(2, 6, 35, 35)


def test_another_hosts_file_is_shown_and_never_looked_at_here() -> None:
    # The same path on two hosts of a fleet: this host's file is looked at, the other is not.
    members = (
        DupMember("/r/a", "/r", 10, None, UnitType.INSTANCE, INSTANCE, 0, 0, host="here"),
        DupMember("/r/a", "/r", 10, None, UnitType.INSTANCE, INSTANCE, 0, 0, host="there"),
    )
    view = view_of_dupes(
        DupesResult((DupGroup(DupKind.EXACT, UnitType.INSTANCE, 0, 10, members),)), "here"
    )
    mine, theirs = view.groups[0].members
    assert (mine.host, theirs.host) == ("", "there")
    facts = {"/r/a": FileFacts(FileStat(1, 2, 10, 3), Preview(PreviewKind.ICON))}
    shown = page_data(view, facts, source="the daemon", generated=0.0)["groups"][0]["members"]
    assert [(m["path"], m["root"], m["stat"] is None) for m in shown] == [
        ("/r/a", "/r", False),
        ("there:/r/a", "there:/r", True),  # no plan can name it
    ]
    assert "on host there" in shown[1]["note"]


def test_folders_keep_their_order_centre_share_and_names() -> None:
    near = DirGroup(
        DupKind.NEAR,
        (
            DirMember("/r/plus", "/r", "here", 6, 600),
            DirMember("/r/a", "/r", "there", 5, 500, 10 / 11, (), 0, ("bonus",), 1),
        ),
    )
    exact = DirGroup(
        DupKind.EXACT,
        (DirMember("/r/x", "/r", "here", 2, 20), DirMember("/r/y", "/r", "here", 2, 20)),
        20,
    )
    view = view_of_dirs(DirsResult((exact, near), True, 4, 20), "here")
    assert view == FoldersView(
        (
            FolderGroupView(
                "exact", 20, (FolderView("/r/x", "/r", 2, 20), FolderView("/r/y", "/r", 2, 20))
            ),
            FolderGroupView(
                "near",
                0,
                (
                    FolderView("/r/plus", "/r", 6, 600, centre=True),
                    FolderView("/r/a", "/r", 5, 500, "there", share=10 / 11, missing=("bonus",),
                               missing_count=1),
                ),
            ),
        ),
        truncated=True,
        folders=4,
        reclaimable=20,
    )  # fmt: skip
    # The file groups' view carries them; by default, none.
    assert view_of_dupes(DupesResult(()), "here", view).folders is view
    assert view_of_dupes(DupesResult(())).folders == FoldersView()
