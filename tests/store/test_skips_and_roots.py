"""Skipped units and root devices, against every backend; and the migration that adds them to a
database written before (schema 2)."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

from isccd.model import FileIssue, IssueCode, IssueKind, UnitType
from isccd.store import DB_NAME, Store, open_store, state_url
from isccd.store.schema import LATEST, MIGRATIONS
from tests.store.conftest import hashed, make_record

ROOT = "/data"
WITHOUT = "iscc/1.5.0 bits/64 fpcalc/missing isccd-extract/1"


def _skip(stage: str, profile: str | None) -> FileIssue:
    return FileIssue(stage, IssueKind.SKIPPED, "fpcalc not found", IssueCode.TOOL_MISSING, profile)


def test_a_skip_with_a_stale_profile_is_a_stale_unit(store: Store) -> None:
    skipped = replace(
        make_record("/data/a.mp3", ino=1, data=b"1" * 8), issues=(_skip("audio", WITHOUT),)
    )
    store.begin()
    a = store.add_file(ROOT, skipped, 1.0)
    store.add_file(ROOT, replace(skipped, path="/data/b.mp3", issues=(_skip("audio", None),)), 1.0)
    store.add_file(ROOT, make_record("/data/c.txt", ino=3, data=b"2" * 8), 1.0)
    store.commit()
    assert store.file_at("/data/a.mp3").record.issues == skipped.issues  # type: ignore[union-attr]

    def installed(profile: str) -> bool:
        return "fpcalc/missing" in profile.split()

    [stale] = store.stale_units(installed, "/data")
    assert stale.file.id == a and stale.units == {UnitType.AUDIO}
    assert store.stale_units(lambda profile: False, "/") == []
    assert store.stale_units(installed, "/else") == []
    # Once the unit is computed the skip is gone with the issue.
    store.begin()
    store.update_file(a, ROOT, replace(skipped, issues=()), 2.0)
    store.commit()
    assert store.stale_units(installed, "/") == []


def test_root_devices_are_recorded_and_files_rebased(store: Store) -> None:
    store.begin()
    store.add_file(ROOT, make_record("/data/a", ino=1, dev=7, datahash=hashed(1)), 1.0)
    store.add_file(ROOT, make_record("/data/sub/b", ino=2, dev=7), 1.0)
    store.add_file(ROOT, make_record("/data/mnt/c", ino=3, dev=9), 1.0)  # a nested mount
    store.add_file("/other", make_record("/other/d", ino=4, dev=7), 1.0)
    store.commit()
    assert store.root_device(ROOT) is None
    store.begin()
    store.set_root_device(ROOT, 7)
    store.commit()
    assert store.root_device(ROOT) == 7 and store.root_device("/other") is None

    store.begin()
    assert store.rebase_device(ROOT, 7, 8) == 2
    store.set_root_device(ROOT, 8)
    store.rollback()
    assert store.root_device(ROOT) == 7  # undone with the transaction
    store.begin()
    assert store.rebase_device(ROOT, 7, 8) == 2
    store.commit()
    devices = {f.path: f.record.stat.dev for f in store.files_under("/")}  # type: ignore[union-attr]
    assert devices == {"/data/a": 8, "/data/sub/b": 8, "/data/mnt/c": 9, "/other/d": 7}
    assert [f.path for f in store.files_by_identity(8, 1)] == ["/data/a"]
    assert store.files_by_identity(7, 1) == []


def test_a_schema_2_database_gets_root_devices_and_retries_its_tool_skips(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / DB_NAME, isolation_level=None)
    for migration in MIGRATIONS[:2]:
        for statement in migration.statements:
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 2")
    conn.execute("INSERT INTO roots (id, path) VALUES (1, ?)", (b"/data",))
    conn.execute("INSERT INTO dirs (id, path) VALUES (1, ?)", (b"/data",))
    # As schema 2 stored them: issues as JSON, without profiles.
    tool = '[{"stage":"audio","kind":"skipped","reason":"fpcalc not found","code":"tool_missing"}]'
    other = '[{"stage":"audio","kind":"skipped","reason":"too short","code":"no_content"}]'
    for ino, name, issues, removed in (
        (1, b"song.mp3", tool, None),
        (2, b"blip.wav", other, None),
        (3, b"gone.mp3", tool, 5.0),
    ):
        conn.execute(
            "INSERT INTO files (root_id, dir_id, name, dev, ino, size, mtime_ns, ctime_ns, nlink, "
            "issues, indexed_at, removed_at) VALUES (1, 1, ?, 1, ?, 3, 4, 5, 1, ?, 1.0, ?)",
            (name, ino, issues, removed),
        )
    conn.close()

    store = open_store(state_url(tmp_path))
    try:
        assert store.root_device(ROOT) is None
        # A skip recorded before profiles were is tried once more, by any current revision.
        [stale] = store.stale_units(lambda p: p == "isccd-extract/0", "/")
        assert stale.file.path == "/data/song.mp3" and stale.units == {UnitType.AUDIO}
        assert store.stale_units(lambda p: "isccd-extract/1" in p, "/") == []
        store.begin()
        store.set_root_device(ROOT, 42)
        store.commit()
        assert store.root_device(ROOT) == 42
    finally:
        store.close()
    conn = sqlite3.connect(tmp_path / DB_NAME)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST
    finally:
        conn.close()
