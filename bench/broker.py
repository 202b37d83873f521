"""Event delivery of the socket server: throughput to 10 subscribers and publish-to-receive latency.

The server runs in this process; the subscribers are real socket clients in a second process
(one event loop, one connection each), so both ends pay for real Unix-socket I/O. Two servers are
measured in the same run:

- ``isccd``: :class:`isccd.server.Server` with its :class:`~isccd.server.Broker` (encode once,
  filter, bounded per-subscriber queues, one writer task per connection, flow control);
- ``raw``: anchor, a bare asyncio server that encodes each event and writes the line straight
  to every connection's transport (a naive broadcast);
- ``raw batched``: anchor, the same with the lines of one loop turn joined and written once per
  connection: about the ceiling for a Python server that encodes every event.

Phases, each repeated for ``--rounds`` rounds (medians reported):

- burst: ``--events`` events published as fast as the subscribers take them (the publisher
  waits while any subscriber has more than a few thousand events pending, so nobody lags);
  events/s is events published over the time until the last subscriber received the last one;
- paced: ``--rate`` events/s for ``--seconds`` seconds; latency is the time from the call to
  ``publish`` to the subscriber reading the line (CLOCK_MONOTONIC is shared by processes).

    python bench/broker.py [--events N] [--rate R] [--seconds S] [--rounds N] [--subscribers N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import structlog

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' fake daemon

from isccd.model import Event, EventType  # noqa: E402
from isccd.protocol import encode_event  # noqa: E402
from isccd.server import Broker, Server, ServerOptions  # noqa: E402
from tests.server.fakes import FakeBackend  # noqa: E402

#: A subscriber this far behind makes the burst publisher wait (well under the queue size).
HIGH_WATER = 4_000
ISCC = "ISCC:KACYPXW445FTYNJ3CYSXHAFJMA2HUWULUNRFE3BLHRSCXYH2M5AEGQY"


def make_event(seq: int) -> Event:
    """A typical ``file.added``; ``t`` (publish time, ns) comes last so clients find it cheaply."""
    return Event(
        seq,
        EventType.FILE_ADDED,
        time.time(),
        "/srv/media",
        f"/srv/media/photos/2024/IMG_{seq:08d}.jpg",
        {"iscc": ISCC, "size": 2_483_117, "mediatype": "image/jpeg", "t": time.monotonic_ns()},
    )


# -- the two servers --------------------------------------------------------------------------


class IsccdTarget:
    """isccd's server and broker."""

    name = "isccd"

    def __init__(self, directory: Path, queue_size: int) -> None:
        self.backend = FakeBackend(["/srv/media"])
        self.broker = Broker(queue_size=queue_size)
        self.path = directory / "isccd.sock"
        self.server = Server(self.backend, self.broker, ServerOptions(self.path))
        self.seq = 0

    async def start(self) -> None:
        await self.server.start()

    async def close(self) -> None:
        await self.server.close()

    def publish(self) -> None:
        self.seq += 1
        self.broker.publish(make_event(self.seq))

    def backlog(self) -> int:
        return self.broker.statistics().max_queued


class RawTarget:
    """Anchor: each encoded line written straight to every connection (a naive broadcast)."""

    name = "raw"

    def __init__(self, directory: Path, queue_size: int) -> None:
        self.path = directory / "raw.sock"
        self.transports: list[asyncio.WriteTransport] = []
        self.server: asyncio.Server | None = None
        self.seq = 0
        self.line_bytes = 1

    async def start(self) -> None:
        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readline()  # the subscribe line
            writer.write(b'{"id":1,"ok":true,"result":{}}\n')
            transport = writer.transport
            assert isinstance(transport, asyncio.WriteTransport)
            self.transports.append(transport)

        self.server = await asyncio.start_unix_server(accept, self.path)

    async def close(self) -> None:
        for transport in self.transports:
            transport.close()
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    def publish(self) -> None:
        self.seq += 1
        line = encode_event(make_event(self.seq))
        self.line_bytes = len(line)
        self.write(line)

    def write(self, data: bytes) -> None:
        for transport in self.transports:
            transport.write(data)

    def backlog(self) -> int:
        buffered = max((t.get_write_buffer_size() for t in self.transports), default=0)
        return buffered // max(self.line_bytes, 1)


class BatchedRawTarget(RawTarget):
    """Anchor: the lines of one loop turn joined and written once per connection (the ceiling
    for a Python server that encodes each event)."""

    name = "raw batched"

    def __init__(self, directory: Path, queue_size: int) -> None:
        super().__init__(directory, queue_size)
        self.pending: list[bytes] = []

    def publish(self) -> None:
        self.seq += 1
        line = encode_event(make_event(self.seq))
        self.line_bytes = len(line)
        if not self.pending:
            asyncio.get_running_loop().call_soon(self.flush)
        self.pending.append(line)

    def flush(self) -> None:
        data = b"".join(self.pending)
        self.pending.clear()
        self.write(data)

    def backlog(self) -> int:
        return super().backlog() + len(self.pending)


Target = IsccdTarget | RawTarget


# -- the publisher ----------------------------------------------------------------------------


async def burst(target: Target, events: int) -> int:
    """Publish ``events`` as fast as the subscribers take them; return the start time (ns)."""
    start = time.monotonic_ns()
    published = 0
    while published < events:
        for _ in range(min(256, events - published)):
            target.publish()
            published += 1
        await asyncio.sleep(0)
        while target.backlog() > HIGH_WATER:
            await asyncio.sleep(0)
    return start


