"""Conversion between the protocol's frozen dataclasses and JSON values.

``to_wire`` turns a dataclass (nested dataclasses, enums, tuples, mappings, ``None``) into JSON
values, and ``wire_json`` into the JSON text of those values;
``from_wire`` is its inverse, driven by the dataclass's type hints, and validates as it goes:
a member of the wrong type raises :class:`ValueError` naming it. Members the class does not know
are ignored (newer servers may send more), missing members take their default.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import operator
import re
import types
import typing
from collections.abc import Callable, Mapping
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


@functools.cache
def _values(cls: type) -> Callable[[Any], tuple[Any, ...]]:
    """What reads the field values of a dataclass instance, in field order, as a tuple."""
    names = _fields(cls) or ()
    if len(names) == 1:
        return lambda value: (getattr(value, names[0]),)
    return operator.attrgetter(*names) if names else lambda _: ()


def to_wire(value: Any) -> Any:
    """JSON values for ``value``: dataclasses become objects, enums their value, tuples lists."""
    cls: type = type(value)
    if cls in _PLAIN:
        return value  # most values: a result's thousands of names, sizes and distances
    names = _fields(cls)
    # A plain member is taken as it is, without a call: a result of 100,000 members has a
    # million of them; they are read in one call, not a ``getattr`` each.
    if names is not None:
        # Enumerations and empty tuples (a member's unit and mode, its links) inline too.
        return {
            name: v
            if type(v) in _PLAIN
            else v._value_
            if isinstance(v, enum.Enum)
            else to_wire(v)
            if v or type(v) is not tuple
            else []
            for name, v in zip(names, _values(cls)(value), strict=True)
        }
    if isinstance(value, enum.Enum):
        return value._value_  # what ``.value`` reads, without its descriptor
    if isinstance(value, tuple | list | frozenset):
        return [v if type(v) in _PLAIN else to_wire(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): to_wire(v) for k, v in value.items()}
    return value


def wire_fields(value: Any) -> dict[str, Any] | None:
    """A dataclass instance's fields by name, their values as they are (for a caller that
    lays out its top levels itself); ``None`` for another value."""
    cls: type = type(value)
    names = _fields(cls)
    if names is None:
        return None
    return dict(zip(names, _values(cls)(value), strict=True))


def wire_json(value: Any) -> str:
    """The JSON text of ``to_wire(value)``: on one line, without spaces, ASCII only (every
    other character a ``\\u`` escape, a non-UTF-8 name's lone surrogates too), the values
    ``json.dumps(to_wire(value), ensure_ascii=True)`` writes.

    orjson writes it where it can, from the dataclasses themselves: 100,000 groups' members
    in a fraction of the time of making their JSON values and encoding them. The standard
    encoder writes what orjson refuses: a lone surrogate, an integer beyond 64 bits. NaN and
    the infinities, which JSON has no number for and no result holds, come out as ``null``.
    """
    try:
        text = _orjson()(value, default=_orjson_default, option=_NON_STR_KEYS)
    except TypeError:  # orjson.JSONEncodeError is one
        return _standard_json(to_wire(value))
    if text.isascii():
        return text.decode("ascii")
    # orjson writes UTF-8, and characters beyond ASCII only inside strings: each becomes the
    # escape the standard encoder writes.
    return _BEYOND_ASCII.sub(_escaped, text.decode("utf-8"))


#: orjson's ``OPT_NON_STR_KEYS``: a mapping's keys written as strings, as ``to_wire`` does.
_NON_STR_KEYS = 1 << 2


@functools.cache
def _orjson() -> Callable[..., bytes]:
    """``orjson.dumps``, imported by the first JSON written: a command that writes none (its
    help, its text answers) does without it."""
    import orjson  # noqa: PLC0415

    assert orjson.OPT_NON_STR_KEYS == _NON_STR_KEYS
    return orjson.dumps


def _orjson_default(value: Any) -> Any:
    """What orjson does not write itself, as :func:`to_wire` does."""
    if isinstance(value, frozenset | set):
        return list(value)
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    raise TypeError(f"{type(value).__name__} is not a JSON value")


_standard_json = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode
_BEYOND_ASCII = re.compile("[^\x00-\x7f]+")


def _escaped(match: re.Match[str]) -> str:
    quoted: str = json.encoder.encode_basestring_ascii(match.group())
    return quoted[1:-1]


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
    result: T = _converter(typing.cast(Any, cls))(obj, cls.__name__)
    return result


#: A converter: the value of one type from its JSON value, given where the value is (for the
#: message of the :class:`ValueError` it raises when the value does not fit: a value of the
#: wrong type too, the one error a reader of the wire handles).
_Convert = Callable[[Any, str], Any]


def _converter(tp: Any) -> _Convert:
    """The converter of a type, made once from its hints: a reply of 100,000 members is
    converted without reading a type hint again."""
    # Kept by the type as written too: ``int | float`` equals ``float | int`` (and so do types
    # that hold them), but a union's members are tried in the order it names them.
    return _made(tp, repr(tp))


@functools.cache
def _made(tp: Any, written: str) -> _Convert:  # noqa: PLR0911 -- one per JSON shape
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return _as_is
    if origin in (typing.Union, types.UnionType):
        return _union(args)
    if origin in (dict, Mapping):
        return _mapping(*(_converter(a) for a in args))
    if origin is tuple:
        return _sequence(_converter(args[0]))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enumerated(tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass(tp)
    if tp is float:
        return _number
    if tp is int:
        return _integer
    if tp in (str, bool):
        return _plain(tp)
    return _unsupported(tp)


def _as_is(value: Any, where: str) -> Any:
    return value


def _union(every: tuple[Any, ...]) -> _Convert:
    options = [_converter(a) for a in every if a is not type(None)]
    nullable = len(options) < len(every)

    def convert(value: Any, where: str) -> Any:
        if value is None:
            if nullable:
                return None
            raise ValueError(f"{where}: must not be null")
        errors = []
        for option in options:
            try:
                return option(value, where)
            except ValueError as exc:
                errors.append(str(exc))
        raise ValueError("; ".join(errors))

    return convert


def _mapping(key: _Convert, item: _Convert) -> _Convert:
    def convert(value: Any, where: str) -> Any:
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected an object")  # noqa: TRY004
        return {key(k, f"{where}[{k!r}]"): item(v, f"{where}[{k!r}]") for k, v in value.items()}

    return convert


def _sequence(item: _Convert) -> _Convert:
    def convert(value: Any, where: str) -> Any:
        if not isinstance(value, list):
            raise ValueError(f"{where}: expected a list")  # noqa: TRY004
        return tuple(item(v, f"{where}[{i}]") for i, v in enumerate(value))

    return convert


def _enumerated(tp: type[enum.Enum]) -> _Convert:
    def convert(value: Any, where: str) -> Any:
        try:
            return tp(value)
        except ValueError:
            raise ValueError(f"{where}: unknown value {value!r}") from None

    return convert


def _dataclass(tp: type) -> _Convert:
    # Its members' converters are made at its first value, not with it: a dataclass may name
    # itself among its members' types. They are made whole before they are kept, so that a
    # thread converting at the same time sees all of them or none.
    made: list[tuple[str, bool, _Convert]] | None = None

    def convert(value: Any, where: str) -> Any:
        nonlocal made
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected an object")  # noqa: TRY004
        if made is None:
            made = _members(tp)
        kwargs = {}
        for name, required, member in made:
            if name in value:
                kwargs[name] = member(value[name], f"{where}.{name}")
            elif required:
                raise ValueError(f"{where}.{name}: missing")
        return tp(**kwargs)

    return convert


def _members(tp: type) -> list[tuple[str, bool, _Convert]]:
    """Each member of a dataclass: its name, whether it must be given, its converter."""
    hints = typing.get_type_hints(tp)
    return [
        (
            f.name,
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            _converter(hints[f.name]),
        )
        for f in dataclasses.fields(tp)
    ]


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where}: expected a number")  # noqa: TRY004
    return float(value)


def _integer(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where}: expected an integer")  # noqa: TRY004
    return value


def _plain(tp: type) -> _Convert:
    def convert(value: Any, where: str) -> Any:
        if not isinstance(value, tp):
            raise ValueError(f"{where}: expected {tp.__name__}")  # noqa: TRY004
        return value

    return convert


def _unsupported(tp: Any) -> _Convert:
    """A type no JSON value converts to: an error where a value reaches it (a member of
    that type that is left out takes its default)."""

    def convert(value: Any, where: str) -> Any:
        raise TypeError(f"{where}: cannot convert to {tp!r}")

    return convert
