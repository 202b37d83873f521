"""``dedupe --script sh`` against hostile file names: the script is run with ``sh`` and must do
what the plan says, and nothing a name says.

Every name carries a payload that creates a file in the directory the script runs in (an
empty one): a newline ending a comment, quotes closing a quoted argument, ``$(...)``,
backticks, ``;``, ``&&``, globs, backslashes, bytes that are not UTF-8. The directory must
stay empty, and the copies must be linked to the kept file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from isccd.cli.main import main
from isccd.dedupe.plan import Action, steps_of
from isccd.dedupe.script import shell_script
from tests.dedupe.conftest import plan_of, write

#: What each payload creates when it runs, in the script's working directory.
CANARY = "PWNED"

PAYLOADS = (
    f"\ntouch {CANARY} #",
    f"\ntouch {CANARY}\n",
    f"'; touch {CANARY}; '",
    f"'\ntouch {CANARY}\n'",
    f'"; touch {CANARY}; "',
    f"$(touch {CANARY})",
    f"`touch {CANARY}`",
    f"'$(touch {CANARY})'",
    f"\\'; touch {CANARY} #",
    f" && touch {CANARY} && ",
    f"| touch {CANARY} |",
    f"\r\ntouch {CANARY} #",
    f"${{x:-$(touch {CANARY})}}",
    f"\n# group 9\ntouch {CANARY}\n#",
)

_HOSTILE = "\n\r\t '\"$`\\;&|(){}[]<>*?~#!=%^-"
_name_text = st.text(
    alphabet=st.sampled_from(_HOSTILE) | st.characters(codec="utf-8", exclude_characters="/\0"),
    max_size=12,
)


def _name(text: str, payload: str, raw: bytes) -> str:
    """A file name of ``text``, ``payload`` and ``raw`` bytes (any but ``/`` and NUL), at
    most 255 bytes."""
    name = text + payload + os.fsdecode(raw)
    while len(os.fsencode(name)) > 255:
        name = name[1:]
    return name if name not in ("", ".", "..") else name + "x"


_raw = st.binary(max_size=4).map(lambda b: b.replace(b"/", b"").replace(b"\0", b""))


def _run_script(
    tmp: Path, names: tuple[str, str], folder: str, action: Action = Action.LINK
) -> None:
    """Two copies named ``names`` in ``folder`` (the first one older: it is kept), linked (or
    moved) by the script; the script runs in an empty directory that must stay empty."""
    shutil.rmtree(tmp, ignore_errors=True)
    root = tmp / "root"
    where = root / folder
    kept = write(where / names[0], b"the same bytes\n", mtime=1_000_000)
    copy = write(where / names[1], b"the same bytes\n", mtime=2_000_000)
    plan = plan_of(root, [[kept, copy]])
    attic = tmp / "attic"
    steps, _ = steps_of(plan, action, move_to=str(attic) if action is Action.MOVE else None)
    assert [s.path for s in steps] == [str(copy)]
    script = tmp / "dedupe.sh"
    script.write_bytes(os.fsencode(shell_script(steps, "link 1 file")))
    cwd = tmp / "cwd"
    cwd.mkdir()
    done = subprocess.run(
        ["sh", str(script)], cwd=cwd, capture_output=True, check=False, timeout=60
    )
    assert list(cwd.iterdir()) == [], done.stderr
    assert done.returncode == 0, done.stderr
    if action is Action.MOVE:
        assert (attic / str(copy).lstrip("/")).is_file() and not copy.exists()
        return
    assert kept.stat().st_ino == copy.stat().st_ino  # the plan was carried out
    assert sorted(p.name for p in where.iterdir()) == sorted(names)


@pytest.mark.slow
@pytest.mark.parametrize("action", [Action.LINK, Action.MOVE])
@pytest.mark.parametrize("payload", PAYLOADS)
def test_each_payload_in_a_kept_name_a_copy_and_a_folder_runs_nothing(
    tmp_path: Path, payload: str, action: Action
) -> None:
    _run_script(tmp_path / "t", ("a" + payload, "b" + payload), "dir" + payload, action)


@pytest.mark.slow
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    texts=st.tuples(_name_text, _name_text, _name_text),
    payloads=st.tuples(*[st.sampled_from(PAYLOADS)] * 3),
    raw=st.tuples(_raw, _raw, _raw),
)
@example(texts=("a", "b", "d"), payloads=(PAYLOADS[0],) * 3, raw=(b"", b"", b""))
@example(texts=("a", "b", "d"), payloads=(PAYLOADS[5],) * 3, raw=(b"\xff", b"\x80", b"\xc3"))
def test_no_name_runs_as_a_command(
    tmp_path: Path,
    texts: tuple[str, str, str],
    payloads: tuple[str, str, str],
    raw: tuple[bytes, bytes, bytes],
) -> None:
    kept, copy, folder = (_name(t, p, r) for t, p, r in zip(texts, payloads, raw, strict=True))
    if kept == copy:
        copy += "2"
    _run_script(tmp_path / "t", (kept, copy), folder)


@pytest.mark.slow
def test_the_command_writes_a_name_that_is_not_utf8_as_its_bytes(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    root = tmp_path / "lib"
    kept = write(root / os.fsdecode(b"k\xff\ntouch PWNED #"), b"same\n", mtime=1_000_000)
    copy = write(root / os.fsdecode(b"c\xfe$(touch PWNED)"), b"same\n", mtime=2_000_000)
    state = tmp_path / "state"
    assert main(["scan", "--state", str(state), "-j", "1", str(root)]) == 0
    capsysbinary.readouterr()
    status = main(["dedupe", "--link", "--state", str(state), "--script", "sh"])
    script = capsysbinary.readouterr().out
    assert status == 0 and b"k\xff" in script
    (tmp_path / "dedupe.sh").write_bytes(script)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    done = subprocess.run(["sh", str(tmp_path / "dedupe.sh")], cwd=cwd, capture_output=True,
                          check=False, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert list(cwd.iterdir()) == []
    assert kept.stat().st_ino == copy.stat().st_ino


def _two_copies(tmp: Path) -> tuple[Path, Path, Path]:
    """The root, the kept file and its copy, in one folder ``dir`` of the root."""
    root = tmp / "root"
    kept = write(root / "dir" / "a", b"the same bytes\n", mtime=1_000_000)
    copy = write(root / "dir" / "b", b"the same bytes\n", mtime=2_000_000)
    return root, kept, copy


def _script_of(
    tmp: Path, root: Path, files: list[Path], action: Action, move_to: str | None = None
) -> Path:
    steps, _ = steps_of(plan_of(root, [files]), action, move_to=move_to)
    script = tmp / "dedupe.sh"
    script.write_bytes(os.fsencode(shell_script(steps, f"{action.value} 1 file")))
    return script


def _sh(command: list[str], tmp: Path, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ) if path is None else {**os.environ, "PATH": path}
    return subprocess.run(command, cwd=tmp, capture_output=True, text=True, check=False,
                          timeout=60, env=env)  # fmt: skip


@pytest.mark.parametrize("planted", ["symlink", "directory"])
def test_a_name_planted_where_the_script_once_made_its_temporary_file_is_never_used(
    tmp_path: Path, planted: str
) -> None:
    root, kept, copy = _two_copies(tmp_path)
    theirs = tmp_path / "theirs"  # someone else's folder
    theirs.mkdir()
    script = _script_of(tmp_path, root, [kept, copy], Action.LINK)
    # The name an earlier script used for its temporary link (its process id and step number),
    # planted before it runs: `exec` keeps the process id.
    plant = (f'ln -s -- {theirs} "$1/.isccd-dedupe-$$-1.tmp"' if planted == "symlink"
             else 'mkdir -- "$1/.isccd-dedupe-$$-1.tmp"')  # fmt: skip
    done = _sh(["sh", "-c", f'{plant} && exec sh "$2"', "sh", str(kept.parent), str(script)],
               tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert list(theirs.iterdir()) == []  # no link to the kept file made in their folder
    assert not copy.is_symlink() and copy.stat().st_ino == kept.stat().st_ino
    others = {p.name for p in kept.parent.iterdir()} - {"a", "b"}
    assert len(others) == 1 and others.pop().startswith(".isccd-dedupe-")  # only the planted


def _shimmed_mv(tmp: Path, when: Path) -> str:
    """A ``PATH`` whose ``mv`` makes ``when`` a directory just before it acts on that name
    (what another user does in the instant between the script's checks and its ``mv``), then
    runs the real ``mv``."""
    real = shutil.which("mv")
    assert real is not None
    shims = tmp / "shims"
    shims.mkdir()
    shim = shims / "mv"
    shim.write_text(
        "#!/bin/sh\n"
        "for last; do :; done\n"
        f'if [ "$last" = {str(when)!r} ]; then rm -f -- "$last"; mkdir -- "$last"; fi\n'
        f'exec {real} "$@"\n'
    )
    shim.chmod(0o755)
    return f"{shims}:{os.environ['PATH']}"


def test_a_folder_swapped_in_for_the_copy_never_receives_the_link(tmp_path: Path) -> None:
    root, kept, copy = _two_copies(tmp_path)
    script = _script_of(tmp_path, root, [kept, copy], Action.LINK)
    done = _sh(["sh", str(script)], tmp_path, _shimmed_mv(tmp_path, copy))
    assert done.returncode == 1 and f"skipped {copy}: not linked" in done.stderr
    assert copy.is_dir() and list(copy.iterdir()) == []
    assert sorted(p.name for p in kept.parent.iterdir()) == ["a", "b"]  # no temporary left


def test_a_folder_at_the_move_target_never_receives_the_file(tmp_path: Path) -> None:
    root, kept, copy = _two_copies(tmp_path)
    attic = tmp_path / "attic"
    script = _script_of(tmp_path, root, [kept, copy], Action.MOVE, move_to=str(attic))
    target = attic / str(copy).lstrip("/")
    done = _sh(["sh", str(script)], tmp_path, _shimmed_mv(tmp_path, target))
    assert done.returncode == 1 and f"skipped {copy}: not moved" in done.stderr
    assert target.is_dir() and list(target.iterdir()) == []
    assert copy.read_bytes() == b"the same bytes\n"


def _scanned(tmp: Path) -> tuple[Path, Path, Path]:
    """Two copies in ``root/dir``, indexed into ``tmp/state``."""
    root, kept, copy = _two_copies(tmp)
    assert main(["scan", "--state", str(tmp / "state"), "-j", "1", str(root)]) == 0
    return root, kept, copy


def _script_by_command(
    tmp: Path, capsysbinary: pytest.CaptureFixture[bytes], *action: str
) -> tuple[Path, str]:
    """The script ``dedupe ACTION --script sh`` writes, and what it said on stderr."""
    capsysbinary.readouterr()
    status = main(["dedupe", *action, "--state", str(tmp / "state"), "--script", "sh"])
    written = capsysbinary.readouterr()
    assert status == 0, written.err
    script = tmp / "dedupe.sh"
    script.write_bytes(written.out)
    return script, os.fsdecode(written.err)


@pytest.mark.parametrize("action", ["--link", "--remove"])
def test_a_copy_in_a_folder_another_user_owns_is_left_to_apply(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], action: str
) -> None:
    # Their folder: between the script's checks and its act they could swap it for a link to
    # a folder of root's, whose file the act would then replace or delete.
    _root, kept, copy = _scanned(tmp_path)
    os.chown(kept.parent, 12345, 12346)
    script, said = _script_by_command(tmp_path, capsysbinary, action)
    assert f"left {copy}" in said and "belongs to user 12345" in said, said
    assert os.fsencode(str(copy)) not in script.read_bytes()
    done = _sh(["sh", str(script)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert copy.read_bytes() == b"the same bytes\n" and copy.stat().st_ino != kept.stat().st_ino


def test_a_move_through_a_folder_another_user_owns_is_left_to_apply(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    # A folder below the move folder that an earlier --apply gave to a user (mirroring theirs):
    # they could put a link there to a folder of root's, which the script's mv would follow.
    root, _kept, copy = _scanned(tmp_path)
    attic = tmp_path / "attic"
    theirs = attic / str(root).lstrip("/")
    theirs.mkdir(parents=True)
    os.chown(theirs, 12345, 12346)
    script, said = _script_by_command(tmp_path, capsysbinary, "--move", str(attic))
    assert f"left {copy}" in said and "belongs to user 12345" in said, said
    done = _sh(["sh", str(script)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert copy.exists() and list(theirs.iterdir()) == []


def test_the_folders_a_scripted_move_makes_are_private(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    _root, _kept, copy = _scanned(tmp_path)
    copy.parent.chmod(0o700)  # a private folder: its mirror must not be readable by others
    attic = tmp_path / "attic"
    attic.mkdir(mode=0o755)
    script, said = _script_by_command(tmp_path, capsysbinary, "--move", str(attic))
    done = _sh(["sh", str(script)], tmp_path)
    assert done.returncode == 0, done.stderr + said
    target = attic / str(copy).lstrip("/")
    assert target.read_bytes() == b"the same bytes\n" and not copy.exists()
    made = [p for p in target.parents if attic in p.parents]
    assert made and all(p.stat().st_mode & 0o777 == 0o700 for p in made)


@pytest.mark.parametrize("change", ["chmod", "chown"])
def test_a_kept_file_whose_owner_or_permissions_changed_after_the_script_was_written_is_skipped(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], change: str
) -> None:
    # Judged when the script was written; a chmod or chown since changes neither the inode,
    # the size nor the modification time the script checks, only what the rules judged.
    _root, kept, copy = _scanned(tmp_path)
    script, _said = _script_by_command(tmp_path, capsysbinary, "--link")
    if change == "chmod":
        kept.chmod(0o600)
    else:
        os.chown(kept, 12345, 12346)
    done = _sh(["sh", str(script)], tmp_path)
    assert done.returncode == 1 and f"skipped {copy}: changed since the plan" in done.stderr
    assert copy.stat().st_ino != kept.stat().st_ino


def test_a_move_folder_missing_in_a_sticky_folder_is_left_to_apply(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    # A move folder to be made in a folder anyone may write (as /tmp): another user could make
    # it first, after the script was written, and plant a link in it.
    _root, _kept, copy = _scanned(tmp_path)
    public = tmp_path / "public"
    public.mkdir()
    public.chmod(0o1777)
    script, said = _script_by_command(tmp_path, capsysbinary, "--move", str(public / "attic"))
    assert f"left {copy}" in said and "could make it first" in said, said
    assert os.fsencode(str(copy)) not in script.read_bytes()


@pytest.mark.parametrize("planted", ["their folder", "a link"])
def test_a_move_folder_made_by_another_user_after_the_script_was_written_is_not_entered(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], planted: str
) -> None:
    # The move folder's mirror of a sticky folder, made (by an --apply of other steps) after the
    # script was written: a user makes the next folder first, theirs, or a link to root's.
    _root, _kept, copy = _scanned(tmp_path)
    attic = tmp_path / "attic"
    attic.mkdir(mode=0o755)
    script, said = _script_by_command(tmp_path, capsysbinary, "--move", str(attic))
    assert os.fsencode(str(copy)) in script.read_bytes(), said
    public = attic / str(tmp_path).lstrip("/")
    public.mkdir(parents=True)
    public.chmod(0o1777)
    theirs = public / "root"
    elsewhere = tmp_path / "roots-own"
    elsewhere.mkdir(mode=0o700)
    if planted == "a link":
        theirs.symlink_to(elsewhere)
    else:
        theirs.mkdir()
        os.chown(theirs, 12345, 12346)
    done = _sh(["sh", str(script)], tmp_path)
    assert done.returncode == 1 and f"skipped {copy}: not moved" in done.stderr, done.stderr
    assert copy.read_bytes() == b"the same bytes\n"
    assert list(elsewhere.iterdir()) == []
    assert planted == "a link" or list(theirs.rglob("*")) == []
