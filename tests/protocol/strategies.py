"""Hypothesis strategies for the protocol's tests: request ids, paths (with the names that are not
UTF-8) and JSON values."""

from __future__ import annotations

import os

from hypothesis import strategies as st

ids = st.one_of(st.integers(min_value=-(2**53), max_value=2**53), st.text(min_size=0, max_size=20))
abs_paths = st.lists(
    st.text(st.characters(blacklist_characters="/\0", blacklist_categories=["Cs"]), min_size=1),
    min_size=1,
    max_size=4,
).map(lambda parts: "/" + "/".join(parts))
# Names that are not UTF-8 arrive as lone surrogates (os.fsdecode); they must round-trip too.
raw_paths = st.binary(min_size=1, max_size=30).map(
    lambda b: "/" + os.fsdecode(b.replace(b"\0", b"_").replace(b"/", b"_"))
)
paths = st.one_of(abs_paths, raw_paths)
normal_paths = st.lists(st.from_regex(r"[a-z]{1,5}", fullmatch=True), min_size=1, max_size=3).map(
    lambda p: "/" + "/".join(p)
)

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.text(max_size=10)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
