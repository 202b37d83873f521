"""What duplicate folders cost (``dupes --dirs``): 100,000 to 1,000,000 files in folders of
100 files.

Each size is a fresh SQLite store of ``files`` live files in ``files / 100`` folders, two levels
below one root (``/lib/set<k>/folder<n>``): a quarter of the folders are exact copies of
another (their files renamed), a tenth are copies with one file more, the rest distinct. The
rows are written straight into the schema the store made (the write side is not what is
measured here, and storing a million records through it takes minutes).

Measured, in the same run and on the same store:

- ``floor``: SQLite alone reading the columns duplicate folders need (a bare loop over
  ``SELECT dir_id, name, size, datahash, dev, ino FROM files``);
- ``read``: the store's ``folder_files`` (the same rows, decoded into named tuples);
- ``exact``: ``dupes --dirs`` as the index answers it (read and group), exact folders only;
- ``near``: the same with ``--near`` (exact copies matched file by file, shares counted);
- ``load``: the daemon reading the folders' sums once (:class:`FolderWatch`, at its start);
- ``change``: one file added to a folder that was a copy, then the folders settled (what the
  daemon does per change for ``dir.dup``/``dir.resolved``), the median of ``CHANGES``.

Medians of ``--rounds`` rounds, each ratio to the floor, and the growth exponent of ``exact``
and ``near`` over the sizes (1.0: linear).

    python bench/dupdirs.py [--sizes 100000,300000,1000000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

PER_FOLDER = 100
CHANGES = 20


def build(path: Path, files: int) -> tuple[int, int]:
    """A store of ``files`` files at ``path``: (folders, exact copies made)."""
    from isccd.store import open_store, state_url
    from isccd.store.rows import to_fs

    store = open_store(state_url(path), host="bench")
    store.close()
    db = sqlite3.connect(path / "isccd.db")
    folders = files // PER_FOLDER
    db.execute("INSERT INTO roots (id, path) VALUES (1, ?)", (to_fs("/lib"),))
    rows = []
    copies = 0
    inode = 0
    origin: list[int] = []  # the folder whose contents each folder copies (itself: none)
    for n in range(folders):
        directory = f"/lib/set{n // 100}/folder{n}"
        db.execute("INSERT INTO dirs (id, path) VALUES (?, ?)", (n + 1, to_fs(directory)))
        kind = n % 20
        source = n - 1 if kind in (1, 5, 9, 13, 17) else n  # a quarter are copies
        extra = kind in (3, 11)  # a tenth are copies with one file more
        if extra:
            source = n - 2
        copies += source != n
        origin.append(origin[source] if source != n else n)
        for k in range(PER_FOLDER - (1 if extra else 0)):
            label = f"{origin[n]}/{k}".encode()
            digest = b"\x1e\x20" + hashlib.blake2b(label, digest_size=32).digest()
            inode += 1
            rows.append((1, n + 1, to_fs(f"f{k}-{n}"), 1, inode, 1000 + k, digest))
        if extra:
            inode += 1
            digest = b"\x1e\x20" + hashlib.blake2b(f"new{n}".encode(), digest_size=32).digest()
            rows.append((1, n + 1, to_fs("extra"), 1, inode, 5000, digest))
        if len(rows) >= 100_000:
            _insert(db, rows)
            rows = []
    _insert(db, rows)
    db.commit()
    db.close()
    return folders, copies


def _insert(db: sqlite3.Connection, rows: list[tuple[object, ...]]) -> None:
    db.executemany(
        "INSERT INTO files (root_id, dir_id, name, dev, ino, size, mtime_ns, ctime_ns, nlink, "
        "datahash, indexed_at) VALUES (?, ?, ?, ?, ?, ?, 0, 0, 1, ?, 0)",
        rows,
    )


def floor(path: Path) -> float:
    db = sqlite3.connect(path / "isccd.db")
    started = time.perf_counter()
    for _ in db.execute(
        "SELECT dir_id, name, size, datahash, dev, ino FROM files WHERE removed_at IS NULL"
    ):
        pass
    took = time.perf_counter() - started
    db.close()
    return took


def timed(path: Path, what: str) -> tuple[float, int]:
    from isccd.pipeline.options import PipelineOptions
    from isccd.pipeline.reader import IndexReader
    from isccd.results import DirsQuery
    from isccd.store import state_url

    with IndexReader(state_url(path), PipelineOptions(), host="bench") as reader:
        started = time.perf_counter()
        if what == "read":
            groups = sum(len(c) for c in reader._ix.store.folder_files(fleet=True))
        else:
            groups = len(reader.dup_dirs(DirsQuery(near=what == "near", limit=100_000)).groups)
        return time.perf_counter() - started, groups


def watched(path: Path) -> tuple[float, float, int]:
    """Seconds to load the folders' sums, the median seconds of one change settled, and the
    folder events the changes made."""
    from isccd.model import Event, EventType
    from isccd.pipeline.dirwatch import FolderWatch
    from isccd.store import open_store, state_url

    store = open_store(state_url(path), host="bench", readonly=True)
    try:
        watch = FolderWatch(1.0)
        started = time.perf_counter()
        watch.load(store)
        load = time.perf_counter() - started
        changes, told = [], 0
        for n in range(CHANGES):
            folder = 20 * n + 1  # a copy (see build)
            path_of = f"/lib/set{folder // 100}/folder{folder}/new{n}"
            digest = hashlib.blake2b(f"change{n}".encode(), digest_size=32).hexdigest()
            data = {"datahash": "1e20" + digest, "size": 777}
            event = Event(n + 1, EventType.FILE_ADDED, 0.0, "/lib", path_of, data, "bench")
            started = time.perf_counter()
            watch.note([event], store, float(n * 10))
            told += len(watch.settle(float(n * 10 + 5), store))
            changes.append(time.perf_counter() - started)
        return load, statistics.median(changes), told
    finally:
        store.close()


def exponent(sizes: list[int], seconds: list[float]) -> float:
    xs = [math.log(s) for s in sizes]
    ys = [math.log(t) for t in seconds]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000,300000,1000000")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"cpus {os.cpu_count()}, load {os.getloadavg()[0]:.2f}, rounds {args.rounds}")
    results: dict[str, list[float]] = {"exact": [], "near": []}
    for files in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            folders, copies = build(Path(tmp), files)
            times: dict[str, list[float]] = {
                "floor": [],
                "read": [],
                "exact": [],
                "near": [],
                "load": [],
                "change": [],
            }
            found: dict[str, int] = {}
            for _ in range(args.rounds):
                times["floor"].append(floor(Path(tmp)))
                for what in ("read", "exact", "near"):
                    took, found[what] = timed(Path(tmp), what)
                    times[what].append(took)
                load, change, found["told"] = watched(Path(tmp))
                times["load"].append(load)
                times["change"].append(change)
            median = {k: statistics.median(v) for k, v in times.items()}
            print(
                f"{files:>9,} files in {folders:,} folders ({copies:,} copies): "
                f"floor {median['floor']:.2f} s; "
                + "; ".join(
                    f"{k} {median[k]:.2f} s ({median[k] / median['floor']:.1f}x)"
                    for k in ("read", "exact", "near")
                )
                + f"; groups exact {found['exact']:,}, with near {found['near']:,}"
            )
            print(
                f"{'':>9}  daemon: load {median['load']:.2f} s "
                f"({median['load'] / median['floor']:.1f}x); one change settled "
                f"{median['change'] * 1000:.1f} ms, {found['told']} events for {CHANGES} changes"
            )
            results["exact"].append(median["exact"])
            results["near"].append(median["near"])
    if len(sizes) > 1:
        print(
            "growth exponent: "
            + ", ".join(f"{k} {exponent(sizes, v):.2f}" for k, v in results.items())
        )


if __name__ == "__main__":
    main()
