"""What a hashing worker process runs: the other side of :mod:`isccd.hashing.pool`.

Apart from the pool, which runs on the daemon's event loop, so that this module imports neither
asyncio nor structlog: the fork server the workers start from (:mod:`isccd.forkserver`) imports
this module and what it runs, and nothing of the pool's side (0.12 s of CPU less at every start
of the fork server, measured).
"""

from __future__ import annotations

import multiprocessing.connection
import os
import resource
import signal
from collections.abc import Sequence

from isccd.extract.source import RootDirs
from isccd.hashing import OUT_OF_MEMORY, CodeOptions, compute_record, machine, out_of_memory
from isccd.hashing.wire import Packed, pack
from isccd.model import FileIssue, FileRecord, IssueCode, IssueKind, UnitType


def worker_main(
    conn: multiprocessing.connection.Connection,
    options: CodeOptions,
    memory: int,
    follow_symlinks: bool,
) -> None:
    """The worker process: warm up, bound its memory, then hash the files it is sent, a message
    of one or more at a time, until told to stop. Each answer holds the records of the message's
    files in order, and whether the last one ran out of memory (the daemon replaces the worker
    then: a library that failed an allocation may be left in any state); the files after it are
    not hashed here."""
    # Ctrl-C (and a TERM sent to the process group) reach the workers too; the daemon decides
    # when they stop, and finishes or abandons their files in order.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    from isccd.iscc.kernels import warmup  # noqa: PLC0415 - only worker processes warm up

    warmup()
    if memory:
        _limit_memory(memory)
    # What is wrong with its kernels, if anything, for the pool's log (this side does not log).
    conn.send(("ready", os.getpid(), machine.problem()))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        job_id, files = message
        done, retire = hash_job(files, options, follow_symlinks)
        conn.send((job_id, done, retire))


def hash_job(
    files: Sequence[tuple[str | None, str, frozenset[UnitType] | None]],
    options: CodeOptions,
    follow_symlinks: bool,
) -> tuple[list[Packed], bool]:
    """What a worker does with one message: the records of ``files``, ``(root, path, units)``
    each, in order and packed, and whether the last one ran out of memory (then the files after
    it are not hashed: a library that failed an allocation may be left in any state, so the
    rest of the batch goes to the worker that replaces this one).

    Each root's directory is opened once for the message, not once per file (see
    :class:`isccd.extract.source.RootDirs`).
    """
    done: list[Packed] = []
    with RootDirs() as roots:
        for root, path, units in files:
            try:
                # Opened beneath its root, here in the process that reads it: a path checked
                # by name elsewhere could have been redirected since.
                record = compute_record(
                    path, options, units, root=root, follow_symlinks=follow_symlinks, roots=roots
                )
            except MemoryError:  # outside a stage (a stage reports it as too_large itself)
                record = failed_record(path, OUT_OF_MEMORY, IssueCode.TOO_LARGE)
            except Exception as exc:  # compute_record never raises for a bad file: a bug
                record = failed_record(path, f"internal error: {type(exc).__name__}: {exc}")
            done.append(pack(record))
            if record.issues and out_of_memory(record):
                return done, True
    return done, False


def _limit_memory(memory: int) -> None:
    """Let this process (and the tools it runs) allocate at most ``memory`` bytes of heap and
    private writable mappings (never more than it is already allowed)."""
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        memory = min(memory, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))


def failed_record(path: str, reason: str, code: IssueCode = IssueCode.INTERNAL) -> FileRecord:
    """The record of a file that could not be hashed: no codes, one ``read`` error saying why."""
    return FileRecord(path, None, issues=(FileIssue("read", IssueKind.ERROR, reason, code),))
