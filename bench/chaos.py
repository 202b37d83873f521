"""Chaos: the daemon killed and faulted at random, and how long it takes to recover.

A larger run of what ``tests/chaos/`` checks, printing its figures. Each section is one kind of
chaos; a section returns named figures (median of ``--rounds`` rounds where it times a
recovery). Sections, in order:

1. **kill**: ``--kills`` SIGKILLs at random moments of ``isccd run``, alternately during a
   startup scan and during live changes, restarted each time; then the index is compared with
   a fresh ``isccd scan`` of the same tree (files, codes but the Meta-Code, duplicate groups),
   ``PRAGMA integrity_check`` is run, and every process of each killed daemon must be gone.
   Figures: kills survived, seconds from restart to ``READY=1`` and to the index caught up.
2. **disk_full**: the store on a 8 MiB tmpfs nearly filled (needs root): seconds from space
   freed to the index holding every file again, with no ``sync``.
3. **state_deleted**: the state directory removed under an idle daemon: seconds until it exits
   (status 74).
4. **root_recreated**: ``rm -rf ROOT; cp -a BACKUP ROOT``: seconds from the copy's end to
   ``root.available``, and to a file created afterwards indexed live.
5. **root_moved**: the root moved away and back: seconds from the move back to
   ``root.available``.
6. **unreadable**: a directory ``chmod 000`` at start, then readable (the daemon runs as an
   unprivileged user of a user namespace): seconds from the ``chmod`` to its files indexed.
7. **missing_root**: a root missing at start created with a file: seconds to ``root.available``.
8. **store_failures**: a daemon in this process whose store writes fail (every job that logs an
   event, and the schedule's purge, raise ``StoreFullError``) for a random time of 1 to
   ``--degraded`` seconds: seconds from the store writable again to ``store.recovered`` and to
   the change made meanwhile indexed, with the default pauses between attempts (1 s, doubled
   up to a minute), which bound it.
9. **fuzz**: ``--messages`` generated protocol messages (invalid UTF-8, lone surrogates, deep
   nesting, wrong types, huge lines, pipelining, half-close, bursts of connections) against a
   daemon with ``max_clients`` 32, another client served after every session: messages sent,
   replies, problems (a message with neither a reply nor a clean close; must be 0), the most
   served of a 1,000-connection burst, and the daemon's RSS before and after.
10. **race**: ``ROOT/race`` swapped between a directory and a symbolic link to a directory
    outside the root while four clients send every path-taking request: requests, swaps, and
    replies or events computed from the outside file (must be 0).
11. **crafted_logs**: every crafted action log of ``tests/chaos/crafted_logs.py`` (hand-made
    or edited lines, lines signed with the real key but with fields undo must refuse) given to
    ``isccd dedupe --undo``, each in its own process: logs tried, refused with their reason and
    exit 2, tracebacks (must be 0), files touched (must be 0), and the genuine log undone.
12. **crafted_plans**: every crafted plan file of :mod:`tests.chaos.crafted` (paths outside
    the roots, move targets inside them, NUL bytes, deep nesting, huge numbers, wrong types,
    FIFOs) given to the real ``isccd dedupe --plan ... --apply``: plans tried, plans refused
    (exit 2, one line, nothing touched), the others (must be 0), and the slowest refusal.
13. **dedupe_race**: ``isccd dedupe --apply`` held at a known moment (``tests/chaos/
    dedupe_race.py``) and raced, ``--rounds`` times 4 each, by a second ``--remove`` run with the
    opposite plan, and by a writer rewriting the kept file in place (``--link`` and
    ``--remove``): races tried, second runs kept off by the lock, actions reverted, and bytes
    that exist nowhere any more (must be 0).

A section is a :class:`Section` in :data:`SECTIONS`.

    python bench/chaos.py [--quick] [--only kill,disk_full,...] [--rounds N] [--kills N]
                          [--messages N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from isccd.client import AsyncClient
from isccd.daemon.supervisor import Backoff
from isccd.dedupe.logkey import load_key
from isccd.dedupe.plan import Action
from isccd.errors import StoreFullError
from isccd.logconf import configure_logging
from isccd.model import Event, EventType
from tests.chaos import dedupe_race, fuzz, race
from tests.chaos.crafted_logs import crafted_logs
from tests.chaos.harness import (
    Snapshot,
    descendants,
    fresh_scan,
    make_tree,
    mutate,
    snapshot,
    wait_gone,
)
from tests.dedupe.conftest import plan_of, run_plan, write
from tests.e2e.conftest import Daemon, daemons

#: name -> value (a number, or a sentence when the figure could not be measured).
Figures = dict[str, float | int | str]


@dataclass(frozen=True, slots=True)
class Options:
    rounds: int
    kills: int
    files: int
    degraded: float
    seed: int
    messages: int


@dataclass(frozen=True, slots=True)
class Section:
    """One kind of chaos: its name and what measures it."""

    name: str
    run: Callable[[Options], Figures]


@contextmanager
def daemon_of(**env: str) -> Iterator[Daemon]:
    with daemons() as make:
        yield make(ISCCD_LOG__LEVEL="warning", **env)


def median(values: list[float]) -> float:
    return round(statistics.median(values), 3)


async def wait_event(client: AsyncClient, kind: EventType, path: str | None = None) -> Event:
    async with asyncio.timeout(300):
        async for event in client.events():
            if event.type is kind and (path is None or event.path == path):
                return event
    raise RuntimeError("the subscription ended")


async def wait_status(
    client: AsyncClient, check: Callable[..., bool], timeout: float = 300
) -> None:
    async with asyncio.timeout(timeout):
        while not check(await client.status()):
            await asyncio.sleep(0.02)


def sync(daemon: Daemon) -> None:
    async def go() -> None:
        client = await daemon.client()
        await client.sync()
        await client.close()

    asyncio.run(go())


# -- 1. kill ---------------------------------------------------------------------------------------


def bench_kill(options: Options) -> Figures:
    rng = random.Random(options.seed)
    ready: list[float] = []
    caught_up: list[float] = []
    with daemon_of(ISCCD_HASHING__WORKERS="2") as daemon:
        make_tree(daemon.root, rng, options.files)
        for cycle in range(options.kills):
            for _ in range(40):
                mutate(daemon.root, rng)
            started = time.monotonic()
            daemon.start(timeout=120)
            ready.append(time.monotonic() - started)
            live = cycle % 2 == 1
            writer_rng = random.Random(rng.random())
            deadline = time.monotonic() + rng.uniform(0.05, 2.0)
            while time.monotonic() < deadline:  # the random moment; live: changes meanwhile
                if live:
                    mutate(daemon.root, writer_rng)
                time.sleep(0.01)
            assert daemon.proc is not None
            children = descendants(daemon.proc.pid)
            daemon.proc.send_signal(signal.SIGKILL)
            daemon.proc.wait(30)
            daemon.kill()
            left = wait_gone(children)
            if left:
                return {"kills survived": cycle, "failed": f"processes left behind: {left}"}
        started = time.monotonic()
        daemon.start(timeout=120)
        sync(daemon)
        caught_up.append(time.monotonic() - started)
        if daemon.stop() != 0:
            return {"kills survived": options.kills, "failed": "the last stop was not clean"}
        index = snapshot(daemon.state, daemon.root)
        fresh = fresh_scan(daemon.root, daemon.base / "fresh")
    equal = index.files == fresh.files and index.groups == fresh.groups
    return {
        "kills survived": options.kills if equal and index.integrity == ["ok"] else 0,
        "index equals a fresh scan": "yes" if equal else f"NO: {_differences(index, fresh)}",
        "integrity_check": " ".join(index.integrity),
        "files": len(index.files),
        "duplicate groups": len(index.groups),
        "seconds to READY after a kill (median)": median(ready),
        "seconds from the last restart to caught up": round(caught_up[0], 3),
    }


def _differences(index: Snapshot, fresh: Snapshot) -> str:
    paths = sorted(p for p in index.files.keys() | fresh.files.keys()
                   if index.files.get(p) != fresh.files.get(p))  # fmt: skip
    groups = index.groups ^ fresh.groups
    detail = "; ".join(
        f"{p}: index {index.files.get(p)}, fresh scan {fresh.files.get(p)}" for p in paths[:3]
    )
    shown = "; ".join(f"{k} {u} {sorted(m)}" for k, u, m in sorted(groups, key=str)[:4])
    return f"{len(paths)} files differ ({detail}); {len(groups)} groups differ ({shown})"


# -- 2.-7. faults of the machine -----------------------------------------------------------------


def bench_disk_full(options: Options) -> Figures:
    if os.geteuid() != 0:
        return {"skipped": "mounting a tmpfs needs root"}
    times = []
    for _ in range(options.rounds):
        with daemon_of() as daemon:
            daemon.state.mkdir()
            mount = ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(daemon.state)]
            subprocess.run(mount, check=True)
            try:
                times.append(_disk_full(daemon))
            finally:
                daemon.kill()
                subprocess.run(["umount", "-l", str(daemon.state)], check=False)
    return {"seconds from space freed to every file indexed (median)": median(times)}


def _disk_full(daemon: Daemon) -> float:
    count = 800  # a store of about 1.2 MB and a write-ahead log of 4 MB
    for i in range(count):
        (daemon.root / f"{i:05}.txt").write_text(f"file {i} " + "word " * (i % 50))
    ballast = daemon.state / "ballast"
    ballast.write_bytes(b"\0" * (7 * 1024 * 1024))
    daemon.start()

    async def scenario() -> float:
        client = await daemon.client()
        await wait_status(client, lambda s: bool(s.problems))
        ballast.unlink()
        freed = time.monotonic()
        await wait_status(client, lambda s: s.files_indexed == count and not s.problems)
        await client.close()
        return time.monotonic() - freed

    seconds = asyncio.run(scenario())
    daemon.stop()
    return seconds


def bench_state_deleted(options: Options) -> Figures:
    times = []
    for _ in range(options.rounds):
        with daemon_of() as daemon:
            daemon.start()
            sync(daemon)
            removed = time.monotonic()
            shutil.rmtree(daemon.state)
            assert daemon.proc is not None
            status = daemon.proc.wait(60)
            times.append(time.monotonic() - removed)
            if status != 74:
                return {"failed": f"exit status {status}, not 74"}
    return {"seconds from removal to exit 74 (median)": median(times)}


def bench_root_recreated(options: Options) -> Figures:
    back, live = [], []
    for _ in range(options.rounds):
        with daemon_of(ISCCD_WATCH__POLL_INTERVAL="10") as daemon:
            make_tree(daemon.root, random.Random(options.seed), 50)
            backup = daemon.base / "backup"
            shutil.copytree(daemon.root, backup)
            daemon.start()

            async def scenario(daemon: Daemon = daemon, backup: Path = backup) -> None:
                client = await daemon.client()
                await client.subscribe()
                shutil.rmtree(daemon.root)
                await wait_event(client, EventType.ROOT_UNAVAILABLE)
                subprocess.run(["cp", "-a", str(backup), str(daemon.root)], check=True)
                copied = time.monotonic()
                await wait_event(client, EventType.ROOT_AVAILABLE)
                back.append(time.monotonic() - copied)
                late = daemon.root / "late.txt"
                late.write_text("created after the root came back " * 10)
                await wait_event(client, EventType.FILE_ADDED, str(late))
                live.append(time.monotonic() - copied)
                await client.close()

            asyncio.run(scenario())
            daemon.stop()
    return {
        "seconds from the copy to root.available (median)": median(back),
        "seconds from the copy to a new file indexed live (median)": median(live),
    }


def bench_root_moved(options: Options) -> Figures:
    times = []
    for _ in range(options.rounds):
        with daemon_of(ISCCD_WATCH__POLL_INTERVAL="10") as daemon:
            make_tree(daemon.root, random.Random(options.seed), 50)
            away = daemon.base / "away"
            daemon.start()

            async def scenario(daemon: Daemon = daemon, away: Path = away) -> None:
                client = await daemon.client()
                await client.subscribe()
                daemon.root.rename(away)
                await wait_event(client, EventType.ROOT_UNAVAILABLE)
                away.rename(daemon.root)
                moved = time.monotonic()
                await wait_event(client, EventType.ROOT_AVAILABLE)
                times.append(time.monotonic() - moved)
                await client.close()

            asyncio.run(scenario())
            daemon.stop()
    return {"seconds from the move back to root.available (median)": median(times)}


def bench_unreadable(options: Options) -> Figures:
    if shutil.which("unshare") is None:
        return {"skipped": "unshare (util-linux) is not installed"}
    times = []
    for _ in range(options.rounds):
        with daemon_of(ISCCD_WATCH__POLL_INTERVAL="10") as daemon:
            locked = daemon.root / "locked"
            locked.mkdir()
            for i in range(20):
                (locked / f"{i}.txt").write_text(f"locked file {i} " * 30)
            locked.chmod(0)
            daemon.wrap = ["unshare", "--user", "--map-user=65534", "--map-group=65534"]
            try:
                daemon.start()

                async def scenario(daemon: Daemon = daemon, locked: Path = locked) -> None:
                    client = await daemon.client()
                    await wait_status(client, lambda s: s.roots[0].watch_mode == "partial")
                    locked.chmod(0o755)
                    readable = time.monotonic()
                    await wait_status(client, lambda s: s.files_indexed == 20)
                    times.append(time.monotonic() - readable)
                    await client.close()

                asyncio.run(scenario())
                daemon.stop()
            finally:
                locked.chmod(0o755)
    return {"seconds from chmod to its files indexed (median; poll_interval 10)": median(times)}


def bench_missing_root(options: Options) -> Figures:
    times = []
    for _ in range(options.rounds):
        with daemon_of(ISCCD_WATCH__POLL_INTERVAL="10") as daemon:
            daemon.root.rmdir()
            daemon.start()

            async def scenario(daemon: Daemon = daemon) -> None:
                client = await daemon.client()
                await client.subscribe()
                daemon.root.mkdir()
                (daemon.root / "a.txt").write_text("the disk was plugged in " * 10)
                made = time.monotonic()
                await wait_event(client, EventType.ROOT_AVAILABLE)
                times.append(time.monotonic() - made)
                await client.close()

            asyncio.run(scenario())
            daemon.stop()
    return {"seconds from mkdir to root.available (median)": median(times)}


# -- 8. store failures in the loops ----------------------------------------------------------------


def bench_store_failures(options: Options) -> Figures:
    # Imported here: these helpers are missing from tests/chaos/loops_daemon.py, and the
    # other sections run without them.
    from tests.chaos.loops_daemon import running, short_dir  # type: ignore[attr-defined]

    # This daemon runs in this process: its log goes to stderr, and only its problems.
    configure_logging("warning", "console", stream=sys.stderr)
    recovered, indexed = [], []
    full = StoreFullError("the disk is full (injected)")
    rng = random.Random(options.seed)
    for _ in range(options.rounds):
        lasts = rng.uniform(1, options.degraded)

        async def scenario(lasts: float = lasts) -> None:
            with short_dir() as base:
                async with running(base, backoff=Backoff()) as run:
                    client = await run.client()
                    await client.subscribe()
                    run.faults.arm("purge", full)
                    run.faults.arm("write", full)
                    late = run.root / "late.txt"
                    late.write_text("written while the store cannot be written " * 10)
                    await wait_event(client, EventType.STORE_DEGRADED)
                    await asyncio.sleep(lasts)  # the fault lasts
                    run.faults.disarm("purge")
                    run.faults.disarm("write")
                    writable = time.monotonic()
                    await wait_event(client, EventType.STORE_RECOVERED)
                    recovered.append(time.monotonic() - writable)
                    await wait_event(client, EventType.FILE_ADDED, str(late))
                    indexed.append(time.monotonic() - writable)
                    await client.close()

        asyncio.run(scenario())
    return {
        f"seconds from writable to store.recovered, failing 1-{options.degraded:g} s (median)": (
            median(recovered)
        ),
        "the same, at most": round(max(recovered), 3),
        "seconds from writable to the change made meanwhile indexed (median)": median(indexed),
    }


# -- 9. fuzz ---------------------------------------------------------------------------------------


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError("no VmRSS")


def _served(path: Path) -> bool:
    """Whether another client is answered (``status``) on a connection of its own."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(30)
            sock.connect(str(path))
            sock.sendall(b'{"id": "monitor", "cmd": "status"}\n')
            reply = json.loads(sock.makefile("rb").readline())
        if reply.get("ok"):
            return True
        time.sleep(0.01)
    return False


