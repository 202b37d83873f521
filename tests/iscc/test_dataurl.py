"""Base64 data-URLs: round trips, equality with the ``data_url`` package the reference uses, and
refusal of everything that is not a well-formed base64 data-URL."""

from __future__ import annotations

import pytest
from data_url import DataURL
from hypothesis import given
from hypothesis import strategies as st

from isccd.iscc.dataurl import decode_data_url, encode_data_url
from isccd.iscc.exceptions import IsccError

media_types = st.sampled_from(
    [
        "application/json",
        "application/ld+json",
        "text/plain",
        "image/svg+xml",
        "application/vnd.x-y.z",
    ]
)
headers = st.one_of(
    media_types,
    st.just(""),
    st.builds(lambda m, v: f"{m};charset={v}", media_types, st.sampled_from(["utf-8", "US-ASCII"])),
    st.builds(lambda m: f"{m};name=a%20b.json;x-y=1", media_types),
)


@given(st.binary(min_size=1, max_size=300), media_types)
def test_round_trip(data: bytes, media_type: str) -> None:
    url = encode_data_url(media_type, data)
    assert url.startswith(f"data:{media_type};base64,")
    assert decode_data_url(url) == data


@given(st.binary(min_size=1, max_size=300), media_types)
def test_encoding_equals_data_url_package(data: bytes, media_type: str) -> None:
    assert encode_data_url(media_type, data) == DataURL.from_byte_data(media_type, data).url


@given(st.binary(min_size=1, max_size=300), headers)
def test_decoding_equals_data_url_package(data: bytes, header: str) -> None:
    url = encode_data_url(header, data)
    reference = DataURL.from_url(url)
    assert reference is not None
    assert decode_data_url(url) == reference.data


@pytest.mark.parametrize(
    "url",
    [
        "data:application/json,%7B%7D",  # not base64
        "data:application/json;base64,",  # no data
        "data:application/json;base64,e30",  # missing padding
        "data:application/json;base64,e30===",  # too much padding
        "data:application/json;base64,e3-_",  # base64url alphabet
        "data:application/json;base64,e3 0=",  # whitespace
        "data:application/json;base64,e%330=",  # percent-encoded
        "data:Application/JSON;base64,e30=",  # the reference only reads lower-case types
        "DATA:application/json;base64,e30=",
        "application/json;base64,e30=",
        "https://example.com/meta.json",
        "",
    ],
)
def test_malformed_urls_are_refused(url: str) -> None:
    with pytest.raises(IsccError, match="data-URL"):
        decode_data_url(url)


def test_non_str_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="str"):
        decode_data_url(b"data:application/json;base64,e30=")  # type: ignore[arg-type]
