"""What a first run of the command line says: a mistyped option is told with the usage of the
command it was given to, ``report`` takes ``--near`` as ``dupes`` does, and a scan that found
duplicates ends with the command that lists them."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from isccd.cli.main import build_parser, main


def _usage_error(words: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main(words)
    assert exited.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    return err


@pytest.mark.parametrize(
    ("words", "command", "guess"),
    [
        (["dupes", "--nera"], "dupes", "--near"),
        (["similar", "--code", "ISCC:X", "--limits=3"], "similar", "--limit"),
        (["scan", "/tmp", "--jobz", "2"], "scan", "--jobs"),
        (["report", "--opne"], "report", "--open"),
        (["dupes", "--state", "/tmp/x", "extra"], "dupes", None),
    ],
)
def test_a_mistyped_option_prints_the_usage_of_its_command(
    words: list[str], command: str, guess: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _usage_error(words, capsys)
    assert err.startswith(f"usage: isccd {command} "), err
    assert "COMMAND ..." not in err
    assert f"isccd {command}: error: unrecognized arguments: " in err
    if guess is not None:
        assert f"(did you mean {guess}?)" in err


def test_an_unknown_command_still_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error(["dupse"], capsys)
    assert err.startswith("usage: isccd [-h] [--version] COMMAND ...")
    assert "invalid choice: 'dupse'" in err


def test_report_takes_near_as_dupes_does() -> None:
    parser = build_parser()
    assert parser.parse_args(["report", "--near"]).near is True
    assert parser.parse_args(["report"]).near is True  # the report always had near groups
    assert parser.parse_args(["report", "--no-near"]).near is False


@pytest.mark.slow
def test_a_scan_that_found_duplicates_says_what_they_are_and_how_to_list_them(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state dir"
    assert main(["scan", "--state", str(state), "-j", "1", str(library)]) == 0
    out = capsys.readouterr().out.splitlines()
    hint = next(line for line in out if "duplicate findings:" in line)
    found = int(hint.split()[0])
    assert f", {found} duplicate findings," in out[0]
    assert "same bytes as another file, or to be near one" in hint
    command = hint.split("list them as groups: ")[1]
    assert shlex.split(command) == ["isccd", "dupes", "--near", "--state", str(state)]
    # The command it names lists them.
    assert main(shlex.split(command)[1:]) == 0
    assert "reclaimable" in capsys.readouterr().out


@pytest.mark.slow
def test_a_scan_without_duplicates_says_nothing_of_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "only.txt").write_text("one file, nothing like it\n")
    assert main(["scan", "--state", str(tmp_path / "state"), "-j", "1", str(tmp_path / "lib")]) == 0
    assert "list them as groups" not in capsys.readouterr().out
