"""The index's figures: re-scan speed, initial scan speed, query latency and memory, store size.

1. **Unchanged re-scan** of ``--files`` files (100,000): ``Pipeline.reconcile`` over a tree whose
   every file the store already knows, so nothing is opened (the hasher would raise). Anchor: a
   bare ``os.scandir`` + ``lstat`` walk, the floor any stat-only scan stands on.
2. **Initial scan** of ``--mixed`` small mixed files (20,000: text, PNG images, JSON, binaries):
   ``isccd scan -j N`` as users run it, next to ``isccd code FILE`` run once per file (one
   process per file, measured on a sample and extrapolated) and ``isccd code DIR -j N``.
3. **Near-duplicate query** at ``--codes`` stored 64-bit codes (1,000,000):
   ``HammingIndex.within`` at radius 12, median of many queries, checked exact against an
   independent brute force (``numpy.unpackbits``), which is also the anchor; index memory.
   Then ``HammingIndex.within_each`` of 512 queries a call at radius 8 (the Data-Code's
   default, answered through the block index) at 10,000, 100,000 and ``--codes`` codes, next to
   a flat numpy scan of the same queries (XOR, popcount, compare; the anchor), checked equal.
4. **Store size and RSS** at ``--store`` indexed files (1,000,000, synthetic records with four
   64-bit units each; every 50th file an exact copy of the one before, every 10th near it by
   its Data-Code, 3 bits apart, with the relation stored): bytes per file on disk, then in a
   fresh process the time to open the pipeline (quick_check, index load) and its resident
   memory; then ``isccd dupes --json`` and ``isccd dupes --near --json`` on that store as
   users run them (seconds and the command's maximum RSS), the groups they found checked
   against the copies and relations made.

Medians of ``--rounds`` rounds; ratios above 1 mean isccd is faster.

    python bench/index.py [--quick] [--only rescan,scan,query,store] [--codes N] [--files N]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from dataclasses import replace
from pathlib import Path

import numpy as np

from isccd.hamming import HammingIndex
from isccd.model import FileRecord, FileStat, Mode, Unit, UnitType
from isccd.pipeline import Pipeline, PipelineOptions
from isccd.pipeline.index import Index
from isccd.store import NearPair, SqliteStore, open_store, state_url

ROOT = "/bench"


def median(values: list[float]) -> float:
    return statistics.median(values)


def rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as f:  # noqa: PTH123 -- procfs
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


# -- 1. unchanged re-scan ------------------------------------------------------------------------


class NoHashing:
    """A hasher that must never be called: an unchanged re-scan opens no file."""

    async def __call__(self, root: str, path: str, units: frozenset[UnitType] | None) -> FileRecord:
        raise AssertionError(f"{path} was opened during an unchanged re-scan")


def make_tree(top: Path, count: int, per_dir: int = 100) -> None:
    for i in range(count):
        directory = top / f"d{i // per_dir:04d}"
        if i % per_dir == 0:
            directory.mkdir(parents=True)
        (directory / f"file-{i:06d}.txt").write_bytes(b"x")


def stat_record(path: str, st: os.stat_result) -> FileRecord:
    digest = hashlib.blake2b(path.encode(), digest_size=8).digest()
    unit = Unit(UnitType.DATA, "ISCC:GAA" + digest.hex().upper(), digest, "iscc/1.5.0 bits/64")
    return FileRecord(path, FileStat.from_os(st), units=(unit,), datahash="1e20" + digest.hex() * 4)


def bench_rescan(count: int, rounds: int) -> None:
    print(f"\n1. unchanged re-scan of {count:,} files (stat only)")
    with tempfile.TemporaryDirectory(prefix="isccd-bench-") as tmp:
        top = Path(tmp) / "tree"
        make_tree(top, count)
        url = state_url(Path(tmp) / "state")
        store = open_store(url)
        store.begin()
        for directory, _, names in os.walk(top):
            for name in names:
                path = os.path.join(directory, name)  # noqa: PTH118 -- fast path building
                store.add_file(str(top), stat_record(path, os.lstat(path)), time.time())
        store.commit()
        store.close()
        ours, floor = [], []
        for _ in range(rounds):
            start = time.perf_counter()
            seen = 0
            stack = [str(top)]
            while stack:
                with os.scandir(stack.pop()) as it:
                    for entry in it:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        else:
                            entry.stat(follow_symlinks=False)
                            seen += 1
            floor.append(count / (time.perf_counter() - start))
            assert seen == count
            pipeline = Pipeline(url, PipelineOptions(), hasher=NoHashing())
            pipeline.open()
            start = time.perf_counter()
            stats = asyncio.run(pipeline.reconcile(str(top)))
            ours.append(count / (time.perf_counter() - start))
            pipeline.close()
            assert stats.unchanged == count and stats.hashed == 0, stats
        print(f"   isccd reconcile        {median(ours):>10,.0f} files/s")
        print(f"   scandir + lstat (floor){median(floor):>10,.0f} files/s")
        print(f"   ratio isccd / floor    {median(ours) / median(floor):>10.2f}")
        print(f"   target >= 50,000 files/s: {'met' if median(ours) >= 50_000 else 'NOT met'}")


# -- 2. initial scan -----------------------------------------------------------------------------


def make_mixed(top: Path, count: int) -> None:
    """Small files as a home or project folder holds them: notes, pictures, records, blobs.
    Every file has its own content (a vocabulary of 5,000 words, pictures of random shapes), so
    that duplicates are as rare as in real folders."""
    from PIL import Image, ImageDraw

    rng = random.Random(5)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = ["".join(rng.choices(letters, k=rng.randint(2, 10))) for _ in range(5000)]
    for i in range(count):
        directory = top / f"d{i // 200:03d}"
        directory.mkdir(parents=True, exist_ok=True)
        kind = i % 4
        if kind == 0:
            text = " ".join(rng.choices(vocabulary, k=rng.randint(50, 800)))
            (directory / f"note-{i}.txt").write_text(text)
        elif kind == 1:
            img = Image.new("RGB", (96, 64), tuple(rng.randrange(256) for _ in range(3)))
            draw = ImageDraw.Draw(img)
            for _ in range(6):
                x, y = rng.randrange(80), rng.randrange(48)
                box = (x, y, x + rng.randint(4, 40), y + rng.randint(4, 30))
                draw.rectangle(box, fill=tuple(rng.randrange(256) for _ in range(3)))
            img.save(directory / f"pic-{i}.png")
        elif kind == 2:
            data = {"id": i, "tags": rng.sample(vocabulary, 5), "score": rng.random()}
            (directory / f"record-{i}.json").write_text(json.dumps(data))
        else:
            (directory / f"blob-{i}.bin").write_bytes(rng.randbytes(rng.randint(100, 20_000)))


def isccd(*args: str) -> float:
    """Seconds one ``isccd`` command took; a command that broke (not 0, nor 1 for files it
    could not code) stops the benchmark instead of giving a figure."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "isccd", *args], check=False, capture_output=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"isccd {args[0]} failed ({done.returncode}): {done.stderr.decode()}")
    return elapsed


