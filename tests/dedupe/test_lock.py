"""The tree lock: one run or undo per tree at a time, nested roots included, sibling roots
side by side, never waited for, and gone with the process that held it, however it ended."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from isccd.dedupe.lock import TreeLockedError, tree_lock


def _dirs(tmp_path: Path, *names: str) -> list[str]:
    out = []
    for name in names:
        (tmp_path / name).mkdir(parents=True, exist_ok=True)
        out.append(str(tmp_path / name))
    return out


def test_a_second_lock_on_the_same_root_is_refused_at_once(tmp_path: Path) -> None:
    [root] = _dirs(tmp_path, "root")
    with tree_lock([root]) as held:
        assert held.roots == (root,) and not held.unlocked
        refused = pytest.raises(TreeLockedError, match="another dedupe run or undo is acting on it")
        with refused, tree_lock([root]):
            pass
    with tree_lock([root]):  # released
        pass


@pytest.mark.parametrize(("first", "second"), [("a", "a/b"), ("a/b", "a")])
def test_nested_roots_exclude_each_other(tmp_path: Path, first: str, second: str) -> None:
    outer, inner = _dirs(tmp_path, "a", "a/b")
    paths = {"a": outer, "a/b": inner}
    with tree_lock([paths[first]]), pytest.raises(TreeLockedError), tree_lock([paths[second]]):
        pass


def test_sibling_roots_are_locked_side_by_side(tmp_path: Path) -> None:
    one, two = _dirs(tmp_path, "srv/a", "srv/b")
    with tree_lock([one]), tree_lock([two]) as held:
        assert held.roots == (two,)


def test_a_root_that_cannot_be_opened_is_said_not_locked(tmp_path: Path) -> None:
    missing = str(tmp_path / "gone")
    with tree_lock([missing]) as held:
        assert [path for path, _ in held.unlocked] == [missing]


def test_the_lock_goes_with_a_killed_process(tmp_path: Path) -> None:
    [root] = _dirs(tmp_path, "root")
    code = (
        "import sys\nfrom isccd.dedupe.lock import tree_lock\n"
        f"with tree_lock([{root!r}]):\n    print('held', flush=True)\n    sys.stdin.read()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(TreeLockedError), tree_lock([root]):
            pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(30)
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.stdout.close()
    with tree_lock([root]):
        pass
