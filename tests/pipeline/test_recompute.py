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
from typing import Any

import iscc_core
import pytest

from isccd.hashing import CodeOptions, compute_record, current_versions
from isccd.model import EventType, FileRecord, IssueCode, UnitType
from isccd.pipeline import PipelineOptions
from isccd.store import DB_NAME
from tests.extract.media import (
    HAVE_FFMPEG,
    HAVE_FPCALC,
    XMP_TEMPLATE,
    make_audio,
    make_video,
    scene,
)
from tests.pipeline.harness import Harness

Calls = Counter[tuple[str, frozenset[UnitType] | None]]


def _hasher(calls: Calls):  # type: ignore[no-untyped-def]
    async def real(root: str, path: str, units: frozenset[UnitType] | None) -> FileRecord:
        calls[(Path(path).name, units)] += 1
        return await asyncio.to_thread(compute_record, path, None, units, root=root)

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


@pytest.mark.slow
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
    before = {f.path: f for f in first.stored()}
    first.close()
    for name, (unit, component) in aged.items():
        _age(tmp_path / "state" / DB_NAME, name, unit, component)

    calls.clear()
    again = Harness(tmp_path, hasher=_hasher(calls), options=options)
    try:
        events = again.scan()
        after = {f.path: f for f in again.stored()}
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


def test_turning_the_meta_code_off_and_on_again_computes_it_alone(tmp_path: Path) -> None:
    """The ``[code]`` meta settings change between runs: only the Meta-Codes are computed (or
    dropped) again, the ISCC-CODEs composed again, and the files end as a fresh run makes them."""
    root = tmp_path / "root"
    root.mkdir()
    scene().save(root / "picture.png")
    (root / "notes.txt").write_text("Words whose Meta-Code comes and goes. " * 30)
    (root / "blob.bin").write_bytes(bytes(range(256)) * 16)  # no Meta-Code in any case
    described = {"picture.png", "notes.txt"}

    def scan(options: CodeOptions, calls: Calls) -> dict[str, FileRecord]:
        async def hasher(root: str, path: str, units: frozenset[UnitType] | None) -> FileRecord:
            calls[(Path(path).name, units)] += 1
            return await asyncio.to_thread(compute_record, path, options, units, root=root)

        h = Harness(
            tmp_path, hasher=hasher, options=PipelineOptions(versions=current_versions(options))
        )
        try:
            h.scan()
            stored = h.stored()
        finally:
            h.close()
        return {Path(f.path).name: f.record for f in stored}

    def fresh(options: CodeOptions) -> dict[str, str | None]:
        return {p.name: compute_record(str(p), options).iscc for p in root.iterdir()}

    calls: Calls = Counter()
    on = scan(CodeOptions(), calls)
    assert all(units is None for _, units in calls)  # every file computed whole, once

    for options in (CodeOptions(meta=False), CodeOptions(extract_meta=False), CodeOptions()):
        calls.clear()
        now = scan(options, calls)
        only_meta = frozenset({UnitType.META})
        assert calls == Counter({(name, only_meta): 1 for name in described}), options
        assert {name: r.iscc for name, r in now.items()} == fresh(options)
        for name, record in now.items():
            for kept in (UnitType.DATA, UnitType.INSTANCE, UnitType.IMAGE, UnitType.TEXT):
                assert record.unit(kept) == on[name].unit(kept)
            meta = record.unit(UnitType.META)
            assert (meta is None) == (not options.meta or name not in described)
            skips = [i.code for i in record.issues if i.stage == "meta"]
            assert skips == ([IssueCode.DISABLED] if not options.meta and name in described else [])
    # On again as at first: the codes are the first run's.
    assert {name: (r.iscc, r.units) for name, r in now.items()} == {
        name: (r.iscc, r.units) for name, r in on.items()
    }


def test_a_changed_wide_option_composes_the_iscc_codes_again_without_reading(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "blob.bin").write_bytes(bytes(range(256)) * 16)  # Data and Instance only
    (root / "notes.txt").write_text("Words with a Meta- and a Text-Code. " * 30)

    def scan(wide: bool, calls: Calls) -> tuple[dict[str, FileRecord], list[str]]:
        options = CodeOptions(bits=128, wide=wide)

        async def hasher(root: str, path: str, units: frozenset[UnitType] | None) -> FileRecord:
            calls[(Path(path).name, units)] += 1
            return await asyncio.to_thread(compute_record, path, options, units, root=root)

        pipeline = PipelineOptions(versions=current_versions(options), wide=wide)
        h = Harness(tmp_path, hasher=hasher, options=pipeline)
        try:
            opened = list(h.committed)  # what opening the store did, before any scan
            h.scan()
            stored = h.stored()
        finally:
            h.close()
        changed = [Path(e.path).name for e in opened if e.type is EventType.FILE_CHANGED]
        return {Path(f.path).name: f.record for f in stored}, changed

    def fresh(wide: bool) -> dict[str, str | None]:
        options = CodeOptions(bits=128, wide=wide)
        return {p.name: compute_record(str(p), options).iscc for p in root.iterdir()}

    calls: Calls = Counter()
    narrow, _ = scan(False, calls)
    assert {name: r.iscc for name, r in narrow.items()} == fresh(False)
    for wide in (True, False):
        calls.clear()
        now, changed = scan(wide, calls)
        assert calls == Counter()  # composed from the stored units: no file was read
        assert changed == ["blob.bin"]  # the only one whose ISCC-CODE WIDE changes
        assert {name: r.iscc for name, r in now.items()} == fresh(wide)
        assert now["notes.txt"] == narrow["notes.txt"]
    assert fresh(True)["blob.bin"] != fresh(False)["blob.bin"]  # the option made a difference


