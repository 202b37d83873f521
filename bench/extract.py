"""Speed of the extraction layer next to its floors, measured in one run on the same files.

- media type detection of small files (60 % random-word ``.txt`` of 200 B-4 KB, 40 % random
  ``.bin`` of 100 B-8 KB, as in a source or data tree), per file: isccd's ``mediatype_guess``
  next to ``puremagic.from_string``, the signature walk isccd used before (and iscc-sdk uses);
  with the decisions each makes (text sent to a decoder, binaries given a Content-Code);
- a 12-megapixel JPEG, per image: isccd's ``extract_image`` and ``compute_record`` next to the
  decode floor (Pillow decode + ``convert("L")`` + resize to 32x32);
- a 3-minute MP3: ``compute_record`` next to ``fpcalc -raw -json -signed -length 0`` alone;
- H.264 videos (30 s at 640x360, 20 s at 1280x720): ``compute_record`` next to ffmpeg's
  signature filter alone;
- optionally, ``isccd scan`` of many random binaries: exit status and errors.

Each case alternates the floor and isccd, repeat after repeat, so that load from other work on
the machine falls on both alike; the figures are medians of wall-clock time and of CPU time
(this process's and the tools'), and the ratios are isccd's over the floor's (below 1.10 means
within 10 % of it). On a shared machine the CPU times are the steadier measure.

    python bench/extract.py [--repeats N] [--cases mediatype,image,audio,video]
                            [--random-files 20000]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import puremagic
from PIL import Image, ImageDraw

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' media writers

from isccd.extract.image import extract_image  # noqa: E402
from isccd.extract.mediatype import mediatype_guess, mediatype_to_mode  # noqa: E402
from isccd.hashing import compute_record  # noqa: E402
from isccd.model import Mode, UnitType  # noqa: E402
from tests.extract.media import ffmpeg, scene  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from smallfiles import small_files  # noqa: E402  (the tree of the scan benchmark)


@dataclass
class Timings:
    """Wall-clock and CPU seconds of each call of one case."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


def _cpu() -> float:
    """CPU seconds of this process and of its children that have ended (the tools)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def alternated(cases: dict[str, Callable[[], object]], repeats: int) -> dict[str, Timings]:
    """Seconds of each call, the cases taking turns ``repeats`` times (after one warm-up)."""
    for run in cases.values():
        run()
    timings = {name: Timings() for name in cases}
    for _ in range(repeats):
        for name, run in cases.items():
            cpu, start = _cpu(), time.perf_counter()
            run()
            timings[name].wall.append(time.perf_counter() - start)
            timings[name].cpu.append(_cpu() - cpu)
    return timings


def _shown(seconds: float) -> str:
    return f"{seconds * 1e6:8.1f} µs" if seconds < 1e-3 else f"{seconds * 1e3:8.1f} ms"


def report(title: str, timings: dict[str, Timings], floor: str, per: int = 1) -> None:
    """One line per case: the median wall-clock and CPU time per item, and their ratios to
    ``floor``'s. On a shared machine the CPU times are the steadier figures."""
    base_wall = statistics.median(timings[floor].wall) / per
    base_cpu = statistics.median(timings[floor].cpu) / per
    print(f"\n{title}\n  {'':52} {'wall':>11} {'ratio':>6} {'CPU':>11} {'ratio':>6}")
    for name, t in timings.items():
        wall = statistics.median(t.wall) / per
        cpu = statistics.median(t.cpu) / per
        print(
            f"  {name:52} {_shown(wall)} {wall / base_wall:5.2f}x {_shown(cpu)} "
            f"{cpu / base_cpu:5.2f}x"
        )


def bench_mediatype(work: Path, repeats: int) -> None:
    paths = small_files(work / "small", 2000)
    heads = [(p.read_bytes()[:4096], p.name) for p in paths]

    def ours() -> None:
        for head, name in heads:
            mediatype_guess(head, name)

    def sniff() -> None:
        for head, _ in heads:
            with contextlib.suppress(puremagic.PureError):
                puremagic.from_string(head, mime=True)

    seconds = alternated(
        {
            "puremagic.from_string (the sniff used before)": sniff,
            "isccd mediatype_guess (name + content)": ours,
        },
        repeats,
    )
    report(
        f"media type, per file ({len(heads)} small files, first 4 KB read beforehand)",
        seconds,
        "puremagic.from_string (the sniff used before)",
        per=len(heads),
    )

    texts_decoded = binaries_coded = 0
    for head, name in heads:
        mode = mediatype_to_mode(mediatype_guess(head, name))
        if name.endswith(".txt") and mode is not Mode.TEXT:
            texts_decoded += 1
        if name.endswith(".bin") and mode is not None:
            binaries_coded += 1
    sniffed = 0
    for head, name in heads:
        try:
            found = puremagic.from_string(head, mime=True)
        except puremagic.PureError:
            continue
        if found and mediatype_to_mode(found) is not None and name.endswith(".bin"):
            sniffed += 1
    print(
        f"  decisions: {texts_decoded} texts given another mode than text, {binaries_coded} "
        f"random binaries given a Content-Code (puremagic alone gives {sniffed} a mode)"
    )


