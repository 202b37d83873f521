"""The debouncer against a naive model (Hypothesis state machine), plus the cases that matter
to users: editor saves, downloads renamed into place, directory moves, floods."""

from __future__ import annotations

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from isccd.watch.debounce import (
    Change,
    ChangeKind,
    DebounceOptions,
    Debouncer,
    Dirty,
    Moved,
    Recrawl,
    RecrawlReason,
)

SETTLE = 0.25
MAX_DELAY = 2.0
MAX_OPEN = 30.0
ROOT = "/r"


def touched(path: str, root: str = ROOT) -> Change:
    return Change(ChangeKind.TOUCHED, root, path)


def written(path: str) -> Change:
    return Change(ChangeKind.WRITTEN, ROOT, path)


def closed(path: str) -> Change:
    return Change(ChangeKind.CLOSED, ROOT, path)


def test_a_burst_of_writes_is_released_once_after_the_quiet_period() -> None:
    d = Debouncer(DebounceOptions(SETTLE, MAX_DELAY))
    for i in range(10):
        assert d.add(touched("/r/a"), now=i * 0.1) == []
    assert d.next_deadline() == pytest.approx(0.9 + SETTLE)
    assert d.pop_due(1.0) == []
    assert d.pop_due(0.9 + SETTLE) == [Dirty(ROOT, "/r/a")]
    assert d.pop_due(100.0) == []
    assert d.next_deadline() is None
    assert d.statistics().coalesced == 9


def test_a_file_that_never_goes_quiet_is_released_after_the_maximum_delay() -> None:
    d = Debouncer(DebounceOptions(SETTLE, MAX_DELAY))
    t = 0.0
    released: list[tuple[float, Dirty]] = []
    while t < 5.0:
        d.add(touched("/r/log"), now=t)
        t += 0.1
        released += [(t, x) for x in d.pop_due(t)]
    assert released, "a continuously written file must still be processed"
    first_time, first = released[0]
    assert first == Dirty(ROOT, "/r/log")
    assert MAX_DELAY <= first_time <= MAX_DELAY + 0.1 + 1e-9


def test_a_file_written_slowly_is_released_once_after_its_close() -> None:
    # An upload: 1 MiB every 0.5 s for 8 s, quiet between writes for longer than settle, and
    # longer in all than max_delay: nothing is released before its close.
    d = Debouncer(DebounceOptions(SETTLE, MAX_DELAY, max_open_delay=MAX_OPEN))
    d.add(touched("/r/up"), 0.0)  # created
    released = []
    for step in range(16):
        now = step * 0.5
        d.add(written("/r/up"), now)
        released += d.pop_due(now + 0.49)
    assert released == []
    assert d.next_deadline() == pytest.approx(MAX_OPEN)
    d.add(closed("/r/up"), 8.0)
    assert d.pop_due(8.0 + SETTLE - 0.01) == []
    assert d.pop_due(8.0 + SETTLE) == [Dirty(ROOT, "/r/up")]
    assert len(d) == 0


def test_a_file_written_and_closed_at_once_settles_as_any_change() -> None:
    # A copy: created, written, closed in one go. Released after settle, as before the wait
    # for closes existed.
    d = Debouncer(DebounceOptions(SETTLE, MAX_DELAY, max_open_delay=MAX_OPEN))
    d.add(touched("/r/copy"), 0.0)
    d.add(written("/r/copy"), 0.001)
    d.add(closed("/r/copy"), 0.002)
    assert d.next_deadline() == pytest.approx(0.002 + SETTLE)
    assert d.pop_due(0.002 + SETTLE) == [Dirty(ROOT, "/r/copy")]


