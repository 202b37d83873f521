"""The running service: builds every component from the configuration and owns the lifecycle
(start, serve, reload on SIGHUP, stop on SIGTERM), each background loop supervised. The order
of each phase, and what a failing loop leads to, are in docs/architecture.md ("The daemon's
lifecycle").
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import functools
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import structlog

from isccd import __version__
from isccd.config import DaemonConfig, build_config
from isccd.daemon.backend import DaemonBackend
from isccd.daemon.deferred import Deferred
from isccd.daemon.feed import Feed
from isccd.daemon.fleetlog import FleetLog
from isccd.daemon.hasher import DaemonHasher
from isccd.daemon.heartbeat import Progress, run_heartbeat
from isccd.daemon.roots import Roots
from isccd.daemon.scans import Outcome, Scans
from isccd.daemon.signals import handle_signals
from isccd.daemon.storehealth import StoreHealth
from isccd.daemon.supervisor import Backoff, LoopFailedError, Policy, Supervisor
from isccd.daemon.workqueue import WorkQueue
from isccd.errors import ConfigError, StoreError
from isccd.hashing import current_versions
from isccd.hashing.pool import WorkerPool
from isccd.logconf import configure_logging
from isccd.model import Event, EventType
from isccd.pipeline import FILE_EVENTS, Counts, Pipeline, encode_policy
from isccd.results import DaemonStatus, HashingStatus, RootStatus
from isccd.sdnotify import Notifier
from isccd.server import Broker, Server
from isccd.settings import load_settings
from isccd.store import LOG_MARK_NAME, SqliteOptions, redact_url
from isccd.store.database import not_writable
from isccd.store.pgurl import is_postgres_url
from isccd.watch.debounce import Dirty, Moved

#: Seconds between purges of expired tombstones and events.
PURGE_EVERY = 3600.0
#: Seconds between refreshes of the systemd status line while nothing else updates it.
STATUS_EVERY = 5.0
#: Watcher changes applied at once. Each waits mostly for the store's thread (two commits: the
#: plan, then the record) and for a worker, so many run side by side; hashing itself is
#: bounded by the workers.
WATCH_CONCURRENCY = 32


def _changed_versions(old: Mapping[str, str], new: Mapping[str, str]) -> dict[str, str]:
    """Component -> ``"old -> new"`` for every profile component whose version changed."""
    return {
        name: f"{old.get(name, '?')} -> {new.get(name, '?')}"
        for name in sorted(old.keys() | new.keys())
        if old.get(name) != new.get(name)
    }


class Daemon:
    """The running service.

    Args:
        config: The checked configuration.
        config_path: The file it was read from, re-read on SIGHUP (``None``: none).
        overrides: Command-line values, applied again on every reload.
        env: Where ``NOTIFY_SOCKET`` and default locations are read.
        notifier: Where systemd notifications go (by default systemd's, from ``env``).
        make_pipeline: Builds the pipeline (called like :class:`~isccd.pipeline.Pipeline`).
        clock: Monotonic seconds for settling watcher changes.
        backoff: Pauses before a failed loop is restarted and between attempts to write a
            store that could not be written.
        on_ready: Called once, when the daemon first serves (READY sent), before the roots'
            startup reconciles: what exists then lives as long as the process.
    """

    def __init__(
        self,
        config: DaemonConfig,
        *,
        config_path: Path | None = None,
        overrides: Mapping[str, Mapping[str, Any]] | None = None,
        env: Mapping[str, str] | None = None,
        notifier: Notifier | None = None,
        make_pipeline: Callable[..., Pipeline] = Pipeline,
        clock: Callable[[], float] = time.monotonic,
        backoff: Backoff | None = None,
        on_ready: Callable[[], None] | None = None,
    ) -> None:
        self.config = config
        self._on_ready = on_ready
        self._config_path = config_path
        self._overrides = overrides or {}
        self._env = os.environ if env is None else env
        self._notifier = Notifier(self._env) if notifier is None else notifier
        self._supervisor = Supervisor(self._loop_failed, self._update_status, backoff=backoff)
        self._state = "starting"
        self._started = time.time()
        self._stop = asyncio.Event()
        # Set from the store's thread when a committed batch changed files (folder events).
        self._files_changed = asyncio.Event()
        self._reload_requested = asyncio.Event()
        self._progress = Progress(
            limit=config.workers.file_timeout + 60,
            settled=lambda: self._pool.statistics().settled,
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._broker = Broker(queue_size=config.server.subscriber_queue)
        self._pool = WorkerPool(config.workers)
        # Pools other than the current one that may still hold workers: one a reload is
        # starting, and those it replaced while they close. The shutdown closes them too, as
        # the tasks starting or closing them may be cancelled by it (a reload and a stop at
        # once), and their workers, which ignore SIGTERM, would keep the process from exiting.
        self._other_pools: set[WorkerPool] = set()
        self._hasher = DaemonHasher(self._pool, self._progress)
        self._pipeline = make_pipeline(
            config.store_url,
            config.pipeline,
            host=config.store_host,
            hasher=self._hasher,
            sqlite=SqliteOptions(),
            log_mark=config.state_dir / LOG_MARK_NAME,
            on_commit=self._committed,
        )
        self._health = StoreHealth(
            self._pipeline,
            notify=self._store_degraded,
            on_recovered=self._store_recovered,
            on_fatal=self._store_lost,
            on_change=self._update_status,
            backoff=backoff,
        )
        self._scans = Scans(
            self._pipeline, config.scan, on_change=self._update_status, on_done=self._reconciled
        )
        self._queue = WorkQueue(
            self._pipeline, concurrency=WATCH_CONCURRENCY, on_failed=self._change_failed
        )
        self._feed = Feed(
            config.debounce,
            self._queue,
            self._scans,
            self._emit,
            ignore=config.scan.ignore,
            clock=clock,
            on_change=self._change_seen,
        )
        self._roots = Roots(
            config.watcher,
            self._feed,
            roots=lambda: self.config.roots,
            request=self._scans.request,
            interval=lambda: self.config.schedule.poll_interval,
        )
        backend = DaemonBackend(
            self._pipeline,
            self._scans,
            self._feed,
            self._queue,
            roots=lambda: self.config.roots,
            status=self.status,
            degraded=self._degraded_reason,
        )
        self._server = Server(backend, self._broker, config.server)
        self._tasks: list[asyncio.Task[Any]] = []
        self._status_line = ""
        self._failure: BaseException | None = None
        self._refused: str | None = None
        self._head = 0  # the last sequence number committed, for notices outside the log
        self._redo: set[str] = set()  # what the store failed to do, done again once it can
        self._deferred = Deferred()  # the changes the store could not take
        self._fleet: FleetLog | None = None  # the shared log's follower (PostgreSQL)
        self._counts = Counts({}, 0)  # for status while the store cannot be read

    # -- lifecycle -----------------------------------------------------------------------------

    async def run(self) -> None:
        """Start, serve until SIGTERM/SIGINT, then stop.

        Raises:
            StoreError: The store cannot be opened (nothing else was started), or its database
                was deleted while running (after an orderly stop).
            SocketSetupError: The socket cannot be created (the store is closed again).
            WorkersUnavailableError: No hashing worker could be started (after an orderly
                stop).
            LoopFailedError: A background loop failed for good (after an orderly stop).
        """
        self._loop = asyncio.get_running_loop()
        log = structlog.get_logger()
        log.info("daemon_starting", version=__version__, pid=os.getpid(), roots=self.config.roots)
        with handle_signals(self._loop, self._request_stop, self._reload_requested.set):
            self._notifier.status("opening the store")
            await self._open()
            try:
                if not self._stop.is_set():  # not asked to stop while the store opened
                    await self._serve()
            finally:
                await self._shutdown()
        if self._failure is not None:
            raise self._failure

    async def _open(self) -> None:
        config = self.config
        if config.store_url.startswith("sqlite://"):
            try:
                config.state_dir.mkdir(parents=True, exist_ok=True, mode=0o750)
            except OSError as exc:
                raise not_writable(config.state_dir, exc) from None
        workers = asyncio.create_task(self._pool.start(), name="workers")
        workers.add_done_callback(self._workers_started)
        try:
            # The duplicate policy is adopted once serving (see _adopt_policy).
            await asyncio.to_thread(functools.partial(self._pipeline.open, adopt=False))
            if is_postgres_url(config.store_url):
                index = self._pipeline.fleet
                assert index is not None  # a PostgreSQL store is shared
                url, host = config.store_url, self._pipeline.host
                self._fleet = FleetLog(url, host, self._pipeline, index, self._publish)
        except BaseException:
            await self._pool.close(grace=0)
            workers.cancel()
            raise
        try:
            await self._server.start()
        except BaseException:
            await self._pool.close(grace=0)
            workers.cancel()
            await asyncio.to_thread(self._pipeline.close)
            raise
        self._tasks.append(workers)

    def _change_seen(self) -> None:
        """The watcher saw a change: the workers start (if they were let go) while it settles.
        The pool asked is the current one: a reload replaces it."""
        self._pool.wake()

    def _workers_started(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        # Without workers nothing can be hashed: stop, and say why (systemd restarts it).
        # The error itself is the exit's last line (isccd.daemon.run.main).
        self._fail(task.exception(), "workers_unavailable")

    def _fail(self, error: BaseException | None, reason: str) -> None:
        """Stop because of ``error``: the heartbeat at once (systemd must not take a daemon
        that stops for a healthy one), then everything in order."""
        if self._failure is None:
            self._failure = error
        heartbeat = self._supervisor.task("heartbeat")
        if heartbeat is not None:
            heartbeat.cancel()
        structlog.get_logger().warning("daemon_stopping", reason=reason)
        self._stop.set()

    def _loop_failed(self, error: LoopFailedError) -> None:
        self._fail(error, "loop_failed")

    async def _serve(self) -> None:
        assert self._loop is not None
        # The last event subscribers may have: the follower publishes from there on.
        fleet = self._fleet
        self._head = fleet.position if fleet is not None else await self._pipeline.last_seq()
        self._roots.start()
        for root in self.config.roots:
            await self._roots.watch(root)
        start = self._supervisor.start
        # Its state lives in the debouncer: every root is reconciled after a restart.
        start("feed", self._feed.run, Policy.RESTART, on_restart=self._feed_restarted)
        # Entries in flight cannot be accounted for: the next start reconciles.
        start("queue", self._queue.run, Policy.STOP)
        start("schedule", self._schedule, Policy.RESTART)  # keeps nothing between rounds
        # A reload that failed half-way leaves a half-applied configuration.
        start("reloads", self._reloads, Policy.STOP)
        start("status", self._status_loop, Policy.RESTART)  # keeps nothing
        # The store's health is what the other loops rely on.
        start("store", self._health.run, Policy.STOP)
        start("roots", self._roots.run, Policy.RESTART)  # keeps nothing; every root is checked
        if fleet is not None:
            # Follows the shared log from the last event it read; retries its own connection.
            start("fleet", fleet.run, Policy.RESTART)
        interval = self._notifier.watchdog_interval
        if interval is not None:
            beat = functools.partial(run_heartbeat, self._notifier, interval, self._healthy)
            start("heartbeat", beat, Policy.RESTART)  # no WATCHDOG=1 while it is down
        self._state = "ready"
        self._notifier.ready(self._compose_status())
        structlog.get_logger().info(
            "daemon_ready",
            socket=str(self.config.server.socket_path),
            roots=list(self.config.roots),
            seconds=round(time.time() - self._started, 3),
        )
        if self._on_ready is not None:
            self._on_ready()
        # Re-evaluating relations and composing codes again resume where they were.
        start("adopt", self._adopt_stored, Policy.RESTART)
        if self.config.pipeline.folder_settle > 0:
            # Its sums are read again from the store when it restarts.
            start("folders", self._folders, Policy.RESTART)
        for root in self.config.roots:
            self._scans.request(root, "startup")
        await self._stop.wait()

    def _feed_restarted(self) -> None:
        """The feed failed and runs again: what it held may be lost, so every root is
        reconciled."""
        for root in self.config.roots:
            self._scans.request(root, "feed restarted")

    async def _adopt_stored(self) -> None:
        """Bring what is stored under the configuration it starts with, as a reload does,
        while serving (it may take a while): the relations under a duplicate policy changed
        while the daemon was not running, and the ISCC-CODEs under ``[code] wide``. A store
        that cannot be written has it done again once it can."""
        log = structlog.get_logger()
        try:
            adopted = await self._pipeline.adopt()  # the policy in force when it runs
        except StoreError as exc:
            self._store_failed(exc, "adopt")
        else:
            if adopted.previous is not None:
                log.info(
                    "thresholds_changed",
                    at="startup",
                    previous=encode_policy(adopted.previous),
                    files=adopted.files,
                    events=len(adopted.events),
                )
        await self._recompose("startup")

    async def _recompose(self, at: str) -> None:
        """Compose the stored ISCC-CODEs again when ``[code] wide`` changed since they were
        composed (nothing is read from disk, but every file is visited)."""
        log = structlog.get_logger()
        try:
            events = await self._pipeline.recompose()  # the option in force when it runs
        except StoreError as exc:
            self._store_failed(exc, "adopt")
            return
        if events:
            log.info("iscc_codes_composed", at=at, wide=self._pipeline.options.wide,
                     changed=len(events))  # fmt: skip

    def _request_stop(self, signal_name: str) -> None:
        structlog.get_logger().info("daemon_stopping", signal=signal_name)
        self._stop.set()

    async def _shutdown(self) -> None:
        """Stop in the documented order; bounded by ``shutdown_timeout`` plus a little."""
        log = structlog.get_logger()
        self._state = "stopping"
        self._notifier.stopping()
        grace = self.config.shutdown_timeout
        failed: list[Exception] = []

        async def step(name: str, action: Callable[[], Awaitable[object]]) -> None:
            # A step that fails must not leave the later ones undone: workers, the store's
            # thread or the socket left behind would keep the process from ever exiting.
            try:
                await action()
            except Exception as exc:
                log.exception("shutdown_step_failed", step=name)
                failed.append(exc)

        await step("watcher", self._roots.close)
        await step("queue", self._queue.close)
        await step("scans", self._scans.close)
        # Files being hashed for the queue get the grace period to finish and be applied.
        queue_task = self._supervisor.task("queue")
        if queue_task is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(queue_task), grace)
        pool = self._pool.statistics()
        abandoned = pool.busy + pool.waiting  # picked up again by the next start's reconcile
        await step("supervisor", self._supervisor.close)
        if self._fleet is not None:
            await step("fleet", self._fleet.close)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await step("workers", lambda: self._pool.close(grace=0))
        for other in list(self._other_pools):  # close() is idempotent
            await step("replaced workers", functools.partial(other.close, grace=0))
        # The server before the store: the questions it gives up are then skipped by the
        # store's thread, instead of all being answered (to clients that may never read) first.
        await step("server", self._server.close)
        await step("store", lambda: asyncio.to_thread(self._pipeline.close))
        self._notifier.close()
        log.info("daemon_stopped", abandoned=abandoned)
        if failed:
            raise failed[0]

    # -- periodic work -------------------------------------------------------------------------

    async def _schedule(self) -> None:
        """Safety reconciles, polls of what inotify cannot watch, retention purges."""
        now = time.monotonic()
        next_reconcile = now + (self.config.schedule.reconcile_interval or float("inf"))
        next_poll = now + self.config.schedule.poll_interval
        next_purge = now
        while True:
            wake = min(next_reconcile, next_poll, next_purge)
            await asyncio.sleep(max(0.0, wake - time.monotonic()))
            now = time.monotonic()
            schedule = self.config.schedule
            if now >= next_reconcile:
                await self._refresh_versions()
                for root in self.config.roots:
                    self._scans.request(root, "periodic")
                next_reconcile = now + (schedule.reconcile_interval or float("inf"))
            if now >= next_poll:
                await self._poll()
                next_poll = now + schedule.poll_interval
            if now >= next_purge:
                try:
                    files, events = await self._pipeline.purge()
                except StoreError as exc:  # purged at the next round
                    self._store_failed(exc, "purge")
                else:
                    if files or events:
                        structlog.get_logger().info("purged", tombstones=files, events=events)
                next_purge = now + PURGE_EVERY

    async def _refresh_versions(self) -> None:
        """Ask the tools' versions again before a safety reconcile, so that a tool installed or
        upgraded without a reload is used consistently: units it makes are not taken for
        outdated, and what it affects is computed by that reconcile."""
        versions = await asyncio.to_thread(current_versions, self.config.workers.code)
        changed = _changed_versions(self.config.pipeline.versions, versions)
        if not changed:
            return
        # Only the versions are replaced, each where it lives, so that a reload applied
        # meanwhile keeps its other options.
        pipeline = dataclasses.replace(self.config.pipeline, versions=versions)
        self.config = dataclasses.replace(self.config, pipeline=pipeline)
        await self._pipeline.set_options(
            dataclasses.replace(self._pipeline.options, versions=versions)
        )
        structlog.get_logger().info("versions_changed", components=changed)

    async def _poll(self) -> None:
        for root, path in await self._roots.polled_paths():
            if path == root:
                self._scans.request(root, "poll")
            else:
                await self._queue.put(Dirty(root, path, is_dir=True))

    async def _healthy(self) -> str | None:
        """The heartbeat's probe: no loop failed for good, the store's thread answers (a store
        that cannot be written is degraded, not stuck: the daemon keeps watching), work
        moves."""
        if self._supervisor.dead is not None:
            return str(self._supervisor.dead)
        try:
            await self._pipeline.flush()
        except StoreError as exc:
            self._health.failed(exc)
        pending = self._queue.depth() + self._pool.statistics().busy
        stalled = self._progress.stalled(pending)
        if stalled is not None:
            return f"no file finished for {stalled:.0f} s while {pending} are waiting"
        return None

    # -- reload --------------------------------------------------------------------------------

    async def _reloads(self) -> None:
        while True:
            await self._reload_requested.wait()
            self._reload_requested.clear()
            await self.reload()

    async def reload(self) -> bool:
        """Re-read the configuration and apply it whole, or keep the running one.

        Returns:
            True when the new configuration was applied.
        """
        log = structlog.get_logger()
        self._state = "reloading"
        self._notifier.reloading()
        applied = False
        try:
            path, overrides = self._config_path, self._overrides
            settings = await asyncio.to_thread(
                load_settings, path, overrides=overrides, env=self._env
            )
            new = await asyncio.to_thread(build_config, settings, self._env)
        except ConfigError as exc:
            refused: ConfigError | None = exc
        else:
            refused = None
            await self._apply(new)
            applied = True
            log.info("reloaded", roots=list(self.config.roots))
        if refused is not None:
            log.error("reload_refused", error=str(refused), kept="the running configuration")
            when = time.strftime("%Y-%m-%d %H:%M:%S")
            self._refused = (
                f"the reload at {when} was refused ({refused}); running the previous configuration"
            )
        else:
            self._refused = None
        self._state = "ready"
        self._notifier.ready(self._compose_status())
        return applied

    async def _apply(self, new: DaemonConfig) -> None:
        old = self.config
        log = structlog.get_logger()
        configure_logging(new.log_level, new.log_format, env=self._env)
        for name in ("store_url", "store_host", "state_dir", "server"):
            if getattr(new, name) != getattr(old, name):
                kept = getattr(old, name)
                kept = redact_url(kept) if name == "store_url" else str(kept)
                log.warning("restart_required", setting=name, kept=kept)
        new = dataclasses.replace(
            new,
            store_url=old.store_url,
            store_host=old.store_host,
            state_dir=old.state_dir,
            server=old.server,
        )
        options = new.pipeline
        try:
            adopted = await self._pipeline.set_options(options)
        except StoreError as exc:  # re-evaluated once the store can be written
            self._store_failed(exc, "adopt")
        else:
            if options.thresholds != old.pipeline.thresholds:
                log.info("thresholds_changed", events=len(adopted.events))
        changed = _changed_versions(old.pipeline.versions, options.versions)
        if options.wide != old.pipeline.wide:
            await self._recompose("reload")
        if new.workers != old.workers:
            await self._replace_workers(new)
        self._scans.scan_options = new.scan
        self._feed.set_ignore(new.scan.ignore)
        self._feed.reconfigure(new.debounce)
        self.config = new
        if new.watcher != old.watcher:
            await self._roots.rewatch(new.watcher, [r for r in old.roots if r in new.roots])
        for root in [r for r in old.roots if r not in new.roots]:
            await self._drop_root(root)
        for root in [r for r in new.roots if r not in old.roots]:
            await self._roots.watch(root)
            self._scans.request(root, "added")
        if changed:
            log.info("versions_changed", components=changed)
            for root in [r for r in new.roots if r in old.roots]:
                self._scans.request(root, "versions")
        await self._roots.retry_limited()

    async def _replace_workers(self, new: DaemonConfig) -> None:
        pool = WorkerPool(new.workers)
        self._other_pools.add(pool)  # closed by the shutdown if it comes while this starts
        await pool.start()
        old, self._pool, self._hasher.pool = self._pool, pool, pool
        self._other_pools.discard(pool)
        self._other_pools.add(old)
        self._progress.limit = new.workers.file_timeout + 60

        async def closing() -> None:
            await old.close(grace=new.shutdown_timeout)
            self._other_pools.discard(old)

        self._supervisor.start("old workers", closing, Policy.STOP)

    async def _drop_root(self, root: str) -> None:
        await self._roots.drop(root)
        self._feed.discard_root(root)
        self._scans.forget(root)
        await self._forget_root(root)

    async def _forget_root(self, root: str) -> None:
        """Tombstone the files of a root no longer configured (once the store can)."""
        try:
            events = await self._pipeline.remove_path(root)
        except StoreError as exc:
            self._store_failed(exc, f"drop {root}")
            return
        structlog.get_logger().info("root_removed", root=root, files=len(events))

    # -- faults --------------------------------------------------------------------------------

    def _store_failed(self, exc: StoreError, redo: str) -> None:
        """A write of ``redo`` failed: the store is degraded, and ``redo`` is done again once it
        can be written (``adopt``, ``drop ROOT``; the roots are reconciled anyway)."""
        if self._health.failed(exc):
            self._redo.add(redo)

    def _change_failed(self, action: Dirty | Moved, exc: Exception) -> bool:
        """A change from the watcher could not be applied (the work queue's ``on_failed``)."""
        paths = [action.path] if isinstance(action, Dirty) else [action.src, action.dest]
        if self._state == "stopping":
            return True  # the next start's reconcile finds it
        if self._health.failed(exc):
            structlog.get_logger().warning("change_deferred", paths=paths, error=str(exc))
            self._deferred.add(action)
            return True
        # Not the store: logged by the queue; a reconcile finds the change another way.
        self._scans.request(action.root, "change failed")
        return False

    def _reconciled(self, outcome: Outcome) -> None:
        """A reconcile ended (the scans' ``on_done``): a failure for the store, a root that
        became unavailable or available again, unreadable directories to try again."""
        error = outcome.error if self._state != "stopping" else None
        if error is not None and self._health.failed(error):  # again once the store can write
            self._deferred.reconcile(outcome.root)
        root, log = outcome.root, structlog.get_logger()
        if outcome.unavailable is not None and outcome.was_unavailable is None:
            self._emit(EventType.ROOT_UNAVAILABLE, root, "", {"reason": outcome.unavailable})
        elif outcome.unavailable is None and outcome.was_unavailable is not None:
            log.info("root_available", root=root)
            self._emit(EventType.ROOT_AVAILABLE, root, "", {})
        if outcome.reason in ("request", "sync"):
            self._roots.wake(root)

    def _store_degraded(self, reason: str) -> None:
        """Tell subscribers; the log cannot say it (not part of it, numbered as the last
        event committed)."""
        notice = Event(
            self._head, EventType.STORE_DEGRADED, time.time(), "", "", {"reason": reason}
        )
        self._broker.notify(notice)

    def _store_recovered(self) -> None:
        """The store takes writes again: apply the changes it could not take, reconcile the
        roots whose changes overflowed or whose reconcile failed, and do again what failed
        otherwise."""
        backlog = self._deferred.take()
        for root in sorted(backlog.roots & set(self.config.roots)):
            self._scans.request(root, "store recovered")
        if backlog.changes:
            structlog.get_logger().info("changes_resumed", changes=len(backlog.changes))
            # Queues the changes the store could not take, once it can.
            self._supervisor.start(
                "deferred", functools.partial(self._resume, backlog.changes), Policy.RESTART
            )
        redo, self._redo = self._redo, set()
        if "adopt" in redo:
            self._supervisor.start("adopt", self._adopt_stored, Policy.RESTART)
        for item in sorted(redo):
            if item.startswith("drop ") and item[5:] not in self.config.roots:
                self._supervisor.start(
                    item, functools.partial(self._forget_root, item[5:]), Policy.RESTART
                )

    async def _resume(self, changes: Sequence[Dirty | Moved]) -> None:
        """Queue the changes the store could not take, in the order they were seen."""
        roots = set(self.config.roots)
        for change in changes:
            if change.root in roots:
                await self._queue.put(change)

    def _store_lost(self, error: StoreError) -> None:
        """The database is gone or corrupt: stop (exit 74), the index cannot be trusted."""
        structlog.get_logger().error("store_lost", error=str(error))
        self._fail(error, "store_lost")

    def _problems(self) -> list[str]:
        """What keeps the daemon from working fully, for ``status`` and the status line."""
        found = self._supervisor.problems()
        store = self._health.problem()
        if store is not None:
            found.append(store)
        shared = self._fleet.status() if self._fleet is not None else None
        if shared is not None and shared.error is not None:
            found.append(f"the shared event log cannot be read ({shared.error}); retrying")
        if self._refused is not None:
            found.append(self._refused)
        return found

    # -- events and status ---------------------------------------------------------------------

    def _committed(self, events: Sequence[Event]) -> None:
        """On the store's thread: hand a committed batch to the loop, in order (a shared log's
        events are its follower's to publish, in the log's one order), and wake the folders'
        loop when files changed."""
        if self._loop is None or not events:
            return
        with contextlib.suppress(RuntimeError):  # the loop is gone: shutting down
            if self._fleet is None:
                self._loop.call_soon_threadsafe(self._publish, list(events))
            if any(e.type in FILE_EVENTS for e in events):
                self._loop.call_soon_threadsafe(self._files_changed.set)

    async def _folders(self) -> None:
        """Duplicate folders kept current: once the files of changed folders have been
        quiet long enough, the ``dir.dup`` and ``dir.resolved`` events are logged."""
        await self._pipeline.watch_folders(self.config.pipeline.folder_settle)
        while True:
            await self._files_changed.wait()
            self._files_changed.clear()
            while (due := await self._pipeline.folders_due()) is not None:
                await asyncio.sleep(max(0.0, due - time.time()))
                await self._pipeline.settle_folders()

    def _publish(self, events: list[Event]) -> None:
        self._head = max(self._head, events[-1].seq)
        for event in events:
            try:
                self._broker.publish(event)
            except Exception:  # one unpublishable event must not hold back the others
                structlog.get_logger().exception("publish_failed", seq=event.seq, type=event.type)

    def _emit(self, type: EventType, root: str, path: str, data: dict[str, Any]) -> None:
        """Log a daemon-level event (watch problems); it is published once committed."""
        future = self._pipeline.emit(type, root, path, data)
        future.add_done_callback(self._emitted)

    def _emitted(self, future: concurrent.futures.Future[Event]) -> None:
        """On the store's thread: an event that could not be written degrades the store."""
        error = None if future.cancelled() else future.exception()
        if isinstance(error, StoreError) and self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: shutting down
                self._loop.call_soon_threadsafe(self._health.failed, error)

    async def status(self) -> DaemonStatus:
        """What ``isccd status`` shows; the counts are the index's at the time of the reply
        (the last known ones while the store cannot be read)."""
        try:
            self._counts = await self._pipeline.counts()
        except StoreError as exc:
            self._health.failed(exc)
        counts = self._counts
        pool = self._pool.statistics()
        watch = self._roots.status()
        roots = []
        for root in self.config.roots:
            ws = watch.get(root)
            notes = self._roots.notes(root)
            unavailable = self._scans.unavailable(root)
            if unavailable is not None:
                notes.append(f"unavailable: {unavailable}")
            roots.append(
                RootStatus(
                    path=root,
                    watch_mode=ws.mode.value if ws else "stopped",
                    files=counts.files.get(root, 0),
                    scan=self._scans.progress(root),
                    note="; ".join(notes) or None,
                )
            )
        return DaemonStatus(
            version=__version__,
            pid=os.getpid(),
            state="degraded" if self._state == "ready" and self._degraded() else self._state,
            started=self._started,
            roots=tuple(roots),
            queue_depth=self._queue.depth() + self._feed.pending() + pool.busy,
            files_indexed=sum(counts.files.values()),
            last_seq=counts.last_seq,
            problems=tuple(self._problems()),
            database=self._fleet.status() if self._fleet is not None else None,
            hashing=HashingStatus(
                workers=pool.workers,
                state=pool.state,
                idle_timeout=self.config.workers.idle_timeout,
            ),
        )

    def _degraded_reason(self) -> str | None:
        """What makes the daemon work without its store, a sentence; None while it does not."""
        store = self._health.problem()
        if store is not None:
            return store
        shared = self._fleet.status() if self._fleet is not None else None
        if shared is not None and shared.error is not None:
            return f"the shared event log cannot be read ({shared.error}); retrying"
        return None

    def _degraded(self) -> bool:
        """Whether the daemon works without its store: it cannot be written, or the shared
        log cannot be read."""
        shared = self._fleet.status() if self._fleet is not None else None
        return self._health.reason is not None or (shared is not None and shared.error is not None)

    def _compose_status(self) -> str:
        parts = ["degraded"] if self._degraded() else []
        parts += self._problems()
        roots = self.config.roots
        gone = [r for r in roots if self._roots.unwatched(r) or self._scans.unavailable(r)]
        parts.append(f"watching {len(roots) - len(gone)} root(s)")
        if gone:
            parts.append(f"{len(gone)} unavailable: {', '.join(gone)}")
        scans = self._scans.summary()
        if scans:
            parts.append(scans)
        depth = self._queue.depth() + self._feed.pending()
        if depth:
            parts.append(f"{depth} change(s) queued")
        return "; ".join(parts)

    def _update_status(self) -> None:
        line = self._compose_status()
        if line != self._status_line:
            self._status_line = line
            self._notifier.status(line)

    async def _status_loop(self) -> None:
        """Refresh the status line, sent again even when unchanged: a notification may be lost
        (sending is best effort), and the next one repairs it."""
        while True:
            await asyncio.sleep(STATUS_EVERY)
            self._status_line = self._compose_status()
            self._notifier.status(self._status_line)
