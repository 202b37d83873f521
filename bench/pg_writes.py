"""A fleet's write path at the database: the statements (round trips) and the time of
``PostgresStore.add_files`` of 1,000 new files and of ``append_events`` of 1,000 events.

Each round is one transaction of each, on one store of a PostgreSQL server started for the run
in a temporary directory (``fsync`` on), over its Unix socket: 1,000 files in 20 new
directories, one Data-Code unit each, then 1,000 ``file.added`` events. The statements are
counted at the store (``PgDatabase._exec``, each one round trip; statements queued with the
next one travel with it), the ``COMMIT`` included, ``BEGIN`` not. The first round also interns
the root and the profile. Medians of the rounds, in milliseconds.

    python bench/pg_writes.py [--files 1000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.pg: the test server

from isccd.model import EventType
from isccd.store import NewEvent, open_store
from isccd.store.pgdatabase import PgDatabase
from tests.pg import PgServer, find_bin_dir
from tests.store.conftest import hashed, make_record

calls = [0]
_exec = PgDatabase._exec


def _counted(self: PgDatabase, *args: Any, **kwargs: Any) -> Any:
    calls[0] += 1
    return _exec(self, *args, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    n = args.files
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise SystemExit("PostgreSQL is not installed: apt-get install postgresql")
    PgDatabase._exec = _counted  # type: ignore[method-assign]
    server = PgServer(bin_dir)
    server.start(durable=True)
    files: list[tuple[float, int]] = []
    events: list[tuple[float, int]] = []
    try:
        store = open_store(server.url(server.new_database()), host="host-a")
        for r in range(args.rounds):
            records = [
                make_record(
                    f"/data/r{r}/d{i % 20}/f{i}.txt",
                    ino=r * n + i,
                    datahash=hashed(r * n + i),
                    data=(r * n + i).to_bytes(8, "big"),
                )
                for i in range(n)
            ]
            store.begin()
            calls[0], start = 0, time.perf_counter()
            store.add_files("/data", records, 1.0)
            store.commit()
            files.append((time.perf_counter() - start, calls[0]))
            new = [
                NewEvent(EventType.FILE_ADDED, "/data", f"/data/r{r}/f{i}", {"n": i}, 1.0, None, i)
                for i in range(n)
            ]
            store.begin()
            calls[0], start = 0, time.perf_counter()
            store.append_events(new)
            store.commit()
            events.append((time.perf_counter() - start, calls[0]))
        store.close()
    finally:
        server.stop()
    for name, got in (("add_files", files), ("append_events", events)):
        times = sorted(t * 1000 for t, _ in got)
        print(
            f"{name:14} of {n:,}: median {statistics.median(times):6.0f} ms "
            f"({times[0]:.0f}-{times[-1]:.0f}), statements {[c for _, c in got]}"
        )


if __name__ == "__main__":
    main()
