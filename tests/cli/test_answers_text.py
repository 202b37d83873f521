"""The readable answers name each file's host when an answer spans more than one host, or
names a host other than this one."""

from __future__ import annotations

from isccd.cli.answers import format_dirs, format_dupes, format_similar
from isccd.model import RelationKind, UnitType
from isccd.results import (
    DirGroup,
    DirMember,
    DirsResult,
    DupesResult,
    DupGroup,
    DupKind,
    DupMember,
    Match,
    SimilarResult,
)


def _group(*hosts: str) -> DupGroup:
    members = tuple(
        DupMember(
            f"/srv/{i}.txt", "/srv", 10, "ISCC:KAC", UnitType.INSTANCE, "ISCC:IAA", 0, 0, host=host
        )
        for i, host in enumerate(hosts)
    )
    return DupGroup(DupKind.EXACT, UnitType.INSTANCE, 0, 10, members)


def test_one_hosts_answers_read_as_before() -> None:
    text = format_dupes(DupesResult((_group("a", "a"),)))
    assert "  /srv/0.txt" in text and "a:" not in text


def test_a_fleets_answers_name_the_hosts() -> None:
    text = format_dupes(DupesResult((_group("a", "b"),)))
    assert "a:/srv/0.txt" in text and "b:/srv/1.txt" in text
    match = Match("/srv/x", "/srv", RelationKind.NEAR, UnitType.DATA, 3, 8, None, None, 1, host="b")
    other = Match("/srv/y", "/srv", RelationKind.NEAR, UnitType.DATA, 4, 8, None, None, 1, host="a")
    assert "b:/srv/x" in format_similar(SimilarResult((match, other)))


def test_an_answer_naming_only_another_host_names_it() -> None:
    match = Match("/srv/x\tname", "/srv", RelationKind.EXACT, UnitType.INSTANCE, 0, 0, None,
                  None, 1, links=("/srv/x\nlink",), host="b")  # fmt: skip
    result = SimilarResult((match,))
    # Asked on host a: the only file is host b's.
    assert format_similar(result, "a").splitlines() == [
        f"{'exact':>24}  b:/srv/x\\tname",
        f"{'':>24}  = /srv/x\\nlink (hardlink)",
    ]
    # Asked on host b: its own file, shown as before.
    assert "b:" not in format_similar(result, "b")
    assert "a:/srv/0.txt" in format_dupes(DupesResult((_group("a", "a"),)), "b")
    assert "a:" not in format_dupes(DupesResult((_group("a", "a"),)), "a")


def test_a_near_folders_share_is_shown_as_its_whole_percent_never_rounded_up() -> None:
    def shown(share: float) -> str:
        centre = DirMember("/srv/a", "/srv", "h", 50, 100)
        member = DirMember("/srv/b", "/srv", "h", 50, 100, share=share)
        text = format_dirs(DirsResult((DirGroup(DupKind.NEAR, (centre, member)),), folders=2))
        return text.split("  /srv/b/  ", 1)[1].split(" ", 1)[0]

    # 29/50, 57/100 and 7/25 are a bit below their percent as floats.
    expected = {29 / 50: "58%", 57 / 100: "57%", 7 / 25: "28%", 0.999: "99%", 1.0: "100%"}
    assert {share: shown(share) for share in expected} == expected
