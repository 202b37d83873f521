"""The watchdog heartbeat: withheld while work is stuck or the health check hangs, sent while
the daemon is idle or moving."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from pathlib import Path

from isccd.daemon.heartbeat import Progress, run_heartbeat
from isccd.daemon.signals import handle_signals
from isccd.sdnotify import Notifier


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_is_stalled_only_when_work_waits_without_finishing() -> None:
    clock = FakeClock()
    progress = Progress(limit=60, clock=clock)
    clock.now += 1000
    assert progress.stalled(pending=0) is None  # idle for long is fine
    clock.now += 59
    assert progress.stalled(pending=5) is None
    clock.now += 2
    assert progress.stalled(pending=5) == 61
    progress.advanced()
    assert progress.stalled(pending=5) is None
    clock.now += 30
    assert progress.stalled(pending=5) is None


def test_beats_are_sent_while_healthy_and_withheld_otherwise(tmp_path: Path) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(tmp_path / "notify"))
    listener.setblocking(False)
    notifier = Notifier({"NOTIFY_SOCKET": str(tmp_path / "notify")})
    answers = iter([None, "work is stuck", "hang", None])

    async def probe() -> str | None:
        answer = next(answers, None)
        if answer == "hang":
            await asyncio.Event().wait()
        return answer

    async def main() -> list[bytes]:
        task = asyncio.create_task(run_heartbeat(notifier, 0.02, probe))
        received: list[bytes] = []
        loop = asyncio.get_running_loop()
        while len(received) < 2:
            received.append(await loop.sock_recv(listener, 100))
        task.cancel()
        return received

    try:
        received = asyncio.run(asyncio.wait_for(main(), 10))
    finally:
        listener.close()
        notifier.close()
    # Four probes, two healthy: the beats in between were withheld.
    assert received == [b"WATCHDOG=1", b"WATCHDOG=1"]


def test_signals_reach_the_loop_and_the_old_handlers_come_back() -> None:
    before = signal.getsignal(signal.SIGHUP)

    async def main() -> list[str]:
        seen: list[str] = []
        done = asyncio.Event()
        loop = asyncio.get_running_loop()

        def stop(name: str) -> None:
            seen.append(name)
            done.set()

        with handle_signals(loop, stop, lambda: seen.append("reload")):
            os.kill(os.getpid(), signal.SIGHUP)
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.wait_for(done.wait(), 5)
        return seen

    assert asyncio.run(main()) == ["reload", "SIGTERM"]
    assert signal.getsignal(signal.SIGHUP) == before