def bench_scan(count: int, jobs: int, sample: int) -> None:
    print(f"\n2. initial scan of {count:,} small mixed files, {jobs} workers")
    with tempfile.TemporaryDirectory(prefix="isccd-bench-") as tmp:
        top = Path(tmp) / "mixed"
        make_mixed(top, count)
        scan = isccd("scan", "--state", str(Path(tmp) / "state"), "-j", str(jobs), str(top))
        code_pool = isccd("code", "--jsonl", "-j", str(jobs), str(top))
        files = sorted(p for p in top.rglob("*") if p.is_file())
        picks = random.Random(1).sample(files, min(sample, len(files)))
        per_file = median([isccd("code", str(p)) for p in picks])
        print(f"   isccd scan -j {jobs}            {count / scan:>8,.0f} files/s ({scan:.1f} s)")
        print(f"   isccd code DIR -j {jobs}        {count / code_pool:>8,.0f} files/s")
        print(f"   isccd code FILE, per file   {1 / per_file:>8,.1f} files/s "
              f"(median {per_file * 1000:.0f} ms per process, {len(picks)} files)")  # fmt: skip
        print(f"   ratio scan / code per file  {(count / scan) * per_file:>8,.0f}")


# -- 3. near-duplicate query ---------------------------------------------------------------------


