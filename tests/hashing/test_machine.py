"""The kernels' machine code on disk: compiled and written once, loaded without numba after, the
right codes either way; a damaged, foreign or unwritable cache costs time, never results; an
object that needs a symbol the process lacks is refused before LLVM could end the process."""

from __future__ import annotations

import io
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.hashing import machine
from isccd.iscc._native import (
    SIGNATURES,
    MachineCode,
    MachineCodeError,
    load_machine_code,
    native_kernels,
    undefined_symbols,
)
from isccd.iscc.cdc import alg_cdc_params
from isccd.iscc.kernels import PYTHON_KERNELS, Kernels
from isccd.iscc.minhash import minhash_init
from tests.iscc._data import make_data

ic = pytest.importorskip("iscc_core")
pytest.importorskip("numba", reason="numba is not installed")
llvm = pytest.importorskip("llvmlite.binding", reason="llvmlite is not installed")

PACKAGE_PARENT = Path(__file__).resolve().parents[2]

#: What a process that hashes does: the kernels, then a Data-Code and a Text-Code over the sizes
#: that take the compiled kernels, and how it got them.
_HASH = """
    import json, sys
    sys.path.insert(0, {parent!r})
    from pathlib import Path
    import isccd.hashing
    from isccd.hashing import machine
    from isccd.iscc.kernels import warmup
    from isccd.iscc.data import gen_data_code_v0
    from isccd.iscc.text import gen_text_code_v0
    accelerated = warmup()
    loaded = machine.last_loaded()
    print(json.dumps({{
        "accelerated": accelerated,
        "source": loaded.source,
        "reason": loaded.reason,
        "numba": "numba" in sys.modules,
        "data": gen_data_code_v0(Path("input.bin").read_bytes(), 256)["iscc"],
        "text": gen_text_code_v0(Path("input.txt").read_text(encoding="utf-8"), 256)["iscc"],
    }}))
"""


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[str, str]:
    """Inputs large enough for the compiled kernels, and their reference codes."""
    data = make_data("mixed", 400_000, seed=3)
    text = "Ünïcödé and ASCII text, with punctuation! 中文 文本 " * 600
    (tmp_path / "input.bin").write_bytes(data)
    (tmp_path / "input.txt").write_text(text, encoding="utf-8")
    return (
        ic.gen_data_code_v0(io.BytesIO(data), 256)["iscc"],
        ic.gen_text_code_v0(text, 256)["iscc"],
    )


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["CACHE_DIRECTORY"] = str(cache)
    return env


def _hash(cwd: Path, env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_HASH.format(parent=str(PACKAGE_PARENT)))],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.fixture(scope="module")
def built() -> MachineCode:
    """The kernels' machine code, as this test run cached it (compiled here if it could not)."""
    machine.compiled_kernels()
    try:
        return machine.read(machine.cache_path())
    except (OSError, MachineCodeError):
        from isccd.iscc import _jit

        code, _ = _jit.machine_code()
        return code


@pytest.fixture(scope="module")
def loaded(built: MachineCode) -> Kernels:
    """The kernels linked from that machine code into this process (not numba's)."""
    kernels: Kernels = native_kernels(load_machine_code(built))
    return kernels


@pytest.mark.slow
def test_compiled_once_then_loaded_without_numba(tmp_path: Path, inputs: tuple[str, str]) -> None:
    env = _env(tmp_path / "cache")
    first = _hash(tmp_path, env)
    assert first["source"] == "compiled"
    files = list((tmp_path / "cache" / "kernels").iterdir())
    assert [f.suffix for f in files] == [".o"]  # no temporary left behind
    second = _hash(tmp_path, env)
    assert second["source"] == "cache"
    assert second["numba"] is False
    for run in (first, second):
        assert run["accelerated"] is True
        assert (run["data"], run["text"]) == inputs


