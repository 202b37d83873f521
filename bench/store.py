"""The store's figures on both backends: SQLite (the embedded default) next to PostgreSQL (a
fleet's shared database), on the same synthetic files, in the same run.

1. **Insert**: ``--files`` files (100,000; four 64-bit units each, as ``bench/index.py``'s store
   figure), in transactions of ``--batch`` files (500, about what the owner thread's group
   commit gathers under load): files per second.
2. **Size**: bytes per file on disk: SQLite's database file (after a checkpoint), PostgreSQL's
   tables with their indexes and TOAST (``pg_total_relation_size``, after ``VACUUM``).
3. **Queries**, median and p99 of ``--queries`` (2,000) random lookups each: an exact match
   (``files_by_datahash``; PostgreSQL also fleet-wide), the file at a path (``file_at``, what a
   reconcile asks of every changed file), and the near-duplicate candidates' keys
   (``file_keys`` of 10 ids, what confirming the in-memory index's hits reads); then loading one
   unit type's digests for the in-memory index (``unit_digests``, start-up).

PostgreSQL runs on this machine (a server started for the run in a temporary directory, as the
tests do but with ``fsync`` on, or ``--pg URL``), with its default settings, reached over its
Unix socket: no network latency is included. SQLite runs as isccd opens it (WAL,
``synchronous=NORMAL``). Say
that the machine was shared when quoting these figures.

    python bench/store.py [--quick] [--pg URL]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.pg: the test server

from index import synthetic_record  # bench/index.py, beside this file

from isccd.model import UnitType
from isccd.store import SqliteStore, Store, open_store, state_url
from tests.pg import PgServer, find_bin_dir

ROOT = "/srv/archive"


@contextlib.contextmanager
def postgres(url: str | None) -> Iterator[str]:
    """The URL of an empty database: ``url``, or one on a server started for the run."""
    if url is not None:
        yield url
        return
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise SystemExit("PostgreSQL is not installed: apt-get install postgresql, or --pg URL")
    server = PgServer(bin_dir)
    try:
        server.start(durable=True)
        yield server.url(server.new_database())
    finally:
        server.stop()


def insert(store: Store, count: int, batch: int) -> tuple[float, list[str]]:
    """Insert ``count`` synthetic files; files per second, and their datahashes."""
    rng = random.Random(9)
    hashes = []
    start = time.perf_counter()
    for first in range(0, count, batch):
        store.begin()
        for i in range(first, min(first + batch, count)):
            record = synthetic_record(i, rng)
            assert record.datahash is not None
            hashes.append(record.datahash)
            store.add_file(ROOT, record, 1.7e9)
        store.commit()
    return count / (time.perf_counter() - start), hashes


def latency(queries: int, ask: Callable[[int], object]) -> tuple[float, float]:
    """Median and p99 in microseconds of ``ask(i)`` for ``i`` in ``range(queries)``."""
    times = []
    for i in range(queries):
        start = time.perf_counter_ns()
        ask(i)
        times.append((time.perf_counter_ns() - start) / 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99) - 1]


def measure(name: str, store: Store, args: argparse.Namespace, size: Callable[[], int]) -> None:
    rate, hashes = insert(store, args.files, args.batch)
    print(f"\n{name}")
    print(f"   insert       {rate:>10,.0f} files/s (batches of {args.batch})")
    total = size()
    print(f"   on disk      {total / args.files:>10,.0f} bytes per file ({total / 2**20:,.0f} MiB)")
    rng = random.Random(1)
    picks = [rng.randrange(args.files) for _ in range(args.queries)]
    paths = [synthetic_record(i, random.Random(0)).path for i in picks]
    ids = [
        [f.id for f in store.files_by_datahash(hashes[i])]
        for i in rng.sample(range(args.files), 200)
    ]
    flat = [i for found in ids for i in found]
    cases: list[tuple[str, Callable[[int], object]]] = [
        ("exact match", lambda q: store.files_by_datahash(hashes[picks[q]])),
        ("file at path", lambda q: store.file_at(paths[q])),
        ("near keys x10", lambda q: store.file_keys(rng.sample(flat, 10))),
    ]
    if not isinstance(store, SqliteStore):
        cases.insert(
            1, ("exact, fleet", lambda q: store.files_by_datahash(hashes[picks[q]], fleet=True))
        )
    for label, ask in cases:
        median, p99 = latency(args.queries, ask)
        print(f"   {label:<13}{median:>10,.0f} µs median, {p99:,.0f} µs p99")
    start = time.perf_counter()
    loaded = sum(len(ids) for ids, _ in store.unit_codes(UnitType.DATA))
    took = time.perf_counter() - start
    print(f"   load digests {loaded / took:>10,.0f} codes/s ({loaded:,} in {took:.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the files")
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--pg", metavar="URL", help="an empty PostgreSQL database to use")
    args = parser.parse_args()
    if args.quick:
        args.files //= 10
    print(f"isccd store benchmark: {args.files:,} files; python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="isccd-bench-") as tmp:
        sqlite = open_store(state_url(Path(tmp) / "state"), host="bench")
        assert isinstance(sqlite, SqliteStore)
        db = Path(sqlite.path)
        try:
            measure("SQLite (WAL, one file)", sqlite, args, lambda: db.stat().st_size)
        finally:
            sqlite.close()

    with postgres(args.pg) as url:
        import psycopg

        store = open_store(url, host="bench")

        def pg_size() -> int:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE")
                row = conn.execute(
                    "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = current_schema() AND c.relkind = 'r'"
                ).fetchone()
            return int(row[0]) if row else 0

        try:
            measure("PostgreSQL 15 (same machine, Unix socket)", store, args, pg_size)
        finally:
            store.close()


if __name__ == "__main__":
    main()
