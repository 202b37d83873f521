"""``dedupe --dirs`` attacked: plans crafted or saved across roots, undo after a duplicate
folder's files were removed (its folders, their owners and modes, kept for it), folders swapped
for links while the plan is carried out, a bind mount making a duplicate folder's file the kept
folder's, hard links between the folders, FIFOs and sockets left inside, names that are not
UTF-8. Each test states what must hold."""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from isccd.cli.dedupe import _emptied, _folders_unchanged, _read_folder_groups
from isccd.cli.main import build_parser, main, parse
from isccd.dedupe.apply import Phase, Status, apply_steps
from isccd.dedupe.folders import listing
from isccd.dedupe.log import ActionLog
from isccd.dedupe.plan import Action, Step, steps_of
from tests.dedupe.conftest import KEY

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _own_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path / "default-state"))


def data(size: int, seed: int) -> bytes:
    return bytes((seed + size + i * 7) % 251 for i in range(size))


def tree(base: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(base)): p.read_bytes()
        for p in sorted(base.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def scan(state: Path, *roots: Path) -> None:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["scan", "--state", str(state), "-j", "1", *map(str, roots)]) == 0


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def dry_plan(capsys: pytest.CaptureFixture[str], state: Path, where: Path) -> dict[str, Any]:
    status, out, err = run(capsys, "dedupe", "--dirs", "--remove", "--json", "--state", str(state))
    assert status == 0, err
    document: dict[str, Any] = json.loads(out)
    where.write_text(out)
    where.chmod(0o600)
    return document


def two_roots(base: Path) -> tuple[Path, Path]:
    """Two watched roots: ``r1/backup`` a copy of ``r2/photos``, each root with a file of
    its own (so that neither root is itself a duplicate)."""
    r1, r2 = base / "srv" / "r1", base / "d" / "r2"  # r2's is the shorter path: kept
    for folder in (r1 / "backup", r2 / "photos"):
        (folder / "sub").mkdir(parents=True)
        (folder / "a.bin").write_bytes(data(3000, 1))
        (folder / "sub" / "b.bin").write_bytes(data(3100, 1))
    (r1 / "own.bin").write_bytes(data(5000, 3))
    (r2 / "own.bin").write_bytes(data(5001, 4))
    return r1, r2