@pytest.mark.slow
# A damaged file (its digest disagrees) and a whole file that is no object (the linker refuses
# it); files cut short or empty are refused by read() alike (test_read_takes_only_whole_files).
@pytest.mark.parametrize("damage", ["flipped", "foreign"])
def test_a_damaged_file_is_compiled_again_and_replaced(
    tmp_path: Path, inputs: tuple[str, str], built: MachineCode, damage: str
) -> None:
    env = _env(tmp_path / "cache")
    path = machine.cache_path(env)
    machine.write(path, built)
    whole = path.read_bytes()
    if damage == "flipped":
        path.write_bytes(whole[:200] + bytes([whole[200] ^ 1]) + whole[201:])
    else:  # a whole file of the right form whose object is not one
        machine.write(path, MachineCode(b"\x7fELF not an object", built.symbols))
    run = _hash(tmp_path, env)
    assert run["source"] == "compiled"
    assert str(path) in str(run["reason"])
    assert (run["data"], run["text"]) == inputs
    # Replaced by a whole file again. Not byte for byte the one written above: numba numbers
    # the functions it compiles in a process, so their symbols depend on what it compiled first.
    replaced = machine.read(path)
    assert set(replaced.symbols) == set(SIGNATURES)
    assert all(load_machine_code(replaced).values())  # an object this process can link


@pytest.mark.slow
def test_an_unwritable_cache_compiles_in_every_process(
    tmp_path: Path, inputs: tuple[str, str]
) -> None:
    (tmp_path / "file").write_text("not a directory")
    run = _hash(tmp_path, _env(tmp_path / "file" / "cache"))
    assert run["source"] == "compiled, not cached"
    assert "cannot write" in str(run["reason"])
    assert (run["data"], run["text"]) == inputs


def test_the_key_follows_numbas_settings(tmp_path: Path) -> None:
    env = _env(tmp_path)
    assert machine.cache_path(env) == machine.cache_path(dict(env))
    assert machine.cache_path(env).parent == tmp_path / "kernels"
    for setting in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_OPT", "NUMBA_LOOP_VECTORIZE"):
        assert machine.cache_path({**env, setting: "0"}) != machine.cache_path(env)
    # Not any variable: only numba's that change the machine code (the service sets where
    # numba caches; a command run by hand shares its machine code).
    for other in ("LANG", "NUMBA_CACHE_DIR", "NUMBA_NUM_THREADS"):
        assert machine.cache_path({**env, other: "1"}) == machine.cache_path(env)


def test_read_takes_only_whole_files(tmp_path: Path) -> None:
    code = MachineCode(b"\x7fELF" + bytes(range(256)), dict.fromkeys(SIGNATURES, "f"))
    path = tmp_path / "k.o"
    machine.write(path, code)
    assert machine.read(path) == code
    whole = path.read_bytes()
    for damaged in (whole[:-1], whole[1:], b"", whole[:40], whole.replace(b"isccd", b"ISCCD")):
        path.write_bytes(damaged)
        with pytest.raises(MachineCodeError):
            machine.read(path)
    assert list(tmp_path.iterdir()) == [path]


