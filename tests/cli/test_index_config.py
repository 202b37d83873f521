"""The index commands read the daemon's configuration: ``--config FILE`` (or the default file),
``ISCCD_*`` variables, flags winning over both; an invalid configuration is one line and exit
status 78, as for ``isccd run``.

Expected outcomes follow from the library's construction (tests.cli.test_index_cli): two exact
pairs (two 200,000-byte files, two texts of about 4 KB) and a draft whose Text-Code is 1 bit
from the text's.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import Any

import iscc_core
import pytest

from isccd.cli.main import main
from isccd.model import Event, EventType
from isccd.pipeline import policy
from isccd.store import open_store, state_url
from tests.cli.test_index_cli import Terminal, run


@pytest.fixture(autouse=True)
def no_daemon_and_no_default_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No configuration file in the default place, and no daemon on the default socket, unless
    a test puts them there; no ``ISCCD_*`` variable of the machine's."""
    etc = tmp_path / "etc"
    etc.mkdir()
    monkeypatch.setenv("CONFIGURATION_DIRECTORY", str(etc))
    monkeypatch.setenv("RUNTIME_DIRECTORY", str(tmp_path / "run"))
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path / "default-state"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    for name in [n for n in os.environ if n.startswith("ISCCD_")]:
        monkeypatch.delenv(name)
    return etc


def _names(group: dict[str, Any]) -> list[str]:
    return sorted(m["path"].rsplit("/", 1)[-1] for m in group["members"])


