"""``isccd subscribe --exec CMD`` on a real daemon: what a command receives, hostile file names
reaching it only as data, failures under each policy, a command killed by its timeout, the bound
on commands in flight, and a subscriber SIGKILLed at random moments that, resumed from its
cursor, runs every event, none missed, and runs one again only saying so.

The commands are a small Python program (:data:`HOOK`) that records what it got in files; the
tests wait for those files with a deadline, never for a time.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from isccd.model import Event, EventType
from isccd.protocol import event_to_wire
from tests.schemas import check

from .conftest import Daemon, events_until

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

#: The commands. ``HOOK MODE DIR [NAME]``; every run appends one JSON line to DIR/runs.
HOOK = r"""
import fcntl, json, os, signal, subprocess, sys, time
mode, where = sys.argv[1], sys.argv[2]
name = sys.argv[3] if len(sys.argv) > 3 else ""
env = os.environb
path = env.get(b"ISCCD_EVENT_PATH", b"")
seq = int(env[b"ISCCD_EVENT_SEQ"])
run = {
    "seq": seq,
    "pid": os.getpid(),
    "stdin": sys.stdin.read(),
    "path": path.hex(),
    "redelivered": env[b"ISCCD_HOOK_REDELIVERED"].decode(),
    "env": {k.decode(): v.hex() for k, v in env.items() if k.startswith(b"ISCCD_")},
}

def note(file, text):
    fd = os.open(os.path.join(where, file), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, (text + "\n").encode())
    os.close(fd)

def wait_for(file):
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(where, file)):
        assert time.monotonic() < deadline, file
        time.sleep(0.01)

base = os.path.basename(path).decode(errors="replace")
if mode == "fail-on" and base == name and not os.path.exists(os.path.join(where, "fixed")):
    run["status"] = 3
elif mode == "fail-once" and base == name and not os.path.exists(os.path.join(where, "failed")):
    note("failed", "")
    run["status"] = 3
elif mode == "hang-on" and base == name:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen(["sleep", "600"])
    note("hung", json.dumps([os.getpid(), child.pid]))
    while True:
        signal.pause()
elif mode == "hold-on" and base == name:
    note("waiting", "")
    wait_for("release")
elif mode == "gate":
    live = os.path.join(where, "live")
    os.makedirs(live, exist_ok=True)
    open(os.path.join(live, str(seq)), "w").close()
    run["live_at_start"] = len(os.listdir(live))
    wait_for(f"release-{seq}")
    run["live_at_release"] = len(os.listdir(live))
    os.unlink(os.path.join(live, str(seq)))
elif mode == "once":
    # Idempotent as the documentation says: a run told it may have run before checks.
    with open(os.path.join(where, "effects"), "a+") as effects:
        fcntl.flock(effects, fcntl.LOCK_EX)
        effects.seek(0)
        done = {line.split()[0] for line in effects}
        if run["redelivered"] == "0" or str(seq) not in done:
            effects.write(f"{seq} {os.getpid()}\n")
note("runs", json.dumps(run))
sys.exit(run.get("status", 0))
"""


@pytest.fixture
def hook(short_dir: Path) -> Path:
    path = short_dir / "hook.py"
    path.write_text(HOOK)
    return path


def _exec(hook: Path, mode: str, where: Path, name: str = "") -> str:
    where.mkdir(parents=True, exist_ok=True)
    return " ".join([sys.executable, "-I", str(hook), mode, str(where), name])


class Subscriber:
    """One ``isccd subscribe --exec`` process, its stderr in a file."""

    def __init__(self, daemon: Daemon, where: Path, *args: str, env: dict[str, str] | None = None):
        where.mkdir(parents=True, exist_ok=True)
        self.stderr_path = where / f"stderr-{time.monotonic_ns()}"
        command = [sys.executable, "-m", "isccd", "subscribe", "--socket", str(daemon.socket)]
        with self.stderr_path.open("wb") as stderr:
            self.proc = subprocess.Popen(
                [*command, *args],
                cwd=where,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                env={**os.environ, **(env or {})},
            )

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.wait()

    def wait(self, timeout: float = 60) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"the subscriber did not exit; stderr:\n{self.stderr}") from None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def subscribers() -> Iterator[list[Subscriber]]:
    made: list[Subscriber] = []
    yield made
    for subscriber in made:
        subscriber.kill()


def wait_until(what: str, test: Callable[[], Any], timeout: float = 60) -> Any:
    """Poll ``test`` until it returns something true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (result := test()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
    return result


def _ran(where: Path, seq: int) -> bool:
    return seq in {r["seq"] for r in runs(where)}


def runs(where: Path) -> list[dict[str, Any]]:
    """The runs recorded so far: a line still being appended is left for the next read (a
    line that crosses a page of the file can be read half written)."""
    path = where / "runs"
    if not path.exists():
        return []
    text = path.read_text()
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines()]


