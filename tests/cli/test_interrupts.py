"""SIGINT and SIGTERM for a command that writes a store (:mod:`isccd.cli.interrupts`): raised at
once outside a held section; inside, recorded, the scan's task cancelled once on its loop, and
raised as the section is left. Real signals, sent to this process."""

from __future__ import annotations

import asyncio
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from isccd.cli.interrupts import Interrupts


@pytest.fixture(autouse=True)
def _sigint_as_python_starts_with_it() -> Iterator[None]:
    """SIGINT raising KeyboardInterrupt, as in a command started from a terminal, even when
    the tests were started with it ignored (in the background of a shell)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def _send(sig: signal.Signals) -> None:
    os.kill(os.getpid(), sig)


#: The system calls an event loop waits in (``epoll_wait``, ``epoll_pwait``, ``epoll_pwait2``).
_EPOLL_WAITS = {"x86_64": {"232", "281", "441"}, "aarch64": {"22", "441"}}


def _waits_in_epoll(thread: threading.Thread) -> bool:
    """Whether ``thread`` is in a system call that waits on an epoll set now."""
    syscall = Path(f"/proc/self/task/{thread.native_id}/syscall").read_text().split()
    return bool(syscall) and syscall[0] in _EPOLL_WAITS[platform.machine()]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_outside_a_held_section_a_signal_interrupts_at_once(sig: signal.Signals) -> None:
    reached = False
    with Interrupts(), pytest.raises(KeyboardInterrupt):
        _send(sig)
        reached = True
    assert not reached


def test_inside_a_held_section_the_signal_waits_for_its_end_and_is_raised_once() -> None:
    done = []
    with Interrupts() as interrupts:
        with pytest.raises(KeyboardInterrupt), interrupts.held():
            _send(signal.SIGTERM)
            done.append("after the signal")
            with interrupts.held():  # nested: only the outermost raises
                _send(signal.SIGINT)
                done.append("nested")
            done.append("end of the section")
        with interrupts.held():  # a later section raises only for a later signal
            done.append("later section")
    assert done == ["after the signal", "nested", "end of the section", "later section"]


def test_the_previous_dispositions_come_back() -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    with Interrupts():
        assert signal.getsignal(signal.SIGTERM) != before[signal.SIGTERM]
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_the_first_signal_cancels_the_task_and_a_second_lets_its_cleanup_finish() -> None:
    steps = []

    async def scan(interrupts: Interrupts) -> None:
        with interrupts.cancelling():
            asyncio.get_running_loop().call_soon(_send, signal.SIGINT)
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                steps.append("cancelled")
                _send(signal.SIGTERM)  # while cleaning up: not a second cancel
                await asyncio.to_thread(lambda: None)  # a cleanup that awaits
                steps.append("cleaned up")
                raise

    with Interrupts() as interrupts, pytest.raises(KeyboardInterrupt), interrupts.held():
        asyncio.run(scan(interrupts))
    assert steps == ["cancelled", "cleaned up"]


def test_a_signal_before_the_loop_cancels_the_task_as_it_starts() -> None:
    reached = False

    async def scan(interrupts: Interrupts) -> None:
        nonlocal reached
        with interrupts.cancelling():
            # The first await, where the cancel lands: without it, a wait that ends the test.
            await asyncio.wait_for(asyncio.Event().wait(), timeout=60)
            reached = True

    with Interrupts() as interrupts, pytest.raises(KeyboardInterrupt), interrupts.held():
        _send(signal.SIGTERM)
        with pytest.raises(asyncio.CancelledError):
            asyncio.run(scan(interrupts))
    assert not reached


@pytest.mark.skipif(platform.machine() not in _EPOLL_WAITS, reason="epoll's numbers unknown")
def test_a_signal_another_thread_takes_wakes_the_loop() -> None:
    # The kernel may hand a process's signal to any of its threads: Python's handler runs in
    # the main thread, which must be woken from its wait for it (here, a wait with nothing
    # else to wake it for a minute).
    outcome: list[str] = []
    main = threading.main_thread()

    def signal_this_thread_once_the_loop_waits() -> None:
        deadline = time.monotonic() + 60  # a loop that never waits: the test fails below
        while not _waits_in_epoll(main) and time.monotonic() < deadline:
            pass
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)

    async def scan(interrupts: Interrupts) -> None:
        with interrupts.cancelling():
            other = threading.Thread(target=signal_this_thread_once_the_loop_waits)
            # Unwoken, the loop would wait for this, then take the signal after it.
            asyncio.get_running_loop().call_later(60, outcome.append, "not woken")
            other.start()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                outcome.append("cancelled")
                raise
            finally:
                other.join()

    with Interrupts() as interrupts, pytest.raises(KeyboardInterrupt), interrupts.held():
        asyncio.run(scan(interrupts))
    assert outcome == ["cancelled"]


def test_a_signal_the_command_started_with_ignored_stays_ignored() -> None:
    # A scan a shell started in the background (`isccd scan DIR &`) ignores the terminal's
    # Ctrl-C, which is meant for the job in the foreground.
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with Interrupts() as interrupts, interrupts.held():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            _send(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


def test_an_error_in_a_held_section_is_raised_as_it_is() -> None:
    # A store that cannot commit as the stopped scan closes it: the command says so, rather
    # than only that it was interrupted.
    with Interrupts() as interrupts:
        with pytest.raises(OSError, match="disk full"), interrupts.held():
            _send(signal.SIGTERM)
            raise OSError("disk full")
        with interrupts.held():  # the error answered the signal
            pass


#: A held section that takes three signals (the first two as a stop would).
_THREE_SIGNALS = """
import os, signal
from isccd.cli.interrupts import Interrupts
with Interrupts() as interrupts, interrupts.held():
    for _ in range(3):
        os.kill(os.getpid(), signal.SIGTERM)
        print("still here", flush=True)
"""


def test_a_third_signal_ends_the_process_at_once() -> None:
    # For a stop that waits on what does not end (a stalled disk): no SIGKILL needed.
    done = subprocess.run(
        [sys.executable, "-c", _THREE_SIGNALS],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 130
    assert done.stdout.splitlines() == ["still here", "still here"]
    assert done.stderr == "isccd: interrupted again: stopping at once\n"


#: A command done with its signals, then exiting: two signals.
_EXITING = """
import os, signal
from isccd.cli.interrupts import Interrupts
with Interrupts(exiting=True):
    pass
for _ in range(2):
    os.kill(os.getpid(), signal.SIGTERM)
    print("exiting", flush=True)
"""


def test_a_command_exiting_lets_a_first_signal_go_and_ends_at_a_second() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _EXITING], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 130
    assert done.stdout.splitlines() == ["exiting"]
    assert done.stderr == "isccd: interrupted again: stopping at once\n"
