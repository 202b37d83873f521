"""Settings: the documented file equals the defaults, every key has an environment override,
precedence is flags > environment > file > defaults, and bad values give one clear message."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pydantic
import pytest

from isccd.errors import ConfigError
from isccd.settings import Settings, env_name, load_settings, setting_defaults

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "config" / "isccd.toml"

#: A valid value that differs from the default for every setting, as an environment string,
#: and the value it must parse to. A new setting fails test_every_setting_has_an_override until
#: it is listed here.
EXAMPLES: dict[tuple[str, str], tuple[str, Any]] = {
    ("watch", "roots"): ("/srv/a:/srv/b", (Path("/srv/a"), Path("/srv/b"))),
    ("watch", "settle"): ("0.5", 0.5),
    ("watch", "max_delay"): ("9", 9.0),
    ("watch", "max_open_delay"): ("90", 90.0),
    ("watch", "poll_interval"): ("2.5", 2.5),
    ("watch", "force_polling"): ("true", True),
    ("watch", "reconcile_interval"): ("0", 0.0),
    ("watch", "max_pending"): ("500", 500),
    ("watch", "follow_symlinks"): ("1", True),
    ("watch", "folder_settle"): ("0", 0.0),
    ("watch", "ignore"): ('["*.tmp"]', ("*.tmp",)),
    ("store", "state_dir"): ("/var/tmp/isccd", Path("/var/tmp/isccd")),
    ("store", "url"): (
        "postgresql://isccd@db.example/isccd?sslmode=verify-full",
        "postgresql://isccd@db.example/isccd?sslmode=verify-full",
    ),
    ("store", "host"): ("media-01", "media-01"),
    ("store", "tombstone_days"): ("1.5", 1.5),
    ("store", "event_days"): ("7", 7.0),
    ("hashing", "workers"): ("3", 3),
    ("hashing", "max_in_flight"): ("12", 12),
    ("hashing", "shutdown_timeout"): ("2", 2.0),
    ("hashing", "file_timeout"): ("60", 60.0),
    ("hashing", "worker_memory"): ("512", 512),
    ("hashing", "idle_timeout"): ("2.5", 2.5),
    ("code", "bits"): ("128", 128),
    ("code", "wide"): ("true", True),
    ("code", "meta"): ("false", False),
    ("code", "extract_meta"): ("0", False),
    ("code", "max_image_pixels"): ("1000000", 1_000_000),
    ("code", "max_text_chars"): ("5000", 5000),
    ("code", "video_fps"): ("2", 2),
    ("code", "tool_timeout"): ("30.5", 30.5),
    ("code", "fpcalc"): ("/opt/chromaprint/bin/fpcalc", "/opt/chromaprint/bin/fpcalc"),
    ("code", "ffmpeg"): ("ffmpeg7", "ffmpeg7"),
    ("code", "ffprobe"): ("/usr/local/bin/ffprobe", "/usr/local/bin/ffprobe"),
    ("match", "data"): ("off", None),
    ("match", "text"): ("10", 10),
    ("match", "image"): ("6", 6),
    ("match", "audio"): ("2", 2),
    ("match", "video"): ("5", 5),
    ("match", "meta"): ("20", 20),
    ("match", "min_size"): ("4096", 4096),
    ("match", "max_links"): ("32", 32),
    ("server", "socket"): ("/tmp/i.sock", Path("/tmp/i.sock")),
    ("server", "socket_mode"): ("0600", 0o600),
    ("server", "socket_group"): ("isccd", "isccd"),
    ("server", "subscriber_queue"): ("64", 64),
    ("server", "max_clients"): ("8", 8),
    ("server", "idle_timeout"): ("0", 0.0),
    ("server", "max_reply_bytes"): ("1048576", 1 << 20),
    ("server", "send_timeout"): ("0", 0.0),
    ("log", "level"): ("DEBUG", "debug"),
    ("log", "format"): ("json", "json"),
}

#: Settings whose example is only valid along with others.
COMPANIONS: dict[tuple[str, str], dict[str, str]] = {
    ("code", "wide"): {"ISCCD_CODE__BITS": "128"},
}


def _fields() -> list[tuple[str, str]]:
    return list(setting_defaults())


def test_the_documented_file_equals_the_defaults() -> None:
    assert load_settings(CONFIG, env={}) == load_settings(None, env={})


def test_the_documented_file_covers_every_setting_with_a_comment() -> None:
    text = CONFIG.read_text(encoding="utf-8")
    sections = dict(re.findall(r"^\[(\w+)\]\n(.*?)(?=^\[|\Z)", text, flags=re.M | re.S))
    assert set(sections) == set(Settings.model_fields)
    for section, name in _fields():
        body = sections[section]
        line = re.search(rf"^(# )?{name} = .*$", body, flags=re.M)
        assert line, f"[{section}] {name} is not documented in config/isccd.toml"
        before = body[: line.start()].rstrip("\n").splitlines()
        assert before and before[-1].startswith("#"), f"[{section}] {name} has no comment"


def test_every_setting_has_an_override() -> None:
    assert set(EXAMPLES) == set(_fields())
    defaults = load_settings(env={})
    for (section, name), (text, expected) in EXAMPLES.items():
        companions = COMPANIONS.get((section, name), {})
        settings = load_settings(env={env_name((section, name)): text, **companions})
        got = getattr(getattr(settings, section), name)
        assert got == expected, (section, name)
        assert got != getattr(getattr(defaults, section), name), (section, name)


def test_every_legal_unit_length_is_accepted() -> None:
    # ISO 24138: a unit's length is a multiple of 32 up to 256 bits; an ISCC-CODE takes 64 or more.
    for bits in range(64, 257, 32):
        assert load_settings(env={"ISCCD_CODE__BITS": str(bits)}).code.bits == bits
    for bits in (0, 63, 65, 288):
        with pytest.raises(ConfigError, match=r"code\.bits"):
            load_settings(env={"ISCCD_CODE__BITS": str(bits)})


def test_flags_beat_environment_beat_file_beat_defaults(tmp_path: Path) -> None:
    config = tmp_path / "isccd.toml"
    config.write_text(
        '[watch]\nroots = ["/from/file"]\nsettle = 1.0\nmax_delay = 7.0\n', encoding="utf-8"
    )
    env = {"ISCCD_WATCH__ROOTS": "/from/env", "ISCCD_WATCH__SETTLE": "2.0"}
    settings = load_settings(config, env=env, overrides={"watch": {"roots": [Path("/flag")]}})
    assert settings.watch.roots == (Path("/flag"),)
    assert settings.watch.settle == 2.0
    assert settings.watch.max_delay == 7.0
    assert settings.watch.poll_interval == Settings().watch.poll_interval
    assert load_settings(config, env=env).watch.roots == (Path("/from/env"),)


def test_the_process_environment_is_read_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ISCCD_HASHING__WORKERS", "5")
    assert load_settings().hashing.workers == 5


def test_settings_are_frozen() -> None:
    settings = load_settings(env={})
    with pytest.raises(pydantic.ValidationError):
        settings.watch.settle = 3.0
    with pytest.raises(pydantic.ValidationError):
        settings.log = settings.log


@pytest.mark.parametrize(
    ("toml", "env", "expected"),
    [
        ("[watch]\nsettle = -1\n", {}, r"^invalid configuration: watch\.settle: .*greater than 0"),
        ("[watch]\nsetle = 1\n", {}, r"watch\.setle: unknown setting \(in .*isccd\.toml\)"),
        ("[wacth]\n", {}, r"wacth: unknown setting"),
        ('[watch]\nroots = ["data"]\n', {}, r"watch\.roots: 'data' is not an absolute path"),
        ('[watch]\nroots = ["/a", "/a/b"]\n', {}, r"watch\.roots: '/a/b' and '/a' overlap"),
        ('[log]\nlevel = "loud"\n', {}, r"log\.level: .*'debug'.*\(got 'loud'\)"),
        ('[server]\nsocket_mode = "rw"\n', {}, r"server\.socket_mode: 'rw' is not an octal"),
        ("", {"ISCCD_HASHING__WORKERS": "many"}, r"hashing\.workers: .*ISCCD_HASHING__WORKERS"),
        ("", {"ISCCD_WATCH__IGNORE": "*.tmp"}, r"ISCCD_WATCH__IGNORE: not valid JSON"),
        ("[watch\n", {}, r"isccd\.toml: not valid TOML"),
        ("[code]\nbits = 100\n", {}, r"code\.bits: 100 is not a unit length; use one of 64, 96,"),
        ("", {"ISCCD_CODE__BITS": "32"}, r"code\.bits: 32 is not .*ISCCD_CODE__BITS"),
        ("[code]\ntool_timeout = -5\n", {}, r"code\.tool_timeout: .*greater than 0"),
        ("[code]\nwide = true\n", {}, r"code\.wide: .*needs bits of 128 or more"),
        ("[code]\nmax_image_pixels = 0\n", {}, r"code\.max_image_pixels: .*greater than"),
        ("[code]\nffmpeg = 'bin/ffmpeg'\n", {}, r"code\.ffmpeg: 'bin/ffmpeg' is neither"),
        ("[match]\nmin_size = -1\n", {}, r"match\.min_size: .*greater than or equal to 0"),
    ],
)
def test_invalid_settings_name_the_key_and_the_problem(
    tmp_path: Path, toml: str, env: dict[str, str], expected: str
) -> None:
    config = tmp_path / "isccd.toml"
    config.write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError, match=expected) as info:
        load_settings(config, env=env)
    assert "\n" not in str(info.value)


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml: cannot read"):
        load_settings(tmp_path / "nope.toml", env={})
