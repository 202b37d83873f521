"""Opening files safely: only regular files are opened, and changes while reading are caught."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd import beneath
from isccd.errors import (
    FileAccessError,
    FileUnstableError,
    FileVanishedError,
    NotRegularFileError,
)
from isccd.extract.source import RootDirs, open_source, read_limited


def test_stream_delivers_the_whole_file_in_bounded_pieces(tmp_path: Path) -> None:
    data = os.urandom(100_003)
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    pieces: list[bytes] = []
    with open_source(str(path)) as src:
        assert src.head() == data[:4096]
        total = src.stream(lambda view: pieces.append(bytes(view)), bufsize=4096)
        src.check_unchanged()
    assert total == len(data)
    assert b"".join(pieces) == data
    assert max(len(p) for p in pieces) <= 4096


@given(st.binary(max_size=3000), st.integers(1, 700))
def test_stream_is_exact_for_any_size_and_buffer(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, bufsize: int
) -> None:
    path = tmp_path_factory.mktemp("s") / "f"
    path.write_bytes(data)
    out = bytearray()
    with open_source(str(path)) as src:
        assert src.stream(out.extend, bufsize=bufsize) == len(data)
    assert out == data


def test_fifo_is_refused_without_opening(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # Opening a FIFO for reading would block until a writer appears: the test would hang.
    with pytest.raises(NotRegularFileError, match="FIFO"):
        open_source(str(fifo))


def test_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        with pytest.raises(NotRegularFileError, match="socket"):
            open_source(str(path))


@pytest.mark.parametrize("device", ["/dev/null", "/dev/zero"])
def test_devices_are_refused(device: str, tmp_path: Path) -> None:
    with pytest.raises(NotRegularFileError, match="character device"):
        open_source(device)
    link = tmp_path / "link"
    link.symlink_to(device)
    with pytest.raises(NotRegularFileError, match="symbolic link"):
        open_source(str(link))


def test_symbolic_links_and_loops_are_not_followed(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(NotRegularFileError, match="symbolic link"):
        open_source(str(tmp_path / "a"))
    target = tmp_path / "real.txt"
    target.write_text("x")
    (tmp_path / "to-real").symlink_to(target)
    with pytest.raises(NotRegularFileError, match="symbolic link"):
        open_source(str(tmp_path / "to-real"))
    with pytest.raises(NotRegularFileError, match="directory"):
        open_source(str(tmp_path))


def test_missing_file_is_vanished(tmp_path: Path) -> None:
    with pytest.raises(FileVanishedError):
        open_source(str(tmp_path / "nope"))


def test_file_changed_while_read_is_unstable(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 50_000)
    with open_source(str(path)) as src:

        def shrink_after_first_piece(view: memoryview) -> None:
            if path.stat().st_size == 50_000:
                os.truncate(path, 10_000)

        src.stream(shrink_after_first_piece, bufsize=8192)
        with pytest.raises(FileUnstableError, match="changed while it was read"):
            src.check_unchanged()


@pytest.mark.parametrize("beneath", [False, True])
def test_file_written_in_place_while_read_is_unstable(tmp_path: Path, beneath: bool) -> None:
    # Same inode, same size: only the times say so, as the path's lookup sees them after reading.
    path = tmp_path / "f.txt"
    path.write_bytes(b"x" * 3000)
    with open_source(str(path), root=str(tmp_path) if beneath else None) as src:
        assert src.head() == b"x" * 3000
        before = src.stat.st_mtime_ns
        with path.open("r+b") as f:
            f.write(b"y")
        os.utime(path, ns=(before + 1_000_000_000, before + 1_000_000_000))
        with pytest.raises(FileUnstableError, match="changed while it was read"):
            src.check_unchanged()


def test_file_removed_while_read_is_vanished(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 50_000)
    with open_source(str(path)) as src:
        src.stream(lambda view: path.unlink(missing_ok=True), bufsize=8192)
        with pytest.raises(FileVanishedError):
            src.check_unchanged()


def test_file_replaced_while_read_is_unstable(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"old" * 1000)
    newer = tmp_path / "new.bin"
    newer.write_bytes(b"new" * 1000)
    with open_source(str(path)) as src:
        newer.rename(path)  # an editor's atomic save
        with pytest.raises(FileUnstableError, match="replaced"):
            src.check_unchanged()


def test_unreadable_file_is_an_access_error(tmp_path: Path) -> None:
    path = tmp_path / "secret.txt"
    path.write_text("secret")
    path.chmod(0o000)
    if os.geteuid() != 0:
        with pytest.raises(FileAccessError, match="permission denied"):
            open_source(str(path))
        return
    # Root reads anything: check as an unprivileged user in a child process, in a directory
    # that user may enter (pytest's own temporary root is private).
    with tempfile.TemporaryDirectory() as shared:
        Path(shared).chmod(0o755)
        secret = Path(shared) / "secret.txt"
        secret.write_text("secret")
        secret.chmod(0o600)
        code = (
            "import os, sys\n"
            "from isccd.extract.source import open_source\n"
            "from isccd.errors import FileAccessError\n"
            "os.setgid(65534); os.setuid(65534)\n"
            "try:\n"
            "    open_source(sys.argv[1])\n"
            "except FileAccessError as exc:\n"
            "    print('refused:', exc.reason)\n"
        )
        result = subprocess.run(
            [sys.executable, "-c", code, str(secret)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.stdout.strip() == "refused: permission denied", result.stderr


# -- beneath a root ------------------------------------------------------------------------------


@pytest.fixture(params=[True, False], ids=["openat2", "walk"])
def kernel(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Both ways of opening beneath a root: openat2(2), and the walk where it is refused."""
    if not request.param:
        monkeypatch.setattr(beneath, "openat2_available", lambda: False)
    return bool(request.param)