def bench_fuzz(options: Options) -> Figures:
    with daemon_of(ISCCD_SERVER__MAX_CLIENTS="32", ISCCD_SERVER__IDLE_TIMEOUT="3") as daemon:
        outside = daemon.base / "outside"
        outside.mkdir()
        (outside / "secret.txt").write_text("outside the roots")
        (daemon.root / "a.txt").write_text("a file to ask about " * 20)
        (daemon.root / "link_out").symlink_to(outside)
        daemon.start()
        assert daemon.proc is not None
        sync(daemon)
        items = fuzz.sessions(
            options.seed, root=str(daemon.root), outside=str(outside), lines=options.messages
        )
        rss_before = _rss_mib(daemon.proc.pid)
        started = time.monotonic()
        replies = problems = unserved = most_served = 0
        for item, outcome in fuzz.run(daemon.socket, items):
            replies += len(outcome.replies)
            problems += len(outcome.problems) + int(outcome.reset)
            if isinstance(item, fuzz.Burst):
                most_served = max(most_served, outcome.served)
            unserved += not _served(daemon.socket)
        seconds = time.monotonic() - started
        burst = fuzz.run_burst(daemon.socket, fuzz.Burst(1000))
        figures: Figures = {
            "messages": fuzz.count(items),
            "sessions and bursts": len(items),
            "replies": replies,
            "problems (must be 0)": problems,
            "times another client was not served (must be 0)": unserved,
            "most served in a burst (max_clients 32)": max(most_served, burst.served),
            "burst of 1,000: refused": burst.refused,
            "seconds": round(seconds, 1),
            "daemon RSS before, MiB": rss_before,
            "daemon RSS after, MiB": _rss_mib(daemon.proc.pid),
            "exit status": daemon.stop(),
        }
    return figures


