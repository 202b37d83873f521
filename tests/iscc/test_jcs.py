"""RFC 8785 canonical JSON: RFC examples, and equality with the ``jcs`` package the reference
uses (installed with iscc-core)."""

from __future__ import annotations

import json
import math
import struct

import jcs
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from isccd.iscc.exceptions import IsccError
from isccd.iscc.jcs import canonicalize, es6_number

#: Keys and strings whose UTF-16 order differs from code point order, escapes, RTL, CJK, emoji.
SPECIAL = '\r\n\t\x00\x1f\x7f"\\/\u0080\u00f6\u20ac\ufb33\ue000\uffff\U0001f600\u05d0\u4e2d\u0301'

json_text = st.text(st.sampled_from(SPECIAL) | st.characters(), max_size=12)
json_numbers = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(
        [0.0, -0.0, 1.0, 1e21, 1e-7, 1e-6, 5e-324, 2.0**53 + 2, 1.7976931348623157e308]
    ),
)
json_values = st.recursive(
    st.none() | st.booleans() | json_numbers | json_text,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(json_text, children, max_size=4)
    ),
    max_leaves=15,
)

#: RFC 8785 appendix B: IEEE 754 bit patterns and their canonical text.
RFC_NUMBERS = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


@pytest.mark.parametrize(("pattern", "text"), RFC_NUMBERS)
def test_rfc_number_examples(pattern: str, text: str) -> None:
    (value,) = struct.unpack(">d", bytes.fromhex(pattern))
    assert es6_number(value) == text


def test_rfc_member_sorting_example() -> None:
    # RFC 8785 section 3.2.3: sorted by UTF-16 code units, so the emoji (a surrogate pair,
    # 0xD83D...) comes before U+FB33.
    obj = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\U0001f600": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
    }
    order = list(json.loads(canonicalize(obj)))
    assert order == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]


def test_rfc_escaping() -> None:
    assert canonicalize("\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"/") == (
        '"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"'.encode()
    )


@given(json_values)
@example({"value": 1.0})
@example({"value": 1e20})
@example([2**53 + 1, -(2**63), 10**21])
def test_equals_jcs_package(value: object) -> None:
    try:
        expected = jcs.canonicalize(value)
    except (OverflowError, ValueError):  # an int beyond the double range, a lone surrogate
        with pytest.raises(IsccError):
            canonicalize(value)
        return
    assert canonicalize(value) == expected


@given(json_values)
def test_output_is_json_that_reads_back_to_the_same_doubles(value: object) -> None:
    try:
        text = canonicalize(value)
    except IsccError:
        return

    def as_doubles(v: object) -> object:
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, int | float):
            return float(v)
        if isinstance(v, dict):
            return {k: as_doubles(x) for k, x in v.items()}
        assert isinstance(v, list | tuple)
        return [as_doubles(x) for x in v]

    assert as_doubles(json.loads(text)) == as_doubles(value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused(value: float) -> None:
    with pytest.raises(IsccError, match="finite"):
        canonicalize({"x": [value]})


def test_ints_beyond_doubles_are_refused() -> None:
    with pytest.raises(IsccError, match="double range"):
        canonicalize({"x": 10**400})


def test_lone_surrogates_are_refused() -> None:
    with pytest.raises(IsccError, match="surrogate"):
        canonicalize({"x": "\ud800"})
    with pytest.raises(IsccError, match="surrogate"):
        canonicalize({"\udfff": 1})


def test_self_reference_is_refused() -> None:
    loop: list[object] = [1]
    loop.append(loop)
    with pytest.raises(IsccError, match="refers to itself"):
        canonicalize({"x": loop})


@pytest.mark.slow
def test_deep_nesting_is_refused() -> None:
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(IsccError, match="nested too deeply"):
        canonicalize(deep)


def test_shared_values_are_not_a_loop() -> None:
    shared = [1, 2]
    assert canonicalize({"a": shared, "b": shared}) == b'{"a":[1,2],"b":[1,2]}'


@pytest.mark.parametrize("value", [{1: "a"}, {None: 1}, {("a",): 1}])
def test_non_str_keys_are_a_type_error(value: object) -> None:
    with pytest.raises(TypeError, match="keys must be str"):
        canonicalize(value)


@pytest.mark.parametrize("value", [{1, 2}, b"x", object(), 1j])
def test_non_json_values_are_a_type_error(value: object) -> None:
    with pytest.raises(TypeError, match="not a JSON value"):
        canonicalize({"x": value})
