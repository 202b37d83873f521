"""The runs of a shared database's event log: telling a log that went backwards (the database
restored from an older dump) from one that only went on, and giving it a new identity when it
did.

A SQLite store starts a new run of its log each time a writer opens it (:mod:`isccd.store.
database`). A database a fleet shares cannot: daemons open it all the time, and a run per
opening would refuse resumes across every ordinary restart of any host. Nor does the database
know it was restored: a dump carries its identity, its sequence and each host's last seq.

What it cannot know, each writer knows: the log it followed. It remembers the last run it saw
and the highest seq committed under it (a :class:`LogMark`, in memory and, between its runs, in
a file of its own state directory, which a restore of the database does not touch). When it
connects (at start, and again after losing its session) it compares (:func:`check_log`):

- the database is another one (its ``store_id`` differs), or the writer knows nothing yet: the
  log is taken as it is;
- the run it knew is the current one, and the log's last seq is at least what it saw, and its
  own host's last seq at least what it committed: it went on; below either: it went
  backwards (its own events lost tell it even after other hosts, or a writer that knew
  nothing, logged past what it saw);
- the run it knew is an earlier run of the database's: another writer began the current one
  (after it found the log had gone backwards): the log is taken as it is;
- the run it knew is unknown to the database: the database went back to a dump made before
  that run began: it went backwards.

A log that went backwards gets a new run, which starts after this host's last event in the
restored log (the events below it are the dump's: sequence order is commit order). It is
recorded as SQLite records runs (``run:<uuid>`` = ``"<ordinal> <first seq>"``, and ``run`` =
the current one, under the empty host name, the database's own), in one transaction under the
writers' lock (:data:`~isccd.store.pgschema.EVENTS_LOCK`), which is read again once held: two
writers finding it at once make one run, the second seeing the first's as a later run than the
one it knew.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from isccd.store.base import IDENTITY_PROPERTY
from isccd.store.database import RUN_PROPERTY, runs_of
from isccd.store.pgschema import EVENTS_LOCK, LOCK_SPACE

_log = logging.getLogger("isccd.store")


@dataclass(frozen=True, slots=True)
class LogMark:
    """How far a writer followed a shared database's log.

    Attributes:
        store: The database's identity (``store_id``, kept for its life).
        run: The run of its log the writer last saw (the log's identity then).
        seq: The highest seq the writer saw committed under ``run``.
        own: The highest seq it saw committed about its own host (``hosts.last_seq``): a
            restore that lost its events is told even once other hosts have logged past
            ``seq`` in the restored log.
    """

    store: str
    run: str
    seq: int
    own: int = 0

    def past(self, seq: int, own: int = 0) -> LogMark:
        """This mark, moved up to ``seq`` and ``own`` where they are further."""
        if seq <= self.seq and own <= self.own:
            return self
        return LogMark(self.store, self.run, max(seq, self.seq), max(own, self.own))


#: The most a marks file may hold: a few hundred bytes a database; a larger file is no file of
#: marks.
MARK_BYTES = 1 << 20


def _seq(value: object) -> int:
    """A sequence number as saved: an integer of PostgreSQL's ``bigint``, not a bool, float
    or string."""
    if type(value) is not int or not 0 <= value < 1 << 63:
        raise ValueError(f"not a sequence number: {value!r}")
    return value


def _read_small(path: Path) -> bytes:
    """The bytes of the regular file at ``path`` (not through a final symbolic link, never
    blocking on a FIFO or a device), at most :data:`MARK_BYTES`.

    Raises:
        OSError: It is missing, unreadable, not a regular file, or larger.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MARK_BYTES:
            raise OSError(f"{path}: not a file of marks")
        return os.read(fd, MARK_BYTES + 1)[:MARK_BYTES]
    finally:
        os.close(fd)


def read_mark(path: Path) -> dict[str, LogMark]:
    """The marks saved in ``path``, by database identity (none when it is missing or not
    readable as one: the log is then taken as it is, as by a writer new to it). A file that
    is not one (a FIFO, a link, a large or deeply nested document, numbers out of range)
    counts as missing."""
    try:
        found = json.loads(_read_small(path))
        return {
            store: LogMark(store, str(mark["run"]), _seq(mark["seq"]), _seq(mark.get("own", 0)))
            for store, mark in found["logs"].items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return {}


def save_mark(path: Path, mark: LogMark) -> None:
    """Save ``mark`` in ``path`` beside the marks of other databases, atomically (a file
    written whole, then renamed over the old one).

    Raises:
        OSError: The file cannot be written.
    """
    marks = read_mark(path)
    marks[mark.store] = mark
    text = json.dumps(
        {"logs": {m.store: {"run": m.run, "seq": m.seq, "own": m.own} for m in marks.values()}}
    )
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o750)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def check_log(conn: psycopg.Connection[Any], marks: Mapping[str, LogMark], host: str) -> LogMark:
    """Compare the database's log with what this writer knew of it (see the module
    docstring); give it a new run if it went backwards.

    Args:
        conn: A session outside any transaction.
        marks: What the writer knew of the logs of the databases it wrote, by identity.
        host: The writer's host name (for the warning).

    Returns:
        What the writer knows of the log now.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_SPACE, EVENTS_LOCK))
        rows = conn.execute(
            "SELECT name, value FROM properties WHERE host = '' "
            "AND (name = %s OR name = %s OR name LIKE 'run:%%')",
            (IDENTITY_PROPERTY, RUN_PROPERTY),
        ).fetchall()
        found = conn.execute(
            "SELECT coalesce(max(last_seq), 0), coalesce(max(last_seq) FILTER "
            "(WHERE name = %s), 0) FROM hosts",
            (host,),
        ).fetchone()
        last, own = (int(found[0]), int(found[1])) if found else (0, 0)
        named = {str(name): str(value) for name, value in rows}
        store = named.get(IDENTITY_PROPERTY)
        if store is None:
            return LogMark("", "", last, own)  # not an isccd log yet; identity will say so
        current = named.get(RUN_PROPERTY, store)
        known = marks.get(store)
        runs = runs_of((n, v) for n, v in named.items() if n.startswith("run:"))
        if known is None:
            return LogMark(store, current, last, own)
        if known.run == current:
            if last >= known.seq and own >= known.own:
                return known.past(last, own)
        elif known.run in runs:
            return LogMark(store, current, last, own)  # another writer began the current run
        if not runs:  # the first run begun: the database's identity named the log until now
            runs[store] = (0, 1)
            conn.execute(
                "INSERT INTO properties (host, name, value) VALUES ('', %s, '0 1')",
                (f"run:{store}",),
            )
        # Where the run it knew ends now: no further than this host's last event in the
        # restored log. Sequence order is commit order, so every event below it was
        # committed before the dump was made, and is the dump's; those above may be events a
        # writer new to the log (another host's) logged since, under reused numbers.
        end = min(last, own) if own else last
        run = str(uuid.uuid4())
        conn.execute(
            "INSERT INTO properties (host, name, value) VALUES ('', %s, %s)",
            (f"run:{run}", f"{max(o for o, _ in runs.values()) + 1} {end + 1}"),
        )
        conn.execute(
            "INSERT INTO properties (host, name, value) VALUES ('', %s, %s) "
            "ON CONFLICT (host, name) DO UPDATE SET value = excluded.value",
            (RUN_PROPERTY, run),
        )
    _log.warning(
        "fleet_log_went_backwards",
        extra={
            "host": host,
            "known_run": known.run,
            "known_seq": known.seq,
            "known_own": known.own,
            "own_seq": own,
            "run_was": current,
            "last_seq": last,
            "ended_at": end,
            "run": run,
        },
    )
    return LogMark(store, run, last, own)


def log_end(rows: list[tuple[str, str]], store: str, identity: str, last: int) -> int | None:
    """The last seq of the run ``identity`` (see :meth:`isccd.store.base.Store.log_end`)
    given the database's ``run:`` properties, its identity and its log's last seq."""
    runs = runs_of(rows)
    if not runs:
        return last if identity == store else None
    if identity not in runs:
        return None
    ordinal = runs[identity][0]
    later = [first for number, first in runs.values() if number == ordinal + 1]
    return later[0] - 1 if later else last
