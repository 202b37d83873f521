"""Framing (docs/protocol.md): newline-delimited lines, however the stream is split, and lines
over the limit discarded up to their newline while reading goes on."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from isccd.protocol import MAX_LINE_BYTES, LineSplitter, OversizedLine

lines_st = st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=20)


def _feed_all(splitter: LineSplitter, data: bytes, cuts: list[int]) -> list[bytes | OversizedLine]:
    out: list[bytes | OversizedLine] = []
    start = 0
    for cut in sorted(c % (len(data) + 1) for c in cuts):
        out += splitter.feed(data[start:cut]) if cut > start else []
        start = max(start, cut)
    out += splitter.feed(data[start:])
    return out + splitter.eof()


@given(lines=lines_st, cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=8))
def test_any_split_of_the_stream_gives_the_same_lines(lines: list[bytes], cuts: list[int]) -> None:
    data = b"".join(line + b"\n" for line in lines)
    got = _feed_all(LineSplitter(max_line=24), data, cuts)
    expected = [
        OversizedLine(24) if len(line.removesuffix(b"\r")) > 24 else line.removesuffix(b"\r")
        for line in lines
        if line.removesuffix(b"\r").strip() or len(line.removesuffix(b"\r")) > 24
    ]
    assert got == expected


def test_an_oversized_line_is_discarded_up_to_its_newline_and_reading_goes_on() -> None:
    splitter = LineSplitter()
    big = b"x" * (MAX_LINE_BYTES + 2)
    out = splitter.feed(b'{"a":1}\n' + big[: MAX_LINE_BYTES // 2])
    out += splitter.feed(big[MAX_LINE_BYTES // 2 :])  # passes the limit: reported at once
    assert out == [b'{"a":1}', OversizedLine(MAX_LINE_BYTES)]
    assert splitter.buffered == 0
    assert splitter.feed(b"more of the long line") == []
    assert splitter.feed(b'\n{"b":2}\n') == [b'{"b":2}']


def test_a_line_of_exactly_the_limit_passes() -> None:
    line = b"y" * MAX_LINE_BYTES
    assert LineSplitter().feed(line + b"\r\n") == [line]


def test_a_crlf_line_of_exactly_the_limit_passes_however_it_is_split() -> None:
    line = b"z" * 24
    for cut in range(len(line) + 3):
        data = line + b"\r\n"
        splitter = LineSplitter(max_line=24)
        assert splitter.feed(data[:cut]) + splitter.feed(data[cut:]) == [line]


def test_an_unterminated_last_line_counts_at_eof() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b'{"id":1}') == []
    assert splitter.eof() == [b'{"id":1}']
