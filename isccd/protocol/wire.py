"""Conversion between the protocol's frozen dataclasses and JSON values.

``to_wire`` turns a dataclass (nested dataclasses, enums, tuples, mappings, ``None``) into JSON
values;
``from_wire`` is its inverse, driven by the dataclass's type hints, and validates as it goes:
a member of the wrong type raises :class:`ValueError` naming it. Members the class does not know
are ignored (newer servers may send more), missing members take their default.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

T = TypeVar("T")


#: The types whose values are JSON values as they are (exactly these: an enum of ``str`` is not).
_PLAIN = frozenset({str, int, float, bool, type(None)})


@functools.cache
def _fields(cls: type) -> tuple[str, ...] | None:
    """The field names of a dataclass, in order; ``None`` for another class."""
    if not dataclasses.is_dataclass(cls):
        return None
    return tuple(f.name for f in dataclasses.fields(cls))


def to_wire(value: Any) -> Any:
    """JSON values for ``value``: dataclasses become objects, enums their value, tuples lists."""
    cls: type = type(value)
    if cls in _PLAIN:
        return value  # most values: a result's thousands of names, sizes and distances
    names = _fields(cls)
    # A plain member is taken as it is, without a call: a result of 100,000 members has a
    # million of them.
    if names is not None:
        return {
            name: v if type(v := getattr(value, name)) in _PLAIN else to_wire(v) for name in names
        }
    if isinstance(value, enum.Enum):
        return value._value_  # what ``.value`` reads, without its descriptor
    if isinstance(value, tuple | list | frozenset):
        return [v if type(v) in _PLAIN else to_wire(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): to_wire(v) for k, v in value.items()}
    return value


def object_to_wire(value: object) -> dict[str, Any]:
    """The JSON object of a dataclass instance (see :func:`to_wire`)."""
    obj = to_wire(value)
    if not isinstance(obj, dict):
        raise TypeError(f"{type(value).__name__} is not a dataclass")
    return obj


def from_wire(cls: type[T], obj: Any) -> T:
    """Build a ``cls`` from the JSON values ``to_wire`` made of one.

    Raises:
        ValueError: ``obj`` does not fit ``cls``; the message names the member.
    """
    result: T = _convert(cls, obj, cls.__name__)
    return result


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _convert(tp: Any, value: Any, where: str) -> Any:  # noqa: PLR0911, PLR0912 -- one branch per JSON shape
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            if len(options) < len(typing.get_args(tp)):
                return None
            raise ValueError(f"{where}: must not be null")
        errors = []
        for option in options:
            try:
                return _convert(option, value, where)
            except ValueError as exc:
                errors.append(str(exc))
        raise ValueError("; ".join(errors))
    if origin in (dict, Mapping):
        key_type, item_type = typing.get_args(tp)
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected an object")
        return {
            _convert(key_type, k, f"{where}[{k!r}]"): _convert(item_type, v, f"{where}[{k!r}]")
            for k, v in value.items()
        }
    if origin is tuple:
        item_type = typing.get_args(tp)[0]
        if not isinstance(value, list):
            raise ValueError(f"{where}: expected a list")
        return tuple(_convert(item_type, v, f"{where}[{i}]") for i, v in enumerate(value))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            raise ValueError(f"{where}: unknown value {value!r}") from None
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected an object")
        hints = _hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            if f.name in value:
                kwargs[f.name] = _convert(hints[f.name], value[f.name], f"{where}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ValueError(f"{where}.{f.name}: missing")
        return tp(**kwargs)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{where}: expected a number")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{where}: expected an integer")
        return value
    if tp in (str, bool):
        if not isinstance(value, tp):
            raise ValueError(f"{where}: expected {tp.__name__}")
        return value
    raise TypeError(f"{where}: cannot convert to {tp!r}")
