"""The conformance runner: input decoding, lookups, and how failures are reported."""

from __future__ import annotations

import io
from typing import Any

from isccd.iscc.conformance import Vector, iter_vectors, run_conformance, run_vector

DATA: dict[str, Any] = {
    "_metadata": {"generator": "test 0.1"},
    "echo": {
        "t_stream": {"inputs": ["stream:ff00"], "outputs": "bytes:ff00"},
        "t_bytes": {"inputs": ["bytes:0102", 7], "outputs": "bytes:0102"},
    },
    "gen_video_code_v0": {"t_frames": {"inputs": [[[1, 2], [3, 4]]], "outputs": [[1, 2], [3, 4]]}},
}


def echo(*args: Any) -> Any:
    if isinstance(args[0], io.BytesIO):
        return args[0].read()
    return args[0]


def test_inputs_are_decoded_and_streams_are_fresh() -> None:
    vector = next(iter_vectors(DATA))
    first, second = vector.arguments()[0], vector.arguments()[0]
    assert isinstance(first, io.BytesIO)
    assert first is not second
    assert first.read() == b"\xff\x00"
    assert vector.expected() == b"\xff\x00"
    assert vector.name == "echo/t_stream"


def test_video_frames_become_tuples() -> None:
    vector = list(iter_vectors(DATA))[2]
    assert vector.arguments() == [[(1, 2), (3, 4)]]


def test_a_report_counts_passes_and_lists_failures() -> None:
    # "echo" passes both of its vectors; gen_video_code_v0 returns tuples where lists are
    # expected, and a missing function fails with a message.
    report = run_conformance(DATA, {"echo": echo, "gen_video_code_v0": lambda frames: frames})
    assert (report.generator, report.passed, report.total, report.ok) == ("test 0.1", 2, 3, False)
    (failure,) = report.failures
    assert failure.vector.name == "gen_video_code_v0/t_frames"
    assert failure.as_dict() == {
        "name": "gen_video_code_v0/t_frames",
        "passed": False,
        "expected": [[1, 2], [3, 4]],
        "got": [(1, 2), (3, 4)],
    }
    missing = run_vector(Vector("nope", "t", (), None), {})
    assert missing.error == "isccd has no function nope"


def test_exceptions_are_reported_not_raised() -> None:
    def boom(*_: Any) -> Any:
        raise ValueError("bad input")

    outcome = run_vector(Vector("f", "t", (), 1), {"f": boom})
    assert not outcome.passed
    assert outcome.as_dict() == {
        "name": "f/t",
        "passed": False,
        "expected": 1,
        "error": "ValueError: bad input",
    }


def test_an_empty_data_set_is_not_ok() -> None:
    assert not run_conformance({"_metadata": {}}, {}).ok
