"""Paths are stored as the bytes the file system uses, whatever their encoding."""

from __future__ import annotations

import os

import pytest

from isccd.store.rows import from_fs, to_fs


@pytest.mark.parametrize(
    "name", [b"/data/plain.txt", "/data/é ü 漢字".encode(), b"/data/latin1-\xe9\xff", b"/\x80"]
)
def test_a_path_maps_to_the_file_systems_bytes_and_back(name: bytes) -> None:
    path = os.fsdecode(name)
    assert to_fs(path) == name == os.fsencode(path)
    assert from_fs(name) == path
