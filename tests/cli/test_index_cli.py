"""``isccd scan``, ``dupes``, ``similar`` and ``get`` on real files, as users run them; and a scan
killed with SIGKILL at random moments converging to what an uninterrupted scan produces."""

from __future__ import annotations

import io
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from isccd.cli.main import main
from isccd.cli.output import format_size
from isccd.store import open_store, state_url
from tests.pipeline.harness import snapshot

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "omicron",
    "sigma",
]


def prose(seed: int, words: int = 600) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(words))


def make_library(root: Path) -> Path:
    """Two exact pairs (two 200,000-byte files, two texts), a draft near the text, and an
    unrelated text."""
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "report.txt").write_text(prose(1))
    (root / "backup_report.txt").write_text(prose(1))  # an exact copy
    (root / "docs" / "draft.txt").write_text(prose(1)[:-40] + " and a new closing sentence here")
    (root / "big.bin").write_bytes(random.Random(2).randbytes(200_000))
    (root / "big_copy.bin").write_bytes(random.Random(2).randbytes(200_000))
    (root / "other.txt").write_text(prose(3))
    return root


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any, str]:
    """Run a command with ``--json``; its exit status, its output parsed (or as it is when it
    is not JSON) and its stderr."""
    status = main([*args, "--json"])
    out, err = capsys.readouterr()
    try:
        return status, json.loads(out), err
    except json.JSONDecodeError:
        return status, out, err


