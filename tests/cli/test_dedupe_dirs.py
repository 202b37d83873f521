"""``isccd dedupe --dirs`` on a store made by ``isccd scan``: exact duplicate folders acted on
whole, each file with its copy in the folder kept (the dry run, ``--remove --apply`` leaving
the emptied folders in place, ``--link``, undo putting every file back); a folder changed after
the plan (a file added, a file rewritten, the folder swapped for a symbolic link) left whole
and every byte of it kept; a crafted plan whose folder does not hold its files refused; the
arguments that do not go together."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from isccd.cli.main import main

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "docs" / "schema" / "plan.schema.json").read_text()
)
ALBUM = {"a.bin": 3000, "b.bin": 3100, "sub/c.bin": 3200, "sub/deep/d.bin": 3300}

#: Each test scans a tree and runs the command in-process.
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _own_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default state directory (where the action-log key is kept): the test's own."""
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path / "default-state"))


def make(base: Path, seed: int = 0) -> dict[str, bytes]:
    made = {}
    for name, size in ALBUM.items():
        data = bytes((seed + size + i * 7) % 251 for i in range(size))
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_bytes(data)
        made[name] = data
    return made


def tree(base: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()
    }


@pytest.fixture
def library(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    root = tmp_path / "lib"
    make(root / "photos")  # the shortest path: kept
    shutil.copytree(root / "photos", root / "backup-photos")
    make(root / "other", seed=1)
    state = tmp_path / "state"
    assert main(["scan", "--state", str(state), "-j", "1", str(root)]) == 0
    capsys.readouterr()
    return root, state


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_a_duplicate_folder_is_removed_whole_and_undo_brings_it_back(
    library: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root, state = library
    before = tree(root)
    status, out, _ = run(capsys, "dedupe", "--dirs", "--remove", "--state", str(state))
    assert status == 0 and tree(root) == before  # a dry run touches nothing
    assert f"folder {root}/backup-photos/: 4 files, each a copy of one in {root}/photos/" in out
    assert f"  remove  {root}/backup-photos/sub/deep/d.bin  = {root}/photos/sub/deep/d.bin" in out
    assert "dry run: would remove 4 files in 4 of 4 groups" in out
    status, out, err = run(capsys, "dedupe", "--dirs", "--remove", "--apply", "--state", str(state))
    assert status == 0, err
    assert "removed 4 files in 4 of 4 groups" in out
    assert f"emptied {root}/backup-photos/ (its folders are left in place, for undo)" in out
    assert [p.name for p in sorted((root / "backup-photos").rglob("*"))] == ["sub", "deep"]
    assert tree(root / "photos") == {k[len("photos/"):]: v for k, v in before.items()
                                     if k.startswith("photos/")}  # fmt: skip
    log = next((state / "dedupe").glob("*.jsonl"))
    status, out, err = run(capsys, "dedupe", "--undo", str(log), "--state", str(state))
    assert status == 0, err
    assert tree(root) == before


def test_link_keeps_the_folder_and_makes_each_file_a_link_of_its_copy(
    library: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root, state = library
    status, out, err = run(capsys, "dedupe", "--dirs", "--link", "--apply", "--state", str(state))
    assert status == 0, err
    for name in ALBUM:
        assert (root / "backup-photos" / name).stat().st_ino == (
            root / "photos" / name
        ).stat().st_ino
    assert "emptied " not in out


def test_keep_in_chooses_the_folder_kept(
    library: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root, state = library
    status, out, _ = run(capsys, "dedupe", "--dirs", "--remove", "--state", str(state),
                         "--keep-in", str(root / "backup-photos"))  # fmt: skip
    assert status == 0
    assert f"folder {root}/photos/: 4 files, each a copy of one in {root}/backup-photos/" in out


def _plan(capsys: pytest.CaptureFixture[str], state: Path, where: Path) -> Path:
    status, out, _ = run(capsys, "dedupe", "--dirs", "--remove", "--json", "--state", str(state))
    assert status == 0
    document = json.loads(out)
    jsonschema.validate(document, SCHEMA)
    assert {g["folder"]["path"] for g in document["groups"]} == {str(where / "backup-photos")}
    plan = where.parent / "plan.json"
    plan.write_text(out)
    plan.chmod(0o600)
    return plan


@pytest.mark.parametrize("change", ["added", "rewritten", "swapped", "emptied-dir-made"])
def test_a_folder_changed_after_the_plan_is_left_whole(
    library: tuple[Path, Path], capsys: pytest.CaptureFixture[str], change: str
) -> None:
    root, state = library
    plan = _plan(capsys, state, root)
    copy = root / "backup-photos"
    if change == "added":
        (copy / "sub" / "new.txt").write_text("a file the plan never saw\n")
    elif change == "rewritten":
        data = (copy / "a.bin").read_bytes()
        (copy / "a.bin").write_bytes(data)  # the same bytes, but written again
        os.utime(copy / "a.bin", ns=(1, 1))
    elif change == "swapped":
        # The folder replaced by a link to the folder kept: removing "its" files would remove
        # the only copies.
        copy.rename(root / "moved-away")
        copy.symlink_to(root / "photos")
    else:
        (copy / "sub" / "empty").mkdir()
    before = tree(root)
    status, out, err = run(capsys, "dedupe", "--remove", "--plan", str(plan), "--apply",
                           "--state", str(state))  # fmt: skip
    assert status == 0, err
    assert "removed 0 files" in out
    assert tree(root) == before
    if change == "swapped":
        assert tree(root / "photos") == tree(root / "moved-away")


def test_a_plan_whose_folder_does_not_hold_its_files_is_refused(
    library: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root, state = library
    plan = _plan(capsys, state, root)
    document: dict[str, Any] = json.loads(plan.read_text())
    before = tree(root)
    # A folder that does not hold the member acted on; the root itself (which holds the
    # member kept too); a path that is not normalized; a folder outside the root.
    crafted = [("path", str(root / "other"), "not inside the group's folder"),
               ("path", str(root), "the file kept is in the folder acted on"),
               ("path", f"{root}/backup-photos/../photos", "is not a normalized path"),
               ("path", str(root.parent), "is not inside its root")]  # fmt: skip
    for key, value, expected in crafted:
        bad = json.loads(json.dumps(document))
        bad["groups"][0]["folder"][key] = value
        plan.write_text(json.dumps(bad))
        status, _, err = run(capsys, "dedupe", "--remove", "--plan", str(plan), "--apply",
                             "--state", str(state))  # fmt: skip
        assert status == 2 and expected in err, err
        assert tree(root) == before
    # The file kept named inside the folder acted on.
    bad = json.loads(json.dumps(document))
    kept = next(m for m in bad["groups"][0]["members"] if m["keep"])
    kept["path"] = str(root / "backup-photos" / "elsewhere.bin")
    plan.write_text(json.dumps(bad))
    status, _, err = run(capsys, "dedupe", "--remove", "--plan", str(plan), "--apply",
                         "--state", str(state))  # fmt: skip
    assert status == 2 and "the file kept is in the folder acted on" in err, err
    assert tree(root) == before


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--near", "--move", "/tmp/x"), "--near does not apply"),
        (("--script", "sh"), "use --apply, not --script"),
        (("--min-size", "1K"), "--min-size and --type choose files"),
        (("--keep", "oldest"), "--keep oldest chooses files"),
    ],
)
def test_arguments_that_do_not_go_with_dirs(
    library: tuple[Path, Path], capsys: pytest.CaptureFixture[str], extra: tuple[str, ...],
    message: str,
) -> None:  # fmt: skip
    _, state = library
    action = () if "--move" in extra else ("--remove",)
    status, _, err = run(capsys, "dedupe", "--dirs", *action, *extra, "--state", str(state))
    assert status == 2 and message in err, err
