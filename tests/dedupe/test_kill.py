"""``isccd dedupe --apply`` killed with SIGKILL at random moments on 1,000 groups: no file is
ever lost (every original byte sequence is still at some path), the temporary names left by an
interrupted action are in the log, and ``--undo`` puts every file back where it was."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from isccd.dedupe.plan import Action
from isccd.dedupe.planfile import plan_document
from tests.dedupe.conftest import plan_of, write

GROUPS = 1_000
KILLS = 4


def _library(root: Path, seed: int) -> dict[str, bytes]:
    """``GROUPS`` pairs of equal files of 1-8 KiB in 50 folders; path -> bytes."""
    rng = random.Random(seed)
    files = {}
    for g in range(GROUPS):
        data = rng.randbytes(rng.randint(1024, 8192))
        for copy in ("a", "b"):
            path = root / f"dir{g % 50}" / f"{copy}{g}.bin"
            write(path, data, mtime=1_000_000 + (copy == "b"))
            files[str(path)] = data
    return files


def _digests(top: Path) -> dict[str, int]:
    """Every distinct content under ``top`` (temporary names included), and how often."""
    seen: dict[str, int] = {}
    for path in top.rglob("*"):
        if path.is_file() and not path.is_symlink():
            key = hashlib.sha256(path.read_bytes()).hexdigest()
            seen[key] = seen.get(key, 0) + 1
    return seen


def _intents(log: Path) -> int:
    try:
        return log.read_bytes().count(b'"op":"intent"')
    except FileNotFoundError:
        return 0


def _apply_and_kill(plan: Path, log: Path, action: list[str], at: int) -> int:
    """Run the plan; SIGKILL it once it has logged ``at`` intents (or let it finish)."""
    command = [sys.executable, "-m", "isccd", "dedupe", *action, "--plan", str(plan)]
    command += ["--apply", "--json", "--log", str(log)]
    # The plan's root is a watched root of this host (a plan may act on nothing else).
    env = {**os.environ, "ISCCD_WATCH__ROOTS": str(plan.parent / "root")}
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 120
    while proc.poll() is None and _intents(log) < at:
        assert time.monotonic() < deadline, "the run neither progressed nor ended"
        time.sleep(0.001)  # polling a real process's progress, not synchronising with it
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    return proc.wait(30)


@pytest.mark.slow
@pytest.mark.parametrize("action", [Action.MOVE, Action.LINK, Action.REMOVE])
def test_sigkill_at_random_moments_loses_nothing_and_undo_restores(
    tmp_path: Path, action: Action
) -> None:
    root = tmp_path / "root"
    attic = tmp_path / "attic"
    originals = _library(root, seed=len(action.value))
    wanted = {hashlib.sha256(d).hexdigest() for d in originals.values()}
    pairs = [[root / f"dir{g % 50}" / f"{c}{g}.bin" for c in "ab"] for g in range(GROUPS)]
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan_document(plan_of(root, pairs))))
    args = [f"--{action.value}"] + ([str(attic)] if action is Action.MOVE else [])
    rng = random.Random(7)
    logs = []
    for round_ in range(KILLS + 1):
        log = tmp_path / f"log{round_}.jsonl"
        logs.append(log)
        at = rng.randint(1, GROUPS // KILLS) if round_ < KILLS else GROUPS + 1
        status = _apply_and_kill(plan_file, log, args, at)
        assert status in (-signal.SIGKILL, 0, 1), status
        # After every kill, every original byte sequence is still somewhere.
        present = set(_digests(tmp_path))
        assert wanted <= present, f"lost {len(wanted - present)} contents after kill {round_}"
    assert status in (0, 1)  # the last run finished
    if action is Action.REMOVE:
        assert sum(p.exists() for p in map(Path, originals)) == GROUPS
    # Undo every run, newest first: every name holds its bytes again, nothing is left over.
    for log in reversed(logs):
        undo = subprocess.run(
            [sys.executable, "-m", "isccd", "dedupe", "--undo", str(log), "--json"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        report = json.loads(undo.stdout)
        cannot = [o for o in report["outcomes"] if o["status"] == "cannot"]
        assert not cannot and undo.returncode == 0, cannot
    for path, data in originals.items():
        assert Path(path).read_bytes() == data, path
    assert not list(tmp_path.rglob(".isccd-dedupe-*"))
    if attic.exists():
        assert not [p for p in attic.rglob("*") if p.is_file()]