@pytest.mark.slow
def test_scan_then_rescan(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = str(tmp_path / "state")
    status, report, _ = run(["scan", "--state", state, "-j", "2", str(library)], capsys)
    assert status == 0
    [root] = report["roots"]
    assert (root["root"], root["seen"], root["added"], root["hashed"]) == (str(library), 6, 6, 6)
    assert root["duplicates"] >= 2 and root["errors"] == 0
    status, report, _ = run(["scan", "--state", state, str(library)], capsys)
    [root] = report["roots"]
    assert (status, root["unchanged"], root["hashed"], root["added"]) == (0, 6, 0, 0)


@pytest.mark.slow
def test_dupes_get_and_similar(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = str(tmp_path / "state")
    assert run(["scan", "--state", state, "-j", "2", str(library)], capsys)[0] == 0
    status, report, _ = run(["dupes", "--state", state], capsys)
    assert status == 0
    groups = report["groups"]
    assert [g["kind"] for g in groups] == ["exact", "exact"]
    # The most reclaimable first: the second binary's blocks on disk (its size: 200,000).
    second = Path(groups[0]["members"][1]["path"])
    assert groups[0]["reclaimable"] == second.stat().st_blocks * 512
    assert groups[0]["reclaimable_size"] == 200_000
    assert report["totals"]["groups"] == 2
    assert {m["path"] for m in groups[1]["members"]} == {
        str(library / "docs" / "report.txt"),
        str(library / "backup_report.txt"),
    }
    _, near, _ = run(["dupes", "--state", state, "--near"], capsys)
    [group] = [g for g in near["groups"] if g["kind"] == "near"]
    paths = {m["path"] for m in group["members"]}
    assert str(library / "docs" / "draft.txt") in paths and str(library / "other.txt") not in paths
    assert {m["unit"] for m in group["members"]} >= {"text"}
    assert all(m["distance"] <= m["threshold"] for m in group["members"])

    status, view, _ = run(["get", "--state", state, str(library / "docs" / "draft.txt")], capsys)
    assert status == 0 and view["removed"] is None and view["mode"] == "text"
    assert {d["relation"] for d in view["duplicates"]} == {"near"}
    assert all(d["distance"] <= d["threshold"] for d in view["duplicates"])

    status, found, _ = run(
        ["similar", "--state", state, str(library / "docs" / "report.txt")], capsys
    )
    relations = {(d["path"].rsplit("/", 1)[-1], d["relation"]) for d in found["matches"]}
    assert ("backup_report.txt", "exact") in relations and ("draft.txt", "near") in relations
    _, exact_only, _ = run(
        ["similar", "--state", state, "--max-distance", "0", str(library / "docs" / "draft.txt")],
        capsys,
    )
    assert all(d["distance"] == 0 for d in exact_only["matches"])
    # A file that is not indexed is coded on the fly and compared.
    outside = tmp_path / "outside.txt"
    outside.write_text(prose(3))
    _, found, _ = run(["similar", "--state", state, str(outside)], capsys)
    assert [d["path"] for d in found["matches"] if d["relation"] == "exact"] == [
        str(library / "other.txt")
    ]


@pytest.mark.slow
def test_removed_files_and_unknown_paths(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = str(tmp_path / "state")
    run(["scan", "--state", state, str(library)], capsys)
    (library / "big_copy.bin").unlink()
    _, report, _ = run(["scan", "--state", state, str(library)], capsys)
    assert report["roots"][0]["removed"] == 1
    status, view, _ = run(["get", "--state", state, str(library / "big_copy.bin")], capsys)
    assert status == 0 and view["removed"]
    status, _, err = run(["get", "--state", state, str(library / "never.txt")], capsys)
    assert status == 1 and "not in the index" in err
    status, _, err = run(["dupes", "--state", str(tmp_path / "empty")], capsys)
    assert status == 1 and "isccd scan" in err
    status, _, err = run(["scan", "--state", state, str(library / "nope")], capsys)
    assert status == 2 and "not a directory" in err
    status, _, err = run(["scan", "--state", state, "--ignore", "[z-a]", str(library)], capsys)
    assert status == 2 and "invalid ignore pattern" in err


def test_a_corrupt_index_is_a_message_not_a_traceback(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "isccd.db").write_bytes(b"garbage" * 2000)
    status, _, err = run(["scan", "--state", str(state), str(library)], capsys)
    assert status == 1 and "move it away" in err and "Traceback" not in err


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.slow
def test_readable_text_on_a_terminal(
    library: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = str(tmp_path / "state")
    run(["scan", "--state", state, str(library)], capsys)
    screen = Terminal()
    monkeypatch.setattr(sys, "stdout", screen)
    assert main(["dupes", "--state", state, "--near"]) == 0
    assert main(["get", "--state", state, str(library / "docs" / "report.txt")]) == 0
    text = screen.getvalue()
    on_disk = (library / "big_copy.bin").stat().st_blocks * 512
    assert f"exact: 2 files, {format_size(on_disk)} reclaimable" in text
    assert " by text to #" in text and "hardlink" not in text
    assert f"{library / 'docs' / 'report.txt'} (indexed)" in text


@pytest.mark.slow
def test_read_only_commands_work_while_another_process_writes(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    run(["scan", "--state", str(state), str(library)], capsys)
    writer = open_store(state_url(state))
    writer.begin()  # holds the write lock, with uncommitted changes
    writer.remove_file(writer.file_at(str(library / "big.bin")).id, 1.0)  # type: ignore[union-attr]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "isccd", "dupes", "--state", str(state), "--json"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    finally:
        writer.rollback()
        writer.close()
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["groups"]) == 2  # the uncommitted removal is not seen


# -- faults: SIGKILL at random moments -----------------------------------------------------------


def _count_files(db: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return int(conn.execute("SELECT count(*) FROM files").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def _wait_for(
    condition: Callable[[], bool], process: subprocess.Popen[bytes], timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)  # polling the database another process writes


def _scan_command(state: Path, root: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "isccd",
        "scan",
        "--state",
        str(state),
        "--json",
        "-j",
        "2",
        str(root),
    ]


@pytest.mark.slow
def test_a_scan_killed_at_random_moments_converges(tmp_path: Path) -> None:
    root = tmp_path / "root"
    rng = random.Random(int(os.environ.get("ISCCD_KILL_SEED", "11")))
    for i in range(120):
        sub = root / f"d{i % 6}"
        sub.mkdir(parents=True, exist_ok=True)
        if i % 3 == 0:
            (sub / f"f{i}.bin").write_bytes(rng.randbytes(rng.randint(1, 40_000)))
        else:
            (sub / f"f{i}.txt").write_text(prose(i % 17, words=rng.randint(20, 400)))
    (root / "d0" / "link.txt").hardlink_to(root / "d1" / "f1.txt")

    fresh = tmp_path / "fresh"
    subprocess.run(_scan_command(fresh, root), check=True, capture_output=True, timeout=120)
    expected = snapshot(state_url(fresh))

    state = tmp_path / "killed"
    db = state / "isccd.db"
    for target in sorted(rng.sample(range(121), 3)):
        process = subprocess.Popen(
            _scan_command(state, root), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        _wait_for(lambda t=target: _count_files(db) >= t, process, timeout=60)  # type: ignore[misc]
        process.send_signal(signal.SIGKILL)
        process.wait(30)
        if db.exists():
            conn = sqlite3.connect(db)
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            conn.close()
    finished = subprocess.run(
        _scan_command(state, root), capture_output=True, timeout=120, check=False
    )
    assert finished.returncode == 0, finished.stderr
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    assert snapshot(state_url(state)) == expected
