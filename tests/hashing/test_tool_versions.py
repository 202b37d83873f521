"""The tools' versions remembered between processes: asked again whenever anything a tool's run
loads has changed, never trusted from a file that is not exactly what isccd writes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from isccd.extract.tools import MISSING, loaded_files
from isccd.hashing import CodeOptions, current_versions
from isccd.hashing.tool_versions import CACHE_FILE, installed_versions
from tests.extract.media import needs_fpcalc

FORGED = "0.0-remembered"


def _asked(tool: Path) -> str:
    """The version the tool prints now, read here."""
    out = subprocess.run([tool, "-version"], capture_output=True, text=True, check=False).stdout
    match = re.search(r"version\s+(\S+)", out)
    assert match is not None, out
    return match.group(1)


def _version(tool: Path, cache: Path) -> str:
    [version] = installed_versions([str(tool)], cache)
    return version


def _forge(cache: Path, tool: Path) -> dict[str, Any]:
    """Make the remembered version of ``tool`` one it never printed (so that reading it back
    shows it was remembered, not asked); return its entry."""
    data = json.loads((cache / CACHE_FILE).read_text())
    entry: dict[str, Any] = data["tools"][str(tool)]
    entry["version"] = FORGED
    (cache / CACHE_FILE).write_text(json.dumps(data))
    return entry


@pytest.fixture
def fpcalc(tmp_path: Path) -> Path:
    """A copy of the installed fpcalc, a dynamically linked executable."""
    found = shutil.which("fpcalc")
    assert found is not None
    copy = tmp_path / "bin" / "fpcalc"
    copy.parent.mkdir()
    shutil.copy2(found, copy)
    return copy


@needs_fpcalc
def test_a_tool_is_remembered_until_its_executable_changes(fpcalc: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    expected = _asked(fpcalc)
    assert _version(fpcalc, cache) == expected
    entry = _forge(cache, fpcalc)
    assert entry["files"][0][0] == str(fpcalc)
    assert _version(fpcalc, cache) == FORGED  # remembered: not asked again

    # Its change time changes, nothing else (as when a file is replaced by one of the same
    # size with its modification time kept): asked again, and remembered as it says.
    st = fpcalc.stat()
    os.utime(fpcalc, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert fpcalc.stat().st_mtime_ns == st.st_mtime_ns
    assert _version(fpcalc, cache) == expected
    assert json.loads((cache / CACHE_FILE).read_text())["tools"][str(fpcalc)]["version"] == expected


@needs_fpcalc
def test_a_library_replaced_in_place_or_a_new_library_path_is_noticed(
    fpcalc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # fpcalc prints libchromaprint's version: a library of its own, loaded from here.
    files = loaded_files(str(fpcalc))
    assert files is not None
    [library] = [f for f in files if Path(f).name.startswith("libchromaprint.so")]
    libraries = tmp_path / "lib"
    libraries.mkdir()
    shutil.copy2(library, libraries / Path(library).name)
    monkeypatch.setenv("LD_LIBRARY_PATH", str(libraries))
    cache = tmp_path / "cache"
    expected = _asked(fpcalc)

    assert _version(fpcalc, cache) == expected
    entry = _forge(cache, fpcalc)
    assert str(libraries / Path(library).name) in [name for name, _ in entry["files"]]
    assert _version(fpcalc, cache) == FORGED
    shutil.copyfile(library, libraries / Path(library).name)  # the same inode, rewritten
    assert _version(fpcalc, cache) == expected

    _forge(cache, fpcalc)
    monkeypatch.delenv("LD_LIBRARY_PATH")  # the loader would look elsewhere now
    assert _version(fpcalc, cache) == expected


def test_a_script_is_asked_every_time(tmp_path: Path) -> None:
    # What a script runs is not known, so nothing tells when what it says may change.
    tool = tmp_path / "bin" / "tool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho 'tool version 1.0'\n")
    tool.chmod(0o755)
    cache = tmp_path / "cache"
    assert _version(tool, cache) == "1.0"
    assert not (cache / CACHE_FILE).exists()
    st = tool.stat()
    tool.write_text("#!/bin/sh\necho 'tool version 2.0'\n")  # the same size
    os.utime(tool, ns=(st.st_atime_ns, st.st_mtime_ns))  # and modification time
    assert _version(tool, cache) == "2.0"


@needs_fpcalc
@pytest.mark.parametrize(
    "content",
    [b"\x00\xff not json", b"[]", b'{"format": 2, "tools": {}}', b'{"format": 1, "tools": []}'],
)
def test_a_corrupt_or_foreign_file_is_ignored_and_replaced(
    fpcalc: Path, tmp_path: Path, content: bytes
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / CACHE_FILE).write_bytes(content)
    assert _version(fpcalc, cache) == _asked(fpcalc)
    data = json.loads((cache / CACHE_FILE).read_text())
    assert data["format"] == 1 and data["tools"][str(fpcalc)]["version"] == _asked(fpcalc)
    assert [p.name for p in cache.iterdir()] == [CACHE_FILE]  # no temporary file left


@needs_fpcalc
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("version", 5),
        ("version", ""),
        ("version", MISSING),
        ("version", "unknown"),
        ("version", "1.0 pillow/0.1"),  # would add a component to every profile
        ("env", {"LD_LIBRARY_PATH": None}),
        ("files", []),
    ],
)
def test_an_entry_not_exactly_as_written_is_ignored(
    fpcalc: Path, tmp_path: Path, field: str, value: object
) -> None:
    # The files and their identities are right: only the spoiled field says it was not
    # written by isccd.
    cache = tmp_path / "cache"
    expected = _version(fpcalc, cache)
    data = json.loads((cache / CACHE_FILE).read_text())
    data["tools"][str(fpcalc)][field] = value
    (cache / CACHE_FILE).write_text(json.dumps(data))
    assert _version(fpcalc, cache) == expected


@needs_fpcalc
def test_a_cache_that_cannot_be_written_only_costs_the_asking(fpcalc: Path, tmp_path: Path) -> None:
    cache = tmp_path / "not-a-directory"
    cache.write_text("")
    assert _version(fpcalc, cache) == _asked(fpcalc)


def test_a_missing_tool_is_missing_and_not_remembered(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert installed_versions([str(tmp_path / "absent"), "isccd-no-such-tool"], cache) == [
        MISSING,
        MISSING,
    ]
    assert not (cache / CACHE_FILE).exists()


@needs_fpcalc
def test_the_profile_versions_are_those_asked(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    options = CodeOptions(bits=128)
    asked = current_versions(options)
    assert current_versions(options, cache) == asked  # asked, then remembered
    assert (cache / CACHE_FILE).exists()
    assert current_versions(options, cache) == asked  # read back
