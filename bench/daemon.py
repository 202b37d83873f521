"""The daemon's figures, measured on a real ``isccd run`` process.

1. **Latency** from a file's close to its ``dup.exact`` event at a subscriber: small files copied
   one at a time next to their original; median and p99. The settle time (quiet period before a
   file is hashed, 250 ms by default) is part of it by design and reported apart. Anchors, in
   this process: ``compute_record`` of the same file, and raw BLAKE3 of its bytes.
2. **Events per second to 10 subscribers**: ten subscriber processes; (a) live, while files are
   created as fast as the disk takes them (bounded by how fast the daemon indexes them);
   (b) replaying the log from the start, all ten at once (what the server and broker sustain,
   the anchor of (a)).
3. **Idle memory with 100,000 indexed files**: a real tree of 100,000 files whose records are
   already stored (so the startup reconcile is stat-only), after the reconcile, at rest: every
   process of the daemon's tree (main, workers, fork server, resource tracker), its RSS and PSS
   (``/proc/PID/smaps_rollup``), which compiled kernels it holds, and the PSS summed; the
   conditions (files, workers, idle timeout, versions) are printed with it. With a
   ``[hashing] idle_timeout`` (``ISCCD_HASHING__IDLE_TIMEOUT``; default 60 s) it is measured
   once the quiet period has passed and the workers and fork server are let go. Anchor: an
   interpreter that imported the daemon.
4. **Restart to READY with 1,000,000 indexed files** (synthetic records): process start to
   ``READY=1``. Anchor: opening the pipeline alone (store check and index load) in a fresh
   process, and the interpreter start with the daemon's imports.

    python bench/daemon.py [--quick] [--only latency,fanout,idle,restart]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata as md
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import blake3

from isccd.client import AsyncClient
from isccd.hashing import compute_record
from isccd.model import EventType
from isccd.store import SqliteStore, open_store, state_url

sys.path.insert(0, str(Path(__file__).parent))
from index import make_tree, stat_record, synthetic_record

PY = sys.executable


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Daemon:
    """``isccd run`` in a short temporary directory, ready when it says ``READY=1``."""

    def __init__(self, base: Path, root: Path, state: Path, **env: str) -> None:
        self.base, self.root, self.state = base, root, state
        self.socket = base / "isccd.sock"
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        """Start; return seconds from exec to READY=1."""
        notify_path = self.base / "notify"
        notify_path.unlink(missing_ok=True)
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(str(notify_path))
        notify.settimeout(600)
        env = {
            **os.environ,
            "NOTIFY_SOCKET": str(notify_path),
            "ISCCD_LOG__LEVEL": "warning",
            "CONFIGURATION_DIRECTORY": str(self.base),
            **self.env,
        }
        command = [
            PY,
            "-m",
            "isccd",
            "run",
            "--watch",
            str(self.root),
            "--state",
            str(self.state),
            "--socket",
            str(self.socket),
        ]
        started = time.perf_counter()
        self.proc = subprocess.Popen(command, env=env, stderr=(self.base / "log").open("ab"))
        try:
            while b"READY=1" not in notify.recv(4096):
                pass
        finally:
            notify.close()
        return time.perf_counter() - started

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def memory_mib(pid: int) -> tuple[float, float]:
    """(RSS, PSS) of a process in MiB."""
    rss = pss = 0.0
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Rss:"):
            rss = int(line.split()[1]) / 1024
        elif line.startswith("Pss:"):
            pss = int(line.split()[1]) / 1024
    return rss, pss


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (workers, fork server, resource tracker), parents first."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        below = sorted(children.get(todo.pop(0), []))
        found += below
        todo += below
    return found


def _role(pid: int) -> str:
    """What a process of the daemon's tree is; a worker is forked by the fork server and
    shows its command line."""

    def cmdline(of: int) -> str:
        return (
            Path(f"/proc/{of}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )

    parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    if "forkserver" in cmdline(parent):
        return "worker"
    for word, role in (("forkserver", "fork server"), ("resource_tracker", "resource tracker")):
        if word in cmdline(pid):
            return role
    return "main process"


def _mapped(pid: int, library: str) -> bool:
    """Whether the process has ``library`` (a part of a file's path) mapped."""
    try:
        return library in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def _kernels(pid: int) -> str:
    """What of the compiled kernels a process holds: numba (its modules mapped), the kernels'
    machine code linked by llvmlite alone, or neither."""
    if _mapped(pid, "/numba/"):
        return "numba loaded"
    return "kernels (llvmlite)" if _mapped(pid, "llvmlite") else "no kernels"


def _versions() -> str:
    names = ("isccd", "numba", "llvmlite", "numpy", "pillow")
    found = ", ".join(f"{n} {md.version(n)}" for n in names)
    return f"Python {sys.version.split()[0]}, {found}"


# -- 1. latency ----------------------------------------------------------------------------------


def bench_latency(count: int) -> None:
    print(f"\n1. close-to-dup.exact latency, {count} small files copied one at a time")
    base = Path(tempfile.mkdtemp(prefix="isccd-b-", dir="/tmp"))
    try:
        root = base / "root"
        root.mkdir()
        original = root / "original.txt"
        original.write_text(
            "a small file, about a hundred bytes of text, copied again and again "
            "to measure the latency"
        )
        daemon = Daemon(base, root, base / "state", ISCCD_HASHING__WORKERS="1")
        daemon.start()

        async def run() -> list[float]:
            control = await AsyncClient.connect(daemon.socket)
            listener = await AsyncClient.connect(daemon.socket)
            await control.sync()
            await listener.subscribe(types=[EventType.DUP_EXACT])
            latencies = []
            events = listener.events()
            for i in range(count):
                copy = root / f"copy-{i:04d}.txt"
                shutil.copyfile(original, copy)
                closed = time.perf_counter()
                while (await anext(events)).path != str(copy):
                    pass
                latencies.append(time.perf_counter() - closed)
            await control.close()
            await listener.close()
            return latencies

        latencies = asyncio.run(run())
        daemon.stop()
        compute = statistics.median(_timed(lambda: compute_record(str(original)), 30))
        data = original.read_bytes()
        raw = statistics.median(_timed(lambda: blake3.blake3(data).digest(), 30))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    settle = 0.25
    median, p99 = statistics.median(latencies), pct(latencies, 0.99)
    print(f"   latency median {median * 1000:8.1f} ms   p99 {p99 * 1000:8.1f} ms")
    print(f"   of which settle time (quiet period, by design) {settle * 1000:.0f} ms")
    print(
        f"   beyond settle: median {(median - settle) * 1000:6.1f} ms   p99 "
        f"{(p99 - settle) * 1000:6.1f} ms"
    )
    print(
        f"   anchors: compute_record in-process {compute * 1000:.2f} ms, "
        f"BLAKE3 of the bytes {raw * 1e6:.1f} us"
    )
    print(f"   ratio (latency beyond settle) / compute_record: {(median - settle) / compute:.1f}")


def _timed(fn: object, rounds: int) -> list[float]:
    assert callable(fn)
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


# -- 2. fan-out ----------------------------------------------------------------------------------

_SUBSCRIBER = """
import json, socket, sys, time
# A minimal subscriber: it counts event lines without decoding them, so that what is measured is
# the daemon's delivery, not this reader.
path, since, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(path)
request = {"id": 1, "cmd": "subscribe"}
if since != "live":
    request["since"] = int(since)
sock.sendall(json.dumps(request).encode() + b"\\n")
buffer = b""
while b"\\n" not in buffer:
    buffer += sock.recv(65536)
reply, buffer = buffer.split(b"\\n", 1)
assert json.loads(reply)["ok"], reply
print("subscribed", flush=True)
seen = buffer.count(b"\\n")
first = time.time() if seen else None
last = first
while seen < want:
    chunk = sock.recv(1 << 20)
    if not chunk:
        break
    now = time.time()
    first = first or now
    last = now
    seen += chunk.count(b"\\n")
print(json.dumps({"first": first, "last": last, "seen": seen}), flush=True)
"""


def _subscribers(sock: Path, since: str, want: int, n: int) -> list[subprocess.Popen[str]]:
    command = [PY, "-c", _SUBSCRIBER, str(sock), since, str(want)]
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(n)]
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "subscribed"
    return procs


