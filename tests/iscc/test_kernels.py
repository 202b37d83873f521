"""The compiled kernels: xxh32 equals the xxhash package, both kernel sets agree with the reference,
the pure-Python fallback is chosen (and right) without numba, and numba's cache works from a
read-only install. (Their machine code loaded without numba: tests/hashing/test_machine.py.)"""

from __future__ import annotations

import ctypes
import io
import itertools
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from isccd.iscc import _native
from isccd.iscc import kernels as kernels_module
from isccd.iscc._tables import MPA, MPB
from isccd.iscc.cdc import alg_cdc_params
from isccd.iscc.data import DataHasherV0
from isccd.iscc.kernels import (
    PYTHON_KERNELS,
    SMALL_DATA,
    SMALL_TEXT,
    Kernels,
    kernels_for,
    load_kernels,
    warmup,
)
from isccd.iscc.minhash import alg_minhash, minhash_fold, minhash_init
from isccd.iscc.text import gen_text_code_v0
from isccd.iscc.textnorm import text_collapse
from tests.iscc._data import KINDS, byte_inputs, make_data, split

ic = pytest.importorskip("iscc_core")
jit = pytest.importorskip("isccd.iscc._jit", reason="numba is not installed")

PACKAGE = Path(__file__).resolve().parents[2] / "isccd"


@pytest.fixture(scope="module", autouse=True)
def compiled() -> Kernels:
    """The compiled kernels, loaded (or compiled: seconds, the first time in a run) once for
    the module, before its first test."""
    return load_kernels()


def test_warmup_reports_compiled_kernels() -> None:
    assert warmup() is True
    assert load_kernels().accelerated


def _xxh32(buf: np.ndarray) -> list[int]:
    """The compiled kernels' xxh32 of ``buf``: the minima of folding it alone, which are those of
    its xxh32 (each permutation is one-to-one on 32-bit features)."""
    minvec = minhash_init()
    load_kernels().hash_fold(buf, minvec)
    return [int(m) for m in minvec]


@pytest.mark.parametrize("length", [*range(101), 255, 256, 1000, 1023, 4096, 65_537])
def test_xxh32_matches_xxhash_at_every_length(length: int) -> None:
    data = np.random.default_rng(length).integers(0, 256, length + 7, dtype=np.uint8)
    for start in (0, 1, 3, 7):  # unaligned starts too
        span = data[start : start + length]
        assert _xxh32(span) == alg_minhash([xxhash.xxh32_intdigest(span.tobytes())])


@given(st.binary(max_size=3000), st.data())
def test_xxh32_of_any_span_matches_xxhash(data: bytes, draw: st.DataObject) -> None:
    start = draw.draw(st.integers(0, len(data)))
    end = draw.draw(st.integers(start, len(data)))
    buf = np.frombuffer(data, dtype=np.uint8)[start:end]
    assert _xxh32(buf) == alg_minhash([xxhash.xxh32_intdigest(data[start:end])])


def test_xxh32_of_nothing_is_the_empty_feature() -> None:
    assert _xxh32(np.zeros(4, dtype=np.uint8)[2:2]) == alg_minhash([0x02CC5D05])


@given(byte_inputs(max_size=100_000))
def test_data_scan_folds_what_the_reference_hashes(data: bytes) -> None:
    buf = np.frombuffer(data, dtype=np.uint8)
    chunks = list(ic.alg_cdc_chunks(data, False))
    for kernels in (load_kernels(), PYTHON_KERNELS):
        minvec = minhash_init()
        pos, folded = kernels.data_scan(buf, 0, buf.size, minvec, alg_cdc_params(1024))
        # Every chunk but the last is folded; scanning stops where the last one starts.
        assert folded == len(chunks) - 1
        assert pos == len(data) - len(chunks[-1])
        if folded:
            assert minvec.tolist() == ic.alg_minhash(
                [xxhash.xxh32_intdigest(c) for c in chunks[:-1]]
            )


