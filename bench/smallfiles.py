"""``isccd scan`` of a tree of small files, next to the floors measured in the same run.

The tree: ``--files`` files (20,000), 60 % random-word texts of 200 B-4 KB (``.txt``) and 40 %
random binaries of 100 B-8 KB (``.bin``), 200 to a directory, as in a source or data tree.

Each round runs, in turn (so that load from other work on the machine falls on all alike):

- **floor**: one Python process that walks the tree and opens, reads, BLAKE3- and
  xxh64-hashes each file (what any indexer of these files must at least do, in Python);
- **rmlint**: ``rmlint --hash -a xxhash`` over every file (a multi-threaded C hasher), the
  file list from ``find``;
- **isccd**: ``isccd scan -j WORKERS`` into a new state directory, as users run it (the
  interpreter, its imports and the workers' start included);
- with ``--compare DIR``: the same scan run from another checkout of isccd (``git archive``
  of an earlier commit, say), with this interpreter, for a before/after in the same rounds.

Each checkout's modules are compiled to bytecode first, so that no scan pays for compiling them.

With ``--cold`` (as root), the page cache is dropped (``echo 3 > /proc/sys/vm/drop_caches``)
before every run, so each reads the tree from the disk; otherwise the tree is in the cache
(warm). The figures are medians of the rounds, in files per second, with the ratio of each
to isccd's. Every isccd run must give the same codes: a checksum of every stored path with its
ISCC-CODE and units is printed, and runs that disagree stop the benchmark.

    python bench/smallfiles.py [--files 20000] [--rounds 3] [--workers 2] [--cold]
                               [--keep DIR] [--compare DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Words of the texts; "if" is there on purpose: a text beginning with it was once taken for a
#: 669 tracker module.
WORDS = [
    "if", "the", "of", "and", "to", "in", "is", "it", "for", "on", "with", "as", "was", "at",
    "by", "an", "be", "this", "that", "from", "or", "are", "not", "but", "have", "they", "which",
    "one", "you", "were", "all", "we", "when", "there", "can", "more", "has", "been", "their",
    "out", "would", "so", "what", "up", "about", "into", "than", "them", "some", "could", "time",
    "only", "other", "new", "these", "two", "may", "first", "then",
]  # fmt: skip

FLOOR = """
import os, sys, time
import blake3, xxhash
count = 0
start = time.perf_counter()
for directory, _, names in os.walk(sys.argv[1]):
    for name in names:
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read()
        blake3.blake3(data).digest()
        xxhash.xxh64(data).digest()
        count += 1
print(count)
"""


def small_files(folder: Path, count: int, per_dir: int = 0) -> list[Path]:
    """Random-word texts (3 in 5) and random binaries (2 in 5), ``per_dir`` to a directory
    (0: all in ``folder``)."""
    rng = random.Random(11)
    folder.mkdir(parents=True)
    out = []
    for i in range(count):
        directory = folder / f"d{i // per_dir:04d}" if per_dir else folder
        if per_dir and i % per_dir == 0:
            directory.mkdir()
        if i % 5 < 3:
            size = rng.randrange(200, 4096)
            words: list[str] = []
            length = 0  # of the words and a space after each
            while length < size:
                words.append(rng.choice(WORDS))
                length += len(words[-1]) + 1
            path = directory / f"t{i}.txt"
            path.write_text(" ".join(words))
        else:
            path = directory / f"b{i}.bin"
            path.write_bytes(rng.randbytes(rng.randrange(100, 8192)))
        out.append(path)
    return out


def drop_caches() -> None:
    """Empty the page cache (and dentries and inodes), so that the next run reads the disk."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def timed(command: list[str], **kwargs: object) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    return time.perf_counter() - start, done


def codes_checksum(state: Path) -> tuple[int, str]:
    """How many live files a scan stored, and a checksum of their paths, codes and units."""
    with sqlite3.connect(next(state.glob("*.db"))) as db:
        rows = db.execute(
            """SELECT d.path || '/' || f.name, f.iscc, f.datahash,
                      (SELECT group_concat(u.iscc, ' ') FROM
                         (SELECT iscc FROM units WHERE file_id = f.id ORDER BY type) u)
               FROM files f JOIN dirs d ON d.id = f.dir_id
               WHERE f.removed_at IS NULL ORDER BY 1"""
        ).fetchall()
    digest = hashlib.sha256(repr(rows).encode()).hexdigest()[:16]
    return len(rows), digest


def versions() -> str:
    import numba
    import numpy

    return (
        f"Python {platform.python_version()}, numpy {numpy.__version__}, numba "
        f"{numba.__version__}, SQLite {sqlite3.sqlite_version}"
    )


TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of a live process, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                todo += [int(child) for child in task.read_text().split()]
        found.append(parent)
    return found


def timed_tree(command: list[str], cwd: Path) -> tuple[float, str, str, int, dict[str, float]]:
    """Run ``command``: seconds, stdout, stderr, exit status, and the CPU seconds of the command's
    own process and of its descendants (the fork server and workers), sampled every 20 ms up to
    the moment each exits (a process's last 20 ms may be missed)."""
    cpu: dict[int, float] = {}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=err, text=True)
        while process.poll() is None:
            for pid in _descendants(process.pid):
                with contextlib.suppress(OSError, IndexError, ValueError):
                    cpu[pid] = _cpu_seconds(pid)
            time.sleep(0.02)
        seconds = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    own = cpu.pop(process.pid, 0.0)
    return (
        seconds,
        stdout,
        stderr,
        process.returncode,
        {"command": own, "workers": sum(cpu.values())},
    )


