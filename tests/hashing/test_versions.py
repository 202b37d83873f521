"""``current_versions`` names every component the hashing layer writes into a profile, at the
version a fresh computation writes; and a skip for a missing tool records a profile that becomes
outdated once the tool is there."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import PIL
import pytest

from isccd.extract.text import document_extractor_available
from isccd.hashing import CodeOptions, compute_record, current_versions
from isccd.model import FileRecord, IssueCode, IssueKind, UnitType
from isccd.pipeline import profile_is_stale
from tests.extract.media import (
    HAVE_FFMPEG,
    HAVE_FPCALC,
    make_audio,
    make_documents,
    make_images,
    make_texts,
    make_video,
    needs_ffmpeg,
    needs_fpcalc,
    scene,
)


def _heic(folder: Path) -> Path | None:
    """A HEIC image, when the optional plugin is installed and can encode."""
    try:
        from pillow_heif import register_heif_opener
    except ImportError:
        return None
    register_heif_opener()
    path = folder / "photo.heic"
    try:
        scene().save(path)
    except (OSError, ValueError, KeyError):  # a libheif built without an encoder
        return None
    return path


@pytest.fixture(scope="module")
def one_of_each(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Files of every mode and of every extractor within each mode that is installed here."""
    root = tmp_path_factory.mktemp("modes")
    images = make_images(root / "images")
    texts = make_texts(root / "texts")
    files = [images["plain.png"], images["titled.jpg"], texts["utf8.txt"], texts["latin.txt"]]
    files.append(root / "vector.svg")
    files[-1].write_text('<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"/>')
    files.append(root / "blob.bin")
    files[-1].write_bytes(bytes(range(256)) * 64)
    heic = _heic(root)
    if heic is not None:
        files.append(heic)
    if document_extractor_available():
        documents = make_documents(root / "docs")
        files += [documents["report.pdf"], documents["letter.docx"]]
    if HAVE_FFMPEG:
        files.append(make_video(root / "video")["bars.mp4"])
        if HAVE_FPCALC:
            files.append(make_audio(root / "audio")["tone.mp3"])
    return files


def _profiles(record: FileRecord) -> list[str]:
    """Every profile a record carries: its units' and its skips'."""
    units = [u.profile for u in record.units]
    return units + [i.profile for i in record.issues if i.profile is not None]


def _check_current(profile: str, versions: Mapping[str, str]) -> set[str]:
    """Assert every part of ``profile`` is ``name/version`` at the current version; return the
    names."""
    names = set()
    for part in profile.split():
        name, sep, version = part.partition("/")
        assert sep, f"{part!r} of {profile!r} is not name/version"
        assert name in versions, f"{name!r} (in {profile!r}) is not a current_versions key"
        assert versions[name] == version, f"{profile!r}: current {name} is {versions[name]}"
        names.add(name)
    return names


@pytest.mark.parametrize("bits", [64, 128])
@pytest.mark.slow
def test_every_profile_component_is_current(one_of_each: list[Path], bits: int) -> None:
    options = CodeOptions(bits=bits)
    versions = current_versions(options)
    named: set[str] = set()
    for path in one_of_each:
        record = compute_record(str(path), options)
        assert record.units, record
        for profile in _profiles(record):
            named |= _check_current(profile, versions)
            # A fresh unit is never outdated, or every reconcile would compute it again.
            assert not profile_is_stale(profile, versions)
    # Each component the files here exercise was found in a profile: the keys are no wishlist.
    exercised = {"iscc", "bits", "isccd-extract", "pillow", "charset-normalizer"}
    if any(p.suffix == ".heic" for p in one_of_each):
        exercised.add("pillow-heif")
    if document_extractor_available():
        exercised |= {"tika", "pdfium"}
    if HAVE_FFMPEG:
        exercised |= {"ffmpeg", "fps", "ffprobe"}
        if HAVE_FPCALC:
            exercised.add("fpcalc")
    assert exercised <= named
    assert set(versions) - named <= {"pillow-heif", "tika", "pdfium", "ffmpeg", "fps", "ffprobe",
                                     "fpcalc"} - exercised  # fmt: skip


def test_versions_follow_the_options_and_name_a_missing_tool(tmp_path: Path) -> None:
    absent = str(tmp_path / "not-installed")
    options = CodeOptions(bits=256, video_fps=2, fpcalc=absent, ffmpeg=absent)
    versions = current_versions(options)
    assert (versions["bits"], versions["fps"]) == ("256", "2")
    assert versions["fpcalc"] == versions["ffmpeg"] == "missing"
    assert versions["iscc"] == "1.5.0"  # isccd's algorithms are conformant to iscc-core 1.5.0
    assert versions["pillow"] == PIL.__version__