@given(byte_inputs(max_size=20_000))
def test_hash_fold_folds_the_xxh32_of_the_whole_buffer(data: bytes) -> None:
    buf = np.frombuffer(data, dtype=np.uint8)
    expected = alg_minhash([xxhash.xxh32_intdigest(data), 7])
    for kernels in (load_kernels(), PYTHON_KERNELS):
        minvec = minhash_init()
        minhash_fold(minvec, [7])  # folds into what is there
        kernels.hash_fold(buf, minvec)
        assert minvec.tolist() == expected


@given(byte_inputs(max_size=20_000))
def test_data_digest_is_the_reference_data_hash_of_any_buffer(data: bytes) -> None:
    # bytes as a small file's content is read, read-only and writable arrays, and a slice of a
    # larger one, as isccd hands them over.
    expected = ic.soft_hash_data_v0(io.BytesIO(data))
    params = alg_cdc_params(1024)
    larger = np.frombuffer(b"\xff" + data + b"\xff", dtype=np.uint8)
    buffers = (data, np.frombuffer(data, dtype=np.uint8), np.array(bytearray(data)), larger[1:-1])
    for kernels in (load_kernels(), PYTHON_KERNELS):
        for buf in buffers:
            assert kernels.data_digest(buf, params) == expected


def test_compiled_kernels_refuse_arrays_they_would_misread() -> None:
    kernels = load_kernels()
    params = alg_cdc_params(1024)
    strided = np.zeros(64, dtype=np.uint8)[::2]
    with pytest.raises(TypeError):
        kernels.data_digest(strided, params)
    with pytest.raises(TypeError):
        kernels.hash_fold(np.zeros(8, dtype=np.uint16), minhash_init())
    with pytest.raises(ValueError, match="64 slots"):
        kernels.hash_fold(np.zeros(8, dtype=np.uint8), minhash_init()[:8])
    with pytest.raises(ValueError, match="outside the buffer"):
        kernels.data_scan(np.zeros(8, dtype=np.uint8), 9, 9, minhash_init(), params)
    with pytest.raises(ValueError, match="to the length of the text"):
        kernels.text_digest(b"abc\xc3\xa4", np.array([0, 1, 2, 3], dtype=np.int64), 13)


@given(st.lists(st.integers(0, 2**64 - 1), min_size=64, max_size=64))
def test_compress_is_the_256_bit_minhash_digest(minima: list[int]) -> None:
    minvec = np.array(minima, dtype=np.uint64)
    expected = ic.alg_minhash_compress(minima, 4)
    for kernels in (load_kernels(), PYTHON_KERNELS):
        assert kernels.compress(minvec) == expected


@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=70), st.integers(1, 64))
def test_compiled_compress_packs_any_planes_as_the_reference(minima: list[int], lsb: int) -> None:
    # Lengths that leave the first byte padded too.
    # The compiled compress called at any size, which the kernels only call with 64 and 4.
    vector = np.array(minima, dtype=np.uint64)
    out = (ctypes.c_uint8 * ((len(minima) * lsb + 7) // 8))()
    compress = _native._function(jit.addresses()["compress"], "compress")
    compress(vector.ctypes.data, len(minima), lsb, out)
    assert bytes(out) == ic.alg_minhash_compress(minima, lsb)


def _utf8_offsets(text: str) -> tuple[bytes, np.ndarray]:
    utf8 = text.encode("utf-8")
    offsets = np.cumsum([0, *(len(ch.encode("utf-8")) for ch in text)], dtype=np.int64)
    return utf8, offsets


def _check_text_kernels(text: str) -> None:
    """Both kernel sets' minima and digests are the reference's, with the character offsets
    given, and without them for ASCII text."""
    utf8, offsets = _utf8_offsets(text)
    windows = [text[i : i + 13] for i in range(max(len(text) - 12, 1))]
    expected = alg_minhash([xxhash.xxh32_intdigest(w.encode("utf-8")) for w in windows])
    for kernels in (load_kernels(), PYTHON_KERNELS):
        for given_offsets in (offsets, None) if text.isascii() else (offsets,):
            minvec = minhash_init()
            kernels.text_fold(utf8, given_offsets, 13, minvec)
            assert minvec.tolist() == expected
            digest = kernels.text_digest(utf8, given_offsets, 13)
            assert digest == ic.alg_minhash_compress(expected, 4)


@given(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=300))
def test_text_kernels_hash_every_window(text: str) -> None:
    _check_text_kernels(text)


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=300))
def test_text_kernels_hash_every_window_of_ascii_text(text: str) -> None:
    # ASCII text takes the compiled kernel's fixed-stride path; short text the general one.
    _check_text_kernels(text)


