"""compose_iscc builds the ISCC-CODE from the units' types and digests: the same code as
decoding and combining their ISCC strings."""

from __future__ import annotations

import io

import pytest

from isccd.hashing import compose_iscc
from isccd.hashing.content import HEADER_OF, digest_unit, make_unit
from isccd.iscc import (
    IsccError,
    encode_component,
    gen_audio_code_v0,
    gen_data_code_v0,
    gen_image_code_v0,
    gen_instance_code_v0,
    gen_iscc_code_v0,
    gen_meta_code_v0,
    gen_text_code_v0,
    gen_video_code_v0,
)
from isccd.iscc.constants import MT, ST, VS
from isccd.model import Unit, UnitType

DATA = b"small files, many of them " * 40


def _units(content: tuple[UnitType, str] | None, bits: int) -> list[Unit]:
    units = [make_unit(UnitType.META, gen_meta_code_v0("a name", bits=bits)["iscc"], "")]
    if content is not None:
        units.append(make_unit(content[0], content[1], ""))
    data = gen_data_code_v0(io.BytesIO(DATA), bits=bits)["iscc"]
    instance = gen_instance_code_v0(io.BytesIO(DATA), bits=bits)["iscc"]
    return [*units, make_unit(UnitType.DATA, data, ""), make_unit(UnitType.INSTANCE, instance, "")]


CONTENT = [
    None,
    (UnitType.TEXT, gen_text_code_v0("hello small world")["iscc"]),
    (UnitType.IMAGE, gen_image_code_v0([i % 256 for i in range(1024)])["iscc"]),
    (UnitType.AUDIO, gen_audio_code_v0([i * 7919 for i in range(64)])["iscc"]),
    (UnitType.VIDEO, gen_video_code_v0([tuple(range(380))])["iscc"]),
]


@pytest.mark.parametrize("content", CONTENT, ids=["none", "text", "image", "audio", "video"])
@pytest.mark.parametrize("bits", [64, 128, 256])
@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("with_meta", [True, False])
def test_the_code_equals_the_one_combined_from_the_unit_strings(
    content: tuple[UnitType, str] | None, bits: int, wide: bool, with_meta: bool
) -> None:
    units = _units(content, bits)[0 if with_meta else 1 :]
    expected = gen_iscc_code_v0([u.iscc for u in units], wide=wide)["iscc"]
    assert compose_iscc(units, wide) == expected


DIGEST = bytes(range(7, 7 + 32 * 5, 5))


@pytest.mark.parametrize("unit_type", [t for t in UnitType if t is not UnitType.MIXED])
@pytest.mark.parametrize("bits", range(32, 257, 32))
def test_a_digest_unit_is_the_unit_encode_component_writes(unit_type: UnitType, bits: int) -> None:
    mtype, stype = HEADER_OF[unit_type]
    unit = digest_unit(unit_type, DIGEST, bits, "p")
    assert unit.iscc == "ISCC:" + encode_component(mtype, stype, VS.V0, bits, DIGEST)
    assert unit.digest == DIGEST[: bits // 8]
    assert make_unit(unit_type, unit.iscc, "p") == unit


@pytest.mark.parametrize("bits", [0, 8, 40, 288, 64.0, True, -64])
def test_a_digest_unit_of_an_illegal_length_is_refused_as_encode_component_refuses(
    bits: object,
) -> None:
    with pytest.raises((IsccError, TypeError)) as expected:
        encode_component(MT.DATA, ST.NONE, VS.V0, bits, DIGEST)  # type: ignore[arg-type]
    for _ in range(2):  # the second time too (nothing of a refusal is kept)
        with pytest.raises(expected.type, match=str(expected.value)):
            digest_unit(UnitType.DATA, DIGEST, bits, "p")  # type: ignore[arg-type]


def test_a_digest_shorter_than_the_length_is_refused() -> None:
    with pytest.raises(IsccError, match="digest has 64 bits, 128 needed"):
        digest_unit(UnitType.INSTANCE, DIGEST[:8], 128, "p")