# -- 10. race --------------------------------------------------------------------------------------


def bench_race(options: Options) -> Figures:
    with daemon_of(ISCCD_HASHING__WORKERS="2") as daemon:
        files = race.make_files(daemon.root, daemon.base, seed=options.seed)
        daemon.start()

        async def scenario() -> race.RaceFigures:
            client = await daemon.client()
            await client.sync()
            datahash = (await client.get(str(files.copy))).datahash
            await client.close()
            assert datahash
            return await race.run_race(
                daemon.socket, files, datahash, clients=4, rounds=25 * options.rounds * 5
            )

        started = time.monotonic()
        found = asyncio.run(scenario())
        return {
            "requests": found.requests,
            "by command": str(dict(sorted(found.by_command.items()))),
            "swaps": found.swaps,
            "events": found.events,
            "computed from outside (must be 0)": len(found.leaks),
            "seconds": round(time.monotonic() - started, 1),
            "exit status": daemon.stop(),
        }


def _files(top: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(top.rglob("*")) if p.is_file()}


def bench_crafted_logs(options: Options) -> Figures:
    with tempfile.TemporaryDirectory(prefix="isccd-crafted-") as tmp:
        base = Path(tmp)
        state = base / "state"
        key = load_key(state, create=True)
        data = random.Random(options.seed).randbytes(50_000)
        pair = [write(base / "root" / f"{i}.bin", data, mtime=1_000_000 + i) for i in (0, 1)]
        outside = write(base / "outside" / "secret", b"not for undo to touch")
        genuine = base / "genuine.jsonl"
        run_plan(plan_of(base / "root", [pair]), Action.LINK, genuine, key=key)
        before = _files(base / "root") | _files(base / "outside")
        cases = crafted_logs(genuine.read_bytes(), key, str(outside))
        undo = [sys.executable, "-m", "isccd", "dedupe", "--state", str(state), "--undo"]
        refused = tracebacks = 0
        for case in cases:
            log = base / "crafted.jsonl"
            log.write_bytes(case.data)
            done = subprocess.run([*undo, str(log)], capture_output=True, text=True, check=False)
            refused += done.returncode == 2 and case.says in done.stderr
            tracebacks += "Traceback" in done.stderr
        after = _files(base / "root") | _files(base / "outside")
        touched = len({k for k in before | after if before.get(k) != after.get(k)})
        status = subprocess.run([*undo, str(genuine)], capture_output=True, check=False)
        return {
            "crafted logs": len(cases),
            "refused with their reason, exit 2": refused,
            "tracebacks (must be 0)": tracebacks,
            "files touched (must be 0)": touched,
            "genuine log undone (exit status)": status.returncode,
        }


