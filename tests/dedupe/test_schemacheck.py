"""The plan schema compiled into a predicate decides every plan as jsonschema does: the valid
ones it lets through, the invalid ones it hands to jsonschema for the message."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isccd.dedupe.planfile import _plan_check, plan_schema
from isccd.dedupe.schemacheck import SchemaCompileError, compile_schema


def _member(path: str, *, keep: bool = False, **more: object) -> dict[str, Any]:
    member = {"path": path, "root": "/r", "device": 2049, "inode": 12, "size": 4096,
              "mtime_ns": 1_700_000_000_000_000_000, "keep": keep}  # fmt: skip
    return member | more


#: A plan using every member of the format.
VALID: dict[str, Any] = {
    "format": "isccd-dedupe-plan",
    "version": 1,
    "created": 1.5,
    "source": "the index",
    "action": "link",
    "groups": [
        {
            "kind": "exact",
            "members": [
                _member("/r/a", keep=True, blake3="0123456789abcdef", action="keep"),
                _member(
                    "/r/b",
                    links=["/r/b2"],
                    allocated=4096,
                    nlink=3,
                    action="link",
                    datahash="1e20" + "a" * 64,
                ),
                _member("/r/c", instance="ISCC:IAA" + "A" * 13, action="leave", note="why"),
            ],
        },
        {
            "kind": "near",
            "unit": "data",
            "threshold": 8,
            "members": [
                _member("/r/n1", keep=True, code="ISCC:GAA" + "A" * 13, centre=True),
                _member("/r/n2", code="ISCC:GAA" + "B" * 13, action="move"),
            ],
        },
    ],
}

#: Values a mutation puts anywhere: the types and bounds the standard is subtle about.
TRICKY = st.sampled_from([
    None, True, False, 0, 1, -1, 1.0, 0.5, 256, 257, 2**63 - 1, 2**63, 2**64 - 1, 2**64,
    -(2**63), -(2**63) - 1, float("inf"), "", "/", "/a", "a", "/a\n", "/a\0b", "exact", "near",
    "isccd-dedupe-plan", "0" * 15, "0" * 16, "0" * 65, "ISCC:IAA" + "A" * 13, [], [1], {},
    {"keep": True}, {"keep": 1}, {"blake3": "0" * 16},
])  # fmt: skip


def _reference(document: object) -> bool:
    schema = plan_schema()
    return bool(jsonschema.Draft202012Validator(schema).is_valid(document))


@st.composite
def _mutated(draw: st.DrawFn) -> object:
    """``VALID`` with a few places changed: a value replaced, a member dropped or added."""
    doc: Any = copy.deepcopy(VALID)
    for _ in range(draw(st.integers(1, 3))):
        node = doc
        while isinstance(node, dict | list) and node and draw(st.booleans()):
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            key = draw(st.sampled_from(keys))
            if not isinstance(node[key], dict | list) or draw(st.integers(0, 3)) == 0:
                how = draw(st.sampled_from(["set", "drop"]))
                if how == "drop":
                    del node[key]
                else:
                    node[key] = draw(TRICKY)
                break
            node = node[key]
        else:
            if isinstance(node, dict):
                node[draw(st.sampled_from(["keep", "blake3", "extra", "kind", "links"]))] = draw(
                    TRICKY
                )
            elif isinstance(node, list):
                node.append(draw(TRICKY) if draw(st.booleans()) else copy.deepcopy(node[0]))
    return doc


def test_the_shipped_schema_compiles_and_lets_a_valid_plan_through() -> None:
    assert _reference(VALID)
    assert _plan_check()(VALID)


@settings(max_examples=600, deadline=None)
@given(_mutated())
def test_a_mutated_plan_is_decided_as_jsonschema_decides_it(document: object) -> None:
    assert _plan_check()(document) == _reference(document)


@pytest.mark.parametrize(
    ("schema", "value", "valid"),
    [
        ({"type": "integer"}, 1.0, True),
        ({"type": "integer"}, True, False),
        ({"type": "number"}, False, False),
        ({"const": 1}, True, False),
        ({"const": 1}, 1.0, True),
        ({"const": True}, 1, False),
        ({"enum": [[1, {"a": False}]]}, [1.0, {"a": False}], True),
        ({"enum": [[1, {"a": False}]]}, [1, {"a": 0}], False),
        ({"minimum": 3}, "short", True),
        ({"pattern": "^a$"}, "a\n", True),  # re.search: ``$`` matches before a last newline
        ({"contains": {"const": 1}, "minContains": 0, "maxContains": 1}, [2, 3], True),
        ({"contains": {"const": 1}, "maxContains": 1}, [1, 1], False),
        ({"if": {"const": 1}, "then": False, "else": {"type": "string"}}, 2, False),
        ({"additionalProperties": {"type": "string"}}, {"a": "x", "b": 1}, False),
    ],
)
def test_the_subtle_cases_of_the_standard(
    schema: dict[str, Any], value: object, valid: bool
) -> None:
    assert jsonschema.Draft202012Validator(schema).is_valid(value) is valid
    assert compile_schema(schema)(value) is valid


@pytest.mark.parametrize(
    "schema", [{"patternProperties": {}}, {"type": ["string", "null"]}, {"$ref": "#/$defs/x"}]
)
def test_a_keyword_it_does_not_check_is_refused(schema: dict[str, Any]) -> None:
    with pytest.raises(SchemaCompileError):
        compile_schema(schema)