def compile_bytecode(checkout: Path) -> None:
    """Compile the checkout's modules, so that no scan compiles them: a fresh checkout, or an
    environment with ``PYTHONDONTWRITEBYTECODE`` set, would otherwise pay about 0.3 s of each
    scan's start for it."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(checkout / "isccd")], check=True)


def scan_rate(
    checkout: Path, tree: Path, state: Path, files: int, workers: int
) -> tuple[float, str, dict[str, float]]:
    """Files per second of ``isccd scan`` run from ``checkout``, the checksum of its codes, and
    the CPU seconds of its processes."""
    seconds, stdout, stderr, status, cpu = timed_tree(
        [sys.executable, "-m", "isccd", "scan", "--json", "--state", str(state),
         "-j", str(workers), str(tree)],
        cwd=checkout,
    )  # fmt: skip
    if status != 0:
        raise SystemExit(f"isccd scan failed ({status}): {stderr[-2000:]}")
    [root] = json.loads(stdout)["roots"]
    stored, checksum = codes_checksum(state)
    assert root["added"] == files == stored, (root, stored)
    shutil.rmtree(state)
    return files / seconds, checksum, cpu


def floor_rates(tree: Path, files: int, cold: bool) -> dict[str, float]:
    """Files per second of the Python floor and of rmlint (when installed)."""
    if cold:
        drop_caches()
    seconds, done = timed([sys.executable, "-c", FLOOR, str(tree)])
    assert int(done.stdout) == files, done.stderr
    rates = {"floor": files / seconds}
    rmlint = shutil.which("rmlint")
    if rmlint:
        if cold:
            drop_caches()
        hashing = f'find "$1" -type f -print0 | xargs -0 {rmlint} --hash -a xxhash -t 2 | wc -l'
        seconds, done = timed(["sh", "-c", hashing, "sh", str(tree)])
        assert int(done.stdout) == files, done.stderr
        rates["rmlint"] = files / seconds
    return rates


def report(rates: dict[str, list[float]], workers: int, codes: str) -> None:
    ours = statistics.median(rates["isccd scan"])
    print(f"\n  {'':34} {'files/s':>10} {'isccd : it':>11}")
    for name, values in rates.items():
        if values:
            rate = statistics.median(values)
            print(f"  {name:34} {rate:>10,.0f} {ours / rate:>10.3f}x")
    met = "met" if ours >= 8000 else "NOT met"
    print(f"  isccd scan -j {workers}: target >= 8,000 files/s: {met}; codes {codes}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cold", action="store_true", help="drop the page cache before each run")
    parser.add_argument("--keep", type=Path, help="build the tree here and keep it")
    parser.add_argument("--compare", type=Path, help="also scan with the isccd checkout in DIR")
    args = parser.parse_args()
    if args.cold and os.geteuid() != 0:
        raise SystemExit("--cold drops the page cache, which needs root")
    work = Path(tempfile.mkdtemp(prefix="isccd-bench-"))
    tree = args.keep or work / "tree"
    scans = {"isccd scan": ROOT}
    if args.compare:
        scans[f"isccd scan ({args.compare.name})"] = args.compare.resolve()
    try:
        if not tree.exists():
            small_files(tree, args.files, per_dir=200)
        files = sum(len(names) for _, _, names in os.walk(tree))
        print(
            f"{files:,} small files (60 % text 200 B-4 KB, 40 % binary 100 B-8 KB); "
            f"{versions()}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
            f"{'cold' if args.cold else 'warm'} page cache; medians of {args.rounds} "
            f"alternated rounds"
        )
        for checkout in scans.values():
            compile_bytecode(checkout)
        rates: dict[str, list[float]] = {name: [] for name in scans}
        cpus: dict[str, list[dict[str, float]]] = {name: [] for name in scans}
        checksums = set()
        for number in range(args.rounds):
            for name, rate in floor_rates(tree, files, args.cold).items():
                rates.setdefault(name, []).append(rate)
            for name, checkout in scans.items():
                if args.cold:
                    drop_caches()
                rate, checksum, cpu = scan_rate(checkout, tree, work / "state", files, args.workers)
                rates[name].append(rate)
                cpus[name].append(cpu)
                checksums.add(checksum)
            print(
                f"  round {number + 1}: "
                + ", ".join(f"{name} {values[-1]:,.0f}" for name, values in rates.items())
                + f" files/s; codes {checksum}; load average {os.getloadavg()[0]:.2f}"
            )
        if len(checksums) != 1:
            raise SystemExit(f"the scans disagree on the codes: {sorted(checksums)}")
        report(rates, args.workers, checksums.pop())
        print("\n  CPU seconds (medians): the command's process (event loop and store thread);")
        print("  its fork server and workers; all")
        for name, runs in cpus.items():
            own = statistics.median(r["command"] for r in runs)
            others = statistics.median(r["workers"] for r in runs)
            print(f"  {name:34} {own:6.2f} {others:6.2f} {own + others:6.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
