"""Client paths are resolved inside the watched roots without touching anything outside them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.errors import ProtocolError
from isccd.server import resolve_in_roots


def _code(path: str, roots: list[str]) -> str:
    with pytest.raises(ProtocolError) as info:
        resolve_in_roots(path, roots)
    return info.value.code


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("a.txt", "a.txt"),
        ("", ""),
        ("sub/../a.txt", "a.txt"),
        ("./sub//b.txt", "sub/b.txt"),
        ("link_in/b.txt", "sub/b.txt"),
        ("link_abs_in", "sub/b.txt"),
        ("link_in/../a.txt", "a.txt"),
        ("missing/x.txt", "missing/x.txt"),
        ("missing/../a.txt", "a.txt"),
    ],
)
def test_paths_inside_resolve_like_realpath(tmp_tree: Path, rel: str, expected: str) -> None:
    path = f"{tmp_tree}/{rel}" if rel else str(tmp_tree)
    want = f"{tmp_tree}/{expected}" if expected else str(tmp_tree)
    assert resolve_in_roots(path, [str(tmp_tree)]) == want


@pytest.mark.parametrize(
    "rel",
    [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "link_out/secret.txt",
        "link_out",
        "link_up/secret.txt",
        "link_in/../../outside",
        "missing/../../outside/secret.txt",
        "..",
    ],
)
def test_escapes_are_refused(tmp_tree: Path, rel: str) -> None:
    assert _code(f"{tmp_tree}/{rel}", [str(tmp_tree)]) == "outside_roots"


def test_ancestors_and_unrelated_paths_are_outside(tmp_tree: Path) -> None:
    assert _code("/", [str(tmp_tree)]) == "outside_roots"
    assert _code(str(tmp_tree.parent), [str(tmp_tree)]) == "outside_roots"
    assert _code("/etc/passwd", [str(tmp_tree)]) == "outside_roots"
    assert _code(str(tmp_tree) + "-sibling/x", [str(tmp_tree)]) == "outside_roots"
    assert _code(f"{tmp_tree}/a.txt", []) == "outside_roots"


def test_the_answer_does_not_depend_on_whether_the_outside_path_exists(tmp_tree: Path) -> None:
    exists = _code(f"{tmp_tree}/link_up/secret.txt", [str(tmp_tree)])
    missing = _code(f"{tmp_tree}/link_up/no-such-file", [str(tmp_tree)])
    assert exists == missing == "outside_roots"


def test_bad_paths_are_invalid_arguments(tmp_tree: Path) -> None:
    assert _code("relative/a.txt", [str(tmp_tree)]) == "invalid_argument"
    assert _code(f"{tmp_tree}/loop", [str(tmp_tree)]) == "invalid_argument"
    assert _code(f"{tmp_tree}/a\0b", [str(tmp_tree)]) == "invalid_argument"


def test_any_of_several_roots_will_do(tmp_tree: Path) -> None:
    other = tmp_tree.parent / "outside"
    roots = [str(tmp_tree), str(other)]
    assert resolve_in_roots(f"{tmp_tree}/link_up/secret.txt", roots) == f"{other}/secret.txt"


def test_a_root_given_with_a_trailing_slash_still_matches(tmp_tree: Path) -> None:
    assert resolve_in_roots(f"{tmp_tree}/a.txt", [f"{tmp_tree}/"]) == f"{tmp_tree}/a.txt"


def test_an_ancestor_replaced_by_a_symlink_is_not_followed(short_dir: Path) -> None:
    # The root is reached through /tmp/isccd-x/mid -> elsewhere: a changed ancestor could lead
    # anywhere, so the root given as .../mid/root is refused rather than followed.
    (short_dir / "elsewhere").mkdir()
    (short_dir / "elsewhere" / "root").mkdir()
    (short_dir / "mid").symlink_to(short_dir / "elsewhere")
    root = f"{short_dir}/mid/root"
    assert _code(f"{root}/x", [root]) == "outside_roots"


WORDS = ["a.txt", "sub", "b.txt", "..", ".", "link_in", "link_abs_in", "link_out", "link_up"]
WORDS += ["missing", "root", "outside", "secret.txt", "loop"]


@given(st.lists(st.sampled_from(WORDS), max_size=8), st.booleans())
def test_nothing_outside_the_roots_is_ever_examined(
    tmp_tree: Path, words: list[str], from_parent: bool
) -> None:
    root = str(tmp_tree)
    start = str(tmp_tree.parent) if from_parent else root
    path = "/".join([start, *words])
    examined: list[str] = []
    try:
        resolved: str | None = resolve_in_roots(path, [root], examined=examined.append)
    except ProtocolError as exc:
        assert exc.code in ("outside_roots", "invalid_argument")
        resolved = None
    for p in examined:
        assert p == root or p.startswith(root + "/") or root.startswith(p + "/"), p
    if resolved is not None:
        assert resolved == root or resolved.startswith(root + "/")
    if Path(path).exists():
        real = os.path.realpath(path)
        if real == root or real.startswith(root + "/"):
            assert resolved == real
        else:
            assert resolved is None


def _swap_for_link(directory: Path, target: Path) -> None:
    """Replace ``directory`` by a symbolic link to ``target`` (the directory moves aside)."""
    directory.rename(directory.with_name(directory.name + ".moved"))
    directory.symlink_to(target)


@pytest.fixture
def race_tree(short_dir: Path) -> tuple[Path, Path]:
    """A root holding the directory ``race``, and an outside directory whose ``link`` is a
    relative symbolic link (a name an attacker would like to learn)."""
    root, outside = short_dir / "root", short_dir / "outside"
    (root / "race").mkdir(parents=True)
    outside.mkdir()
    (outside / "link").symlink_to("shadow-of-something")
    (outside / "secret").write_text("s")
    return root, outside


def test_a_directory_swapped_for_a_link_while_resolving_leads_nowhere_outside(
    race_tree: tuple[Path, Path],
) -> None:
    # "race" is a directory when it is examined, then becomes a link to the outside just
    # before the next component is examined: that one must be looked up in the directory
    # examined (now moved aside), not through the link.
    root, outside = race_tree

    def swap(candidate: str) -> None:
        if candidate == f"{root}/race/link":
            _swap_for_link(root / "race", outside)

    resolved = resolve_in_roots(f"{root}/race/link", [str(root)], examined=swap)
    # Through the link the outside "link" would have been read, and its target named.
    assert resolved == f"{root}/race/link"


def test_outside_paths_answer_alike_whether_they_exist_or_not(
    race_tree: tuple[Path, Path],
) -> None:
    root, outside = race_tree
    (root / "race").rmdir()
    (root / "race").symlink_to(outside)
    base = root.parent  # an ancestor of the root
    answers = {
        rel: _code(f"{root}/{rel}", [str(root)])
        for rel in ("race/secret", "race/missing", "race/link", "race/link/x", "race/missing/x")
    }
    answers |= {
        rel: _code(f"{base}/{rel}", [str(root)])
        for rel in ("outside/secret", "outside/missing", "nothing/x", "root/../outside/secret")
    }
    answers |= {p: _code(p, [str(root)]) for p in ("/etc/passwd", "/etc/no-such-file", "/")}
    assert set(answers.values()) == {"outside_roots"}, answers
