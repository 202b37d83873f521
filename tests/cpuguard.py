"""The quick lane's guard: a test not marked ``slow`` that takes more than its CPU budget fails.

The budget (the ``quick_test_cpu_seconds`` ini option, 2 s in ``pyproject.toml``) is CPU time,
not wall time: on a busy machine a test waits for a core, and its wall time says more of the
machine than of the test, while the CPU it uses stays near what it is on an idle one. A test
is charged from the start of its setup to the end of its teardown, for

- this process, all its threads (:func:`time.process_time`);
- its child processes that ended and were waited for (:func:`os.times`), and those that ended
  and were waited for by a process below this one;
- the processes still running below this one (``/proc``): the daemon a test started, the
  hashing workers under multiprocessing's fork server, a PostgreSQL server.

Fixtures shared by many tests (a session's PostgreSQL server, a module's daemon) are set up once,
by whichever test comes first: what their setup costs is not charged to that test. Nor is the
run's one compilation of the kernels (about 4.5 s of CPU, in whichever process first needs
them, a fork server included): a test during which the run's cache (``CACHE_DIRECTORY``) first
came to hold their machine code is not judged. A whole run compiles them while it collects the
tests; a run of one folder may not. The guard is off under any Hypothesis profile but
``default`` (``thorough`` runs many more examples by design), and a test that failed already
is left as it is.

The budget is in seconds of a reference machine (the 2-core kind CI runs on, idle). Machines of
one kind are not equally fast, and a host's neighbours can slow its cores by a factor of three:
the guard times a fixed piece of work (parsing and walking a module, hashing 8 MiB: 0.135 s on
the reference machine under the coverage measurement, the ``quick_test_reference_seconds`` ini
option) when the session starts and again when a test goes over, and scales the budget by how
much slower than the reference that work ran (never below 1, at most :data:`MOST_SLOWER`). A
test that needs more than its budget on the reference machine fails on every machine; one that
fits on it does not fail on a slow one.

A test over the budget fails in its teardown, with what it took; the remedy is to mark it
``@pytest.mark.slow`` or to make it cheaper. ``--cpu-durations=N`` lists the N tests that took
the most CPU (0: every test), as ``--durations`` lists wall time. The hooks are imported by
``tests/conftest.py``; ``-p tests.cpuguard`` loads them into another run (as the guard's own
test does).
"""

from __future__ import annotations

import ast
import hashlib
import os
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest

#: The ini option holding the budget, in CPU seconds.
OPTION = "quick_test_cpu_seconds"
_TICK = os.sysconf("SC_CLK_TCK")
#: The ini option holding what :func:`reference_work` takes on the reference machine, idle.
REFERENCE = "quick_test_reference_seconds"
#: The most the budget is scaled by, however slow the machine: a test that needs more than this
#: many times its budget is too costly wherever it runs.
MOST_SLOWER = 5.0
#: How much slower than the reference machine this one was found to be, at its slowest.
_SLOWER = pytest.StashKey[float]()
#: The CPU count when the test's setup started.
_STARTED = pytest.StashKey[float]()
#: Whether its setup and call passed.
_PASSED = pytest.StashKey[bool]()
#: Whether the run's cache held the kernels' machine code when its setup started.
_COMPILED = pytest.StashKey[bool]()


@dataclass(slots=True)
class _Shared:
    """What shared fixtures took to set up during the current test: CPU seconds, and how many
    are being set up now (one that asks for another while it is set up counts it already)."""

    seconds: float = 0.0
    depth: int = 0


#: What shared fixtures took during the current test.
_SHARED = pytest.StashKey[_Shared]()
#: The name under which a test's teardown report carries what it took, for ``--cpu-durations``:
#: ``(CPU seconds, marked slow, how much slower than the reference this machine was found)``.
#: A report, not this process's state: with the tests in several processes (pytest-xdist), the
#: reports are what reaches the process that prints the summary.
SPENT = "cpu_seconds"


def _children(pid: int | str) -> list[str]:
    """The processes ``pid``'s threads started that are still running."""
    found: list[str] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:  # it has just ended
        return found
    for task in tasks:
        try:
            found += (task / "children").read_text().split()
        except OSError:
            continue
    return found


