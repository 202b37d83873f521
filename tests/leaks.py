"""What a test leaves running: threads, and processes it started.

A test that ends while a thread or a child process it started still runs has leaked it: a
component was not closed, or a test did not wait for what it started. Such leaks make later
tests slow or flaky far from their cause, so every test is checked (``tests/conftest.py``).

Processes are found in ``/proc`` (Linux only, as isccd): the children of the test process, and
the children of multiprocessing's fork server, which forks the hashing workers. The fork server
and multiprocessing's resource tracker are started when first needed and shared by the whole
process (an idle pool stops the fork server, the next starts it again); they are not leaks.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

#: The command lines of multiprocessing's process-wide helpers (``python -c 'from
#: multiprocessing.forkserver import main; ...'``).
_SINGLETONS = (
    "from multiprocessing.forkserver import main",
    "from multiprocessing.resource_tracker",
)
_FORK_SERVER = _SINGLETONS[0]

#: Processes that a fixture of a wider scope than one test owns and ends (a module's daemons):
#: a test may start one again, and it lives on into the next test by design.
_OWNED_WIDER: set[int] = set()


def owned_wider(pid: int) -> None:
    """Let the process ``pid`` outlive the test that started it: a fixture of a wider scope
    owns it and ends it (and then calls :func:`released`)."""
    _OWNED_WIDER.add(pid)


def released(pid: int) -> None:
    """``pid`` has ended: a later process with the same number is a test's again."""
    _OWNED_WIDER.discard(pid)


@dataclass(frozen=True, slots=True)
class Process:
    """A running process, told apart from a later one with the same pid by its start time."""

    pid: int
    start: int
    cmdline: str

    def __str__(self) -> str:
        return f"process {self.pid} ({self.cmdline[:200]})"

    def running(self) -> bool:
        """True until the process exits (a zombie has exited)."""
        found = _read(self.pid)
        return found is not None and found.start == self.start


@dataclass(frozen=True, slots=True)
class Running:
    """The threads and processes running at one moment."""

    threads: frozenset[threading.Thread]
    processes: frozenset[Process]

    @classmethod
    def now(cls) -> Running:
        """What runs now."""
        return cls(frozenset(threading.enumerate()), frozenset(_processes()))

    def leaked_since(self, before: Running, grace: float) -> list[str]:
        """What runs now and did not in ``before``, given ``grace`` seconds to end (threads
        are joined, processes polled); each named for the failure message."""
        deadline = time.monotonic() + grace
        threads = [t for t in self.threads if t not in before.threads]
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        processes = [
            p for p in self.processes if p not in before.processes and p.pid not in _OWNED_WIDER
        ]
        while any(p.running() for p in processes) and time.monotonic() < deadline:
            time.sleep(0.01)  # no way to wait for a process that is not our child but to poll
        return [
            *(f"thread {t.name!r} ({t!r})" for t in threads if t.is_alive()),
            *(str(p) for p in processes if p.running()),
        ]


def _processes() -> list[Process]:
    """The running children of this process and of the fork server, but the two helpers."""
    children = [p for p in map(_read, _children(os.getpid())) if p is not None]
    found = []
    for child in children:
        if _FORK_SERVER in child.cmdline:
            # Forked without exec: a worker's command line is the server's.
            found += [
                Process(p.pid, p.start, "forked by multiprocessing's fork server")
                for p in map(_read, _children(child.pid))
                if p is not None
            ]
        elif not any(helper in child.cmdline for helper in _SINGLETONS):
            found.append(child)
    return found


def descendants(pid: int) -> list[tuple[int, int, str, str]]:
    """Every process below ``pid``, zombies included, each before its own children: ``(pid,
    parent, state, command line)``, the state as ``/proc/PID/stat`` gives it (``Z`` for a
    zombie)."""
    found = []
    for child in _children(pid):
        try:
            stat = Path(f"/proc/{child}/stat").read_text()
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError):  # ended and reaped meanwhile
            continue
        state = stat.rsplit(")", 1)[1].split()[0]
        command = cmdline.replace(b"\0", b" ").decode(errors="replace")
        found.append((child, pid, state, command))
        found += descendants(child)
    return found


def by_kind(pid: int) -> dict[str, list[int]]:
    """The processes below ``pid`` by kind: multiprocessing's ``fork server`` and ``resource
    tracker``, the ``workers`` (the fork server's children) and any ``other``. A zombie among
    them fails the test: every process that ended must have been waited for."""
    kinds: dict[str, list[int]] = {
        "fork server": [],
        "resource tracker": [],
        "workers": [],
        "other": [],
    }
    servers = set()
    for child, parent, state, cmdline in descendants(pid):
        assert state != "Z", f"zombie {child}: {cmdline}"
        if parent in servers:
            kinds["workers"].append(child)
        elif _FORK_SERVER in cmdline:
            servers.add(child)
            kinds["fork server"].append(child)
        elif _SINGLETONS[1] in cmdline:
            kinds["resource tracker"].append(child)
        else:
            kinds["other"].append(child)
    return kinds


def _children(pid: int) -> list[int]:
    """The children of ``pid``: each thread lists those it forked."""
    pids = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except FileNotFoundError:
        return []
    for task in tasks:
        try:
            pids += [int(p) for p in (task / "children").read_text().split()]
        except FileNotFoundError:  # the thread ended meanwhile
            continue
    return pids


def _read(pid: int) -> Process | None:
    """``pid`` as it runs now; ``None`` when gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The fields after the command name, which is in parentheses and may hold anything.
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":
        return None
    return Process(pid, int(fields[19]), cmdline.replace(b"\0", b" ").decode(errors="replace"))
