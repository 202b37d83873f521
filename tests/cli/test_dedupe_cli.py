"""``isccd dedupe`` as users run it, on a store made by ``isccd scan``: the dry run, plan files,
``--apply``, the shell script, the arguments that do not go together, and ``--undo``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from isccd.cli.dedupe import found_groups
from isccd.cli.main import main
from isccd.cli.output import format_size
from isccd.model import UnitType
from isccd.results import DupesResult, DupGroup, DupKind, DupMember

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "docs" / "schema" / "plan.schema.json").read_text()
)


@pytest.fixture(autouse=True)
def _own_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default state directory (where the action-log key is kept): the test's own."""
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path / "default-state"))


@pytest.fixture
def state(library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """The library scanned into a store; the copies made older than their originals' copies."""
    os.utime(library / "docs" / "report.txt", (1_000_000, 1_000_000))
    os.utime(library / "big.bin", (1_000_000, 1_000_000))
    state = tmp_path / "state"
    assert main(["scan", "--state", str(state), "-j", "1", str(library)]) == 0
    capsys.readouterr()
    return state


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def inodes(root: Path) -> dict[str, int]:
    return {str(p): p.stat().st_ino for p in root.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_dry_run_says_what_would_be_done_and_does_nothing(
    library: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = inodes(library)
    status, out, _ = run(capsys, "dedupe", "--link", "--state", str(state))
    assert status == 0
    assert f"keep    {library}/big.bin" in out and f"link    {library}/big_copy.bin" in out
    assert f"keep    {library}/docs/report.txt" in out
    assert f"link    {library}/backup_report.txt" in out
    assert "dry run: would link 2 files in 2 of 2 groups" in out
    assert "shares the kept file's permissions, owner and times" in out
    assert inodes(library) == before


@pytest.mark.slow
def test_a_saved_plan_is_valid_and_applies(
    library: Path, state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run(capsys, "dedupe", "--link", "--state", str(state), "--json")
    document = json.loads(out)
    jsonschema.validate(document, SCHEMA)
    plan = tmp_path / "plan.json"
    plan.write_text(out)
    log = tmp_path / "log.jsonl"
    # The index says which roots are this host's; a plan acts on nothing else.
    status, out, err = run(capsys, "dedupe", "--link", "--plan", str(plan), "--apply",
                           "--log", str(log), "--state", str(state))  # fmt: skip
    assert status == 0, err
    assert f"action log: {log}" in err
    assert "linked 2 files in 2 of 2 groups" in out
    assert (library / "big.bin").stat().st_ino == (library / "big_copy.bin").stat().st_ino
    # The log's key is that of the state directory the run used.
    status, out, _ = run(capsys, "dedupe", "--undo", str(log), "--state", str(state))
    assert status == 0 and "2 undone, 0 cannot be undone" in out
    assert (library / "big.bin").stat().st_ino != (library / "big_copy.bin").stat().st_ino


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--link", "--near"], "--near only goes with --move"),
        (["--remove", "--near"], "--near only goes with --move"),
        (["--link", "--apply", "--script", "sh"], "choose one"),
        (["--link", "--plan", "p.json", "--keep", "newest"], "--keep does not apply"),
        (["--undo", "log", "--apply"], "--undo takes no --apply"),
        (["--link", "--keep", "biggest"], "not a keep rule"),
    ],
)
def test_arguments_that_do_not_go_together(
    state: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    status, _, err = run(capsys, "dedupe", *args, "--state", str(state))
    assert status == 2 and message in err


@pytest.mark.slow
def test_a_bad_plan_file_touches_nothing(
    library: Path, state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = run(capsys, "dedupe", "--remove", "--state", str(state), "--json")
    document: dict[str, Any] = json.loads(out)
    document["groups"][0]["members"][0]["keep"] = False  # no member kept
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(document))
    before = inodes(library)
    status, _, err = run(capsys, "dedupe", "--remove", "--plan", str(plan), "--apply")
    assert status == 2 and "not a valid plan" in err and "nothing was touched" in err
    assert inodes(library) == before


@pytest.mark.slow
def test_move_into_a_watched_root_is_refused(
    library: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run(capsys, "dedupe", "--move", str(library / "attic"), "--state",
                         str(state), "--apply")  # fmt: skip
    assert status == 2 and "inside the watched root" in err
    assert not (library / "attic").exists()


@pytest.mark.slow
def test_keep_in_and_min_size(
    library: Path, state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    on_disk = (library / "big.bin").stat().st_blocks * 512
    status, out, _ = run(capsys, "dedupe", "--remove", "--state", str(state), "--min-size",
                         "100K", "--keep-in", str(library / "big_copy.bin"), "--apply",
                         "--log", str(tmp_path / "log"))  # fmt: skip
    assert status == 0
    assert (library / "big_copy.bin").exists() and not (library / "big.bin").exists()
    assert (library / "backup_report.txt").exists()  # under --min-size: not in any group
    assert f"removed 1 files in 1 of 1 groups, freeing {format_size(on_disk)}" in out


@pytest.mark.slow
def test_near_duplicates_are_moved_with_their_path(
    library: Path, state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    attic = tmp_path / "attic"
    status, out, err = run(capsys, "dedupe", "--move", str(attic), "--near", "--state",
                           str(state), "--apply", "--json",
                           "--log", str(tmp_path / "log"))  # fmt: skip
    assert status == 0, err
    moved = {o["path"] for o in json.loads(out)["outcomes"] if o["status"] == "done"}
    assert str(library / "docs" / "draft.txt") in moved
    for path in moved:
        assert not Path(path).exists() and (attic / path.lstrip("/")).is_file()


@pytest.mark.slow
def test_the_shell_script_checks_before_each_action(
    library: Path, state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, script, _ = run(capsys, "dedupe", "--link", "--state", str(state), "--script", "sh")
    assert status == 0 and script.startswith("#!/bin/sh\n")
    (tmp_path / "dedupe.sh").write_text(script)
    victim = library / "backup_report.txt"
    victim.write_text(victim.read_text().upper())  # edited after the plan
    done = subprocess.run(["sh", str(tmp_path / "dedupe.sh")], capture_output=True, text=True,
                          check=False)  # fmt: skip
    assert done.returncode == 1
    assert f"skipped {victim}: changed since the plan" in done.stderr
    assert victim.read_text().isupper()
    assert (library / "big.bin").stat().st_ino == (library / "big_copy.bin").stat().st_ino
    assert not list(library.rglob(".isccd-dedupe-*"))


def test_files_of_other_hosts_are_never_in_a_plan() -> None:
    # A fleet's index: this host's copy, another host's copy at the same path, and another
    # host's copy elsewhere; nothing here can act on the other hosts' files.
    members = (
        DupMember(
            "/srv/a",
            "/srv",
            10,
            None,
            UnitType.INSTANCE,
            "ISCC:IAAZV3ZSNCAD3X7B",
            0,
            0,
            host="here",
        ),
        DupMember(
            "/srv/a",
            "/srv",
            10,
            None,
            UnitType.INSTANCE,
            "ISCC:IAAZV3ZSNCAD3X7B",
            0,
            0,
            host="there",
        ),
        DupMember(
            "/srv/b",
            "/srv",
            10,
            None,
            UnitType.INSTANCE,
            "ISCC:IAAZV3ZSNCAD3X7B",
            0,
            0,
            host="here",
        ),
    )
    result = DupesResult((DupGroup(DupKind.EXACT, UnitType.INSTANCE, 0, 20, members),))
    [group] = found_groups(result, host="here")
    assert [m.paths for m in group.members] == [("/srv/a",), ("/srv/b",)]
    assert found_groups(result, host="there") == []  # one file there: nothing to act on
