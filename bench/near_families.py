"""Families of near duplicates against unrelated files of the same sizes, measured in the same
run: does a library of families cost what a library of strangers costs?

Three trees of ``N`` files each (``--sizes``, default 3,000 and 30,000):

- **chain**: each file a longer prefix of one blob (the snapshots of a growing log), 16 KiB
  plus ``i`` bytes; consecutive files are a few bits apart, the ends of the chain far apart;
- **clique**: variants of one blob of the chain's mean size, each with two bytes changed at
  random places (a burst of photos, exports of one dataset): most files near most others;
- **unrelated**: random files with the sizes of the chain's (the clique's bytes in all).

For each tree: ``isccd scan`` into a new state directory (seconds, the store's size on disk, the
bytes of the events it logged),
the near relations stored (rows, per file, the most of one file), ``isccd dupes --near --json``
(seconds, the groups: the largest, and the largest connected component of the relations,
which is what near groups were before they had centres), an unchanged rescan (seconds), and the
memory of a daemon (``isccd run``) on that store and tree once its start-up reconcile is done:
the PSS (``/proc/PID/smaps_rollup``) of its main process, which holds the index and the near
relations (the hashing workers are the same processes for every tree, and let go when idle).
Each family is printed with its ratios to the unrelated tree of the same ``N``, and the growth
exponent of scan time and store size from the smallest ``N`` to the largest.

    python bench/near_families.py [--sizes 3000 30000] [--keep DIR] [--isccd PATH]

``--isccd`` runs another checkout's package (``PYTHONPATH``), for a before/after.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

SHAPES = ("unrelated", "chain", "clique")


def make_tree(shape: str, n: int, root: Path, seed: int = 1) -> None:
    """``n`` files of one shape under ``root``, 500 to a directory."""
    rng = random.Random(seed)
    blob = rng.randbytes(16384 + n)
    base = rng.randbytes(16384 + n // 2)
    for i in range(n):
        folder = root / f"d{i // 500:03}"
        if i % 500 == 0:
            folder.mkdir(parents=True)
        if shape == "chain":
            data = blob[: 16384 + i]
        elif shape == "clique":
            edited = bytearray(base)
            for _ in range(2):
                edited[rng.randrange(len(edited))] = rng.randrange(256)
            data = bytes(edited)
        else:
            data = rng.randbytes(16384 + i)
        (folder / f"f{i:06}.bin").write_bytes(data)


def isccd(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Run the isccd command line; its wall time and stdout (run from ``/``, so that the
    package is the one ``PYTHONPATH`` names, not one in the working directory)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "isccd", *args],
        env=env, capture_output=True, text=True, check=True, cwd="/",
    )  # fmt: skip
    return time.perf_counter() - start, done.stdout


def event_bytes(db: Path) -> int:
    """The bytes of every event the scan logged (type, root, path and data): what a subscriber
    replaying them from the start reads, but for the framing of each line."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        row = con.execute(
            "SELECT sum(length(type) + length(root) + length(path) + length(data)) FROM events"
        ).fetchone()
    return int(row[0] or 0)


