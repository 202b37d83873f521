"""Keep rules and the steps of a plan (pure)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.dedupe.build import build_plan
from isccd.dedupe.keep import DEFAULT_RULES, KeepBy, KeepRule, choose_keep, parse_rule
from isccd.dedupe.plan import Action, GroupKind, Member, near_kept, steps_of
from tests.dedupe.conftest import data_code


def member(path: str, *, mtime: int = 0, size: int = 10, inode: int | None = None) -> Member:
    ino = inode if inode is not None else abs(hash(path)) % 10**9
    return Member((path,), "/r", 1, ino, size, mtime, "ab" * 8)


A = member("/r/deep/er/a.jpg", mtime=300, size=10)
B = member("/r/b.jpg", mtime=100, size=20)
C = member("/r/photos/c.jpg", mtime=200, size=30)


@pytest.mark.parametrize(
    ("rules", "kept"),
    [
        ("oldest", B),
        ("newest", A),
        ("largest", C),
        ("shortest-path", B),
        ("path=/r/photos", C),
        ("path=/r/deep", A),
    ],
)
def test_each_rule(rules: str, kept: Member) -> None:
    members = [A, B, C]
    assert members[choose_keep(members, [parse_rule(r) for r in rules.split(",")])] == kept


def test_rules_break_ties_in_order() -> None:
    a = member("/r/x/a", mtime=1, size=5)
    b = member("/r/b", mtime=1, size=9)
    c = member("/r/c", mtime=2, size=9)
    members = [a, b, c]
    by = [parse_rule("oldest"), parse_rule("largest")]
    assert members[choose_keep(members, by)] == b  # a and b equally old: the larger
    by = [parse_rule("largest"), parse_rule("newest")]
    assert members[choose_keep(members, by)] == c
    by = [parse_rule("path=/nowhere"), parse_rule("shortest-path")]
    assert members[choose_keep(members, by)] == b  # /r/b before /r/c: the path decides


@given(st.permutations([member(f"/r/{n}", mtime=5) for n in ("b", "a", "c", "a2")]))
def test_the_last_tie_break_does_not_depend_on_the_order(members: list[Member]) -> None:
    assert members[choose_keep(members, [KeepRule(KeepBy.OLDEST)])].path == "/r/a"


def test_a_reference_folder_wins_over_every_rule() -> None:
    members = [A, B, C]
    assert members[choose_keep(members, DEFAULT_RULES, keep_in=["/r/deep"])] == A


@pytest.mark.parametrize("text", ["oldes", "path=", "path=relative", "size=3", "path"])
def test_bad_rules_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"path=|keep rule"):
        parse_rule(text)


def test_steps_leave_hardlinks_of_the_kept_file_and_protected_files() -> None:
    kept = member("/r/a", mtime=1, inode=7)
    same = Member(("/r/a-link",), "/r", 1, 7, 10, 1, "ab" * 8)  # the kept file, another name
    ref = member("/r/ref/x", mtime=5)
    other = Member(("/r/b", "/r/b2"), "/r", 1, 8, 10, 3, "ab" * 8)
    plan = build_plan([(GroupKind.EXACT, [same, other, ref, kept])], DEFAULT_RULES)
    assert plan.groups[0].kept == kept
    steps, left = steps_of(plan, Action.LINK, protected=("/r/ref",))
    assert [s.path for s in steps] == ["/r/b", "/r/b2"]  # every name of the victim
    assert {(u.path, u.reason) for u in left} == {
        ("/r/a-link", "already a hardlink of the kept file"),
        ("/r/ref/x", "in a --keep-in folder"),
    }


def near_member(m: Member, code: str, *, centre: bool = False) -> Member:
    return dataclasses.replace(m, blake3=None, code=code, centre=centre)


def test_near_groups_give_steps_only_to_a_move_with_near() -> None:
    members = [near_member(A, data_code(0)), near_member(B, data_code(3), centre=True)]
    plan = build_plan([(GroupKind.NEAR, members)], DEFAULT_RULES, thresholds=[8])
    for action, near in [(Action.LINK, True), (Action.REMOVE, True), (Action.MOVE, False)]:
        steps, left = steps_of(plan, action, near=near, move_to="/attic")
        assert steps == () and len(left) == 2
    steps, _ = steps_of(plan, Action.MOVE, near=True, move_to="/attic")
    assert [(s.path, s.target) for s in steps] == [(A.path, "/attic/r/deep/er/a.jpg")]


def test_a_near_move_takes_only_the_members_near_the_file_kept() -> None:
    # C is the centre, A and B 6 bits from it either way and 12 from each other. The rules
    # keep B (the oldest): A is beyond the threshold of B, and stays where it is.
    a, b = near_member(A, data_code(0)), near_member(B, data_code(12))
    c = near_member(C, data_code(6, shift=6), centre=True)
    plan = build_plan([(GroupKind.NEAR, [a, b, c])], DEFAULT_RULES, thresholds=[8])
    [group] = plan.groups
    assert group.kept.path == B.path and near_kept(group, a) == 12 and near_kept(group, c) == 6
    steps, left = steps_of(plan, Action.MOVE, near=True, move_to="/attic")
    assert [s.path for s in steps] == [C.path]
    assert [(u.path, u.reason) for u in left] == [
        (A.path, "not near the file kept: 12 bits from it, beyond 8")
    ]
    # Kept at the centre, both are moved.
    plan = build_plan([(GroupKind.NEAR, [a, b, c])], [parse_rule("largest")], thresholds=[8])
    steps, left = steps_of(plan, Action.MOVE, near=True, move_to="/attic")
    assert sorted(s.path for s in steps) == sorted([A.path, B.path]) and left == ()


def test_a_near_member_without_a_code_is_never_moved() -> None:
    plan = build_plan([(GroupKind.NEAR, [near_member(A, data_code(0)), B])], DEFAULT_RULES, [], [8])
    steps, left = steps_of(plan, Action.MOVE, near=True, move_to="/attic")
    assert steps == () and [u.path for u in left] == [A.path]


def test_a_file_in_an_exact_and_a_near_group_is_acted_on_once_and_stays_kept() -> None:
    """Exact copies are near duplicates too: the later group keeps what the earlier kept and
    leaves out what the earlier acted on."""
    a, b = member("/r/a", mtime=1), member("/r/b", mtime=2)
    draft = member("/r/draft", mtime=0)  # the oldest: the rules alone would keep it
    plan = build_plan(
        [(GroupKind.EXACT, [a, b]), (GroupKind.NEAR, [a, b, draft])], [KeepRule(KeepBy.OLDEST)]
    )
    exact, near = plan.groups
    assert exact.kept == a
    assert near.members == (a, draft) and near.kept == a
