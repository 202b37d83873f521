"""Speed of the ISCC codec: isccd next to iscc-core 1.5.0 and iscc-lib, measured in one run.

Each operation runs on the same inputs in every implementation that has it; the figure is the
median of several timed rounds, in microseconds per call, with isccd's speed as a ratio of each
anchor's (above 1: isccd is faster).

    python bench/codec.py [--rounds N] [--calls N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import iscc_core as ic
import iscc_lib

import isccd.iscc as ours

CODE = "ISCC:KACYPXW445FTYNJ3CYSXHAFJMA2HUWULUNRFE3BLHRSCXYH2M5AEGQY"
OTHER = "ISCC:KACYPXW445FTYNJ3EUG3S3QNJIL2A3J6EKGLVNWXGVFIAUCVZG5PHFQ"
UNIT = "ISCC:EADSKDNZNYGUUF5AMFEJLZ5P66CP5YKCOA3X7F36RWE4CIRCBTUWXYY"
DIGEST = os.urandom(32)
A, B = os.urandom(32), os.urandom(32)

#: operation -> {implementation: zero-argument callable}
CASES: dict[str, dict[str, Callable[[], Any]]] = {
    "encode_component 256-bit": {
        "isccd": lambda: ours.encode_component(2, 0, 0, 256, DIGEST),
        "iscc-core": lambda: ic.encode_component(2, 0, 0, 256, DIGEST),
        "iscc-lib": lambda: iscc_lib.encode_component(2, 0, 0, 256, DIGEST),
    },
    "iscc_decompose MCDI": {
        "isccd": lambda: ours.iscc_decompose(CODE),
        "iscc-core": lambda: ic.iscc_decompose(CODE),
        "iscc-lib": lambda: iscc_lib.iscc_decompose(CODE),
    },
    "iscc_decode 256-bit unit": {
        "isccd": lambda: ours.iscc_decode(UNIT),
        "iscc-core": lambda: ic.iscc_decode(UNIT),
        "iscc-lib": lambda: iscc_lib.iscc_decode(UNIT),
    },
    "iscc_normalize MCDI": {
        "isccd": lambda: ours.iscc_normalize(CODE),
        "iscc-core": lambda: ic.iscc_normalize(CODE),
    },
    "iscc_validate MCDI": {
        "isccd": lambda: ours.iscc_validate(CODE),
        "iscc-core": lambda: ic.iscc_validate(CODE),
    },
    "iscc_explain MCDI": {
        "isccd": lambda: ours.iscc_explain(CODE),
        "iscc-core": lambda: ic.iscc_explain(CODE),
    },
    "iscc_compare MCDI x MCDI": {
        "isccd": lambda: ours.iscc_compare(CODE, OTHER),
        "iscc-core": lambda: ic.iscc_compare(CODE, OTHER),
    },
    "hamming distance 256-bit": {
        "isccd": lambda: ours.hamming_distance(A, B),
        "iscc-core": lambda: ic.iscc_distance_bytes(A, B),
    },
}


def per_call_us(func: Callable[[], Any], calls: int, rounds: int) -> float:
    """Median over ``rounds`` of the mean time per call, in microseconds."""
    func()  # warm up caches and lazy imports
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            func()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    for impls in CASES.values():
        results = {name: func() for name, func in impls.items()}
        assert results["isccd"] == results["iscc-core"], results
        assert results.get("iscc-lib", results["iscc-core"]) == results["iscc-core"], results
    print(f"{'operation':<28}{'isccd µs':>10}{'iscc-core µs':>14}{'iscc-lib µs':>13}  ratios")
    for operation, impls in CASES.items():
        us = {name: per_call_us(func, args.calls, args.rounds) for name, func in impls.items()}
        ratios = "  ".join(
            f"{us[name] / us['isccd']:.2f}x {name}" for name in us if name != "isccd"
        )
        lib = f"{us['iscc-lib']:.2f}" if "iscc-lib" in us else "-"
        print(f"{operation:<28}{us['isccd']:>10.2f}{us['iscc-core']:>14.2f}{lib:>13}  {ratios}")


if __name__ == "__main__":
    main()