# -- crafted plans --------------------------------------------------------------------------------


def bench_crafted_plans(options: Options) -> Figures:
    """Every crafted plan of :mod:`tests.chaos.crafted` run by the real command."""
    import tempfile

    from tests.chaos.crafted import Host

    with tempfile.TemporaryDirectory(prefix="crafted") as tmp:
        host = Host(Path(tmp))
        faults: dict[str, str] = {}
        slowest = 0.0
        for name, crafted in host.plans.items():
            before = host.files()
            started = time.monotonic()
            done = subprocess.run(
                [sys.executable, "-m", "isccd", *host.argv(crafted)],
                capture_output=True, text=True, check=False, timeout=120,
            )  # fmt: skip
            slowest = max(slowest, time.monotonic() - started)
            fault = host.fault(done.returncode, done.stderr, before)
            if fault is not None:
                faults[name] = fault
        return {
            "crafted plans tried": len(host.plans),
            "crafted plans refused": len(host.plans) - len(faults),
            "not refused (must be 0)": len(faults),
            "which": str(faults) if faults else "none",
            "slowest refusal ms": round(slowest * 1000),
        }


# -- 13. dedupe_race -------------------------------------------------------------------------------


def bench_dedupe_race(options: Options) -> Figures:
    tried = kept_off = reverted = lost = 0
    started = time.monotonic()
    for n in range(4 * options.rounds):
        seed = options.seed + n
        for kind in ("remove", "--link", "--remove"):
            with tempfile.TemporaryDirectory(prefix="isccd-chaos-") as base:
                if kind == "remove":
                    result = dedupe_race.remove_race(Path(base), seed)
                    kept_off += result.second == 1 and "holds the lock" in result.second_said
                else:
                    result = dedupe_race.rewrite_race(Path(base), kind, seed)
                    reverted += result.first == 1 and result.copies == 1
            tried += 1
            lost += result.lost
    return {
        "races tried": tried,
        "second runs kept off by the lock": kept_off,
        "actions reverted (the kept file rewritten)": reverted,
        "bytes lost (must be 0)": lost,
        "seconds": round(time.monotonic() - started, 1),
    }


