"""The daemon's socket read without the settings agrees with the settings, or gives up."""

from __future__ import annotations

from pathlib import Path

import pytest

from isccd.cli.quicksocket import configured_socket
from isccd.config import load_index_config


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    etc = tmp_path / "etc"
    etc.mkdir(exist_ok=True)
    return {
        "HOME": str(tmp_path / "home"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "CONFIGURATION_DIRECTORY": str(etc),
        **extra,
    }


@pytest.mark.parametrize(
    ("toml", "extra"),
    [
        (None, {}),
        ("", {}),
        ("[watch]\nsettle = 2.0\n", {}),
        ('[server]\nsocket = "/srv/isccd/../isccd/daemon.sock"\n', {}),
        ('[server]\nsocket = "/srv/a.sock"\n', {"ISCCD_SERVER__SOCKET": "/srv/b.sock"}),
        (None, {"isccd_server__socket": "/srv/lower.sock"}),
    ],
)
@pytest.mark.parametrize("explicit", [False, True])
def test_it_names_the_socket_the_settings_name(
    tmp_path: Path, toml: str | None, extra: dict[str, str], explicit: bool
) -> None:
    env = _env(tmp_path, **extra)
    config: Path | None = None
    if toml is not None:
        config = tmp_path / "etc" / "isccd.toml"  # the default file
        config.write_text(toml, encoding="utf-8")
    given = config if explicit else None
    quick = configured_socket(given, env)
    assert quick is not None
    assert quick == load_index_config(given, env=env).socket


@pytest.mark.parametrize(
    ("toml", "extra"),
    [
        ("[server\n", {}),  # not TOML
        ('[server]\nsocket = "relative.sock"\n', {}),
        ("[server]\nsocket = 3\n", {}),
        ("server = 1\n", {}),
        (None, {"ISCCD_SERVER__SOCKET": "relative.sock"}),
        (None, {"ISCCD_SERVER": '{"socket": "/srv/json.sock"}'}),
        (None, {"ISCCD_SERVER__SOCKET": "/srv/a.sock", "ISCCD_SERVER__SOCKET_MODE": "0600"}),
    ],
)
def test_anything_unusual_is_left_to_the_settings(
    tmp_path: Path, toml: str | None, extra: dict[str, str]
) -> None:
    env = _env(tmp_path, **extra)
    if toml is not None:
        (tmp_path / "etc" / "isccd.toml").write_text(toml, encoding="utf-8")
    assert configured_socket(None, env) is None


def test_a_missing_explicit_file_is_left_to_the_settings(tmp_path: Path) -> None:
    assert configured_socket(tmp_path / "no.toml", _env(tmp_path)) is None
