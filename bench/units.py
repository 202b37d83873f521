"""Speed of the unit generators (Meta, Image, Audio, Video, Mixed, ISCC-CODE) and of their
primitives: isccd next to iscc-core 1.5.0 and iscc-lib, measured in one run on the same inputs.

Every figure is the median of several timed rounds, per call; the ratios are isccd's speed
relative to each anchor (above 1: isccd is faster). Before timing, every case checks that
isccd's result equals iscc-core's.

    python bench/units.py [--rounds N] [--round-seconds S]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import iscc_core as ic
import iscc_lib
import numpy as np

import isccd.iscc as ours

rng = random.Random(24138)
PIXELS = [rng.randrange(256) for _ in range(1024)]
CV_HOUR = [rng.randrange(-(2**31), 2**31) for _ in range(28_800)]  # ~1 h of Chromaprint
CV_SONG = CV_HOUR[:1_500]
FRAMES = [[rng.randrange(3) for _ in range(380)] for _ in range(9_000)]  # 30 min at 5 fps
FRAMES_ARRAY = np.array(FRAMES, dtype=np.uint8)
DESCRIPTION = " ".join(rng.choice(["lorem", "ipsum", "dolor", "sit", "amet"]) for _ in range(700))
META = {
    f"key{i}": "".join(rng.choice("abcdefgh ") for _ in range(rng.randrange(60)))
    for i in range(2000)
}
CODES = [ic.gen_text_code_v0("Hello World", 256)["iscc"], ic.gen_image_code_v0(PIXELS, 256)["iscc"]]
CODES += [
    ic.gen_audio_code_v0(CV_SONG, 256)["iscc"],
    ic.gen_video_code_v0(FRAMES[:50], 256)["iscc"],
]
UNITS = [
    "AAAYPXW445FTYNJ3",
    "EAARMJLTQCUWAND2",
    "GABVVC5DMJJGYKZ4ZBYVNYABFFYXG",
    "IADWIK7A7JTUAQ2D6QARX7OBEIK3OOUAM42LOBLCZ4ZOGDLRHMDL6TQ",
]
DIGESTS_FEW = [rng.randbytes(32) for _ in range(10)]
DIGESTS_MANY = [rng.randbytes(32) for _ in range(100_000)]

#: operation -> {implementation: zero-argument callable}
CASES: dict[str, dict[str, Callable[[], Any]]] = {
    "meta: name": {
        "isccd": lambda: ours.gen_meta_code_v0("Die Unendliche Geschichte"),
        "iscc-core": lambda: ic.gen_meta_code_v0("Die Unendliche Geschichte"),
        "iscc-lib": lambda: iscc_lib.gen_meta_code_v0("Die Unendliche Geschichte"),
    },
    "meta: name + 4 KB text": {
        "isccd": lambda: ours.gen_meta_code_v0("Title", DESCRIPTION, None, 256),
        "iscc-core": lambda: ic.gen_meta_code_v0("Title", DESCRIPTION, None, 256),
        "iscc-lib": lambda: iscc_lib.gen_meta_code_v0("Title", DESCRIPTION, None, 256),
    },
    "meta: 80 KB JSON dict": {
        "isccd": lambda: ours.gen_meta_code_v0("Title", None, META, 256),
        "iscc-core": lambda: ic.gen_meta_code_v0("Title", None, META, 256),
    },
    "image 64": {
        "isccd": lambda: ours.gen_image_code_v0(PIXELS, 64),
        "iscc-core": lambda: ic.gen_image_code_v0(PIXELS, 64),
        "iscc-lib": lambda: iscc_lib.gen_image_code_v0(PIXELS, 64),
    },
    "image 256": {
        "isccd": lambda: ours.gen_image_code_v0(PIXELS, 256),
        "iscc-core": lambda: ic.gen_image_code_v0(PIXELS, 256),
        "iscc-lib": lambda: iscc_lib.gen_image_code_v0(PIXELS, 256),
    },
    "audio 256, 1.5k values": {
        "isccd": lambda: ours.gen_audio_code_v0(CV_SONG, 256),
        "iscc-core": lambda: ic.gen_audio_code_v0(CV_SONG, 256),
        "iscc-lib": lambda: iscc_lib.gen_audio_code_v0(CV_SONG, 256),
    },
    "audio 256, 29k values": {
        "isccd": lambda: ours.gen_audio_code_v0(CV_HOUR, 256),
        "iscc-core": lambda: ic.gen_audio_code_v0(CV_HOUR, 256),
        "iscc-lib": lambda: iscc_lib.gen_audio_code_v0(CV_HOUR, 256),
    },
    "video 256, 9k frames (lists)": {
        "isccd": lambda: ours.gen_video_code_v0(FRAMES, 256),
        "iscc-core": lambda: ic.gen_video_code_v0(FRAMES, 256),
        "iscc-lib": lambda: iscc_lib.gen_video_code_v0(FRAMES, 256),
    },
    "video 256, 9k frames (array)": {
        "isccd": lambda: ours.gen_video_code_v0(FRAMES_ARRAY, 256),
        "iscc-core": lambda: ic.gen_video_code_v0(FRAMES, 256),
    },
    "mixed 128, 4 codes": {
        "isccd": lambda: ours.gen_mixed_code_v0(CODES, 128),
        "iscc-core": lambda: ic.gen_mixed_code_v0(CODES, 128),
        "iscc-lib": lambda: iscc_lib.gen_mixed_code_v0(CODES, 128),
    },
    "iscc_code MCDI": {
        "isccd": lambda: ours.gen_iscc_code_v0(UNITS),
        "iscc-core": lambda: ic.gen_iscc_code_v0(UNITS),
        "iscc-lib": lambda: iscc_lib.gen_iscc_code_v0(UNITS),
    },
    "simhash 10 x 32 B": {
        "isccd": lambda: ours.alg_simhash(DIGESTS_FEW),
        "iscc-core": lambda: ic.alg_simhash(DIGESTS_FEW),
        "iscc-lib": lambda: bytes(iscc_lib.alg_simhash(DIGESTS_FEW)),
    },
    "simhash 100k x 32 B": {
        "isccd": lambda: ours.alg_simhash(DIGESTS_MANY),
        "iscc-core": lambda: ic.alg_simhash(DIGESTS_MANY),
        "iscc-lib": lambda: bytes(iscc_lib.alg_simhash(DIGESTS_MANY)),
    },
}


def per_call(func: Callable[[], Any], rounds: int, round_seconds: float) -> float:
    """Median over ``rounds`` of the mean seconds per call; each round lasts about
    ``round_seconds``."""
    start = time.perf_counter()
    func()  # warm up caches and lazy imports, and calibrate
    calls = max(1, int(round_seconds / max(time.perf_counter() - start, 1e-9)))
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            func()
        times.append((time.perf_counter() - start) / calls)
    return statistics.median(times)


def fmt(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.1f} µs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--round-seconds", type=float, default=0.2)
    args = parser.parse_args()
    for impls in CASES.values():
        results = {name: func() for name, func in impls.items()}
        assert results["isccd"] == results["iscc-core"], results
        # iscc-lib's results are dicts (or bytes) of its own types, equal to the reference's.
        assert results.get("iscc-lib", results["iscc-core"]) == results["iscc-core"], results
    print(f"{'operation':<30}{'isccd':>12}{'iscc-core':>12}{'iscc-lib':>12}  ratios")
    for operation, impls in CASES.items():
        t = {name: per_call(func, args.rounds, args.round_seconds) for name, func in impls.items()}
        ratios = "  ".join(f"{t[name] / t['isccd']:.2f}x {name}" for name in t if name != "isccd")
        lib = fmt(t["iscc-lib"]) if "iscc-lib" in t else "-"
        print(f"{operation:<30}{fmt(t['isccd']):>12}{fmt(t['iscc-core']):>12}{lib:>12}  {ratios}")


if __name__ == "__main__":
    main()
