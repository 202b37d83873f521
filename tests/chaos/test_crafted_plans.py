"""Crafted plan files (:mod:`tests.chaos.crafted`) are refused: exit 2, one line on stderr
naming the fault, no traceback, and nothing touched, neither under the roots nor outside.

The host watches two roots (its configuration says so; no daemon, no index of its own); the
crafted plans try to act outside them, to move into them, and to break the loader with NUL
bytes, deep nesting, huge numbers and wrong types. Most run in this process; a few run the real
command as a subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from isccd.cli.main import main
from isccd.dedupe.planfile import plan_document
from tests.chaos.crafted import Crafted, crafted_plans, special_plans
from tests.dedupe.conftest import plan_of, write

#: The crafted plans the command also runs as a real process.
IN_A_PROCESS = (
    "a private pair under its own root",
    "a NUL in the victim's path",
    "100,000 nested arrays",
    "an integer of 5,000 digits",
    "a move into another watched root",
    "a FIFO",
)


class Host:
    """Two watched roots, a private folder, a configuration naming the roots, and the
    crafted plans against them."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = base / "root"
        self.other = base / "other"
        self.private = base / "private"
        kept = write(self.root / "a.bin", b"the same bytes\n", mtime=1_000_000)
        write(self.root / "b.bin", b"the same bytes\n", mtime=2_000_000)
        write(self.private / "a.bin", b"private bytes\n", mtime=1_000_000)
        write(self.private / "b.bin", b"private bytes\n", mtime=2_000_000)
        self.other.mkdir()
        (base / "root-link").symlink_to(self.root)
        self.config = base / "isccd.toml"
        self.config.write_text(
            f"[watch]\nroots = {json.dumps([str(self.root), str(self.other)])}\n"
            f"[store]\nstate_dir = {json.dumps(str(base / 'state'))}\n"
            f"[server]\nsocket = {json.dumps(str(base / 'isccd.sock'))}\n"
        )
        self.valid = plan_document(plan_of(self.root, [[kept, self.root / "b.bin"]]))
        self.plans = {
            c.name: c
            for c in crafted_plans(self.valid, self.root, self.other, self.private)
            + special_plans(base / "special")
        }

    def files(self) -> dict[str, tuple[int, bytes]]:
        """Every file under the base folder (but the plans and logs): inode and bytes."""
        out = {}
        for where in (self.root, self.other, self.private):
            for p in where.rglob("*"):
                if p.is_file():
                    out[str(p)] = (p.stat().st_ino, p.read_bytes())
        return out

    def plan_file(self, crafted: Crafted) -> Path:
        if crafted.content is None:
            assert crafted.path is not None
            return crafted.path
        path = self.base / "plan.json"
        path.write_bytes(crafted.content)
        return path

    def argv(self, crafted: Crafted) -> list[str]:
        return ["dedupe", *crafted.args, "--plan", str(self.plan_file(crafted)), "--apply",
                "--log", str(self.base / "log.jsonl"), "--config", str(self.config)]  # fmt: skip


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Host:
    return Host(tmp_path_factory.mktemp("crafted"))


def _check(host: Host, status: int, err: str, before: dict[str, tuple[int, bytes]]) -> None:
    assert status == 2, err
    assert "Traceback" not in err and "\x1b" not in err and "\0" not in err
    assert err.startswith("isccd: ") and err.endswith("\n") and err.count("\n") == 1, err
    assert len(err) < 600, err
    assert host.files() == before
    assert not (host.other / "attic").exists() and not (host.root / "attic").exists()


def test_the_valid_plan_applies(host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    # The control: the same plan, unchanged, acts (on a copy of the host, to keep it whole).
    other = Host(host.base.parent / (host.base.name + "-valid"))
    status = main(other.argv(Crafted("valid", json.dumps(other.valid).encode())))
    _, err = capsys.readouterr()
    assert status == 0, err
    assert not (other.root / "b.bin").exists() and (other.root / "a.bin").exists()


def test_there_are_at_least_fifty_crafted_plans(host: Host) -> None:
    assert len(host.plans) >= 50


@pytest.mark.slow
def test_every_crafted_plan_is_refused(host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    refused = []
    for name, crafted in host.plans.items():
        before = host.files()
        status = main(host.argv(crafted))
        _, err = capsys.readouterr()
        try:
            _check(host, status, err, before)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None
        refused.append(name)
    assert len(refused) == len(host.plans) >= 50


@pytest.mark.slow
@pytest.mark.parametrize("name", IN_A_PROCESS)
def test_the_real_command_refuses_them_too(host: Host, name: str) -> None:
    crafted = host.plans[name]
    before = host.files()
    done = subprocess.run(
        [sys.executable, "-m", "isccd", *host.argv(crafted)],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    _check(host, done.returncode, done.stderr, before)
    assert done.stdout == ""
