"""Commands that talk to the running daemon through its socket: ``status``, ``subscribe``,
``rescan``; and ``run``, the daemon itself.

Every one finds the daemon as :func:`isccd.cli.connect.find_socket` does (``--socket PATH``,
``ISCCD_SERVER__SOCKET``, ``[server] socket`` of ``--config FILE``, the default socket). When
no daemon answers they say so on stderr and exit with status 1. Results are readable text,
whether stdout is a terminal or not, and JSON with ``--json``. ``subscribe --exec CMD`` runs a
command for each event instead (:mod:`isccd.cli.hooks`).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

from isccd.cli import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from isccd.cli.connect import (
    add_config_option,
    add_socket_option,
    fail,
    find_daemon,
    open_client,
)
from isccd.cli.escape import shown
from isccd.cli.formats import output_format
from isccd.cli.output import print_json
from isccd.collector import fewer_collections
from isccd.errors import ConfigError, DaemonUnavailableError, ProtocolError
from isccd.model import Event, EventType
from isccd.protocol import to_wire

if TYPE_CHECKING:
    # Imported where a command connects: building the parser must stay cheap.
    from isccd.client import Client
    from isccd.results import DaemonStatus, DatabaseStatus, HashingStatus

_NO_DAEMON = (
    "The daemon is asked on --socket PATH, else $ISCCD_SERVER__SOCKET, else [server] socket of "
    "the configuration (--config FILE, else the daemon's default file), else the default socket, "
    "or the system daemon's (/run/isccd/isccd.sock) when yours does not exist and you have no "
    "configuration file. "
    "exit status: 0 success; 1 when no daemon answers on the socket or it refuses; 78 when the "
    "configuration cannot be read."
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``status``, ``subscribe`` and ``rescan`` to the ``isccd`` parser."""
    status = subparsers.add_parser(
        "status",
        help="show the running daemon's state",
        description="Roots and how each is watched, scan progress, files indexed, the hashing "
        "queue, the last event's sequence number, and the connected clients.",
        epilog=_NO_DAEMON,
    )
    add_socket_option(status)
    add_config_option(status)
    status.add_argument("--json", action="store_true", help="print JSON")
    status.set_defaults(handler=run_status)

    subscribe = subparsers.add_parser(
        "subscribe",
        help="print the daemon's events as they happen",
        description="Stream the daemon's events (duplicates found, files added, changed, "
        "moved, removed, scans, watch problems): one readable line each, or one JSON object "
        "per line with --json. With --since N the events after "
        "sequence number N are replayed first, so a script that stopped can resume without "
        "missing or repeating anything; give --store ID too, and a daemon whose store was "
        "replaced since (another event log) refuses instead of replaying the wrong events. On "
        "exit the last sequence number and the store's identity are printed on stderr as "
        "'isccd: last seq N store ID'.",
        epilog="exit status: 0 when stopped by SIGINT, SIGTERM or a closed output pipe; 1 when "
        "no daemon answers, the daemon closed the connection, or the subscriber lagged (it "
        "read too slowly; resume with --since N); 2 for a usage error or an --exec command "
        "that cannot be found; 65 when the --cursor file cannot be used (corrupt, not a "
        "cursor, or the daemon's store is not the one it counts: "
        "nothing is run); 74 when the cursor cannot be written; 75 when a command failed "
        "under --on-failure stop; 78 when the configuration cannot be read. The daemon is "
        "found as for `isccd status`.",
    )
    add_socket_option(subscribe)
    add_config_option(subscribe)
    subscribe.add_argument(
        "--since", type=int, metavar="N", help="replay the events after sequence number N first"
    )
    subscribe.add_argument(
        "--store",
        metavar="ID",
        help="the identity of the store N comes from (printed on exit, and by `hello`); "
        "refused when the daemon's store is another one",
    )
    subscribe.add_argument(
        "--type",
        dest="types",
        action="append",
        choices=[t.value for t in EventType],
        metavar="TYPE",
        help="only events of this type (repeatable): "
        + ", ".join(t.value for t in EventType if t is not EventType.SUBSCRIBER_LAGGED),
    )
    subscribe.add_argument(
        "--root",
        dest="roots",
        action="append",
        metavar="ROOT",
        help="only events of this watched root (repeatable)",
    )
    subscribe.add_argument(
        "--fleet",
        action="store_true",
        help="in a database a fleet shares: the events of every host (default: the daemon's "
        "host's, including duplicates other hosts found of its files)",
    )
    subscribe.add_argument("--json", action="store_true", help="print one JSON object per line")
    _register_exec(subscribe)
    subscribe.set_defaults(handler=run_subscribe)

    rescan = subparsers.add_parser(
        "rescan",
        help="ask the daemon to reconcile a root or a directory with the disk",
        description="Start a reconcile scan of PATH (a root, or a directory in one: only that "
        "directory is walked), or of every root: files changed, added or removed behind the "
        "watcher's back are found and indexed. Progress is reported as scan.progress and "
        "scan.done events. With --wait, progress is shown on stderr (on a terminal) until "
        "every change is indexed, then what changed: files added, changed, moved, removed, "
        "failed (isccd errors lists them), unstable, and duplicates found.",
        epilog=_NO_DAEMON,
    )
    add_socket_option(rescan)
    add_config_option(rescan)
    rescan.add_argument("path", nargs="?", metavar="PATH", help="a root or a directory in one")
    rescan.add_argument(
        "--wait",
        action="store_true",
        help="return only when every change on disk so far is indexed",
    )
    rescan.add_argument("--json", action="store_true", help="print JSON")
    rescan.set_defaults(handler=run_rescan)

    # `isccd run`, the daemon these commands talk to, is registered here.
    _register_run(subparsers)


