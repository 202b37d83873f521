"""Text encodings, uvarints and multiformat strings, against iscc-core 1.5.0 and its libraries."""

from __future__ import annotations

import base58
import iscc_core as ic
import pytest
import uvarint
from hypothesis import given
from hypothesis import strategies as st

from isccd.iscc import multibase, multiformat, varint
from isccd.iscc.exceptions import IsccError
from tests.iscc.code_strategies import code_forms, valid_codes

B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


@given(st.binary(max_size=64))
def test_encoders_equal_the_reference(data: bytes) -> None:
    assert multibase.encode_base32(data) == ic.encode_base32(data)
    assert multibase.encode_base32hex(data) == ic.encode_base32hex(data)
    assert multibase.encode_base64(data) == ic.encode_base64(data)
    assert multibase.encode_base58(data) == base58.b58encode(data).decode()
    assert multibase.encode_base16(data) == data.hex()


@pytest.mark.parametrize("length", range(100))
def test_encode_base32_equals_the_reference_at_every_length(length: int) -> None:
    # Both sides of the length up to which a code is encoded as one number, every padding.
    data = bytes((i * 151 + 7) % 256 for i in range(length))
    assert multibase.encode_base32(data) == ic.encode_base32(data)
    assert multibase.encode_base32(b"\xff" * length) == ic.encode_base32(b"\xff" * length)


@given(st.binary(max_size=64))
def test_decoders_invert_the_reference_encoders(data: bytes) -> None:
    assert multibase.decode_base32(ic.encode_base32(data)) == data
    assert multibase.decode_base32(ic.encode_base32(data).lower()) == data
    assert multibase.decode_base32hex(ic.encode_base32hex(data).lower()) == data
    assert multibase.decode_base64(ic.encode_base64(data)) == data
    assert multibase.decode_base58(base58.b58encode(data).decode()) == data
    assert multibase.decode_base16(data.hex().upper()) == data


@given(st.text(alphabet=B32 + B32.lower(), max_size=40))
def test_decode_base32_of_any_text_behaves_as_the_reference(text: str) -> None:
    try:
        expected = ic.decode_base32(text)
    except ValueError:
        with pytest.raises(IsccError, match="no byte string encodes"):
            multibase.decode_base32(text)
    else:
        assert multibase.decode_base32(text) == expected


@pytest.mark.parametrize(
    ("func", "text"),
    [
        (multibase.decode_base32, "EAAS1"),
        (multibase.decode_base32, "EAASKDNZ="),
        (multibase.decode_base32, "EAASKDN\u0131"),
        (multibase.decode_base32hex, "0W"),
        (multibase.decode_base64, "ab+/"),
        (multibase.decode_base64, "abcde"),
        (multibase.decode_base58, "0OIl"),
        (multibase.decode_base16, "abc"),
        (multibase.decode_base16, "zz"),
    ],
)
def test_decoders_refuse_malformed_text(func: object, text: str) -> None:
    with pytest.raises(IsccError, match="malformed"):
        func(text)  # type: ignore[operator]


def test_decoders_refuse_non_str() -> None:
    for func in (multibase.decode_base32, multibase.decode_base64, multibase.decode_base58):
        with pytest.raises(TypeError):
            func(b"AAAA")  # type: ignore[arg-type]


@given(st.integers(0, 2**63 - 1), st.binary(max_size=4))
def test_uvarint_equals_the_reference(n: int, trailing: bytes) -> None:
    encoded = varint.encode_uvarint(n)
    assert encoded == uvarint.encode(n)
    assert varint.decode_uvarint(encoded + trailing) == tuple(uvarint.decode(encoded + trailing))


def test_uvarint_errors() -> None:
    with pytest.raises(IsccError, match="negative"):
        varint.encode_uvarint(-1)
    with pytest.raises(IsccError, match="empty"):
        varint.decode_uvarint(b"")
    # The reference reads a truncated varint as if its last byte ended it.
    with pytest.raises(IsccError, match="truncated"):
        varint.decode_uvarint(b"\x80\x81")


def test_multiformat_forms_of_the_spec_example() -> None:
    # ISO 24138 / iscc-core documentation: ISCC:EAASKDNZNYGUUF5A in each multibase.
    forms = {
        "f": "fcc012001250db96e0d4a17a0",
        "b": "bzqasaajfbw4w4dkkc6qa",
        "v": "vpg0i00951msms3aa2ug0",
        "z": "z4rHXCkLKrAH69UZ4T",
        "u": "uzAEgASUNuW4NSheg",
    }
    for base, text in forms.items():
        assert multiformat.encode_multiformat("ISCC:EAASKDNZNYGUUF5A", base) == text
        assert multiformat.normalize_multiformat(text) == "EAASKDNZNYGUUF5A"


@given(
    valid_codes,
    st.sampled_from(["mf_base16", "mf_base32", "mf_base32hex", "mf_base58btc", "mf_base64url"]),
)
def test_encode_multiformat_equals_the_reference(code: str, prop: str) -> None:
    expected = getattr(ic.Code(code), prop)
    assert multiformat.encode_multiformat(code, expected[0]) == expected


@pytest.mark.slow
@given(code_forms())
def test_normalize_multiformat_equals_the_reference(text: str) -> None:
    assert multiformat.normalize_multiformat(text) == ic.normalize_multiformat(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("f00012001250db96e0d4a17a0", "multiformat codec"),
        ("f", "multiformat codec"),
        ("fcc0g", "malformed base16"),
        ("z0OIl", "malformed base58"),
        ("", "empty"),
    ],
)
def test_normalize_multiformat_errors(text: str, message: str) -> None:
    with pytest.raises(IsccError, match=message):
        multiformat.normalize_multiformat(text)


def test_encode_multiformat_refuses_unknown_bases() -> None:
    with pytest.raises(IsccError, match="unknown multibase"):
        multiformat.encode_multiformat("ISCC:EAASKDNZNYGUUF5A", "x")