def test_a_file_kept_open_is_released_after_the_longest_wait_and_again_after_its_close() -> None:
    d = Debouncer(DebounceOptions(SETTLE, MAX_DELAY, max_open_delay=MAX_OPEN))
    d.add(written("/r/log"), 0.0)
    d.add(touched("/r/log"), 1.0)  # a chmod while it is open does not release it
    assert d.pop_due(MAX_OPEN - 0.01) == []
    assert d.pop_due(MAX_OPEN) == [Dirty(ROOT, "/r/log")]
    d.add(written("/r/log"), MAX_OPEN + 1)
    d.add(closed("/r/log"), MAX_OPEN + 2)
    assert d.pop_due(MAX_OPEN + 2 + SETTLE) == [Dirty(ROOT, "/r/log")]


def test_an_open_file_renamed_still_waits_for_its_close() -> None:
    d = Debouncer(DebounceOptions(SETTLE, MAX_DELAY, max_open_delay=MAX_OPEN))
    d.add(written("/r/a.part"), 0.0)
    assert d.add(Change(ChangeKind.MOVED, ROOT, "/r/a.part", "/r/a"), 1.0) == [
        Moved(ROOT, "/r/a.part", "/r/a")
    ]
    assert d.pop_due(MAX_DELAY + 1) == []
    d.add(closed("/r/a"), 3.0)
    assert d.pop_due(3.0 + SETTLE) == [Dirty(ROOT, "/r/a")]


def test_create_then_delete_is_one_look_at_the_path() -> None:
    d = Debouncer(DebounceOptions(SETTLE, MAX_DELAY))
    d.add(touched("/r/tmp"), 0.0)
    d.add(Change(ChangeKind.REMOVED, ROOT, "/r/tmp"), 0.05)
    assert d.pop_due(1.0) == [Dirty(ROOT, "/r/tmp")]


def test_an_editor_save_is_a_move_then_one_dirty_target() -> None:
    # write .a.swp, then rename it over a: the rename is passed on at once, and what was pending
    # for the temporary name now waits under the target name.
    d = Debouncer(DebounceOptions(SETTLE, MAX_DELAY))
    d.add(touched("/r/.a.tmp"), 0.0)
    assert d.add(Change(ChangeKind.MOVED, ROOT, "/r/.a.tmp", "/r/a"), 0.1) == [
        Moved(ROOT, "/r/.a.tmp", "/r/a")
    ]
    assert d.pop_due(0.2) == []
    assert d.pop_due(0.1 + SETTLE) == [Dirty(ROOT, "/r/a")]


def test_a_directory_move_carries_pending_children() -> None:
    d = Debouncer(DebounceOptions(SETTLE, MAX_DELAY))
    d.add(touched("/r/d/x"), 0.0)
    d.add(touched("/r/d/sub/y"), 0.0)
    d.add(touched("/r/dz"), 0.0)  # shares a prefix, not a parent
    out = d.add(Change(ChangeKind.MOVED, ROOT, "/r/d", "/r/e", is_dir=True), 0.1)
    assert out == [Moved(ROOT, "/r/d", "/r/e", is_dir=True)]
    assert sorted(x.path for x in d.flush()) == ["/r/dz", "/r/e/sub/y", "/r/e/x"]


def test_a_new_directory_is_looked_at_at_once() -> None:
    d = Debouncer(DebounceOptions(SETTLE, MAX_DELAY))
    out = d.add(Change(ChangeKind.DIR_ADDED, ROOT, "/r/new", is_dir=True), 0.0)
    assert out == [Dirty(ROOT, "/r/new", is_dir=True)]
    assert len(d) == 0


def test_a_flood_beyond_the_limit_becomes_one_recrawl_of_that_root() -> None:
    d = Debouncer(DebounceOptions(SETTLE, MAX_DELAY, max_pending=100))
    d.add(touched("/other/x", root="/other"), 0.0)
    actions = []
    for i in range(250):
        actions += d.add(touched(f"/r/f{i}"), 0.0)
        assert len(d) <= 100
    assert actions == [Recrawl(ROOT, RecrawlReason.PENDING)] * 2
    # The other root's pending path is kept; the flooded root's paths went into the recrawl.
    assert Dirty("/other", "/other/x") in d.flush()
    assert d.statistics().overflows == 2


