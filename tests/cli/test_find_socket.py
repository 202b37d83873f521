"""The order in which client commands find the daemon's socket (:func:`find_socket`)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from isccd.cli.connect import find_socket
from isccd.cli.main import main
from isccd.errors import ConfigError


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "RUNTIME_DIRECTORY": str(tmp_path / "run"),
        "CONFIGURATION_DIRECTORY": str(tmp_path / "etc"),
        **extra,
    }


def _args(socket: Path | None = None, config: Path | None = None) -> argparse.Namespace:
    return argparse.Namespace(socket=socket, config=config)


def test_flag_then_variable_then_file_then_default(tmp_path: Path) -> None:
    config = tmp_path / "isccd.toml"
    config.write_text('[server]\nsocket = "/from/file.sock"\n')
    env = _env(tmp_path, ISCCD_SERVER__SOCKET="/from/env.sock")
    flag = Path("/from/flag.sock")
    assert find_socket(_args(flag, config), env) == flag
    assert find_socket(_args(None, config), env) == Path("/from/env.sock")
    # Variable names are not case-sensitive, as for the daemon's settings.
    lower = _env(tmp_path, isccd_server__socket="/from/lower.sock")
    assert find_socket(_args(None, config), lower) == Path("/from/lower.sock")
    assert find_socket(_args(None, config), _env(tmp_path)) == Path("/from/file.sock")
    assert find_socket(_args(), _env(tmp_path)) == tmp_path / "run" / "isccd.sock"
    # The default configuration file counts when no --config is given.
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "isccd.toml").write_text('[server]\nsocket = "/default/file.sock"\n')
    assert find_socket(_args(), _env(tmp_path)) == Path("/default/file.sock")
    # A file without [server] socket leaves the default.
    (tmp_path / "etc" / "isccd.toml").write_text("[watch]\nroots = []\n")
    assert find_socket(_args(), _env(tmp_path)) == tmp_path / "run" / "isccd.sock"


def test_commands_without_socket_options_find_it_too(tmp_path: Path) -> None:
    assert find_socket(argparse.Namespace(), _env(tmp_path)) == tmp_path / "run" / "isccd.sock"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[server]\nsocket = "relative.sock"\n', "must be an absolute path"),
        ("[server\n", "not valid TOML"),
    ],
)
def test_a_bad_configuration_is_refused(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "isccd.toml"
    config.write_text(text)
    with pytest.raises(ConfigError, match=message):
        find_socket(_args(None, config), _env(tmp_path))
    with pytest.raises(ConfigError, match="cannot read"):
        find_socket(_args(None, tmp_path / "missing.toml"), _env(tmp_path))


def test_a_relative_socket_from_the_variable_is_refused_as_the_daemon_refuses_it(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError, match="not an absolute path"):
        find_socket(_args(), _env(tmp_path, ISCCD_SERVER__SOCKET="relative.sock"))


def test_a_socket_path_that_is_not_a_socket_is_said_to_be_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "isccd.toml"
    plain.write_text("")
    for path in (plain, tmp_path):
        assert main(["status", "--socket", str(path)]) == 1
        assert "exists and is not a socket" in capsys.readouterr().err
    assert main(["status", "--socket", str(tmp_path / "absent.sock")]) == 1
    assert "no isccd daemon is listening" in capsys.readouterr().err