@pytest.mark.parametrize("alphabet", ["abcdeé中文😀", "abcdefghij"])
@pytest.mark.parametrize("windows", [4095, 4096, 4097, 3 * 4096 + 50])
def test_text_fold_across_its_blocks_of_window_hashes(alphabet: str, windows: int) -> None:
    rng = np.random.default_rng(windows)
    text = "".join(rng.choice(list(alphabet), windows + 12))
    utf8, offsets = _utf8_offsets(text)
    features = [xxhash.xxh32_intdigest(text[i : i + 13].encode()) for i in range(windows)]
    minvec = minhash_init()
    load_kernels().text_fold(utf8, offsets if not text.isascii() else None, 13, minvec)
    assert minvec.tolist() == alg_minhash(features)


def test_no_32_bit_feature_needs_the_last_mersenne_subtraction() -> None:
    # The compiled kernels reduce v = (a * f + b) mod 2**64 modulo 2**61 - 1 without the final
    # conditional subtraction, which is only needed when (v & P) + (v >> 61) >= P; that needs
    # bits 3 to 60 of v all set: 64 values of v. For each permutation solve a * f = v - b
    # (mod 2**64) for f and check that no solution is a 32-bit feature.
    prime, modulus = 2**61 - 1, 2**64
    for a, b in zip(MPA, MPB, strict=True):
        assert a % 2 == 1  # a is invertible modulo 2**64: one f per v
        inverse = pow(a, -1, modulus)
        for top, low in itertools.product(range(8), range(8)):
            v = top << 61 | (prime & ~7) | low
            if (v & prime) + (v >> 61) >= prime:
                assert (v - b) * inverse % modulus >= 2**32


