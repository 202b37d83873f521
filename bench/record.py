"""The worker's share of a small-file scan: ``compute_record`` per file, and the messages of files
a worker is sent, in one process, next to the floor measured in the same run.

The files: the first ``--files`` (4,000) of the small-file tree of ``bench/smallfiles.py`` (60 %
random-word texts of 200 B-4 KB, 40 % random binaries of 100 B-8 KB, 200 to a directory), in
sorted order; the tree is built in ``--tree`` when missing. The numba kernels are warmed and
every file is coded once before timing, so the page cache holds the tree (warm).

Each round times, in turn (so that load from other work on the machine falls on both alike):

- **floor**: open, read, BLAKE3- and xxh64-hash each file, in this process;
- **compute_record**: ``compute_record(path, root=TREE)`` of each file, alone;
- **worker jobs**: what a worker runs for a scan's messages: ``hash_job`` of the files in
  batches of ``BATCH_FILES`` (128) as the pipeline sends them, each file's record packed for the
  pipe (each root opened once per message). Unpacking, the daemon's share, is not timed.

The figures are medians of the rounds, in microseconds per file of wall time and of this
process's CPU time (the steadier one on a shared machine; the ratio uses it). The cyclic
garbage collector is paused during each pass (and collects before it): a pass keeps all its
4,000 records for the checksum, which a worker never does (it frees each message's records once
sent, and allocates nothing that lasts), so the collections they caused fell into whichever
pass came next and moved the figures by 10 µs per file and more. Every round must
give the same codes: a checksum of each file's path, media type, ISCC-CODE, units, name and
issues is printed, and rounds that disagree stop the benchmark. ``--profile`` prints a cProfile
of one more pass instead of timing.

    python bench/record.py [--tree /tmp/sfw] [--files 4000] [--rounds 5] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import os
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import blake3
import xxhash

sys.path.insert(0, str(Path(__file__).resolve().parent))

from smallfiles import small_files

from isccd.hashing import CodeOptions, compute_record
from isccd.hashing.wire import Packed, unpack
from isccd.hashing.worker import hash_job
from isccd.iscc.kernels import warmup
from isccd.model import FileRecord
from isccd.pipeline.pipeline import BATCH_FILES


def tree_files(tree: Path, count: int) -> list[str]:
    """The first ``count`` files of ``tree``, by sorted path."""
    paths = [f"{directory}/{name}" for directory, _, names in os.walk(tree) for name in names]
    return sorted(paths)[:count]


def floor_pass(paths: list[str], root: str) -> list[FileRecord]:
    """Open, read, BLAKE3- and xxh64-hash each file (``root`` unused: the signature of
    :func:`record_pass`, so that the rounds time both alike)."""
    for path in paths:
        # The plain built-in open, as any indexer in Python would.
        with open(path, "rb") as f:  # noqa: PTH123
            data = f.read()
        blake3.blake3(data).digest()
        xxhash.xxh64(data).digest()
    return []


def record_pass(paths: list[str], root: str) -> list[FileRecord]:
    return [compute_record(path, root=root) for path in paths]


def job_pass(paths: list[str], root: str) -> list[Packed]:
    options, packed = CodeOptions(), []
    for start in range(0, len(paths), BATCH_FILES):
        done, _ = hash_job(
            [(root, p, None) for p in paths[start : start + BATCH_FILES]], options, False
        )
        packed += done
    return packed


#: The passes each round times, in turn.
PASSES: dict[str, Callable[[list[str], str], list[FileRecord] | list[Packed]]] = {
    "floor": floor_pass,
    "compute_record": record_pass,
    "worker jobs": job_pass,
}


def checksum(records: list[FileRecord] | list[Packed]) -> str:
    """A digest of everything a change in the coding could alter (timings left out)."""
    digest = hashlib.sha256()
    for r in (unpack(r) if isinstance(r, tuple) else r for r in records):
        units = [(u.type.value, u.iscc, u.digest, u.profile) for u in r.units]
        issues = [(i.stage, i.kind.value, i.reason, i.code) for i in r.issues]
        fields = (r.path, r.mediatype, r.mode, r.iscc, r.name, r.datahash, r.characters)
        digest.update(repr((fields, units, issues, r.metahash, r.named_by_file)).encode())
    return digest.hexdigest()[:16]


def per_file(seconds: float, count: int) -> float:
    return seconds / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=Path("/tmp/sfw"))
    parser.add_argument("--files", type=int, default=4_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="print a cProfile of one pass")
    parser.add_argument("--sort", default="tottime", help="the profile's order (pstats keys)")
    parser.add_argument("--lines", type=int, default=40, help="profile lines printed")
    args = parser.parse_args()
    tree = args.tree.resolve()
    if not tree.exists():
        small_files(tree, 20_000, per_dir=200)
    paths = tree_files(tree, args.files)
    root = str(tree)
    warmup()
    codes = checksum(record_pass(paths, root))  # warms the page cache and every lazy import
    floor_pass(paths, root)
    if checksum(job_pass(paths, root)) != codes:
        raise SystemExit("the worker's jobs give other codes than compute_record")
    print(
        f"{len(paths):,} small files of {tree}; Python {platform.python_version()}; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; warm page cache; "
        f"medians of {args.rounds} alternated rounds; codes {codes}"
    )
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        record_pass(paths, root)
        profiler.disable()
        pstats.Stats(profiler).sort_stats(args.sort).print_stats(args.lines)
        return
    wall: dict[str, list[float]] = {name: [] for name in PASSES}
    cpu: dict[str, list[float]] = {name: [] for name in PASSES}
    for number in range(args.rounds):
        for name, run in PASSES.items():
            records: list[FileRecord] | list[Packed] = []  # the last pass's, freed first
            gc.collect()
            gc.disable()
            start, start_cpu = time.perf_counter(), time.process_time()
            records = run(paths, root)
            wall[name].append(per_file(time.perf_counter() - start, len(paths)))
            cpu[name].append(per_file(time.process_time() - start_cpu, len(paths)))
            gc.enable()
            again = checksum(records) if records else codes
            if again != codes:
                raise SystemExit(f"round {number + 1} gave other codes: {again} != {codes}")
        print(
            f"  round {number + 1}: "
            + ", ".join(
                f"{name} {wall[name][-1]:.1f} µs ({cpu[name][-1]:.1f} CPU)" for name in wall
            )
        )
    print(f"\n  {'':16} {'µs/file':>9} {'CPU µs':>9} {'x floor':>8}")
    floor = statistics.median(cpu["floor"])
    for name, times in wall.items():
        median = statistics.median(cpu[name])
        print(f"  {name:16} {statistics.median(times):>9.1f} {median:>9.1f} {median / floor:>8.2f}")
    met = "met" if statistics.median(cpu["compute_record"]) <= 130 else "NOT met"
    print(f"  target <= 130 CPU µs/file: {met}; codes {codes}")


if __name__ == "__main__":
    main()
