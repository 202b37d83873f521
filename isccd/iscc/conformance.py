"""Run the ISCC conformance vectors (iscc-core's ``data.json``) against isccd's own functions.

The vectors are a mapping ``{function name: {test name: {"inputs": [...], "outputs": ...}}}``
(keys starting with ``_`` are metadata). A string value ``"stream:<hex>"`` stands for a binary
stream of those bytes, ``"bytes:<hex>"`` for the bytes themselves; the frame signatures of the
Video-Code vectors are lists that become tuples. Each vector calls the isccd function of the
same name with the inputs and passes when the whole result ``==`` the output.

Pure: the caller loads the JSON (the CLI from the packaged file, the tests from ``tests/``);
this module only runs it.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ConformanceReport", "Outcome", "Vector", "iter_vectors", "run_conformance"]

#: A function name -> callable lookup, e.g. the public API of :mod:`isccd.iscc`.
Api = Mapping[str, Callable[..., Any]]


def _decode(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("stream:"):
        return io.BytesIO(bytes.fromhex(value.removeprefix("stream:")))
    if isinstance(value, str) and value.startswith("bytes:"):
        return bytes.fromhex(value.removeprefix("bytes:"))
    return value


@dataclass(frozen=True, slots=True)
class Vector:
    """One conformance vector, with its values as they are in the JSON."""

    function: str
    test: str
    inputs: tuple[Any, ...]
    outputs: Any

    @property
    def name(self) -> str:
        """``function/test``, unique within a set of vectors."""
        return f"{self.function}/{self.test}"

    def arguments(self) -> list[Any]:
        """Fresh decoded arguments (streams are new objects on every call)."""
        args = [_decode(value) for value in self.inputs]
        if self.function.startswith("gen_video_code") and args and isinstance(args[0], list):
            args[0] = [tuple(frame) for frame in args[0]]
        return args

    def expected(self) -> Any:
        """The decoded expected result."""
        return _decode(self.outputs)


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of running one vector: passed, or what came instead."""

    vector: Vector
    passed: bool
    got: Any = None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly summary (bytes as hex)."""

        def plain(value: Any) -> Any:
            return value.hex() if isinstance(value, bytes) else value

        out: dict[str, Any] = {"name": self.vector.name, "passed": self.passed}
        if not self.passed:
            out["expected"] = plain(self.vector.expected())
            if self.error is not None:
                out["error"] = self.error
            else:
                out["got"] = plain(self.got)
        return out


@dataclass(frozen=True, slots=True)
class ConformanceReport:
    """The outcome of every vector of one data set."""

    generator: str
    outcomes: tuple[Outcome, ...] = field(default=())

    @property
    def total(self) -> int:
        """Number of vectors run."""
        return len(self.outcomes)

    @property
    def passed(self) -> int:
        """Number of vectors that passed."""
        return sum(o.passed for o in self.outcomes)

    @property
    def failures(self) -> tuple[Outcome, ...]:
        """The vectors that failed, in data-set order."""
        return tuple(o for o in self.outcomes if not o.passed)

    @property
    def ok(self) -> bool:
        """True when every vector passed (and there was at least one)."""
        return self.total > 0 and self.passed == self.total


def iter_vectors(data: Mapping[str, Any]) -> Iterator[Vector]:
    """The vectors of a parsed conformance data set, in file order.

    Raises:
        TypeError: ``data`` does not have the conformance data layout.
    """
    for function, tests in data.items():
        if function.startswith("_"):
            continue
        if not isinstance(tests, Mapping):
            raise TypeError(f"conformance data for {function!r} is not a mapping of tests")
        for test, values in tests.items():
            yield Vector(function, test, tuple(values["inputs"]), values["outputs"])


def _public_api() -> Api:
    # Imported here because this module is itself part of isccd.iscc's public API.
    import isccd.iscc as api  # noqa: PLC0415

    return {name: getattr(api, name) for name in api.__all__}


def run_vector(vector: Vector, api: Api | None = None) -> Outcome:
    """Run one vector against ``api`` (default: the public API of :mod:`isccd.iscc`)."""
    api = _public_api() if api is None else api
    func = api.get(vector.function)
    if func is None:
        return Outcome(vector, False, error=f"isccd has no function {vector.function}")
    try:
        got = func(*vector.arguments())
    except Exception as e:  # any failure of the function under test is a result to report
        return Outcome(vector, False, error=f"{type(e).__name__}: {e}")
    return Outcome(vector, got == vector.expected(), got=got)


def run_conformance(data: Mapping[str, Any], api: Api | None = None) -> ConformanceReport:
    """Run every vector of a parsed conformance data set.

    Args:
        data: the parsed JSON.
        api: function name -> callable; default: the public API of :mod:`isccd.iscc`.

    Returns:
        The report; ``generator`` is the data set's ``_metadata.generator`` (e.g.
        ``"iscc-core 1.5.0"``) or ``"unknown"``.
    """
    api = _public_api() if api is None else api
    meta = data.get("_metadata")
    generator = str(meta.get("generator", "unknown")) if isinstance(meta, Mapping) else "unknown"
    outcomes = tuple(run_vector(vector, api) for vector in iter_vectors(data))
    return ConformanceReport(generator, outcomes)