def _results(procs: list[subprocess.Popen[str]]) -> list[dict[str, float]]:
    out = []
    for proc in procs:
        stdout, _ = proc.communicate(timeout=600)
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def bench_fanout(files: int, subscribers: int) -> None:
    print(f"\n2. events to {subscribers} subscribers ({files:,} files created)")
    base = Path(tempfile.mkdtemp(prefix="isccd-b-", dir="/tmp"))
    try:
        root = base / "root"
        root.mkdir()
        daemon = Daemon(base, root, base / "state", ISCCD_HASHING__WORKERS="2")
        daemon.start()
        procs = _subscribers(daemon.socket, "live", files, subscribers)
        for i in range(files):
            (root / f"f{i:06d}.txt").write_text(f"file {i} of the fan-out benchmark\n")
        live = _results(procs)
        rates = [r["seen"] / max(r["last"] - r["first"], 1e-9) for r in live]
        spread = max(r["last"] for r in live) - min(r["last"] for r in live)
        print(
            f"   live: {statistics.median(rates):,.0f} events/s per subscriber "
            f"(median of {subscribers}), {sum(rates):,.0f} events/s delivered in all; last "
            f"event reached all subscribers within {spread * 1000:.0f} ms"
        )

        async def last_seq() -> int:
            client = await AsyncClient.connect(daemon.socket)
            seq = await client.sync()
            await client.close()
            return seq

        total = asyncio.run(last_seq())
        procs = _subscribers(daemon.socket, "0", total, subscribers)
        replay = _results(procs)
        elapsed = max(r["last"] for r in replay) - min(r["first"] for r in replay)
        per = [r["seen"] / max(r["last"] - r["first"], 1e-9) for r in replay]
        print(
            f"   replay of {total:,} logged events, {subscribers} at once: "
            f"{statistics.median(per):,.0f} events/s per subscriber, "
            f"{subscribers * total / elapsed:,.0f} events/s in all"
        )
        print(
            f"   anchor: the live rate is bounded by indexing ({files:,} files, one "
            "file.added each); the replay shows what delivery alone sustains"
        )
        daemon.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- 3. idle RSS ---------------------------------------------------------------------------------


