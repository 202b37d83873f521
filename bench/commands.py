"""Command latency: how long each ``isccd`` command takes from exec to exit, warm.

Every command runs as a user starts it (the ``isccd`` script next to this interpreter), timed by
hyperfine (``-N``, no shell; warm-up runs first, so the page cache and the bytecode cache are
warm), the commands alternated round by round; the median of each is printed next to the floor,
``python -c pass`` with the same interpreter, and the target of issue 11:

- ``--help``, ``explain`` and ``compare``: under 100 ms;
- ``status`` and ``dupes`` asking a running daemon (200 indexed files, 20 duplicate pairs):
  under 150 ms;
- ``code`` of one small text file (2 KB): under 250 ms.

    python bench/commands.py [--runs 15] [--rounds 3] [--compare OTHER_PYTHON]

With ``--compare`` each command also runs from another installation (e.g. the previous
release's virtual environment), in the same hyperfine runs, against the same daemon.

Compiled bytecode goes to a private cache (``PYTHONPYCACHEPREFIX``) that the warm-up runs fill,
so the figures do not depend on whether the source tree may be written.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from daemon import PY, Daemon

ISCCD = str(Path(PY).parent / "isccd")
CODE = "ISCC:KACT4EBWK27737D2AYCJRAL5Z36G76RFRMO4554RU26HZ4ORJGIVHDI"
OTHER = "ISCC:KACT4EBWK27737D2AYCJRAL5Z36G76RFRMO4554RU26HZ4ORJGIVHDA"


def tree(root: Path, files: int) -> Path:
    """``files`` small texts, every tenth with an exact copy; returns one small text."""
    root.mkdir(parents=True)
    for i in range(files):
        words = " ".join(f"word{(i * 7 + j) % 997}" for j in range(300))
        (root / f"f{i:04d}.txt").write_text(words, encoding="utf-8")
        if i % 10 == 0:
            (root / f"f{i:04d}-copy.txt").write_text(words, encoding="utf-8")
    return root / "f0001.txt"


def hyperfine(commands: dict[str, list[str]], runs: int, env: dict[str, str]) -> dict[str, float]:
    """Median seconds of each command, measured by one hyperfine run (alternated order is
    obtained by calling this once per round)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        argv = ["hyperfine", "-N", "--warmup", "3", "--runs", str(runs), "--style", "none"]
        argv += ["--export-json", out.name]
        for name, command in commands.items():
            argv += ["-n", name, subprocess.list2cmdline(command)]
        subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL)
        results = json.loads(Path(out.name).read_text())["results"]
    return {r["command"]: statistics.median(r["times"]) for r in results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per command and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, in alternating order")
    parser.add_argument("--compare", metavar="PYTHON", help="another installation's python")
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="isccd-cmd-", dir="/tmp"))
    small = tree(base / "root", 200)
    daemon = Daemon(base, base / "root", base / "state", ISCCD_HASHING__WORKERS="1")
    env = {
        **os.environ,
        "PYTHONPYCACHEPREFIX": str(base / "pycache"),
        "CONFIGURATION_DIRECTORY": str(base),
        "ISCCD_SERVER__SOCKET": str(daemon.socket),
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    commands = {
        "floor: python -c pass": [PY, "-c", "pass"],
        "isccd --help": [ISCCD, "--help"],
        "isccd explain": [ISCCD, "explain", CODE],
        "isccd compare": [ISCCD, "compare", CODE, OTHER],
        "isccd status": [ISCCD, "status", "--json", "--socket", str(daemon.socket)],
        "isccd dupes": [ISCCD, "dupes", "--json"],
        "isccd code small.txt": [ISCCD, "code", "--json", str(small)],
    }
    if args.compare:
        other = str(Path(args.compare).parent / "isccd")
        for name, command in list(commands.items()):
            if name.startswith("isccd"):
                commands["before: " + name] = [other, *command[1:]]
    target = {"--help": 100, "explain": 100, "compare": 100, "status": 150, "dupes": 150}
    try:
        daemon.start()
        sync = [ISCCD, "rescan", "--wait", "--socket", str(daemon.socket)]
        subprocess.run(sync, check=True, env=env, capture_output=True, timeout=300)
        medians: dict[str, list[float]] = {name: [] for name in commands}
        names = list(commands)
        for round_ in range(args.rounds):
            order = names if round_ % 2 == 0 else names[::-1]
            found = hyperfine({n: commands[n] for n in order}, args.runs, env)
            for name, seconds in found.items():
                medians[name].append(seconds)
    finally:
        daemon.stop()
    floor = statistics.median(medians[names[0]]) * 1000
    print(f"interpreter: {PY}")
    if args.compare:
        print(f"before: {args.compare}")
    print(f"{'command':<32} {'median ms':>9} {'x floor':>8} {'target':>7}")
    for name in names:
        ms = statistics.median(medians[name]) * 1000
        word = name.removeprefix("before: ").split()[1] if "isccd" in name else ""
        goal = target.get(word, 250 if word == "code" else 0)
        verdict = "" if not goal else ("ok" if ms < goal else "MISSED")
        limit = f"<{goal}" if goal else ""
        print(f"{name:<32} {ms:9.1f} {ms / floor:8.1f} {limit:>7} {verdict}")
    print("(medians of the rounds' medians; the machine may be shared: see docs/benchmarks.md)")


if __name__ == "__main__":
    main()
