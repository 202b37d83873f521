"""From settings to component options: default places follow the environment, settings reach
the components, and roots are checked on the machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from isccd.config import build_config
from isccd.errors import ConfigError
from isccd.hashing import compute_record
from isccd.model import UnitType
from isccd.pipeline import profile_is_stale
from isccd.settings import Settings, env_name, load_settings
from isccd.store import state_url
from tests.test_settings import EXAMPLES


def _settings(tmp_path: Path, **watch: object):  # type: ignore[no-untyped-def]
    return load_settings(env={}, overrides={"watch": {"roots": [tmp_path], **watch}})


def test_default_places_follow_systemd_and_xdg(tmp_path: Path) -> None:
    env = {"STATE_DIRECTORY": "/var/lib/isccd", "RUNTIME_DIRECTORY": "/run/isccd"}
    config = build_config(_settings(tmp_path), env=env)
    assert config.state_dir == Path("/var/lib/isccd")
    assert config.store_url == state_url("/var/lib/isccd")
    assert config.server.socket_path == Path("/run/isccd/isccd.sock")


def test_settings_reach_the_components(tmp_path: Path) -> None:
    settings = load_settings(
        env={
            "ISCCD_MATCH__IMAGE": "off",
            "ISCCD_MATCH__MIN_SIZE": "4096",
            "ISCCD_HASHING__WORKERS": "3",
            "ISCCD_HASHING__MAX_IN_FLIGHT": "7",
        },
        overrides={"watch": {"roots": [tmp_path], "settle": 1.5, "force_polling": True}},
    )
    config = build_config(settings, env={})
    assert config.pipeline.thresholds.image is None
    assert config.pipeline.thresholds.min_size == 4096
    assert config.workers.workers == 3
    assert config.workers.max_in_flight == 7
    assert config.debounce.settle == 1.5
    assert config.watcher.force_polling
    assert config.roots == (str(tmp_path.resolve()),)


def test_roots_are_checked_on_the_machine(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no directory to watch"):
        build_config(load_settings(env={}), env={})
    # A missing root is accepted (an unplugged disk), the daemon watches it once it appears.
    missing = build_config(_settings(tmp_path / "missing"), env={})
    assert missing.roots == (str(tmp_path.resolve() / "missing"),)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="is not a directory"):
        build_config(_settings(tmp_path / "file"), env={})
    (tmp_path / "real" / "inner").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    overlapping = {"roots": [tmp_path / "link", tmp_path / "real" / "inner"]}
    with pytest.raises(ConfigError, match="overlap once symbolic links are resolved"):
        build_config(load_settings(env={}, overrides={"watch": overlapping}), env={})


def test_a_bad_ignore_pattern_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"watch\.ignore: invalid ignore pattern"):
        build_config(_settings(tmp_path, ignore=["[z-a]"]), env={})


def test_own_directories_inside_a_root_are_ignored(tmp_path: Path) -> None:
    env = {"STATE_DIRECTORY": str(tmp_path / ".local/state/isccd"), "XDG_RUNTIME_DIR": "/run/u"}
    config = build_config(_settings(tmp_path), env=env)
    assert "/.local/state/isccd/" in config.scan.ignore
    with pytest.raises(ConfigError, match="holds isccd's own files"):
        build_config(_settings(tmp_path), env={"STATE_DIRECTORY": str(tmp_path)})


def test_code_settings_reach_the_workers_the_versions_and_the_pipeline(tmp_path: Path) -> None:
    examples = {name: example for (section, name), example in EXAMPLES.items() if section == "code"}
    env = {env_name(("code", name)): text for name, (text, _) in examples.items()}
    config = build_config(_settings_from(tmp_path, env), env={})
    code = config.workers.code
    for name, (_, expected) in examples.items():
        assert getattr(code, name) == expected, name
    assert config.pipeline.wide is True
    versions = config.pipeline.versions
    assert (versions["bits"], versions["fps"]) == ("128", "2")
    # The tools are looked up where the settings say: these paths hold none.
    assert versions["fpcalc"] == versions["ffmpeg"] == versions["ffprobe"] == "missing"


def test_a_new_bit_length_makes_every_stored_unit_stale(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("Words that are coded at one length, then another. " * 20)
    default = build_config(_settings_from(tmp_path, {}), env={})
    stored = compute_record(str(notes), default.workers.code)
    assert {u.type for u in stored.units} == {
        UnitType.META,
        UnitType.TEXT,
        UnitType.DATA,
        UnitType.INSTANCE,
    }
    same = build_config(_settings_from(tmp_path, {"ISCCD_CODE__TOOL_TIMEOUT": "5"}), env={})
    assert not any(profile_is_stale(u.profile, same.pipeline.versions) for u in stored.units)
    fps = build_config(_settings_from(tmp_path, {"ISCCD_CODE__VIDEO_FPS": "2"}), env={})
    assert not any(profile_is_stale(u.profile, fps.pipeline.versions) for u in stored.units)

    longer = build_config(_settings_from(tmp_path, {"ISCCD_CODE__BITS": "128"}), env={})
    assert all(profile_is_stale(u.profile, longer.pipeline.versions) for u in stored.units)
    # What the workers compute again is current: no unit is recomputed twice.
    again = compute_record(str(notes), longer.workers.code)
    assert {u.type for u in again.units} == {u.type for u in stored.units}
    assert {u.bits for u in again.units} == {128}
    assert not any(profile_is_stale(u.profile, longer.pipeline.versions) for u in again.units)


def test_a_tool_timeout_beyond_the_file_timeout_is_a_config_error(tmp_path: Path) -> None:
    env = {"ISCCD_CODE__TOOL_TIMEOUT": "900", "ISCCD_HASHING__FILE_TIMEOUT": "600"}
    with pytest.raises(ConfigError, match=r"code\.tool_timeout: 900 s is longer than hashing"):
        build_config(_settings_from(tmp_path, env), env={})
    env["ISCCD_HASHING__FILE_TIMEOUT"] = "900"
    assert build_config(_settings_from(tmp_path, env), env={}).workers.code.tools.timeout == 900


def _settings_from(root: Path, env: dict[str, str]) -> Settings:
    return load_settings(env=env, overrides={"watch": {"roots": [root]}})
