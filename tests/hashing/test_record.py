"""compute_record end to end: the SDK's ISCC-CODEs on real files, and a clear result for every
kind of bad input."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import iscc_core
import pytest

from isccd.extract.probe import probe_media
from isccd.extract.text import document_extractor_available
from isccd.hashing import CodeOptions, compute_record
from isccd.hashing.record import ONE_READ
from isccd.model import FileRecord, IssueCode, IssueKind, Mode, UnitType
from tests.extract.media import (
    HAVE_FFMPEG,
    HAVE_FPCALC,
    PROSE,
    jpeg_bytes,
    make_audio,
    make_documents,
    make_images,
    make_pdf,
    make_texts,
    make_video,
    needs_ffmpeg,
    png_bomb,
    scene,
)
from tests.extract.sdk import needs_sdk, sdk_codes


def _codes(path: Path, options: CodeOptions | None = None) -> FileRecord:
    return compute_record(str(path), options)


def _issue(record: FileRecord) -> tuple[str, IssueKind, IssueCode | None]:
    assert len(record.issues) >= 1, record
    issue = record.issues[0]
    return issue.stage, issue.kind, issue.code


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("corpus")
    files: dict[str, Path] = {}
    files.update(make_images(root / "images"))
    files.update(make_texts(root / "texts"))
    if document_extractor_available():
        files.update(make_documents(root / "docs"))
    if HAVE_FFMPEG:
        files.update(make_video(root / "video"))
        if HAVE_FPCALC:
            audio = make_audio(root / "audio")
            audio.pop("blip.wav")
            files.update(audio)
    return files


@needs_sdk
@pytest.mark.slow
def test_iscc_codes_equal_the_sdk(corpus: dict[str, Path], tmp_path: Path) -> None:
    names = sorted(corpus)
    reference = sdk_codes([corpus[n] for n in names], tmp_path)
    compared = 0
    for name in names:
        ref = reference[name]
        record = _codes(corpus[name])
        assert not record.issues, (name, record.issues)
        assert "ok" in ref, (name, ref)
        expected = ref["ok"]
        assert record.iscc == expected["iscc"], (name, record, expected)
        assert record.name == expected["name"], name
        assert record.mediatype == expected["mediatype"], name
        assert record.mode is not None and record.mode.value == expected["mode"]
        assert (record.datahash, record.filesize) == (expected["datahash"], expected["filesize"])
        assert record.metahash == expected["metahash"], name
        for key in ("characters", "width", "height"):
            if key in expected:
                assert getattr(record, key) == expected[key], (name, key)
        compared += 1
    assert compared == len(names) >= 20


@pytest.mark.slow
def test_units_are_the_reference_generators(corpus: dict[str, Path]) -> None:
    record = _codes(corpus["plain.png"], CodeOptions(bits=256))
    data = corpus["plain.png"].read_bytes()
    with corpus["plain.png"].open("rb") as f:
        assert record.unit(UnitType.DATA).iscc == iscc_core.gen_data_code_v0(f, 256)["iscc"]  # type: ignore[union-attr]
    instance = iscc_core.gen_instance_code_v0(io.BytesIO(data), 256)
    assert record.unit(UnitType.INSTANCE).iscc == instance["iscc"]  # type: ignore[union-attr]
    assert record.datahash == instance["datahash"]
    assert [u.type for u in record.units] == [
        UnitType.META,
        UnitType.IMAGE,
        UnitType.DATA,
        UnitType.INSTANCE,
    ]
    assert all(u.bits == 256 for u in record.units)
    codes = [u.iscc for u in record.units]
    assert record.iscc == iscc_core.gen_iscc_code_v0(codes)["iscc"]


@pytest.mark.parametrize(
    "size", [0, 1, ONE_READ - 1, ONE_READ, ONE_READ + 1, 3 * ONE_READ + 5], ids=str
)
def test_data_and_instance_equal_the_reference_read_whole_or_streamed(
    tmp_path: Path, size: int
) -> None:
    # Files under ONE_READ are read in one piece and hashed at once, larger ones streamed.
    data = random.Random(size).randbytes(size)
    path = tmp_path / "blob.bin"
    path.write_bytes(data)
    record = _codes(path, CodeOptions(bits=256))
    codes = [u.iscc for u in record.units]
    reference = iscc_core.gen_instance_code_v0(io.BytesIO(data), 256)
    assert codes == [iscc_core.gen_data_code_v0(io.BytesIO(data), 256)["iscc"], reference["iscc"]]
    assert (record.datahash, record.filesize) == (reference["datahash"], size)
    assert record.iscc == iscc_core.gen_iscc_code_v0(codes)["iscc"]


@pytest.mark.slow
def test_profiles_name_versions_and_subsets_recompute_only_what_is_asked(
    corpus: dict[str, Path],
) -> None:
    full = _codes(corpus["titled.jpg"])
    image = full.unit(UnitType.IMAGE)
    meta = full.unit(UnitType.META)
    assert image is not None and meta is not None
    assert "pillow/" in image.profile and "bits/64" in image.profile
    assert "iscc/1.5.0" in full.unit(UnitType.DATA).profile  # type: ignore[union-attr]
    assert full.name == "Mountain Lake"

    only_meta = compute_record(str(corpus["titled.jpg"]), units={UnitType.META}, timed=True)
    assert [u.type for u in only_meta.units] == [UnitType.META]
    assert only_meta.unit(UnitType.META) == meta  # same code and profile without decoding
    assert only_meta.iscc is None
    assert "image" not in dict(only_meta.timings)

    only_content = compute_record(str(corpus["titled.jpg"]), units={UnitType.IMAGE}, timed=True)
    assert only_content.units == (image,)
    assert "read" not in dict(only_content.timings)


def test_stages_are_timed_only_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("Stage timings cost every file a little; only a caller that asks pays.")
    plain, timed = compute_record(str(path)), compute_record(str(path), timed=True)
    assert plain.timings == ()
    assert [stage for stage, _ in timed.timings] == ["mediatype", "read", "text", "meta"]
    assert all(ms >= 0 for _, ms in timed.timings)
    assert (plain.units, plain.iscc, plain.issues) == (timed.units, timed.iscc, timed.issues)


@pytest.mark.skipif(not (HAVE_FFMPEG and HAVE_FPCALC), reason="ffmpeg or fpcalc missing")
def test_media_records_carry_duration_size_and_tool_versions(corpus: dict[str, Path]) -> None:
    audio = _codes(corpus["tone.mp3"])
    assert audio.mode is Mode.AUDIO and audio.name == "Concert Pitch"
    assert audio.duration is not None and 7.9 < audio.duration < 8.2
    assert "fpcalc/" in audio.unit(UnitType.AUDIO).profile  # type: ignore[union-attr]
    video = _codes(corpus["bars.mp4"])
    assert (video.width, video.height, video.duration) == (320, 240, 3.0)
    assert "ffmpeg/" in video.unit(UnitType.VIDEO).profile  # type: ignore[union-attr]
    assert video.name == "Test Pattern"


# -- bad input ------------------------------------------------------------------------------


def test_zero_byte_files(tmp_path: Path) -> None:
    for name in ("empty.txt", "empty.jpg", "empty"):
        path = tmp_path / name
        path.touch()
        record = _codes(path)
        assert record.filesize == 0
        assert record.unit(UnitType.INSTANCE).iscc == "ISCC:IAA26E2JXH27TING"  # type: ignore[union-attr]
        assert not record.failed, record.issues
        assert record.iscc is not None
        if name != "empty":
            assert _issue(record)[1:] == (IssueKind.SKIPPED, IssueCode.NO_CONTENT)


def test_data_without_a_content_code_says_so_in_one_skip(tmp_path: Path) -> None:
    for name, content in (("a.bin", b"\x00\x01\x02" * 100), ("b.bin", bytes(range(256)))):
        (tmp_path / name).write_bytes(content)
        record = compute_record(str(tmp_path / name), root=str(tmp_path))
        assert record.mediatype == "application/octet-stream"
        assert [(i.stage, i.kind, i.reason, i.code, i.profile) for i in record.issues] == [
            (
                "mediatype",
                IssueKind.SKIPPED,
                "no Content-Code for application/octet-stream",
                IssueCode.UNSUPPORTED,
                None,
            )
        ]
        assert [u.type for u in record.units] == [UnitType.DATA, UnitType.INSTANCE]


@pytest.mark.parametrize(
    "content",
    [
        "Hello, World!\nSecond line.\r\n\r\n  indented\tand tabbed\x00\x07 end  ",
        "...,;!?",  # nothing left after collapsing, but text after cleaning: a Text-Code
        " \t\r\n\x0b\x0c\x00\x1f\x7f ",  # nothing after cleaning: no Text-Code
        "Ünïcödé\u00a0text\u2028with a\u0301 mark",
        "\u00a0\u2003\u200b",
    ],
)
def test_text_codes_are_the_reference_of_the_cleaned_text(tmp_path: Path, content: str) -> None:
    path = tmp_path / "t.txt"
    path.write_text(content, encoding="utf-8")
    record = compute_record(str(path), root=str(tmp_path))
    cleaned = iscc_core.text_clean(content)
    if not cleaned:
        assert _issue(record) == ("text", IssueKind.SKIPPED, IssueCode.NO_CONTENT)
        assert record.unit(UnitType.TEXT) is None
        return
    expected = iscc_core.gen_text_code_v0(cleaned)
    assert record.unit(UnitType.TEXT).iscc == expected["iscc"]  # type: ignore[union-attr]
    assert record.characters == expected["characters"]


def test_plain_text_is_named_by_its_file_with_no_metadata_read(tmp_path: Path) -> None:
    (tmp_path / "Annual Report.txt").write_text("Some plain text of a report.\n")
    record = compute_record(str(tmp_path / "Annual Report.txt"), root=str(tmp_path))
    assert record.issues == ()
    assert record.named_by_file is True
    assert record.name == "Annual Report"
    meta = record.unit(UnitType.META)
    assert meta is not None
    assert meta.iscc == iscc_core.gen_meta_code_v0("Annual Report")["iscc"]
    assert meta.profile == "iscc/1.5.0 bits/64 meta/embedded isccd-extract/1"


def test_truncated_and_corrupt_images_keep_their_other_units(tmp_path: Path) -> None:
    path = tmp_path / "cut.jpg"
    path.write_bytes(jpeg_bytes(scene())[:2000])
    record = _codes(path)
    assert record.failed
    assert ("image", IssueKind.ERROR, IssueCode.INVALID) in [
        (i.stage, i.kind, i.code) for i in record.issues
    ]
    assert {u.type for u in record.units} == {UnitType.META, UnitType.DATA, UnitType.INSTANCE}
    assert record.iscc == iscc_core.gen_iscc_code_v0([u.iscc for u in record.units])["iscc"]


def test_misnamed_files_are_coded_by_content(tmp_path: Path) -> None:
    jpeg = tmp_path / "photo.txt"
    jpeg.write_bytes(jpeg_bytes(scene()))
    text = tmp_path / "notes.jpg"
    text.write_text(PROSE * 3)
    as_image = _codes(jpeg)
    as_text = _codes(text)
    assert (as_image.mediatype, as_image.mode, as_image.issues) == ("image/jpeg", Mode.IMAGE, ())
    assert (as_text.mediatype, as_text.mode, as_text.issues) == ("text/plain", Mode.TEXT, ())
    assert as_text.characters is not None and as_text.characters > 100


@needs_ffmpeg
def test_a_wrong_guess_from_the_content_is_coded_as_generic_data(tmp_path: Path) -> None:
    rng = random.Random(5)
    # File name, what the content begins like, and a name saying that format.
    cases = (
        ("photo.bin", b"\xff\xd8\xff\xe0", "photo.jpg"),
        ("picture", b"\x89PNG\r\n\x1a\n", "picture.png"),
        ("stream.bin", b"OggS\x00\x02", "stream.ogv"),
    )
    for name, signature, format_name in cases:
        path = tmp_path / name
        path.write_bytes(signature + rng.randbytes(3000))
        record = _codes(path)
        assert not record.failed, record.issues
        assert (record.mediatype, record.mode) == ("application/octet-stream", None)
        assert [u.type for u in record.units] == [UnitType.DATA, UnitType.INSTANCE]
        [issue] = record.issues
        assert issue.kind is IssueKind.WARNING and issue.stage in {"image", "video"}, issue
        assert issue.code in {IssueCode.INVALID, IssueCode.TOOL_FAILED}
        assert "coded as generic data" in issue.reason
        # Named for that format, the same bytes are a broken file: an error.
        named = tmp_path / format_name
        named.write_bytes(path.read_bytes())
        assert _codes(named).failed


def test_png_bomb_is_refused(tmp_path: Path) -> None:
    record = _codes(png_bomb(tmp_path / "bomb.png"))
    assert ("image", IssueKind.ERROR, IssueCode.TOO_LARGE) in [
        (i.stage, i.kind, i.code) for i in record.issues
    ]
    assert record.iscc is not None  # Meta, Data and Instance are still there


def test_non_utf8_text(tmp_path: Path) -> None:
    path = tmp_path / "latin.txt"
    path.write_bytes("Grüße aus Köln, schöne Straße, fünf Äpfel. ".encode("cp1252") * 20)
    record = _codes(path)
    assert record.issues == ()
    # cp1250 and cp1252 agree on these letters; either decodes the text right.
    assert record.extractor is not None and "charset-normalizer" in record.extractor
    expected = iscc_core.gen_text_code_v0(
        iscc_core.text_clean("Grüße aus Köln, schöne Straße, fünf Äpfel. " * 20)
    )
    assert record.unit(UnitType.TEXT).iscc == expected["iscc"]  # type: ignore[union-attr]


@pytest.mark.skipif(not document_extractor_available(), reason="isccd[extract] not installed")
def test_password_protected_and_broken_pdfs(tmp_path: Path) -> None:
    locked = _codes(make_pdf(tmp_path / "locked.pdf", PROSE, password="pw"))
    assert _issue(locked) == ("text", IssueKind.SKIPPED, IssueCode.NO_CONTENT)
    assert not locked.failed and locked.iscc is not None
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(make_pdf(tmp_path / "ok.pdf", PROSE).read_bytes()[:400])
    record = _codes(broken)
    assert _issue(record) == ("text", IssueKind.ERROR, IssueCode.INVALID)
    assert record.iscc is not None


@pytest.mark.slow
def test_documents_without_the_extra_are_skipped_with_advice(tmp_path: Path) -> None:
    docx = tmp_path / "x.pdf"
    make_pdf(docx, PROSE)
    code = (
        "import sys, json\n"
        "sys.modules['iscc_tika'] = None; sys.modules['pypdfium2'] = None\n"
        "from isccd.hashing import compute_record\n"
        "r = compute_record(sys.argv[1])\n"
        "print(json.dumps([r.iscc, [(i.stage, i.kind, i.code, i.reason) for i in r.issues],"
        " [u.type for u in r.units]]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(docx)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    iscc, issues, units = json.loads(out.stdout)
    assert iscc is not None
    assert units == ["meta", "data", "instance"]
    stage, kind, issue_code, reason = issues[0]
    assert (stage, kind, issue_code) == ("text", "skipped", "tool_missing")
    assert "pip install 'isccd[extract]'" in reason


def test_file_growing_while_read_is_unstable(tmp_path: Path) -> None:
    path = tmp_path / "growing.bin"
    path.write_bytes(os.urandom(1 << 20) * 48)  # long enough to still be reading
    stop = threading.Event()

    def writer() -> None:
        with path.open("ab") as f:
            while not stop.is_set():
                f.write(b"more")
                f.flush()
                time.sleep(0.001)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        record = _codes(path)
    finally:
        stop.set()
        thread.join()
    assert _issue(record) == ("read", IssueKind.ERROR, IssueCode.UNSTABLE)
    assert record.units == () and record.iscc is None  # nothing untrusted is kept


def test_vanished_file(tmp_path: Path) -> None:
    record = _codes(tmp_path / "gone.txt")
    assert record.stat is None
    assert _issue(record) == ("read", IssueKind.ERROR, IssueCode.VANISHED)


def test_non_regular_files_are_never_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock"
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    zero = tmp_path / "zero"
    zero.symlink_to("/dev/zero")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        for path in (fifo, sock_path, loop, zero, "/dev/null", "/dev/zero", tmp_path):
            record = compute_record(str(path))
            assert _issue(record) == ("read", IssueKind.ERROR, IssueCode.NOT_REGULAR), path
            assert record.stat is None and record.units == ()


#: Past 4 GiB, where a 32-bit size or offset would wrap, and 80 times the growth allowed below:
#: memory that grew with the bytes read would show.
SPARSE_SIZE = 5 * 1024**3


@pytest.mark.slow
def test_sparse_5_gib_file_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "sparse.bin"
    with path.open("wb") as f:
        f.truncate(SPARSE_SIZE)
    # The first record of a process loads (or, with no machine code cached yet, compiles) the
    # kernels it needs, which takes memory of its own: the warm-up is a file of the same kind
    # (zeros, larger than one read), so that what is measured is the growth while the 5 GiB
    # are read.
    small = tmp_path / "small.bin"
    with small.open("wb") as f:
        f.truncate(16 * 1024**2)
    code = (
        "import resource, sys, json\n"
        "from isccd.hashing import compute_record\n"
        "compute_record(sys.argv[2])\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "r = compute_record(sys.argv[1])\n"
        "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(json.dumps([r.filesize, r.iscc, after - before]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path), str(small)],
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    filesize, iscc, growth_kib = json.loads(out.stdout)
    assert filesize == SPARSE_SIZE and iscc is not None
    assert growth_kib < 64 * 1024, growth_kib


@pytest.mark.skipif(not (HAVE_FFMPEG and HAVE_FPCALC), reason="ffmpeg or fpcalc missing")
@pytest.mark.slow
def test_tools_leave_no_temporary_files(
    corpus: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    made: list[Path] = []
    real = tempfile.mkdtemp

    def recording(*args: Any, **kwargs: Any) -> str:
        made.append(Path(real(*args, **kwargs)))
        return str(made[-1])

    monkeypatch.setattr(tempfile, "mkdtemp", recording)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # the default temporary directory
    options = CodeOptions(tool_timeout=60)
    fake = tmp_path / "fake.mp4"
    fake.write_bytes(b"\x00\x00\x00\x18ftypmp42" + os.urandom(5000))
    for path in (corpus["tone.mp3"], corpus["bars.mp4"], corpus["letter.docx"], fake):
        if path.exists():
            _codes(path, options)
    assert made and all(d.parent == temp for d in made)  # the tools worked where they were told
    assert list(temp.iterdir()) == []


@pytest.mark.slow
def test_tool_timeout_is_a_clean_error(corpus: dict[str, Path], tmp_path: Path) -> None:
    slow = tmp_path / "slow-fpcalc"
    slow.write_text("#!/bin/sh\nexec sleep 30\n")
    slow.chmod(0o755)
    options = CodeOptions(fpcalc=str(slow), ffprobe="none", tool_timeout=0.5)
    wav = tmp_path / "x.wav"
    wav.write_bytes(b"RIFF" + bytes(100))
    start = time.monotonic()
    record = _codes(wav, options)
    assert time.monotonic() - start < 10
    assert ("audio", IssueKind.ERROR, IssueCode.TOOL_FAILED) in [
        (i.stage, i.kind, i.code) for i in record.issues
    ]
    assert "timed out" in record.issues[0].reason


@pytest.mark.slow
def test_records_travel_through_a_process_pool(corpus: dict[str, Path]) -> None:
    paths = [str(corpus["plain.png"]), str(corpus["utf8.txt"])]
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
        remote = list(pool.map(compute_record, paths))
    local = [compute_record(p) for p in paths]
    assert [r.units for r in remote] == [r.units for r in local]
    assert [r.iscc for r in remote] == [r.iscc for r in local]


@needs_ffmpeg
@pytest.mark.slow
def test_metadata_read_with_the_content_is_not_read_again_when_the_content_code_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from isccd.hashing import content

    tone = make_audio(tmp_path / "audio")["tone.wav"]
    probed: list[str] = []
    real = probe_media

    def counting(*args: object, **kwargs: object) -> object:
        probed.append("ffprobe")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(content, "probe_media", counting)
    without_fpcalc = CodeOptions(fpcalc=str(tmp_path / "not-installed"))
    record = compute_record(str(tone), without_fpcalc)
    assert record.unit(UnitType.AUDIO) is None  # the Content-Code failed
    assert record.unit(UnitType.META) is not None
    assert probed == ["ffprobe"]  # its tags were read once, with the content
