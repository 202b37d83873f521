"""Framing of the socket protocol: one JSON document per line, lines of bounded length.

Pure: bytes in, lines out. The server feeds whatever the transport delivers; the splitter returns
complete lines, and replaces a line longer than the limit by one :class:`OversizedLine` marker as
soon as the limit is passed, then discards the rest of that line up to its newline, so one
oversized request costs neither memory nor the requests after it.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The longest request line accepted, in bytes, without its newline.
MAX_LINE_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class OversizedLine:
    """Stands for a line that exceeded the limit; its bytes were discarded.

    Attributes:
        limit: The limit it exceeded, in bytes.
    """

    limit: int


class LineSplitter:
    """Splits a byte stream into newline-terminated lines of at most ``max_line`` bytes.

    A trailing ``\\r`` is removed (clients typing into ``socat`` or ``nc -C`` send CRLF). Empty
    lines are skipped. Memory held is bounded by ``max_line`` plus the chunk being fed.
    """

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        if max_line < 1:
            raise ValueError("max_line must be positive")
        self._max = max_line
        self._buffer = bytearray()
        self._discarding = False

    @property
    def buffered(self) -> int:
        """Bytes of an incomplete line held so far."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes | OversizedLine]:
        """Add received bytes.

        Args:
            data: The next bytes of the stream, split anywhere.

        Returns:
            The lines completed by ``data`` in stream order, without their newline, and an
            :class:`OversizedLine` where a line passed the limit.
        """
        out: list[bytes | OversizedLine] = []
        start = 0
        if self._discarding:
            end = data.find(b"\n")
            if end < 0:
                return out
            self._discarding = False
            start = end + 1
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            if self._buffer:
                self._buffer += data[start:end]
                line = bytes(self._buffer)
                self._buffer.clear()
            else:
                line = data[start:end]
            self._emit(line, out)
            start = end + 1
        if start < len(data):
            self._buffer += data[start:]
            # One byte of slack: the line may still end in "\r\n", and the "\r" does not count.
            if len(self._buffer) > self._max + 1:
                out.append(OversizedLine(self._max))
                self._buffer.clear()
                self._discarding = True
        return out

    def eof(self) -> list[bytes | OversizedLine]:
        """The stream ended: an unterminated last line counts as a line.

        Returns:
            That line, if there is one.
        """
        out: list[bytes | OversizedLine] = []
        if self._buffer and not self._discarding:
            self._emit(bytes(self._buffer), out)
        self._buffer.clear()
        self._discarding = False
        return out

    def _emit(self, line: bytes, out: list[bytes | OversizedLine]) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > self._max:
            out.append(OversizedLine(self._max))
        elif line.strip():
            out.append(line)