def _tree_ticks(pid: str) -> int:
    """Clock ticks of CPU of ``pid``, of the children it waited for, and of the processes still
    running below it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    # utime, stime, cutime and cstime: fields 14-17, after the name in parentheses.
    fields = stat.rpartition(")")[2].split()
    own = sum(int(v) for v in fields[11:15])
    return own + sum(_tree_ticks(child) for child in _children(pid))


def cpu_seconds() -> float:
    """CPU seconds this process and the processes below it have used so far (see the module
    docstring for what is counted)."""
    ended = os.times()
    below = sum(_tree_ticks(child) for child in _children(os.getpid()))
    return time.process_time() + ended.children_user + ended.children_system + below / _TICK


def reference_work() -> float:
    """CPU seconds this process took for a fixed piece of work like a quick test's: parsing and
    walking this module forty times, and hashing 8 MiB."""
    source = Path(__file__).read_text(encoding="utf-8")
    started = time.process_time()
    for _ in range(40):
        for _node in ast.walk(ast.parse(source)):
            pass
    hashlib.sha256(bytes(8 << 20)).digest()
    return time.process_time() - started


def slower(config: pytest.Config) -> float:
    """How much slower than the reference machine this one is now, at its slowest yet (the best
    of three timings, so that one interruption does not count), between 1 and
    :data:`MOST_SLOWER`."""
    now = min(reference_work() for _ in range(3)) / float(config.getini(REFERENCE))
    found = min(MOST_SLOWER, max(1.0, now, config.stash.get(_SLOWER, 1.0)))
    config.stash[_SLOWER] = found
    return found


def pytest_sessionstart(session: pytest.Session) -> None:
    if _budget(session.config):
        slower(session.config)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        OPTION,
        "CPU seconds a test not marked slow may take (its processes included); 0: no limit",
        default="0",
    )
    parser.addini(
        REFERENCE,
        "CPU seconds the guard's reference work takes on the machine the budget is set for",
        default="0.135",
    )
    parser.addoption(
        "--cpu-durations",
        type=int,
        metavar="N",
        help="list the N tests that took the most CPU, their processes included (0: all)",
    )


def _budget(config: pytest.Config) -> float:
    if os.environ.get("HYPOTHESIS_PROFILE", "default") != "default":
        return 0.0
    return float(config.getini(OPTION))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    item.config.stash[_SHARED] = _Shared()
    item.stash[_COMPILED] = _kernels_cached()
    item.stash[_STARTED] = cpu_seconds()
    return (yield)


def _kernels_cached() -> bool:
    """Whether the run's cache (``CACHE_DIRECTORY``) holds the kernels' machine code."""
    cache = os.environ.get("CACHE_DIRECTORY")
    return cache is None or any(Path(cache, "kernels").glob("*.o"))


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(
    fixturedef: pytest.FixtureDef[object], request: pytest.FixtureRequest
) -> Generator[None, object, object]:
    shared = request.config.stash.setdefault(_SHARED, _Shared())
    if fixturedef.scope == "function" or shared.depth:
        return (yield)
    started = cpu_seconds()
    shared.depth += 1
    try:
        return (yield)
    finally:
        shared.depth -= 1
        shared.seconds += cpu_seconds() - started


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when != "teardown":
        item.stash[_PASSED] = item.stash.get(_PASSED, True) and not report.failed
        return report
    if _STARTED not in item.stash:
        return report
    spent = cpu_seconds() - item.stash[_STARTED] - item.config.stash[_SHARED].seconds
    slow = item.get_closest_marker("slow") is not None
    _judge(item, report, spent, slow)
    report.user_properties.append((SPENT, (spent, slow, item.config.stash.get(_SLOWER, 1.0))))
    return report


def _judge(item: pytest.Item, report: pytest.TestReport, spent: float, slow: bool) -> None:
    """Fail the teardown of a test not marked slow that took more than its budget."""
    budget = _budget(item.config)
    if not (budget and spent > budget and not slow and item.stash[_PASSED] and report.passed):
        return
    if not item.stash[_COMPILED] and _kernels_cached():
        # The run's one compilation of the kernels (about 4.5 s of CPU, in the test's process
        # or in a fork server it started) happened in this test: a cost of the run, not of the
        # test, as a shared fixture's setup is. A whole run compiles them while collecting.
        return
    factor = item.config.stash.get(_SLOWER, 1.0)
    if spent > budget * factor:  # the machine may have slowed since it was last timed
        factor = slower(item.config)
    if spent > budget * factor:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} took {spent:.2f} s of CPU (its processes included), over the "
            f"{budget:g} s a test not marked slow may take on the reference machine "
            f"({budget * factor:.2f} s on this one, {factor:.2f}x slower): mark it "
            "@pytest.mark.slow, or make it cheaper"
        )


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    count = config.getoption("--cpu-durations")
    if count is None:
        return
    # Every report the run logged, whichever process ran its test: a teardown's carries SPENT.
    taken: list[tuple[tuple[float, bool, float], str]] = [
        (cast("tuple[float, bool, float]", value), report.nodeid)
        for reports in terminalreporter.stats.values()
        for report in reports
        if isinstance(report, pytest.TestReport) and report.when == "teardown"
        for name, value in report.user_properties
        if name == SPENT
    ]
    spent = sorted(((s, nodeid, slow) for (s, slow, _), nodeid in taken), reverse=True)
    factor = max([config.stash.get(_SLOWER, 1.0), *(f for (_, _, f), _ in taken)])
    terminalreporter.write_sep("=", "CPU seconds per test, their processes included")
    terminalreporter.write_line(f"this machine: {factor:.2f}x the reference machine's CPU time")
    for seconds, nodeid, slow in spent[:count] if count else spent:
        terminalreporter.write_line(f"{seconds:8.2f}  {'slow' if slow else '    '}  {nodeid}")
    unmarked = sum(s for s, _, slow in spent if not slow)
    terminalreporter.write_line(
        f"{sum(s for s, _, _ in spent):8.2f}  in all, {unmarked:.2f} of it in tests not marked slow"
    )
