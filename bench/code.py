"""Speed of coding whole files: ``isccd code`` next to iscc-sdk's ``code_iscc``, in one run.

A mixed folder is generated (JPEG and PNG photos, DOCX, PDF and HTML documents, plain text,
random binaries) and coded by:

- isccd ``compute_record``, one process (the per-file work of the daemon's workers);
- the ``isccd code --jsonl -j N`` command (process pool, output included);
- iscc-sdk 0.9.7 ``code_iscc`` (thumbnails off, fallback on for binaries), one process, in a
  child with its own data directory;
- the anchors for the raw bytes: iscc-lib ``gen_sum_code_v0`` (Data + Instance in Rust) and
  BLAKE3 alone.

Each figure is the median of several rounds (files are in the page cache after the first
round). Ratios above 1 mean isccd is faster.

    python bench/code.py [--rounds N] [--scale N] [--jobs N]
"""

from __future__ import annotations

import argparse
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

import blake3
import iscc_lib
from PIL import ImageDraw

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' media writers

from isccd.hashing import compute_record  # noqa: E402
from tests.extract.media import PROSE, make_pdf, scene  # noqa: E402


def make_folder(folder: Path, scale: int) -> list[Path]:
    """A mixed folder: images, documents, plain text and binaries."""
    import docx

    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    for i in range(8 * scale):
        img = scene((1600, 1200), seed=i)
        draw = ImageDraw.Draw(img)
        draw.text((40, 40), f"photo {i}", fill=(255, 255, 255))
        if i % 2:
            img.save(folder / f"photo-{i}.jpg", quality=88)
        else:
            img.resize((800, 600)).save(folder / f"picture-{i}.png")
    for i in range(4 * scale):
        document = docx.Document()
        document.add_paragraph(PROSE * (20 + i))
        document.save(str(folder / f"letter-{i}.docx"))
        make_pdf(folder / f"report-{i}.pdf", PROSE * (10 + i), title=f"Report {i}")
        (folder / f"page-{i}.html").write_text(
            f"<html><head><title>Page {i}</title></head><body><p>{PROSE * 30}</p></body></html>"
        )
    for i in range(8 * scale):
        words = PROSE.split()
        text = " ".join(rng.choice(words) for _ in range(20_000 + 5000 * i))
        (folder / f"notes-{i}.txt").write_text(text)
    for i in range(4 * scale):
        (folder / f"blob-{i}.bin").write_bytes(os.urandom((1 + i % 4) * 1024 * 1024))
    return sorted(p for p in folder.iterdir() if p.is_file())


CLI = (sys.executable, "-m", "isccd", "code", "--jsonl")

_SDK_CHILD = r"""
import json, sys, time
from loguru import logger
logger.remove()
import iscc_sdk as idk
paths = json.load(sys.stdin)
for p in paths[:3]:
    idk.code_iscc(p, create_thumb=False, fallback=True)  # warm up, as isccd is
rounds = []
for _ in range(int(sys.argv[1])):
    start = time.perf_counter()
    for p in paths:
        idk.code_iscc(p, create_thumb=False, fallback=True)
    rounds.append(time.perf_counter() - start)
json.dump(rounds, sys.stdout)
"""


def sdk_rounds(paths: list[Path], rounds: int, workdir: Path) -> list[float] | None:
    """Seconds per round of iscc-sdk over all files, or None when it is not installed."""
    env = dict(os.environ, XDG_DATA_HOME=str(workdir / "sdk-data"), PYTHONWARNINGS="ignore")
    proc = subprocess.run(
        [sys.executable, "-c", _SDK_CHILD, str(rounds)],
        input=json.dumps([str(p) for p in paths]),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        print(f"iscc-sdk not measured: {proc.stderr.strip().splitlines()[-1:]}")
        return None
    result: list[float] = json.loads(proc.stdout)
    return result


def timed(rounds: int, run: object) -> list[float]:
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scale", type=int, default=2, help="folder size multiplier")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="isccd-bench-"))
    try:
        paths = make_folder(work / "mixed", args.scale)
        total = sum(p.stat().st_size for p in paths)
        kinds = sorted({p.suffix for p in paths})
        print(f"folder: {len(paths)} files ({', '.join(kinds)}), {total / 1e6:.1f} MB")

        for p in paths[:3]:
            compute_record(str(p))  # JIT kernels and extractors loaded, as in a warm worker
        ours = timed(args.rounds, lambda: [compute_record(str(p)) for p in paths])
        cli = timed(
            args.rounds,
            lambda: subprocess.run(
                [*CLI, "-j", str(args.jobs), str(work / "mixed")],
                stdout=subprocess.DEVNULL,
                check=True,  # every file of the folder codes: a failure is a broken run
            ),
        )
        sdk = sdk_rounds(paths, args.rounds, work)

        def sum_codes() -> None:
            for p in paths:
                iscc_lib.gen_sum_code_v0(str(p))

        def b3() -> None:
            for p in paths:
                hasher = blake3.blake3()
                with p.open("rb") as f:
                    while block := f.read(1 << 20):
                        hasher.update(block)
                hasher.digest()

        lib = timed(args.rounds, sum_codes)
        raw = timed(args.rounds, b3)

        rows = [
            ("isccd compute_record (1 process)", ours),
            (f"isccd code -j {args.jobs} (CLI, pool)", cli),
            ("iscc-sdk code_iscc (1 process)", sdk),
            ("iscc-lib gen_sum_code_v0 (bytes only)", lib),
            ("blake3 (bytes only)", raw),
        ]
        base = statistics.median(ours)
        print(f"{'':40} {'files/s':>9} {'MB/s':>9} {'isccd 1-proc vs this':>22}")
        for label, seconds in rows:
            if seconds is None:
                print(f"{label:40} {'n/a':>9}")
                continue
            med = statistics.median(seconds)
            print(
                f"{label:40} {len(paths) / med:9.1f} {total / 1e6 / med:9.1f} {med / base:21.2f}x"
            )
        by_kind: dict[str, float] = {}
        for p in paths:
            start = time.perf_counter()
            compute_record(str(p))
            by_kind[p.suffix] = by_kind.get(p.suffix, 0.0) + time.perf_counter() - start
        print(
            "isccd time by kind (one round): "
            + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in sorted(by_kind.items()))
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
