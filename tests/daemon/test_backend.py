"""The backend's translations: codes given to ``similar`` become units, pipeline groups become
the protocol's duplicate groups."""

from __future__ import annotations

import io

import iscc_core
import pytest

from isccd.daemon.backend import _group, units_of_code
from isccd.errors import ProtocolError
from isccd.match import Thresholds
from isccd.model import UnitType
from isccd.pipeline.queries import DupGroup, Member, NearLink
from isccd.protocol import DupKind


def test_an_iscc_code_becomes_its_units() -> None:
    meta = iscc_core.gen_meta_code_v0("Title")["iscc"]
    text = iscc_core.gen_text_code_v0("Hello world, some text")["iscc"]
    data = iscc_core.gen_data_code_v0(io.BytesIO(b"\x00" * 2048))["iscc"]
    instance = iscc_core.gen_instance_code_v0(io.BytesIO(b"\x00" * 2048))["iscc"]
    code = iscc_core.gen_iscc_code_v0([meta, text, data, instance])["iscc"]
    units = units_of_code(code)
    expected = ["ISCC:" + u for u in iscc_core.iscc_decompose(code)]
    assert [u.iscc for u in units] == expected
    assert [u.type for u in units] == [
        UnitType.META,
        UnitType.TEXT,
        UnitType.DATA,
        UnitType.INSTANCE,
    ]
    assert units[1].digest == iscc_core.iscc_decode(text)[4]
    (single,) = units_of_code(text)
    assert single.type is UnitType.TEXT


@pytest.mark.parametrize("code", ["", "ISCC:NOTACODE", "hello"])
def test_an_undecodable_code_is_an_invalid_argument(code: str) -> None:
    with pytest.raises(ProtocolError) as info:
        units_of_code(code)
    assert info.value.code == "invalid_argument"


def test_groups_become_one_member_per_path_with_distances_to_the_first() -> None:
    exact = DupGroup(
        "exact",
        (
            Member(("/r/a", "/r/a-link"), "/r", 100, "ISCC:A"),
            Member(("/r/b",), "/r", 100, "ISCC:A"),
        ),
        100,
    )
    out = _group(exact, Thresholds().of)
    assert out.kind is DupKind.EXACT
    assert out.unit is UnitType.INSTANCE
    assert [(m.path, m.distance) for m in out.members] == [
        ("/r/a", 0),
        ("/r/a-link", 0),
        ("/r/b", 0),
    ]
    near = DupGroup(
        "near",
        (
            Member(("/r/x",), "/r", 300, "ISCC:X"),
            Member(("/r/y",), "/r", 200, "ISCC:Y"),
            Member(("/r/z",), "/r", 100, "ISCC:Z"),
        ),
        300,
        (
            NearLink(0, 1, UnitType.IMAGE, 4),
            NearLink(2, 0, UnitType.IMAGE, 7),
            NearLink(1, 2, UnitType.DATA, 3),
        ),
    )
    out = _group(near, Thresholds().of)
    assert out.kind is DupKind.NEAR
    assert out.unit is UnitType.IMAGE
    assert out.threshold == 12
    assert out.wasted_bytes == 300
    assert [(m.path, m.distance) for m in out.members] == [("/r/x", 0), ("/r/y", 4), ("/r/z", 7)]
