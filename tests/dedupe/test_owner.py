"""Whose file may stand for whose: root never hands its file to a user who backdated a copy,
links never join files of different owners, permissions or ACLs unless asked
(``--link-any-owner``), and a kept file's owner can always already write the victim.

The first tests run as root with a real unprivileged user (``nobody``), whose steps run in
processes that dropped every privilege."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from isccd.cli.main import main
from isccd.dedupe.apply import Status
from isccd.dedupe.plan import Action
from isccd.dedupe.planfile import plan_document
from tests.dedupe.conftest import plan_of, run_plan, write

DATA = b"root's configuration\n" * 500
TIMEOUT = 60


def _nobody() -> pwd.struct_passwd:
    if os.geteuid() != 0:
        pytest.skip("needs root: the test drops privileges to an unprivileged user")
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user 'nobody' on this machine")


def _as(user: pwd.struct_passwd, fn: Callable[[], object]) -> str:
    """Run ``fn`` in a forked child as ``user``, with no supplementary group and no privilege
    left; ``"ok"`` or the name of the exception it raised."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop privileges, run, say how it went, exit at once
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            fn()
            result = "ok"
        except BaseException as exc:  # reported to the parent
            result = type(exc).__name__
        os.write(write, result.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as inp:
        said = inp.read().decode()
    os.waitpid(pid, 0)
    return said


@contextlib.contextmanager
def _shared_tree() -> Iterator[Path]:
    """A tree outside the private pytest folder, so that the user can reach it: a root-owned
    folder ``srv`` and a folder ``drop`` the user may write."""
    base = Path(tempfile.mkdtemp(dir="/tmp", prefix="isccd-owner-"))
    try:
        base.chmod(0o755)
        (base / "srv").mkdir(mode=0o755)
        (base / "drop").mkdir(mode=0o755)
        yield base
    finally:
        shutil.rmtree(base)


def _dedupe(base: Path, plan: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "isccd", "dedupe", *args, "--plan", str(plan), "--apply",
               "--json", "--log", str(base / "log.jsonl")]  # fmt: skip
    # The plan's root is a watched root of this host (a plan acts on nothing else).
    env = {**os.environ, "ISCCD_WATCH__ROOTS": str(base)}
    return subprocess.run(
        command, capture_output=True, text=True, check=False, timeout=TIMEOUT, env=env
    )


def _plan(base: Path, files: list[Path]) -> Path:
    plan = base / "plan.json"
    plan.write_text(json.dumps(plan_document(plan_of(base, [files]))))
    return plan


def _user_copies(user: pwd.struct_passwd, source: Path, copy: Path) -> None:
    """The user copies ``source`` and backdates the copy: it is now "the oldest"."""

    def copy_and_backdate() -> None:
        shutil.copyfile(source, copy)
        os.utime(copy, (1_000_000, 1_000_000))

    assert _as(user, copy_and_backdate) == "ok"
    assert copy.stat().st_uid == user.pw_uid


@pytest.mark.slow
@pytest.mark.parametrize(
    "args", [["--link"], ["--link", "--link-any-owner"], ["--remove"]], ids=" ".join
)
def test_root_never_keeps_a_users_backdated_copy_of_its_file(args: list[str]) -> None:
    user = _nobody()
    with _shared_tree() as base:
        os.chown(base / "drop", user.pw_uid, user.pw_gid)
        mine = write(base / "srv" / "app.conf", DATA, mtime=2_000_000)
        mine.chmod(0o644)
        inode = mine.stat().st_ino
        copy = base / "drop" / "app.conf"
        _user_copies(user, mine, copy)
        done = _dedupe(base, _plan(base, [mine, copy]), *args)
        assert done.returncode == 1, done.stdout + done.stderr
        [outcome] = json.loads(done.stdout)["outcomes"]
        assert outcome["kept"] == str(copy) and outcome["status"] == "failed"
        assert f"belongs to user {user.pw_uid}, who cannot write this file" in outcome["reason"]
        # Root's file is still root's own inode, which the user cannot write.
        st = mine.stat()
        assert (st.st_ino, st.st_uid, mine.read_bytes()) == (inode, 0, DATA)
        assert _as(user, lambda: mine.open("r+b")) == "PermissionError"


@pytest.mark.slow
def test_a_link_to_roots_file_from_a_users_copy_needs_link_any_owner() -> None:
    user = _nobody()
    with _shared_tree() as base:
        os.chown(base / "drop", user.pw_uid, user.pw_gid)
        mine = write(base / "srv" / "app.conf", DATA, mtime=1_000_000)  # the oldest: kept
        copy = base / "drop" / "app.conf"
        assert _as(user, lambda: shutil.copyfile(mine, copy)) == "ok"
        plan = _plan(base, [mine, copy])
        refused = _dedupe(base, plan, "--link")
        assert refused.returncode == 1
        [outcome] = json.loads(refused.stdout)["outcomes"]
        assert "a link would change its owner (--link-any-owner to allow)" in outcome["reason"]
        assert copy.stat().st_uid == user.pw_uid and copy.stat().st_ino != mine.stat().st_ino
        # Asked for: root can already write the user's copy, so root's file may stand for it.
        linked = _dedupe(base, plan, "--link", "--link-any-owner")
        assert linked.returncode == 0, linked.stdout + linked.stderr
        assert copy.stat().st_ino == mine.stat().st_ino and copy.stat().st_uid == 0


def test_a_link_between_different_permissions_needs_link_any_owner(tmp_path: Path) -> None:
    root = tmp_path / "root"
    kept = write(root / "a" / "f.bin", DATA, mtime=1_000_000)
    copy = write(root / "b" / "f.bin", DATA, mtime=1_000_001)
    kept.chmod(0o644)
    copy.chmod(0o600)  # private: a link would make it readable by all
    plan = plan_of(root, [[kept, copy]])
    [outcome] = run_plan(plan, Action.LINK, tmp_path / "log")
    assert outcome.status is Status.FAILED
    assert "permissions 0600 differ from the kept file's 0644" in (outcome.reason or "")
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600 and copy.stat().st_nlink == 1
    [outcome] = run_plan(plan, Action.LINK, tmp_path / "log", any_owner=True)
    assert outcome.status is Status.DONE
    assert copy.stat().st_ino == kept.stat().st_ino


def _acl(uid: int) -> bytes:
    """A POSIX ACL (the kernel's xattr form) giving user ``uid`` read and write."""
    entries = [(0x01, 6, 0xFFFFFFFF), (0x02, 6, uid), (0x04, 4, 0xFFFFFFFF),
               (0x10, 6, 0xFFFFFFFF), (0x20, 4, 0xFFFFFFFF)]  # fmt: skip
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)


