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

    def lstat(p: str) -> os.stat_result:
        examined.append(p)
        return os.lstat(p)

    def readlink(p: str) -> str:
        examined.append(p)
        return str(Path(p).readlink())

    try:
        resolved: str | None = resolve_in_roots(path, [root], lstat=lstat, readlink=readlink)
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