def _race_tree(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "race").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret").write_text("secret")
    (root / "race" / "secret").write_text("inside")
    return root, outside


@pytest.mark.usefixtures("kernel")
def test_a_file_of_a_root_is_opened_beneath_it(tmp_path: Path) -> None:
    root, outside = _race_tree(tmp_path)
    with open_source(f"{root}/race/secret", root=str(root)) as src:
        assert src.head() == b"inside"
        src.check_unchanged()
    # The directory becomes a link to the outside: the same name now leads nowhere.
    (root / "race").rename(root / "moved")
    (root / "race").symlink_to(outside)
    with pytest.raises(NotRegularFileError, match="symbolic link on its path"):
        open_source(f"{root}/race/secret", root=str(root))
    with pytest.raises(NotRegularFileError, match="outside its root"):
        open_source(f"{root}/race/secret", root=str(root), follow_symlinks=True)
    with pytest.raises(NotRegularFileError, match="outside its root"):
        open_source(str(outside / "secret"), root=str(root))
    # A user naming the path on the command line is only guarded at its last component.
    with open_source(f"{root}/race/secret") as src:
        assert src.head() == b"secret"


@pytest.mark.usefixtures("kernel")
def test_links_that_stay_beneath_the_root_are_followed_when_asked(tmp_path: Path) -> None:
    root, _ = _race_tree(tmp_path)
    (root / "alias").symlink_to("race")
    (root / "abs.txt").symlink_to(root / "race" / "secret")
    for path in (f"{root}/alias/secret", f"{root}/abs.txt"):
        with pytest.raises(NotRegularFileError):
            open_source(path, root=str(root))
        with open_source(path, root=str(root), follow_symlinks=True) as src:
            assert src.head() == b"inside"
            src.check_unchanged()


@pytest.mark.usefixtures("kernel")
def test_a_directory_swapped_for_a_link_while_read_is_caught(tmp_path: Path) -> None:
    root, outside = _race_tree(tmp_path)
    (outside / "secret").write_text("inside")  # same size and content: only the inode differs
    with open_source(f"{root}/race/secret", root=str(root)) as src:
        (root / "race").rename(root / "moved")
        (root / "race").symlink_to(outside)
        with pytest.raises(FileUnstableError):
            src.check_unchanged()


def test_a_missing_root_makes_the_file_vanished(tmp_path: Path) -> None:
    with pytest.raises(FileVanishedError, match="root is gone"):
        open_source(str(tmp_path / "gone" / "f"), root=str(tmp_path / "gone"))


def _replace_root(root: Path, text: str) -> None:
    """Move the root away and put another directory in its place, its race/secret holding
    ``text`` (the same size as before: only the directory's and the file's inodes differ)."""
    root.rename(root.with_name("old-root"))
    (root / "race").mkdir(parents=True)
    (root / "race" / "secret").write_text(text)


@pytest.mark.usefixtures("kernel")
def test_a_root_replaced_while_a_file_is_read_is_caught(tmp_path: Path) -> None:
    root, _ = _race_tree(tmp_path)
    with open_source(f"{root}/race/secret", root=str(root)) as src:
        _replace_root(root, "INSIDE")
        with pytest.raises(FileUnstableError, match="root was moved or replaced"):
            src.check_unchanged()


@pytest.mark.usefixtures("kernel")
def test_a_root_shared_by_a_run_of_files_is_opened_once_and_checked_for_each(
    tmp_path: Path,
) -> None:
    root, _ = _race_tree(tmp_path)
    (root / "race" / "other").write_text("other")
    path = f"{root}/race/secret"
    with RootDirs() as roots:
        for name in ("secret", "other", "secret"):
            with open_source(f"{root}/race/{name}", root=str(root), roots=roots) as src:
                src.check_unchanged()
        held = roots.get(str(root), False, path)
        assert roots.get(str(root), False, path) is held
        # The root is replaced between two files of the run: the next file is opened beneath
        # the directory held (no longer the root), and the check after reading says so.
        _replace_root(root, "INSIDE")
        with open_source(path, root=str(root), roots=roots) as src:
            assert src.head() == b"inside"
            with pytest.raises(FileUnstableError, match="root was moved or replaced"):
                src.check_unchanged()
    assert held.fd == -1  # closed with the run
    # The next run opens the root that is there now.
    with RootDirs() as roots, open_source(path, root=str(root), roots=roots) as src:
        assert src.head() == b"INSIDE"
        src.check_unchanged()


