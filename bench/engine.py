"""Speed and memory of the byte and text hashing engine: Data-, Instance-, Data+Instance- and
Text-Code (a megabyte of multilingual text, and many small ASCII texts), isccd next to iscc-core
1.5.0, iscc-lib and raw BLAKE3/xxh32, measured in one run.

The process pins itself to one CPU, so every implementation (BLAKE3's and iscc-lib's threads
included) gets one core. Inputs are files in a temporary directory (deleted at the end), read
warm from the page cache; each figure is the median of several rounds, with the implementations
taking turns within a round. Throughput is in MB/s (10**6 bytes); a ratio is isccd's speed over
the anchor's. Before timing, every case checks that isccd's result equals the anchor's. Peak
memory is measured in a child process that hashes a 4 GiB (sparse) file through the same path
as the daemon: an open file, Data- and Instance-Code in one pass.

    python bench/engine.py [--quick] [--rounds N]
"""

# ruff: noqa: RUF001 - the sample text is Cyrillic and Greek on purpose; lookalikes are wanted.

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import blake3
import iscc_core as ic
import iscc_lib
import numpy as np
import xxhash

sys.path.insert(0, str(Path(__file__).resolve().parent))

from smallfiles import WORDS

import isccd.iscc as ours
from isccd.iscc._stream import IO_READ_SIZE

MIB = 1 << 20

#: target name -> (anchor, minimum ratio)
TARGETS = {
    "data": [("iscc-lib", 0.40), ("iscc-core", 25.0)],
    "instance": [("blake3 raw", 0.9)],
    "sum": [("iscc-lib", 0.35)],
    "text": [("iscc-core", 10.0), ("iscc-lib", 0.3)],
}


