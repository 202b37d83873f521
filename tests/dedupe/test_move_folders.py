"""``--move DIR``: the folders made below DIR are as the folders they mirror, with their owner
and mode, never the running user's umask default (which would open a private folder's files to
everyone, or hand a user's folder to root)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from isccd.dedupe.apply import Status
from isccd.dedupe.plan import Action
from tests.dedupe.conftest import plan_of, run_plan, write

DATA = b"a user's private notes\n" * 100


def _mode_owner(path: Path) -> tuple[int, int, int]:
    st = path.lstat()
    return stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid


def test_the_folders_made_below_the_move_folder_copy_the_owner_and_mode_they_mirror(
    tmp_path: Path,
) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: the folders belong to another user")
    root = tmp_path / "root"
    home = root / "home" / "alice"
    kept = write(root / "srv" / "notes.txt", DATA, mtime=1_000_000)
    copies = [write(home / "private" / n, DATA, mtime=2_000_000) for n in ("a.txt", "b.txt")]
    for folder, mode in ((home, 0o750), (home / "private", 0o700)):
        os.chown(folder, 12345, 12346)
        folder.chmod(mode)
    (root / "home").chmod(0o711)
    attic = tmp_path / "attic"
    outcomes = run_plan(plan_of(root, [[kept, *copies]]), Action.MOVE, tmp_path / "log",
                        move_to=attic)  # fmt: skip
    assert [o.status for o in outcomes] == [Status.DONE, Status.DONE]  # one folder, two files
    mirror = attic / str(root).lstrip("/")
    for folder in (root / "home", home, home / "private"):
        made = mirror / folder.relative_to(root)
        assert _mode_owner(made) == _mode_owner(folder), made
    assert sorted(p.name for p in (mirror / "home" / "alice" / "private").iterdir()) == [
        "a.txt",
        "b.txt",
    ]
    # Up to the move folder: each folder made is as the one it mirrors (/tmp: 1777, root's).
    for made, folder in zip(mirror.parents, root.parents, strict=False):
        if made == attic:
            break
        assert _mode_owner(made) == _mode_owner(folder), made
