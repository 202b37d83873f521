"""The preview cache (isccd.report.cache) and the files of a report looked at now, their
previews made in worker processes (isccd.report.thumbs)."""

from __future__ import annotations

import fcntl
import os
import threading
from concurrent.futures import Future
from pathlib import Path

import pytest

from isccd.report.cache import PreviewCache
from isccd.report.model import FileStat, Preview, PreviewKind
from isccd.report.preview import PreviewOptions
from isccd.report.thumbs import look_at
from tests.report.conftest import picture
from tests.report.crashing import crash_on, gated

OPTIONS = PreviewOptions()
STAT = FileStat(1, 2, 3, 4)


def test_an_entry_is_found_while_the_file_is_the_same(tmp_path: Path) -> None:
    cache = PreviewCache(tmp_path / "cache", recipe="size=160")
    preview = Preview(PreviewKind.TEXT, "text/plain", b"first\nlines", "")
    cache.put(cache.key("/r/a", STAT), preview)
    assert cache.get(cache.key("/r/a", STAT)) == preview
    others = [
        cache.key("/r/b", STAT),
        cache.key("/r/a", FileStat(9, 2, 3, 4)),
        cache.key("/r/a", FileStat(1, 9, 3, 4)),
        cache.key("/r/a", FileStat(1, 2, 9, 4)),
        cache.key("/r/a", FileStat(1, 2, 3, 9)),
        PreviewCache(tmp_path / "cache", recipe="size=320").key("/r/a", STAT),
    ]
    assert [cache.get(key) for key in others] == [None] * len(others)
    assert (tmp_path / "cache").stat().st_mode & 0o777 == 0o700


def test_a_name_that_is_not_utf8_has_its_own_entry(tmp_path: Path) -> None:
    cache = PreviewCache(tmp_path)
    odd = os.fsdecode(b"/r/caf\xe9")
    cache.put(cache.key(odd, STAT), Preview(PreviewKind.ICON, "", b"", "why"))
    assert cache.get(cache.key(odd, STAT)) == Preview(PreviewKind.ICON, "", b"", "why")
    assert cache.get(cache.key("/r/caf\xe9", STAT)) is None


def test_an_unreadable_entry_is_a_miss(tmp_path: Path) -> None:
    cache = PreviewCache(tmp_path)
    key = cache.key("/r/a", STAT)
    cache.put(key, Preview(PreviewKind.IMAGE, "image/png", b"RIFF...."))
    entry = tmp_path / key[:2] / key
    entry.write_bytes(b"not json\n")
    assert cache.get(key) is None
    entry.write_bytes(b'{"kind": "image"}')
    assert cache.get(key) is None


def test_pruning_drops_the_least_recently_used(tmp_path: Path) -> None:
    cache = PreviewCache(tmp_path, max_bytes=2500)
    keys = [cache.key(f"/r/{i}", STAT) for i in range(4)]
    for age, key in enumerate(keys):
        cache.put(key, Preview(PreviewKind.IMAGE, "image/png", bytes(1000)))
        entry = tmp_path / key[:2] / key
        os.utime(entry, ns=(0, (10 - age) * 10**9))  # keys[0] the most recent, keys[3] oldest
    assert cache.get(keys[3]) is not None  # used now: the most recent of all
    assert cache.prune() == 2
    assert [cache.get(k) is not None for k in keys] == [True, False, False, True]


def _write_photo(path: Path, seed: int) -> None:
    picture(seed, (320, 240)).save(path, quality=85)