def write_random(path: Path, size: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    with path.open("wb") as f:
        for start in range(0, size, 16 * MIB):
            f.write(rng.integers(0, 256, min(16 * MIB, size - start), dtype=np.uint8).tobytes())


def multilingual_text(nbytes: int, seed: int = 24138) -> str:
    """Realistic prose in eight languages (word frequencies roughly Zipfian), deterministic."""
    vocab = {
        "en": "the of and to in is was that for it with as his on be at by this had not are "
        "but from or have an they which one you were her all she there would their we him "
        "been has when who will more no if out so said what up its about into than them can "
        "only other new some could time these two may then do first any my now such like our "
        "over man me even most made after also did many before must through back years where "
        "much your way well down should because each just those people how too little state "
        "good very make world still own see men work long get here between both life being",
        "de": "der die und in den von zu das mit sich des auf für ist im dem nicht ein eine "
        "als auch es an werden aus er hat daß sie nach wird bei einer um am sind noch wie "
        "einem über einen so zum war haben nur oder aber vor zur bis mehr durch man sein "
        "wurde sei Straße Größe Übung Mädchen Bäume schön möglich während natürlich",
        "fr": "le de un être et à il avoir ne je son que se qui ce dans en du elle au pour "
        "pas vous par sur faire plus dire me on mon lui nous comme mais pouvoir avec tout "
        "y aller voir bien où sans tu ou leur homme si deux mari moi vouloir été déjà "
        "très français élève garçon naïve cœur façon",
        "es": "de la que el en y a los se del las un por con no una su para es al lo como "
        "más o pero sus le ha me si sin sobre este ya entre cuando todo esta ser son dos "
        "también fue había era muy años hasta desde está mi porque qué sólo han yo hay "
        "niño señor corazón mañana",
        "ru": "и в не на я быть он с что а по это она этот к но они мы как из у который то "
        "за свой что весь год от так о для ты же все тот мочь вы человек такой его сказать "
        "только или ещё бы себя один как уже до время если сам когда другой вот говорить",
        "el": "και το να η ο της του με για τα που σε την στο από είναι οι των θα δεν τον "
        "στην ένα μια αυτό τις τη πολύ όπως ως στα στη έχει μας ότι ήταν αλλά",
        "zh": "的 一 是 不 了 人 我 在 有 他 这 中 大 来 上 国 个 到 说 们 为 子 和 你 地 出 道 "
        "也 时 年 得 就 那 要 下 以 生 会 自 着 去 之 过 家 学 对 可 她 里 后 小 么 心 多 天 而",
        "ar": "في من على أن إلى عن مع هذا كان التي الذي ما لا هذه قد بين كل ذلك بعد عند "
        "أو حتى إذا ثم هو هي لم وقد كما منذ أي فيه",
    }
    rng = random.Random(seed)
    words = {lang: text.split() for lang, text in vocab.items()}
    weights = {lang: [1 / (i + 1) for i in range(len(w))] for lang, w in words.items()}
    paragraphs = []
    size = 0
    while size < nbytes:
        lang = rng.choice(list(words))
        sentences = []
        for _ in range(rng.randint(3, 8)):
            sentence = rng.choices(words[lang], weights[lang], k=rng.randint(6, 20))
            sep = "" if lang == "zh" else " "
            punct = "。" if lang == "zh" else rng.choice([".", ".", ".", "?", "!", ";"])
            sentences.append(sep.join(sentence).capitalize() + punct)
            if rng.random() < 0.2:
                sentences[-1] = sentences[-1].replace(" ", ", ", 1)
        paragraph = " ".join(sentences)
        paragraphs.append(paragraph)
        size += len(paragraph.encode("utf-8")) + 2
    return "\n\n".join(paragraphs).encode("utf-8")[:nbytes].decode("utf-8", "ignore")


def read_blocks(path: Path, consume: Callable[[memoryview], object]) -> None:
    """The plain buffered read loop the raw anchors run (same block size as isccd)."""
    buf = bytearray(IO_READ_SIZE)
    view = memoryview(buf)
    with path.open("rb", buffering=0) as f:
        while n := f.readinto(buf):
            consume(view[:n])


def raw_blake3(path: Path) -> str:
    h = blake3.blake3()
    read_blocks(path, h.update)
    return h.hexdigest()


def raw_xxh32(path: Path) -> int:
    h = xxhash.xxh32()
    read_blocks(path, h.update)
    return h.intdigest()


def isccd_file(func: Callable[..., Any], path: Path, *args: Any) -> Any:
    with path.open("rb", buffering=0) as f:
        return func(f, *args)


def lib_file(func: Callable[..., Any], path: Path, *args: Any) -> Any:
    with path.open("rb") as f:
        return func(f, *args)


def timed(cases: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Median seconds per call of each case; the cases take turns within a round."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, call in cases.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(ts) for name, ts in times.items()}


def report(
    title: str, sizes: dict[str, int], seconds: dict[str, float], targets: list[tuple[str, float]]
) -> list[str]:
    """Print throughput per implementation and isccd's ratios; return the missed targets."""
    speed = {name: sizes[name] / seconds[name] / 1e6 for name in seconds}
    print(f"\n{title}")
    for name, mbs in speed.items():
        mib = sizes[name] / MIB
        print(f"  {name:<22} {mbs:9.1f} MB/s   ({mib:7.1f} MiB in {seconds[name]:.3f} s)")
    missed = []
    for anchor, minimum in targets:
        ratio = speed["isccd"] / speed[anchor]
        verdict = "ok" if ratio >= minimum else "MISSED"
        print(f"  isccd / {anchor:<14} {ratio:7.2f}x   target >= {minimum}x  {verdict}")
        if ratio < minimum:
            missed.append(f"{title}: {ratio:.2f}x {anchor} < {minimum}x")
    for anchor, mbs in speed.items():
        if anchor != "isccd" and anchor not in dict(targets):
            print(f"  isccd / {anchor:<14} {speed['isccd'] / mbs:7.2f}x")
    return missed


def check(label: str, ours_value: Any, reference: Any) -> None:
    if ours_value != reference:
        raise SystemExit(f"{label}: isccd gave {ours_value!r}, the anchor {reference!r}")


def bench_data(tmp: Path, size: int, core_size: int, rounds: int) -> list[str]:
    path = tmp / "data.bin"
    write_random(path, size, seed=1)
    core_path = tmp / "data-core.bin"
    with path.open("rb") as f:
        core_path.write_bytes(f.read(core_size))
    expected = lib_file(iscc_lib.gen_data_code_v0, path)["iscc"]
    check("Data-Code", isccd_file(ours.gen_data_code_v0, path)["iscc"], expected)
    check(
        "Data-Code (core slice)",
        isccd_file(ours.gen_data_code_v0, core_path)["iscc"],
        lib_file(ic.gen_data_code_v0, core_path)["iscc"],
    )
    seconds = timed(
        {
            "isccd": lambda: isccd_file(ours.gen_data_code_v0, path),
            "iscc-lib": lambda: lib_file(iscc_lib.gen_data_code_v0, path),
            "xxh32 raw": lambda: raw_xxh32(path),
        },
        rounds,
    )
    seconds |= timed(
        {"iscc-core": lambda: lib_file(ic.gen_data_code_v0, core_path)}, max(1, rounds // 2)
    )
    sizes = dict.fromkeys(seconds, size) | {"iscc-core": core_size}
    title = (
        f"Data-Code, {size // MIB} MiB random file (iscc-core on a {core_size // MIB} MiB slice)"
    )
    return report(title, sizes, seconds, TARGETS["data"])


def bench_instance(tmp: Path, rounds: int) -> list[str]:
    path = tmp / "data.bin"
    size = path.stat().st_size
    expected = lib_file(ic.gen_instance_code_v0, path)
    check("Instance-Code", isccd_file(ours.gen_instance_code_v0, path), expected)
    check("raw BLAKE3", "1e20" + raw_blake3(path), expected["datahash"])
    seconds = timed(
        {
            "isccd": lambda: isccd_file(ours.gen_instance_code_v0, path),
            "blake3 raw": lambda: raw_blake3(path),
            "iscc-lib": lambda: lib_file(iscc_lib.gen_instance_code_v0, path),
            "iscc-core": lambda: lib_file(ic.gen_instance_code_v0, path),
        },
        rounds,
    )
    title = f"Instance-Code, {size // MIB} MiB random file"
    return report(title, dict.fromkeys(seconds, size), seconds, TARGETS["instance"])


def bench_sum(tmp: Path, size: int, rounds: int) -> list[str]:
    path = tmp / "sum.bin"
    write_random(path, size, seed=2)
    expected = dict(iscc_lib.gen_sum_code_v0(str(path), add_units=True))
    check("Data+Instance", isccd_file(ours.gen_sum_code_v0, path, 64, False, True), expected)
    seconds = timed(
        {
            "isccd": lambda: isccd_file(ours.gen_sum_code_v0, path),
            "iscc-lib": lambda: iscc_lib.gen_sum_code_v0(str(path)),
        },
        rounds,
    )
    title = f"Data-Code + Instance-Code in one pass, {size // MIB} MiB random file"
    return report(title, dict.fromkeys(seconds, size), seconds, TARGETS["sum"])


def bench_text(nbytes: int, rounds: int) -> list[str]:
    text = multilingual_text(nbytes)
    size = len(text.encode("utf-8"))
    expected = ic.gen_text_code_v0(text, 256)
    check("Text-Code", ours.gen_text_code_v0(text, 256), expected)
    check("Text-Code (iscc-lib)", dict(iscc_lib.gen_text_code_v0(text, 256)), expected)
    seconds = timed(
        {
            "isccd": lambda: ours.gen_text_code_v0(text),
            "iscc-lib": lambda: iscc_lib.gen_text_code_v0(text),
        },
        rounds * 2,
    )
    seconds |= timed({"iscc-core": lambda: ic.gen_text_code_v0(text)}, rounds)
    title = f"Text-Code, {size / 1e6:.2f} MB of multilingual text ({len(text):,} characters)"
    return report(title, dict.fromkeys(seconds, size), seconds, TARGETS["text"])


def small_texts(count: int, seed: int = 11) -> list[str]:
    """Random-word ASCII texts of 200 B-4 KB, as the ``.txt`` files of ``bench/smallfiles.py``."""
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        size = rng.randint(200, 4096)
        words: list[str] = []
        while sum(map(len, words)) + len(words) < size:
            words.append(rng.choice(WORDS))
        texts.append(" ".join(words)[:size])
    return texts


def bench_small_texts(rounds: int) -> list[str]:
    """The Text-Code of many small ASCII texts, one call each: the kernel's fixed-stride path
    and the per-call costs around it, next to iscc-lib on the same texts."""
    texts = small_texts(300)
    size = sum(len(text) for text in texts)
    for text in texts[:20]:
        check("Text-Code (small)", ours.gen_text_code_v0(text), ic.gen_text_code_v0(text))
        check(
            "Text-Code (small, iscc-lib)",
            dict(iscc_lib.gen_text_code_v0(text)),
            ours.gen_text_code_v0(text),
        )
    seconds = timed(
        {
            "isccd": lambda: [ours.gen_text_code_v0(text) for text in texts],
            "iscc-lib": lambda: [iscc_lib.gen_text_code_v0(text) for text in texts],
        },
        rounds * 4,
    )
    seconds |= timed({"iscc-core": lambda: [ic.gen_text_code_v0(text) for text in texts]}, rounds)
    title = (
        f"Text-Code, {len(texts)} random-word ASCII texts of 200 B-4 KB, one call each "
        f"(isccd {seconds['isccd'] / len(texts) * 1e6:.1f} µs per text, iscc-lib "
        f"{seconds['iscc-lib'] / len(texts) * 1e6:.1f} µs)"
    )
    return report(title, dict.fromkeys(seconds, size), seconds, TARGETS["text"])


PEAK_RSS_CHILD = """
import json, sys, time
from pathlib import Path
import isccd.iscc as ours

def hwm():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
after_import = hwm()
ours.warmup()
after_warmup = hwm()
start = time.perf_counter()
with open(sys.argv[1], "rb", buffering=0) as f:
    result = ours.gen_sum_code_v0(f)
seconds = time.perf_counter() - start
rollup = {}
for line in Path("/proc/self/smaps_rollup").read_text().splitlines()[1:]:
    key, value = line.split(":")
    rollup[key] = int(value.split()[0]) * 1024
print(json.dumps({"result": result, "after_import": after_import, "after_warmup": after_warmup,
                  "peak": hwm(), "seconds": seconds,
                  "private": rollup["Private_Clean"] + rollup["Private_Dirty"],
                  "shared_clean": rollup["Shared_Clean"]}))
"""


def bench_peak_rss(tmp: Path, size: int) -> list[str]:
    """Peak RSS (VmHWM) of a child hashing ``size`` bytes; the child reports its own figure.

    RUSAGE_CHILDREN is no use here: a child started with vfork carries the parent's peak RSS
    into its own across exec.
    """
    path = tmp / "sparse.bin"
    with path.open("wb") as f:
        f.truncate(size)
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PEAK_RSS_CHILD), str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    info = json.loads(out.stdout)
    check("4 GiB file size", info["result"]["filesize"], size)
    peak = info["peak"]
    print(f"\nPeak memory hashing a {size / 2**30:.0f} GiB file (Data + Instance, one pass)")
    for label, value in [
        ("after import isccd.iscc", info["after_import"]),
        ("after warmup (numba)", info["after_warmup"]),
        ("peak while hashing", peak),
    ]:
        print(f"  {label:<24} {value / 1e6:7.1f} MB  ({value / MIB:6.1f} MiB)")
    print(
        f"  of which: private {info['private'] / 1e6:.1f} MB, clean shared pages (libraries such"
        f" as libllvmlite.so, shared by all worker processes) {info['shared_clean'] / 1e6:.1f} MB"
    )
    growth = (peak - info["after_warmup"]) / 1e6
    verdict = "ok" if peak < 150e6 else "MISSED"
    print(f"  hashing added {growth:.1f} MB; target peak < 150 MB  {verdict}")
    # The holes of a sparse file are zero-filled into the page cache on this first read, so
    # this figure is bound by the kernel, not by hashing.
    print(f"  throughput {size / info['seconds'] / 1e6:.1f} MB/s (first read of a sparse file)")
    return [] if peak < 150e6 else [f"peak RSS {peak / 1e6:.1f} MB >= 150 MB"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs, fewer rounds")
    parser.add_argument(
        "--rounds", type=int, default=0, help="rounds per case (default 5; 3 quick)"
    )
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.quick else 5)
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    print(f"isccd engine benchmark: one core (CPU {cpu}), {rounds} rounds, medians;")
    print(f"isccd reads {IO_READ_SIZE // 1024} KiB blocks; numba kernels: {ours.warmup()}")
    data_size, sum_size = (64 * MIB, 256 * MIB) if args.quick else (256 * MIB, 1024 * MIB)
    core_size = 8 * MIB if args.quick else 32 * MIB
    missed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="isccd-bench-") as tmpdir:
        tmp = Path(tmpdir)
        missed += bench_data(tmp, data_size, core_size, rounds)
        missed += bench_instance(tmp, rounds)
        (tmp / "data.bin").unlink()
        missed += bench_sum(tmp, sum_size, rounds)
        (tmp / "sum.bin").unlink()
        missed += bench_text(1_000_000, rounds)
        missed += bench_small_texts(rounds)
        missed += bench_peak_rss(tmp, 4 << 30)
    print("\nall targets reached" if not missed else "\nmissed: " + "; ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
