"""One file's run through the stages of :func:`~isccd.hashing.compute_record`: the issues and
timings it collects, and the embedded metadata read along the way."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TypeVar

from isccd.errors import ToolMissingError
from isccd.extract.meta import Metadata
from isccd.extract.tools import MISSING
from isccd.hashing.issues import issue_from_exception
from isccd.hashing.options import ALGORITHM, EXTRACTION_REVISION, CodeOptions
from isccd.model import FileIssue, UnitType

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Described:
    """Embedded metadata, what read it, and what went wrong reading it.

    Attributes:
        meta: What was found.
        source: The profile components of what read it (``tika/0.6.0``, ``ffprobe/missing``);
            empty when nothing was read (plain text, metadata not wanted or unreadable).
        problem: Why nothing could be read.
    """

    meta: Metadata = field(default_factory=Metadata)
    source: str = ""
    problem: BaseException | None = None

    @classmethod
    def failed(cls, problem: BaseException) -> Described:
        """Nothing read; a missing tool is named in the source, so that installing it makes
        the Meta-Code outdated."""
        component = problem.component if isinstance(problem, ToolMissingError) else None
        return cls(problem=problem, source=f"{component}/{MISSING}" if component else "")


class Run:
    """Collects the results of one file's stages.

    Args:
        options: How the file is coded.
        timed: Record how long each stage lasts (:attr:`timings`); else nothing is timed.
    """

    def __init__(self, options: CodeOptions, *, timed: bool = False) -> None:
        self.options = options
        self.timed = timed
        self.issues: list[FileIssue] = []
        self.timings: list[tuple[str, float]] = []
        #: The embedded metadata read along with the content, kept for the Meta-Code even when
        #: the Content-Code then fails (so that it is not read twice).
        self.described: Described | None = None

    def stage(self, name: str) -> _Stage | _Untimed:
        """A context that records the milliseconds it lasts as the stage ``name`` (when the run
        is timed)."""
        return _Stage(self, name) if self.timed else _UNTIMED

    def add_timing(self, name: str, start: float) -> None:
        """Record the stage ``name`` as lasting from ``start`` (``time.perf_counter()``) to now."""
        self.timings.append((name, round((time.perf_counter() - start) * 1000.0, 3)))

    def issue(self, stage: str, exc: BaseException) -> None:
        issue = issue_from_exception(stage, exc)
        if isinstance(exc, ToolMissingError) and stage in _UNIT_STAGES:
            # The profile the unit would have had, with the component as missing: once it is
            # installed, the profile is outdated and the unit computed (see FileIssue.profile).
            # Without a named component, only a new extraction revision tries again.
            missing = (f"{exc.component}/{MISSING}",) if exc.component else ()
            issue = replace(issue, profile=self.profile(*missing, EXTRACTION_REVISION))
        self.issues.append(issue)

    def guarded(self, stage: str, compute: Callable[[], _T]) -> _T | None:
        """Run one stage; any failure becomes an issue of that stage instead of an exception."""
        start = time.perf_counter() if self.timed else 0.0
        try:
            return compute()
        except Exception as exc:
            # Decoders and tools fail in ways no list of exception types covers; a bad
            # file must cost only this stage, never the record or the worker.
            self.issue(stage, exc)
            return None
        finally:
            if self.timed:
                self.add_timing(stage, start)

    def profile(self, *parts: str) -> str:
        """The profile of a unit made by ``parts`` (``name/version`` components, or ``""``)."""
        return _profile(self.options.bits, parts)


@functools.lru_cache(maxsize=256)
def _profile(bits: int, parts: tuple[str, ...]) -> str:
    # A handful of profiles serve every file: made once, and then one string object, which
    # a worker's message of records pickles once (the pickle memo is by identity).
    return " ".join((ALGORITHM, f"bits/{bits}", *(p for p in parts if p)))


_UNIT_STAGES = frozenset(t.value for t in UnitType)


class _Stage:
    """The context of :meth:`Run.stage` (a class: a generator-based context manager costs a
    microsecond more, on every file)."""

    __slots__ = ("_name", "_run", "_start")

    def __init__(self, run: Run, name: str) -> None:
        self._run = run
        self._name = name
        self._start = 0.0

    def __enter__(self) -> None:
        self._start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self._run.add_timing(self._name, self._start)


class _Untimed:
    """The context of :meth:`Run.stage` when the run is not timed: nothing to record."""

    __slots__ = ()

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        pass


_UNTIMED = _Untimed()
