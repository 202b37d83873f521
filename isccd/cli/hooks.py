"""``isccd subscribe --exec CMD``: a command run for each event the subscription matches, in the
subscriber's own process, as its user. The daemon only sends events; it never runs a command.

Order and bound: at most ``--jobs`` commands run at once (default 1: one after another, in the
order of the events). Reading waits while that many run (at most 8 MiB of events are read
ahead); a subscriber that falls so far behind that the daemon lags it (``subscriber.lagged``)
subscribes again after the notice's ``seq``, by itself, and catches up from the log.

Failures (a non-zero exit status, a signal, the timeout, a command that cannot be started) are
reported on stderr with the event's ``seq``, and then, by ``--on-failure``:

- ``stop`` (the default): no more commands are started, those running are waited for, and the
  subscriber exits with status 75; the event was not handled, so the cursor stays before it and
  the next start runs it again first;
- ``skip``: the event counts as handled and the next ones are run;
- ``retry``: it is run again after 1 s, then after pauses doubling up to a minute, until it
  succeeds or the subscriber is stopped; the events after it wait (with ``--jobs`` above 1 the
  others keep running, but the cursor does not pass it).

Resuming (``--cursor FILE``, :mod:`isccd.cli.cursor`): an event is handled once its command
succeeded (or was skipped), and only then recorded as such. Before a command starts, its event is
recorded as started. After a restart, an event handled is never run again, and none is missed;
an event started but not recorded as handled (the subscriber was killed, crashed or lost power
while or just after its command ran) is run again, with ``ISCCD_HOOK_REDELIVERED=1``. Delivery is
thus at least once, and exactly once for every command that checks, when told it may have run
before, whether it did (by ``ISCCD_HOOK_STORE`` and ``ISCCD_EVENT_SEQ``); no run is repeated
without saying so.

SIGINT and SIGTERM stop reading; the commands running finish (within their timeout), their
outcomes are recorded, and the subscriber exits with status 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import enum
import os
import shlex
import shutil
import signal
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from isccd.cli import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from isccd.cli.connect import fail, find_daemon
from isccd.cli.cursor import Cursor, holding, read_cursor, write_cursor
from isccd.cli.escape import shown
from isccd.cli.hookrun import Outcome, command_environment, run_command
from isccd.errors import ConfigError, CursorError, DaemonUnavailableError, ProtocolError
from isccd.model import Event, EventType

if TYPE_CHECKING:
    from isccd.client import AsyncClient
    from isccd.protocol import SubscribeResult

#: A command failed under ``--on-failure stop`` (EX_TEMPFAIL: a service manager may try again).
EXIT_COMMAND_FAILED = 75
#: The cursor cannot be used: corrupt, not a cursor, another store's log (EX_DATAERR: it needs
#: someone to look; never retried by the unit).
EXIT_CURSOR = 65
#: The cursor cannot be written (EX_IOERR: a full disk).
EXIT_CURSOR_WRITE = 74

#: The longest event line taken (a ``watch.degraded`` of 100 paths of 4,096 bytes, each byte
#: escaped, is 2.4 MB); twice as much is read ahead while the commands run, no more: a
#: subscriber whose commands fall further behind is lagged by the daemon and resumes from
#: its log.
EVENT_LINE_BYTES = 4 << 20

#: Notices that are not part of the event log: run when they arrive, never replayed, and they
#: do not move the cursor (their ``seq`` is an earlier event's).
_NOTICES = frozenset({EventType.STORE_DEGRADED})


class OnFailure(enum.StrEnum):
    """What a failed command means for the subscriber (``--on-failure``)."""

    STOP = "stop"
    """Stop before the event, which the next start runs again."""
    SKIP = "skip"
    """Count the event as handled and go on."""
    RETRY = "retry"
    """Run it again after a pause, until it succeeds."""


@dataclasses.dataclass(frozen=True, slots=True)
class HookOptions:
    """How the commands are run."""

    argv: tuple[str, ...]
    timeout: float | None = 60.0
    jobs: int = 1
    on_failure: OnFailure = OnFailure.STOP
    kill_grace: float = 5.0
    retry_first: float = 1.0
    retry_most: float = 60.0


@dataclasses.dataclass(frozen=True, slots=True)
class Subscription:
    """What is subscribed to: the filters, and where a new cursor starts."""

    since: int | None
    store: str | None
    types: list[str] | None
    roots: list[str] | None
    fleet: bool


def run(args: argparse.Namespace, roots: list[str] | None) -> int:
    """``isccd subscribe --exec CMD``."""
    try:
        argv = tuple(shlex.split(args.exec))
    except ValueError as exc:
        return _usage(f"--exec: {exc}")
    if not argv:
        return _usage("--exec: no command given")
    if (problem := _not_runnable(argv[0])) is not None:
        return _usage(f"--exec: {problem}")
    options = HookOptions(argv, args.timeout or None, args.jobs, OnFailure(args.on_failure))
    subscription = Subscription(args.since, args.store, args.types, roots, args.fleet)
    try:
        daemon = find_daemon(args)
    except ConfigError as exc:
        return fail(exc)

    async def connect() -> AsyncClient:
        from isccd.client import AsyncClient  # noqa: PLC0415 -- the parser does without it

        try:
            return await AsyncClient.connect(daemon.socket, limit=EVENT_LINE_BYTES)
        except DaemonUnavailableError as exc:
            raise daemon.unavailable(exc) from None

    cursor_path: Path | None = args.cursor
    try:
        with contextlib.ExitStack() as stack:
            cursor, lock = None, None
            if cursor_path is not None:
                lock = stack.enter_context(holding(cursor_path, _say))
                cursor = read_cursor(cursor_path)
            runner = HookRunner(
                options, subscription, connect, cursor_path=cursor_path, cursor=cursor, lock=lock
            )
            return asyncio.run(runner.run())
    except CursorError as exc:
        print(f"isccd: {exc}; nothing was run", file=sys.stderr)
        return EXIT_CURSOR


def _usage(message: str) -> int:
    print(f"isccd subscribe: {message}", file=sys.stderr)
    return EXIT_USAGE


def _say(message: str) -> None:
    print(f"isccd: {message}", file=sys.stderr, flush=True)


def _not_runnable(program: str) -> str | None:
    """Why ``program`` cannot be run (checked once at start; later failures are reported per
    event)."""
    if "/" in program:
        if not Path(program).is_file() or not os.access(program, os.X_OK):
            return f"{shown(program)} is not an executable file"
        return None
    if shutil.which(program) is None:
        return f"{shown(program)} is not found on PATH"
    return None


@dataclasses.dataclass(slots=True, eq=False)
class _Item:
    """An event taken from the subscription, until it and every one before it are handled."""

    event: Event
    logged: bool
    handled: bool = False


class HookRunner:
    """Runs the commands of one subscription, keeps the cursor, and decides the exit status.

    Args:
        options: How the commands are run.
        subscription: The filters, and where to start without a cursor.
        connect: A new connection to the daemon.
        cursor_path: The cursor file (held by the caller), or ``None``.
        cursor: What it holds (``None``: there is none yet).
        lock: The descriptor of the cursor's lock, which every command inherits.
    """

    def __init__(
        self,
        options: HookOptions,
        subscription: Subscription,
        connect: Callable[[], Coroutine[Any, Any, AsyncClient]],
        *,
        cursor_path: Path | None,
        cursor: Cursor | None,
        lock: int | None = None,
    ) -> None:
        self._options = options
        self._keep_fds = () if lock is None else (lock,)
        self._subscription = subscription
        self._connect = connect
        self._cursor_path = cursor_path
        self._resumed = cursor is not None
        self._store = cursor.store if cursor else subscription.store
        self._seq: int | None = cursor.seq if cursor else subscription.since
        #: Events after the cursor's seq: handled already, and started and not known handled.
        self._done: set[int] = set(cursor.done) if cursor else set()
        self._started: set[int] = set(cursor.started) if cursor else set()
        self._window: list[_Item] = []
        self._running: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(options.jobs)
        self._stop = asyncio.Event()
        self._status = EXIT_OK
        self._env = dict(os.environ)

    async def run(self) -> int:
        """Subscribe and run the commands until stopped; the exit status."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._stop.set)
        try:
            reader = asyncio.create_task(self._read())
            stopped = asyncio.create_task(self._stop.wait())
            await asyncio.wait({reader, stopped}, return_when=asyncio.FIRST_COMPLETED)
            for task in (reader, stopped):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            if self._running:
                await asyncio.wait(self._running)
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
        if self._seq is not None:
            store = f" store {self._store}" if self._store else ""
            print(f"isccd: last seq {self._seq}{store}", file=sys.stderr)
        return self._status

    # -- the subscription ----------------------------------------------------------------------

    async def _read(self) -> None:
        client: AsyncClient | None = None
        try:
            since = self._seq
            while (client := await self._subscribe(since)) is not None:
                lagged = await self._take_events(client)
                await client.close()
                if self._stop.is_set():
                    return
                if lagged is None:
                    self._finish(EXIT_FAILURE, "isccd: the daemon closed the connection")
                    return
                # Every event up to the notice's seq was delivered: go on after it.
                since = lagged
        except (DaemonUnavailableError, ProtocolError) as exc:
            self._finish(fail(exc))
        finally:
            if client is not None:
                await client.close()

    async def _subscribe(self, since: int | None) -> AsyncClient | None:
        client = await self._connect()
        s = self._subscription
        try:
            result = await client.subscribe(
                since, types=s.types, roots=s.roots, store=self._store, fleet=s.fleet
            )
        except ProtocolError as exc:
            await client.close()
            if self._resumed and exc.code in ("store_mismatch", "unknown_seq"):
                self._finish(
                    EXIT_CURSOR,
                    f"isccd: the cursor {str(self._cursor_path)!r} counts another event log: "
                    f"{exc.message} ({exc.code}); nothing was run. Move it away to start again "
                    "from the daemon's next event (the events meanwhile are not run)",
                )
                return None
            raise
        self._subscribed(result)
        return client

    def _subscribed(self, result: SubscribeResult) -> None:
        if not result.complete:
            print(
                f"isccd: events {result.since + 1} to {result.first - 1} were pruned from "
                "the log; their commands are not run",
                file=sys.stderr,
            )
        # The daemon may accept an earlier run of its log: the numbers from now on are the
        # current run's.
        changed = self._store != result.store or self._seq is None
        self._store = result.store
        if self._seq is None:
            self._seq = result.since
        if changed:
            self._save()

    async def _take_events(self, client: AsyncClient) -> int | None:
        """Run the commands of the events as they come; the ``seq`` of a ``subscriber.lagged``
        notice, or ``None`` when the connection closed."""
        async for event in client.events():
            if event.type is EventType.SUBSCRIBER_LAGGED:
                return event.seq
            await self._slots.acquire()
            if self._stop.is_set():
                self._slots.release()
                break
            self._dispatch(event)
        return None

    # -- the commands --------------------------------------------------------------------------

    def _dispatch(self, event: Event) -> None:
        item = _Item(event, logged=event.type not in _NOTICES)
        self._window.append(item)
        if item.logged and event.seq in self._done:
            self._handled(item)  # handled before a restart: not run again
            self._slots.release()
            return
        redelivered = item.logged and event.seq in self._started
        if item.logged:
            self._started.add(event.seq)
            if not self._save():
                self._slots.release()
                return
        task = asyncio.create_task(self._handle(item, redelivered))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _handle(self, item: _Item, redelivered: bool) -> None:
        from isccd.protocol import encode_event, event_to_wire  # noqa: PLC0415

        options = self._options
        line = encode_event(item.event)
        pause = options.retry_first
        try:
            while True:
                env = command_environment(
                    self._env, event_to_wire(item.event), self._store or "", redelivered=redelivered
                )
                outcome = await run_command(
                    options.argv,
                    line,
                    env,
                    timeout=options.timeout,
                    kill_grace=options.kill_grace,
                    keep_fds=self._keep_fds,
                )
                if outcome.ok:
                    self._handled(item)
                    return
                if not await self._failed(item, outcome, pause):
                    return
                redelivered = True
                pause = min(pause * 2, options.retry_most)
        finally:
            self._slots.release()

    async def _failed(self, item: _Item, outcome: Outcome, pause: float) -> bool:
        """Report a failure and apply the policy; whether to run the command again."""
        policy = self._options.on_failure
        then = {
            OnFailure.STOP: "stopping: the next start runs it again",
            OnFailure.SKIP: "skipped",
            OnFailure.RETRY: f"run again in {pause:g} s",
        }[policy]
        if policy is OnFailure.RETRY and self._stop.is_set():
            then = "stopping: the next start runs it again"
        event = item.event
        subject = shown(event.path or event.root or "-")
        print(
            f"isccd: seq {event.seq} {event.type.value} {subject}: "
            f"{outcome.describe(self._options.timeout or 0)}; {then}",
            file=sys.stderr,
        )
        if policy is OnFailure.SKIP:
            self._handled(item)
            return False
        if policy is OnFailure.STOP:
            self._finish(EXIT_COMMAND_FAILED)
            return False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), pause)
        return not self._stop.is_set()

    # -- the cursor ----------------------------------------------------------------------------

    def _handled(self, item: _Item) -> None:
        item.handled = True
        if item.logged:
            self._started.discard(item.event.seq)
            self._done.add(item.event.seq)
        while self._window and self._window[0].handled:
            first = self._window.pop(0)
            if first.logged:
                self._seq = max(self._seq or 0, first.event.seq)
        seq = self._seq or 0
        self._done = {s for s in self._done if s > seq}
        self._started = {s for s in self._started if s > seq}
        self._save()

    def _save(self) -> bool:
        """Write the cursor; whether it could be (if not, the subscriber stops)."""
        if self._cursor_path is None or self._store is None or self._seq is None:
            return True
        cursor = Cursor(self._store, self._seq, frozenset(self._done), frozenset(self._started))
        try:
            write_cursor(self._cursor_path, cursor)
        except OSError as exc:
            self._finish(
                EXIT_CURSOR_WRITE,
                f"isccd: the cursor {str(self._cursor_path)!r} cannot be written: {exc}; "
                "no more commands are started",
            )
            return False
        return True

    def _finish(self, status: int, message: str | None = None) -> None:
        """Stop, and exit with ``status`` unless a failure was reported before."""
        if message is not None:
            print(message, file=sys.stderr)
        if self._status == EXIT_OK:
            self._status = status
        self._stop.set()
