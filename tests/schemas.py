"""The JSON Schemas of docs/schema/, to validate real outputs against in the tests."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "docs" / "schema"


@cache
def _registry() -> Registry:
    resources = [
        (path.name, Resource.from_contents(json.loads(path.read_text(encoding="utf-8"))))
        for path in SCHEMA_DIR.glob("*.schema.json")
    ]
    return Registry().with_resources(resources)


def validator(name: str, pointer: str = "") -> jsonschema.Draft202012Validator:
    """A validator for ``docs/schema/NAME.schema.json`` (or the part of it at ``pointer``,
    e.g. ``#/$defs/file``), its references to the other schemas resolved."""
    schema: dict[str, Any] = {"$ref": f"{name}.schema.json{pointer}"}
    return jsonschema.Draft202012Validator(schema, registry=_registry())


def check(name: str, instance: Any, pointer: str = "") -> None:
    """Raise :class:`jsonschema.ValidationError` unless ``instance`` is valid."""
    for schema_file in SCHEMA_DIR.glob("*.schema.json"):
        jsonschema.Draft202012Validator.check_schema(json.loads(schema_file.read_text()))
    validator(name, pointer).validate(instance)
