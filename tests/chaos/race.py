"""The symlink-swap race, as an attacker who may write inside a root would run it.

``ROOT/race`` keeps changing between nothing, a symbolic link to a directory outside the roots
that holds a secret file, and a real directory (holding a decoy of the same name); meanwhile
clients send every request that takes a path, naming ``ROOT/race/secret``. The secret has an
indexed copy inside the root, so anything computed from the outside file shows: ``similar``
finds the copy at distance 0, and a record, reply or event carries the secret's datahash.

Importable, so that a benchmark can run it longer; :func:`run_race` returns its figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class RaceFiles:
    """The files of the race.

    Attributes:
        root: The watched root.
        outside: A directory outside every root, holding ``secret``.
        decoy: A directory outside the root holding another ``secret``, renamed in and out.
        copy: The indexed copy of the secret, inside the root.
    """

    root: Path
    outside: Path
    decoy: Path
    copy: Path

    @property
    def race(self) -> Path:
        """The name that keeps changing."""
        return self.root / "race"

    @property
    def target(self) -> str:
        """The path every request names."""
        return f"{self.race}/secret"


def make_files(root: Path, base: Path, seed: int) -> RaceFiles:
    """Create the secret, its copy inside ``root`` and the decoy (random, distinct contents)."""
    rng = random.Random(seed)
    secret = rng.randbytes(8192)
    files = RaceFiles(root, base / "outside", base / "decoy", root / "copy.bin")
    files.outside.mkdir()
    files.decoy.mkdir()
    (files.outside / "secret").write_bytes(secret)
    (files.decoy / "secret").write_bytes(rng.randbytes(8192))
    files.copy.write_bytes(secret)
    (root / "other.bin").write_bytes(rng.randbytes(8192))
    return files


@dataclass(slots=True)
class RaceFigures:
    """What one run did and found.

    Attributes:
        swaps: Changes of ``ROOT/race`` made.
        requests: Requests answered.
        by_command: Requests answered per command.
        events: Events the subscriber received.
        leaks: Replies and events computed from the outside file (each as its raw line).
    """

    swaps: int = 0
    requests: int = 0
    by_command: dict[str, int] = field(default_factory=dict)
    events: int = 0
    leaks: list[str] = field(default_factory=list)


def _swapper(files: RaceFiles, stop: threading.Event, figures: RaceFigures, seed: int) -> None:
    """Change ``ROOT/race`` until told to stop: a link to the outside, nothing, the decoy
    directory, nothing."""
    rng = random.Random(seed)
    race = files.race
    while not stop.is_set():
        if rng.random() < 0.2:
            files.decoy.rename(race)
            race.rename(files.decoy)
        else:
            race.symlink_to(files.outside)
            race.unlink()
        figures.swaps += 1


def _requests(files: RaceFiles) -> list[dict[str, Any]]:
    """Every request that takes a path, naming the raced path (or the raced directory)."""
    target, race = files.target, str(files.race)
    return [
        {"cmd": "similar", "path": target, "max_distance": 64},
        {"cmd": "get", "path": target},
        {"cmd": "similar", "path": target},
        {"cmd": "dupes", "root": race},
        {"cmd": "rescan", "path": race},
        {"cmd": "similar", "path": target, "max_distance": 64},
        {"cmd": "sync", "path": race},
        {"cmd": "subscribe", "roots": [race]},
        {"cmd": "unsubscribe"},
        {"cmd": "rescan"},
    ]


def leaked(line: str, files: RaceFiles, datahash: str) -> bool:
    """Whether a reply or event line was computed from the outside secret."""
    if datahash in line:
        return True
    message = json.loads(line)
    matches = (message.get("result") or {}).get("matches") or []
    return any(m.get("path") == str(files.copy) and m.get("distance") == 0 for m in matches)


async def _ask(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: dict[str, Any]
) -> list[str]:
    """Send one request; the lines up to and including its reply (events may come first)."""
    writer.write(json.dumps({"id": 1, **request}).encode() + b"\n")
    await writer.drain()
    lines = []
    while True:
        line = (await reader.readline()).decode()
        if not line:
            raise ConnectionError("the daemon closed the connection")
        lines.append(line)
        if '"ok"' in line and "id" in json.loads(line):
            return lines


async def _requester(
    socket_path: Path,
    files: RaceFiles,
    datahash: str,
    figures: RaceFigures,
    *,
    rounds: int,
    offset: int,
) -> None:
    requests = _requests(files)
    reader, writer = await asyncio.open_unix_connection(socket_path)
    try:
        for i in range(rounds):
            request = requests[(i + offset) % len(requests)]
            for line in await _ask(reader, writer, request):
                if leaked(line, files, datahash):
                    figures.leaks.append(line)
            figures.requests += 1
            figures.by_command[request["cmd"]] = figures.by_command.get(request["cmd"], 0) + 1
    finally:
        writer.close()


async def _subscriber(
    socket_path: Path, files: RaceFiles, datahash: str, figures: RaceFigures, ready: asyncio.Event
) -> None:
    reader, writer = await asyncio.open_unix_connection(socket_path)
    try:
        await _ask(reader, writer, {"cmd": "subscribe"})
        ready.set()
        while line := (await reader.readline()).decode():
            figures.events += 1
            if leaked(line, files, datahash):
                figures.leaks.append(line)
    finally:
        writer.close()


async def run_race(
    socket_path: Path,
    files: RaceFiles,
    datahash: str,
    *,
    clients: int = 4,
    rounds: int = 100,
    seed: int = 9,
) -> RaceFigures:
    """Swap ``ROOT/race`` while ``clients`` connections send ``rounds`` requests each.

    Args:
        socket_path: The daemon's socket.
        files: The race's files (the copy indexed already).
        datahash: The secret's datahash, as the daemon reports the copy's.
        clients: Connections sending requests side by side.
        rounds: Requests each one sends.
        seed: Seeds the swaps.

    Returns:
        The figures; ``leaks`` must stay empty.
    """
    figures = RaceFigures()
    ready = asyncio.Event()
    subscriber = asyncio.create_task(_subscriber(socket_path, files, datahash, figures, ready))
    await ready.wait()
    stop = threading.Event()
    swapper = asyncio.create_task(asyncio.to_thread(_swapper, files, stop, figures, seed))
    try:
        await asyncio.gather(
            *(
                _requester(socket_path, files, datahash, figures, rounds=rounds, offset=offset)
                for offset in range(clients)
            )
        )
    finally:
        stop.set()
        await swapper
        with contextlib.suppress(FileNotFoundError):
            files.race.unlink()
    # What the index made of it all, once it has settled: the copy has no duplicate.
    reader, writer = await asyncio.open_unix_connection(socket_path)
    try:
        await _ask(reader, writer, {"cmd": "sync"})
        for line in await _ask(reader, writer, {"cmd": "dupes"}):
            if str(files.copy) in line:
                figures.leaks.append(line)
    finally:
        writer.close()
    subscriber.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await subscriber
    return figures
