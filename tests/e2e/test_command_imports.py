"""Each command imports only the layers it uses: no hashing stack (numpy, Pillow, numba),
pydantic, structlog, store or pipeline for the commands that decode codes or ask the daemon,
and no numba for ``isccd code`` of a small file.

Each command runs in a fresh interpreter, as ``isccd`` would start, which reports the modules
it loaded; ``dupes`` and ``status`` ask a real daemon.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.cli.test_index_cli import prose
from tests.e2e.conftest import Daemon, daemons

#: Modules no light command may load.
HEAVY = ("numpy", "numba", "llvmlite", "PIL", "pydantic", "structlog", "isccd.hashing",
         "isccd.pipeline", "isccd.store", "isccd.extract.image", "isccd.config")  # fmt: skip

#: Runs the command line in this interpreter and reports, on the last line of stderr, which
#: of the modules named in argv[1] (JSON) it loaded.
_REPORT = """\
import json, sys
watched = json.loads(sys.argv.pop(1))
from isccd.cli.main import main
try:
    status = main(sys.argv[1:])
except SystemExit as exc:
    status = exc.code
loaded = sorted(m for m in watched if m in sys.modules)
print(json.dumps({"status": status, "loaded": loaded}), file=sys.stderr)
"""

CODE = "ISCC:KACT4EBWK27737D2AYCJRAL5Z36G76RFRMO4554RU26HZ4ORJGIVHDI"


def loaded_by(
    *argv: str, env: Mapping[str, str] | None = None, watched: tuple[str, ...] = HEAVY
) -> tuple[int, list[str]]:
    """Run ``isccd ARGV`` in a new interpreter: its exit status and the watched modules it
    imported."""
    result = subprocess.run(
        [sys.executable, "-c", _REPORT, json.dumps(watched), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **(env or {})},
    )
    report = json.loads(result.stderr.strip().splitlines()[-1])
    return report["status"], report["loaded"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["explain", CODE],
        ["compare", CODE, CODE],
        ["dupes", "--help"],
        ["code", "--help"],
        ["scan", "--help"],
    ],
)
def test_commands_that_decode_codes_or_show_help_load_nothing_heavy(argv: list[str]) -> None:
    status, loaded = loaded_by(*argv)
    assert status == 0
    assert loaded == []


#: What only answering a question of the index or the daemon needs: the answers' text forms,
#: the requests and messages of the protocol, the results besides the queries' limits.
ANSWERS = ("isccd.cli.answers", "isccd.protocol.requests", "isccd.protocol.messages",
           "isccd.results.files", "isccd.results.groups", "isccd.results.status")  # fmt: skip


@pytest.mark.parametrize("argv", [["--help"], ["explain", CODE], ["scan", "--help"]])
def test_the_parser_loads_no_answers(argv: list[str]) -> None:
    # About 55 ms of a command's start (their dataclasses, mostly), measured.
    assert loaded_by(*argv, watched=ANSWERS) == (0, [])


def test_coding_a_small_file_does_not_load_numba(tmp_path: Path) -> None:
    (tmp_path / "small.txt").write_text(prose(2), encoding="utf-8")
    (tmp_path / "small.bin").write_bytes(os.urandom(5000))
    status, loaded = loaded_by(
        "code", "--json", str(tmp_path / "small.txt"), str(tmp_path / "small.bin"),
        watched=("numba", "llvmlite", "isccd.iscc._jit", "numpy", "structlog"),
    )  # fmt: skip
    assert status == 0
    # numpy is the hashing stack's, and the file is hashed; neither the compiler nor the
    # logging of the worker pool is loaded.
    assert loaded == ["numpy"]


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    with daemons() as make:
        d = make()
        (d.root / "a.txt").write_text(prose(1), encoding="utf-8")
        (d.root / "b.txt").write_text(prose(1), encoding="utf-8")
        d.start()
        sync = [sys.executable, "-m", "isccd", "rescan", "--wait", "--socket", str(d.socket)]
        subprocess.run(sync, check=True, capture_output=True, timeout=60)
        yield d
        assert d.stop() == 0


@pytest.mark.slow
def test_status_and_dupes_asking_a_daemon_load_nothing_heavy(daemon: Daemon) -> None:
    # The socket as the configuration names it (here the environment), read without
    # loading the settings.
    env = {
        "ISCCD_SERVER__SOCKET": str(daemon.socket),
        "CONFIGURATION_DIRECTORY": str(daemon.base / "etc"),
    }
    assert loaded_by("status", "--socket", str(daemon.socket)) == (0, [])
    assert loaded_by("dupes", "--json", env=env) == (0, [])
    assert loaded_by("get", "--json", str(daemon.root / "a.txt"), env=env) == (0, [])


@pytest.mark.slow
def test_a_scan_loads_no_watcher(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text(prose(3), encoding="utf-8")
    status, loaded = loaded_by(
        "scan", "--json", "--state", str(tmp_path / "state"), str(root),
        watched=("watchdog", "isccd.watch.watcher", "isccd.pipeline"),
    )  # fmt: skip
    assert status == 0
    # The walk and the pipeline, not the daemon's watching of the roots.
    assert loaded == ["isccd.pipeline"]


@pytest.mark.slow
def test_a_scan_loads_no_socket_server(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text(prose(3), encoding="utf-8")
    server = ("isccd.server.server", "isccd.server.broker", "isccd.server.connection")
    status, loaded = loaded_by(
        "scan", "--json", "--state", str(tmp_path / "state"), str(root),
        watched=("isccd.server.options", *server),
    )  # fmt: skip
    assert status == 0
    # The settings name the server's options; the server itself is the daemon's.
    assert loaded == ["isccd.server.options"]


@pytest.mark.slow
def test_a_scan_of_texts_asks_no_image_library(tmp_path: Path) -> None:
    pytest.importorskip("pillow_heif")
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text(prose(3), encoding="utf-8")
    status, loaded = loaded_by(
        "scan", "--json", "--state", str(tmp_path / "state"), str(root),
        watched=("pillow_heif", "isccd.pipeline"),
    )  # fmt: skip
    assert status == 0
    # Its version is asked only to judge a stored unit whose profile names it (the workers,
    # which decode images, load it in their own processes).
    assert loaded == ["isccd.pipeline"]
