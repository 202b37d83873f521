"""Opening beneath a root: the same answers from openat2(2) and from the component walk that
stands in for it where the kernel (or a seccomp filter) refuses the call."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd import beneath
from isccd.beneath import RootDir

#: Both ways of resolving: the kernel's (where this kernel has it) and the walk.
WAYS = [
    pytest.param(True, id="openat2"),
    pytest.param(False, id="walk"),
]


@pytest.fixture(scope="module")
def tree() -> Iterator[Path]:
    """A root with links that stay in it and links that leave it."""
    base = Path(tempfile.mkdtemp(prefix="isccd-beneath-", dir="/tmp")).resolve()
    root = base / "root"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "a.txt").write_text("a")
    (root / "sub" / "b.txt").write_text("b")
    (root / "sub" / "deeper" / "c.txt").write_text("c")
    (base / "outside").mkdir()
    (base / "outside" / "secret.txt").write_text("secret")
    (root / "link_in").symlink_to("sub")  # relative, stays inside
    (root / "link_abs_in").symlink_to(root / "sub")  # absolute, stays inside
    (root / "link_file").symlink_to("a.txt")
    (root / "link_out").symlink_to(base / "outside")
    (root / "link_up").symlink_to("../outside")
    (root / "sub" / "link_back").symlink_to("../a.txt")
    (root / "loop").symlink_to("loop")
    (root / "link_root").symlink_to(".")
    try:
        yield root
    finally:
        shutil.rmtree(base)


def _open(root: Path, rel: str, *, follow: bool, kernel: bool, flags: int = os.O_RDONLY) -> str:
    """What opening ``rel`` reads (a file's text, ``dir`` or ``link``), or the errno's name."""
    with RootDir(str(root), follow_symlinks=follow, kernel=kernel) as top:
        try:
            fd = top.open(f"{root}/{rel}" if rel else str(root), flags)
        except OSError as exc:
            return errno.errorcode[exc.errno or 0]
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            return "dir"
        if stat.S_ISLNK(mode):
            return "link"
        return os.pread(fd, 100, 0).decode()
    finally:
        os.close(fd)


@pytest.mark.parametrize("kernel", WAYS)
@pytest.mark.parametrize(
    ("rel", "strict", "followed"),
    [
        ("a.txt", "a", "a"),
        ("sub/b.txt", "b", "b"),
        ("", "dir", "dir"),
        ("sub", "dir", "dir"),
        ("sub/../a.txt", "a", "a"),
        ("missing/x", "ENOENT", "ENOENT"),
        ("a.txt/x", "ENOTDIR", "ENOTDIR"),
        # Links on the way or at the end: refused, or followed while they stay beneath.
        ("link_in/b.txt", "ELOOP", "b"),
        ("link_abs_in/b.txt", "ELOOP", "b"),
        ("link_file", "ELOOP", "a"),
        ("sub/link_back", "ELOOP", "a"),
        ("link_root/a.txt", "ELOOP", "a"),
        ("link_out/secret.txt", "ELOOP", "EXDEV"),
        ("link_up/secret.txt", "ELOOP", "EXDEV"),
        ("link_out", "ELOOP", "EXDEV"),
        ("loop", "ELOOP", "ELOOP"),
        # Out of the root by name.
        ("../outside/secret.txt", "EXDEV", "EXDEV"),
        ("sub/../../outside/secret.txt", "EXDEV", "EXDEV"),
    ],
)
def test_paths_open_beneath_the_root_only(
    tree: Path, kernel: bool, rel: str, strict: str, followed: str
) -> None:
    assert _open(tree, rel, follow=False, kernel=kernel) == strict
    assert _open(tree, rel, follow=True, kernel=kernel) == followed


@pytest.mark.parametrize("kernel", WAYS)
def test_nofollow_at_the_end_opens_the_link_itself_or_refuses(tree: Path, kernel: bool) -> None:
    for follow in (False, True):
        path_only = os.O_PATH | os.O_NOFOLLOW
        assert _open(tree, "link_file", follow=follow, kernel=kernel, flags=path_only) == "link"
        assert _open(tree, "link_file", follow=follow, kernel=kernel, flags=os.O_NOFOLLOW) == (
            "ELOOP"
        )


@pytest.mark.parametrize("kernel", WAYS)
def test_stat_is_an_lstat_beneath_the_root(tree: Path, kernel: bool) -> None:
    with RootDir(str(tree), kernel=kernel) as top:
        assert stat.S_ISLNK(top.stat(f"{tree}/link_out").st_mode)
        assert top.stat(f"{tree}/sub/b.txt").st_ino == os.lstat(tree / "sub" / "b.txt").st_ino
        with pytest.raises(OSError, match="Too many levels") as info:
            top.stat(f"{tree}/link_out/secret.txt")
        assert info.value.errno == errno.ELOOP
        assert info.value.filename == f"{tree}/link_out/secret.txt"


@pytest.mark.parametrize("kernel", WAYS)
def test_a_path_not_under_the_root_by_name_is_refused_unseen(tree: Path, kernel: bool) -> None:
    with RootDir(str(tree), kernel=kernel) as top:
        for path in ("/etc/passwd", f"{tree}-sibling/x", str(tree.parent)):
            with pytest.raises(OSError) as info:
                top.open(path, os.O_RDONLY)
            assert info.value.errno == errno.EXDEV


@pytest.mark.parametrize("kernel", WAYS)
def test_a_root_reached_through_a_link_is_refused(tmp_path: Path, kernel: bool) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "via").symlink_to("real")
    with pytest.raises(OSError) as info:
        RootDir(str(tmp_path / "via"), kernel=kernel)
    assert info.value.errno == errno.ELOOP
    with pytest.raises(OSError) as info:
        RootDir(str(tmp_path / "via" / "x"), kernel=kernel)
    assert info.value.errno == errno.ELOOP
    with pytest.raises(FileNotFoundError):
        RootDir(str(tmp_path / "missing"), kernel=kernel)


@pytest.mark.parametrize("kernel", WAYS)
def test_a_directory_swapped_for_a_link_is_not_followed(tmp_path: Path, kernel: bool) -> None:
    # What the daemon's workers face: a name checked while "race" was a directory, opened
    # after it became a link to a directory outside the root.
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "race").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret").write_text("secret")
    (root / "race" / "secret").write_text("inside")
    assert _open(root, "race/secret", follow=False, kernel=kernel) == "inside"
    (root / "race").rename(root / "moved")
    (root / "race").symlink_to(outside)
    assert _open(root, "race/secret", follow=False, kernel=kernel) == "ELOOP"
    assert _open(root, "race/secret", follow=True, kernel=kernel) == "EXDEV"


@pytest.mark.parametrize("kernel", WAYS)
def test_a_path_holding_a_nul_is_refused_not_cut_short(tree: Path, kernel: bool) -> None:
    # Passed on as a C string, "a.txt\0junk" would name a.txt.
    with RootDir(str(tree), kernel=kernel) as top:
        for path in (f"{tree}/a.txt\0junk", f"{tree}/sub\0/b.txt"):
            with pytest.raises(OSError) as info:
                top.open(path, os.O_RDONLY)
            assert info.value.errno == errno.EINVAL
            assert info.value.filename == path


def test_paths_longer_than_a_path_name_are_refused(tmp_path: Path) -> None:
    with RootDir(str(tmp_path)) as top, pytest.raises(OSError) as info:
        top.open(f"{tmp_path}/{'x/' * 2100}f", os.O_RDONLY)
    assert info.value.errno == errno.ENAMETOOLONG


def test_the_walk_stands_in_when_openat2_is_refused(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As under a seccomp filter that answers ENOSYS or EPERM: the probe says no, and every
    # RootDir walks.
    assert beneath.openat2_available()  # this kernel (6.x) has it
    monkeypatch.setattr(beneath, "openat2_available", lambda: False)
    assert _open(tree, "link_out/secret.txt", follow=False, kernel=True) == "ELOOP"
    assert _open(tree, "link_in/b.txt", follow=True, kernel=True) == "b"


WORDS = ["a.txt", "sub", "deeper", "b.txt", "c.txt", "..", ".", "link_in", "link_abs_in"]
WORDS += ["link_file", "link_out", "link_up", "link_back", "loop", "link_root", "missing"]


@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6), st.booleans())
def test_the_walk_answers_as_the_kernel_does(tree: Path, words: list[str], follow: bool) -> None:
    rel = "/".join(words)
    kernel = _open(tree, rel, follow=follow, kernel=True)
    walked = _open(tree, rel, follow=follow, kernel=False)
    assert walked == kernel, rel
