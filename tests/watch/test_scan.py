"""The reconcile walk on real directory trees: what is new, changed, unchanged or gone, and
every awkward thing a tree can hold (links, FIFOs, loops, odd names, deep paths, unreadable and
vanishing directories) handled and reported without raising.

Permission tests need an unprivileged process (root reads everything): when the suite runs as
root they run in a forked child that drops to ``nobody``.
"""

from __future__ import annotations

import os
import pickle
import shutil
import socket
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from isccd.model import FileStat
from isccd.walk import (
    DirScan,
    IssueReason,
    ItemKind,
    ScanItem,
    ScanOptions,
    Walker,
    compile_ignore,
)

T = TypeVar("T")
NOBODY = 65534


class FakeStore:
    """What the walker asks of the store: stored validators per directory."""

    def __init__(self) -> None:
        self.dirs: dict[str, dict[str, FileStat]] = {}

    def lookup(self, directory: str) -> dict[str, FileStat]:
        return dict(self.dirs.get(directory, {}))

    def remember(self, items: list[ScanItem]) -> None:
        for item in items:
            directory, name = item.path.rsplit("/", 1)
            if item.kind is ItemKind.VANISHED:
                self.dirs[directory].pop(name)
            else:
                self.dirs.setdefault(directory, {})[name] = item.stat


def walk(
    root: Path, store: FakeStore, options: ScanOptions | None = None
) -> tuple[Walker, list[DirScan]]:
    walker = Walker(str(root), store.lookup, options)
    return walker, list(walker)


def items(scans: list[DirScan]) -> dict[str, ItemKind]:
    return {i.path: i.kind for s in scans for i in s.items}


def rel(root: Path, found: dict[str, ItemKind]) -> dict[str, str]:
    return {p[len(str(root)) + 1 :]: k.value for p, k in found.items()}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "a.txt").write_text("a")
    (root / "sub" / "b.txt").write_text("b")
    (root / "sub" / "deeper" / "c.txt").write_text("c")
    return root


def test_a_second_walk_reports_only_what_changed(tree: Path) -> None:
    store = FakeStore()
    _, first = walk(tree, store)
    assert rel(tree, items(first)) == {
        "a.txt": "new",
        "sub/b.txt": "new",
        "sub/deeper/c.txt": "new",
    }
    store.remember([i for s in first for i in s.items])
    _, again = walk(tree, store)
    assert items(again) == {} and sum(s.unchanged for s in again) == 3
    (tree / "a.txt").write_text("changed, and longer")
    (tree / "sub" / "b.txt").unlink()
    (tree / "sub" / "new.txt").write_text("n")
    walker, third = walk(tree, store)
    assert rel(tree, items(third)) == {
        "a.txt": "changed",
        "sub/b.txt": "vanished",
        "sub/new.txt": "new",
    }
    assert sum(s.unchanged for s in third) == 1
    assert walker.visited == {str(tree), str(tree / "sub"), str(tree / "sub" / "deeper")}


def test_the_validators_are_the_files_stat(tree: Path) -> None:
    _, scans = walk(tree, FakeStore())
    [item] = [i for s in scans for i in s.items if i.path.endswith("a.txt")]
    assert item.stat == FileStat.from_os(os.lstat(tree / "a.txt"))


def test_a_vanished_directory_is_found_after_the_walk(tree: Path) -> None:
    store = FakeStore()
    _, first = walk(tree, store)
    store.remember([i for s in first for i in s.items])
    shutil.rmtree(tree / "sub")
    walker, _ = walk(tree, store)
    stored_dirs = sorted(store.dirs)
    assert walker.vanished_dirs(stored_dirs) == [str(tree / "sub"), str(tree / "sub" / "deeper")]


def test_links_fifos_and_sockets_are_skipped_and_never_followed_by_default(tree: Path) -> None:
    (tree / "link.txt").symlink_to(tree / "a.txt")
    (tree / "linkdir").symlink_to(tree / "sub")
    os.mkfifo(tree / "fifo")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tree / "sock"))
        walker, scans = walk(tree, FakeStore())
    assert rel(tree, items(scans)) == {
        "a.txt": "new",
        "sub/b.txt": "new",
        "sub/deeper/c.txt": "new",
    }
    assert sum(s.skipped for s in scans) == 4
    assert str(tree / "linkdir") not in walker.visited