def bench_idle(files: int) -> None:
    print(f"\n3. idle memory with {files:,} indexed files")
    base = Path(tempfile.mkdtemp(prefix="isccd-b-", dir="/tmp"))
    try:
        root = base / "root"
        make_tree(root, files)
        url = state_url(base / "state")
        store = open_store(url)
        store.begin()
        for directory, _, names in os.walk(root):
            for name in names:
                path = os.path.join(directory, name)  # noqa: PTH118 -- fast path building
                store.add_file(str(root), stat_record(path, os.lstat(path)), time.time())
        store.commit()
        store.close()
        daemon = Daemon(base, root, base / "state", ISCCD_HASHING__WORKERS="2")
        daemon.start()

        async def settled() -> tuple[int, int, float]:
            client = await AsyncClient.connect(daemon.socket)
            await client.sync()
            status = await client.status()
            # Past the quiet period ([hashing] idle_timeout), if the workers are let go.
            while status.hashing is not None and status.hashing.idle_timeout:
                if status.hashing.state == "idle":
                    break
                await asyncio.sleep(0.2)
                status = await client.status()
            await client.close()
            quiet = status.hashing.idle_timeout if status.hashing is not None else 0.0
            return status.files_indexed, status.queue_depth, quiet

        indexed, depth, quiet = asyncio.run(settled())
        time.sleep(2)  # at rest: nothing to do
        assert daemon.proc is not None
        print(f"   conditions: {indexed:,} files indexed, queue {depth}, [hashing] workers = 2,")
        print(f"   idle_timeout = {quiet:g} s (0: workers kept), measured after it;")
        print(f"   {_versions()}")
        total = 0.0
        for pid in [daemon.proc.pid, *descendants(daemon.proc.pid)]:
            rss, pss = memory_mib(pid)
            total += pss
            print(f"   {_role(pid):<18} RSS {rss:6.0f} MiB  PSS {pss:6.0f} MiB  {_kernels(pid)}")
        print(f"   total PSS of the daemon's process tree {total:.0f} MiB")
        daemon.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    probe = "import isccd.daemon.run, pathlib; print(pathlib.Path('/proc/self/statm').read_text())"
    out = subprocess.run([PY, "-c", probe], capture_output=True, text=True, check=True).stdout
    pages = int(out.split()[1])
    rss = pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    print(f"   anchor: interpreter with the daemon imported, RSS {rss:.0f} MiB")


# -- 4. restart ----------------------------------------------------------------------------------


def bench_restart(files: int, rounds: int) -> None:
    print(f"\n4. restart to READY with {files:,} indexed files (synthetic)")
    base = Path(tempfile.mkdtemp(prefix="isccd-b-", dir="/tmp"))
    try:
        url = state_url(base / "state")
        store = open_store(url)
        assert isinstance(store, SqliteStore)
        rng = random.Random(9)
        for first in range(0, files, 20_000):
            store.begin()
            for i in range(first, min(first + 20_000, files)):
                store.add_file("/srv/archive", synthetic_record(i, rng), 1.7e9)
            store.commit()
        store.close()
        root = base / "root"
        root.mkdir()
        times = []
        for _ in range(rounds):
            daemon = Daemon(base, root, base / "state", ISCCD_HASHING__WORKERS="1")
            times.append(daemon.start())
            daemon.stop()
        opened = []
        for _ in range(rounds):
            out = subprocess.run([PY, "-c", _OPEN, url], capture_output=True, text=True, check=True)
            opened.append(float(out.stdout))
        command = [PY, "-c", "import isccd.daemon.run"]
        imports = statistics.median(_timed(lambda: subprocess.run(command, check=True), rounds))
        print(
            f"   exec to READY=1: median {statistics.median(times):.2f} s "
            f"(rounds: {', '.join(f'{t:.2f}' for t in times)})"
        )
        print(
            f"   anchors: pipeline open (check + index load) {statistics.median(opened):.2f} s; "
            f"interpreter start with the daemon's imports {imports:.2f} s"
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


_OPEN = """
import sys, time
from isccd.pipeline import Pipeline
start = time.perf_counter()
pipeline = Pipeline(sys.argv[1])
pipeline.open()
print(time.perf_counter() - start)
pipeline.close()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of every size")
    parser.add_argument("--only", default="latency,fanout,idle,restart")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    only = set(args.only.split(","))
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    if "latency" in only:
        bench_latency(200 // scale)
    if "fanout" in only:
        bench_fanout(5_000 // scale, 10)
    if "idle" in only:
        bench_idle(100_000 // scale)
    if "restart" in only:
        bench_restart(1_000_000 // scale, 3)


if __name__ == "__main__":
    main()