# -- status -----------------------------------------------------------------------------------


def run_status(args: argparse.Namespace) -> int:
    """``isccd status``."""
    try:
        with open_client(args) as client:
            status = client.status()
    except (DaemonUnavailableError, ProtocolError, ConfigError) as exc:
        return fail(exc)
    if output_format(args) != "text":
        print_json(to_wire(status))
    else:
        sys.stdout.write(format_status(status, now=time.time()))
    return EXIT_OK


def format_status(status: DaemonStatus, *, now: float) -> str:
    """The readable form of ``status``."""
    lines = [
        f"{status.version}: {status.state}, pid {status.pid}, up {_duration(now - status.started)}",
        f"  files indexed  {status.files_indexed:,}",
        f"  hash queue     {status.queue_depth:,}",
        f"  last seq       {status.last_seq}",
    ]
    if status.hashing is not None:
        lines.append(f"  hash workers   {_workers(status.hashing)}")
    if status.server is not None:
        s = status.server
        lines.append(
            f"  clients        {s.connections} ({s.subscribers} subscribed; "
            f"{s.events_published:,} events published, {s.subscribers_lagged} lagged)"
        )
    lines += [f"  problem        {shown(problem)}" for problem in status.problems]
    lines.append("roots" if status.roots else "roots: none")
    width = max((len(shown(r.path)) for r in status.roots), default=0)
    for root in status.roots:
        text = f"  {shown(root.path):<{width}}  {root.watch_mode:<8} {root.files:>9,} files"
        if root.scan is not None:
            scan = root.scan
            text += (
                f"  scanning ({scan.reason}): {scan.phase}, {scan.files_seen:,} seen, "
                f"{scan.files_done:,}/{scan.files_queued:,} hashed, {scan.errors:,} errors"
            )
        lines.append(text)
        if root.note:
            lines.append(f"  {'':<{width}}  note: {shown(root.note)}")
    if status.database is not None:
        lines += _database(status.database, now)
    return "\n".join(lines) + "\n"


def _workers(hashing: HashingStatus) -> str:
    """Whether the hashing workers run, or were let go after a quiet period."""
    if hashing.state == "running":
        return f"{hashing.workers} running"
    return f"{hashing.state} (let go after {hashing.idle_timeout:g} s without a file)"