@pytest.mark.slow
def test_a_second_look_decodes_nothing_that_did_not_change(tmp_path: Path) -> None:
    photo = tmp_path / "photo.jpg"
    _write_photo(photo, 1)
    cache = PreviewCache(tmp_path / "cache")
    files, roots = {str(photo): str(tmp_path)}, [str(tmp_path)]
    first = look_at(files, OPTIONS, cache, roots=roots, jobs=1)[str(photo)]
    assert first.preview.kind is PreviewKind.IMAGE
    # Other bytes behind the same name, size and time: only a decode would notice.
    st = photo.stat()
    photo.write_bytes(bytes(st.st_size))
    os.utime(photo, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert photo.stat().st_ino == st.st_ino
    again = look_at(files, OPTIONS, cache, roots=roots, jobs=1)[str(photo)]
    assert again == first
    # Without the cache, the same file is decoded (and is no image any more).
    assert look_at(files, OPTIONS, None, roots=roots, jobs=1)[str(photo)].preview.kind is (
        PreviewKind.ICON
    )


def test_facts_say_what_each_file_is_now(tmp_path: Path) -> None:
    photo = tmp_path / "photo.jpg"
    _write_photo(photo, 2)
    (tmp_path / "link.jpg").symlink_to(photo)
    paths = [str(photo), str(tmp_path / "gone.jpg"), str(tmp_path / "link.jpg")]
    seen: list[tuple[int, int]] = []
    facts = look_at(
        dict.fromkeys(paths, str(tmp_path)), OPTIONS, None, roots=[str(tmp_path)], jobs=2,
        progress=lambda d, t: seen.append((d, t)),
    )  # fmt: skip
    st = photo.stat()
    assert facts[str(photo)].stat == FileStat(
        st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_blocks * 512
    )
    assert facts[str(photo)].preview.kind is PreviewKind.IMAGE
    assert (facts[str(tmp_path / "gone.jpg")].stat, facts[str(tmp_path / "gone.jpg")].preview) == (
        None,
        Preview(PreviewKind.ICON, note="gone since it was indexed"),
    )
    assert facts[str(tmp_path / "link.jpg")].preview.note == "now a symbolic link"
    assert seen == [(1, 1)]  # one file to decode, once


@pytest.mark.slow
def test_a_worker_that_dies_costs_only_a_preview(tmp_path: Path) -> None:
    paths = []
    for i in range(4):
        name = "crash.jpg" if i == 2 else f"photo{i}.jpg"
        _write_photo(tmp_path / name, i)
        paths.append(str(tmp_path / name))
    cache = PreviewCache(tmp_path / "cache")
    files = dict.fromkeys(paths, str(tmp_path))
    facts = look_at(files, OPTIONS, cache, roots=[str(tmp_path)], jobs=2, make=crash_on)
    kinds = {Path(p).name: f.preview.kind for p, f in facts.items()}
    assert kinds == {Path(p).name: PreviewKind.IMAGE for p in paths} | {
        "crash.jpg": PreviewKind.ICON
    }
    assert facts[paths[2]].preview.note == "no preview: the process making it died"
    # Not kept: the next report tries again.
    st = (tmp_path / "crash.jpg").stat()
    key = cache.key(paths[2], FileStat(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    assert cache.get(key) is None


@pytest.mark.slow
def test_an_interrupted_look_waits_only_for_the_previews_under_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C while previews are made: the files handed to the pool but not yet to a worker
    # are dropped, so that the report ends once the previews under way are done, not after
    # every file it had queued (four a worker).
    jobs = 4
    root = tmp_path / "root"
    root.mkdir()
    paths = []
    for i in range(40):
        path = root / ("first.txt" if i == 0 else f"f{i:02}.txt")
        path.write_text(f"file {i}\n")
        paths.append(str(path))
    seen = []

    with (root / "gate").open("wb") as gate:
        fcntl.flock(gate, fcntl.LOCK_EX)  # every file but the first waits for it
        opened = threading.Event()

        def open_gate() -> None:
            if not opened.is_set():
                opened.set()
                fcntl.flock(gate, fcntl.LOCK_UN)

        # The gate opens once the pool drops a file: the pool's thread drops all it will
        # before it hands another to a worker, so what is made is what was under way.
        cancel = Future.cancel

        def cancel_then_open(future: Future[object]) -> bool:
            dropped = cancel(future)
            if dropped:
                open_gate()
            return dropped

        monkeypatch.setattr(Future, "cancel", cancel_then_open)

        # A pool that drops nothing would wait on the gate for ever: opened late then.
        late = threading.Timer(30, open_gate)

        def interrupt(done: int, total: int) -> None:
            seen.append(done)
            late.start()
            raise KeyboardInterrupt

        try:
            with pytest.raises(KeyboardInterrupt):
                files = dict.fromkeys(paths, str(root))
                look_at(
                    files,
                    OPTIONS,
                    None,
                    roots=[str(root)],
                    jobs=jobs,
                    make=gated,
                    progress=interrupt,
                )
        finally:
            late.cancel()
            if late.is_alive():
                late.join()
    made = (root / "made.log").read_text().split()
    assert seen == [1]
    assert made[0] == "first.txt"
    # Under way: the first, a file in each worker and the pool's queue to them (a file more
    # than the workers); before, every file handed to the pool, 4 a worker.
    assert len(made) <= 1 + jobs + (jobs + 1) < 4 * jobs