def _at_least(count: Callable[[], set[int]], target: int) -> bool:
    return len(count()) >= target


def cursor(path: Path) -> dict[str, Any]:
    saved: dict[str, Any] = json.loads(path.read_text())
    return saved


def synced(daemon: Daemon) -> tuple[int, str]:
    """Every change on disk indexed: the last seq and the store's identity."""

    async def ask() -> tuple[int, str]:
        client = await daemon.client()
        try:
            store = (await client.hello()).store
            assert store is not None
            return await client.sync(), store
        finally:
            await client.close()

    return asyncio.run(ask())


def added(daemon: Daemon) -> list[Event]:
    """The daemon's file.added events so far."""
    last, _ = synced(daemon)
    events = asyncio.run(events_until(daemon, 0, last)) if last else []
    return [e for e in events if e.type is EventType.FILE_ADDED]


def _text(n: int) -> str:
    return f"file number {n}: " + " ".join(f"word{n * 7 + i}" for i in range(12))


# -- what a command receives ------------------------------------------------------------------


def test_a_command_gets_the_event_on_stdin_and_its_fields_in_its_environment(
    make_daemon: Callable[..., Daemon], hook: Path, subscribers: list[Subscriber]
) -> None:
    daemon = make_daemon()
    names = [b"plain.txt", b"$(touch pwned);x \xff.txt"]
    for i, name in enumerate(names):
        (daemon.root / os.fsdecode(name)).write_text(_text(i))  # the name's bytes, on disk
    daemon.start()
    _, store = synced(daemon)
    where = daemon.base / "hook"
    cursor_file = daemon.base / "hooks" / "c.cursor"
    args = ["--since", "0", "--type", "file.added", "--cursor", str(cursor_file)]
    first = Subscriber(daemon, where, *args, "--exec", _exec(hook, "record", where))
    subscribers.append(first)
    wait_until("two runs", lambda: len(runs(where)) == 2)
    (daemon.root / "live.txt").write_text(_text(2))  # and one while it runs
    wait_until("three runs", lambda: len(runs(where)) == 3)
    assert first.stop() == 0, first.stderr

    events = {e.seq: e for e in added(daemon)}
    got = runs(where)
    assert [r["seq"] for r in got] == sorted(events)  # in order, each once
    for run in got:
        event = events[run["seq"]]
        wire = json.loads(run["stdin"])
        assert wire == event_to_wire(event)
        assert run["stdin"].endswith("\n") and run["stdin"].count("\n") == 1
        check("event", wire)
        env = {k: bytes.fromhex(v) for k, v in run["env"].items()}
        assert env["ISCCD_EVENT_TYPE"] == b"file.added"
        assert env["ISCCD_EVENT_SEQ"] == str(event.seq).encode()
        assert env["ISCCD_EVENT_PATH"] == os.fsencode(event.path)  # the name's bytes
        assert env["ISCCD_EVENT_ROOT"] == str(daemon.root).encode()
        assert env["ISCCD_EVENT_SIZE"] == str(event.data["size"]).encode()
        assert env["ISCCD_EVENT_UNITS_DATA"] == event.data["units"]["data"].encode()
        assert env["ISCCD_HOOK_STORE"] == store.encode()
        assert env["ISCCD_HOOK_REDELIVERED"] == b"0"
    assert {bytes.fromhex(r["path"]).rsplit(b"/", 1)[1] for r in got} == {*names, b"live.txt"}
    assert not list(where.glob("pwned*")) and not list(daemon.root.glob("pwned*"))
    assert f"isccd: last seq {max(events)} store {store}" in first.stderr
    saved = cursor(cursor_file)
    check("cursor", saved)
    assert saved == {
        "format": "isccd-subscribe-cursor",
        "version": 1,
        "store": store,
        "seq": max(events),
        "done": [],
        "started": [],
    }
    assert oct(cursor_file.stat().st_mode & 0o777) == "0o600"

    # Started again with its cursor: nothing handled is run again (--since only starts a cursor).
    again = Subscriber(daemon, where, *args, "--exec", _exec(hook, "record", where))
    subscribers.append(again)
    (daemon.root / "after.txt").write_text(_text(3))
    wait_until("the new file's run", lambda: len(runs(where)) == 4)
    assert again.stop() == 0, again.stderr
    assert [r["seq"] for r in runs(where)] == sorted(e.seq for e in added(daemon))