def bench_query(count: int, queries: int) -> None:
    print(f"\n3. near-duplicate query at {count:,} stored 64-bit codes")
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 2**63, size=count, dtype=np.int64).astype(np.uint64)
    codes ^= rng.integers(0, 2, size=count, dtype=np.int64).astype(np.uint64) << np.uint64(63)
    index = HammingIndex(capacity=count)
    index.add_many(np.arange(count).tolist(), codes.tolist())
    rows = rng.integers(0, count, queries)
    bits = rng.integers(0, 64, queries)
    probes = [int(codes[int(i)]) ^ (1 << int(b)) for i, b in zip(rows, bits, strict=True)]
    ours = []
    for probe in probes:
        start = time.perf_counter()
        index.within(probe, 12)
        ours.append(time.perf_counter() - start)
    as_bytes = codes.view(np.uint8).reshape(count, 8)
    naive = []
    for probe in probes[:20]:
        start = time.perf_counter()
        q = np.frombuffer(np.uint64(probe).tobytes(), dtype=np.uint8)
        dist = np.unpackbits(as_bytes ^ q, axis=1).sum(axis=1)
        expected = sorted((int(d), int(i)) for i in np.flatnonzero(dist <= 12) for d in [dist[i]])
        naive.append(time.perf_counter() - start)
        got = sorted((h.distance, h.file_id) for h in index.within(probe, 12))
        assert got == expected, "the index disagrees with the brute force"
    print(f"   isccd HammingIndex.within(r=12)  median {median(ours) * 1000:7.2f} ms "
          f"(p99 {np.percentile(ours, 99) * 1000:.2f} ms, {queries} queries)")  # fmt: skip
    print(f"   numpy unpackbits brute force     median {median(naive) * 1000:7.2f} ms")
    print(f"   ratio                            {median(naive) / median(ours):7.1f}")
    mib = index.nbytes / 2**20
    print(f"   exact: 20 queries equal the brute force; index arrays {mib:.1f} MiB")
    print(
        "   targets < 5 ms, < 50 MB:",
        "met" if median(ours) < 0.005 and index.nbytes < 50e6 else "NOT met",
    )
    bench_block_index(codes, rng)


