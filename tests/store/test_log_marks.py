"""The file in which a writer of a fleet's database remembers how far it followed the log
(:mod:`isccd.store.pgruns`): one it wrote is read back; anything else, however it was made,
counts as no file, never as a crash, a hang or a mark from which a restore would be wrongly
concluded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from isccd.store.pgruns import MARK_BYTES, LogMark, read_mark, save_mark


def test_a_saved_mark_is_read_back(tmp_path: Path) -> None:
    path = tmp_path / "fleet-log.json"
    save_mark(path, LogMark("db-1", "run-1", 105, 7))
    save_mark(path, LogMark("db-2", "run-9", 3, 0))
    assert read_mark(path) == {
        "db-1": LogMark("db-1", "run-1", 105, 7),
        "db-2": LogMark("db-2", "run-9", 3, 0),
    }
    assert path.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    "text",
    [
        '{"logs": {"s": {"run": "r", "seq": 1e400}}}',  # infinity
        '{"logs": {"s": {"run": "r", "seq": -1e999}}}',
        '{"logs": {"s": {"run": "r", "seq": 1e300}}}',  # a float, however whole
        '{"logs": {"s": {"run": "r", "seq": 10000000000000000000000}}}',  # past bigint
        '{"logs": {"s": {"run": "r", "seq": -1}}}',
        '{"logs": {"s": {"run": "r", "seq": 1.5}}}',
        '{"logs": {"s": {"run": "r", "seq": true}}}',
        '{"logs": {"s": {"run": "r", "seq": "5"}}}',
        '{"logs": {"s": {"run": "r", "seq": 5, "own": 1e400}}}',
        "[" * 100_000 + "]" * 100_000,  # nested past the parser's recursion
        '{"logs": [1, 2]}',
        "\xff\xfe not text",
    ],
)
def test_a_crafted_file_counts_as_none(tmp_path: Path, text: str) -> None:
    path = tmp_path / "fleet-log.json"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    assert read_mark(path) == {}


def test_a_fifo_a_link_a_folder_and_a_huge_file_count_as_none(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert read_mark(fifo) == {}  # not opened for a writer that never comes
    saved = tmp_path / "saved.json"
    save_mark(saved, LogMark("db-1", "run-1", 105, 7))
    link = tmp_path / "link"
    link.symlink_to(saved)
    assert read_mark(link) == {}
    (tmp_path / "folder").mkdir()
    assert read_mark(tmp_path / "folder") == {}
    huge = tmp_path / "huge.json"
    huge.write_bytes(b'{"logs": {}}' + b" " * MARK_BYTES)
    assert read_mark(huge) == {}
    assert read_mark(tmp_path / "missing.json") == {}