def test_a_cursor_of_a_replaced_store_stops_before_running_anything(
    make_daemon: Callable[..., Daemon], hook: Path, subscribers: list[Subscriber]
) -> None:
    daemon = make_daemon()
    (daemon.root / "one.txt").write_text(_text(1))
    daemon.start()
    where = daemon.base / "hook"
    cursor_file = daemon.base / "c.cursor"
    args = ["--since", "0", "--cursor", str(cursor_file), "--exec", _exec(hook, "record", where)]
    first = Subscriber(daemon, where, *args)
    subscribers.append(first)
    wait_until("a run", lambda: runs(where))
    assert first.stop() == 0
    kept = cursor_file.read_bytes()
    assert daemon.stop() == 0
    shutil.rmtree(daemon.state)  # another store, another event log
    (daemon.root / "two.txt").write_text(_text(2))
    daemon.start()
    synced(daemon)
    (where / "runs").unlink()

    second = Subscriber(daemon, where, *args)
    subscribers.append(second)
    assert second.wait() == 65
    assert "counts another event log" in second.stderr
    assert "(store_mismatch); nothing was run" in second.stderr
    assert runs(where) == []
    assert cursor_file.read_bytes() == kept


def test_hostile_file_names_reach_the_readme_example_only_as_data(
    make_daemon: Callable[..., Daemon], subscribers: list[Subscriber]
) -> None:
    daemon = make_daemon()
    names = [
        b"$(touch pwned1)",
        b"`touch pwned2`",
        b";touch pwned3;",
        b"a'b\"c $HOME *",
        b"-rf",
        b"new\nline",
        b"\xff\xfe not utf-8",
        b" leading space",
    ]
    for i, name in enumerate(names):
        (daemon.root / os.fsdecode(name)).write_text(_text(10 + i))
    daemon.start()
    home = daemon.base / "home"
    script = home / ".config" / "isccd" / "hooks" / "review.sh"
    script.parent.mkdir(parents=True)
    script.write_text(_readme_block("review.sh"))
    script.chmod(0o700)
    where = daemon.base / "cwd"
    watcher = Subscriber(
        daemon,
        where,
        "--since",
        "0",
        "--type",
        "file.added",
        "--exec",
        str(script),
        env={"HOME": str(home)},
    )
    subscribers.append(watcher)
    review = os.fsencode(home / "review")
    wait_until("every file moved to review", lambda: _names(review) == sorted(names))
    assert watcher.stop() == 0, watcher.stderr
    assert _names(os.fsencode(daemon.root)) == []
    for folder in (where, home, daemon.root, daemon.base, Path.cwd()):
        assert not [p for p in folder.iterdir() if p.name.startswith("pwned")], folder


def _names(folder: bytes) -> list[bytes]:
    """The names in ``folder`` as bytes (none: it does not exist)."""
    try:
        return sorted(os.listdir(folder))  # noqa: PTH208 -- names of bytes
    except FileNotFoundError:
        return []


