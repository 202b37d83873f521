"""An idle daemon's memory, its peak while indexing, and the first file after a quiet period,
on a real ``isccd run`` with 2 workers, once for each ``[hashing] idle_timeout`` asked for
(``0`` keeps the workers and their fork server, as isccd did before the setting).

1. **Peak PSS while indexing**: a tree of ``--index-files`` small files (``smallfiles.py``'s
   mix of texts and binaries) indexed from an empty store by the startup reconcile; the PSS of
   every process of the daemon's tree (``/proc/PID/smaps_rollup``) summed and sampled every
   0.1 s; the time to index.
2. **Idle PSS**: the same daemon once the files are indexed and the quiet period has passed
   (the workers let go, for a non-zero timeout), each process (with which kernels are loaded in
   it) and the sum.
3. **First file after a quiet period**: a copy of an indexed file, from its close to its
   ``dup.exact`` at a subscriber, ``--rounds`` times, each after the workers were let go (for a
   non-zero timeout; at rest with them running for 0, the anchor). The settle time (250 ms) is
   part of it.

For the idle figure with 100,000 files indexed, ``daemon.py --only idle`` stores the records
first (the startup reconcile is then stat-only); run it with ``ISCCD_HASHING__IDLE_TIMEOUT``
set and wait past the timeout (``--idle-wait``).

    python bench/idle.py [--index-files 20000] [--timeouts 0,2] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from isccd.client import AsyncClient
from isccd.model import EventType

sys.path.insert(0, str(Path(__file__).parent))
from daemon import Daemon, _kernels, _role, _versions, descendants, memory_mib
from smallfiles import small_files

WORKERS = 2


def tree_pss(pid: int) -> float:
    """The PSS of ``pid`` and every process below it, in MiB (processes that end while read
    count nothing)."""
    total = 0.0
    for each in [pid, *descendants(pid)]:
        try:
            total += memory_mib(each)[1]
        except OSError:
            continue
    return total


class Sampler(threading.Thread):
    """The highest :func:`tree_pss` of a process, sampled every 0.1 s until stopped."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak = pid, 0.0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(0.1):
            self.peak = max(self.peak, tree_pss(self.pid))

    def stop(self) -> float:
        self._done.set()
        self.join()
        return self.peak


async def _status(daemon: Daemon) -> tuple[int, int, str]:
    client = await AsyncClient.connect(daemon.socket)
    try:
        status = await client.status()
    finally:
        await client.close()
    state = status.hashing.state if status.hashing is not None else "running"
    return status.files_indexed, status.queue_depth, state


def _until(daemon: Daemon, done: object, what: str, timeout: float = 3600) -> None:
    """Poll the daemon's status until ``done(files, queue, state)``."""
    deadline = time.monotonic() + timeout
    while not done(*asyncio.run(_status(daemon))):  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit(f"the daemon did not reach {what} in {timeout:.0f} s")
        time.sleep(0.1)


async def _first_file(daemon: Daemon, original: Path, name: str) -> float:
    """Seconds from the close of a copy of ``original`` to its ``dup.exact``."""
    client = await AsyncClient.connect(daemon.socket)
    try:
        await client.subscribe()
        copy = original.with_name(name)
        shutil.copyfile(original, copy)
        closed = time.monotonic()
        async with asyncio.timeout(60):
            async for event in client.events():
                if event.type is EventType.DUP_EXACT and event.path == str(copy):
                    return time.monotonic() - closed
        raise SystemExit("the subscription ended")
    finally:
        await client.close()


def run(files: int, timeout: float, rounds: int) -> None:
    label = "kept (0)" if not timeout else f"{timeout:g} s"
    print(f"\n[hashing] idle_timeout = {label}, {WORKERS} workers, {files:,} files")
    base = Path(tempfile.mkdtemp(prefix="isccd-b-", dir="/tmp"))
    try:
        root = base / "root"
        tree = small_files(root, files, per_dir=200)
        daemon = Daemon(
            base,
            root,
            base / "state",
            ISCCD_HASHING__WORKERS=str(WORKERS),
            ISCCD_HASHING__IDLE_TIMEOUT=str(timeout),
        )
        started = time.monotonic()
        daemon.start()
        assert daemon.proc is not None
        sampler = Sampler(daemon.proc.pid)
        sampler.start()
        _until(daemon, lambda n, q, _: n >= files and q == 0, "the whole tree indexed")
        indexing = time.monotonic() - started
        peak = sampler.stop()
        print(f"   1. indexed in {indexing:.1f} s; peak PSS of the process tree {peak:.0f} MiB")
        if timeout:
            _until(daemon, lambda _n, _q, state: state == "idle", "idle", timeout + 60)
        else:
            time.sleep(2)  # at rest: nothing to do
        total = 0.0
        print("   2. idle:")
        for pid in [daemon.proc.pid, *descendants(daemon.proc.pid)]:
            rss, pss = memory_mib(pid)
            total += pss
            kernels = _kernels(pid)
            print(f"      {_role(pid):<18} RSS {rss:6.0f} MiB  PSS {pss:6.0f} MiB  {kernels}")
        print(f"      total PSS of the daemon's process tree {total:.0f} MiB")
        latencies = []
        for i in range(rounds):
            latencies.append(asyncio.run(_first_file(daemon, tree[0], f"copy-{i}.txt")))
            if timeout:
                _until(daemon, lambda _n, _q, state: state == "idle", "idle", timeout + 60)
            else:
                time.sleep(1)
        print(
            f"   3. first file after a quiet period, close to dup.exact: median "
            f"{statistics.median(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms "
            f"({rounds} rounds; settle time 250 ms included)"
        )
        daemon.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-files", type=int, default=20_000)
    parser.add_argument("--timeouts", default="0,2", help="idle_timeout values, in seconds")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(_versions())
    for timeout in (float(t) for t in args.timeouts.split(",")):
        run(args.index_files, timeout, args.rounds)


if __name__ == "__main__":
    main()
