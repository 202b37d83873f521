"""``--move DIR`` past folders another user planted below DIR: a folder on the way to the
target that someone else could swap for a link (theirs, when the folder it mirrors is not; or
writable by everyone without the sticky bit) is refused, and the file stays where it is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from isccd.dedupe.apply import Status
from isccd.dedupe.plan import Action
from tests.dedupe.conftest import plan_of, run_plan, write

DATA = b"root's file\n" * 100


def _tree(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """The root, the kept file, the copy to move, and the folder its target's folder mirrors."""
    root = tmp_path / "root"
    kept = write(root / "srv" / "app.conf", DATA, mtime=1_000_000)
    copy = write(root / "etc" / "app.conf", DATA, mtime=2_000_000)
    return root, kept, copy, copy.parent


@pytest.mark.parametrize("planted", ["another user's", "writable by all"])
def test_a_folder_another_user_could_swap_on_the_way_is_refused(
    tmp_path: Path, planted: str
) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: the planted folder belongs to another user")
    root, kept, copy, _ = _tree(tmp_path)
    attic = tmp_path / "attic"
    theirs = attic / str(root).lstrip("/") / "etc"  # where the copy's folder is mirrored
    theirs.mkdir(parents=True)
    if planted == "another user's":
        os.chown(theirs, 12345, 12345)
        why = "belongs to user 12345, neither the running user, root nor the owner"
    else:
        theirs.chmod(0o777)
        why = "is writable by everyone without the sticky bit"
    [outcome] = run_plan(plan_of(root, [[kept, copy]]), Action.MOVE, tmp_path / "log",
                         move_to=attic)  # fmt: skip
    assert outcome.status is Status.FAILED
    assert why in (outcome.reason or "") and "'etc' on the way to its target" in (
        outcome.reason or ""
    )
    assert copy.read_bytes() == DATA and list(theirs.iterdir()) == []
    # The sticky bit keeps the others from swapping what is not theirs: then it is moved.
    theirs.chmod(0o1777)
    os.chown(theirs, 0, 0)
    [outcome] = run_plan(plan_of(root, [[kept, copy]]), Action.MOVE, tmp_path / "log",
                         move_to=attic)  # fmt: skip
    assert outcome.status is Status.DONE and (theirs / "app.conf").read_bytes() == DATA
