"""``isccd dedupe --link --apply`` on 10,000 exact groups, next to ``jdupes -r -L`` on an identical
tree.

The tree: 10,000 pairs of equal files (4 KiB of random bytes each pair, 20,000 files) in 100
folders, made afresh for every run. isccd acts on a plan file, as made from the index (device,
inode, size, modification time and BLAKE3 of every file; making it is the index's work, paid
when the files were indexed, and not timed); each of its runs is the whole command in a new
process: plan validation, the checks of both files (their bytes compared), the fsync'd intent
before each action, the atomic swap. jdupes does everything itself: it walks, hashes, compares
and links. Runs alternate (isccd, jdupes, jdupes, isccd, ...); the median of each is reported.
Every run is checked: 10,000 distinct files left, every name with its bytes. isccd's modules
are compiled to bytecode first, as an installed package's are (with PYTHONDONTWRITEBYTECODE
set, as on some build hosts, every run would otherwise compile them again: about 0.3 s).

    python bench/dedupe.py [--groups N] [--runs N]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from blake3 import blake3

import isccd

FOLDERS = 100
SIZE = 4096


def make_tree(root: Path, groups: int) -> dict[str, bytes]:
    rng = random.Random(1)
    files = {}
    for folder in range(FOLDERS):
        (root / f"d{folder}").mkdir(parents=True)
    for g in range(groups):
        data = rng.randbytes(SIZE)
        for copy in ("a", "b"):
            path = root / f"d{g % FOLDERS}" / f"{copy}{g}.bin"
            path.write_bytes(data)
            files[str(path)] = data
    return files


def make_plan(root: Path, groups: int) -> dict[str, object]:
    """The plan isccd would make from its index (written here directly)."""
    out = []
    for g in range(groups):
        members = []
        for i, copy in enumerate("ab"):
            path = root / f"d{g % FOLDERS}" / f"{copy}{g}.bin"
            st = path.stat()
            members.append({
                "path": str(path), "root": str(root), "device": st.st_dev, "inode": st.st_ino,
                "size": st.st_size, "mtime_ns": st.st_mtime_ns, "keep": i == 0,
                "blake3": blake3(path.read_bytes()).hexdigest()[:16],
            })  # fmt: skip
        out.append({"kind": "exact", "members": members})
    return {"format": "isccd-dedupe-plan", "version": 1, "groups": out}


def check(files: dict[str, bytes], groups: int) -> None:
    inodes = {Path(p).stat().st_ino for p in files}
    assert len(inodes) == groups, f"{len(inodes)} distinct files left, not {groups}"
    for path, data in files.items():
        assert Path(path).read_bytes() == data, path


def run_isccd(base: Path, groups: int) -> float:
    root = base / "tree"
    files = make_tree(root, groups)
    plan = base / "plan.json"
    plan.write_text(json.dumps(make_plan(root, groups)))
    command = [sys.executable, "-m", "isccd", "dedupe", "--link", "--plan", str(plan), "--apply",
               "--json", "--log", str(base / "log.jsonl")]  # fmt: skip
    # The plan's root is a watched root of this host: a plan acts on nothing else.
    env = {**os.environ, "ISCCD_WATCH__ROOTS": str(root)}
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    seconds = time.perf_counter() - started
    check(files, groups)
    return seconds


def run_jdupes(base: Path, groups: int) -> float:
    root = base / "tree"
    files = make_tree(root, groups)
    started = time.perf_counter()
    subprocess.run(["jdupes", "-q", "-r", "-L", str(root)], check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    check(files, groups)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    jdupes = shutil.which("jdupes")
    version = subprocess.run(["jdupes", "-v"], capture_output=True, text=True, check=False)
    compileall.compile_dir(str(Path(isccd.__file__).parent), quiet=1)
    times: dict[str, list[float]] = {"isccd": [], "jdupes": []}
    order = ["isccd", "jdupes"]
    for run in range(args.runs):
        for name in order if run % 2 == 0 else order[::-1]:
            if name == "jdupes" and jdupes is None:
                continue
            with tempfile.TemporaryDirectory(dir="/tmp") as base:
                runner = run_isccd if name == "isccd" else run_jdupes
                times[name].append(runner(Path(base), args.groups))
    print(f"dedupe --link of {args.groups:,} exact groups ({2 * args.groups:,} files of "
          f"{SIZE} B), median of {args.runs} alternated runs; the machine was shared")  # fmt: skip
    if jdupes:
        print(f"jdupes: {version.stdout.splitlines()[0] if version.stdout else jdupes}")
    for name, values in times.items():
        if values:
            seconds = statistics.median(values)
            runs = ", ".join(f"{v:.2f}" for v in values)
            print(f"  {name:<7} {seconds:6.2f} s  {args.groups / seconds:8,.0f} files/s  ({runs})")
    if times["jdupes"]:
        ratio = statistics.median(times["isccd"]) / statistics.median(times["jdupes"])
        print(f"  isccd / jdupes time: {ratio:.2f}")


if __name__ == "__main__":
    main()
