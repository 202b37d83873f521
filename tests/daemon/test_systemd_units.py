"""The systemd units: what the daemon relies on is declared, the system unit is hardened to an
exposure of 2.0 or better, and systemd's own verifier accepts them, the hook template too."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_UNIT = ROOT / "systemd" / "isccd.service"
USER_UNIT = ROOT / "systemd" / "user" / "isccd.service"
HOOK_UNIT = ROOT / "systemd" / "user" / "isccd-hook@.service"


def _directives(unit: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in unit.read_text(encoding="utf-8").splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, value = line.split("=", 1)
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def _analyze() -> str:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed (Debian package systemd)")
    return tool


@pytest.mark.parametrize("unit", [SYSTEM_UNIT, USER_UNIT], ids=["system", "user"])
def test_the_units_declare_what_the_daemon_relies_on(unit: Path) -> None:
    d = _directives(unit)
    assert d["Type"] == ["notify"]
    assert d["NotifyAccess"] == ["main"]
    assert "WatchdogSec" in d
    assert d["ExecStart"][0].endswith("isccd run")
    assert d["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    # A bad configuration (78), an unwritable state directory (73) or store (74) is not retried.
    assert d["RestartPreventExitStatus"] == ["78 74 73"]
    assert any(e.startswith("NUMBA_CACHE_DIR=") for e in d["Environment"])


def test_the_system_unit_owns_its_directories_and_reads_the_rest() -> None:
    d = _directives(SYSTEM_UNIT)
    for key in ("StateDirectory", "RuntimeDirectory", "ConfigurationDirectory", "CacheDirectory"):
        assert d[key] == ["isccd"], key
    assert "NUMBA_CACHE_DIR=/var/cache/isccd/numba" in d["Environment"]
    assert d["ProtectSystem"] == ["strict"]
    assert d["ProtectHome"] == ["read-only"]
    assert d["RestrictAddressFamilies"] == ["AF_UNIX"]


def test_the_system_unit_is_hardened() -> None:
    result = subprocess.run(
        [_analyze(), "security", "--offline=true", str(SYSTEM_UNIT)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    match = re.search(r"Overall exposure level for isccd\.service: ([0-9.]+)", result.stdout)
    assert match, result.stdout + result.stderr
    assert float(match.group(1)) <= 2.0


@pytest.mark.parametrize(
    "unit_file", [SYSTEM_UNIT, USER_UNIT, HOOK_UNIT], ids=["system", "user", "hook"]
)
def test_systemd_verifies_the_unit(tmp_path: Path, unit_file: Path) -> None:
    tool = _analyze()
    # The verifier checks that ExecStart='s program exists; isccd is not installed at
    # /opt/isccd or ~/.local/bin here: /bin/true stands for it, with the arguments kept.
    # The user units are verified by the system manager too (a user manager needs a session):
    # their syntax and directives are checked alike.
    text = unit_file.read_text(encoding="utf-8")
    unit = tmp_path / unit_file.name
    program = re.compile(r"^ExecStart=\S+", flags=re.M)
    unit.write_text(program.sub("ExecStart=/bin/true", text))
    result = subprocess.run(
        [tool, "verify", str(unit)], capture_output=True, text=True, timeout=60, check=False
    )
    if "Failed to initialize manager" in result.stderr:
        pytest.skip(f"systemd-analyze verify cannot run here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    assert unit_file.name not in result.stderr, result.stderr


def test_the_hook_template_runs_one_subscriber_per_hook_from_its_config() -> None:
    d = _directives(HOOK_UNIT)
    assert d["EnvironmentFile"] == ["%h/.config/isccd/hooks/%i.conf"]
    (start,) = d["ExecStart"]
    words = start.split()
    assert words[:2] == ["%h/.local/bin/isccd", "subscribe"]
    # The command line is one argument (${...}), the options split into words ($...).
    assert words[words.index("--exec") + 1] == "${ISCCD_HOOK_EXEC}"
    assert words[words.index("--cursor") + 1] == "%S/isccd/hooks/%i.cursor"
    assert words[-1] == "$ISCCD_HOOK_OPTIONS"
    assert d["StateDirectory"] == ["isccd/hooks"] and d["StateDirectoryMode"] == ["0700"]
    # A usage error, an unusable cursor, a failed command and a bad configuration need
    # someone; the rest (no daemon yet, a cursor not written) is retried.
    assert d["RestartPreventExitStatus"] == ["2 65 75 78"]
    assert d["Restart"] == ["on-failure"]
    # Commands running are let finish within their timeout (60 s) when the unit stops.
    assert d["KillMode"] == ["mixed"] and d["TimeoutStopSec"] == ["90s"]


FLEET_DROP_IN = ROOT / "systemd" / "isccd-fleet.conf"


def _installed_with_drop_in(root: Path) -> None:
    """The system unit and the fleet drop-in, as the drop-in's comment installs them, under
    ``root`` (systemd's --root)."""
    units = root / "etc" / "systemd" / "system"
    (units / "isccd.service.d").mkdir(parents=True)
    shutil.copy(SYSTEM_UNIT, units / "isccd.service")
    shutil.copy(FLEET_DROP_IN, units / "isccd.service.d" / "fleet.conf")


def test_the_fleet_drop_in_opens_just_the_network_and_stays_hardened(tmp_path: Path) -> None:
    tool = _analyze()
    _installed_with_drop_in(tmp_path)
    result = subprocess.run(
        [tool, "security", "--offline=true", f"--root={tmp_path}", "isccd.service"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    match = re.search(r"Overall exposure level for isccd\.service: ([0-9.]+)", result.stdout)
    assert match, result.stdout + result.stderr
    assert float(match.group(1)) <= 2.5
    # Applied on top of the unit: the network is open (TCP), and nothing else is.
    verdicts = {
        line.split()[1]: line.split()[0]
        for line in result.stdout.splitlines()
        if line[:1] in ("✓", "✗")
    }
    assert verdicts["PrivateNetwork="] == "✗"
    assert verdicts["RestrictAddressFamilies=~AF_(INET|INET6)"] == "✗"
    for still_closed in (
        "RestrictAddressFamilies=~AF_PACKET",
        "RestrictAddressFamilies=~AF_NETLINK",
        "RestrictAddressFamilies=~…",
        "NoNewPrivileges=",
        "ProtectSystem=",
    ):
        assert verdicts[still_closed] == "✓", still_closed
    d = _directives(FLEET_DROP_IN)
    assert d["RestrictAddressFamilies"] == ["", "AF_UNIX AF_INET AF_INET6"]
    assert d["PrivateNetwork"] == ["no"] and "IPAddressAllow" in d
    assert "IPAddressDeny" not in d  # the unit's IPAddressDeny=any stays in force
