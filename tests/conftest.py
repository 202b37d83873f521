"""Shared test configuration.

Hypothesis runs the ``default`` profile: derandomized, so a run is reproducible and CI never
fails on an example no developer has seen, and fast enough for the whole suite to stay under ten
minutes on two cores. ``HYPOTHESIS_PROFILE=thorough`` explores: random seeds and many more
examples; run it before a release and after touching an algorithm.
"""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from hypothesis import HealthCheck, settings

from isccd.logconf import configure_logging

# The quick lane's guard: a test not marked slow over its CPU budget fails (tests/cpuguard.py).
from tests.cpuguard import (  # noqa: F401
    pytest_addoption,
    pytest_fixture_setup,
    pytest_runtest_makereport,
    pytest_runtest_setup,
    pytest_sessionstart,
    pytest_terminal_summary,
)
from tests.leaks import Running
from tests.pg import PgServer, find_bin_dir

settings.register_profile(
    "default",
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


#: The cache directory of this run (:func:`isccd.dirs.default_cache_dir`): the compiled kernels'
#: machine code is written there once per run, by the first test process that hashes, and read
#: by every process after it, not written into the user's or the system's cache. The run's
#: worker processes (pytest-xdist) share the one their controller made, and it removes it.
_RUN_CACHE = "ISCCD_TEST_RUN_CACHE"
if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(_RUN_CACHE):
    _CACHE, _OWN_CACHE = Path(os.environ[_RUN_CACHE]), False
else:
    _CACHE, _OWN_CACHE = Path(tempfile.mkdtemp(prefix="isccd-test-cache-")), True
    os.environ[_RUN_CACHE] = str(_CACHE)
os.environ["CACHE_DIRECTORY"] = str(_CACHE)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _OWN_CACHE:
        shutil.rmtree(_CACHE, ignore_errors=True)


# A run started in the background by a shell (`pytest &`, a CI runner's job) inherits SIGINT
# ignored, and so would every command a test starts: a command that inherits it ignored keeps
# ignoring Ctrl-C, as a shell's background job should. The tests of what a command does on
# SIGINT ask what it does at a terminal, so the run takes SIGINT as a terminal gives it, and the
# commands it starts get the default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


#: How long a thread or process a test started may take to end after the test.
LEAK_GRACE = 5.0


@pytest.fixture(autouse=True)
def _nothing_left_running() -> Iterator[None]:
    """Fail a test that leaves a thread or a process it started running (:mod:`tests.leaks`),
    naming what it left."""
    before = Running.now()
    yield
    leaked = Running.now().leaked_since(before, LEAK_GRACE)
    if leaked:
        pytest.fail("left running after the test: " + "; ".join(leaked), pytrace=False)


@pytest.fixture
def fork_server_dies(tmp_path: Path) -> dict[str, str]:
    """Environment variables under which the multiprocessing fork server, that every hashing
    worker is forked from, dies as it starts (as when it cannot import isccd): for an isccd
    run as ``python -m isccd``."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(
        "import os, sys\n"
        "if sys.argv[:1] == ['-c']:  # the fork server; isccd runs as python -m isccd\n"
        "    os._exit(3)\n"
    )
    return {"PYTHONPATH": os.pathsep.join([str(hooks), *sys.path])}


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A fresh directory under /tmp, symbolic links resolved: a Unix socket's path must fit in
    107 bytes, which pytest's ``tmp_path`` may not leave room for."""
    path = Path(tempfile.mkdtemp(prefix="isccd-", dir="/tmp")).resolve()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One PostgreSQL server for the whole run (skipped, with the reason, without one)."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        pytest.skip("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        pytest.skip("running as root, and runuser (util-linux) is missing to drop to postgres")
    server = PgServer(bin_dir)
    try:
        server.start()
    except BaseException:
        server.stop()
        raise
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """The URL of a new, empty database on the test server, dropped after the test."""
    name = pg_server.new_database()
    yield pg_server.url(name)
    pg_server.drop_database(name)


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """The standard library's root logger, warning capture and structlog as they were before
    the test, whatever the test configured."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.captureWarnings(False)
    structlog.reset_defaults()


@pytest.fixture
def json_log(restored_logging: None) -> Callable[[], list[dict[str, Any]]]:
    """Logging configured as the daemon configures it off a terminal (JSON lines, level info),
    written to a buffer: the fixture's value returns the lines written so far, parsed."""
    out = io.StringIO()
    configure_logging("info", "json", stream=out, env={})
    return lambda: [json.loads(line) for line in out.getvalue().splitlines()]