def _database(db: DatabaseStatus, now: float) -> list[str]:
    """The shared database: where, how near, and the other hosts heard from."""
    if db.connected:
        state = f"connected, {db.latency_ms:.1f} ms" if db.latency_ms is not None else "connected"
    else:
        state = f"unavailable: {db.error}" if db.error else "connecting"
    lines = [
        f"database         {db.url} (as host {db.host})",
        f"  state          {state}",
        f"  log read to    seq {db.position}",
    ]
    lines.append("  other hosts" if db.hosts else "  other hosts    none")
    for host in db.hosts:
        heard = "never" if host.heard is None else f"{_ago(now - host.heard)} ago"
        lines.append(f"    {host.name:<24} heard from {heard}, last seq {host.last_seq}")
    return lines


def _ago(seconds: float) -> str:
    return f"{max(seconds, 0):.0f} s" if seconds < 120 else _duration(seconds)


def _duration(seconds: float) -> str:
    minutes, _ = divmod(max(int(seconds), 0), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m"


# -- subscribe --------------------------------------------------------------------------------


class _Stop(Exception):
    """SIGTERM: stop like SIGINT does."""


@contextlib.contextmanager
def _sigterm_stops() -> Iterator[None]:
    def stop(signum: int, frame: FrameType | None) -> None:
        raise _Stop

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _register_exec(subscribe: argparse.ArgumentParser) -> None:
    hooks = subscribe.add_argument_group(
        "running a command for each event",
        "CMD is split into words as a shell would, once, and run without a shell, as you: "
        "the event's JSON object on its standard input, its fields in ISCCD_EVENT_* variables "
        "(ISCCD_EVENT_TYPE, ISCCD_EVENT_SEQ, ISCCD_EVENT_PATH, ISCCD_EVENT_ROOT, ...; a member "
        "of an object member joined by _, ISCCD_EVENT_PREVIOUS_ISCC), ISCCD_HOOK_STORE and "
        "ISCCD_HOOK_REDELIVERED (1 when a command may have run for this event before). No "
        "event field is ever part of its command line; for a pipeline, run a script, or "
        "sh -c '... \"$ISCCD_EVENT_PATH\" ...' with every variable in double quotes. Failures "
        "are reported on stderr with the event's seq. With --cursor FILE an event is recorded "
        "as handled once its command succeeded, and the next start resumes after the last "
        "one handled: none is missed, none handled is run again; one whose command was "
        "running when the subscriber was killed is run again, with ISCCD_HOOK_REDELIVERED=1.",
    )
    hooks.add_argument(
        "--exec", metavar="CMD", help="run CMD for each event (instead of printing it)"
    )
    hooks.add_argument(
        "--cursor",
        type=Path,
        metavar="FILE",
        help="keep the last event handled and the store's identity in FILE, and resume from "
        "it; --since and --store only say where a new cursor starts",
    )
    hooks.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        help="end a command that runs longer (SIGTERM to its process group, SIGKILL 5 s "
        "later), a failure (default 60; 0: no limit)",
    )
    hooks.add_argument(
        "--jobs",
        type=_jobs,
        metavar="N",
        help="run up to N commands at once (default 1: one at a time, in the events' order)",
    )
    hooks.add_argument(
        "--on-failure",
        choices=("stop", "skip", "retry"),
        help="after a command failed: stop (default: exit 75 before the event, which the "
        "next start runs again), skip it, or retry it with growing pauses until it succeeds",
    )