def test_followed_links_index_the_target_and_loops_are_cut(tree: Path) -> None:
    (tree / "sub" / "link.txt").symlink_to(tree / "a.txt")
    (tree / "sub" / "deeper" / "back_to_root").symlink_to(tree)  # a loop
    (tree / "also_sub").symlink_to(tree / "sub")  # the same directory twice
    walker, scans = walk(tree, FakeStore(), ScanOptions(follow_symlinks=True))
    found = items(scans)
    link = next(i for s in scans for i in s.items if i.path.endswith("sub/link.txt"))
    assert link.stat.identity == FileStat.from_os((tree / "a.txt").stat()).identity
    loops = [i for s in scans for i in s.issues if i.reason is IssueReason.LOOP]
    assert len(loops) == 2
    # Each directory is walked once, under whichever name came first.
    assert len(walker.visited) == 3
    assert len([p for p in found if p.endswith("c.txt")]) == 1


def test_followed_links_that_leave_the_root_are_skipped(tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (tree / "out_dir").symlink_to(outside)
    (tree / "out_file").symlink_to(outside / "secret.txt")
    (tree / "up").symlink_to("../outside")
    (tree / "in_abs").symlink_to(tree / "a.txt")
    walker, scans = walk(tree, FakeStore(), ScanOptions(follow_symlinks=True))
    assert rel(tree, items(scans)) == {
        "a.txt": "new",
        "in_abs": "new",
        "sub/b.txt": "new",
        "sub/deeper/c.txt": "new",
    }
    assert not [p for p in walker.visited if "out" in p or "up" in p]
    assert sum(s.skipped for s in scans) == 3


@pytest.mark.parametrize("follow", [False, True])
def test_a_directory_swapped_for_a_link_mid_walk_is_not_walked(
    tree: Path, tmp_path: Path, follow: bool
) -> None:
    # "sub" is a directory when the root is listed, and a link to a directory outside by the
    # time the walk gets to it (the store's lookup runs in between): what is outside must not
    # be listed, and the files the store held in "sub" count as vanished.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    store = FakeStore()
    _, first = walk(tree, store)
    store.remember([i for s in first for i in s.items])

    def lookup(directory: str) -> dict[str, FileStat]:
        if directory == str(tree) and not (tree / "sub").is_symlink():
            (tree / "sub").rename(tree / "moved")
            (tree / "sub").symlink_to(outside)
        return store.lookup(directory)

    walker = Walker(str(tree), lookup, ScanOptions(follow_symlinks=follow))
    scans = list(walker)
    assert items(scans) == {}  # secret.txt would be new
    assert walker.vanished_dirs(sorted(store.dirs)) == [
        str(tree / "sub"),
        str(tree / "sub" / "deeper"),
    ]
    assert all(not s.issues for s in scans)


def test_ignore_patterns_are_gitignore_style_and_ignored_dirs_are_not_entered(
    tmp_path: Path,
) -> None:
    root = tmp_path / "r"
    for path in [
        "a.tmp",
        "keep.tmp",
        "top.txt",
        "x/top.txt",
        "build/out.o",
        "x/build/o",
        "y/z.log",
    ]:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("-")
    options = ScanOptions(ignore=("*.tmp", "!keep.tmp", "/top.txt", "build/", "y/*.log"))
    walker, scans = walk(root, FakeStore(), options)
    assert sorted(rel(root, items(scans))) == ["keep.tmp", "x/top.txt"]
    assert (
        str(root / "build") not in walker.visited
        and str(root / "x" / "build") not in walker.visited
    )
    with pytest.raises(ValueError, match="invalid ignore pattern"):
        compile_ignore(["[z-a]"])


def test_a_file_replaced_by_a_directory(tree: Path) -> None:
    store = FakeStore()
    _, first = walk(tree, store)
    store.remember([i for s in first for i in s.items])
    (tree / "a.txt").unlink()
    (tree / "a.txt").mkdir()
    (tree / "a.txt" / "inner").write_text("i")
    _, scans = walk(tree, store)
    assert rel(tree, items(scans)) == {"a.txt": "vanished", "a.txt/inner": "new"}


def test_names_that_are_not_utf8_round_trip(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    raw = os.fsencode(root) + b"/caf\xe9 \xff.txt"
    with open(raw, "wb") as f:  # noqa: PTH123 -- a bytes path on purpose
        f.write(b"x")
    _, scans = walk(root, FakeStore())
    [item] = [i for s in scans for i in s.items]
    assert os.fsencode(item.path) == raw
    assert item.stat == FileStat.from_os(os.lstat(raw))


def _deep_tree(root: Path, levels: int) -> str:
    """Directories nested beyond PATH_MAX (4096 bytes), made relative to open descriptors."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    path = str(root)
    try:
        for level in range(levels):
            name = f"{level:03d}" + "d" * 200
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
            path += "/" + name
            leaf = os.open("f.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
            os.close(leaf)
    finally:
        os.close(fd)
    return path


def _remove_deep(root: Path) -> None:
    def remove(fd: int) -> None:
        for entry in os.scandir(fd):
            if entry.is_dir(follow_symlinks=False):
                child = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                try:
                    remove(child)
                finally:
                    os.close(child)
                os.rmdir(entry.name, dir_fd=fd)
            else:
                os.unlink(entry.name, dir_fd=fd)

    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        remove(fd)
    finally:
        os.close(fd)


def test_paths_longer_than_the_kernel_accepts_are_reported_not_fatal(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    deepest = _deep_tree(root, 25)  # about 5,000 bytes
    try:
        walker, scans = walk(root, FakeStore())
        found = [p for p in items(scans) if p.endswith("f.txt")]
        assert found and all(len(os.fsencode(p)) < 4096 for p in found)
        [issue] = [i for s in scans for i in s.issues]
        assert issue.reason is IssueReason.TOO_LONG
        assert not walker.is_known(deepest + "/f.txt")
        assert walker.is_known(found[0])
    finally:
        _remove_deep(root)


def test_a_directory_vanishing_mid_walk_is_not_an_error(tree: Path) -> None:
    store = FakeStore()
    _, first = walk(tree, store)
    store.remember([i for s in first for i in s.items])
    walker = Walker(str(tree), store.lookup)
    scans = []
    for scanned in walker:
        scans.append(scanned)
        if scanned.path == str(tree):
            shutil.rmtree(tree / "sub")  # listed in its parent, gone before it is read
    assert all(not s.issues for s in scans)
    assert walker.vanished_dirs(sorted(store.dirs)) == [
        str(tree / "sub"),
        str(tree / "sub" / "deeper"),
    ]


def test_start_must_be_inside_the_root(tree: Path) -> None:
    with pytest.raises(ValueError, match="not inside the root"):
        Walker(str(tree / "sub"), FakeStore().lookup, start=str(tree))
    walker = Walker(str(tree), FakeStore().lookup, start=str(tree / "sub"))
    assert sorted(rel(tree, items(list(walker)))) == ["sub/b.txt", "sub/deeper/c.txt"]


# -- permissions: an unprivileged process -------------------------------------------------------


def unprivileged(fn: Callable[[], T]) -> T:
    """Run ``fn`` as a process that permissions apply to (a forked child as nobody if root)."""
    if os.geteuid() != 0:
        return fn()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop privileges, run, send the pickled outcome, exit at once
        status = 0
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            outcome: Any = ("ok", fn())
        except BaseException as exc:
            outcome = ("error", repr(exc))
            status = 1
        with os.fdopen(write, "wb") as out:
            pickle.dump(outcome, out)
        os._exit(status)
    os.close(write)
    with os.fdopen(read, "rb") as inp:
        data = inp.read()
    os.waitpid(pid, 0)
    kind, value = pickle.loads(data)
    if kind == "error":
        raise AssertionError(f"the unprivileged child failed: {value}")
    return value  # type: ignore[no-any-return]


@pytest.fixture
def shared_tree() -> Iterator[Path]:
    """A tree under /tmp that an unprivileged child may read, and owns."""
    top = Path(tempfile.mkdtemp(prefix="isccd-scan-", dir="/tmp"))
    root = top / "root"
    (root / "open").mkdir(parents=True)
    (root / "closed").mkdir()
    (root / "open" / "a.txt").write_text("a")
    (root / "closed" / "secret.txt").write_text("s")
    top.chmod(0o755)
    if os.geteuid() == 0:
        for path in [top, *top.rglob("*")]:
            os.chown(path, NOBODY, NOBODY)
    try:
        yield root
    finally:
        for path in [top, *top.rglob("*")]:
            if path.is_dir():
                path.chmod(0o755)
        shutil.rmtree(top)


def _stored_tree(root: Path) -> FakeStore:
    store = FakeStore()
    _, scans = walk(root, store)
    store.remember([i for s in scans for i in s.items])
    return store


def test_an_unreadable_directory_is_reported_and_its_files_are_kept(shared_tree: Path) -> None:
    store = _stored_tree(shared_tree)
    (shared_tree / "closed").chmod(0)

    def scan() -> tuple[dict[str, str], list[tuple[str, str]], list[str], bool]:
        walker, scans = walk(shared_tree, store)
        issues = [(i.path, i.reason.value) for s in scans for i in s.issues]
        secret = str(shared_tree / "closed" / "secret.txt")
        vanished = walker.vanished_dirs(sorted(store.dirs))
        return rel(shared_tree, items(scans)), issues, vanished, walker.is_known(secret)

    found, issues, vanished, known = unprivileged(scan)
    assert found == {}  # nothing vanished: the unreadable directory's file is kept
    assert issues == [(str(shared_tree / "closed"), "unreadable")]
    assert vanished == [] and known is False


def test_permissions_changing_mid_walk_are_reported(shared_tree: Path) -> None:
    store = _stored_tree(shared_tree)

    def scan() -> list[tuple[str, str]]:
        walker = Walker(str(shared_tree), store.lookup)
        issues = []
        for scanned in walker:
            if scanned.path == str(shared_tree):
                for name in ("open", "closed"):
                    (shared_tree / name).chmod(0)  # listed already, unreadable from now on
            issues += [(i.path, i.reason.value) for i in scanned.issues]
            assert not [i for i in scanned.items if i.kind is ItemKind.VANISHED]
        return sorted(issues)

    assert unprivileged(scan) == [
        (str(shared_tree / "closed"), "unreadable"),
        (str(shared_tree / "open"), "unreadable"),
    ]


def test_an_unstatable_entry_is_kept_not_vanished(shared_tree: Path) -> None:
    store = _stored_tree(shared_tree)
    # Readable but not searchable: names can be listed, their stat fails.
    (shared_tree / "open").chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)

    def scan() -> tuple[dict[str, str], list[str]]:
        _, scans = walk(shared_tree, store)
        return rel(shared_tree, items(scans)), [i.reason.value for s in scans for i in s.issues]

    found, reasons = unprivileged(scan)
    assert found == {} and reasons == ["unreadable"]


def test_a_missing_root_keeps_everything_a_missing_subtree_does_not(tree: Path) -> None:
    store = _stored_tree(tree)
    shutil.rmtree(tree)
    walker, scans = walk(tree, store)
    assert [(i.path, i.reason) for s in scans for i in s.issues] == [
        (str(tree), IssueReason.MISSING)
    ]
    assert (
        walker.vanished_dirs(sorted(store.dirs)) == []
    )  # an unmounted disk must not erase the index
    sub = Walker(str(tree), store.lookup, start=str(tree / "sub"))
    assert list(sub) == []
    assert sub.vanished_dirs(sorted(store.dirs)) == [
        str(tree / "sub"),
        str(tree / "sub" / "deeper"),
    ]
