"""The fork server the hashing workers are started from.

It is multiprocessing's fork server, one per process: a process that imports the workers' code and
loads the compiled kernels once (about 0.2 s of CPU: numpy, llvmlite and the kernels' machine
code), then forks each worker, so that every worker shares those pages and starts warm (see
:mod:`isccd.hashing.pool`).

This module imports nothing of isccd and nothing heavy, so that a command about to hash can
start the fork server first thing (:func:`start_early`): its start then passes on another core
while the command imports its own code, reads its configuration and opens the store.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Iterator, Mapping
from multiprocessing import forkserver, resource_tracker, spawn
from pathlib import Path
from typing import Any

#: What the fork server imports before it forks: the workers' code (:mod:`isccd.hashing.worker`,
#: which imports the hashing code) and the compiled kernels, loaded from their machine code
#: (:mod:`isccd.hashing.warm`). A worker forked from it imports nothing more before its first
#: file: each import left to the workers is paid once per worker, and at every restart. Nothing
#: of the pool's side (asyncio, structlog) is loaded, and neither is Pillow: a worker loads it
#: with its first image (about 15 ms), so that a scan without images does not wait for it
#: before its first file.
PRELOAD = ("isccd.hashing.worker", "isccd.hashing.warm")

#: The directory holding the package this process runs (``isccd/`` is in it).
_PACKAGE_PARENT = Path(__file__).resolve().parent.parent


def context() -> Any:
    """multiprocessing's fork server context, its server set to import :data:`PRELOAD`.

    Start its processes inside :func:`import_from_here`: the fork server starts with the first.
    Typed loosely: each multiprocessing context has its own ``Process`` class.
    """
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(PRELOAD))
    return ctx


class _Environment:
    """The variables :func:`import_from_here` sets, and what they were before, while any
    thread is inside it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.inside = 0
        self.saved: dict[str, str | None] = {}


_ENVIRONMENT = _Environment()


@contextlib.contextmanager
def import_from_here() -> Iterator[None]:
    """While inside, the fork server (and the resource tracker) multiprocessing starts import
    isccd from where this process does, whatever their working directory holds. Reentrant, and
    safe from several threads at once (starting workers side by side).

    multiprocessing starts both with ``python -c``, which puts the working directory first on
    ``sys.path``: a folder named ``isccd`` there (a clone, seen from the directory above it) is
    imported in place of the package, and every worker dies before it can start. Inside,
    ``PYTHONSAFEPATH`` (Python 3.11) leaves the working directory out; when this process found
    the package in its own first ``sys.path`` entry (``python -m isccd`` run in a clone), that
    directory is named in ``PYTHONPATH`` too, by its absolute path.

    They are set in this process's environment until the last thread leaves: what it starts
    meanwhile inherits them (the fork server, then its workers and the tools they run, none of
    which is a Python interpreter). Afterwards the environment is as it was, for whatever else
    the process starts (an application using the hashing workers).
    """
    env = _ENVIRONMENT
    with env.lock:
        if not env.inside:
            changes = _import_variables(os.environ)
            env.saved = {name: os.environ.get(name) for name in changes}
            os.environ.update(changes)
        env.inside += 1
    try:
        yield
    finally:
        with env.lock:
            env.inside -= 1
            if not env.inside:
                for name, value in env.saved.items():
                    if value is None:
                        os.environ.pop(name, None)
                    else:
                        os.environ[name] = value


def _import_variables(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables that make an interpreter import isccd as this process does."""
    changes = {} if environ.get("PYTHONSAFEPATH") else {"PYTHONSAFEPATH": "1"}
    if not sys.path or sys.flags.safe_path or Path(sys.path[0]).resolve() != _PACKAGE_PARENT:
        return changes
    first = str(_PACKAGE_PARENT)
    path = environ.get("PYTHONPATH", "")
    if first not in path.split(os.pathsep):
        changes["PYTHONPATH"] = os.pathsep.join(p for p in (first, path) if p)
    return changes


def import_problem(timeout: float = 60.0) -> str | None:
    """Why the fork server cannot import what it preloads, if it cannot (blocking).

    The fork server ignores a preload that fails to import (multiprocessing's choice), and each
    worker forked from it then dies on its first import, its traceback on the standard error
    only: this is what the error saying that the workers cannot start adds. It is the last line
    of what an interpreter started as the fork server is (the same executable, flags,
    environment and working directory) prints when it imports :data:`PRELOAD`.

    Returns:
        The error (``ModuleNotFoundError: No module named 'numba'``), or ``None`` when the
        preload imports (the workers died of something else) or the probe could not run.
    """
    import subprocess  # noqa: PLC0415 - only when the workers could not start

    # The flags multiprocessing passes to the fork server's interpreter (a private helper of
    # subprocess's, which multiprocessing.util uses too).
    flags: list[str] = subprocess._args_from_interpreter_flags()  # type: ignore[attr-defined]
    code = "; ".join(f"import {module}" for module in PRELOAD)
    try:
        with import_from_here():
            done = subprocess.run(  # noqa: S603 - this interpreter, our own code
                [spawn.get_executable(), *flags, "-c", code],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout,
                check=False,
            )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode == 0:
        return None
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    return lines[-1] if lines else f"exit status {done.returncode}"


def start_early() -> bool:
    """Start the fork server now, without waiting for it, when this process may run on more
    than one CPU.

    On one CPU its start would only compete with the command's own; and a scan that finds
    nothing to hash would pay it for nothing (elsewhere it costs that scan CPU time on another
    core, not time). A fork server that cannot start is not reported here: the workers' start
    tries again and says why.

    Returns:
        Whether the fork server is starting (or running).
    """
    if len(os.sched_getaffinity(0)) < 2:
        return False
    context()
    try:
        with import_from_here():
            forkserver.ensure_running()
    except OSError:
        return False
    return True


def stop() -> bool:
    """Stop the fork server, and wait for it to exit (blocking); the next worker started
    starts another.

    It exits once every process holding its "alive" pipe has closed it: this process and the
    workers forked from it, which must be gone already. ``ForkServer._stop`` is private (the
    standard library's own tests stop the server with it; Python 3.11 to 3.13 have it):
    without it the fork server is kept.

    Returns:
        Whether it could be stopped (``False``: kept, for want of ``ForkServer._stop``).
    """
    server_stop = getattr(forkserver._forkserver, "_stop", None)
    if server_stop is None:
        return False
    server_stop()
    return True


def end() -> None:
    """Stop the fork server at once, and the resource tracker started with it, for a command
    that is done with them (its workers gone).

    Unlike :func:`stop` it does not wait for a fork server still loading what it preloads:
    started early by a command that then hashed nothing, that server would outlive the command
    and hold its output open until it had loaded the kernels for nothing.
    """
    pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    stop()
    tracker_stop = getattr(resource_tracker._resource_tracker, "_stop", None)
    if tracker_stop is not None:
        tracker_stop()