def _seconds(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 86_400 * 7:
        raise argparse.ArgumentTypeError(f"{text} is not 0 to 604800 seconds")
    return value


def _jobs(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 256:
        raise argparse.ArgumentTypeError(f"{text} is not 1 to 256")
    return value


def run_subscribe(args: argparse.Namespace) -> int:
    """``isccd subscribe``."""

    as_json = output_format(args) != "text"
    roots = [os.path.realpath(r) for r in args.roots] if args.roots else None
    hook_options = {"--cursor": args.cursor, "--timeout": args.timeout, "--jobs": args.jobs}
    hook_options["--on-failure"] = args.on_failure
    if args.exec is not None:
        if args.json:
            return _usage("--json and --exec: the output is the commands'")
        from isccd.cli import hooks  # noqa: PLC0415 -- only --exec needs it

        args.timeout = 60.0 if args.timeout is None else args.timeout
        args.jobs = args.jobs or 1
        args.on_failure = args.on_failure or "stop"
        return hooks.run(args, roots)
    if given := [name for name, value in hook_options.items() if value is not None]:
        return _usage(f"{', '.join(given)} without --exec")
    client: Client | None = None
    status = EXIT_FAILURE
    try:
        with _sigterm_stops():
            client = open_client(args)
            result = client.subscribe(
                args.since, types=args.types, roots=roots, store=args.store, fleet=args.fleet
            )
            if not result.complete:
                print(
                    f"isccd: events {result.since + 1} to {result.first - 1} were pruned from "
                    "the log; what they reported is missing from this stream",
                    file=sys.stderr,
                )
            status = _stream(client, as_json, sys.stdout, fleet=args.fleet)
    except (DaemonUnavailableError, ProtocolError, ConfigError) as exc:
        status = fail(exc)
    except (KeyboardInterrupt, _Stop):
        status = EXIT_OK
    except BrokenPipeError:
        # Whoever read our output is gone (`isccd subscribe | head`): a normal way to stop.
        # Point stdout at /dev/null so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = EXIT_OK
    finally:
        if client is not None:
            client.close()
            if client.last_seq is not None:
                store = f" store {client.store}" if client.store else ""
                print(f"isccd: last seq {client.last_seq}{store}", file=sys.stderr)
    return status


def _usage(message: str) -> int:
    print(f"isccd subscribe: {message}", file=sys.stderr)
    return EXIT_USAGE


def _stream(client: Client, as_json: bool, out: TextIO, *, fleet: bool = False) -> int:
    from isccd.protocol import event_to_wire  # noqa: PLC0415 - the parser does without messages

    for event in client.events():
        if as_json:
            print_json(event_to_wire(event), stream=out)
        else:
            out.write(format_event(event, fleet=fleet) + "\n")
            out.flush()
        if event.type is EventType.SUBSCRIBER_LAGGED:
            print(
                f"isccd: this subscriber read too slowly and was disconnected; resume with "
                f"--since {event.seq}" + (f" --store {client.store}" if client.store else ""),
                file=sys.stderr,
            )
            return EXIT_FAILURE
    print("isccd: the daemon closed the connection", file=sys.stderr)
    return EXIT_FAILURE


def format_event(event: Event, *, fleet: bool = False) -> str:
    """One readable line for an event: local time, seq, type, path, and the details; the
    host of the path with ``fleet``, and of another file whenever it is another host."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event.time))
    subject = shown(event.path or event.root or "-")
    if fleet and event.host:
        subject = f"{event.host}:{subject}"
    text = f"{stamp} #{event.seq} {event.type.value:<17} {subject}"
    details = _details(event.data, event.host)
    return f"{text}  {details}" if details else text


#: Members shown in another way, or too long for one line.
_NOT_INLINE = frozenset({"others", "count", "unit", "distance", "threshold", "units", "issues"})


def _details(data: Mapping[str, Any], host: str) -> str:
    parts = []
    others = data.get("others")
    if isinstance(others, list):
        unit, threshold = data.get("unit"), data.get("threshold")
        for other in others:
            if isinstance(other, dict):
                distance = other.get("distance", data.get("distance"))
                measure = f" ({unit} {distance}/{threshold})" if distance is not None else ""
                where = other.get("host")
                where = f"{where}:" if where and where != host else ""
                parts.append(f"~ {where}{shown(str(other.get('path')))}{measure}")
        count = data.get("count")
        if isinstance(count, int) and count > len(others):
            parts.append(f"and {count - len(others)} more")
    issues = data.get("issues")
    if isinstance(issues, list):
        parts += [shown(str(i.get("reason"))) for i in issues if isinstance(i, dict)][:3]
    # A unit is shown with each other file's distance; an event without one (``dup.resolved``:
    # which unit's relation ended, the files may still be near by another) names it inline.
    inline = _NOT_INLINE - {"unit"} if "threshold" not in data else _NOT_INLINE
    for key, value in data.items():
        if key not in inline and isinstance(value, str | int | float | bool):
            parts.append(f"{key}={shown(value) if isinstance(value, str) else value}")
    return "  ".join(parts)


# -- rescan -----------------------------------------------------------------------------------


def run_rescan(args: argparse.Namespace) -> int:
    """``isccd rescan``."""
    from isccd.cli.rescan import wait  # noqa: PLC0415 -- only --wait needs it
    from isccd.client import Client  # noqa: PLC0415

    path = os.path.realpath(args.path) if args.path else None
    try:
        socket = find_daemon(args).socket
        with open_client(args) as client:
            since = client.status().last_seq
            result = client.rescan(path)
        changes = wait(lambda: Client(socket), path, since) if args.wait else None
    except (DaemonUnavailableError, ProtocolError, ConfigError) as exc:
        return fail(exc)
    if output_format(args) != "text":
        waited = {"seq": changes.seq, "changes": changes.counts} if changes else {}
        print_json({**to_wire(result), **waited})
    else:
        roots = ", ".join(shown(r) for r in result.roots) or "no roots"
        print(f"rescan started: {roots}")
        if changes is not None:
            print(f"indexed up to seq {changes.seq}: {changes.summary()}")
    return EXIT_OK


# -- run --------------------------------------------------------------------------------------


def _register_run(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = subparsers.add_parser(
        "run",
        help="run the daemon in the foreground",
        description="Watch the given folders, index every file's ISCC codes, and report exact "
        "and near duplicates to subscribers on the socket. Settings come from --config FILE "
        "(default: $CONFIGURATION_DIRECTORY/isccd.toml, /etc/isccd/isccd.toml as root, "
        "~/.config/isccd/isccd.toml otherwise, when it exists), ISCCD_* environment variables "
        "and these options, which win. SIGHUP reloads the configuration; SIGTERM and SIGINT "
        "stop the daemon in order.",
        epilog="exit status: 0 after an orderly stop; 1 when the socket cannot be created; 73 "
        "when the state directory cannot be created or written (a read-only file system); 74 "
        "when the store cannot be opened; 78 for an invalid configuration.",
    )
    run.add_argument(
        "--watch",
        action="append",
        type=Path,
        metavar="DIR",
        help="a folder to watch (repeatable; replaces the configured roots)",
    )
    run.add_argument(
        "--state",
        type=Path,
        metavar="DIR",
        help="where the store lives (default: $STATE_DIRECTORY, /var/lib/isccd as root, "
        "$XDG_STATE_HOME/isccd otherwise)",
    )
    add_socket_option(run)
    run.add_argument("--config", type=Path, metavar="FILE", help="a TOML configuration file")
    run.set_defaults(handler=run_daemon)


def run_daemon(args: argparse.Namespace) -> int:
    """``isccd run``."""
    # The collector's pace while the daemon starts (its imports included) and indexes, as for
    # a scan; what exists when it first serves lives as long as it does.
    with fewer_collections() as collector:
        return _run_daemon(args, functools.partial(collector.settled, collect=True))


def _run_daemon(args: argparse.Namespace, on_ready: Callable[[], None]) -> int:
    from isccd.daemon.run import main  # noqa: PLC0415 - the other commands need none of it

    overrides: dict[str, dict[str, object]] = {}
    if args.watch:
        overrides["watch"] = {"roots": [p.absolute() for p in args.watch]}
    if args.state:
        overrides["store"] = {"state_dir": args.state.absolute()}
    if args.socket:
        overrides["server"] = {"socket": args.socket.absolute()}
    return main(args.config, overrides, on_ready=on_ready)
