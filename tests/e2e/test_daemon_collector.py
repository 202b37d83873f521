"""``isccd run`` keeps the cyclic garbage collector to a few large steps while it starts and
indexes, as ``isccd scan`` does."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

#: Runs ``isccd run`` in this interpreter until the daemon has indexed argv[4] files of its
#: root, and reports on stderr the generation of every collection that started meanwhile (the
#: command line's parser and logging imported before, as the scan's test does).
_RUN = """\
import gc, json, os, signal, sys, threading, time
import isccd.logconf
from isccd.cli.main import build_parser, main
from isccd.client import Client
from isccd.errors import DaemonUnavailableError
root, state, sock, files = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
build_parser()
started = []
gc.callbacks.append(lambda phase, info: phase == "start" and started.append(info["generation"]))

def stop_once_indexed():
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with Client(sock, timeout=5) as client:
                status = client.status()
        except DaemonUnavailableError:
            status = None
        if status is not None and status.files_indexed == files and not status.queue_depth:
            break
        time.sleep(0.05)  # polls a real process, with a deadline
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=stop_once_indexed, daemon=True).start()
status = main(["run", "--watch", root, "--state", state, "--socket", sock])
print(json.dumps({"status": status, "started": started}), file=sys.stderr)
"""


@pytest.mark.slow
def test_the_daemon_collects_in_a_few_steps_while_it_starts_and_indexes(tmp_path: Path) -> None:
    rng = random.Random(5)
    root = tmp_path / "root"
    for n in range(600):
        folder = root / f"d{n // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n}.bin").write_bytes(rng.randbytes(rng.randrange(100, 2000)))
    (tmp_path / "etc").mkdir()
    with tempfile.TemporaryDirectory(prefix="isccd-gc-", dir="/tmp") as short:
        result = subprocess.run(
            [sys.executable, "-c", _RUN, str(root), str(tmp_path / "state"),
             f"{short}/isccd.sock", "600"],
            capture_output=True, text=True, timeout=90, check=False,
            env={**os.environ, "CONFIGURATION_DIRECTORY": str(tmp_path / "etc"),
                 "ISCCD_HASHING__WORKERS": "1", "ISCCD_LOG__FORMAT": "json"},
        )  # fmt: skip
    report = json.loads(result.stderr.strip().splitlines()[-1])
    assert report["status"] == 0, result.stderr[-2000:]
    # The one full collection before what exists at READY is frozen, and a few young ones;
    # at the default pace the imports alone cost hundreds, and these 600 files dozens more.
    assert report["started"].count(2) == 1, report["started"]
    assert len(report["started"]) <= 4, report["started"]
