"""The store thread's share of a first scan of small files: ``changes.add_new`` of the records of
a job, in one process, next to the floor measured in the same run.

The files: the first ``--files`` (all 20,000) of the small-file tree of ``bench/smallfiles.py``
(60 % random-word texts of 200 B-4 KB, 40 % random binaries of 100 B-8 KB, 200 to a
directory), in sorted order; the tree is built in ``--tree`` when missing. Their records are
computed once with ``compute_record`` (kernels warmed) and kept in a pickle under ``/tmp``,
keyed by the tree, the file count and the isccd sources that make records.

Each round times, in turn (so that load from other work on the machine falls on all alike), on
a fresh SQLite store in a temporary directory:

- **floor**: the rows the index stores (``files``, ``units``, ``events``: their values made
  beforehand) inserted with plain ``sqlite3`` ``executemany``, one transaction per job of
  450 files;
- **add_new, B=32, 64, 450, 512**: what the store owner thread runs for a job of B new files:
  ``begin``, ``savepoint``, ``changes.add_new(ix, root, records[i:i+B])``, ``release``, ``commit``
  (64 files are one worker's message, a job of its own when the owner keeps up and nothing
  gathers; 512 what a scan's job gathers at most, ``isccd.pipeline.batches.Gathering``; 32
  and 450 are the sizes measured before).

The records are kept out of the collector's scans (``gc.freeze``): the daemon holds a job's
records at a time, not a scan's. The figures are medians of the rounds, in CPU microseconds of
this process per file. Every
round must give the same results: a checksum of the events (sequence, type, path, data), the
rows of ``files``, ``units`` and ``near``, and the live count of each root is printed, and
rounds that disagree stop the benchmark. ``--profile`` prints a cProfile of one more pass of
B=450 instead of timing.

    python bench/apply.py [--tree /tmp/sf] [--files 20000] [--rounds 5] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import json
import os
import pickle
import platform
import pstats
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from record import per_file
from smallfiles import small_files

import isccd
from isccd.hashing import compute_record
from isccd.iscc.kernels import warmup
from isccd.model import FileRecord
from isccd.pipeline import changes
from isccd.pipeline.index import Index
from isccd.store import SqliteStore

#: The jobs' sizes: a worker's message, and what a scan's job gathers (and those measured
#: before: 32, 450).
SIZES = (32, 64, 450, 512)
#: The size of the floor's transactions, and of the profiled pass.
FLOOR = 450
#: The time every event and row is stamped with, so that rounds compare equal.
NOW = 1_700_000_000.0


def tree_files(tree: Path, count: int) -> list[str]:
    """The first ``count`` files of ``tree``, by sorted path."""
    paths = [f"{directory}/{name}" for directory, _, names in os.walk(tree) for name in names]
    return sorted(paths)[:count]


def records_of(tree: Path, count: int) -> list[FileRecord]:
    """The records of the first ``count`` files of ``tree``, computed once and cached."""
    package = Path(isccd.__file__).parent
    sources = hashlib.sha256(str(tree).encode() + str(count).encode())
    for source in sorted([*package.glob("hashing/*.py"), *package.glob("iscc/*.py")]):
        sources.update(source.read_bytes())
    sources.update((package / "model.py").read_bytes())
    cache = Path(tempfile.gettempdir()) / f"isccd-apply-{sources.hexdigest()[:16]}.pickle"
    if cache.exists():
        with cache.open("rb") as f:
            records: list[FileRecord] = pickle.load(f)
            return records
    warmup()
    root = str(tree)
    records = [compute_record(path, root=root) for path in tree_files(tree, count)]
    with cache.open("wb") as f:
        pickle.dump(records, f)
    return records


def apply_pass(db: Path, root: str, records: list[FileRecord], size: int) -> None:
    """Apply ``records`` to the store at ``db`` through the index, ``size`` new files a job."""
    index = Index(SqliteStore(db), clock=lambda: NOW)
    try:
        for start in range(0, len(records), size):
            index.begin()
            index.savepoint()
            if changes.add_new(index, root, records[start : start + size]) is None:
                raise SystemExit("add_new refused a job of new files")
            index.release()
            index.commit()
    finally:
        index.close()


def floor_rows(
    db: Path, records: list[FileRecord]
) -> tuple[str, list[tuple[list[tuple[object, ...]], ...]]]:
    """The columns of ``files`` and the rows of ``files``, ``units`` and ``events`` the index
    stored in ``db``, per job of the largest size (an event goes with its file's job)."""
    size = FLOOR
    job_of = {record.path: number // size for number, record in enumerate(records)}
    jobs: list[tuple[list[tuple[object, ...]], ...]] = [
        ([], [], []) for _ in range((len(records) + size - 1) // size)
    ]
    with sqlite3.connect(db) as conn:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(files)") if r[1] != "id"]
        select = f"SELECT id, {','.join(columns)} FROM files ORDER BY id"
        first: dict[int, int] = {}
        for number, row in enumerate(conn.execute(select)):
            first[row[0]] = number // size
            jobs[number // size][0].append(row[1:])
        for row in conn.execute("SELECT * FROM units ORDER BY file_id, type"):
            jobs[first[row[0]]][1].append(row)
        events = "SELECT type, time, root, path, data FROM events ORDER BY seq"
        for row in conn.execute(events):
            jobs[job_of[os.fsdecode(row[3])]][2].append(row)
    return ",".join(columns), jobs


def floor_pass(
    db: Path, template: Path, jobs: list[tuple[list[tuple[object, ...]], ...]], columns: str
) -> None:
    """Insert the same rows with plain ``sqlite3``, one transaction per job."""
    db.write_bytes(template.read_bytes())
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    marks = ",".join("?" * (columns.count(",") + 1))
    for files, units, events in jobs:
        conn.execute("BEGIN")
        conn.executemany(f"INSERT INTO files ({columns}) VALUES ({marks})", files)
        conn.executemany("INSERT INTO units VALUES (?,?,?,?,?)", units)
        conn.executemany(
            "INSERT INTO events (type, time, root, path, data) VALUES (?,?,?,?,?)", events
        )
        conn.execute("COMMIT")
    conn.close()


def checksum(db: Path) -> str:
    """A digest of everything a change in applying could alter: events in order, the rows of
    files, units and near pairs, and the live count of each root."""
    digest = hashlib.sha256()
    with sqlite3.connect(db) as conn:
        for seq, type_, root, path, data in conn.execute(
            "SELECT seq, type, root, path, data FROM events ORDER BY seq"
        ):
            digest.update(repr((seq, type_, root, path, json.loads(data))).encode())
        for table, order in (("files", "id"), ("units", "file_id, type"), ("near", "a, b, unit")):
            for row in conn.execute(f"SELECT * FROM {table} ORDER BY {order}"):
                digest.update(repr(row).encode())
        for row in conn.execute("SELECT path, live FROM roots ORDER BY path"):
            digest.update(repr(row).encode())
    return digest.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=Path("/tmp/sf"))
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="print a cProfile of one pass")
    parser.add_argument("--sort", default="tottime", help="the profile's order (pstats keys)")
    parser.add_argument("--lines", type=int, default=40, help="profile lines printed")
    args = parser.parse_args()
    tree = args.tree.resolve()
    if not tree.exists():
        small_files(tree, 20_000, per_dir=200)
    records = records_of(tree, args.files)
    # The daemon holds a job's records, not the scan's: kept out of the collector's scans here.
    gc.freeze()
    root = str(tree)
    work = Path(tempfile.mkdtemp(prefix="isccd-apply-"))
    template = work / "template.db"
    SqliteStore(template).close()  # the schema, empty
    sample = work / "sample.db"
    apply_pass(sample, root, records, FLOOR)
    results = checksum(sample)
    columns, jobs = floor_rows(sample, records)
    with sqlite3.connect(sample) as conn:
        events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    print(
        f"{len(records):,} small files of {tree}, {events:,} events; "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
        f"medians of {args.rounds} alternated rounds; results {results}"
    )
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        apply_pass(work / "profile.db", root, records, FLOOR)
        profiler.disable()
        pstats.Stats(profiler).sort_stats(args.sort).print_stats(args.lines)
        return
    passes: dict[str, Callable[[Path], None]] = {
        "floor": lambda db: floor_pass(db, template, jobs, columns),
        **{
            f"add_new, B={size}": (lambda db, size=size: apply_pass(db, root, records, size))
            for size in SIZES
        },
    }
    cpu: dict[str, list[float]] = {name: [] for name in passes}
    for number in range(args.rounds):
        for position, (name, run) in enumerate(passes.items()):
            db = work / f"round{number}-{position}.db"
            start = time.process_time()
            run(db)
            cpu[name].append(per_file(time.process_time() - start, len(records)))
            if name != "floor" and (again := checksum(db)) != results:
                raise SystemExit(f"round {number + 1}, {name}: results {again} != {results}")
            for path in work.glob(f"{db.name}*"):
                path.unlink()
        print(f"  round {number + 1}: " + ", ".join(f"{n} {cpu[n][-1]:.1f}" for n in cpu))
    print(f"\n  {'CPU µs per file':20} {'median':>8} {'x floor':>8}")
    floor = statistics.median(cpu["floor"])
    for name, times in cpu.items():
        median = statistics.median(times)
        print(f"  {name:20} {median:>8.1f} {median / floor:>8.2f}")
    print(f"  results {results}")


if __name__ == "__main__":
    main()