def test_a_root_a_run_cannot_open_is_tried_again_for_the_next_file(tmp_path: Path) -> None:
    root = tmp_path / "late"
    with RootDirs() as roots:
        with pytest.raises(FileVanishedError, match="root is gone"):
            open_source(f"{root}/f", root=str(root), roots=roots)
        root.mkdir()
        (root / "f").write_text("here")
        with open_source(f"{root}/f", root=str(root), roots=roots) as src:
            assert src.head() == b"here"


@pytest.mark.usefixtures("kernel")
def test_a_run_follows_links_beneath_a_root_only_as_each_file_asks(tmp_path: Path) -> None:
    root, _ = _race_tree(tmp_path)
    (root / "alias").symlink_to("race")
    with RootDirs() as roots:
        with open_source(f"{root}/alias/secret", root=str(root), follow_symlinks=True, roots=roots):
            pass
        with pytest.raises(NotRegularFileError, match="symbolic link"):
            open_source(f"{root}/alias/secret", root=str(root), roots=roots)


@pytest.mark.parametrize("tens", [30, 700, 6_500])  # under the head, over it, near 64 KiB
def test_a_small_file_read_whole_once_is_served_from_that_read(tmp_path: Path, tens: int) -> None:
    path = tmp_path / "small.txt"
    content = b"0123456789" * tens
    path.write_bytes(content)
    with open_source(str(path)) as src:
        assert src.head() == content[:4096]
        assert src.head(12) == b"012345678901"
        # Rewritten in place, same size: what the head read stays what was read (all of the
        # file), and the check after reading says the file changed.
        path.write_bytes(b"abcdefghij" * tens)
        assert read_limited(src, 5) == b"01234"
        assert read_limited(src, 100_000) == content
        assert src.head(100_000) == content
        with pytest.raises(FileUnstableError):
            src.check_unchanged()


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 4097, 70_000])
def test_reading_a_file_at_most_a_limit_gives_its_start(tmp_path: Path, size: int) -> None:
    path = tmp_path / "f.bin"
    content = os.urandom(size)
    path.write_bytes(content)
    for limit in (0, 1, size, size + 1, 65_536):
        with open_source(str(path)) as src:
            assert read_limited(src, limit) == content[:limit]
            assert src.head() == content[:4096]
            assert read_limited(src, limit) == content[:limit]


@pytest.mark.parametrize(("counted", "held"), [(100, 300), (4096, 5000), (100, 70_000)])
def test_a_file_that_holds_more_than_its_size_says_is_read_to_its_end(
    tmp_path: Path, counted: int, held: int
) -> None:
    # Some file systems (FUSE, network ones with cached attributes) count fewer bytes than a
    # file holds; stopping at the count would code a part of the file as the whole.
    path = tmp_path / "f.bin"
    content = os.urandom(held)
    path.write_bytes(content)
    with open_source(str(path)) as src:
        st = src.stat
        src.stat = os.stat_result((*st[:6], counted, *st[7:]))  # what such a system says
        assert src.head() == content[:4096]
        assert read_limited(src, 65_536) == content[:65_536]
        assert src.head() == content[:4096]


def test_a_file_whose_size_says_nothing_is_read_to_its_end() -> None:
    # Files of /proc (and such) say 0 bytes and have content.
    with open_source("/proc/self/status") as src:
        assert src.size == 0
        assert read_limited(src, 10_000).startswith(b"Name:")
        assert src.head().startswith(b"Name:")


@pytest.mark.usefixtures("kernel")
@pytest.mark.parametrize("old", ["missing", "fifo", "directory"])
def test_a_file_of_a_run_after_its_root_was_replaced_is_not_judged_by_the_old_directory(
    tmp_path: Path, old: str
) -> None:
    # A run holds the root's directory. The root is replaced (a new tree moved into place)
    # between two of its files: a file that the new root holds is not reported vanished or not
    # regular because of what the directory held (no longer the root) has at its path; alone it
    # would be read, so it is read, or found unstable like a file of a root replaced meanwhile.
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    (root / "d" / "first").write_text("first")
    path = f"{root}/d/new"
    if old == "fifo":
        os.mkfifo(root / "d" / "new")
    elif old == "directory":
        (root / "d" / "new").mkdir()
    fresh = tmp_path / "fresh"
    (fresh / "d").mkdir(parents=True)
    (fresh / "d" / "new").write_text("new file")
    with RootDirs() as roots:
        with open_source(f"{root}/d/first", root=str(root), roots=roots) as src:
            src.check_unchanged()
        root.rename(tmp_path / "old-root")
        fresh.rename(root)
        try:
            with open_source(path, root=str(root), roots=roots) as src:
                assert src.head() == b"new file"
                src.check_unchanged()
        except FileUnstableError:
            pass  # noticed as a root replaced meanwhile: retried, like any unstable file
    with open_source(path, root=str(root)) as src:  # alone: read
        assert src.head() == b"new file"