@needs_ffmpeg
@needs_fpcalc
@pytest.mark.slow
def test_a_skip_for_a_missing_tool_is_outdated_once_the_tool_is_there(tmp_path: Path) -> None:
    # A WAV file: its tags are read by ffprobe (an MP3's are read in process).
    tone = make_audio(tmp_path / "audio")["tone.wav"]
    absent = str(tmp_path / "not-installed")
    without = CodeOptions(fpcalc=absent, ffprobe=absent)
    record = compute_record(str(tone), without)
    assert record.unit(UnitType.AUDIO) is None
    [skip] = [i for i in record.issues if i.stage == "audio"]
    assert (skip.kind, skip.code) == (IssueKind.SKIPPED, IssueCode.TOOL_MISSING)
    assert skip.profile is not None and "fpcalc/missing" in skip.profile.split()
    meta = record.unit(UnitType.META)
    assert meta is not None and "ffprobe/missing" in meta.profile.split()
    assert record.name == "tone"  # the file name stood in for the tags ffprobe would read

    # While the tools are missing nothing is outdated; once they are, exactly these two are.
    missing_now = current_versions(without)
    assert not any(profile_is_stale(p, missing_now) for p in _profiles(record))
    installed = current_versions()
    assert profile_is_stale(skip.profile, installed)
    assert profile_is_stale(meta.profile, installed)
    data = record.unit(UnitType.DATA)
    assert data is not None and not profile_is_stale(data.profile, installed)


def test_the_meta_settings_outdate_the_meta_code_alone(tmp_path: Path) -> None:
    texts = make_texts(tmp_path / "texts")
    embedded = CodeOptions()
    name_only = CodeOptions(extract_meta=False)
    off = CodeOptions(meta=False)
    record = compute_record(str(texts["utf8.txt"]), embedded)
    meta = record.unit(UnitType.META)
    assert meta is not None and "meta/embedded" in meta.profile.split()
    others = [u.profile for u in record.units if u.type is not UnitType.META]
    for options in (name_only, off):
        assert profile_is_stale(meta.profile, current_versions(options))
        assert not any(profile_is_stale(p, current_versions(options)) for p in others)

    # Turned off, the Meta-Code is a skip whose profile turning it on again outdates.
    without = compute_record(str(texts["utf8.txt"]), off)
    assert without.unit(UnitType.META) is None
    [skip] = [i for i in without.issues if i.stage == "meta"]
    assert (skip.kind, skip.code) == (IssueKind.SKIPPED, IssueCode.DISABLED)
    assert skip.profile is not None and "meta/off" in skip.profile.split()
    assert not profile_is_stale(skip.profile, current_versions(off))
    assert profile_is_stale(skip.profile, current_versions(embedded))
    assert profile_is_stale(skip.profile, current_versions(name_only))

    # A file without a Content-Code has no Meta-Code either way: nothing is recorded for it.
    blob = tmp_path / "blob.bin"
    blob.write_bytes(bytes(range(256)) * 8)
    assert not [i for i in compute_record(str(blob), off).issues if i.stage == "meta"]


def _logging_tool(folder: Path, name: str, log: Path) -> str:
    """A tool that says its version and notes each run in ``log``."""
    tool = folder / name
    tool.write_text(f"#!/bin/sh\necho {name} >> '{log}'\necho '{name} version 4.5.6'\n")
    tool.chmod(0o755)
    return str(tool)


def test_lazy_versions_ask_the_tools_only_when_a_tool_version_is_read(tmp_path: Path) -> None:
    log = tmp_path / "runs"
    options = CodeOptions(
        fpcalc=_logging_tool(tmp_path, "fpcalc", log),
        ffmpeg=_logging_tool(tmp_path, "ffmpeg", log),
        ffprobe=_logging_tool(tmp_path, "ffprobe", log),
    )
    versions = current_versions(options, lazy=True)
    # What a scan of files whose profiles name no tool reads: nothing starts a tool.
    assert {"fpcalc", "ffmpeg", "ffprobe", "iscc", "bits"} <= set(versions)
    assert "fpcalc" in versions and len(versions) == len(list(versions))
    assert versions["bits"] == "64"
    assert not profile_is_stale("iscc/1.5.0 bits/64 isccd-extract/1", versions)
    assert not log.exists()
    # The first tool version read asks the three, once.
    assert profile_is_stale("fpcalc/4.5.5", versions)
    assert sorted(log.read_text().split()) == ["ffmpeg", "ffprobe", "fpcalc"]
    assert (versions["ffmpeg"], versions["ffprobe"]) == ("4.5.6", "4.5.6")
    assert len(log.read_text().split()) == 3
    # Asked at once otherwise, with the same answers.
    log.unlink()
    other = tmp_path / "other"
    other.mkdir()
    eager = current_versions(
        CodeOptions(fpcalc=_logging_tool(other, "fpcalc", log), ffmpeg=options.ffmpeg),
    )
    assert sorted(log.read_text().split()) == ["fpcalc"]  # ffmpeg's answer is still cached
    assert dict(eager)["fpcalc"] == versions["fpcalc"]


def test_lazy_versions_ask_a_library_only_when_its_version_is_read() -> None:
    from isccd.extract import image, text

    image.component_versions.cache_clear()
    text.component_versions.cache_clear()
    versions = current_versions(lazy=True)
    # A scan of files whose profiles name no library: neither Pillow's plugin is imported
    # nor the extractors' metadata read.
    assert {"pillow", "pillow-heif", "tika", "pdfium", "charset-normalizer"} <= set(versions)
    assert not profile_is_stale("iscc/1.5.0 bits/64 isccd-extract/1", versions)
    assert image.component_versions.cache_info().misses == 0
    assert text.component_versions.cache_info().misses == 0
    # Read, one extractor's libraries are asked, once, with the answers asked at once.
    assert versions["pillow"] == PIL.__version__
    assert profile_is_stale("iscc/1.5.0 bits/64 pillow-heif/0.0.1", versions)
    assert image.component_versions.cache_info().misses == 1
    assert text.component_versions.cache_info().misses == 0
    assert dict(versions) == dict(current_versions())
