"""The action log: runs sharing one log keep their actions apart, a line a killed writer cut
short is cut off, a full disk stops the run with a message, and the key is the user's own."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from isccd.cli.main import main
from isccd.dedupe.apply import Status, apply_steps
from isccd.dedupe.log import ActionLog, Intent
from isccd.dedupe.logkey import key_path, load_key
from isccd.dedupe.logread import _FIELDS, read_log
from isccd.dedupe.plan import Action, steps_of
from isccd.dedupe.planfile import plan_document
from isccd.dedupe.undo import UndoStatus, undo_log
from isccd.errors import ActionLogError
from tests.dedupe.conftest import KEY, fill, mounted, plan_of, run_plan, write

DATA = os.urandom(20_000)


def _pairs(root: Path, name: str, count: int) -> list[list[Path]]:
    return [
        [write(root / name / f"{g}{c}.bin", DATA + bytes([g]), mtime=1_000_000 + (c == "b"))
         for c in "ab"]
        for g in range(count)
    ]  # fmt: skip


def test_every_intent_field_is_checked_when_read() -> None:
    assert set(_FIELDS) == {f.name for f in fields(Intent)}


def test_runs_writing_one_log_at_once_keep_their_actions_apart(tmp_path: Path) -> None:
    root = tmp_path / "root"
    plans = [plan_of(root, _pairs(root, name, 5)) for name in ("one", "two")]
    log = tmp_path / "shared.jsonl"
    # Both runs open the log before either writes, as two commands started together do, and
    # their records interleave.
    writers = [ActionLog(log, KEY), ActionLog(log, KEY)]
    for writer in writers:
        writer.run(Action.LINK, apply=True)
    steps = [steps_of(p, Action.LINK, near=False, move_to=None, protected=())[0] for p in plans]
    for one, two in zip(steps[0], steps[1], strict=True):
        for writer, step in ((writers[0], one), (writers[1], two)):
            assert [o.status for o in apply_steps([step], writer)] == [Status.DONE]
    for writer in writers:
        writer.close()
    actions = read_log(log, KEY)
    assert len({(a.run, a.intent.id) for a in actions}) == len(actions) == 10
    assert {a.outcome for a in actions} == {"done"}
    outcomes = undo_log(log, KEY)
    assert [o.status for o in outcomes] == [UndoStatus.UNDONE] * 10
    assert len({p.stat().st_ino for group in _all(root) for p in group}) == 20


def _all(root: Path) -> list[list[Path]]:
    return [[p] for p in sorted(root.rglob("*.bin"))]


@pytest.mark.slow
def test_two_commands_sharing_one_log_are_both_undone(tmp_path: Path) -> None:
    log = tmp_path / "shared.jsonl"
    # Two trees (one tree is locked by one run at a time), both watched roots of this host.
    roots = [tmp_path / "one", tmp_path / "two"]
    env = {**os.environ, "ISCCD_WATCH__ROOTS": json.dumps([str(r) for r in roots])}
    procs = []
    for root in roots:
        plan = tmp_path / f"{root.name}.json"
        plan.write_text(json.dumps(plan_document(plan_of(root, _pairs(root, root.name, 40)))))
        command = [sys.executable, "-m", "isccd", "dedupe", "--link", "--plan", str(plan)]
        command += ["--apply", "--log", str(log)]
        procs.append(
            subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        )
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    undo = subprocess.run(
        [sys.executable, "-m", "isccd", "dedupe", "--undo", str(log), "--json"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    report = json.loads(undo.stdout)
    assert undo.returncode == 0, undo.stderr
    assert [o["status"] for o in report["outcomes"]] == ["undone"] * 80
    assert len({p.stat().st_ino for r in roots for p in r.rglob("*.bin")}) == 160


def test_a_line_cut_short_by_a_killed_writer_is_cut_off_by_the_next(tmp_path: Path) -> None:
    root = tmp_path / "root"
    log = tmp_path / "log"
    run_plan(plan_of(root, _pairs(root, "one", 2)), Action.LINK, log)
    with log.open("ab") as f:
        f.write(b'{"op":"intent","run":"0123456789abcdef","seq":1,"id":1,"act')  # killed here
    run_plan(plan_of(root, _pairs(root, "two", 2)), Action.LINK, log)
    assert b'"act{' not in log.read_bytes() and len(read_log(log, KEY)) == 4
    assert [o.status for o in undo_log(log, KEY)] == [UndoStatus.UNDONE] * 4


@pytest.mark.slow
def test_a_log_on_a_full_disk_stops_the_run_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    monkeypatch.setenv("ISCCD_WATCH__ROOTS", str(root))  # a plan acts on this host's roots
    groups = _pairs(root, "lib", 40)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(plan_document(plan_of(root, groups))))
    with mounted("tmpfs", tmp_path / "mnt", tmp_path, size="1m") as mnt:
        log = mnt / "log.jsonl"
        filler = fill(mnt, leave=4096)  # one page: the first few intents fit, not 40
        status = main(["dedupe", "--link", "--plan", str(plan), "--apply", "--log", str(log)])
        err = capsys.readouterr().err
        assert status == 1, err
        assert f"the action log {log} cannot be written: No space left on device" in err
        assert "stopped before the next file" in err
        # The log is whole lines, every action in it is done or not started, and the files
        # not reached are untouched.
        actions = read_log(log, load_key(Path(os.environ["STATE_DIRECTORY"]), create=False))
        assert 0 < len(actions) < 40
        linked = sum(a.stat().st_ino == b.stat().st_ino for a, b in groups)
        assert linked <= len(actions)
        # Undo can log only what fits in what the run's cut-off line left free of the log's
        # last page (the lengths of the paths and numbers in the lines decide how much: none,
        # a few lines, or all it needs): it does only what it logged, and says where it
        # stopped.
        key = load_key(Path(os.environ["STATE_DIRECTORY"]), create=False)
        inodes = {str(p): p.stat().st_ino for pair in groups for p in pair}
        status = main(["dedupe", "--undo", str(log), "--json"])
        out, err = capsys.readouterr()
        outcomes = json.loads(out)["outcomes"]
        if status == 0:
            assert len(outcomes) == len(actions), err
        else:
            said = re.search(
                r"cannot be written: No space left on device; "
                r"(nothing was touched|undo stopped after (\d+): run it again to finish)$",
                err.strip(),
            )
            assert status == 1 and said is not None, err
            assert len(outcomes) == int(said.group(2) or 0) <= len(actions)
        reported = {o["path"] for o in outcomes}
        undone = {o["path"] for o in outcomes if o["status"] == "undone"}
        # What undo logged as handled it reported; the files it changed are those it reported
        # undone, each of them logged: none changed that the log does not say.
        logged = {a.intent.path for a in read_log(log, key) if a.undone is not None}
        assert undone <= logged <= reported
        assert logged == reported or status == 1  # a write it could not make, it said
        assert {p for p, ino in inodes.items() if Path(p).stat().st_ino != ino} == undone
        assert sum(a.stat().st_ino == b.stat().st_ino for a, b in groups) == linked - len(undone)
        filler.unlink()
        assert main(["dedupe", "--undo", str(log)]) == 0
    assert all(a.stat().st_ino != b.stat().st_ino for a, b in groups)
    assert all(p.read_bytes() == DATA + bytes([g]) for g, pair in enumerate(groups) for p in pair)


def test_the_key_is_made_private_and_refused_when_others_could_use_it(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with pytest.raises(ActionLogError, match="no action-log key"):
        load_key(state, create=False)
    key = load_key(state, create=True)
    path = key_path(state)
    assert path.stat().st_mode & 0o777 == 0o600 and load_key(state, create=False) == key
    path.chmod(0o640)
    with pytest.raises(ActionLogError, match="can be read by others"):
        load_key(state, create=True)
    path.chmod(0o600)
    if os.geteuid() == 0:
        os.chown(path, 4321, 4321)
        with pytest.raises(ActionLogError, match="owned by user 4321"):
            load_key(state, create=True)


def test_a_log_of_another_key_is_not_continued(tmp_path: Path) -> None:
    root = tmp_path / "root"
    log = tmp_path / "log"
    run_plan(plan_of(root, _pairs(root, "one", 1)), Action.LINK, log)
    with pytest.raises(ActionLogError, match="not written with this state directory's key"):
        ActionLog(log, bytes(32))


def test_a_key_folder_that_is_a_link_or_writable_by_others_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    state = tmp_path / "state"
    state.mkdir()
    (state / "dedupe").symlink_to(elsewhere)
    with pytest.raises(ActionLogError, match="is not a folder"):
        load_key(state, create=True)
    assert list(elsewhere.iterdir()) == []  # no key was made where the link points
    (state / "dedupe").unlink()
    (state / "dedupe").mkdir()
    (state / "dedupe").chmod(0o777)
    with pytest.raises(ActionLogError, match=r"can be written by others \(mode 0777\)"):
        load_key(state, create=True)
    (state / "dedupe").chmod(0o755)
    assert len(load_key(state, create=True)) == 32


def test_a_key_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a folder another owner needs root")
    state = tmp_path / "state"
    (state / "dedupe").mkdir(parents=True)
    os.chown(state / "dedupe", 65534, 65534)
    with pytest.raises(ActionLogError, match="is owned by user 65534, not by you"):
        load_key(state, create=True)
    assert not key_path(state).exists()
