"""What the fault tests and ``bench/chaos.py`` share: trees and changes drawn from a seeded random
generator, the processes a daemon leaves, and the index compared with a fresh scan.

Everything random comes from the ``random.Random`` the caller passes, so that a run is repeated
exactly from its seed.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from isccd.store import DB_NAME, SqliteStore

WORDS = [f"w{i}" for i in range(400)]


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)) + "\n"


def make_tree(root: Path, rng: random.Random, count: int) -> list[Path]:
    """``count`` text files in a few directories: about a tenth exact copies of another file,
    a tenth near copies (a few words changed)."""
    made: list[Path] = []
    for i in range(count):
        folder = root / f"d{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"f{i:05}.txt"
        roll = rng.random()
        if made and roll < 0.1:
            path.write_bytes(rng.choice(made).read_bytes())
        elif made and roll < 0.2:
            words = rng.choice(made).read_text().split()
            for _ in range(3):
                words[rng.randrange(len(words))] = rng.choice(WORDS)
            path.write_text(" ".join(words) + "\n")
        else:
            path.write_text(_text(rng, rng.randrange(50, 400)))
        made.append(path)
    return made


def mutate(root: Path, rng: random.Random) -> str:
    """One random change under ``root``: create, modify, copy, rename or delete a file.

    Returns:
        What was done, for messages.
    """
    files = sorted(root.rglob("*.txt"))
    roll = rng.random()
    folder = root / f"d{rng.randrange(7)}"
    folder.mkdir(exist_ok=True)
    new = folder / f"n{rng.randrange(1_000_000):06}.txt"
    if not files or roll < 0.3:
        new.write_text(_text(rng, rng.randrange(50, 400)))
        return f"create {new}"
    victim = rng.choice(files)
    try:
        if roll < 0.5:
            with victim.open("a") as fh:
                fh.write(_text(rng, 20))
            return f"modify {victim}"
        if roll < 0.65:
            new.write_bytes(victim.read_bytes())
            return f"copy {victim} {new}"
        if roll < 0.8:
            victim.rename(new)
            return f"rename {victim} {new}"
        victim.unlink()
    except FileNotFoundError:
        return f"lost race on {victim}"
    return f"delete {victim}"


def descendants(pid: int) -> set[int]:
    """Every living process below ``pid`` (from ``/proc``)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces: split after it.
        fields = stat[stat.rindex(")") + 2 :].split()
        parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        children = {child for child, parent in parents.items() if parent in frontier}
        frontier = children - found
        found |= children
    return found


def wait_gone(pids: set[int], timeout: float = 30) -> set[int]:
    """Wait until none of ``pids`` lives (zombies count as gone); return those left."""
    deadline = time.monotonic() + timeout
    while True:
        left = {pid for pid in pids if _alive(pid)}
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rindex(")") + 2] != "Z"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What an index holds about a tree.

    Attributes:
        files: Path -> (datahash, the units). A Meta-Code made from a file name follows a
            rename, so it is compared too.
        groups: The duplicate groups, exact and near: (kind, unit, member paths).
        integrity: ``PRAGMA integrity_check``.
    """

    files: dict[str, tuple[str | None, tuple[tuple[str, str], ...]]]
    groups: frozenset[tuple[str, str, frozenset[str]]]
    integrity: list[str]


def snapshot(state: Path, root: Path) -> Snapshot:
    """Read the index in ``state`` (no daemon may be writing it)."""
    store = SqliteStore(state / DB_NAME, readonly=True)
    try:
        files = {
            f.path: (
                f.record.datahash,
                tuple((u.type.value, u.iscc) for u in f.record.units),
            )
            for f in store.files_under(str(root))
        }
    finally:
        store.close()
    with contextlib.closing(sqlite3.connect(f"file:{state / DB_NAME}?mode=ro", uri=True)) as db:
        integrity = [str(row[0]) for row in db.execute("PRAGMA integrity_check")]
    return Snapshot(files, _groups(state), integrity)


def _groups(state: Path) -> frozenset[tuple[str, str, frozenset[str]]]:
    command = [sys.executable, "-m", "isccd", "dupes", "--state", str(state), "--near", "--json"]
    out = subprocess.run(
        [*command, "--limit", "100000"], capture_output=True, text=True, check=True, env=_env()
    ).stdout
    return frozenset(
        (g["kind"], g["unit"], frozenset(m["path"] for m in g["members"]))
        for g in json.loads(out)["groups"]
    )


def fresh_scan(root: Path, state: Path) -> Snapshot:
    """Index ``root`` from nothing into ``state`` with ``isccd scan``, and read it."""
    subprocess.run(
        [sys.executable, "-m", "isccd", "scan", "--state", str(state), "--json", str(root)],
        capture_output=True,
        check=True,
        env=_env(),
    )
    return snapshot(state, root)


def _env() -> dict[str, str]:
    # No configuration file of this machine: only what the command line says.
    return {**os.environ, "CONFIGURATION_DIRECTORY": "/nonexistent"}
