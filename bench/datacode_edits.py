"""How far do edits move a 64-bit Data-Code? The measurement behind the default Data threshold.

Takes real files from this machine (Python sources, HTML and text, shared libraries, compressed
files), applies edits of several kinds and sizes at random positions (insert, delete, replace,
append, prepend), and prints the Hamming distance between the original's and the edited file's
64-bit Data-Code, next to the distances between unrelated files. Codes come from iscc-lib (the
anchor; isccd's own Data-Code is bit-identical by the conformance tests).

    python bench/datacode_edits.py [--files N] [--seed S]
"""

from __future__ import annotations

import argparse
import base64
import math
import random
import statistics
import sys
from pathlib import Path

SEARCH = [Path(sys.prefix) / "lib", Path("/usr/share"), Path("/usr/lib")]
KINDS = {
    "text": {".py", ".txt", ".html", ".json", ".md", ".rst", ".css", ".js"},
    "binary": {".so"},
    "compressed": {".gz", ".png", ".pdf", ".jpg", ".zip", ".whl"},
}
MIN_SIZE, MAX_SIZE = 16 * 1024, 4 * 1024 * 1024


def data_code(data: bytes) -> int:
    import iscc_lib

    code = iscc_lib.gen_data_code_v0(data, 64)["iscc"].removeprefix("ISCC:")
    raw = base64.b32decode(code + "=" * (-len(code) % 8))
    return int.from_bytes(raw[2:10], "big")


def find_files(per_kind: int, rng: random.Random) -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {k: [] for k in KINDS}
    for top in SEARCH:
        for path in top.rglob("*"):
            try:
                if not path.is_file() or path.is_symlink():
                    continue
                size = path.stat().st_size
            except OSError:
                continue
            if not MIN_SIZE <= size <= MAX_SIZE:
                continue
            for kind, exts in KINDS.items():
                if path.suffix in exts or (kind == "binary" and ".so." in path.name):
                    found[kind].append(path)
    return {k: rng.sample(sorted(v), min(per_kind, len(v))) for k, v in found.items()}


def edit(data: bytes, how: str, n: int, rng: random.Random) -> bytes:
    n = max(1, min(n, len(data) - 1))
    pos = rng.randrange(0, len(data) - n)
    noise = rng.randbytes(n)
    if how == "insert":
        return data[:pos] + noise + data[pos:]
    if how == "delete":
        return data[:pos] + data[pos + n :]
    if how == "replace":
        return data[:pos] + noise + data[pos + n :]
    if how == "append":
        return data + noise
    if how == "prepend":
        return noise + data
    raise ValueError(how)


def pct(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=30, help="files per kind")
    parser.add_argument("--trials", type=int, default=3, help="random edits per file and size")
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    files = find_files(args.files, rng)
    seen: set[bytes] = set()
    blobs: dict[str, list[bytes]] = {}
    for kind, paths in files.items():
        blobs[kind] = []
        for path in paths:
            data = path.read_bytes()
            if data not in seen:  # identical copies are not "unrelated files"
                seen.add(data)
                blobs[kind].append(data)
    codes = {k: [data_code(b) for b in v] for k, v in blobs.items()}
    print("files:", {k: len(v) for k, v in blobs.items()})
    sizes = [("1 B", 1, None), ("16 B", 16, None), ("256 B", 256, None), ("4 KiB", 4096, None)]
    sizes += [("1%", None, 0.01), ("5%", None, 0.05), ("10%", None, 0.10), ("25%", None, 0.25)]
    print(f"\n{'kind':<11}{'edit':<9}{'size':<7}{'median':>7}{'p90':>6}{'max':>6}   (bits of 64)")
    by_size: dict[str, list[int]] = {}
    by_file_size: dict[str, list[int]] = {}
    for kind, items in blobs.items():
        for how in ("insert", "delete", "replace", "append", "prepend"):
            for label, absolute, fraction in sizes:
                dist = []
                for data, code in zip(items, codes[kind], strict=True):
                    for _ in range(args.trials):
                        n = absolute if absolute is not None else int(len(data) * (fraction or 0))
                        changed = data_code(edit(data, how, n, rng))
                        dist.append((code ^ changed).bit_count())
                        by_size.setdefault(label, []).append(dist[-1])
                        if label in ("1 B", "16 B", "256 B", "1%"):
                            bucket = (
                                "<64 KiB"
                                if len(data) < 65536
                                else ("<512 KiB" if len(data) < 524288 else ">=512 KiB")
                            )
                            by_file_size.setdefault(bucket, []).append(dist[-1])
                med = statistics.median(dist)
                print(f"{kind:<11}{how:<9}{label:<7}{med:>7.1f}{pct(dist, 0.9):>6}{max(dist):>6}")
    everything = [c for v in codes.values() for c in v]
    unrelated = [(a ^ b).bit_count() for i, a in enumerate(everything) for b in everything[i + 1 :]]
    print(f"\nunrelated pairs: {len(unrelated)}")
    for q in (0.0, 0.001, 0.01, 0.05, 0.5):
        print(f"  quantile {q:<6} {pct(unrelated, q)} bits")
    print("\nshare of edited files found, by threshold (all kinds and edit types; the size")
    print("buckets hold edits of at most 256 B or 1% of the file)")
    thresholds = (4, 6, 8, 10, 12)
    print(f"{'edit size':<12}" + "".join(f"{'<=' + str(t):>8}" for t in thresholds))
    for label, dist in list(by_size.items()) + list(by_file_size.items()):
        row = "".join(f"{sum(d <= t for d in dist) / len(dist):>8.0%}" for t in thresholds)
        print(f"{label:<12}{row}   (n={len(dist)})")
    print("\nunrelated pairs within t: measured share, and the binomial(64, 1/2) model's")
    print("expected chance pairs in an index of N files")
    for t in thresholds:
        share = sum(d <= t for d in unrelated) / len(unrelated)
        p = sum(math.comb(64, k) for k in range(t + 1)) / 2**64
        n5, n6 = 1e5 * (1e5 - 1) / 2 * p, 1e6 * (1e6 - 1) / 2 * p
        print(
            f"  t={t:>2}: measured {share:.3%}  model p={p:.1e}  N=1e5: {n5:,.1f}  N=1e6: {n6:,.0f}"
        )


if __name__ == "__main__":
    main()
