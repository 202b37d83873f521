"""The hashing workers' fork server, started early by a command about to hash."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

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


_WORKER_IMPORTS = """
    import sys
    sys.path.insert(0, {helper_dir!r})
    from isccd import forkserver
    import probe_worker

    if __name__ == "__main__":
        parent, child = forkserver.context().Pipe()
        process = forkserver.context().Process(target=probe_worker.report, args=(child,))
        process.start()
        print(parent.recv())
        process.join()
        forkserver.end()
"""

_PROBE_WORKER = """
    import sys


    def report(conn):
        # What a worker imports to start: its code (the module of every worker's target) and
        # the kernels' warm-up it runs before its first file.
        before = set(sys.modules)
        from isccd.hashing.worker import worker_main  # noqa: F401
        from isccd.iscc.kernels import warmup

        warmup()
        conn.send(sorted(set(sys.modules) - before))
"""


@pytest.mark.slow
def test_a_worker_forked_from_the_fork_server_imports_nothing_to_start(tmp_path: Path) -> None:
    # Whatever the fork server leaves out, every worker imports after the fork, at every
    # start and restart (the pool module alone cost 0.14 s of each worker's start).
    (tmp_path / "probe_worker.py").write_text(textwrap.dedent(_PROBE_WORKER))
    script = tmp_path / "main.py"
    script.write_text(textwrap.dedent(_WORKER_IMPORTS.format(helper_dir=str(tmp_path))))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout


def test_the_fork_server_loads_nothing_of_the_pools_side() -> None:
    # The event loop and the logging are the pool's, in the command or the daemon: loaded in
    # the fork server they cost each start of it 0.12 s of CPU for nothing.
    out = _python(f"""
        import sys
        for module in {PRELOAD!r}:
            __import__(module)
        print(sorted(m for m in ("asyncio", "structlog", "isccd.hashing.pool") if m in sys.modules))
    """)
    assert out == ["[]"]


def test_the_workers_target_is_in_what_the_fork_server_loads() -> None:
    from isccd.hashing import pool

    # What the pool starts its processes with (looked up in its namespace, as it does).
    target = vars(pool)["worker_main"]
    assert target.__module__ in PRELOAD


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("coverage") is None, reason="needs coverage.py installed"
)
def test_the_kernels_load_without_coverage_which_still_imports_afterwards() -> None:
    # numba imports coverage.py when installed; the fork server's preload keeps it out (it
    # costs every start of the workers 50-80 ms), and leaves it importable.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COV_CORE", "COVERAGE"))}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, isccd.iscc._jit; print('coverage' in sys.modules);"
            "import coverage; print(coverage.Coverage is not None)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=env,
    )
    assert done.stdout.split() == ["False", "True"], done.stderr


def test_the_fork_server_preloads_no_image_library() -> None:
    """Pillow and the XML parser of image metadata are loaded by a worker's first image: the
    fork server's start, which a scan's first file waits for, does without them."""
    out = _python(
        f"""
        import sys
        for name in {list(PRELOAD)!r}:
            __import__(name)
        print(sorted(m for m in ("PIL", "xml.etree.ElementTree") if m in sys.modules))
        """
    )
    assert out == ["[]"]


@pytest.mark.slow
@pytest.mark.parametrize("cpus", ["all", "one"])
def test_a_folder_named_isccd_in_the_working_directory_does_not_stop_the_workers(
    tmp_path: Path, cpus: str
) -> None:
    # The README's install, run from the directory above a clone: the fork server's
    # ``python -c`` would import the clone's folder (here an empty one) as the package. On one
    # CPU the fork server is started by the first worker, not early.
    (tmp_path / "isccd").mkdir()
    library = tmp_path / "library"
    library.mkdir()
    (library / "a.txt").write_text("a few words of text to code")
    command = [str(Path(sys.executable).with_name("isccd"))]
    if cpus == "one":
        command = ["taskset", "-c", str(min(os.sched_getaffinity(0))), *command]
    done = subprocess.run(
        [*command, "scan", "--state", str(tmp_path / "state"), str(library)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "1 added" in done.stdout


_BROKEN_WORKERS = """
    import asyncio, os, sys
    from isccd.hashing.pool import WorkerOptions, WorkerPool, WorkersUnavailableError

    # Imported here already: only the fork server's interpreter, started after, imports the
    # module that shadows blake3 (and keeps it for the workers it forks).
    os.environ["PYTHONPATH"] = {shadow!r}

    async def main():
        pool = WorkerPool(WorkerOptions(workers=1))
        try:
            await pool.start()
        except WorkersUnavailableError as exc:
            print(exc)
        else:
            print("started")
        await pool.close(grace=0)

    asyncio.run(main())
"""


@pytest.mark.slow
def test_workers_that_cannot_import_their_code_say_why(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "blake3.py").write_text("")
    error = _python(_BROKEN_WORKERS.format(shadow=str(shadow)))[-1]  # after the log lines
    assert error.startswith(
        "the hashing workers cannot start: exit status 1; they cannot import their code:"
        " ImportError: cannot import name"
    )
    assert f"from 'blake3' ({shadow / 'blake3.py'})" in error


def test_the_fork_server_finds_the_package_this_process_found_in_its_working_directory() -> None:
    # ``python -m isccd`` in a clone: the package is the working directory's; the fork server,
    # whose working directory is not on its path, is told where it is. Afterwards the
    # environment is as it was, for whatever else the process starts.
    import isccd

    parent = Path(isccd.__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os; from isccd import forkserver\n"
            "with forkserver.import_from_here(), forkserver.import_from_here():\n"
            "    print(os.environ['PYTHONSAFEPATH'], os.environ['PYTHONPATH'])\n"
            "print(os.environ.get('PYTHONSAFEPATH'), os.environ.get('PYTHONPATH'))",
        ],
        cwd=parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.splitlines() == [f"1 {parent}", "None None"]