def test_flush_releases_one_root_or_all() -> None:
    d = Debouncer(DebounceOptions(SETTLE, MAX_DELAY))
    d.add(touched("/r/a"), 0.0)
    d.add(touched("/s/b", root="/s"), 0.0)
    assert d.flush("/s") == [Dirty("/s", "/s/b")]
    assert d.flush() == [Dirty(ROOT, "/r/a")]
    assert d.flush() == []


def test_discard_root_forgets_its_paths() -> None:
    d = Debouncer(DebounceOptions(SETTLE, MAX_DELAY))
    d.add(touched("/r/a"), 0.0)
    d.add(touched("/s/b", root="/s"), 0.0)
    assert d.discard_root(ROOT) == 1
    assert d.pop_due(10.0) == [Dirty("/s", "/s/b")]


def test_invalid_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="settle: must be greater than 0"):
        DebounceOptions(0, 1)


PATHS = st.sampled_from(["/r/a", "/r/b", "/r/d/x", "/r/d/y", "/r/e", "/r/e/x"])


class DebouncerMachine(RuleBasedStateMachine):
    """Compares the debouncer with a naive dictionary model of the same rules."""

    def __init__(self) -> None:
        super().__init__()
        self.d = Debouncer(
            DebounceOptions(SETTLE, MAX_DELAY, max_pending=4, max_open_delay=MAX_OPEN)
        )
        self.now = 0.0
        # path -> (first, last, open for writing)
        self.model: dict[str, tuple[float, float, bool]] = {}

    def _deadline(self, path: str) -> float:
        first, last, open_ = self.model[path]
        return first + MAX_OPEN if open_ else min(last + SETTLE, first + MAX_DELAY)

    @rule(dt=st.floats(min_value=0, max_value=1.0))
    def advance(self, dt: float) -> None:
        self.now += dt

    @rule(
        path=PATHS,
        kind=st.sampled_from([ChangeKind.TOUCHED, ChangeKind.WRITTEN, ChangeKind.CLOSED]),
    )
    def touch(self, path: str, kind: ChangeKind) -> None:
        out = self.d.add(Change(kind, ROOT, path), self.now)
        if path in self.model:
            first, _, open_ = self.model[path]
            if kind is ChangeKind.WRITTEN:
                self.model[path] = (first, self.now, True)
            elif kind is ChangeKind.CLOSED and open_:
                self.model[path] = (self.now, self.now, False)
            else:
                self.model[path] = (first, self.now, open_)
            assert out == []
        elif len(self.model) >= 4:
            assert out == [Recrawl(ROOT, RecrawlReason.PENDING)]
            self.model.clear()
        else:
            self.model[path] = (self.now, self.now, kind is ChangeKind.WRITTEN)
            assert out == []

    @rule(src=PATHS, dest=PATHS)
    def move_file(self, src: str, dest: str) -> None:
        if src == dest:
            return
        assert self.d.add(Change(ChangeKind.MOVED, ROOT, src, dest), self.now) == [
            Moved(ROOT, src, dest)
        ]
        if src in self.model:
            first, _, open_ = self.model.pop(src)
            if dest in self.model:
                first = min(first, self.model[dest][0])
            self.model[dest] = (first, self.now, open_)

    @rule()
    def pop(self) -> None:
        released = {x.path for x in self.d.pop_due(self.now)}
        expected = {p for p in self.model if self._deadline(p) <= self.now}
        assert released == expected
        for path in expected:
            del self.model[path]

    @precondition(lambda self: bool(self.model))
    @rule()
    def flush(self) -> None:
        assert {x.path for x in self.d.flush()} == set(self.model)
        self.model.clear()

    @invariant()
    def deadline_is_the_earliest(self) -> None:
        expected = min((self._deadline(p) for p in self.model), default=None)
        got = self.d.next_deadline()
        if expected is None:
            assert got is None
        else:
            assert got == pytest.approx(expected)
        assert len(self.d) == len(self.model)


TestDebouncerMachine = pytest.mark.slow(DebouncerMachine.TestCase)
