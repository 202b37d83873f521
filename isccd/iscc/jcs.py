"""JSON Canonicalization Scheme (RFC 8785), for the dict metadata of the Meta-Code.

Canonical JSON has no insignificant whitespace, object members sorted by the UTF-16 code units of
their names, strings with only the escapes JSON requires (``\\"``, ``\\\\``, ``\\b``, ``\\f``,
``\\n``, ``\\r``, ``\\t`` and ``\\u00xx`` for other control characters) and numbers written the
way ECMAScript writes a double (``1.0`` is ``1``, ``1e21`` is ``1e+21``, ``1e-7`` is ``1e-7``).

As in I-JSON (RFC 7493), which RFC 8785 builds on, every number is an IEEE 754 double: Python
ints are converted to float first, so ``2**53 + 1`` is written ``9007199254740992``. That is
also what the reference's ``jcs`` package does, and the Meta-Code depends on it.

Pure: no I/O.
"""

from __future__ import annotations

import math

from isccd.iscc.exceptions import IsccError

__all__ = ["canonicalize", "es6_number"]

#: ``str.translate`` table of the characters a JSON string must escape.
_ESCAPES: dict[int, str] = {i: f"\\u{i:04x}" for i in range(0x20)} | {
    ord("\b"): "\\b",
    ord("\t"): "\\t",
    ord("\n"): "\\n",
    ord("\f"): "\\f",
    ord("\r"): "\\r",
    ord('"'): '\\"',
    ord("\\"): "\\\\",
}

#: ECMAScript writes ``0.<digits> * 10**n`` without an exponent when ``-6 < n <= 21``.
_MAX_PLAIN_POINT = 21
_MIN_PLAIN_POINT = -5


def es6_number(value: float) -> str:
    """Write a finite double as ECMAScript's ``Number.prototype.toString`` does.

    Python's ``repr`` gives the shortest digit string that reads back as the same double, which
    is the digit string ECMAScript uses too; only the layout differs.

    Raises:
        IsccError: ``value`` is NaN or infinite.
    """
    if not math.isfinite(value):
        raise IsccError(f"JSON numbers must be finite, got {value!r}")
    if value == 0:
        return "0"  # also -0.0
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    all_digits = whole + fraction
    significant = all_digits.lstrip("0")
    # value = 0.<digits> * 10**point
    point = len(whole) - (len(all_digits) - len(significant)) + int(exponent or 0)
    digits = significant.rstrip("0")
    count = len(digits)
    if count <= point <= _MAX_PLAIN_POINT:
        text = digits + "0" * (point - count)
    elif 0 < point <= _MAX_PLAIN_POINT:
        text = f"{digits[:point]}.{digits[point:]}"
    elif _MIN_PLAIN_POINT <= point <= 0:
        text = "0." + "0" * -point + digits
    else:
        power = point - 1
        head = digits if count == 1 else f"{digits[0]}.{digits[1:]}"
        text = f"{head}e{'+' if power > 0 else '-'}{abs(power)}"
    return sign + text


def _string(value: str) -> str:
    return '"' + value.translate(_ESCAPES) + '"'


def _utf16_key(item: tuple[str, object]) -> bytes:
    # Big-endian UTF-16 bytes compare like the sequences of UTF-16 code units.
    return item[0].encode("utf-16-be", "surrogatepass")


def _scalar(value: object) -> str:
    # Identity tests for the literals, before int: True is an int in Python.
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int):
        try:
            return es6_number(float(value))
        except OverflowError:
            raise IsccError(f"JSON number out of the double range: {value}") from None
    if isinstance(value, float):
        return es6_number(value)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def _write(value: object, out: list[str], path: set[int]) -> None:
    if not isinstance(value, dict | list | tuple):
        out.append(_scalar(value))
        return
    if id(value) in path:
        raise IsccError("JSON value refers to itself")
    path.add(id(value))
    if isinstance(value, dict):
        _write_object(value, out, path)
    else:
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out, path)
        out.append("]")
    path.discard(id(value))


def _write_object(obj: dict[object, object], out: list[str], path: set[int]) -> None:
    for key in obj:
        if not isinstance(key, str):
            raise TypeError(f"JSON object keys must be str, got {type(key).__name__}")
    out.append("{")
    members: list[tuple[str, object]] = list(obj.items())  # type: ignore[arg-type]
    for i, (key, item) in enumerate(sorted(members, key=_utf16_key)):
        if i:
            out.append(",")
        out.append(_string(key))
        out.append(":")
        _write(item, out, path)
    out.append("}")


def canonicalize(value: object) -> bytes:
    """The RFC 8785 canonical UTF-8 JSON of a Python value.

    Args:
        value: ``dict`` (str keys), ``list``/``tuple``, ``str``, ``int``, ``float``, ``bool`` or
            ``None``, nested to any depth the interpreter's recursion limit allows.

    Returns:
        The canonical JSON text as UTF-8 bytes.

    Raises:
        IsccError: a non-finite float, an int beyond the double range, a string with a lone
            surrogate, a container that contains itself, or nesting too deep.
        TypeError: a value or key of a type JSON does not have.
    """
    out: list[str] = []
    try:
        _write(value, out, set())
    except RecursionError:
        raise IsccError("JSON value nested too deeply") from None
    try:
        return "".join(out).encode("utf-8")
    except UnicodeEncodeError:
        raise IsccError("JSON strings must not contain lone surrogates") from None
