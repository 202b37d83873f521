"""How commands write their results: JSON for programs, readable text for people.

A command prints JSON when ``--json`` is given or when stdout is not a terminal, and readable
text otherwise. Progress goes to stderr, only when stderr is a terminal, and never more than a few
times per second.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import IO, Any, TextIO


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


def wants_json(flag: bool, stream: TextIO | None = None) -> bool:
    """True when output should be JSON: asked for, or not going to a terminal."""
    stream = stream if stream is not None else sys.stdout
    return flag or not stream.isatty()


def dumps(obj: Any, *, indent: int | None = None) -> str:
    """Serialize to JSON, keeping non-UTF-8 path bytes visible as ``\\udcXX`` escapes."""
    return json.dumps(obj, ensure_ascii=True, indent=indent, sort_keys=False, default=str)


def print_json(obj: Any, *, stream: TextIO | None = None, indent: int | None = None) -> None:
    """Write one JSON document followed by a newline and flush it (for pipes)."""
    stream = stream if stream is not None else sys.stdout
    stream.write(dumps(obj, indent=indent) + "\n")
    stream.flush()


class Progress:
    """A one-line progress display on stderr for long runs.

    Silent when stderr is not a terminal. ``clock`` is injectable for tests.
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
        self._enabled = self._stream.isatty()
        self._interval = interval
        self._clock = clock
        self._started = clock()
        self._last = 0.0
        self._width = 0

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
            text = f"{text} {note}"
        text = text[:200]
        pad = max(self._width - len(text), 0)
        self._width = len(text)
        self._stream.write("\r" + text + " " * pad)
        self._stream.flush()

    def close(self) -> None:
        """Erase the progress line."""
        if self._enabled and self._width:
            self._stream.write("\r" + " " * self._width + "\r")
            self._stream.flush()
            self._width = 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