def bench_image(work: Path, repeats: int) -> None:
    path = work / "photo-12mp.jpg"
    img = scene((4000, 3000), seed=3)
    draw = ImageDraw.Draw(img)
    for i in range(40):
        draw.line((0, i * 75, 4000, 3000 - i * 75), fill=(i * 6, 255 - i * 6, 128), width=9)
    img.save(path, quality=90)

    def floor() -> None:
        with Image.open(path) as im:
            im.convert("L").resize((32, 32), Image.Resampling.BICUBIC)

    def extract() -> None:
        with path.open("rb") as f:
            extract_image(f)

    def record() -> None:
        compute_record(str(path))

    seconds = alternated(
        {
            "Pillow decode + convert('L') + resize 32x32": floor,
            "isccd extract_image": extract,
            "isccd compute_record (all units)": record,
        },
        repeats,
    )
    size = path.stat().st_size / 1e6
    report(
        f"12 MP JPEG (4000x3000, {size:.1f} MB), per image",
        seconds,
        "Pillow decode + convert('L') + resize 32x32",
    )


def bench_audio(work: Path, repeats: int) -> None:
    fpcalc = shutil.which("fpcalc")
    if fpcalc is None or shutil.which("ffmpeg") is None:
        print("\naudio: fpcalc or ffmpeg missing, not measured")
        return
    path = work / "song.mp3"
    source = "aevalsrc=0.4*sin(2*PI*(220+40*sin(t))*t)+0.2*sin(2*PI*(330+3*t)*t):s=44100"
    ffmpeg(
        "-f",
        "lavfi",
        "-i",
        source,
        "-t",
        "180",
        "-ac",
        "2",
        "-b:a",
        "128k",
        "-metadata",
        "title=Three Minutes",
        str(path),
    )

    def floor() -> None:
        subprocess.run(
            [fpcalc, "-raw", "-json", "-signed", "-length", "0", str(path)],
            capture_output=True,
            check=False,
        )

    def record() -> None:
        assert compute_record(str(path)).unit(UnitType.AUDIO) is not None

    seconds = alternated(
        {"fpcalc -length 0 alone": floor, "isccd compute_record (all units)": record}, repeats
    )
    report(
        f"3-minute MP3 ({path.stat().st_size / 1e6:.1f} MB), per file",
        seconds,
        "fpcalc -length 0 alone",
    )


def bench_video(work: Path, repeats: int) -> None:
    exe = shutil.which("ffmpeg")
    if exe is None:
        print("\nvideo: ffmpeg missing, not measured")
        return
    for seconds_long, size in ((30, "640x360"), (20, "1280x720")):
        path = work / f"clip-{size}.mp4"
        source = f"testsrc2=duration={seconds_long}:size={size}:rate=25"
        tone = f"sine=frequency=300:duration={seconds_long}"
        ffmpeg("-f", "lavfi", "-i", source, "-f", "lavfi", "-i", tone, "-pix_fmt", "yuv420p",
               "-c:v", "libx264", "-preset", "veryfast", str(path))  # fmt: skip
        sig = work / "sig.bin"

        def floor(path: Path = path, sig: Path = sig) -> None:
            vf = f"fps=fps=5,signature=format=binary:filename={sig}"
            subprocess.run(
                [exe, "-nostdin", "-hide_banner", "-loglevel", "error", "-i", str(path),
                 "-an", "-sn", "-dn", "-vf", vf, "-f", "null", "-"],
                check=True,
            )  # fmt: skip

        def record(path: Path = path) -> None:
            assert compute_record(str(path)).unit(UnitType.VIDEO) is not None

        seconds = alternated(
            {"ffmpeg signature filter alone": floor, "isccd compute_record (all units)": record},
            repeats,
        )
        mb = path.stat().st_size / 1e6
        report(f"{seconds_long} s {size} H.264 video ({mb:.1f} MB), per file", seconds,
               "ffmpeg signature filter alone")  # fmt: skip


def bench_random_scan(work: Path, count: int) -> None:
    """``isccd scan`` of random binaries (100 B to 8 KB, half named ``.bin``, half without a
    name extension): its exit status and error count, once."""
    tree = work / "random"
    tree.mkdir()
    rng = random.Random(21)
    for i in range(count):
        name = f"r{i}.bin" if i % 2 else f"r{i}"
        (tree / name).write_bytes(rng.randbytes(rng.randrange(100, 8192)))
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "isccd", "scan", "--state", str(work / "state"), "-j", "2",
         str(tree)],
        capture_output=True, text=True, check=False, cwd=ROOT,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    [root] = json.loads(proc.stdout)["roots"]
    print(
        f"\nisccd scan of {count} random binaries (-j 2, one run): exit status "
        f"{proc.returncode}, {root['errors']} errors, {root['added']} files added, "
        f"{count / seconds:,.0f} files/s"
    )


CASES = {
    "mediatype": bench_mediatype,
    "image": bench_image,
    "audio": bench_audio,
    "video": bench_video,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument(
        "--random-files", type=int, default=0,
        help="also scan this many random binaries with isccd scan (e.g. 20000)",
    )  # fmt: skip
    args = parser.parse_args()
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.2f}; medians of {args.repeats} alternated repeats"
    )
    work = Path(tempfile.mkdtemp(prefix="isccd-bench-"))
    try:
        for name in args.cases.split(","):
            CASES[name](work, args.repeats)
        if args.random_files:
            bench_random_scan(work, args.random_files)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