def _readme_block(name: str) -> str:
    """The shell script of the README that follows a line naming ``name``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(rf"`{re.escape(name)}`.*?```sh\n(.+?)\n```", text, flags=re.S)
    assert match, f"no {name} in the README"
    return match.group(1) + "\n"


# -- failures ---------------------------------------------------------------------------------


def test_a_failed_command_stops_skips_or_is_retried(
    make_daemon: Callable[..., Daemon], hook: Path, subscribers: list[Subscriber]
) -> None:
    daemon = make_daemon()
    for n in (1, 2, 3):
        (daemon.root / f"f{n}.txt").write_text(_text(n))
    daemon.start()
    seqs = {Path(e.path).name: e.seq for e in added(daemon)}
    assert len(seqs) == 3
    f1, f2, f3 = seqs["f1.txt"], seqs["f2.txt"], seqs["f3.txt"]
    base = ["--since", "0", "--type", "file.added"]

    # stop: the subscriber exits 75 before f2, which the next start runs first.
    where = daemon.base / "stop"
    c = where / "c.cursor"
    argv = [*base, "--cursor", str(c), "--exec", _exec(hook, "fail-on", where, "f2.txt")]
    stopping = Subscriber(daemon, where, *argv)
    subscribers.append(stopping)
    assert stopping.wait() == 75, stopping.stderr
    assert (
        f"isccd: seq {f2} file.added {daemon.root}/f2.txt: the command exited with status 3; "
        "stopping: the next start runs it again"
    ) in stopping.stderr
    assert [(r["seq"], r["redelivered"]) for r in runs(where)] == [(f1, "0"), (f2, "0")]
    assert cursor(c)["seq"] == f1 and cursor(c)["started"] == [f2]
    (where / "fixed").touch()
    resumed = Subscriber(daemon, where, *argv)
    subscribers.append(resumed)
    wait_until("f3's run", lambda: len(runs(where)) == 4)
    assert resumed.stop() == 0, resumed.stderr
    assert [(r["seq"], r["redelivered"]) for r in runs(where)][2:] == [(f2, "1"), (f3, "0")]
    assert cursor(c)["seq"] == f3 and cursor(c)["started"] == []

    # skip: reported, and the cursor passes it.
    where = daemon.base / "skip"
    c = where / "c.cursor"
    skip = _exec(hook, "fail-on", where, "f2.txt")
    skipping = Subscriber(
        daemon, where, *base, "--cursor", str(c), "--on-failure", "skip", "--exec", skip
    )
    subscribers.append(skipping)
    wait_until("f3's run", lambda: len(runs(where)) == 3)
    assert skipping.stop() == 0
    assert f"isccd: seq {f2} file.added" in skipping.stderr and "; skipped" in skipping.stderr
    assert cursor(c)["seq"] == f3

    # retry: run again, told so, and only then the next event.
    where = daemon.base / "retry"
    retry = _exec(hook, "fail-once", where, "f2.txt")
    retrying = Subscriber(daemon, where, *base, "--on-failure", "retry", "--exec", retry)
    subscribers.append(retrying)
    wait_until("f3's run", lambda: len(runs(where)) == 4)
    assert retrying.stop() == 0
    assert [(r["seq"], r["redelivered"], r.get("status", 0)) for r in runs(where)] == [
        (f1, "0", 0),
        (f2, "0", 3),
        (f2, "1", 0),
        (f3, "0", 0),
    ]
    assert f"isccd: seq {f2} file.added" in retrying.stderr
    assert "exited with status 3; run again in 1 s" in retrying.stderr


def test_a_command_that_hangs_is_killed_with_its_process_group_by_the_timeout(
    make_daemon: Callable[..., Daemon], hook: Path, subscribers: list[Subscriber]
) -> None:
    daemon = make_daemon()
    for n in (1, 2):
        (daemon.root / f"f{n}.txt").write_text(_text(n))
    daemon.start()
    seqs = {Path(e.path).name: e.seq for e in added(daemon)}
    where = daemon.base / "hook"
    hang = _exec(hook, "hang-on", where, "f1.txt")
    # 3 s: the command for f2, which does not hang, finishes well within it on a busy machine.
    args = ["--since", "0", "--type", "file.added", "--timeout", "3", "--on-failure", "skip"]
    subscriber = Subscriber(daemon, where, *args, "--exec", hang)
    subscribers.append(subscriber)
    pids = json.loads(wait_until("the hung command", lambda: _read(where / "hung")))
    # It ignores SIGTERM, and so does not its child: SIGKILL ends the group 5 s later.
    wait_until("f2's run", lambda: [r["seq"] for r in runs(where)] == [seqs["f2.txt"]], 30)
    assert subscriber.stop() == 0
    assert (
        f"isccd: seq {seqs['f1.txt']} file.added {daemon.root}/f1.txt: the command did not "
        "finish within 3 s and was killed; skipped"
    ) in subscriber.stderr
    wait_until("the command and its child gone", lambda: not any(_alive(p) for p in pids), 10)


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie no reaper collected does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


# -- bound and order --------------------------------------------------------------------------


@pytest.mark.parametrize("jobs", [1, 3])
def test_jobs_bounds_the_commands_in_flight_and_the_cursor_passes_only_what_is_done(
    make_daemon: Callable[..., Daemon],
    hook: Path,
    subscribers: list[Subscriber],
    jobs: int,
) -> None:
    daemon = make_daemon()
    for n in range(6):
        (daemon.root / f"f{n}.txt").write_text(_text(n))
    daemon.start()
    seqs = sorted(e.seq for e in added(daemon))
    assert len(seqs) == 6
    where = daemon.base / "hook"
    c = where / "c.cursor"
    args = ["--since", "0", "--type", "file.added", "--cursor", str(c), "--jobs", str(jobs)]
    subscriber = Subscriber(daemon, where, *args, "--exec", _exec(hook, "gate", where))
    subscribers.append(subscriber)

    def live() -> set[int]:
        folder = where / "live"
        return {int(p.name) for p in folder.iterdir()} if folder.exists() else set()

    # The commands run until released. The first `jobs` events run at once, and no more.
    wait_until(f"{jobs} commands running", lambda: live() == set(seqs[:jobs]))
    if jobs > 1:
        # The second one done first: the cursor records it, and does not pass the first.
        (where / f"release-{seqs[1]}").touch()
        wait_until("the second recorded", lambda: c.exists() and seqs[1] in cursor(c)["done"])
        assert cursor(c)["seq"] < seqs[0] and seqs[0] in cursor(c)["started"]
        wait_until("the fourth started", lambda: seqs[jobs] in live())
    for seq in seqs:
        (where / f"release-{seq}").touch()
        wait_until(f"{seq} done", functools.partial(_ran, where, seq))
    wait_until("the cursor at the last", lambda: cursor(c)["seq"] == seqs[-1])
    assert subscriber.stop() == 0
    got = runs(where)
    assert sorted(r["seq"] for r in got) == seqs
    counts = [n for r in got for n in (r["live_at_start"], r["live_at_release"])]
    assert max(counts) == jobs, counts
    assert cursor(c) == {**cursor(c), "seq": seqs[-1], "done": [], "started": []}


# -- killed at random moments -----------------------------------------------------------------


@pytest.mark.parametrize("seed", [20240601, 7])
def test_a_subscriber_killed_at_random_moments_misses_nothing_and_says_what_it_runs_again(
    make_daemon: Callable[..., Daemon], hook: Path, subscribers: list[Subscriber], seed: int
) -> None:
    rng = random.Random(seed)
    daemon = make_daemon()
    daemon.start()
    where = daemon.base / "hook"
    c = where / "c.cursor"
    jobs = 2
    args = ["--since", "0", "--type", "file.added", "--cursor", str(c), "--jobs", str(jobs)]
    command = _exec(hook, "once", where)
    written = 0
    kills = 0

    def handled() -> set[int]:
        return {r["seq"] for r in runs(where)}

    for _ in range(6):
        for _ in range(rng.randint(2, 6)):
            (daemon.root / f"f{written}.txt").write_text(_text(written))
            written += 1
        subscriber = Subscriber(daemon, where, *args, "--exec", command)
        subscribers.append(subscriber)
        target = min(len(handled()) + rng.randint(0, 3), written)
        wait_until(f"{target} events run", functools.partial(_at_least, handled, target))
        time.sleep(rng.uniform(0, 0.05))  # a random moment: in a command, or between two
        subscriber.kill()
        kills += 1

    final = Subscriber(daemon, where, *args, "--exec", command)
    subscribers.append(final)
    wait_until("every event run", lambda: len(handled()) == written)
    assert final.stop() == 0, final.stderr

    expected = sorted(e.seq for e in added(daemon))
    assert len(expected) == written
    got = runs(where)
    by_seq: dict[int, list[str]] = {}
    for run in got:
        by_seq.setdefault(run["seq"], []).append(run["redelivered"])
    context = f"seed {seed}, {kills} kills, runs {[(r['seq'], r['redelivered']) for r in got]}"
    assert sorted(by_seq) == expected, context  # none missed, none that is not an event
    for flags in by_seq.values():
        # A first run, then only runs told they may repeat one (a first run lost to a kill
        # before its command started makes every run of it a redelivery).
        assert flags.count("0") <= 1 and flags[1:] == ["1"] * (len(flags) - 1), context
    assert len(got) - len(expected) <= kills * jobs, context
    effects = [int(line.split()[0]) for line in (where / "effects").read_text().splitlines()]
    assert sorted(effects) == expected, context  # exactly once, for a command that checks
    assert cursor(c)["seq"] == expected[-1] and cursor(c)["started"] == []