def bench_block_index(codes: np.ndarray, rng: np.random.Generator, queries: int = 512) -> None:
    """512 queries a call at radius 8 through ``within_each`` (the block index) and through a
    flat numpy scan, at growing numbers of codes; the hits of both must agree."""
    print(f"\n   {queries} queries a call at radius 8 (block index), median of 5 calls:")
    print("        codes   within_each   flat scan   ratio   block index memory")
    for count in sorted({10_000, 100_000, len(codes)}):
        if count > len(codes):
            continue
        stored = codes[:count]
        index = HammingIndex(capacity=count)
        index.add_many(np.arange(count).tolist(), stored.tolist())
        rows = rng.integers(0, count, queries)
        flips = np.uint64(1) << rng.integers(0, 64, queries).astype(np.uint64)
        probes = (stored[rows] ^ flips).tolist()
        before = index.nbytes
        asked = np.asarray(probes, dtype=np.uint64)
        ours, flat = [], []
        for _ in range(5):
            start = time.perf_counter()
            found = index.within_each(probes, 8)
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            expected: list[list[tuple[int, int]]] = [[] for _ in probes]
            step = max(1, (1 << 17) // count)
            for first in range(0, queries, step):
                distances = np.bitwise_count(stored ^ asked[first : first + step, None]).ravel()
                cells = np.flatnonzero(distances <= 8)
                for cell, distance in zip(cells.tolist(), distances[cells].tolist(), strict=True):
                    expected[first + cell // count].append((distance, cell % count))
            flat.append(time.perf_counter() - start)
        got = [[(h.distance, h.file_id) for h in hits] for hits in found]
        assert got == [sorted(e) for e in expected], "the block index disagrees with the scan"
        extra = index.nbytes - before  # the block index, built by the first call
        print(
            f"   {count:>10,}   {median(ours) / queries * 1e6:8.2f} µs  "
            f"{median(flat) / queries * 1e6:8.2f} µs  {median(flat) / median(ours):5.1f}x   "
            f"{extra / 2**20:6.1f} MiB"
        )


# -- 4. store size and RSS -----------------------------------------------------------------------


def synthetic_record(i: int, rng: random.Random) -> FileRecord:
    path = (
        f"/srv/archive/project-{i // 10_000:03d}/folder-{i // 100 % 100:02d}/document-{i:07d}.txt"
    )
    units = []
    content = UnitType.TEXT if i % 2 else UnitType.IMAGE
    kinds = (
        (UnitType.META, "AAA"),
        (content, "EAA"),
        (UnitType.DATA, "GAA"),
        (UnitType.INSTANCE, "IAA"),
    )
    for unit_type, prefix in kinds:
        digest = rng.randbytes(8)
        units.append(Unit(unit_type, f"ISCC:{prefix}{digest.hex().upper()[:13]}", digest,
                          f"iscc/1.5.0 bits/64 {unit_type.value}/1 isccd-extract/1"))  # fmt: skip
    size = rng.randint(1_000, 5_000_000)
    return FileRecord(
        path=path,
        stat=FileStat(
            2049, 1_000_000 + i, size, 1_700_000_000_000_000_000 + i, 1_700_000_000_000_000_000 + i
        ),
        mediatype="text/plain" if i % 2 else "image/png",
        mode=Mode.TEXT if i % 2 else Mode.IMAGE,
        iscc="ISCC:KACY" + rng.randbytes(24).hex().upper()[:50],
        name=f"document {i}",
        units=tuple(units),
        datahash="1e20" + rng.randbytes(32).hex(),
        filesize=size,
        characters=size // 2 if i % 2 else None,
        width=None if i % 2 else 1024,
        height=None if i % 2 else 768,
        extractor="text/utf-8" if i % 2 else "pillow/11.0.0",
    )


def with_duplicates(records: list[FileRecord], first: int) -> tuple[list[FileRecord], list[int]]:
    """``records`` (the files ``first`` on) with every 50th an exact copy of the file before it
    (its own path and inode), every 10th near the file before it by its Data-Code (3 bits
    apart); and the positions of those near files."""
    out, near = list(records), []
    for k in range(1, len(out)):
        i, before, mine = first + k, out[k - 1], out[k]
        if i % 50 == 1:
            out[k] = replace(before, path=mine.path, stat=mine.stat, name=mine.name)
        elif i % 10 == 5:
            data = before.unit(UnitType.DATA)
            assert data is not None
            digest = (int.from_bytes(data.digest, "big") ^ 0b1011).to_bytes(8, "big")
            code = f"ISCC:GAA{digest.hex().upper()[:13]}"
            units = tuple(
                replace(u, digest=digest, iscc=code) if u.type is UnitType.DATA else u
                for u in mine.units
            )
            out[k] = replace(mine, units=units)
            near.append(k)
    return out, near


def _peak(args: list[str]) -> tuple[float, float, bytes]:
    """Seconds a command took, its maximum RSS in MiB, and its stdout."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(args, stdout=out, cwd="/")
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        assert child.returncode in (0, 1), (args, child.returncode)
        out.seek(0)
        return elapsed, usage.ru_maxrss / 1024, out.read()


def bench_dupes(state: Path, count: int) -> None:
    """``isccd dupes`` and ``dupes --near`` over the store of :func:`bench_store`."""
    copies = sum(1 for i in range(1, count) if i % 50 == 1)
    related = sum(1 for i in range(1, count) if i % 10 == 5)
    command = [sys.executable, "-m", "isccd", "dupes", "--state", str(state), "--json"]
    asked = (("dupes", [], copies), ("dupes --near", ["--near"], copies + related))
    for label, extra, groups in asked:
        elapsed, peak, out = _peak([*command, *extra, "--limit", "100000"])
        totals = json.loads(out)["totals"]
        assert totals["groups"] == groups, (label, totals, groups)
        print(f"   isccd {label} --json: {elapsed:.1f} s, max RSS {peak:,.0f} MiB "
              f"({totals['groups']:,} groups, {totals['files']:,} files)")  # fmt: skip


def _open_and_measure(url: str) -> None:
    """Run in a fresh process: open the pipeline as the daemon does and report."""
    before = rss_mib()
    start = time.perf_counter()
    pipeline = Pipeline(url, PipelineOptions())
    pipeline.open()
    opened = time.perf_counter() - start
    rss = rss_mib()
    pipeline.close()
    # The in-memory search as the pipeline builds it, read on a connection of its own.
    start = time.perf_counter()
    index = Index(open_store(url, readonly=True), PipelineOptions())
    loaded = time.perf_counter() - start
    index_bytes, counts = index.search.nbytes, index.search.stats()
    index.close()
    # SQLite alone checking the file as the writer's open does (PRAGMA quick_check).
    db = sqlite3.connect(os.fsdecode(urllib.parse.unquote_to_bytes(url.removeprefix("sqlite://"))))
    start = time.perf_counter()
    db.execute("PRAGMA quick_check").fetchall()
    checked = time.perf_counter() - start
    db.close()
    print(json.dumps({"open_s": opened, "rss_mib": rss, "baseline_mib": before,
                      "index_mib": index_bytes / 2**20, "codes": counts, "load_s": loaded,
                      "quick_check_s": checked}))  # fmt: skip


def bench_store(count: int) -> None:
    print(f"\n4. store of {count:,} indexed files (synthetic, four 64-bit units each)")
    with tempfile.TemporaryDirectory(prefix="isccd-bench-") as tmp:
        url = state_url(Path(tmp) / "state")
        store = open_store(url)
        assert isinstance(store, SqliteStore)
        rng = random.Random(9)
        start = time.perf_counter()
        batch = 20_000
        for first in range(0, count, batch):
            made = [synthetic_record(i, rng) for i in range(first, min(first + batch, count))]
            records, near = with_duplicates(made, first)
            store.begin()
            # As the pipeline stores a scan's new files: a job's records in a few statements.
            ids = store.add_files("/srv/archive", records, 1.7e9)
            store.add_near([NearPair.of(ids[k - 1], ids[k], UnitType.DATA, 3) for k in near])
            store.commit()
        inserted = time.perf_counter() - start
        db = Path(store.path)
        store.close()
        size = db.stat().st_size
        print(f"   inserted at {count / inserted:,.0f} files/s in batches of {batch:,}")
        print(f"   on disk: {size / 2**20:,.0f} MiB, {size / count:,.0f} bytes per file")
        out = subprocess.run(
            [sys.executable, __file__, "--measure-open", url],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        figures = json.loads(out.strip().splitlines()[-1])
        print(f"   fresh process: open + quick_check + index load {figures['open_s']:.1f} s "
              f"(of which SQLite's quick_check alone {figures['quick_check_s']:.1f} s; the "
              f"index loaded alone, read-only, {figures['load_s']:.1f} s)")  # fmt: skip
        codes = sum(figures["codes"].values())
        print(f"   RSS {figures['rss_mib']:.0f} MiB (interpreter and imports "
              f"{figures['baseline_mib']:.0f} MiB, index arrays {figures['index_mib']:.0f} MiB "
              f"for {codes:,} codes)")  # fmt: skip
        print(
            f"   target RSS < 300 MB: {'met' if figures['rss_mib'] * 2**20 < 300e6 else 'NOT met'}"
        )
        bench_dupes(Path(tmp) / "state", count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of every size")
    parser.add_argument("--only", default="rescan,scan,query,store")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--measure-open", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument(
        "--codes", type=int, default=1_000_000, help="stored codes of the query figures"
    )
    parser.add_argument(
        "--files", type=int, default=1_000_000, help="indexed files of the store figures"
    )
    args = parser.parse_args()
    if args.measure_open:
        _open_and_measure(args.measure_open)
        return
    scale = 10 if args.quick else 1
    only = set(args.only.split(","))
    print(f"isccd index benchmark; python {sys.version.split()[0]}, numpy {np.__version__}, "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    if "rescan" in only:
        bench_rescan(100_000 // scale, args.rounds)
    if "scan" in only:
        bench_scan(20_000 // scale, args.jobs, sample=30)
    if "query" in only:
        bench_query(args.codes // scale, 500)
    if "store" in only:
        bench_store(args.files // scale)


if __name__ == "__main__":
    main()
