"""From settings to component options: defaults agree with the components' own, default places
follow the environment, and roots are checked on the machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from isccd.daemon.config import build_config
from isccd.errors import ConfigError
from isccd.match import Thresholds
from isccd.pipeline import PipelineOptions
from isccd.server import ServerOptions
from isccd.settings import load_settings
from isccd.store import state_url


def _settings(tmp_path: Path, **watch: object):  # type: ignore[no-untyped-def]
    return load_settings(env={}, overrides={"watch": {"roots": [tmp_path], **watch}})


def test_defaults_agree_with_the_components(tmp_path: Path) -> None:
    config = build_config(_settings(tmp_path), env={"STATE_DIRECTORY": "/var/lib/x"})
    assert config.pipeline.thresholds == Thresholds()
    defaults = PipelineOptions()
    assert config.pipeline.tombstone_retention == defaults.tombstone_retention
    assert config.pipeline.event_retention == defaults.event_retention
    server = ServerOptions(socket_path=config.server.socket_path)
    assert config.server == server
    assert config.debounce.settle == 0.25
    assert config.workers.workers >= 1


def test_default_places_follow_systemd_and_xdg(tmp_path: Path) -> None:
    env = {"STATE_DIRECTORY": "/var/lib/isccd", "RUNTIME_DIRECTORY": "/run/isccd"}
    config = build_config(_settings(tmp_path), env=env)
    assert config.state_dir == Path("/var/lib/isccd")
    assert config.store_url == state_url("/var/lib/isccd")
    assert config.server.socket_path == Path("/run/isccd/isccd.sock")


def test_settings_reach_the_components(tmp_path: Path) -> None:
    settings = load_settings(
        env={"ISCCD_MATCH__IMAGE": "off", "ISCCD_HASHING__WORKERS": "3"},
        overrides={"watch": {"roots": [tmp_path], "settle": 1.5, "force_polling": True}},
    )
    config = build_config(settings, env={})
    assert config.pipeline.thresholds.image is None
    assert config.workers.workers == 3
    assert config.debounce.settle == 1.5
    assert config.watcher.force_polling
    assert config.roots == (str(tmp_path.resolve()),)


def test_roots_are_checked_on_the_machine(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no directory to watch"):
        build_config(load_settings(env={}), env={})
    with pytest.raises(ConfigError, match="does not exist"):
        build_config(_settings(tmp_path / "missing"), env={})
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
