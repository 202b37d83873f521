"""``isccd dedupe --apply`` raced by a second run with the opposite plan, by an undo, and by a
writer of the kept file, each with the run held at a known moment (:mod:`tests.chaos.dedupe_race`):
no byte is ever lost, and the run that cannot act says why."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.chaos.dedupe_race import (
    DEADLINE,
    env_for,
    held_run,
    isccd,
    keeping,
    release,
    remove_race,
    rewrite_race,
    save,
)
from tests.dedupe.conftest import plan_of, write


@pytest.mark.slow
def test_two_remove_runs_with_opposite_plans_never_delete_both_copies(tmp_path: Path) -> None:
    result = remove_race(tmp_path)
    assert result.lost == 0 and result.copies >= 1
    # The second run was kept off the tree while the first acted on it, and said so.
    assert result.second == 1 and "another dedupe run or undo is acting on" in result.second_said
    assert result.first == 0


@pytest.mark.slow
@pytest.mark.parametrize("action", ["--link", "--remove"])
def test_a_kept_file_rewritten_mid_run_is_never_what_the_copy_becomes(
    tmp_path: Path, action: str
) -> None:
    result = rewrite_race(tmp_path, action)
    assert result.lost == 0
    assert result.copies == 1  # the copy keeps its own bytes
    assert result.first == 1  # and the step is reported skipped


@pytest.mark.slow
def test_an_undo_is_kept_off_a_tree_a_run_is_acting_on(tmp_path: Path) -> None:
    root = tmp_path / "root"
    done = [write(root / "old" / f"{c}.bin", b"undo me" * 100, mtime=1_000_000) for c in "ab"]
    first_log = tmp_path / "first.jsonl"
    plan = save(plan_of(root, [done]), tmp_path / "first.json")
    subprocess.run(
        isccd("dedupe", "--link", "--plan", str(plan), "--apply", "--log", str(first_log)),
        check=True, capture_output=True, timeout=DEADLINE, env=env_for(root),
    )  # fmt: skip
    assert done[0].stat().st_ino == done[1].stat().st_ino
    pairs = [
        [write(root / f"d{g}" / f"{c}.bin", bytes([g]) * 5000) for c in "ab"] for g in range(2)
    ]
    plan = save(keeping(plan_of(root, pairs), 0, pairs[0][0]), tmp_path / "second.json")
    with held_run(
        ["--link", "--plan", str(plan)], tmp_path / "second.jsonl", env_for(root)
    ) as held:
        undo = subprocess.run(
            isccd("dedupe", "--undo", str(first_log), "--json"),
            capture_output=True, text=True, check=False, timeout=DEADLINE, env=env_for(root),
        )  # fmt: skip
        assert undo.returncode == 1 and "another dedupe run or undo" in undo.stderr
        assert done[0].stat().st_ino == done[1].stat().st_ino  # the undo touched nothing
        status, _ = release(held)
    assert status == 0
    undo = subprocess.run(
        isccd("dedupe", "--undo", str(first_log), "--json"),
        capture_output=True, text=True, check=False, timeout=DEADLINE, env=env_for(root),
    )  # fmt: skip
    assert undo.returncode == 0, undo.stderr
    assert {o["status"] for o in json.loads(undo.stdout)["outcomes"]} == {"undone"}
