"""ISCC-ID v1 and v0 against iscc-core 1.5.0 and the examples of the specification."""

from __future__ import annotations

import iscc_core as ic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.iscc import iscc_id
from isccd.iscc.exceptions import IsccError
from tests.iscc.code_strategies import ID_COUNTERS, WALLETS, iscc_codes, units

WALLET = "1Bq568oLhi5HvdgC6rcBSGmu4G3FeAntCz"


@given(st.integers(0, 2**52 - 1), st.integers(0, 4095), st.integers(0, 1))
def test_v1_equals_the_reference(timestamp: int, hub_id: int, realm_id: int) -> None:
    expected = ic.gen_iscc_id_v1(timestamp, hub_id, realm_id)
    assert iscc_id.gen_iscc_id_v1(timestamp, hub_id, realm_id) == expected
    assert iscc_id.gen_iscc_id(timestamp, hub_id, realm_id) == expected


def test_v1_examples_from_the_spec() -> None:
    assert iscc_id.gen_iscc_id(1714503123456789, 42) == {"iscc": "ISCC:MAIGC5KN3I6TCUBK"}
    assert iscc_id.gen_iscc_id(1714503123456789, 42, 1)["iscc"].startswith("ISCC:ME")


def test_v1_default_timestamp_is_now() -> None:
    def body(code: str) -> int:
        raw = ic.decode_base32(code.removeprefix("ISCC:"))
        assert raw[:2] == b"\x60\x10"  # ID, REALM_0, V1, 64 bits
        return int.from_bytes(raw[2:], "big")

    before = body(ic.gen_iscc_id_v1()["iscc"])
    ours = body(iscc_id.gen_iscc_id_v1()["iscc"])
    after = body(ic.gen_iscc_id_v1()["iscc"])
    # The body is (microseconds << 12 | hub): ours lies between two reference IDs made around it.
    assert before <= ours <= after


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((2**52, 0, 0), "timestamp"),
        ((-1, 0, 0), "timestamp"),
        ((0, 4096, 0), "HUB-ID"),
        ((0, -1, 0), "HUB-ID"),
        ((0, 0, 2), "realm"),
    ],
)
def test_v1_errors(args: tuple[int, int, int], message: str) -> None:
    with pytest.raises(IsccError, match=message):
        iscc_id.gen_iscc_id_v1(*args)


def test_v1_type_errors() -> None:
    with pytest.raises(TypeError):
        iscc_id.gen_iscc_id_v1(1.5)  # type: ignore[arg-type]


@given(st.one_of(iscc_codes(), units(min_bits=64)), st.integers(0, 3), WALLETS, ID_COUNTERS)
def test_v0_equals_the_reference(code: str, chain_id: int, wallet: str, uc: int) -> None:
    expected = ic.gen_iscc_id_v0(code, chain_id, wallet, uc)
    ours = iscc_id.gen_iscc_id_v0(code, chain_id, wallet, uc)
    assert ours == expected
    assert iscc_id.alg_simhash_from_iscc_id(ours["iscc"], wallet) == ic.alg_simhash_from_iscc_id(
        expected["iscc"], wallet
    )


def test_v0_examples_from_the_spec() -> None:
    text = "ISCC:EAASKDNZNYGUUF5A"  # Text-Code of "Hello World"
    assert iscc_id.gen_iscc_id_v0(text, 0, WALLET) == {"iscc": "ISCC:MAAJU3Y6GCTXLVKA"}
    assert iscc_id.gen_iscc_id_v0(text, 0, WALLET, 1) == {"iscc": "ISCC:MAAZU3Y6GCTXLVKAAE"}


@given(
    st.sampled_from(["MAAJU3Y6GCTXLVKA", "ISCC:MAAZU3Y6GCTXLVKAAE", "MMAJU3Y6GCTXLVKA"]),
    st.integers(0, 5),
)
def test_incr_v0_equals_the_reference(code: str, steps: int) -> None:
    ours, ref = code, code
    for _ in range(steps + 1):
        ours, ref = iscc_id.iscc_id_incr_v0(ours), ic.iscc_id_incr_v0(ref)
        assert ours == ref
        assert iscc_id.iscc_id_incr(ours) == ic.iscc_id_incr(ref)


def test_v0_counters_the_header_cannot_declare_are_refused() -> None:
    # A 3-byte uvarint counter makes an 88-bit body; no header length means 88 bits, so the
    # reference emits a code it cannot read back itself.
    code = ic.gen_iscc_id_v0("ISCC:EAASKDNZNYGUUF5A", 0, WALLET, 2**14)["iscc"]
    with pytest.raises(ValueError):
        ic.iscc_validate(code)
    with pytest.raises(IsccError, match="ISCC-ID bit length"):
        iscc_id.gen_iscc_id_v0("ISCC:EAASKDNZNYGUUF5A", 0, WALLET, 2**14)
    with pytest.raises(IsccError, match="ISCC-ID bit length"):
        iscc_id.gen_iscc_id_v0("ISCC:EAASKDNZNYGUUF5A", 0, WALLET, 2**28)


@pytest.mark.parametrize(
    ("code", "chain", "wallet", "uc", "message"),
    [
        ("ISCC:MAIGC5KN3I6TCUBK", 0, WALLET, 0, "from an ISCC-ID"),
        ("ISCC:EAASKDNZNYGUUF5A", 4, WALLET, 0, "chain ID"),
        ("ISCC:EAASKDNZNYGUUF5A", 0, "wället", 0, "ASCII"),
        ("ISCC:EAASKDNZNYGUUF5A", 0, WALLET, -1, "negative"),
        ("ISCC:EAASKDNZNYGUUF", 0, WALLET, 0, "base32"),
    ],
)
def test_v0_errors(code: str, chain: int, wallet: str, uc: int, message: str) -> None:
    with pytest.raises(IsccError, match=message):
        iscc_id.gen_iscc_id_v0(code, chain, wallet, uc)


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("ISCC:EAASKDNZNYGUUF5A", "not ISCC-ID"),
        ("ISCC:MAIGC5KN3I6TCUBK", "v0|v1"),
    ],
)
def test_incr_errors(code: str, message: str) -> None:
    with pytest.raises(IsccError, match=message):
        iscc_id.iscc_id_incr(code)
    with pytest.raises(IsccError):
        iscc_id.iscc_id_incr_v0(code)
