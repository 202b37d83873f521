"""Path names by their text alone (nothing is looked up on disk): containment of absolute,
normalized names, what every layer asks of the roots, the store's paths and the clients'
paths; and how a name is shown on one line, by the command line and the report alike.

A file name on Linux may hold any byte but ``/`` and NUL: a newline, an escape sequence that
recolours the terminal, bytes that are not UTF-8. Printed as they are, they split one result
into two lines or rewrite the screen. Text output and the report therefore show every name
through :func:`shown`, which escapes like ``ls -b`` (GNU coreutils' ``escape`` quoting style): a
backslash as ``\\\\``; newline, tab, carriage return and the other C escapes as ``\\n``, ``\\t``,
``\\r``, ``\\a``, ``\\b``, ``\\f``, ``\\v``; any other control byte, and each byte that is not
UTF-8 (held by Python as a lone surrogate, :func:`os.fsdecode`), as ``\\xHH``; other characters
that do not print (line and paragraph separators, bidirectional overrides) as ``\\uHHHH``.
Printable characters, accented letters and other scripts included, are shown as they are, so
a name without such characters is unchanged. JSON output carries names as they are (with
``\\udcXX`` for bytes that are not UTF-8).
"""

from __future__ import annotations


def is_under(path: str, top: str) -> bool:
    """True when ``path`` is ``top`` or inside it."""
    return path == top or path.startswith(top.rstrip("/") + "/")


def is_below(path: str, parent: str) -> bool:
    """True when ``path`` is inside ``parent`` (not ``parent`` itself)."""
    return path != parent and is_under(path, parent)


_C_ESCAPES = {
    "\\": "\\\\",
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
}


def shown(name: str) -> str:
    """``name`` on one line, as text output and the report show it (see the module
    docstring). Each character is escaped on its own, so the name of a file inside a folder
    is shown as the folder's shown name followed by the rest's."""
    if name.isprintable() and "\\" not in name:
        return name
    return "".join(_escape(char) for char in name)


def _escape(char: str) -> str:
    if char in _C_ESCAPES:
        return _C_ESCAPES[char]
    if char.isprintable():
        return char
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, as os.fsdecode keeps it
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