async def paced(target: Target, rate: float, seconds: float) -> None:
    """Publish ``rate`` events per second for ``seconds``."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    count = int(rate * seconds)
    for i in range(count):
        delay = start + i / rate - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        target.publish()


async def measure(
    make: Callable[[Path, int], Target], args: argparse.Namespace
) -> dict[str, float]:
    """One round against one server: burst then paced."""
    with tempfile.TemporaryDirectory(prefix="isccd-bench-", dir="/tmp") as directory:
        target = make(Path(directory), args.events + 10_000)
        await target.start()
        client = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--client",
            str(target.path),
            "--subscribers",
            str(args.subscribers),
            "--events",
            str(args.events),
            "--paced-events",
            str(int(args.rate * args.seconds)),
            stdout=asyncio.subprocess.PIPE,
        )
        assert client.stdout is not None
        try:
            assert (await client.stdout.readline()).strip() == b"ready"
            start = await burst(target, args.events)
            burst_done = json.loads(await client.stdout.readline())
            await paced(target, args.rate, args.seconds)
            latency = json.loads(await client.stdout.readline())
            await client.wait()
        finally:
            if client.returncode is None:
                client.kill()
                await client.wait()
            await target.close()
    seconds = (burst_done["last_ns"] - start) / 1e9
    return {
        "events_per_s": args.events / seconds,
        "median_ms": latency["median_ns"] / 1e6,
        "p99_ms": latency["p99_ns"] / 1e6,
    }


# -- the subscribers (the second process) -----------------------------------------------------


class Subscribers:
    """What the subscriber tasks of the client process share."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.ready = 0
        self.all_ready = asyncio.Event()
        self.burst_ends: list[int] = []

    def connected(self) -> None:
        self.ready += 1
        if self.ready == self.count:
            print("ready", flush=True)

    def burst_done(self, last_ns: int) -> None:
        self.burst_ends.append(last_ns)
        if len(self.burst_ends) == self.count:
            print(json.dumps({"last_ns": max(self.burst_ends)}), flush=True)


async def subscriber(
    shared: Subscribers, path: str, burst_events: int, paced_events: int
) -> list[int]:
    """Read the burst (counting lines only), then the paced events (timing each)."""
    reader, writer = await asyncio.open_unix_connection(path, limit=1 << 20)
    writer.write(b'{"id": 1, "cmd": "subscribe"}\n')
    await reader.readline()
    shared.connected()
    seen = 0
    while seen < burst_events:
        chunk = await reader.read(1 << 18)
        if not chunk:
            raise SystemExit("the server closed the connection during the burst")
        seen += chunk.count(b"\n")
    # The paced phase starts only after every subscriber reported: nothing else was read.
    shared.burst_done(time.monotonic_ns())
    latencies = []
    for _ in range(paced_events):
        line = await reader.readline()
        now = time.monotonic_ns()
        latencies.append(now - int(line[line.rindex(b":") + 1 : line.rindex(b"}")]))
    writer.close()
    return latencies


async def client_main(args: argparse.Namespace) -> None:
    shared = Subscribers(args.subscribers)
    results = await asyncio.gather(
        *(
            subscriber(shared, args.client, args.events, args.paced_events)
            for _ in range(args.subscribers)
        )
    )
    latencies = sorted(x for r in results for x in r)
    print(
        json.dumps(
            {
                "median_ns": statistics.median(latencies),
                "p99_ns": latencies[int(len(latencies) * 0.99)],
            }
        ),
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000, help="events in the burst")
    parser.add_argument("--rate", type=float, default=2_000, help="paced events per second")
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of the paced phase")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--subscribers", type=int, default=10)
    parser.add_argument("--client", help=argparse.SUPPRESS)
    parser.add_argument("--paced-events", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        asyncio.run(client_main(args))
        return

    # The server's own log lines would only slow it down here.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    targets: tuple[type[Target], ...] = (IsccdTarget, RawTarget, BatchedRawTarget)
    rounds: dict[str, list[dict[str, float]]] = {t.name: [] for t in targets}
    for _ in range(args.rounds):
        for make in targets:
            rounds[make.name].append(asyncio.run(measure(make, args)))
    med = {
        name: {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        for name, runs in rounds.items()
    }
    size = len(encode_event(make_event(1)))
    print(
        f"broker: {args.subscribers} subscribers, {size}-byte events, burst of {args.events:,}, "
        f"paced {args.rate:,.0f}/s for {args.seconds:g} s; medians of {args.rounds} rounds"
    )
    print(f"{'':<14}{'events/s':>12}{'lines/s':>14}{'latency p50':>14}{'p99':>10}")
    for name, figures in med.items():
        print(
            f"{name:<14}{figures['events_per_s']:>12,.0f}"
            f"{figures['events_per_s'] * args.subscribers:>14,.0f}"
            f"{figures['median_ms']:>11.3f} ms{figures['p99_ms']:>7.3f} ms"
        )
    isccd = med["isccd"]
    for anchor in ("raw", "raw batched"):
        other = med[anchor]
        print(
            f"isccd / {anchor}: throughput {isccd['events_per_s'] / other['events_per_s']:.2f}, "
            f"latency p50 {isccd['median_ms'] / other['median_ms']:.2f}, "
            f"p99 {isccd['p99_ms'] / other['p99_ms']:.2f}"
        )


if __name__ == "__main__":
    main()