def _scan(library: Path, state: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> Any:
    status, report, err = run(["scan", "--state", str(state), *extra, str(library)], capsys)
    assert status == 0, err
    return report["roots"][0]


@pytest.mark.slow
def test_a_config_file_changes_what_dupes_reads_from_a_store(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    _scan(library, state, capsys)
    _, default, _ = run(["dupes", "--state", str(state), "--near"], capsys)
    assert sorted(g["kind"] for g in default["groups"]) == ["exact", "exact", "near"]

    config = tmp_path / "isccd.toml"
    config.write_text("[match]\ntext = 0\nmin_size = 100000\n", encoding="utf-8")
    status, custom, err = run(
        ["dupes", "--state", str(state), "--near", "--config", str(config)], capsys
    )
    assert status == 0, err
    # The texts are smaller than min_size, and the draft is 1 bit from the text: beyond 0.
    [group] = custom["groups"]
    assert _names(group) == ["big.bin", "big_copy.bin"]
    status, info, _ = run(
        ["get", "--state", str(state), "--config", str(config), str(library / "other.txt")],
        capsys,
    )
    assert status == 0 and info["path"] == str(library / "other.txt")
    status, info, _ = run(
        ["get", "--state", str(state), "--config", str(config), str(library / "docs/report.txt")],
        capsys,
    )
    assert status == 0 and info["duplicates"] == []
    status, found, _ = run(
        ["similar", "--state", str(state), "--config", str(config), str(library / "big.bin")],
        capsys,
    )
    assert [m["path"] for m in found["matches"]] == [str(library / "big_copy.bin")]


@pytest.mark.slow
def test_the_environment_and_the_default_file_are_read_too(
    library: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    no_daemon_and_no_default_config: Path,
) -> None:
    # The state directory comes from the default configuration file; no daemon answers on the
    # default socket, so the store there is read.
    state = tmp_path / "configured-state"
    (no_daemon_and_no_default_config / "isccd.toml").write_text(
        f'[store]\nstate_dir = "{state}"\n', encoding="utf-8"
    )
    status, _, err = run(["scan", str(library)], capsys)
    assert status == 0, err
    assert (state / "isccd.db").is_file()
    _, found, _ = run(["dupes"], capsys)
    assert len(found["groups"]) == 2
    monkeypatch.setenv("ISCCD_MATCH__MIN_SIZE", "100000")
    _, found, _ = run(["dupes"], capsys)
    assert [_names(g) for g in found["groups"]] == [["big.bin", "big_copy.bin"]]


def test_an_invalid_configuration_is_one_line_and_exit_78(
    library: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = str(tmp_path / "state")
    bad = tmp_path / "bad.toml"
    bad.write_text("[match]\nmin_size = -1\n", encoding="utf-8")
    target = str(library / "other.txt")
    for command in (
        ["scan", "--state", state, str(library)],
        ["dupes", "--state", state],
        ["get", "--state", state, target],
        ["similar", "--state", state, target],
    ):
        status, out, err = run([*command, "--config", str(bad)], capsys)
        assert status == 78, command
        assert (
            err.startswith("isccd: invalid configuration: match.min_size") and err.count("\n") == 1
        )
        assert out == ""
    # An explicit file that is missing is an error, not the defaults.
    status, _, err = run(["dupes", "--state", state, "--config", str(tmp_path / "no.toml")], capsys)
    assert status == 78 and "no.toml: cannot read" in err
    monkeypatch.setenv("ISCCD_CODE__BITS", "100")
    status, _, err = run(["scan", "--state", state, str(library)], capsys)
    assert status == 78 and "ISCCD_CODE__BITS" in err


@pytest.mark.slow
def test_scan_codes_and_ignores_as_configured_and_flags_win(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "isccd.toml"
    config.write_text('[watch]\nignore = ["*.bin"]\n[code]\nbits = 128\n', encoding="utf-8")
    state = tmp_path / "state"
    root = _scan(library, state, capsys, "--config", str(config), "--ignore", "other.txt")
    assert (root["seen"], root["added"]) == (3, 3)  # two .bin files and other.txt ignored
    _, info, _ = run(["get", "--state", str(state), str(library / "docs/report.txt")], capsys)
    assert {_bits(code) for code in info["units"].values()} == {128}
    data = info["units"]["data"]
    content = (library / "docs/report.txt").read_bytes()
    assert data == iscc_core.gen_data_code_v0(io.BytesIO(content), bits=128)["iscc"]

    # Every legal unit length, as `isccd code` and the daemon take them; a flag beats the file.
    other = tmp_path / "other-state"
    _scan(library, other, capsys, "--config", str(config), "--bits", "96")
    _, info, _ = run(["get", "--state", str(other), str(library / "docs/report.txt")], capsys)
    assert {_bits(code) for code in info["units"].values()} == {96}
    with pytest.raises(SystemExit) as refused:
        run(["scan", "--state", str(other), "--bits", "100", str(library)], capsys)
    assert refused.value.code == 2 and "invalid choice: 100" in capsys.readouterr().err


def _log_after(state: Path, seq: int) -> tuple[list[Event], str | None]:
    """The events after ``seq`` in the index's log, and its recorded duplicate policy."""
    store = open_store(state_url(state), readonly=True)
    try:
        return store.events_since(seq, limit=100_000), store.get_property(policy.PROPERTY)
    finally:
        store.close()


def _dup_events(events: list[Event]) -> list[Event]:
    return [e for e in events if e.type.value.startswith("dup.")]


@pytest.mark.slow
def test_a_scan_under_another_policy_re_evaluates_the_index_once(
    library: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = tmp_path / "state"
    _scan(library, state, capsys)
    logged, recorded = _log_after(state, 0)
    last = logged[-1].seq
    strict = tmp_path / "strict.toml"
    strict.write_text("[match]\ntext = 0\ndata = 0\nmin_size = 100000\n", encoding="utf-8")

    # Readers filter by their own policy, and never write.
    for command in (
        ["dupes", "--near"],
        ["get", str(library / "docs/report.txt")],
        ["similar", str(library / "docs/draft.txt")],
    ):
        status, _, err = run([*command, "--state", str(state), "--config", str(strict)], capsys)
        assert status == 0, err
    assert _log_after(state, last) == ([], recorded)

    # The texts are below min_size now, and the draft beyond 0 bits from the report: what ended
    # is logged by the scan's open, before the scan itself.
    screen, captured = Terminal(), sys.stdout
    monkeypatch.setattr(sys, "stdout", screen)
    assert main(["scan", "--state", str(state), "--config", str(strict), str(library)]) == 0
    monkeypatch.setattr(sys, "stdout", captured)
    assert "duplicate policy changed since the index was written" in screen.getvalue()
    events, _ = _log_after(state, last)
    resolved = _dup_events(events)
    assert {(e.type, e.data["reason"]) for e in resolved} == {(EventType.DUP_RESOLVED, "threshold")}
    assert resolved == events[: len(resolved)]
    [exact] = [e for e in resolved if e.data["kind"] == "exact"]
    assert _names_of(exact) == {"report.txt", "backup_report.txt"}
    near = [e for e in resolved if e.data["kind"] == "near"]
    texts = {"report.txt", "backup_report.txt", "draft.txt", "other.txt"}
    assert near and all(_names_of(e) <= texts and len(_names_of(e)) > 1 for e in near)
    assert any("draft.txt" in _names_of(e) for e in near)

    # The same policy again: nothing is re-evaluated.
    last = events[-1].seq
    _scan(library, state, capsys, "--config", str(strict))
    events, _ = _log_after(state, last)
    assert [e.type for e in events] == [EventType.SCAN_DONE]

    # Back to the defaults: the relations are found again.
    _scan(library, state, capsys)
    events, _ = _log_after(state, events[-1].seq)
    found = _dup_events(events)
    assert {e.type for e in found} == {EventType.DUP_EXACT, EventType.DUP_NEAR}
    [exact] = [e for e in found if e.type is EventType.DUP_EXACT]
    assert _names_of(exact) == {"report.txt", "backup_report.txt"}


def _names_of(event: Event) -> set[str]:
    """The file an event is about and the others it names."""
    return {Path(event.path).name, *(Path(o["path"]).name for o in event.data["others"])}


def _bits(code: str) -> int:
    """The length of a unit's body, from the unit itself."""
    return len(iscc_core.iscc_decode(code)[4]) * 8
