"""The hashing workers' fork server, started early by a command about to hash."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from isccd.forkserver import PRELOAD


def _python(code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.splitlines()


_PROBE = """
    import os, sys
    {pin}
    from isccd import forkserver
    light = not any(m in sys.modules for m in ("numpy", "numba", "isccd.hashing"))
    started = forkserver.start_early()
    from multiprocessing import forkserver as server
    pid = server._forkserver._forkserver_pid
    print(light, started, pid is not None)
    if pid is not None:
        # Between fork and exec the child's command line is its parent's, or empty: wait for
        # the fork server's own, with a deadline.
        import time
        deadline = time.monotonic() + 20
        while True:
            line = open(f"/proc/{{pid}}/cmdline", "rb").read().replace(b"\\0", b" ").decode()
            if "multiprocessing.forkserver" in line or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        print(line)
"""


def test_start_early_starts_the_fork_server_with_the_hashing_code_without_importing_it() -> None:
    import os

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs more than one CPU (the fork server is not started early on one)")
    out = _python(_PROBE.format(pin=""))
    assert out[0] == "True True True"
    # The server imports the hashing code and the kernels, not this process.
    assert "multiprocessing.forkserver" in out[1]
    assert all(repr(module) in out[1] for module in PRELOAD)


def test_start_early_starts_nothing_on_one_cpu() -> None:
    out = _python(_PROBE.format(pin="os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})"))
    assert out == ["True False False"]
