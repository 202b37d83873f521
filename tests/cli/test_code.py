"""``isccd code``: JSON with the SDK's field names, walking, ordering and exit statuses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import iscc_core
import pytest

from isccd.cli.code import walk
from isccd.cli.main import main
from tests.cli.test_index_cli import Terminal
from tests.cli.test_scan_early_fork_server import _marked
from tests.extract.media import PROSE, jpeg_bytes, scene


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["code", *args])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "b-sub" / "deeper").mkdir(parents=True)
    (root / "a.txt").write_text(PROSE)
    (root / "c.jpg").write_bytes(jpeg_bytes(scene()))
    (root / "b-sub" / "z.bin").write_bytes(os.urandom(5000))
    (root / "b-sub" / "deeper" / "d.md").write_text("# Notes\n\n" + PROSE)
    os.mkfifo(root / "b-sub" / "pipe")
    (root / "b-sub" / "link").symlink_to(root / "a.txt")
    (root / "b-sub" / "loop").symlink_to(root)  # a symlinked directory: never followed
    return root


def test_one_file_prints_an_array_of_one_sdk_shaped_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "My_holiday-photo.jpg"
    path.write_bytes(jpeg_bytes(scene()))
    status, out, _ = _run(capsys, str(path), "--json", "--units")
    assert status == 0
    [obj] = json.loads(out)
    assert obj["name"] == "My holiday photo"  # the SDK's file-name fallback
    assert obj["filename"] == "My_holiday-photo.jpg"
    assert (obj["mediatype"], obj["mode"], obj["width"], obj["height"]) == (
        "image/jpeg",
        "image",
        320,
        240,
    )
    assert obj["size"] == path.stat().st_size and "filesize" not in obj
    assert list(obj["units"]) == ["meta", "image", "data", "instance"]
    assert obj["iscc"] == iscc_core.gen_iscc_code_v0(list(obj["units"].values()))["iscc"]
    assert obj["datahash"].startswith("1e20") and obj["metahash"].startswith("1e20")
    assert "issues" not in obj and "error" not in obj


def test_directories_are_walked_in_order_and_specials_skipped(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = _run(capsys, str(tree), "--jsonl", "-j", "2")
    rows = [json.loads(line) for line in out.splitlines()]
    rel = [os.path.relpath(r["path"], tree) for r in rows]
    assert rel == [
        "a.txt",
        "b-sub/deeper/d.md",
        "b-sub/link",
        "b-sub/loop",
        "b-sub/pipe",
        "b-sub/z.bin",
        "c.jpg",
    ]
    skipped = {Path(r["path"]).name: r["issues"][0] for r in rows if "iscc" not in r}
    assert set(skipped) == {"link", "loop", "pipe"}
    assert all(i["kind"] == "skipped" and i["code"] == "not_regular" for i in skipped.values())
    binary = rows[rel.index("b-sub/z.bin")]
    assert binary["iscc"].startswith("ISCC:KUA")  # Data + Instance only (no Content-Code)
    assert binary["issues"][0]["code"] == "unsupported"
    assert status == 0  # skips are not failures
    # The same output with one worker: the order does not depend on scheduling.
    _, serial, _ = _run(capsys, str(tree), "--jsonl", "-j", "1")
    assert serial == out


def test_json_is_one_array_of_every_file_and_jsonl_one_object_per_line(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, document, _ = _run(capsys, str(tree), "--json")
    _, lines, _ = _run(capsys, str(tree), "--jsonl")
    assert json.loads(document) == [json.loads(line) for line in lines.splitlines()]
    assert len(lines.splitlines()) == 7
    _, one, _ = _run(capsys, str(tree / "b-sub" / "deeper"), "--json")
    assert [Path(o["path"]).name for o in json.loads(one)] == ["d.md"]  # an array all the same


def test_failures_set_the_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.txt"
    good.write_text(PROSE)
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    status, out, _ = _run(capsys, str(good), str(bad), str(tmp_path / "missing"), "--jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert status == 1
    assert "error" not in rows[0]
    assert rows[1]["iscc"] and "error" in rows[1]  # failed Image-Code, other units kept
    assert rows[2]["error"] == "no such file or directory"


def test_an_explicit_fifo_is_an_error_and_never_opened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    status, out, _ = _run(capsys, str(fifo), "--jsonl")
    assert status == 1
    assert json.loads(out)["issues"][0]["code"] == "not_regular"


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for args in ([], ["x", "--bits", "48"], ["x", "-j", "0"], ["x", "--json", "--jsonl"]):
        with pytest.raises(SystemExit) as exc:
            main(["code", *args])
        assert exc.value.code == 2
    capsys.readouterr()


def test_bits_and_no_meta(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "a.txt"
    path.write_text(PROSE)
    _, out, _ = _run(capsys, str(path), "--jsonl", "--units", "--bits", "256", "--no-meta")
    obj = json.loads(out)
    assert [(t, u[:6]) for t, u in obj["units"].items()] == [
        ("text", "ISCC:E"),
        ("data", "ISCC:G"),
        ("instance", "ISCC:I"),
    ]
    assert all(len(iscc_core.iscc_decode(u)[4]) == 32 for u in obj["units"].values())
    assert "name" not in obj


def test_symlinked_argument_is_followed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "real.txt"
    target.write_text(PROSE)
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    assert [t.path for t in walk([str(link)])] == [str(target)]
    status, out, _ = _run(capsys, str(link), "--jsonl")
    assert status == 0 and json.loads(out)["path"] == str(link)


def test_readable_summary_on_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a.png"
    scene().save(path)
    screen = Terminal()
    monkeypatch.setattr(sys, "stdout", screen)
    assert main(["code", "--units", str(path)]) == 0
    lines = screen.getvalue().splitlines()
    assert lines[0].startswith("ISCC:K") and lines[0].endswith(str(path))
    assert "image/png" in lines[1] and "320x240" in lines[1]
    units = [line.split()[0] for line in lines if ": ISCC:" in line]
    assert units == ["meta:", "image:", "data:", "instance:"]


@pytest.mark.slow
def test_a_process_pool_gives_the_same_output_in_the_same_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    words = PROSE.split()
    for i in range(40):  # enough files for the pool to be used
        (tmp_path / f"f{i:02d}.txt").write_text(" ".join(words[i % 7 :] * (i + 1)))
    (tmp_path / "f20.txt").chmod(0o000)  # a failure in the middle keeps its place
    status, pooled, _ = _run(capsys, str(tmp_path), "--jsonl", "-j", "2")
    _, serial, _ = _run(capsys, str(tmp_path), "--jsonl", "-j", "1")
    assert pooled == serial
    rows = [json.loads(line) for line in pooled.splitlines()]
    assert [Path(r["path"]).name for r in rows] == [f"f{i:02d}.txt" for i in range(40)]
    if os.geteuid() != 0:  # root reads the file anyway
        assert status == 1 and "error" in rows[20]


@pytest.mark.slow
def test_output_that_fails_midway_ends_the_workers_and_the_command(tmp_path: Path) -> None:
    # Enough files for worker processes; the first line written fails (a full disk): the
    # error ends the command, which must not wait forever for the workers it left running.
    for i in range(40):
        (tmp_path / f"{i:02}.txt").write_text(f"{PROSE} {i}")
    marker = uuid.uuid4().hex
    env = {**os.environ, "ISCCD_TEST_MARK": marker, "PYTHONUNBUFFERED": "1"}
    args = [sys.executable, "-m", "isccd", "code", "--jsonl", "-j", "2", str(tmp_path)]
    with Path("/dev/full").open("w") as full:
        command = subprocess.Popen(
            args, stdout=full, stderr=subprocess.PIPE, env=env, start_new_session=True
        )
        try:
            _, stderr = command.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(command.pid, signal.SIGKILL)
            command.communicate()
            pytest.fail("the command did not exit")
    assert command.returncode != 0
    assert b"No space left on device" in stderr
    assert _marked(marker) == []  # no worker, fork server or tracker outlives it