def test_a_profile_change_recomputes_only_the_affected_units(tmp_path: Path) -> None:
    calls: list[frozenset[UnitType] | None] = []

    async def real(root: str, path: str, units: frozenset[UnitType] | None) -> FileRecord:
        calls.append(units)
        return await asyncio.to_thread(compute_record, path, None, units, root=root)

    first = Harness(tmp_path, hasher=real)
    text = first.write("doc.txt", "The quick brown fox jumps over the lazy dog. " * 40)
    first.scan()
    first.close()
    # Pretend the extraction recipes moved on: every unit whose profile names them is stale.
    again = Harness(tmp_path, hasher=real, options=PipelineOptions(versions={"isccd-extract": "0"}))
    try:
        before = again.stored(str(text)).record
        events = again.scan()
        assert calls[-1] == frozenset({UnitType.META, UnitType.TEXT})
        after = again.stored(str(text)).record
        full = compute_record(str(text))
        assert after.iscc == full.iscc  # recomposed from kept and new units
        assert after.unit(UnitType.DATA) == before.unit(UnitType.DATA)
        assert [e.type for e in events] == [EventType.SCAN_DONE]  # same content: silent
    finally:
        again.close()


def test_a_rename_makes_a_meta_code_from_the_new_file_name_without_reading(
    tmp_path: Path,
) -> None:
    calls: list[tuple[str, frozenset[UnitType] | None]] = []

    async def real(root: str, path: str, units: frozenset[UnitType] | None) -> FileRecord:
        calls.append((path, units))
        return await asyncio.to_thread(compute_record, path, None, units, root=root)

    def coded(path: Path) -> tuple[Any, ...]:
        record = compute_record(str(path))
        return (record.units, record.iscc, record.name, record.metahash, record.named_by_file)

    def stored(h: Harness, path: Path) -> tuple[Any, ...]:
        record = h.stored(str(path)).record
        return (record.units, record.iscc, record.name, record.metahash, record.named_by_file)

    options = PipelineOptions(versions={"isccd-extract": "1"})
    h = Harness(tmp_path, hasher=real, options=options)
    text = h.write("r9.txt", "Nothing in this text names it. " * 30)
    legacy = h.write("legacy_one.txt", "Nor does this one name itself anywhere. " * 30)
    titled = h.root / "titled.jpg"
    xmp = XMP_TEMPLATE.format(title="Mountain Lake", description="A calm morning").encode()
    scene().save(titled, quality=90, xmp=xmp)
    h.scan()
    old_iscc = compute_record(str(text)).iscc
    hashed = len(calls)
    text.rename(h.root / "completely_different_name.txt")
    titled.rename(h.root / "other.jpg")
    events = {e.path.rsplit("/", 1)[-1]: e for e in h.scan() if e.type is EventType.FILE_MOVED}
    assert len(calls) == hashed  # nothing was read
    new = h.root / "completely_different_name.txt"
    assert stored(h, new) == coded(new) and stored(h, h.root / "other.jpg") == coded(
        h.root / "other.jpg"
    )
    assert events[new.name].data["iscc"] == coded(new)[1] != old_iscc
    assert events[new.name].data["previous"]["iscc"] == old_iscc
    assert "previous" not in events["other.jpg"].data  # an embedded title: same codes

    # Another name of the same file (a hardlink) has its own Meta-Code.
    (h.root / "alias.txt").hardlink_to(new)
    h.scan()
    assert stored(h, h.root / "alias.txt") == coded(h.root / "alias.txt") != coded(new)

    # A record stored before the source of its name was kept: its Meta-Code is read again,
    # alone, by the reconcile that found the rename.
    h.close()
    db = sqlite3.connect(h.state / "isccd.db")
    db.execute("UPDATE files SET named_by_file = NULL")
    db.commit()
    db.close()
    h = Harness(tmp_path, hasher=real, options=options)
    try:
        legacy.rename(h.root / "legacy_two.txt")
        h.scan()
        # (The hardlink changed the file's link count, so that scan read it once, for both.)
        assert calls[hashed + 1 :] == [(str(h.root / "legacy_two.txt"), frozenset({UnitType.META}))]
        assert stored(h, h.root / "legacy_two.txt") == coded(h.root / "legacy_two.txt")
    finally:
        h.close()