def test_small_inputs_take_the_python_kernels_until_the_compiled_ones_are_loaded() -> None:
    load_kernels.cache_clear()
    try:
        assert kernels_for(SMALL_DATA, SMALL_DATA) is PYTHON_KERNELS
        assert kernels_for(SMALL_DATA + 1, SMALL_DATA).accelerated
        # Once loaded, the compiled kernels hash everything.
        assert kernels_for(0, SMALL_DATA).accelerated
    finally:
        load_kernels()


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(KINDS),
    st.integers(SMALL_DATA - 20_000, SMALL_DATA + 20_000),
    st.integers(0, 2**32 - 1),
    # Pieces of at least 1 KiB: a quarter of a million 1-byte pushes would take minutes.
    st.lists(st.integers(1024, 70_000), min_size=1, max_size=6),
)
def test_a_stream_that_grows_past_the_switch_gives_the_reference_code(
    kind: str, size: int, seed: int, sizes: list[int]
) -> None:
    """A Data-Code stream starts on the Python kernels and moves to the compiled ones when it
    passes SMALL_DATA bytes, wherever the pushes cut it."""
    data = make_data(kind, size, seed)
    load_kernels.cache_clear()
    try:
        hasher = DataHasherV0()
        for piece in split(data, sizes):
            hasher.push(piece)
        switched = load_kernels.cache_info().currsize == 1
        code = hasher.code(256)
    finally:
        load_kernels()
    assert switched == (size > SMALL_DATA)
    assert "ISCC:" + code == ic.gen_data_code_v0(io.BytesIO(data), 256)["iscc"]


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(st.integers(SMALL_TEXT // 2 - 800, SMALL_TEXT // 2 + 800), st.integers(0, 2**32 - 1))
def test_text_on_either_side_of_the_switch_gives_the_reference_code(chars: int, seed: int) -> None:
    """Two-byte characters around SMALL_TEXT bytes of UTF-8: below it the Python kernel
    hashes the windows, above it the compiled one."""
    rng = np.random.default_rng(seed)
    text = "".join(chr(c) for c in rng.integers(0x400, 0x4FF, chars))  # Cyrillic: 2 bytes
    load_kernels.cache_clear()
    try:
        code = gen_text_code_v0(text, 256)["iscc"]
        switched = load_kernels.cache_info().currsize == 1
    finally:
        load_kernels()
    # The kernel hashes the collapsed text (gen_text_code_v0 normalizes first).
    assert switched == (len(text_collapse(text).encode("utf-8")) > SMALL_TEXT)
    assert code == ic.gen_text_code_v0(text, 256)["iscc"]


def _run(code: str, env: dict[str, str], cwd: Path, prefix: tuple[str, ...] = ()) -> str:
    result = subprocess.run(
        [*prefix, sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "XDG_"))}
    env["HOME"] = str(home)
    env.pop("PYTHONPATH", None)
    return env


def test_without_numba_the_python_kernels_give_reference_codes(tmp_path: Path) -> None:
    data = make_data("mixed", 50_000, seed=11)
    (tmp_path / "input.bin").write_bytes(data)
    text = "Ünïcödé text, with punctuation! 中文 文本 " * 40
    (tmp_path / "input.txt").write_text(text, encoding="utf-8")
    out = _run(
        f"""
        import sys
        sys.modules["numba"] = None  # import numba now raises ImportError
        sys.path.insert(0, {str(PACKAGE.parent)!r})
        from pathlib import Path
        from isccd.iscc.kernels import warmup
        from isccd.iscc.data import gen_data_code_v0
        from isccd.iscc.text import gen_text_code_v0
        print(warmup())
        print(gen_data_code_v0(Path("input.bin").read_bytes(), 256)["iscc"])
        print(gen_text_code_v0(Path("input.txt").read_text(encoding="utf-8"), 256)["iscc"])
        print("numba" in sys.modules and sys.modules["numba"] is not None)
        """,
        _clean_env(tmp_path),
        tmp_path,
    )
    accelerated, data_code, text_code, numba_loaded = out.split()
    assert accelerated == "False"
    assert data_code == ic.gen_data_code_v0(io.BytesIO(data), 256)["iscc"]
    assert text_code == ic.gen_text_code_v0(text, 256)["iscc"]
    assert numba_loaded == "False"


def _read_only_copy(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "isccd", ignore=shutil.ignore_patterns("__pycache__"))
    for path in [site, *site.rglob("*")]:
        mode = path.stat().st_mode
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    return site


def _restore_write(site: Path) -> None:
    for path in [site, *site.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


def _unprivileged() -> tuple[str, ...]:
    """A command prefix under which read-only directories are read-only, even for root."""
    if os.geteuid() != 0:
        return ()
    # Root ignores permission bits. In a user namespace where it is mapped to an ordinary user
    # it has no capabilities left, so the owner bits apply (and its files stay readable).
    prefix = ("unshare", "--user", "--map-user=1000", "--map-group=1000")
    if shutil.which("unshare") is None:
        pytest.skip("running as root and unshare(1) is not available")
    probe = subprocess.run([*prefix, "true"], capture_output=True, check=False, timeout=30)
    if probe.returncode != 0:
        pytest.skip("running as root and user namespaces are not available")
    return prefix


@pytest.mark.slow
@pytest.mark.parametrize("cache_at", ["NUMBA_CACHE_DIR", "user cache dir", "nowhere"])
def test_read_only_install_computes_right_codes(tmp_path: Path, cache_at: str) -> None:
    """The package directory is read-only and HOME is fresh: numba caches in NUMBA_CACHE_DIR
    when set, else in ~/.cache/numba, and compiles in memory when nothing is writable."""
    prefix = _unprivileged()
    data = make_data("random", 300_000, seed=5)
    (tmp_path / "input.bin").write_bytes(data)
    home = tmp_path / "home"
    home.mkdir()
    env = _clean_env(home)
    cache = home / ".cache" / "numba"
    if cache_at == "NUMBA_CACHE_DIR":
        cache = tmp_path / "numba-cache"
        env["NUMBA_CACHE_DIR"] = str(cache)
    site = _read_only_copy(tmp_path)
    if cache_at == "nowhere":
        home.chmod(0o555)
    code = f"""
        import sys
        sys.path.insert(0, {str(site)!r})
        import isccd.iscc.kernels as k
        assert k.__file__.startswith({str(site)!r}), k.__file__
        from pathlib import Path
        from isccd.iscc.data import gen_data_code_v0
        print(k.warmup(), gen_data_code_v0(Path("input.bin").read_bytes(), 128)["iscc"])
        """
    try:
        first = _run(code, env, tmp_path, prefix)
        cached = sorted(p.name for p in tmp_path.rglob("*.nbi"))
        second = _run(code, env, tmp_path, prefix)  # loads the kernels from the cache, if any
    finally:
        _restore_write(site)
        home.chmod(0o755)
    expected = ic.gen_data_code_v0(io.BytesIO(data), 128)["iscc"]
    assert first.split() == second.split() == ["True", expected]
    if cache_at == "nowhere":
        assert cached == []
    else:
        assert any(name.startswith("_jit.data_scan") for name in cached), cached
        assert {p.parent for p in tmp_path.rglob("*.nbi")} <= set(cache.rglob("*")) | {cache}


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(0, 400),
    st.integers(0, 12),
    st.integers(0, 64),
    st.integers(0, 24),
)
def test_the_compiled_hamming_scan_keeps_what_the_python_one_keeps(  # noqa: PLR0917
    compiled: Kernels, seed: int, n: int, queries: int, radius: int, limit: int
) -> None:
    # A family of codes a few bits apart, some repeated, some dead, and queries each leaving
    # out a span of ids: the same counts, the same nearest in the same order (nearest first,
    # then the larger id), the same keys.
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2**64, dtype=np.uint64)
    noise = rng.integers(0, 2**64, size=(3, n), dtype=np.uint64)
    codes = base ^ (noise[0] & noise[1] & noise[2])
    codes[: n // 3] = codes[n // 3 : 2 * (n // 3)]
    ids = rng.permutation(np.arange(1, 2 * n + 2, dtype=np.int64))[:n].copy()
    live = rng.random(n) < 0.8
    asked = base ^ rng.integers(0, 256, size=queries, dtype=np.uint64)
    lo = rng.integers(0, 2 * n + 2, size=queries, dtype=np.int64)
    hi = lo + rng.integers(0, n + 1, size=queries, dtype=np.int64)
    found = compiled.hamming_nearest(codes, ids, live, asked, (lo, hi), radius, limit)
    python = PYTHON_KERNELS.hamming_nearest(codes, ids, live, asked, (lo, hi), radius, limit)
    slots, keys, counts = found
    assert np.array_equal(slots, python[0]) and np.array_equal(counts, python[2])
    kept = slots >= 0
    assert np.array_equal(keys[kept], python[1][kept])
    for q in range(queries):
        d = np.bitwise_count(codes ^ asked[q])
        near = live & (d <= radius) & ~((lo[q] <= ids) & (ids < hi[q]))
        assert counts[q] == int(near.sum())
        assert int(kept[q].sum()) == min(limit, int(near.sum()))


def test_the_compiled_hamming_scan_refuses_arrays_that_do_not_match(compiled: Kernels) -> None:
    codes = np.zeros(4, dtype=np.uint64)
    ids = np.arange(1, 5, dtype=np.int64)
    span = np.zeros(2, dtype=np.int64)
    scan = compiled.hamming_nearest
    with pytest.raises(ValueError, match="differ"):
        scan(codes, ids[:3], np.ones(4, dtype=np.bool_), codes[:2], (span, span), 8, 4)
    with pytest.raises(ValueError, match="differ"):
        scan(codes, ids, np.ones(4, dtype=np.bool_), codes[:2], (span[:1], span), 8, 4)
    with pytest.raises(TypeError, match="contiguous"):
        scan(codes[::2], ids[::2], np.ones(2, dtype=np.bool_), codes[:2], (span, span), 8, 4)


@pytest.mark.parametrize(
    "radius", [-(1 << 64), -(1 << 63) - 1, -1, 0, 3, 64, 65, 1 << 63, (1 << 64) + 3]
)
def test_the_compiled_hamming_scan_takes_any_radius_as_the_python_one(
    compiled: Kernels, radius: int
) -> None:
    # Distances are 0 to 64: a radius past either end finds all or nothing, not what the radius
    # is once cut to the 64 bits of a C integer. Keys past the last hit are 0 in both.
    rng = np.random.default_rng(radius % 1000)
    codes = rng.integers(0, 2**64, size=50, dtype=np.uint64)
    ids = np.arange(1, 51, dtype=np.int64)
    live = rng.random(50) < 0.8
    asked = codes[:5] ^ np.uint64(1)
    span = (np.full(5, 10, dtype=np.int64), np.full(5, 20, dtype=np.int64))
    found = compiled.hamming_nearest(codes, ids, live, asked, span, radius, 60)
    python = PYTHON_KERNELS.hamming_nearest(codes, ids, live, asked, span, radius, 60)
    for ours, theirs in zip(found, python, strict=True):
        assert np.array_equal(ours, theirs)


def test_the_compiled_hamming_scan_reads_live_flags_of_one_byte_only(compiled: Kernels) -> None:
    # Flags of another width would be read a byte at a time (the first flag's bytes as the
    # first few flags): refused, not misread.
    codes = np.zeros(4, dtype=np.uint64)
    ids = np.arange(1, 5, dtype=np.int64)
    span = (np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64))
    for wide in (np.int64, np.int32, np.uint16, np.float64):
        live = np.array([1, 0, 1, 1], dtype=wide)
        with pytest.raises(TypeError, match="uint8"):
            compiled.hamming_nearest(codes, ids, live, codes[:1], span, 8, 4)  # type: ignore[arg-type]
    flags = np.array([1, 0, 1, 1], dtype=np.bool_)
    _, _, counts = compiled.hamming_nearest(codes, ids, flags, codes[:1], span, 8, 4)
    assert counts.tolist() == [3]
    with pytest.raises(ValueError, match="at least 0"):
        compiled.hamming_nearest(codes, ids, flags, codes[:1], span, 8, -1)