def test_a_link_between_different_acls_needs_link_any_owner(tmp_path: Path) -> None:
    root = tmp_path / "root"
    kept = write(root / "a" / "f.bin", DATA, mtime=1_000_000)
    copy = write(root / "b" / "f.bin", DATA, mtime=1_000_001)
    try:
        os.setxattr(kept, "system.posix_acl_access", _acl(12345))
    except OSError as exc:
        pytest.skip(f"POSIX ACLs cannot be set here: {exc.strerror}")
    kept.chmod(copy.stat().st_mode)  # the same permission bits; only the ACL differs
    [outcome] = run_plan(plan_of(root, [[kept, copy]]), Action.LINK, tmp_path / "log")
    assert outcome.status is Status.FAILED
    assert "its ACL differs from the kept file" in (outcome.reason or "")
    assert copy.stat().st_nlink == 1


def test_the_dry_run_of_link_says_which_files_are_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    monkeypatch.setenv("ISCCD_WATCH__ROOTS", str(root))  # a plan acts on this host's roots
    files = [write(root / d / "f.bin", DATA, mtime=1_000_000) for d in "ab"]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(plan_document(plan_of(root, [files]))))
    assert main(["dedupe", "--link", "--plan", str(plan)]) == 0
    assert "differ from the kept file's are left as they are (--link-any-owner" in (
        capsys.readouterr().out
    )
    assert main(["dedupe", "--link", "--link-any-owner", "--plan", str(plan)]) == 0
    assert "--link-any-owner links them" not in capsys.readouterr().out
    assert main(["dedupe", "--remove", "--link-any-owner", "--plan", str(plan)]) == 2
    assert "--link-any-owner only goes with --link" in capsys.readouterr().err


def _plan_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: list[Path]) -> str:
    monkeypatch.setenv("ISCCD_WATCH__ROOTS", str(tmp_path / "root"))
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(plan_document(plan_of(tmp_path / "root", [files]))))
    return str(plan)