@pytest.fixture
def album(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "lib"
    for top in ("photos", "backup-photos"):
        (root / top / "sub" / "deep").mkdir(parents=True)
        (root / top / "a.bin").write_bytes(data(3000, 1))
        (root / top / "sub" / "c.bin").write_bytes(data(3200, 1))
        (root / top / "sub" / "deep" / "d.bin").write_bytes(data(3300, 1))
    (root / "u.bin").write_bytes(data(999, 9))
    state = tmp_path / "state"
    scan(state, root)
    return root, state


# -- plan files --------------------------------------------------------------------------------


def test_a_saved_plan_whose_kept_folder_is_in_another_root_is_carried_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r1, r2 = two_roots(tmp_path)
    state = tmp_path / "state"
    scan(state, r1, r2)
    plan = tmp_path / "plan.json"
    document = dry_plan(capsys, state, plan)
    assert {g["folder"]["path"] for g in document["groups"]} == {str(r1 / "backup")}
    status, out, err = run(capsys, "dedupe", "--remove", "--plan", str(plan), "--apply",
                           "--state", str(state))  # fmt: skip
    assert status == 0 and "removed 2 files" in out, err
    assert not [p for p in (r1 / "backup").rglob("*") if not p.is_dir()]
    assert tree(r2 / "photos") == {"a.bin": data(3000, 1), "sub/b.bin": data(3100, 1)}


def test_a_plan_whose_folder_lies_outside_the_watched_roots_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r1, r2 = two_roots(tmp_path)
    outside = tmp_path / "srv" / "not-watched" / "empty"
    outside.mkdir(parents=True)
    state = tmp_path / "state"
    scan(state, r1, r2)
    plan = tmp_path / "plan.json"
    document = dry_plan(capsys, state, plan)
    for group in document["groups"]:
        # The folder widened to /srv (above the root r1), its root to the test's folder; its
        # listing made to match, as its author can.
        group["folder"]["path"] = str(tmp_path / "srv")
        group["folder"]["root"] = str(tmp_path)
        found = listing(str(tmp_path), str(tmp_path / "srv"))
        group["folder"]["listing"], group["folder"]["entries"] = found.digest, found.entries
    plan.write_text(json.dumps(document))
    status, _, err = run(capsys, "dedupe", "--remove", "--plan", str(plan), "--apply",
                         "--state", str(state))  # fmt: skip
    assert outside.is_dir(), "an empty folder outside the watched roots was removed"
    assert status == 2 and "root" in err, err


def test_a_plan_naming_another_folders_listing_leaves_the_folder_whole(
    album: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, state = album
    plan = tmp_path / "plan.json"
    document = dry_plan(capsys, state, plan)
    found = listing(str(root), str(root / "photos"))  # the kept folder's: same shape
    other, count = found.digest, found.entries
    for group in document["groups"]:
        group["folder"]["listing"], group["folder"]["entries"] = other, count
    plan.write_text(json.dumps(document))
    before = tree(root)
    status, out, err = run(capsys, "dedupe", "--remove", "--plan", str(plan), "--apply",
                           "--state", str(state))  # fmt: skip
    assert status == 0 and "removed 0 files" in out, (out, err)
    assert tree(root) == before


# -- undo ----------------------------------------------------------------------------------------


@pytest.fixture
def private(tmp_path: Path) -> tuple[Path, Path]:
    """A user's folder ``photos`` and its copy, each with a private subfolder (0700) and an
    empty one, all owned by user 1000."""
    root = tmp_path / "lib"
    for top in ("photos", "backup-photos"):
        (root / top / "private" / "empty").mkdir(parents=True)
        (root / top / "private" / "a.bin").write_bytes(data(3000, 1))
        (root / top / "b.bin").write_bytes(data(3100, 1))
        for p in [root / top, *(root / top).rglob("*")]:
            os.chown(p, 1000, 1000)
        (root / top / "private").chmod(0o700)
    (root / "u.bin").write_bytes(data(999, 9))
    state = tmp_path / "state"
    scan(state, root)
    return root, state


def _remove_and_undo(capsys: pytest.CaptureFixture[str], root: Path, state: Path) -> None:
    status, out, err = run(capsys, "dedupe", "--dirs", "--remove", "--apply", "--state", str(state))
    assert status == 0 and f"emptied {root}/backup-photos/" in out, (out, err)
    assert not [p for p in (root / "backup-photos").rglob("*") if not p.is_dir()]
    log = next((state / "dedupe").glob("*.jsonl"))
    status, out, err = run(capsys, "dedupe", "--undo", str(log), "--state", str(state))
    assert status == 0 and "2 undone, 0 cannot be undone" in out, (out, err)
    assert tree(root / "backup-photos") == tree(root / "photos")


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown and mount need root")


@needs_root
def test_undo_brings_the_removed_folders_back_with_their_owner_and_mode(
    private: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root, state = private
    _remove_and_undo(capsys, root, state)
    st = (root / "backup-photos" / "private").stat()
    assert (st.st_uid, oct(st.st_mode & 0o7777)) == (1000, oct(0o700))
    assert (root / "backup-photos").stat().st_uid == 1000


@needs_root
def test_undo_brings_the_removed_empty_folders_back(
    private: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root, state = private
    _remove_and_undo(capsys, root, state)
    assert (root / "backup-photos" / "private" / "empty").is_dir()


# -- races while the plan is carried out ----------------------------------------------------


def _carry_out(
    root: Path, state: Path, at: Phase, do: Any, tmp_path: Path
) -> tuple[list[Any], list[str]]:
    """Plan ``dedupe --dirs --remove`` and carry it out as ``--apply`` does (the folders read
    again, each step checked and logged; the emptied folders said), ``do`` called at ``at``
    of the first step."""
    args = parse(build_parser(), ["dedupe", "--dirs", "--remove", "--state", str(state)])
    made = _read_folder_groups(args)
    steps, untouched = steps_of(made.plan, Action.REMOVE)
    steps, untouched = _folders_unchanged(made.plan, steps, untouched)
    assert len(steps) == 3
    fired: list[Step] = []

    def on_phase(phase: Phase, step: Step) -> None:
        if phase is at and not fired:
            fired.append(step)
            do()

    with ActionLog(tmp_path / "log.jsonl", KEY) as log:
        outcomes = apply_steps(steps, log, on_phase=on_phase)
    return outcomes, _emptied(made.plan, outcomes)


@pytest.mark.parametrize("at", [Phase.CHECKED, Phase.SWAPPED])
def test_a_subfolder_swapped_for_a_link_to_the_kept_one_while_acting_keeps_every_byte(
    album: tuple[Path, Path], tmp_path: Path, at: Phase
) -> None:
    root, state = album
    copy = root / "backup-photos"
    kept_before = tree(root / "photos")

    def swap() -> None:
        (copy / "sub").rename(root / "moved-sub")
        (copy / "sub").symlink_to(root / "photos" / "sub")

    outcomes, emptied = _carry_out(root, state, at, swap, tmp_path)
    # Nothing is removed through the link: the kept folder holds all it held. (The files
    # checked before the swap are acted on where their open folder went: the very files
    # recorded, each checked equal to its kept copy.)
    assert tree(root / "photos") == kept_before
    assert (copy / "sub").is_symlink()
    assert all(p.is_dir() for p in map(Path, emptied))  # a folder is never removed
    assert all(o.status in (Status.DONE, Status.SKIPPED) for o in outcomes)
    assert (root / "moved-sub").is_dir()


def test_a_unique_file_slipped_into_the_folder_while_acting_stays_and_so_does_the_folder(
    album: tuple[Path, Path], tmp_path: Path
) -> None:
    root, state = album
    copy = root / "backup-photos"
    unique = data(3300, 77)  # the size of d.bin, other bytes

    def slip() -> None:
        (copy / "sub" / "deep" / "only.bin").write_bytes(unique)

    outcomes, emptied = _carry_out(root, state, Phase.CHECKED, slip, tmp_path)
    assert all(o.status is Status.DONE for o in outcomes)
    assert (copy / "sub" / "deep" / "only.bin").read_bytes() == unique
    assert (copy / "sub" / "deep").is_dir()
    assert str(copy) not in emptied or (copy / "sub" / "deep" / "only.bin").exists()


def test_the_only_copy_put_in_place_of_a_file_after_indexing_is_never_removed(
    album: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The index still says d.bin is a copy; the file now holds other bytes of its size
    (and its old time), written before the plan: the plan's listing has it as it is now."""
    root, state = album
    victim = root / "backup-photos" / "sub" / "deep" / "d.bin"
    st = victim.stat()
    victim.write_bytes(data(3300, 77))
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
    status, out, err = run(capsys, "dedupe", "--dirs", "--remove", "--apply", "--state", str(state))
    assert victim.read_bytes() == data(3300, 77), (out, err)
    assert status == 1 and "emptied " not in out


# -- links, mounts and special files -------------------------------------------------------


def test_hard_links_between_the_folders_are_left_and_keep_the_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "lib"
    for top in ("photos", "backup-photos"):
        (root / top).mkdir(parents=True)
        (root / top / "b.bin").write_bytes(data(3100, 1))
    (root / "photos" / "a.bin").write_bytes(data(3000, 1))
    os.link(root / "photos" / "a.bin", root / "backup-photos" / "a.bin")
    (root / "u.bin").write_bytes(data(999, 9))
    state = tmp_path / "state"
    scan(state, root)
    status, out, err = run(capsys, "dedupe", "--dirs", "--remove", "--apply", "--state", str(state))
    assert status == 0, (out, err)
    assert tree(root / "photos") == {"a.bin": data(3000, 1), "b.bin": data(3100, 1)}
    assert not (root / "backup-photos" / "b.bin").exists()
    assert (root / "backup-photos" / "a.bin").stat().st_ino == (
        root / "photos" / "a.bin"
    ).stat().st_ino


@pytest.fixture
def bound(tmp_path: Path) -> Iterator[Path]:
    """``backup/a`` a bind mount of ``photos/sub`` (which ``scan`` does not enter: the same
    directory), unmounted at the end."""
    root = tmp_path / "lib"
    (root / "photos" / "sub").mkdir(parents=True)
    (root / "backup" / "a").mkdir(parents=True)
    (root / "photos" / "sub" / "c.bin").write_bytes(data(3000, 1))
    (root / "photos" / "c2.bin").write_bytes(data(3000, 1))
    (root / "backup" / "c2.bin").write_bytes(data(3000, 1))
    subprocess.run(["mount", "--bind", str(root / "photos" / "sub"), str(root / "backup" / "a")],
                   check=True)  # fmt: skip
    try:
        yield root
    finally:
        subprocess.run(["umount", str(root / "backup" / "a")], check=True)


@needs_root
def test_a_bind_mount_never_costs_the_kept_folder_a_file(
    bound: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = bound
    state = tmp_path / "state"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        # The same folder met twice: said (exit 1), not entered the second time.
        assert main(["scan", "--state", str(state), "-j", "1", str(root)]) in (0, 1)
    _, out, err = run(capsys, "dedupe", "--dirs", "--remove", "--apply", "--state", str(state))
    assert (root / "photos" / "sub" / "c.bin").read_bytes() == data(3000, 1), (out, err)
    assert "(a bind mount)" in out, (out, err)


def test_a_fifo_and_a_socket_left_inside_keep_the_folder(
    album: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, state = album
    copy = root / "backup-photos"
    os.mkfifo(copy / "sub" / "pipe")
    with monkeypatch.context() as here, socket.socket(socket.AF_UNIX) as sock:
        here.chdir(copy / "sub" / "deep")  # a socket's path has 107 bytes at most: bound here
        sock.bind("sock")
    status, out, err = run(capsys, "dedupe", "--dirs", "--remove", "--apply", "--state", str(state))
    assert status == 0 and "removed 3 files" in out, (out, err)
    assert (copy / "sub" / "pipe").is_fifo() and (copy / "sub" / "deep" / "sock").is_socket()
    assert sorted(p.name for p in copy.rglob("*")) == ["deep", "pipe", "sock", "sub"]
    assert tree(root / "photos") == {"a.bin": data(3000, 1), "sub/c.bin": data(3200, 1),
                                     "sub/deep/d.bin": data(3300, 1)}  # fmt: skip


def test_names_that_are_not_utf8_go_through_a_plan_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "lib"
    odd = os.fsdecode(b"b\xff\xfe\nline")
    for top in ("photos", os.fsdecode(b"copy-\xe9\n")):
        (root / top / odd).mkdir(parents=True)
        (root / top / odd / os.fsdecode(b"\x80.bin")).write_bytes(data(3000, 1))
        (root / top / "a.bin").write_bytes(data(3100, 1))
    (root / "u.bin").write_bytes(data(999, 9))
    state = tmp_path / "state"
    scan(state, root)
    plan = tmp_path / "plan.json"
    document = dry_plan(capsys, state, plan)
    copy = root / os.fsdecode(b"copy-\xe9\n")
    assert {g["folder"]["path"] for g in document["groups"]} == {str(copy)}
    status, out, err = run(capsys, "dedupe", "--remove", "--plan", str(plan), "--apply",
                           "--state", str(state))  # fmt: skip
    assert status == 0 and "emptied " in out, (out, err)
    assert not [p for p in copy.rglob("*") if not p.is_dir()]
    assert (root / "photos" / odd / os.fsdecode(b"\x80.bin")).read_bytes() == data(3000, 1)
