"""Ignore patterns matched through one joined expression leave out exactly the paths that
pathspec's own matching (git's rules, negations included) leaves out."""

from __future__ import annotations

import pathspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.settings import WatchSettings
from isccd.walk import compile_ignore, is_ignored

#: Pieces of gitignore patterns: wildcards, classes, anchors, negation, escapes, directory
#: marks, and text that looks like an expression's named group.
_PIECES = ["a", "b", ".", "*", "**", "?", "/", "!", "[ab]", "[!a]", "\\", "#", " ", "(?P<x>", "~"]
_NAMES = ["a", "b", "ab", ".a", "a.b", "(?P<x>", "~", "#a", "!a", "*", "?"]

patterns = st.lists(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=5).map("".join))
paths = st.lists(st.sampled_from(_NAMES), min_size=1, max_size=4).map("/".join)


def _git(lines: list[str]) -> pathspec.GitIgnoreSpec | None:
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except Exception:  # a malformed pattern: compile_ignore refuses it too
        return None


@pytest.mark.slow
@given(patterns, st.lists(paths, min_size=1, max_size=20), st.booleans())
def test_joined_patterns_match_as_pathspec_does(
    lines: list[str], rels: list[str], is_dir: bool
) -> None:
    reference = _git(lines)
    if reference is None or not lines:
        return
    spec = compile_ignore(lines)
    for rel in rels:
        expected = reference.match_file(rel + "/" if is_dir else rel)
        assert is_ignored(spec, "/r", f"/r/{rel}", is_dir) is expected, (lines, rel)


def test_the_default_patterns_are_joined() -> None:
    spec = compile_ignore(WatchSettings().ignore)
    assert spec is not None
    assert spec.any_match is not None
    assert is_ignored(spec, "/r", "/r/a/.git", is_dir=True)
    assert is_ignored(spec, "/r", "/r/a/notes.txt~", is_dir=False)
    assert not is_ignored(spec, "/r", "/r/a/notes.txt", is_dir=False)


def test_patterns_that_match_at_any_depth_split_the_path_once() -> None:
    # Each default pattern matches a name at any depth: the joined expression tries the
    # path's directories once for all of them, not once per pattern.
    spec = compile_ignore([*WatchSettings().ignore, "/top", "a/b"])
    assert spec is not None and spec.any_match is not None
    assert spec.any_match.pattern.count("(?:.+/)?") == 1
    assert is_ignored(spec, "/r", "/r/x/y/z.swp", is_dir=False)
    assert is_ignored(spec, "/r", "/r/top", is_dir=False)
    assert not is_ignored(spec, "/r", "/r/x/top", is_dir=False)
    assert is_ignored(spec, "/r", "/r/a/b", is_dir=False)


def test_negated_patterns_are_still_matched_in_full() -> None:
    spec = compile_ignore(["*.txt", "!keep.txt"])
    assert not is_ignored(spec, "/r", "/r/keep.txt", is_dir=False)
    assert is_ignored(spec, "/r", "/r/other.txt", is_dir=False)