def _shown(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[str, str]:
    assert main(["dedupe", *args]) == 0
    out, err = capsys.readouterr()
    return out, err


@pytest.mark.parametrize(
    "args", [["--link"], ["--link", "--link-any-owner"], ["--remove"]], ids=" ".join
)
def test_the_dry_run_json_and_script_leave_what_apply_refuses_for_owners(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    args: list[str],
) -> None:  # fmt: skip
    if os.geteuid() != 0:
        pytest.skip("needs root: the kept file belongs to another user")
    kept = write(tmp_path / "root" / "drop" / "f.conf", DATA, mtime=1_000_000)  # the oldest
    copy = write(tmp_path / "root" / "etc" / "f.conf", DATA, mtime=2_000_000)
    os.chown(kept, 12345, 12345)
    copy.chmod(0o644)  # root's: user 12345 cannot write it
    plan = _plan_file(tmp_path, monkeypatch, [kept, copy])
    reason = "belongs to user 12345, who cannot write this file of user 0"
    out, _ = _shown(capsys, *args, "--plan", plan)
    assert f"leave   {copy}  (the kept file {kept} {reason}" in out
    assert "would link 0 files" in out or "would remove 0 files" in out
    out, _ = _shown(capsys, *args, "--plan", plan, "--json")
    member = json.loads(out)["groups"][0]["members"][1]
    assert member["path"] == str(copy) and member["action"] == "leave"
    assert reason in member["note"]
    script, err = _shown(capsys, *args, "--plan", plan, "--script", "sh")
    assert str(copy) not in script and reason in err
    # The same judgement as --apply's: the engine refuses the step too.
    outcomes = run_plan(
        plan_of(tmp_path / "root", [[kept, copy]]),
        Action.LINK if "--link" in args else Action.REMOVE, tmp_path / "log",
        any_owner="--link-any-owner" in args,
    )  # fmt: skip
    assert [o.status for o in outcomes] == [Status.FAILED]
    assert reason in (outcomes[0].reason or "")


def test_the_dry_run_leaves_a_link_between_owners_unless_link_any_owner(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: the copy belongs to another user")
    kept = write(tmp_path / "root" / "a" / "f.bin", DATA, mtime=1_000_000)
    copy = write(tmp_path / "root" / "b" / "f.bin", DATA, mtime=2_000_000)
    os.chown(copy, 12345, 12345)
    plan = _plan_file(tmp_path, monkeypatch, [kept, copy])
    out, _ = _shown(capsys, "--link", "--plan", plan)
    assert f"leave   {copy}  (owned by 12345:12345, the kept file {kept} by 0:0" in out
    script, _ = _shown(capsys, "--link", "--plan", plan, "--script", "sh")
    assert str(copy) not in script
    out, _ = _shown(capsys, "--link", "--link-any-owner", "--plan", plan)
    assert f"link    {copy}" in out
    script, _ = _shown(capsys, "--link", "--link-any-owner", "--plan", plan, "--script", "sh")
    assert str(copy) in script


def test_remove_needs_the_copys_owner_to_read_the_kept_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: the copy belongs to another user")
    kept = write(tmp_path / "root" / "srv" / "f.bin", DATA, mtime=1_000_000)  # the oldest
    copy = write(tmp_path / "root" / "home" / "f.bin", DATA, mtime=2_000_000)
    kept.chmod(0o600)  # root's own, which user 12345 cannot read
    os.chown(copy, 12345, 12345)
    reason = "its owner, user 12345, cannot read the kept file"
    plan = _plan_file(tmp_path, monkeypatch, [kept, copy])
    out, _ = _shown(capsys, "--remove", "--plan", plan)
    assert f"leave   {copy}  ({reason} {kept} (user 0's, mode 0600)" in out
    script, err = _shown(capsys, "--remove", "--plan", plan, "--script", "sh")
    assert str(copy) not in script and reason in err
    [outcome] = run_plan(plan_of(tmp_path / "root", [[kept, copy]]), Action.REMOVE,
                         tmp_path / "log")  # fmt: skip
    assert outcome.status is Status.FAILED and reason in (outcome.reason or "")
    assert copy.read_bytes() == DATA
    kept.chmod(0o644)  # now they can: the copy may go
    [outcome] = run_plan(plan_of(tmp_path / "root", [[kept, copy]]), Action.REMOVE,
                         tmp_path / "log")  # fmt: skip
    assert outcome.status is Status.DONE and not copy.exists()


@pytest.mark.parametrize("set_id", ["kept", "copy"])
def test_a_set_id_file_is_never_linked_to_another_owners_even_with_link_any_owner(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    set_id: str,
) -> None:  # fmt: skip
    if os.geteuid() != 0:
        pytest.skip("needs root: the copy belongs to another user")
    kept = write(tmp_path / "root" / "bin" / "tool", DATA, mtime=1_000_000)  # the oldest
    copy = write(tmp_path / "root" / "home" / "tool", DATA, mtime=2_000_000)
    os.chown(copy, 12345, 12345)
    # chown clears the set-ID bits: they are set after it.
    (kept if set_id == "kept" else copy).chmod(0o4755)
    (copy if set_id == "kept" else kept).chmod(0o755)
    reason = "set-user-ID or set-group-ID"
    plan = _plan_file(tmp_path, monkeypatch, [kept, copy])
    out, _ = _shown(capsys, "--link", "--link-any-owner", "--plan", plan)
    assert f"leave   {copy}  (" in out and reason in out
    [outcome] = run_plan(plan_of(tmp_path / "root", [[kept, copy]]), Action.LINK,
                         tmp_path / "log", any_owner=True)  # fmt: skip
    assert outcome.status is Status.FAILED
    assert "never linked, even with --link-any-owner" in (outcome.reason or "")
    assert copy.stat().st_ino != kept.stat().st_ino and copy.stat().st_uid == 12345
    # The same owner and group: the set-ID bits go with the file either way.
    os.chown(copy, 0, 0)
    copy.chmod(kept.stat().st_mode)
    [outcome] = run_plan(plan_of(tmp_path / "root", [[kept, copy]]), Action.LINK,
                         tmp_path / "log")  # fmt: skip
    assert outcome.status is Status.DONE
