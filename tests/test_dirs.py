"""Default locations follow systemd's directories for the system service and XDG for users."""

from __future__ import annotations

from pathlib import Path

from isccd import dirs


def test_user_paths_follow_xdg() -> None:
    env = {"HOME": "/home/ann", "XDG_RUNTIME_DIR": "/run/user/1000"}
    assert dirs.default_state_dir(env, euid=1000) == Path("/home/ann/.local/state/isccd")
    assert dirs.default_socket_path(env, euid=1000) == Path("/run/user/1000/isccd/isccd.sock")
    assert dirs.default_config_path(env, euid=1000) == Path("/home/ann/.config/isccd/isccd.toml")
    assert dirs.default_cache_dir(env, euid=1000) == Path("/home/ann/.cache/isccd")
    env["XDG_STATE_HOME"] = "/data/state"
    assert dirs.default_state_dir(env, euid=1000) == Path("/data/state/isccd")


def test_user_without_a_session_keeps_the_socket_in_the_state_dir() -> None:
    env = {"HOME": "/home/ann"}
    assert dirs.default_socket_path(env, euid=1000) == Path(
        "/home/ann/.local/state/isccd/isccd.sock"
    )


def test_root_uses_system_directories() -> None:
    assert dirs.default_state_dir({}, euid=0) == Path("/var/lib/isccd")
    assert dirs.default_socket_path({}, euid=0) == Path("/run/isccd/isccd.sock")
    assert dirs.default_config_path({}, euid=0) == Path("/etc/isccd/isccd.toml")


def test_systemd_directories_win() -> None:
    env = {
        "STATE_DIRECTORY": "/var/lib/isccd:/var/lib/other",
        "RUNTIME_DIRECTORY": "/run/isccd",
        "CONFIGURATION_DIRECTORY": "/etc/isccd",
        "CACHE_DIRECTORY": "/var/cache/isccd",
        "HOME": "/home/ann",
    }
    assert dirs.default_state_dir(env, euid=1000) == Path("/var/lib/isccd")
    assert dirs.default_socket_path(env, euid=1000) == Path("/run/isccd/isccd.sock")
    assert dirs.default_config_path(env, euid=1000) == Path("/etc/isccd/isccd.toml")
    assert dirs.default_cache_dir(env, euid=1000) == Path("/var/cache/isccd")