def test_read_takes_no_fifo_link_or_giant(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.o"
    os.mkfifo(fifo)
    with pytest.raises(MachineCodeError):  # at once: no writer is waited for
        machine.read(fifo)
    good = tmp_path / "good.o"
    machine.write(good, MachineCode(b"\x7fELF", dict.fromkeys(SIGNATURES, "f")))
    (tmp_path / "link.o").symlink_to(good)
    with pytest.raises(OSError):
        machine.read(tmp_path / "link.o")
    with (tmp_path / "big.o").open("wb") as f:
        f.truncate(machine.MAX_SIZE + 1)  # sparse: no disk is used
    with pytest.raises(MachineCodeError):
        machine.read(tmp_path / "big.o")


def test_writing_removes_what_stopped_writers_left(tmp_path: Path) -> None:
    stale, fresh = tmp_path / ".kernels-old", tmp_path / ".kernels-new"
    stale.write_bytes(b"")
    fresh.write_bytes(b"")
    hours_ago = time.time() - 2 * machine.STALE_SECONDS
    os.utime(stale, (hours_ago, hours_ago))
    machine.write(tmp_path / "k.o", MachineCode(b"\x7fELF", dict.fromkeys(SIGNATURES, "f")))
    assert sorted(p.name for p in tmp_path.iterdir()) == [".kernels-new", "k.o"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nm") is None, reason="nm (binutils) is not installed")
def test_undefined_symbols_are_those_nm_lists(tmp_path: Path, built: MachineCode) -> None:
    (tmp_path / "k.o").write_bytes(built.obj)
    listed = subprocess.run(
        ["nm", "--undefined-only", "--format=posix", str(tmp_path / "k.o")],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    names = tuple(sorted(line.split()[0] for line in listed.splitlines()))
    assert names  # the error path's helpers, at least
    assert undefined_symbols(built.obj) == names


@pytest.mark.parametrize(
    "damaged", [b"", b"\x7fELF", b"\x7fELF\x02\x01" + b"\xff" * 80, b"MZ" * 40]
)
def test_undefined_symbols_refuses_what_is_no_object(damaged: bytes) -> None:
    with pytest.raises(MachineCodeError):
        undefined_symbols(damaged)


@given(st.binary(max_size=600))
def test_undefined_symbols_of_any_bytes_are_names_or_refused(tail: bytes) -> None:
    # A header that claims to be an object, then anything: names or MachineCodeError, nothing
    # else (no other exception, no hang).
    try:
        names = undefined_symbols(b"\x7fELF\x02\x01" + tail)
    except MachineCodeError:
        return
    assert all(isinstance(name, str) for name in names)


@given(st.binary(max_size=30_000), st.integers(2, 3000), st.data())
def test_linked_data_kernels_agree_with_the_python_ones(
    loaded: Kernels, data: bytes, average: int, draw: st.DataObject
) -> None:
    params = alg_cdc_params(average)
    assert loaded.data_digest(data, params) == PYTHON_KERNELS.data_digest(data, params)
    buf = np.frombuffer(data, dtype=np.uint8)
    start = draw.draw(st.integers(0, len(data)))
    stop_at = draw.draw(st.integers(-3, len(data) + 3))
    ours, theirs = minhash_init(), minhash_init()
    assert loaded.data_scan(buf, start, stop_at, ours, params) == PYTHON_KERNELS.data_scan(
        buf, start, stop_at, theirs, params
    )
    loaded.hash_fold(buf[start:], ours)
    PYTHON_KERNELS.hash_fold(buf[start:], theirs)
    assert ours.tolist() == theirs.tolist()
    assert loaded.compress(ours) == PYTHON_KERNELS.compress(theirs)


@given(st.text(max_size=600), st.integers(1, 40))
def test_linked_text_kernels_agree_with_the_python_ones(
    loaded: Kernels, text: str, width: int
) -> None:
    utf8 = text.encode("utf-8", "surrogatepass")
    offsets = np.cumsum([0, *(len(c.encode("utf-8", "surrogatepass")) for c in text)])
    offsets = offsets.astype(np.int64)
    for given_offsets in (offsets, None) if text.isascii() else (offsets,):
        expected = PYTHON_KERNELS.text_digest(utf8, given_offsets, width)
        assert loaded.text_digest(utf8, given_offsets, width) == expected
        ours, theirs = minhash_init(), minhash_init()
        loaded.text_fold(utf8, given_offsets, width, ours)
        PYTHON_KERNELS.text_fold(utf8, given_offsets, width, theirs)
        assert ours.tolist() == theirs.tolist()


def test_linked_kernels_agree_with_the_reference_on_texts_of_many_blocks(loaded: Kernels) -> None:
    for chars in (4106, 4108, 8204, 12_300, 50_000):
        text = "".join(chr(0x400 + (i * 7919) % 255) if i % 3 else "a" for i in range(chars))
        utf8 = text.encode()
        offsets = np.cumsum([0, *(len(c.encode()) for c in text)]).astype(np.int64)
        assert loaded.text_digest(utf8, offsets, 13) == PYTHON_KERNELS.text_digest(
            utf8, offsets, 13
        )


def test_kernels_give_each_thread_its_own_results(loaded: Kernels) -> None:
    """Threads hashing at once, switching as often as the interpreter can: every result is the
    one a single thread gets (each call writes into buffers of its own)."""
    params = alg_cdc_params(1024)
    work = []
    for i in range(8):
        data = make_data("random", 3_000 + 20_000 * i, seed=i)
        text = f"word{i} ünï " * (200 + 500 * i)
        utf8 = text.encode()
        offsets = np.cumsum([0, *(len(c.encode()) for c in text)]).astype(np.int64)
        work.append((data, utf8, offsets))
    expected = [(loaded.data_digest(d, params), loaded.text_digest(u, o, 13)) for d, u, o in work]
    wrong: list[int] = []

    def hammer(number: int) -> None:
        for _ in range(15):
            for i, (data, utf8, offsets) in enumerate(work):
                got = (loaded.data_digest(data, params), loaded.text_digest(utf8, offsets, 13))
                if got != expected[i]:
                    wrong.append(number)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=hammer, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert wrong == []


def test_kernels_refuse_what_they_would_misread_or_write_into(loaded: Kernels) -> None:
    params = alg_cdc_params(1024)
    frozen = np.frombuffer(b"\xff" * 512, dtype=np.uint64)
    for write_into in (
        lambda: loaded.hash_fold(np.zeros(10, dtype=np.uint8), frozen),
        lambda: loaded.data_scan(np.zeros(10, dtype=np.uint8), 0, 10, frozen, params),
        lambda: loaded.text_fold(b"hello world", None, 13, frozen),
    ):
        with pytest.raises(ValueError, match="read-only"):
            write_into()
    two = "ää".encode()
    for offsets in ([0, 1 << 40, 4], [-(1 << 40), 2, 4], [0, 0, 4], [0, 3, 2, 4]):
        with pytest.raises(ValueError, match="offsets"):
            loaded.text_digest(two, np.array(offsets, dtype=np.int64), 1)
    with pytest.raises(ValueError, match="offsets"):  # as many bytes as characters: not ASCII
        loaded.text_digest(b"abcd", np.array([0, 0, 0, 4, 4], dtype=np.int64), 2)
    for width in (0, -100_000):
        with pytest.raises(ValueError, match="width"):
            loaded.text_digest(b"text", None, width)
    for bad in ((-(1 << 40), 8192, 640, 2047, 511), (256, 0, 0, 1, 1), (1, 2, -1, 3, 4)):
        with pytest.raises(ValueError, match="chunker"):
            loaded.data_scan(np.zeros(100, dtype=np.uint8), 0, 100, minhash_init(), bad)
        with pytest.raises(ValueError, match="chunker"):
            loaded.data_digest(bytes(100), bad)
    assert frozen.tobytes() == b"\xff" * 512  # nothing was written


def test_undefined_symbols_of_a_hostile_header_are_refused_at_once() -> None:
    # Zero-sized section headers, 65,535 of them: refused, not walked.
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    header[0x28:0x30] = (64).to_bytes(8, "little")  # e_shoff
    header[0x3A:0x3C] = (0).to_bytes(2, "little")  # e_shentsize
    header[0x3C:0x3E] = (65535).to_bytes(2, "little")  # e_shnum
    started = time.monotonic()
    with pytest.raises(MachineCodeError):
        undefined_symbols(bytes(header) + bytes(600))
    assert time.monotonic() - started < 1


#: A process that starts the workers' kernels as the fork server does, and says when numba
#: starts compiling them; it is held after compiling, so that however fast numba is, a signal
#: sent once it said so arrives before the machine code is written.
_STOPPED_WHILE_COMPILING = """
    import sys
    sys.path.insert(0, {parent!r})
    from isccd.iscc import _jit
    compile_now = _jit.machine_code
    def machine_code():
        print("compiling", flush=True)
        compiled = compile_now()
        sys.stdin.read()  # the test stops the process before it returns
        return compiled
    _jit.machine_code = machine_code
    import isccd.hashing.warm
"""


@pytest.mark.slow
def test_a_process_stopped_while_compiling_leaves_nothing_behind(tmp_path: Path) -> None:
    env = _env(tmp_path / "cache")
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba")  # nothing cached: it compiles for seconds
    code = textwrap.dedent(_STOPPED_WHILE_COMPILING.format(parent=str(PACKAGE_PARENT)))
    warm = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=PACKAGE_PARENT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert warm.stdin is not None and warm.stdout is not None
    try:
        ready, _, _ = select.select([warm.stdout], [], [], 120)
        assert ready, "numba did not start compiling within 120 s"
        assert warm.stdout.readline() == "compiling\n"
        warm.send_signal(signal.SIGTERM)
    finally:
        warm.stdin.close()
        warm.wait(timeout=60)
        warm.stdout.close()
    assert warm.returncode == -signal.SIGTERM  # stopped, not through compiling and writing
    kernels_dir = tmp_path / "cache" / "kernels"
    left = list(kernels_dir.iterdir()) if kernels_dir.exists() else []
    assert left == []


#: An object with every entry point, one of which calls an external function.
_OBJECT = """
    import json, sys
    sys.path.insert(0, {parent!r})
    import llvmlite.binding as llvm
    from isccd.iscc._native import SIGNATURES, MachineCode, MachineCodeError, load_machine_code
    ir = ["declare void @{external}()"]
    for name in SIGNATURES:
        ir.append("define void @k_" + name + "() {{ call void @{external}() ret void }}")
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = llvm.parse_assembly("\\n".join(ir))
    target = llvm.Target.from_default_triple().create_target_machine(codemodel="jitdefault")
    code = MachineCode(target.emit_object(module), {{n: "k_" + n for n in SIGNATURES}})
    try:
        addresses = load_machine_code(code)
    except MachineCodeError as exc:
        print(json.dumps(["refused", str(exc)]))
    else:
        print(json.dumps(["loaded", all(addresses.values())]))
"""


@pytest.mark.parametrize(
    ("external", "outcome"),
    [
        ("isccd_test_no_such_function", ["refused", "the symbol isccd_test_no_such_function"]),
        ("numba_test_no_such_helper", ["loaded", True]),  # numba's error path: bound to abort
        ("memset", ["loaded", True]),  # the C library's
    ],
)
def test_symbols_are_checked_before_linking(external: str, outcome: list[object]) -> None:
    code = textwrap.dedent(_OBJECT.format(parent=str(PACKAGE_PARENT), external=external))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr  # LLVM ends the process on an unresolved symbol
    status, detail = json.loads(done.stdout)
    assert status == outcome[0]
    if status == "refused":
        assert str(outcome[1]) in str(detail)
    else:
        assert detail == outcome[1]


def test_an_object_without_every_entry_point_is_refused() -> None:
    with pytest.raises(MachineCodeError, match="entry points missing"):
        load_machine_code(MachineCode(b"\x7fELF", {"data_scan": "x"}))


@pytest.mark.slow
def test_a_scan_says_once_that_its_kernels_are_not_cached(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(40):
        (tree / f"{i}.bin").write_bytes(make_data("random", 3000, seed=i))
    (tmp_path / "file").write_text("not a directory")
    env = {**_env(tmp_path / "file" / "cache"), "PYTHONPATH": str(PACKAGE_PARENT)}
    state = str(tmp_path / "state")
    done = subprocess.run(
        [sys.executable, "-m", "isccd", "scan", "--state", state, "-j", "2", str(tree)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    told = [line for line in done.stderr.splitlines() if "kernels_not_cached" in line]
    assert len(told) == 1, done.stderr
    assert "not cached: cannot write" in told[0]
