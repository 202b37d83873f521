"""A profile change computes again exactly what it affects, with the real hashing.

The store is told that a unit was made by an older Pillow, fpcalc or ffmpeg (its profile rewritten,
and its code too, as another decoder version may well have decoded it differently). The next scan
must compute that unit alone, of that file alone, and compose the ISCC-CODE again from the kept
and the new units.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter
from pathlib import Path

import iscc_core

from isccd.hashing import compute_record, current_versions
from isccd.model import EventType, FileRecord, UnitType
from isccd.pipeline import PipelineOptions
from isccd.store import DB_NAME
from tests.extract.media import HAVE_FFMPEG, HAVE_FPCALC, make_audio, make_video, scene
from tests.test_pipeline import Harness

Calls = Counter[tuple[str, frozenset[UnitType] | None]]


def _hasher(calls: Calls):  # type: ignore[no-untyped-def]
    async def real(path: str, units: frozenset[UnitType] | None) -> FileRecord:
        calls[(Path(path).name, units)] += 1
        return await asyncio.to_thread(compute_record, path, None, units)

    return real


def _age(db: Path, name: str, unit: UnitType, component: str) -> None:
    """Make the stored ``unit`` of ``name`` look made by an older ``component``: its profile
    names version 0.0.1, and its code has every bit flipped (so is the file's ISCC-CODE)."""
    conn = sqlite3.connect(db)
    try:
        query = "SELECT id, iscc FROM files WHERE name = ?"
        file_id, iscc = conn.execute(query, (name.encode(),)).fetchone()
        profile_id, code = conn.execute(
            "SELECT profile_id, iscc FROM units WHERE file_id = ? AND type = ?",
            (file_id, unit.value),
        ).fetchone()
        query = "SELECT profile FROM profiles WHERE id = ?"
        (profile,) = conn.execute(query, (profile_id,)).fetchone()
        parts = [
            f"{component}/0.0.1" if p.startswith(component + "/") else p for p in profile.split()
        ]
        assert parts != profile.split(), profile
        conn.execute("INSERT OR IGNORE INTO profiles (profile) VALUES (?)", (" ".join(parts),))
        mt, st, vs, _length, digest = iscc_core.iscc_decode(code)
        flipped = bytes(b ^ 0xFF for b in digest)
        old = "ISCC:" + iscc_core.encode_component(mt, st, vs, len(flipped) * 8, flipped)
        conn.execute(
            "UPDATE units SET iscc = ?, digest = ?, "
            "profile_id = (SELECT id FROM profiles WHERE profile = ?) "
            "WHERE file_id = ? AND type = ?",
            (old, flipped, " ".join(parts), file_id, unit.value),
        )
        codes = [
            row[0] for row in conn.execute("SELECT iscc FROM units WHERE file_id = ?", (file_id,))
        ]
        composed = iscc_core.gen_iscc_code_v0(codes)["iscc"]
        assert composed != iscc
        conn.execute("UPDATE files SET iscc = ? WHERE id = ?", (composed, file_id))
        conn.commit()
    finally:
        conn.close()


def test_a_unit_of_an_older_tool_is_computed_again_alone(tmp_path: Path) -> None:
    media = tmp_path / "media"
    aged: dict[str, tuple[UnitType, str]] = {"picture.png": (UnitType.IMAGE, "pillow")}
    root = tmp_path / "root"
    root.mkdir()
    scene().save(root / "picture.png")
    (root / "notes.txt").write_text("Words that no tool upgrade concerns. " * 30)
    if HAVE_FFMPEG:
        (root / "bars.mp4").write_bytes(make_video(media)["bars.mp4"].read_bytes())
        aged["bars.mp4"] = (UnitType.VIDEO, "ffmpeg")
        if HAVE_FPCALC:
            (root / "tone.wav").write_bytes(make_audio(media)["tone.wav"].read_bytes())
            aged["tone.wav"] = (UnitType.AUDIO, "fpcalc")
    options = PipelineOptions(versions=current_versions())
    calls: Calls = Counter()
    first = Harness(tmp_path, hasher=_hasher(calls), options=options)
    first.scan()
    before = {
        f.path: f for f in first.run(first.pipeline.call(lambda ix: ix.store.files_under("/")))
    }
    first.close()
    for name, (unit, component) in aged.items():
        _age(tmp_path / "state" / DB_NAME, name, unit, component)

    calls.clear()
    again = Harness(tmp_path, hasher=_hasher(calls), options=options)
    try:
        events = again.scan()
        after = {
            f.path: f for f in again.run(again.pipeline.call(lambda ix: ix.store.files_under("/")))
        }
    finally:
        again.close()

    # Exactly the aged unit of each aged file was computed; nothing else was read.
    assert calls == Counter({(name, frozenset({unit})): 1 for name, (unit, _) in aged.items()})
    changed = sorted(Path(e.path).name for e in events if e.type is EventType.FILE_CHANGED)
    assert changed == sorted(aged)
    assert {e.type for e in events} <= {EventType.FILE_CHANGED, EventType.SCAN_DONE}
    for path, stored in after.items():
        name = Path(path).name
        old = before[path]
        if name not in aged:
            assert stored == old  # untouched: not even indexed again
            continue
        fresh = compute_record(path)
        record = stored.record
        assert record.unit(aged[name][0]) == fresh.unit(aged[name][0])
        for kept in (UnitType.META, UnitType.DATA, UnitType.INSTANCE):
            assert record.unit(kept) == old.record.unit(kept)
        assert record.iscc == fresh.iscc
        assert record.iscc == iscc_core.gen_iscc_code_v0([u.iscc for u in record.units])["iscc"]


def test_nothing_is_computed_again_while_the_versions_are_current(tmp_path: Path) -> None:
    calls: Calls = Counter()
    h = Harness(
        tmp_path, hasher=_hasher(calls), options=PipelineOptions(versions=current_versions())
    )
    try:
        scene().save(h.root / "picture.png")
        h.write("notes.txt", "Words. " * 50)
        h.scan()
        calls.clear()
        assert [e.type for e in h.scan()] == [EventType.SCAN_DONE]
        assert calls == Counter()
    finally:
        h.close()
