"""A daemon running in the test's own event loop, with faults injected through its dependencies.

The daemon is the real one (store, worker processes, socket, watcher); what is injected is what
it is built from: a notifier that keeps every notification (and can be made to fail), a pipeline
whose entry points raise while a fault is armed, a clock that can fail. The test talks to the
daemon over its socket and stops it with SIGTERM, as systemd would.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import signal
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from isccd.client import AsyncClient
from isccd.config import build_config
from isccd.daemon.app import Daemon
from isccd.daemon.supervisor import Backoff
from isccd.match import Thresholds
from isccd.model import Event
from isccd.pipeline import Pipeline
from isccd.pipeline.index import Index
from isccd.pipeline.policy import Adopted
from isccd.pipeline.reconcile import ScanStats
from isccd.sdnotify import Notifier
from isccd.settings import load_settings

T = TypeVar("T")


@dataclass
class Faults:
    """Errors the pipeline's entry points raise while armed: ``name -> [error, times left]``."""

    armed: dict[str, list[Any]] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)

    def arm(self, name: str, error: BaseException, times: int = 1_000_000) -> None:
        """Make ``name`` raise ``error`` the next ``times`` calls."""
        self.armed[name] = [error, times]

    def disarm(self, name: str) -> None:
        self.armed.pop(name, None)

    def check(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1
        found = self.armed.get(name)
        if found is None:
            return
        found[1] -= 1
        if found[1] <= 0:
            del self.armed[name]
        raise found[0]


class FaultyPipeline(Pipeline):
    """The real pipeline, whose entry points raise what :class:`Faults` arms. ``"write"``
    fails every job on the store that logs an event (a change, the store's recovery), as a
    full disk does, while questions are still answered."""

    def __init__(self, *args: Any, faults: Faults, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.faults = faults

    def _submit(self, fn: Callable[[Index], T]) -> concurrent.futures.Future[T]:
        # Every job of the facade's methods is submitted here (a write fault hook).
        return super()._submit(self._writing(fn))

    def _writing(self, fn: Callable[[Index], T]) -> Callable[[Index], T]:
        def job(ix: Index) -> T:
            logged = len(ix.pending)
            result = fn(ix)
            if len(ix.pending) > logged:
                self.faults.check("write")  # undone: the owner runs each job in a savepoint
            return result

        return job

    async def purge(self) -> tuple[int, int]:
        self.faults.check("purge")
        return await super().purge()

    async def process_path(self, root: str, path: str) -> list[Event]:
        self.faults.check("process_path")
        return await super().process_path(root, path)

    async def reconcile(self, root: str, **kwargs: Any) -> ScanStats:
        self.faults.check("reconcile")
        return await super().reconcile(root, **kwargs)

    async def adopt(self, thresholds: Thresholds | None = None, chunk: int = 256) -> Adopted:
        self.faults.check("adopt")
        return await super().adopt(thresholds, chunk)


class Notices(Notifier):
    """systemd as the daemon sees it: every notification kept, and a watchdog interval.

    ``fail`` maps a method (``"watchdog"``, ``"status"``) to how many of its next calls raise.
    """

    def __init__(self, watchdog_usec: int | None = None) -> None:
        super().__init__({"WATCHDOG_USEC": str(watchdog_usec)} if watchdog_usec else {})
        self.sent: list[dict[str, str]] = []
        self.fail: dict[str, int] = {}
        self._changed = asyncio.Event()

    def notify(self, **fields: str | int) -> bool:
        self.sent.append({k.upper(): str(v) for k, v in fields.items()})
        self._changed.set()
        return True

    def _maybe_fail(self, method: str) -> None:
        if self.fail.get(method, 0) > 0:
            self.fail[method] -= 1
            self._changed.set()
            raise RuntimeError(f"injected failure of {method}")

    def watchdog(self) -> bool:
        self._maybe_fail("watchdog")
        return super().watchdog()

    def status(self, text: str) -> bool:
        self._maybe_fail("status")
        return super().status(text)

    def statuses(self) -> list[str]:
        return [n["STATUS"] for n in self.sent if "STATUS" in n]

    def count(self, key: str) -> int:
        return sum(1 for n in self.sent if key in n)

    async def wait_for(self, check: Callable[[], bool], timeout: float = 20) -> None:
        """Wait until ``check()`` holds, re-checked at every notification."""
        async with asyncio.timeout(timeout):
            while not check():
                self._changed.clear()
                await self._changed.wait()


class Clock:
    """Monotonic seconds that raise ``fail`` times when armed."""

    def __init__(self) -> None:
        self.fail = 0

    def __call__(self) -> float:
        if self.fail > 0:
            self.fail -= 1
            raise RuntimeError("injected failure of the clock")
        return asyncio.get_running_loop().time()


@dataclass
class Running:
    """A daemon started by :func:`running`."""

    daemon: Daemon
    root: Path
    socket: Path
    notices: Notices
    faults: Faults
    task: asyncio.Task[None]

    async def client(self) -> AsyncClient:
        return await AsyncClient.connect(self.socket)

    def stop(self) -> None:
        os.kill(os.getpid(), signal.SIGTERM)


@contextlib.asynccontextmanager
async def running(
    base: Path,
    *,
    notices: Notices | None = None,
    clock: Callable[[], float] | None = None,
    config: Path | None = None,
    backoff: Backoff | None = None,
    watch: dict[str, Any] | None = None,
    arm: Mapping[str, tuple[BaseException, int]] | None = None,
) -> AsyncIterator[Running]:
    """Start a daemon on ``base/root`` and wait for ``READY=1``; stop it (SIGTERM) at the end
    unless it already ended (its result is the task's).

    Args:
        base: Where its root, state, socket (and ``config``) live.
        notices: The notifier.
        clock: The feed's clock.
        config: A configuration file (re-read on SIGHUP).
        backoff: Pauses of restarts and store retries (short by default).
        watch: More ``[watch]`` settings.
        arm: Faults armed before it starts: ``name -> (error, times)``.
    """
    root = base / "root"
    root.mkdir(exist_ok=True)
    notices = notices or Notices()
    faults = Faults()
    for name, (error, times) in (arm or {}).items():
        faults.arm(name, error, times)
    overrides: dict[str, Any] = {
        "watch": {"roots": [root], "settle": 0.05, "poll_interval": 0.5, **(watch or {})},
        "store": {"state_dir": base / "state"},
        "server": {"socket": base / "isccd.sock"},
        "hashing": {"workers": 1},
    }
    env = {"CONFIGURATION_DIRECTORY": str(base)}
    settings = load_settings(config, overrides=overrides, env=env)
    daemon = Daemon(
        build_config(settings, env),
        config_path=config,
        overrides=overrides,
        env=env,
        notifier=notices,
        make_pipeline=lambda *a, **k: FaultyPipeline(*a, faults=faults, **k),
        clock=clock or Clock(),
        backoff=backoff or Backoff(initial=0.2, maximum=0.4, attempts=3),
    )
    task = asyncio.create_task(daemon.run())
    ready = asyncio.create_task(notices.wait_for(lambda: notices.count("READY") > 0, 60))
    await asyncio.wait([task, ready], return_when=asyncio.FIRST_COMPLETED)
    if not ready.done():
        ready.cancel()
        await task  # raises why it did not start
    await ready
    run = Running(daemon, root, base / "isccd.sock", notices, faults, task)
    try:
        yield run
    finally:
        if not task.done():
            run.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(task), 30)
