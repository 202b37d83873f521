"""Flake-Codes: layout, per-millisecond counter, thread safety, and the Flake class.

Flakes are random by design, so the generator is driven by an injected clock and entropy
source; the layout is checked against the reference's decoder.
"""

from __future__ import annotations

import datetime
import threading

import iscc_core as ic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.iscc import flake
from isccd.iscc.exceptions import IsccError

MS = 1645207405468  # 2022-02-18T18:03:25.468Z, the example of the reference's documentation


class FakeClock:
    """A clock that returns the nanoseconds it is set to."""

    def __init__(self, millis: int) -> None:
        self.ns = millis * 1_000_000

    def __call__(self) -> int:
        return self.ns


def entropy_of(value: int) -> flake.FlakeGenerator:
    return flake.FlakeGenerator(FakeClock(MS), lambda n: value.to_bytes(n, "big"))


def test_layout_is_milliseconds_then_counter() -> None:
    digest = entropy_of(0x1234).digest(64)
    assert digest == MS.to_bytes(6, "big") + b"\x12\x34"


def test_counter_increments_within_a_millisecond_and_reseeds_after() -> None:
    clock = FakeClock(MS)
    seeds = iter([5, 900])
    gen = flake.FlakeGenerator(clock, lambda n: next(seeds).to_bytes(n, "big"))
    first, second = gen.digest(64), gen.digest(64)
    assert int.from_bytes(second[6:], "big") == int.from_bytes(first[6:], "big") + 1 == 6
    clock.ns += 1_000_000
    third = gen.digest(64)
    assert third[:6] == (MS + 1).to_bytes(6, "big")
    assert int.from_bytes(third[6:], "big") == 900


def test_counter_wraps_instead_of_overflowing() -> None:
    gen = entropy_of(0xFFFF)
    assert gen.digest(64)[6:] == b"\xff\xff"
    assert gen.digest(64)[6:] == b"\x00\x00"


@pytest.mark.parametrize("bits", [64, 96, 128, 160, 192, 224, 256])
def test_every_size_is_a_valid_flake_code(bits: int) -> None:
    code = flake.gen_flake_code_v0(bits)["iscc"]
    assert ic.iscc_validate(code)
    assert ic.iscc_type_id(code) == f"FLAKE-NONE-V0-{bits}"
    assert flake.gen_flake_code(bits)["iscc"][:7] == code[:7]


@pytest.mark.parametrize("bits", [32, 48, 100, 288, 512])
def test_bad_sizes_are_refused(bits: int) -> None:
    with pytest.raises(IsccError, match="64 to 256"):
        flake.gen_flake_code_v0(bits)


def test_flakes_are_unique_across_threads() -> None:
    gen = flake.FlakeGenerator(FakeClock(MS))
    made: list[bytes] = []

    def work() -> None:
        made.extend(gen.digest(64) for _ in range(2000))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(made)) == len(made) == 8000


def test_default_flakes_are_unique_and_sorted_by_time() -> None:
    codes = [flake.Flake() for _ in range(500)]
    assert len({f.int for f in codes}) == 500
    times = [f.int >> 16 for f in codes]
    assert times == sorted(times)


def test_flake_forms() -> None:
    f = flake.Flake(ts=MS / 1000)
    assert f.time == "2022-02-18T18:03:25.468"
    assert f.iscc == "ISCC:" + ic.encode_component(ic.MT.FLAKE, 0, 0, 64, f.int.to_bytes(8, "big"))
    assert f.string == ic.encode_base32hex(f.int.to_bytes(8, "big"))
    assert flake.Flake.from_string(f.string) == f
    assert flake.Flake.from_int(int(f)) == f
    assert str(f) == f.string
    assert repr(f) == f'Flake("{f.string}")'
    assert hash(f) == hash(flake.Flake.from_int(f.int))


@given(st.integers(0, 2**64 - 1))
def test_from_int_string_equals_the_reference(value: int) -> None:
    assert flake.Flake.from_int(value).string == _reference_from_int(value).string


#: The last millisecond a datetime can show (9999-12-31T23:59:59.999).
_LAST_MS = datetime.datetime(9999, 12, 31, 23, 59, 59, 999000) - datetime.datetime(1970, 1, 1)


@given(st.integers(0, _LAST_MS // datetime.timedelta(milliseconds=1)), st.integers(0, 2**16 - 1))
def test_from_int_time_is_the_millisecond_count(ms: int, low: int) -> None:
    # The reference turns milliseconds into float seconds, which can round, so the expected
    # time is counted in whole milliseconds here instead.
    expected = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
    ours = flake.Flake.from_int(ms << 16 | low)
    assert ours.time == expected.isoformat(timespec="milliseconds")


def _reference_from_int(value: int) -> ic.Flake:
    """``ic.Flake.from_int(value)`` without its throw-away ``Flake()``: that constructor draws
    from the reference's process-wide counter, which overflows after some thousands of calls in
    one millisecond and makes a long Hypothesis run fail in the reference, not in isccd."""
    ref: ic.Flake = object.__new__(ic.Flake)
    ref._flake = value.to_bytes(8, "big", signed=False)
    ref._bits = 64
    return ref


def test_from_int_refuses_too_large_values() -> None:
    with pytest.raises(IsccError, match="not a 64-bit Flake"):
        flake.Flake.from_int(2**64)
