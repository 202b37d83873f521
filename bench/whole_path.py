"""The whole path at a million real small files: a scan, the store it leaves, and a daemon on it.

The tree is ``bench/smallfiles.py``'s (60 % texts of 200 B-4 KB, 40 % binaries of 100 B-8 KB, 200
to a directory), ``--files`` of them (1,000,000). In turn:

- **floor**: the Python walk that opens, reads and BLAKE3- and xxh64-hashes each file
  (``bench/smallfiles.py``), once, for the scan's ratio;
- **scan**: ``isccd scan`` into a new state directory (files/s), and the store's size on disk
  per file once its write-ahead log is checkpointed;
- **rescan**: the same command again, nothing changed (stat only);
- **dupes**: ``isccd dupes --json`` and ``isccd dupes --near --json`` from the store;
- **daemon**: ``isccd run`` watching the tree on that store: seconds from its start to
  ``READY=1`` (the store opened, the index loaded, the roots watched) and to every root
  reconciled with the tree (each file's stat compared with the store's, after READY), the
  RSS and PSS of its main process then, and ``--queries`` near queries over its socket
  (``similar`` by the code of a stored file, one at a time, a round trip each, the first
  building the block index): median and p99.

    python bench/whole_path.py [--files 1000000] [--tree DIR] [--queries 300]

``--tree`` keeps the tree there (built when missing) for another run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from daemon import Daemon, memory_mib  # the benchmarks beside this one
from smallfiles import FLOOR, small_files

from isccd.client import Client
from isccd.results import SimilarQuery


def timed(args: list[str]) -> tuple[float, str]:
    """Seconds one command took, and its stdout; a command that broke stops the benchmark."""
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, check=False, cwd="/")
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{args[:4]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, done.stdout


def isccd(*args: str) -> tuple[float, str]:
    return timed([sys.executable, "-m", "isccd", *args])


def on_daemon(tree: Path, state: Path, codes: list[str]) -> dict[str, float]:
    """Start-up to READY and to every root reconciled, memory, and query latency of
    ``isccd run`` on ``state``."""
    base = Path(tempfile.mkdtemp(prefix="wp-", dir="/tmp"))  # a socket path must be short
    run = Daemon(base, tree, state)
    try:
        start = time.perf_counter()
        ready = run.start()
        assert run.proc is not None
        took = []
        with Client(run.socket) as client:
            # Every root reconciled with the tree (a walk that stats each file, after READY):
            # its scan seen running, then gone.
            seen = False
            while True:
                scanning = any(r.scan is not None for r in client.status().roots)
                if seen and not scanning:
                    break
                if not seen and time.perf_counter() - start > ready + 60:
                    raise SystemExit("no reconcile seen within a minute of READY")
                seen = seen or scanning
                time.sleep(0.2)  # polling a real process: the reconcile says nothing else
            reconciled = time.perf_counter() - start
            rss, pss = memory_mib(run.proc.pid)
            for code in codes:
                begun = time.perf_counter()
                client.similar(SimilarQuery(code=code))
                took.append(time.perf_counter() - begun)
        took.sort()
        return {
            "ready_s": ready,
            "reconciled_s": reconciled,
            "rss_mib": rss,
            "pss_mib": pss,
            "query_median_ms": statistics.median(took) * 1000,
            "query_p99_ms": took[min(len(took) - 1, int(len(took) * 0.99))] * 1000,
        }
    finally:
        run.stop()
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--tree", type=Path, help="build the tree here and keep it")
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="whole-path-"))
    tree = args.tree or work / "tree"
    if not tree.exists():
        small_files(tree, args.files, per_dir=200)
    files = sum(len(names) for _, _, names in os.walk(tree))
    print(f"{files:,} small files; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    floor, _ = timed([sys.executable, "-c", FLOOR, str(tree)])
    print(f"  floor (open, read, hash)   {files / floor:>10,.0f} files/s  ({floor:.1f} s)")
    state = work / "state"
    scan, _ = isccd("scan", "--state", str(state), str(tree))
    db = state / "isccd.db"
    with sqlite3.connect(db) as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        codes = [row[0] for row in con.execute("SELECT iscc FROM units WHERE type = 'data'")]
    size = sum(f.stat().st_size for f in state.iterdir() if f.is_file())
    print(f"  isccd scan                 {files / scan:>10,.0f} files/s  ({scan:.1f} s), "
          f"{floor / scan:.3f}x the floor")  # fmt: skip
    print(f"  store on disk              {size / files:>10,.0f} bytes a file "
          f"({size / 2**20:,.0f} MiB)")  # fmt: skip
    rescan, _ = isccd("scan", "--state", str(state), str(tree))
    print(f"  unchanged rescan           {files / rescan:>10,.0f} files/s  ({rescan:.1f} s)")
    for name, extra in (("dupes", []), ("dupes --near", ["--near"])):
        took, out = isccd("dupes", "--state", str(state), "--json", "--limit", "100000", *extra)
        groups = len(json.loads(out)["groups"])
        print(f"  isccd {name:<20} {took:>10.2f} s  ({groups:,} groups)")
    asked = random.Random(1).sample(codes, min(args.queries, len(codes)))
    found = on_daemon(tree, state, asked)
    print(f"  daemon start-up to READY   {found['ready_s']:>10.1f} s, every root reconciled "
          f"at {found['reconciled_s']:.1f} s")  # fmt: skip
    print(f"  daemon main process        {found['rss_mib']:>10,.0f} MiB RSS, "
          f"{found['pss_mib']:,.0f} MiB PSS")  # fmt: skip
    print(f"  similar by code (socket)   {found['query_median_ms']:>10.2f} ms median, "
          f"p99 {found['query_p99_ms']:.2f} ms, {len(asked)} queries")  # fmt: skip


if __name__ == "__main__":
    main()
