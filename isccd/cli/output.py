"""How commands write their results: JSON for programs, readable text for people.

A command prints JSON when its flags ask for it (:mod:`isccd.cli.formats`), readable text
otherwise. Progress goes to stderr, only when stderr is a terminal, never more than a few times
per second, and is erased before a result is printed, so that results on stdout never share a
line with it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import IO, Any, TextIO

from isccd.cli.escape import shown
from isccd.protocol.wire import to_wire, wire_fields, wire_json

#: Back to the start of the line and erase it (ECMA-48 CR, EL).
_ERASE = "\r\x1b[K"


def format_size(n: int) -> str:
    """A byte count for people, in binary units as ``du -h`` and ``ls -h`` count: ``"13.9 KiB"``."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if value < 1024:
            return f"{value:.1f} {unit}"
    return f"{value / 1024:.1f} TiB"


def parse_size(text: str) -> int:
    """A size argument: bytes, or with a binary suffix K, M, G or T (``--min-size 10M``).

    Raises:
        argparse.ArgumentTypeError: Not a size.
    """
    units = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
    factor = units.get(text[-1:].upper(), 1)
    try:
        value = int(text[:-1] if factor > 1 else text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"not a size: {text!r}")
    return value * factor


def dumps(obj: Any, *, indent: int | None = None, depth: int | None = None) -> str:
    """Serialize to JSON, keeping non-UTF-8 path bytes visible as ``\\udcXX`` escapes.

    Args:
        obj: JSON values; with ``depth``, a result's dataclasses too (:func:`wire_json`).
        indent: Spaces a level; ``None``: all on one line.
        depth: With ``indent``, how many levels are laid out an item a line; each value below
            them is written on one line without spaces by :func:`wire_json` (a result of
            100,000 groups: a group a line, where indenting every level is pure Python and
            several times slower). ``None``: every level.
    """
    if indent is None or depth is None:
        return json.dumps(obj, ensure_ascii=True, indent=indent, sort_keys=False, default=str)
    return "".join(_laid_out(obj, indent, depth, 0))


#: A value of the levels laid out on one line, as :func:`dumps` writes it (one encoder for every
#: item: ``json.dumps`` makes one a call when given ``default``).
_one_line = json.JSONEncoder(ensure_ascii=True, default=str).encode


def _laid_out(obj: Any, indent: int, depth: int, level: int) -> Iterator[str]:
    """The pieces of :func:`dumps`'s text, an item of a level laid out at a time."""
    if (fields := wire_fields(obj)) is not None:
        obj = fields
    if not isinstance(obj, dict | list | tuple) or not obj:
        yield _one_line(to_wire(obj))
        return
    if level >= depth:
        yield _item(obj)
        return
    inner = "\n" + " " * (indent * (level + 1))
    if isinstance(obj, dict):
        yield "{"
        for i, (key, value) in enumerate(obj.items()):
            yield ("," if i else "") + inner + json.dumps(str(key), ensure_ascii=True) + ": "
            yield from _laid_out(value, indent, depth, level + 1)
        yield "\n" + " " * (indent * level) + "}"
    elif level + 1 >= depth:  # its items on a line each: a result's 100,000 groups or files
        yield "[" + inner + ("," + inner).join(map(_item, obj))
        yield "\n" + " " * (indent * level) + "]"
    else:
        yield "["
        for i, value in enumerate(obj):
            yield ("," if i else "") + inner
            yield from _laid_out(value, indent, depth, level + 1)
        yield "\n" + " " * (indent * level) + "]"


def _item(value: Any) -> str:
    """An item below the levels laid out, on one line (:func:`wire_json`; a value that is not
    JSON, as the levels above write it: as its text)."""
    try:
        return wire_json(value)
    except TypeError:
        return _one_line(to_wire(value))


def print_json(
    obj: Any, *, stream: TextIO | None = None, indent: int | None = None, depth: int | None = None
) -> None:
    """Write one JSON document followed by a newline and flush it (for pipes); ``indent`` and
    ``depth``: see :func:`dumps`."""
    stream = stream if stream is not None else sys.stdout
    if indent is None or depth is None:
        stream.write(dumps(obj, indent=indent) + "\n")
    else:
        # Made whole before the first is written: a value that cannot be written leaves no half
        # document behind.
        for piece in [*_laid_out(obj, indent, depth, 0), "\n"]:
            stream.write(piece)
    stream.flush()


class Progress:
    """A one-line progress display on stderr for long runs.

    Silent when its stream is not a terminal. Call :meth:`clear` before printing a result to
    stdout (the line is drawn again at the next :meth:`advance`). ``clock`` is injectable for
    tests.
    """

    def __init__(
        self,
        label: str,
        total: int | None = None,
        *,
        stream: IO[str] | None = None,
        interval: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self._stream = stream if stream is not None else sys.stderr
        # No stderr at all when the program started with it closed (`2>&-`).
        self._enabled = self._stream is not None and self._stream.isatty()
        self._interval = interval
        self._clock = clock
        self._started = clock()
        self._last = 0.0
        self._drawn = False

    def advance(self, n: int = 1, note: str = "") -> None:
        """Count ``n`` more items done and redraw if enough time has passed."""
        self.done += n
        now = self._clock()
        if self._enabled and now - self._last >= self._interval:
            self._last = now
            self._draw(note)

    def _draw(self, note: str) -> None:
        elapsed = max(self._clock() - self._started, 1e-9)
        rate = self.done / elapsed
        if self.total:
            pct = 100.0 * self.done / self.total
            text = f"{self.label}: {self.done}/{self.total} ({pct:.0f}%) {rate:.0f}/s"
        else:
            text = f"{self.label}: {self.done} {rate:.0f}/s"
        if note:
            text = f"{text} {shown(note)}"
        # Cut to the terminal's width, so that the line never wraps and \r returns to its start.
        width = _columns(self._stream) - 1
        self._stream.write(_ERASE + text[:width])
        self._stream.flush()
        self._drawn = True

    def clear(self) -> None:
        """Erase the progress line, if one is shown."""
        if self._drawn:
            self._stream.write(_ERASE)
            self._stream.flush()
            self._drawn = False

    def close(self) -> None:
        """Erase the progress line."""
        self.clear()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _columns(stream: IO[str]) -> int:
    """The width of the terminal ``stream`` writes to (80 when it cannot be told)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (OSError, ValueError, AttributeError):
        return 80
