"""``isccd compare`` on files, with the configured thresholds; ``isccd explain --jsonl``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from isccd.cli.main import main
from tests.extract.media import PROSE


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def texts(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text(PROSE)
    (tmp_path / "copy.txt").write_text(PROSE)
    (tmp_path / "edited.txt").write_text(PROSE.replace(".", "!", 1))
    (tmp_path / "noise.bin").write_bytes(os.urandom(4096))
    (tmp_path / "isccd.toml").write_text("[match]\ntext = 15\n", encoding="utf-8")
    return tmp_path


def _compare(capsys: pytest.CaptureFixture[str], d: Path, a: str, b: str, *more: str) -> dict:  # type: ignore[type-arg]
    config = str(d / "isccd.toml")
    status, out, err = _run(
        capsys, "compare", str(d / a), str(d / b), "--json", "--config", config, *more
    )
    assert status == 0, err
    result: dict = json.loads(out)  # type: ignore[type-arg]
    return result


def test_two_files_with_the_same_bytes_are_exact_duplicates(
    texts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = _compare(capsys, texts, "a.txt", "copy.txt")
    assert result["duplicate"] == "exact"
    assert result["files"] == {"a": str(texts / "a.txt"), "b": str(texts / "copy.txt")}
    # Coded as `isccd code` codes them: the Meta-Code differs with the file name.
    assert result["a"].startswith("ISCC:K") and result["a"][-26:] == result["b"][-26:]


def test_an_edit_is_near_within_the_configured_threshold_and_not_beyond_it(
    texts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = _compare(capsys, texts, "a.txt", "edited.txt")
    [text] = [p for p in result["pairs"] if p["type"] == "CONTENT-TEXT-V0"]
    assert text["threshold"] == 15 and text["within"] is True
    assert result["duplicate"] == "near"
    # The same pair under a text threshold below its distance is no duplicate by text.
    (texts / "isccd.toml").write_text(
        f"[match]\ntext = {max(text['distance'] - 1, 0)}\ndata = 0\n", encoding="utf-8"
    )
    if text["distance"] > 0:
        stricter = _compare(capsys, texts, "a.txt", "edited.txt")
        [text] = [p for p in stricter["pairs"] if p["type"] == "CONTENT-TEXT-V0"]
        assert text["within"] is False


def test_unrelated_files_are_not_duplicates_and_a_file_compares_with_a_code(
    texts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = _compare(capsys, texts, "a.txt", "noise.bin")
    assert result["duplicate"] is None
    code = result["a"]
    config = str(texts / "isccd.toml")
    status, out, _ = _run(
        capsys, "compare", code, str(texts / "copy.txt"), "--json", "--config", config
    )
    assert status == 0
    mixed = json.loads(out)
    assert mixed["duplicate"] == "exact" and mixed["files"] == {
        "a": None,
        "b": str(texts / "copy.txt"),
    }


def test_explain_jsonl_prints_one_object_per_line_as_json_prints_the_array(
    capsys: pytest.CaptureFixture[str],
) -> None:
    codes = ("ISCC:EAASKDNZNYGUUF5A", "ISCC:MAIGC5KN3I6TCUBK")
    _, document, _ = _run(capsys, "explain", *codes, "--json")
    _, lines, _ = _run(capsys, "explain", *codes, "--jsonl")
    assert [json.loads(line) for line in lines.splitlines()] == json.loads(document)
    assert len(lines.splitlines()) == 2


def test_two_codes_are_judged_by_the_configured_thresholds_from_the_file_or_the_environment(
    texts: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The codes of two files that differ by a word: compared as codes, no file is read.
    words = PROSE.split(" ")
    words[10] = "zebra"
    (texts / "word.txt").write_text(" ".join(words), encoding="utf-8")
    coded = _compare(capsys, texts, "a.txt", "word.txt")
    [text] = [p for p in coded["pairs"] if p["type"] == "CONTENT-TEXT-V0"]
    assert 0 < text["distance"] <= 15
    a, b = coded["a"], coded["b"]
    monkeypatch.setenv("XDG_CONFIG_HOME", str(texts / "no-config-here"))

    def text_pair(*more: str) -> dict:  # type: ignore[type-arg]
        status, out, err = _run(capsys, "compare", a, b, "--json", *more)
        assert status == 0, err
        [pair] = [p for p in json.loads(out)["pairs"] if p["type"] == "CONTENT-TEXT-V0"]
        return pair  # type: ignore[no-any-return]

    # No configuration: the default policy (text 15).
    assert text_pair()["threshold"] == 15 and text_pair()["within"] is True
    # A configuration's [match] table, and an ISCCD_MATCH__ variable, are applied.
    strict = texts / "strict.toml"
    strict.write_text(f"[match]\ntext = {text['distance'] - 1}\n", encoding="utf-8")
    assert text_pair("--config", str(strict))["within"] is False
    other = texts / "other.toml"
    other.write_text("[server]\nsocket = '/run/x.sock'\n", encoding="utf-8")
    assert text_pair("--config", str(other))["threshold"] == 15
    monkeypatch.setenv("ISCCD_MATCH__TEXT", str(text["distance"] - 1))
    assert text_pair("--config", str(other))["within"] is False
    # A configuration that is not TOML is refused (78), as by every command.
    (texts / "bad.toml").write_text("[match\n", encoding="utf-8")
    status, _, err = _run(capsys, "compare", a, b, "--config", str(texts / "bad.toml"))
    assert status == 78 and "not valid TOML" in err