def relations(db: Path) -> tuple[int, int, int]:
    """Near rows, the most rows of one file, the largest connected component."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        rows = con.execute("SELECT a, b FROM near").fetchall()
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    degree: Counter[int] = Counter()
    for a, b in rows:
        degree.update((a, b))
        parent[find(a)] = find(b)
    components = Counter(find(x) for x in parent)
    return len(rows), max(degree.values(), default=0), max(components.values(), default=0)


def daemon_pss(root: Path, state: Path, n: int, env: dict[str, str]) -> float:
    """PSS in MiB of the main process of ``isccd run`` on ``state`` watching ``root``, once it
    has said ``READY=1`` and its status shows every file indexed and nothing queued."""
    base = Path(tempfile.mkdtemp(prefix="nf-", dir="/tmp"))  # a socket path must be short
    notify_path, sock = base / "notify", base / "s.sock"
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(notify_path))
    notify.settimeout(600)
    run_env = {
        **env,
        "NOTIFY_SOCKET": str(notify_path),
        "ISCCD_LOG__LEVEL": "warning",
        "CONFIGURATION_DIRECTORY": str(base),
    }
    command = [sys.executable, "-m", "isccd", "run", "--watch", str(root), "--state", str(state)]
    proc = subprocess.Popen(
        [*command, "--socket", str(sock)], env=run_env, cwd="/", stderr=subprocess.DEVNULL
    )
    try:
        while b"READY=1" not in notify.recv(4096):
            pass
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            _, out = isccd(["status", "--socket", str(sock), "--json"], env)
            status = json.loads(out)
            if status["files_indexed"] >= n and status["queue_depth"] == 0:
                break
            time.sleep(0.5)  # polling a real process, with a deadline
        for line in Path(f"/proc/{proc.pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no Pss line")
    finally:
        notify.close()
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        for f in base.iterdir():
            f.unlink()
        base.rmdir()


def measure(shape: str, n: int, work: Path, env: dict[str, str]) -> dict[str, float]:
    root, state = work / f"{shape}-{n}", work / f"{shape}-{n}.state"
    make_tree(shape, n, root)
    scan, _ = isccd(["scan", "--state", str(state), str(root)], env)
    db = state / "isccd.db"
    with sqlite3.connect(db) as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = sum(f.stat().st_size for f in state.iterdir() if f.is_file())
    rows, most, component = relations(db)
    asked = ["dupes", "--state", str(state), "--near", "--json", "--limit", "100000"]
    dupes, out = isccd(asked, env)
    groups = [g for g in json.loads(out)["groups"] if g["kind"] == "near"]
    rescan, _ = isccd(["scan", "--state", str(state), str(root)], env)
    pss = daemon_pss(root, state, n, env)
    return {
        "scan_s": scan,
        "store_mb": size / 1e6,
        "events_mb": event_bytes(db) / 1e6,
        "rows": rows,
        "rows_per_file": rows / n,
        "most_rows": most,
        "component": component,
        "groups": len(groups),
        "largest_group": max((len(g["members"]) for g in groups), default=0),
        "dupes_s": dupes,
        "rescan_s": rescan,
        "pss_mib": pss,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[3000, 30000])
    parser.add_argument("--keep", type=Path, help="build the trees here and keep them")
    parser.add_argument("--isccd", type=Path, help="another checkout's root, for a before/after")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.isccd is not None:
        env["PYTHONPATH"] = str(args.isccd.resolve())
    work = args.keep or Path(tempfile.mkdtemp(prefix="near-families-"))
    found: dict[tuple[str, int], dict[str, float]] = {}
    for n in args.sizes:
        for shape in SHAPES:
            found[(shape, n)] = m = measure(shape, n, work, env)
            print(f"{shape:>9} {n:>7,}: " + "  ".join(f"{k} {v:,.3g}" for k, v in m.items()))
            sys.stdout.flush()
    print(
        "\nratios to the unrelated tree of the same size (scan, store, events, dupes, rescan, "
        "daemon PSS):"
    )
    for n in args.sizes:
        plain = found[("unrelated", n)]
        for shape in SHAPES[1:]:
            m = found[(shape, n)]
            keys = ("scan_s", "store_mb", "events_mb", "dupes_s", "rescan_s", "pss_mib")
            ratios = [m[k] / plain[k] for k in keys]
            print(f"{shape:>9} {n:>7,}: " + "  ".join(f"{r:.2f}x" for r in ratios))
    low, high = min(args.sizes), max(args.sizes)
    if low != high:
        print(f"\ngrowth exponent from {low:,} to {high:,} files (1.0: linear):")
        for shape in SHAPES:
            a, b = found[(shape, low)], found[(shape, high)]
            growth = [math.log(b[k] / a[k]) / math.log(high / low) for k in ("scan_s", "store_mb")]
            print(f"{shape:>9}: scan {growth[0]:.2f}  store {growth[1]:.2f}")


if __name__ == "__main__":
    main()
