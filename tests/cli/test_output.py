"""Output helpers shared by the commands."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.cli.output import Progress, dumps, format_size, print_json

#: JSON values, their strings with the lone surrogates non-UTF-8 path bytes decode to (numbers:
#: JSON's, not NaN or the infinities, which below the levels laid out come out as null).
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


def depth_of(value: Any) -> int:
    if isinstance(value, dict | list) and value:
        return 1 + max(depth_of(v) for v in (value.values() if isinstance(value, dict) else value))
    return 0


@given(JSON, st.integers(0, 4))
def test_json_laid_out_to_a_depth_is_the_same_document(value: Any, depth: int) -> None:
    text = dumps(value, indent=2, depth=depth)
    assert json.loads(text) == value
    assert text.isascii()
    # Deep enough, it is the indented document json writes; below the depth, each value is
    # on one line: a line a value of the levels laid out, and their brackets.
    if depth >= depth_of(value):
        assert text == json.dumps(value, indent=2, ensure_ascii=True)
    else:
        assert text.count("\n") < json.dumps(value, indent=2).count("\n")


def test_a_result_is_laid_out_a_group_a_line() -> None:
    result = {"groups": [{"members": [{"path": "/a"}, {"path": "/b\udcff"}]}], "truncated": False}
    assert dumps(result, indent=2, depth=2).splitlines() == [
        "{",
        '  "groups": [',
        '    {"members":[{"path":"/a"},{"path":"/b\\udcff"}]}',
        "  ],",
        '  "truncated": false',
        "}",
    ]


def test_a_value_that_is_not_json_is_written_as_its_text_at_every_level() -> None:
    value = {"groups": [{"path": Path("/a")}, Path("/b")], "root": Path("/r")}
    assert json.loads(dumps(value, indent=2, depth=2)) == {
        "groups": [{"path": "/a"}, "/b"],
        "root": "/r",
    }


def test_a_document_that_cannot_be_written_leaves_nothing_written() -> None:
    class Unwritable:
        def __str__(self) -> str:
            raise ValueError("no text")

    stream = io.StringIO()
    with pytest.raises(ValueError, match="no text"):
        print_json({"groups": [1, 2], "last": [Unwritable()]}, stream=stream, indent=2, depth=1)
    assert stream.getvalue() == ""


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (14_234, "13.9 KiB"),
        (1024**2 - 1, "1024.0 KiB"),
        (1024**2, "1.0 MiB"),
        (3 * 1024**3, "3.0 GiB"),
        (5 * 1024**4, "5.0 TiB"),
        (2048 * 1024**4, "2048.0 TiB"),
    ],
)
def test_sizes_are_given_in_binary_units(n: int, text: str) -> None:
    assert format_size(n) == text


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_on_a_terminal_at_most_once_per_interval_and_erases_itself() -> None:
    now = [0.0]
    stream = _Terminal()
    with Progress("hashing", total=4, stream=stream, interval=1.0, clock=lambda: now[0]) as bar:
        now[0] = 2.0
        bar.advance()
        bar.advance()  # same instant: not drawn again
        assert stream.getvalue().count("hashing") == 1
        assert "hashing: 1/4 (25%)" in stream.getvalue()
    assert stream.getvalue().endswith("\r\x1b[K")


def test_progress_is_erased_before_a_result_and_drawn_again_after() -> None:
    now = [0.0]
    stream = _Terminal()
    bar = Progress("coding", total=2, stream=stream, interval=1.0, clock=lambda: now[0])
    now[0] = 2.0
    bar.advance(note="evil\nname.bin")
    bar.clear()
    bar.clear()  # nothing shown: nothing written
    assert stream.getvalue() == "\r\x1b[Kcoding: 1/2 (50%) 0/s evil\\nname.bin\r\x1b[K"
    now[0] = 4.0
    bar.advance()
    bar.close()
    assert stream.getvalue().endswith("coding: 2/2 (100%) 0/s\r\x1b[K")


def test_progress_is_silent_off_a_terminal() -> None:
    stream = io.StringIO()
    with Progress("hashing", stream=stream, interval=0.0) as bar:
        bar.advance(10)
    assert stream.getvalue() == ""
