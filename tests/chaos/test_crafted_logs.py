"""Crafted action logs given to ``isccd dedupe --undo``: every one is refused with a message
saying why and exit 2, and nothing is touched (the file a log aims at, the linked files, the
folders); the genuine log they were made from is then undone."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from isccd.cli.main import main
from isccd.dedupe.logkey import load_key
from isccd.dedupe.plan import Action
from tests.dedupe.conftest import plan_of, run_plan, write

from .crafted_logs import crafted_logs

#: At least this many are tried (the list grows; the figure is in bench/chaos.py).
CRAFTED = 50


def _tree(top: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under ``top``: inode, mode and a digest of its content."""
    out = {}
    for path in sorted(top.rglob("*")):
        st = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        out[str(path)] = (st.st_ino, st.st_mode, digest)
    return out


@pytest.mark.slow
def test_crafted_logs_are_refused_and_touch_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    key = load_key(state, create=True)
    root = tmp_path / "root"
    data = os.urandom(50_000)
    files = [write(root / "d" / f"{i}.bin", data, mtime=1_000_000 + i) for i in range(2)]
    outside = write(tmp_path / "outside" / "secret", b"not for undo to touch")
    genuine = tmp_path / "genuine.jsonl"
    run_plan(plan_of(root, [files]), Action.LINK, genuine, key=key)
    before = _tree(tmp_path / "root") | _tree(tmp_path / "outside")
    cases = crafted_logs(genuine.read_bytes(), key, str(outside))
    assert len(cases) >= CRAFTED
    wrong = []
    for case in cases:
        log = tmp_path / "crafted.jsonl"
        log.write_bytes(case.data)
        status = main(["dedupe", "--undo", str(log), "--state", str(state)])
        err = capsys.readouterr().err
        if status != 2 or case.says not in err or "nothing was touched" not in err:
            wrong.append(f"{case.name}: exit {status}, {err.strip()[:300]}")
        log.unlink()
    assert not wrong, "\n".join(wrong)
    assert _tree(tmp_path / "root") | _tree(tmp_path / "outside") == before
    # The genuine log is undone by the same command.
    assert main(["dedupe", "--undo", str(genuine), "--state", str(state)]) == 0
    assert files[0].stat().st_ino != files[1].stat().st_ino


def test_a_log_written_before_logs_were_authenticated_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "old.jsonl"
    old.write_text('{"op": "run", "version": 1, "time": 1.0, "pid": 1, "action": "link"}\n')
    status = main(["dedupe", "--undo", str(old), "--state", str(tmp_path / "state")])
    err = capsys.readouterr().err
    assert status == 1 and "no action-log key" in err  # no log was ever written here
    load_key(tmp_path / "state", create=True)
    status = main(["dedupe", "--undo", str(old), "--state", str(tmp_path / "state")])
    err = capsys.readouterr().err
    assert status == 2
    assert "line 1 is refused, it carries no MAC" in err
    assert "an isccd from before action logs were authenticated" in err