SECTIONS: list[Section] = [
    Section("kill", bench_kill),
    Section("disk_full", bench_disk_full),
    Section("state_deleted", bench_state_deleted),
    Section("root_recreated", bench_root_recreated),
    Section("root_moved", bench_root_moved),
    Section("unreadable", bench_unreadable),
    Section("missing_root", bench_missing_root),
    Section("store_failures", bench_store_failures),
    Section("fuzz", bench_fuzz),
    Section("race", bench_race),
    Section("crafted_logs", bench_crafted_logs),
    Section("crafted_plans", bench_crafted_plans),
    Section("dedupe_race", bench_dedupe_race),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer kills, one round")
    parser.add_argument(
        "--only", help="comma-separated sections: " + ", ".join(s.name for s in SECTIONS)
    )
    parser.add_argument("--rounds", type=int, default=5, help="rounds per timed fault")
    parser.add_argument("--kills", type=int, default=30, help="SIGKILLs in the kill section")
    parser.add_argument("--files", type=int, default=1000, help="files in the killed tree")
    parser.add_argument(
        "--degraded", type=float, default=20.0, help="longest the store fails, in seconds"
    )
    parser.add_argument(
        "--messages", type=int, default=20_000, help="protocol messages in the fuzz section"
    )
    parser.add_argument("--seed", type=int, default=20240917)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    options = Options(
        rounds=1 if args.quick else args.rounds,
        kills=6 if args.quick else args.kills,
        files=300 if args.quick else args.files,
        degraded=args.degraded,
        seed=args.seed,
        messages=5_000 if args.quick else args.messages,
    )
    wanted = set(args.only.split(",")) if args.only else {s.name for s in SECTIONS}
    results: dict[str, Figures] = {}
    for section in SECTIONS:
        if section.name not in wanted:
            continue
        started = time.monotonic()
        figures = section.run(options)
        figures["section seconds"] = round(time.monotonic() - started, 1)
        results[section.name] = figures
        if not args.json:
            print(f"{section.name}:")
            for name, value in figures.items():
                print(f"  {name}: {value}")
            sys.stdout.flush()
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
