"""The quick lane's guard (:mod:`tests.cpuguard`) in a run of its own: a test not marked slow
that takes more CPU than the budget fails, whether the CPU is its own, a child's that ended or a
process's still running; wall time spent waiting is not charged, nor is a fixture shared by
many tests, nor the run's one compilation of the kernels, a slow test is not held to the budget,
and under the thorough Hypothesis profile nothing is."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The budget of the run below, and the CPU its tests over it use (twice the budget).
BUDGET = 0.2

_TESTS = f'''
    import os, pathlib, subprocess, sys, time
    import pytest

    BURN = {2 * BUDGET}
    SPIN = "import time\\nend = time.process_time() + %r\\nwhile time.process_time() < end: pass"
    # A process that, for each line it reads, forks a child that burns CPU and waits for it:
    # the CPU is in a process that is still running when the test ends.
    SERVER = """
    import os, sys, time
    for line in sys.stdin:
        pid = os.fork()
        if pid == 0:
            end = time.process_time() + %r
            while time.process_time() < end: pass
            os._exit(0)
        os.waitpid(pid, 0)
        print("done", flush=True)
    """
    server = []

    def burn() -> None:
        end = time.process_time() + BURN
        while time.process_time() < end:
            pass

    def test_quick():
        server.append(subprocess.Popen(
            [sys.executable, "-c", SERVER % BURN], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True,
        ))

    def test_burns_cpu():
        burn()

    @pytest.mark.slow
    def test_slow_burns_cpu():
        burn()

    def test_its_child_burns_cpu():
        subprocess.run([sys.executable, "-c", SPIN % BURN], check=True)

    def test_its_running_server_burns_cpu():
        server[0].stdin.write("go\\n")
        server[0].stdin.flush()
        assert server[0].stdout.readline() == "done\\n"

    @pytest.fixture(scope="module")
    def shared():
        burn()  # set up once, for many tests: not charged to the first

    def test_uses_a_costly_shared_fixture(shared):
        pass

    def test_waits_without_cpu():
        time.sleep(2 * BURN)  # waiting, as for a busy machine's core: no CPU

    def test_the_server_ends():
        server[0].stdin.close()
        server[0].wait()

    def test_fails_and_burns_cpu():
        burn()
        assert False, "its own failure"

    def test_fills_the_kernel_cache_and_burns_cpu():
        # As the first test that hashes in a run does: the run's one compilation.
        burn()
        kernels = pathlib.Path(os.environ["CACHE_DIRECTORY"], "kernels")
        kernels.mkdir(parents=True)
        (kernels / "machine-code.o").write_bytes(b"")

    def test_burns_cpu_once_the_kernels_are_cached():
        burn()
'''


#: Every outcome listed, and every test's CPU.
_ARGS = ("-rA", "--cpu-durations=0")


def _run(tmp_path: Path, profile: str, reference: float = 1000.0) -> tuple[int, dict[str, str]]:
    """Run the tests above under the guard: the exit status, and each test's outcome.
    ``reference``: what the guard's reference work takes on the machine the budget is set for
    (by default so long that this machine is never found slower)."""
    (tmp_path / "test_guarded.py").write_text(textwrap.dedent(_TESTS))
    (tmp_path / "pytest.ini").write_text(
        f"[pytest]\nmarkers =\n    slow: slow\nquick_test_cpu_seconds = {BUDGET}\n"
        f"quick_test_reference_seconds = {reference}\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HYPOTHESIS_PROFILE": profile}
    env["CACHE_DIRECTORY"] = str(tmp_path / "cache")  # no kernels' machine code yet
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.cpuguard", "-p", "no:cacheprovider", *_ARGS],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    outcomes: dict[str, str] = {}
    listed = re.findall(r"^(PASSED|FAILED|ERROR) test_guarded.py::(\w+)", done.stdout, re.M)
    for outcome, name in listed:
        # A test that passes and then fails the guard in its teardown is listed twice.
        outcomes[name] = "over" if outcome == "ERROR" else outcomes.get(name, outcome.lower())
    assert outcomes, done.stdout + done.stderr
    return done.returncode, outcomes | {"": done.stdout}


@pytest.mark.slow
def test_a_test_over_the_cpu_budget_fails_the_run(tmp_path: Path) -> None:
    status, outcomes = _run(tmp_path, "default")
    out = outcomes.pop("")
    assert outcomes == {
        "test_quick": "passed",
        "test_burns_cpu": "over",
        "test_slow_burns_cpu": "passed",
        "test_its_child_burns_cpu": "over",
        "test_its_running_server_burns_cpu": "over",
        "test_uses_a_costly_shared_fixture": "passed",
        "test_waits_without_cpu": "passed",
        "test_the_server_ends": "passed",
        "test_fails_and_burns_cpu": "failed",
        "test_fills_the_kernel_cache_and_burns_cpu": "passed",
        "test_burns_cpu_once_the_kernels_are_cached": "over",
    }, out
    assert status == 1
    assert re.search(
        r"test_burns_cpu took 0\.\d\d s of CPU \(its processes included\), over the 0\.2 s a "
        r"test not marked slow may take on the reference machine \(0\.20 s on this one, 1\.00x "
        r"slower\): mark it @pytest.mark.slow",
        out,
    ), out
    # Every test, with what it took, slow or not.
    listed = re.findall(r"^ +(\d+\.\d\d)  (slow|    )  test_guarded.py::(\w+)$", out, re.M)
    assert {name: mark.strip() for _, mark, name in listed} == {
        name: "slow" if name == "test_slow_burns_cpu" else "" for name in outcomes
    }
    assert all(float(seconds) >= BUDGET for seconds, _, name in listed if "burns" in name)


@pytest.mark.slow
def test_the_budget_grows_with_how_much_slower_the_machine_is(tmp_path: Path) -> None:
    # A reference machine that did the reference work in a microsecond: this one is found the
    # most slower the guard allows (5x), and twice the budget fits in five times it.
    from tests.cpuguard import MOST_SLOWER

    assert MOST_SLOWER > 2
    status, outcomes = _run(tmp_path, "default", reference=1e-6)
    out = outcomes.pop("")
    assert set(outcomes.values()) == {"passed", "failed"}, out
    assert outcomes["test_fails_and_burns_cpu"] == "failed"
    assert status == 1  # that test's own failure
    assert f"this machine: {MOST_SLOWER:.2f}x the reference machine's CPU time" in out, out


@pytest.mark.slow
def test_the_thorough_profile_has_no_budget(tmp_path: Path) -> None:
    status, outcomes = _run(tmp_path, "thorough")
    out = outcomes.pop("")
    assert set(outcomes.values()) == {"passed", "failed"}, out
    assert outcomes["test_fails_and_burns_cpu"] == "failed"
    assert status == 1  # that test's own failure
