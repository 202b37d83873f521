"""A JSON Schema compiled once into a plain predicate: the fast first check of a plan file.

Validating a plan of 10,000 groups with ``jsonschema`` took 1.6-2 s, most of a 3 s
``--apply``; the same checks made by functions built once from the same schema take a few
hundredths of that. :func:`compile_schema` understands the keywords the plan schema uses (draft
2020-12: ``type``, ``const``, ``enum``, ``required``, ``properties``, ``additionalProperties``,
``items``, ``minItems``, ``maxItems``, ``contains`` with ``minContains`` and ``maxContains``,
``pattern``, ``minLength``, ``maxLength``, ``minimum``, ``maximum``, ``if``/``then``/``else``,
``anyOf``), ignores only annotations, and refuses any other keyword (a schema that gained one
would otherwise be checked without it).

It decides as ``jsonschema`` does, types and equality included (a bool is no integer, ``1.0``
is one; ``1`` equals ``1.0`` but not ``true``); a plan it finds invalid is handed to
``jsonschema`` for the message, and that verdict stands. Pure: no I/O, no state.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Mapping
from typing import Any

#: A compiled schema: true when the instance is valid.
Check = Callable[[Any], bool]

#: Keywords that only annotate.
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "default",
                          "examples", "deprecated", "readOnly", "writeOnly"})  # fmt: skip
_KNOWN = _ANNOTATIONS | {
    "type", "const", "enum", "required", "properties", "additionalProperties", "items",
    "minItems", "maxItems", "contains", "minContains", "maxContains", "pattern", "minLength",
    "maxLength", "minimum", "maximum", "if", "then", "else", "anyOf",
}  # fmt: skip


def _is_integer(value: Any) -> bool:
    # A bool is no integer; a float without a fraction is one (as the standard says).
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, numbers.Number)


#: Whether a value is of a JSON type, as jsonschema decides it.
_TYPES: Mapping[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


class SchemaCompileError(ValueError):
    """The schema uses something :func:`compile_schema` does not check."""


def _equal(one: Any, two: Any) -> bool:
    """Equal as JSON values: a bool equals only a bool, ``1`` equals ``1.0``, containers are
    compared member by member."""
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(_equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(_equal(one[k], two[k]) for k in one)
    if isinstance(one, bool) or isinstance(two, bool):
        return type(one) is type(two) and one == two
    if isinstance(one, list | dict) or isinstance(two, list | dict):
        return False
    return bool(one == two)


def _always(_: Any) -> bool:
    return True


def _all(checks: list[Check]) -> Check:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]

    def check(value: Any) -> bool:
        for one in checks:  # noqa: SIM110 (a loop: all() of a generator is slower, per member)
            if not one(value):
                return False
        return True

    return check


def compile_schema(schema: Any) -> Check:
    """A predicate for ``schema`` (with its ``$ref`` already inlined, no ``$defs``).

    Raises:
        SchemaCompileError: The schema uses a keyword this module does not check.
    """
    if schema is True:
        return _always
    if schema is False:
        return lambda _: False
    if not isinstance(schema, dict):
        raise SchemaCompileError(f"not a schema: {schema!r}")
    unknown = set(schema) - _KNOWN
    if unknown:
        raise SchemaCompileError(f"keywords not checked: {', '.join(sorted(unknown))}")
    kind = schema.get("type")
    if kind is not None and (not isinstance(kind, str) or kind not in _TYPES):
        raise SchemaCompileError(f"not a single JSON type: {kind!r}")
    checks: list[Check] = []
    if "const" in schema:
        const = schema["const"]
        checks.append(lambda v: _equal(v, const))
    if "enum" in schema:
        choices = tuple(schema["enum"])
        checks.append(lambda v: any(_equal(v, c) for c in choices))
    # Each keyword says something of the values of one type only: unless the schema's type
    # is that one, its check lets the others through.
    for of_type, made in (
        ("object", _object_check(schema)),
        ("array", _array_check(schema)),
        ("string", _string_check(schema)),
        ("number", _number_check(schema)),
    ):
        if made is None or kind not in (None, of_type, "integer" if of_type == "number" else ""):
            continue
        checks.append(made if kind is not None else _guarded(_TYPES[of_type], made))
    checks += _applicator_checks(schema)
    rest = _all(checks)
    if kind is None:
        return rest
    is_type = _TYPES[kind]
    if rest is _always:
        return is_type
    return lambda v: is_type(v) and rest(v)


def _guarded(is_type: Check, check: Check) -> Check:
    """``check`` applied to values of one type only (a keyword says nothing of the others)."""
    return lambda v: not is_type(v) or check(v)


def _object_check(schema: dict[str, Any]) -> Check | None:
    required = frozenset(schema.get("required", ()))
    properties = {k: compile_schema(v) for k, v in schema.get("properties", {}).items()}
    extra = schema.get("additionalProperties", True)
    if not required and not properties and extra is True:
        return None
    allowed = frozenset(properties) if extra is False else None
    other = compile_schema(extra) if extra not in (True, False) else None

    def check(value: dict[str, Any]) -> bool:
        if not required.issubset(value):
            return False
        if allowed is not None and not allowed.issuperset(value):
            return False
        for key, item in value.items():
            inner = properties.get(key, other)
            if inner is not None and not inner(item):
                return False
        return True

    return check


def _array_check(schema: dict[str, Any]) -> Check | None:
    checks: list[Check] = []
    low, high = schema.get("minItems", 0), schema.get("maxItems")
    if low or high is not None:
        checks.append(lambda v: low <= len(v) and (high is None or len(v) <= high))
    if "items" in schema:
        items = compile_schema(schema["items"])
        checks.append(lambda v: all(items(i) for i in v))
    if "contains" in schema:
        contains = compile_schema(schema["contains"])
        least, most = schema.get("minContains", 1), schema.get("maxContains")

        def counted(value: list[Any]) -> bool:
            found = sum(1 for i in value if contains(i))
            return least <= found and (most is None or found <= most)

        checks.append(counted)
    return _all(checks) if checks else None


def _string_check(schema: dict[str, Any]) -> Check | None:
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    search = re.compile(schema["pattern"]).search if "pattern" in schema else None
    if not low and high is None and search is None:
        return None

    def check(value: str) -> bool:
        if len(value) < low or (high is not None and len(value) > high):
            return False
        # re.search, as jsonschema does: a pattern is not anchored unless it says so.
        return search is None or search(value) is not None

    return check


def _number_check(schema: dict[str, Any]) -> Check | None:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is None and high is None:
        return None
    return lambda v: (low is None or low <= v) and (high is None or v <= high)


def _applicator_checks(schema: dict[str, Any]) -> list[Check]:
    checks: list[Check] = []
    if "anyOf" in schema:
        options = [compile_schema(s) for s in schema["anyOf"]]
        checks.append(lambda v: any(o(v) for o in options))
    if "if" in schema:
        condition = compile_schema(schema["if"])
        then = compile_schema(schema.get("then", True))
        otherwise = compile_schema(schema.get("else", True))
        checks.append(lambda v: then(v) if condition(v) else otherwise(v))
    return checks
