"""A record under a new name, made without reading the file, equals what coding the renamed
file gives: isccd's own ``compute_record``, iscc-core's Meta-Code and iscc-sdk's ISCC-CODE."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import iscc_core
import pytest
from PIL import Image, PngImagePlugin

from isccd.hashing import CodeOptions, compute_record, renamed_record
from isccd.model import FileRecord, UnitType
from isccd.pipeline import profile_is_stale
from tests.extract.media import XMP_TEMPLATE
from tests.extract.sdk import needs_sdk, sdk_codes

TEXT = "Nothing in this text names it; the Meta-Code takes its name from the file. " * 20


def _same(renamed: FileRecord, coded: FileRecord) -> None:
    """Everything a record says about the file, but the validators and the timings."""
    for field in ("path", "units", "iscc", "name", "description", "metahash", "issues"):
        assert getattr(renamed, field) == getattr(coded, field), field
    assert renamed.named_by_file == coded.named_by_file


def _png(path: Path, *, title: str | None = None, description: str | None = None) -> Path:
    info = PngImagePlugin.PngInfo()
    if title is not None or description is not None:
        xmp = XMP_TEMPLATE.format(title=title or "", description=description or "")
        info.add_itxt("XML:com.adobe.xmp", xmp)
    Image.linear_gradient("L").resize((96, 64)).convert("RGB").save(path, pnginfo=info)
    return path


@pytest.mark.parametrize(
    ("old", "new", "options"),
    [
        ("r9.txt", "completely_different_name.txt", CodeOptions()),
        ("r9.txt", "completely-different name.txt", CodeOptions(bits=256)),
        ("r9.txt", "___.txt", CodeOptions()),  # no name left: no Meta-Code
        ("untitled.png", "now_with_a_name.png", CodeOptions()),
        ("described.png", "a-new-name.png", CodeOptions()),  # a description, no title
        ("titled.png", "renamed.png", CodeOptions(extract_meta=False)),  # title not read
        ("titled.png", "renamed.png", CodeOptions()),  # the title stays
    ],
)
def test_a_renamed_record_is_the_record_of_the_renamed_file(
    tmp_path: Path, old: str, new: str, options: CodeOptions
) -> None:
    path = tmp_path / old
    if old.endswith(".txt"):
        path.write_text(TEXT)
    else:
        title = "Harbour at Dusk" if old.startswith("titled") else None
        _png(path, title=title, description="Boats and lights" if old != "untitled.png" else None)
    before = compute_record(str(path), options)
    path.rename(tmp_path / new)
    after = compute_record(str(tmp_path / new), options)
    renamed = renamed_record(before, str(tmp_path / new), options.wide)
    _same(renamed, after)
    assert before.named_by_file == (old != "titled.png" or not options.extract_meta)
    if before.named_by_file and after.unit(UnitType.META) is not None:
        assert renamed.iscc != before.iscc  # the name changed the codes
        meta = iscc_core.gen_meta_code(
            Path(new).stem.replace("-", " ").replace("_", " "),
            before.description,
            bits=options.bits,
        )
        assert renamed.unit(UnitType.META).iscc == meta["iscc"]  # type: ignore[union-attr]
        assert renamed.metahash == meta["metahash"]


@needs_sdk
@pytest.mark.slow
def test_the_renamed_iscc_code_is_the_sdks(tmp_path: Path) -> None:
    path = tmp_path / "r9.txt"
    path.write_text(TEXT)
    before = compute_record(str(path))
    target = tmp_path / "completely_different_name.txt"
    path.rename(target)
    renamed = renamed_record(before, str(target), wide=False)
    sdk = sdk_codes([target], tmp_path)[target.name]
    assert renamed.iscc == sdk["ok"]["iscc"] != before.iscc
    assert renamed.name == sdk["ok"]["name"] == "completely different name"


def test_a_record_stored_before_the_name_source_was_kept_is_recomputed_when_it_may_follow(
    tmp_path: Path,
) -> None:
    versions = {"isccd-extract": "1"}
    named = _png(tmp_path / "untitled.png")
    legacy = dataclasses.replace(compute_record(str(named)), named_by_file=None)
    renamed = renamed_record(legacy, str(tmp_path / "other.png"), wide=False)
    assert renamed.iscc == legacy.iscc  # not guessed
    old_meta, new_meta = legacy.unit(UnitType.META), renamed.unit(UnitType.META)
    assert old_meta is not None and new_meta is not None and new_meta.iscc == old_meta.iscc
    assert not profile_is_stale(old_meta.profile, versions)
    assert profile_is_stale(new_meta.profile, versions)  # the next reconcile computes it
    assert [u for u in renamed.units if u.type is not UnitType.META] == [
        u for u in legacy.units if u.type is not UnitType.META
    ]
    # A name that is not the file name's is an embedded title: it does not follow.
    titled = dataclasses.replace(
        compute_record(str(_png(tmp_path / "titled.png", title="Harbour"))), named_by_file=None
    )
    assert renamed_record(titled, str(tmp_path / "x.png"), wide=False).units == titled.units