def test_threads_asking_for_the_kernels_at_once_share_one_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two threads ask before either has them (the store's owner for a family's scan, another
    # coding a file): the first loads while the other waits, and both get what it loaded.
    # The loader holds the first until the other is seen: waiting on the lock, or, were
    # there no lock, loading too.
    seen = threading.Event()
    loads: list[Kernels] = []

    class Watched:
        """The loading lock, telling when a thread finds it held."""

        def __init__(self) -> None:
            self.lock = threading.Lock()

        def __enter__(self) -> None:
            if not self.lock.acquire(blocking=False):
                seen.set()
                self.lock.acquire()

        def __exit__(self, *exc: object) -> None:
            self.lock.release()

    def loader() -> Kernels:
        made = PYTHON_KERNELS._replace()  # a new object for each load
        loads.append(made)
        if len(loads) > 1:
            seen.set()
        assert seen.wait(timeout=60), "no other thread asked"
        return made

    chosen = list(kernels_module._loader)
    monkeypatch.setattr(kernels_module, "_loading", Watched(), raising=False)
    kernels_module.use_loader(loader)
    got: list[Kernels] = []
    try:
        threads = [threading.Thread(target=lambda: got.append(load_kernels())) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        kernels_module.use_loader(chosen[0] if chosen else None)
    assert len(loads) == 1
    assert len(got) == 2 and got[0] is got[1] is loads[0]
