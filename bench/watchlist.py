"""What watchlists cost indexing a small file: 0, 1,000 and 100,000 references.

Each run stores ``--files`` new small text files (real records: one file coded by
``compute_record``, its record reused under new paths with its digests varied) one at a time
through the index's write side (``changes.apply_record`` in a transaction, as the daemon
applies a settled change), into a fresh SQLite store holding ``refs`` random references of
four units each (meta, text, data, instance). The anchor is the same run without watchlists;
the cost of coding the file (``compute_record``) is measured too, since indexing a small file
is coding it and applying it. Each run is in a fresh process, so its RSS delta after loading
the watchlists is its own.

Medians of ``--rounds`` rounds; ratios are the run's time over the anchor's (1.00: no cost).

    python bench/watchlist.py [--files 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

COUNTS = (0, 1_000, 100_000)


def _rss_kib() -> int:
    with Path("/proc/self/status").open() as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def run(refs: int, files: int) -> dict[str, float]:
    """One run in this process: seconds per file applied, coding time, RSS delta (KiB)."""
    from isccd.hashing import compute_record
    from isccd.model import Unit, UnitType
    from isccd.pipeline import changes
    from isccd.pipeline.index import Index
    from isccd.store import open_store, state_url
    from isccd.store.watchlists import NewRef

    rng = random.Random(refs)
    with tempfile.TemporaryDirectory() as tmp:
        sample = Path(tmp) / "note.txt"
        sample.write_text("a small note, one of many in a library\n" * 20)
        started = time.perf_counter()
        record = compute_record(str(sample))
        coding = time.perf_counter() - started
        url = state_url(Path(tmp) / "state")
        store = open_store(url, host="bench")
        if refs:
            store.begin()
            types = (UnitType.META, UnitType.TEXT, UnitType.DATA, UnitType.INSTANCE)
            made = [
                NewRef(f"ref-{i}", None, [(t, "ISCC:X", rng.randbytes(8)) for t in types])
                for i in range(refs)
            ]
            store.add_watch_refs("bench", None, made, 0.0)
            store.commit()
        before = _rss_kib()
        ix = Index(store)
        ix.begin()  # loads the watchlists
        ix.commit()
        rss = _rss_kib() - before
        times = []
        for n in range(files):
            units = tuple(
                Unit(u.type, u.iscc, rng.randbytes(len(u.digest)), u.profile) for u in record.units
            )
            one = replace(record, path=f"{tmp}/root/f{n}.txt", units=units,
                          datahash="1e20" + rng.randbytes(32).hex())  # fmt: skip
            started = time.perf_counter()
            ix.begin()
            changes.apply_record(ix, f"{tmp}/root", one)
            ix.commit()
            times.append(time.perf_counter() - started)
        ix.close()
    return {"apply": statistics.median(times), "coding": coding, "rss_kib": rss}


def main() -> None:
    """Run each count in a fresh process, ``--rounds`` times, and print the ratios."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(run(args.child, args.files)))
        return
    results: dict[int, list[dict[str, float]]] = {n: [] for n in COUNTS}
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    for _ in range(args.rounds):
        for n in COUNTS:
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(n), "--files", str(args.files)],
                capture_output=True, text=True, check=True, env=env,
            )  # fmt: skip
            results[n].append(json.loads(out.stdout.strip().splitlines()[-1]))
    anchor = statistics.median(r["apply"] for r in results[0])
    coding = statistics.median(r["coding"] for r in results[0])
    print(f"coding one small text file: {coding * 1e3:.2f} ms (compute_record, first call)")
    for n in COUNTS:
        apply = statistics.median(r["apply"] for r in results[n])
        rss = statistics.median(r["rss_kib"] for r in results[n])
        extra = (apply - anchor) / (apply + coding) * 100 if n else 0.0
        print(
            f"{n:>7,} references: {apply * 1e6:8.1f} us a file applied, "
            f"{apply / anchor:.2f}x the run without watchlists, "
            f"+{extra:4.1f} % of indexing a small file, RSS +{rss / 1024:.1f} MiB"
        )


if __name__ == "__main__":
    main()
