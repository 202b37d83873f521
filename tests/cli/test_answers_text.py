"""The readable answers name each file's host when an answer spans more than one host."""

from __future__ import annotations

from isccd.cli.answers import format_dupes, format_similar
from isccd.model import UnitType
from isccd.protocol import DupesResult, DupGroup, DupKind, DupMember, SimilarMatch, SimilarResult


def _group(*hosts: str) -> DupGroup:
    members = tuple(
        DupMember(f"/srv/{i}.txt", "/srv", 10, "ISCC:IAA", host=host)
        for i, host in enumerate(hosts)
    )
    return DupGroup(DupKind.EXACT, UnitType.INSTANCE, 0, 10, members)


def test_one_hosts_answers_read_as_before() -> None:
    text = format_dupes(DupesResult((_group("a", "a"),)))
    assert "  /srv/0.txt" in text and "a:" not in text


def test_a_fleets_answers_name_the_hosts() -> None:
    text = format_dupes(DupesResult((_group("a", "b"),)))
    assert "a:/srv/0.txt" in text and "b:/srv/1.txt" in text
    match = SimilarMatch("/srv/x", "/srv", UnitType.DATA, 3, 8, "ISCC:GAA", host="b")
    other = SimilarMatch("/srv/y", "/srv", UnitType.DATA, 4, 8, "ISCC:GAA", host="a")
    assert "b:/srv/x" in format_similar(SimilarResult((match, other)))
