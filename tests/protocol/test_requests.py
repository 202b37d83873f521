"""Requests (docs/protocol.md): every request round-trips, and bad ones are refused with a code."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.model import Event, EventType
from isccd.protocol import (
    DirsRequest,
    DupesRequest,
    ErrorCode,
    EventFilter,
    GetRequest,
    HelloRequest,
    RescanRequest,
    SimilarRequest,
    StatusRequest,
    SubscribeRequest,
    SyncRequest,
    UnsubscribeRequest,
    decode_request,
    encode_request,
)
from isccd.protocol.requests import RequestError
from isccd.results import DirsQuery, DupesQuery, SimilarQuery
from tests.protocol.strategies import ids, normal_paths, paths

limits = st.integers(min_value=1, max_value=10_000)

requests = st.one_of(
    st.builds(
        HelloRequest,
        ids,
        st.none() | st.integers(min_value=1, max_value=9),
        st.none() | st.text(min_size=1, max_size=30),
    ),
    st.builds(StatusRequest, ids),
    st.builds(
        SubscribeRequest,
        ids,
        st.none() | st.integers(min_value=0, max_value=2**62),
        st.builds(
            EventFilter,
            st.none() | st.frozensets(st.sampled_from(EventType), min_size=1),
            st.none() | st.frozensets(normal_paths, min_size=1, max_size=3),
        ),
        st.none() | st.uuids().map(str),
    ),
    st.builds(UnsubscribeRequest, ids),
    st.builds(GetRequest, ids, paths),
    st.builds(
        SimilarRequest,
        ids,
        st.one_of(
            st.builds(SimilarQuery, path=paths, code=st.none(), limit=limits),
            st.builds(
                SimilarQuery,
                path=st.none(),
                code=st.text(min_size=1, max_size=60),
                max_distance=st.none() | st.integers(min_value=0, max_value=64),
                limit=limits,
            ),
        ),
    ),
    st.builds(
        DupesRequest,
        ids,
        st.builds(DupesQuery, st.booleans(), st.none() | paths, st.integers(1, 100_000)),
    ),
    st.builds(
        DirsRequest,
        ids,
        st.builds(
            DirsQuery,
            st.booleans(),
            st.floats(min_value=0.01, max_value=1.0),
            st.none() | paths,
            st.integers(1, 100_000),
            st.none() | st.text(min_size=1, max_size=20),
            st.booleans(),
        ),
    ),
    st.builds(RescanRequest, ids, st.none() | paths),
    st.builds(SyncRequest, ids, st.none() | paths),
)


@given(requests)
def test_requests_round_trip(request: Any) -> None:
    line = encode_request(request)
    assert line.endswith(b"\n")
    assert line.isascii()
    assert decode_request(line[:-1]) == request


def _error(line: bytes) -> RequestError:
    with pytest.raises(RequestError) as info:
        decode_request(line)
    return info.value


@pytest.mark.parametrize(
    ("line", "code", "request_id"),
    [
        (b"\xff\xfe", ErrorCode.INVALID_UTF8, None),
        (b'{"id": 1, "cmd": "status"', ErrorCode.INVALID_JSON, None),
        (b'{"id": 1, "cmd": "status", "x": NaN}', ErrorCode.INVALID_JSON, None),
        (b"[" * 100_000, ErrorCode.INVALID_JSON, None),
        (b"[1, 2]", ErrorCode.NOT_AN_OBJECT, None),
        (b'"status"', ErrorCode.NOT_AN_OBJECT, None),
        (b'{"cmd": "status"}', ErrorCode.INVALID_REQUEST, None),
        (b'{"id": true, "cmd": "status"}', ErrorCode.INVALID_REQUEST, None),
        (b'{"id": 1.5, "cmd": "status"}', ErrorCode.INVALID_REQUEST, None),
        (b'{"id": [], "cmd": "status"}', ErrorCode.INVALID_REQUEST, None),
        (b'{"id": 7}', ErrorCode.INVALID_REQUEST, 7),
        (b'{"id": 7, "cmd": 3}', ErrorCode.INVALID_REQUEST, 7),
        (b'{"id": "q", "cmd": "frobnicate"}', ErrorCode.UNKNOWN_COMMAND, "q"),
        (b'{"id": 1, "cmd": "status", "verbose": true}', ErrorCode.INVALID_ARGUMENT, 1),
        (b'{"id": 1, "cmd": "get"}', ErrorCode.INVALID_ARGUMENT, 1),
        (b'{"id": 1, "cmd": "get", "path": "relative/x"}', ErrorCode.INVALID_ARGUMENT, 1),
        (b'{"id": 1, "cmd": "get", "path": "/a\\u0000b"}', ErrorCode.INVALID_ARGUMENT, 1),
        (b'{"id": 1, "cmd": "get", "path": 5}', ErrorCode.INVALID_ARGUMENT, 1),
        (b'{"id": 1, "cmd": "subscribe", "since": -1}', ErrorCode.INVALID_ARGUMENT, 1),
        (b'{"id": 1, "cmd": "subscribe", "since": "3"}', ErrorCode.INVALID_ARGUMENT, 1),
        (b'{"id": 1, "cmd": "subscribe", "since": true}', ErrorCode.INVALID_ARGUMENT, 1),
        (b'{"id": 1, "cmd": "subscribe", "types": ["dup.big"]}', ErrorCode.INVALID_ARGUMENT, 1),
        (b'{"id": 1, "cmd": "subscribe", "types": []}', ErrorCode.INVALID_ARGUMENT, 1),
        (b'{"id": 1, "cmd": "subscribe", "roots": ["x"]}', ErrorCode.INVALID_ARGUMENT, 1),
        (b'{"id": 1, "cmd": "subscribe", "store": 5}', ErrorCode.INVALID_ARGUMENT, 1),
        (
            b'{"id": 1, "cmd": "subscribe", "store": "' + b"u" * 65 + b'"}',
            ErrorCode.INVALID_ARGUMENT,
            1,
        ),
        (b'{"id": 1, "cmd": "similar"}', ErrorCode.INVALID_ARGUMENT, 1),
        (b'{"id": 1, "cmd": "similar", "path": "/a", "code": "X"}', ErrorCode.INVALID_ARGUMENT, 1),
        (b'{"id": 1, "cmd": "similar", "code": "X", "limit": 0}', ErrorCode.INVALID_ARGUMENT, 1),
        (
            b'{"id": 1, "cmd": "similar", "code": "X", "max_distance": 65}',
            ErrorCode.INVALID_ARGUMENT,
            1,
        ),
        (b'{"id": 1, "cmd": "dupes", "near": "yes"}', ErrorCode.INVALID_ARGUMENT, 1),
        (b'{"id": 1, "cmd": "hello", "protocol": 0}', ErrorCode.INVALID_ARGUMENT, 1),
    ],
)
def test_bad_requests_are_refused_with_a_code(line: bytes, code: str, request_id: Any) -> None:
    error = _error(line)
    assert error.code == code
    assert error.request_id == request_id
    assert error.message


def test_a_path_longer_than_path_max_is_refused() -> None:
    line = json.dumps({"id": 1, "cmd": "get", "path": "/" + "a" * 4096}).encode()
    assert _error(line).code == ErrorCode.INVALID_ARGUMENT


#: Every string field of every command, with a lone surrogate that stands for no byte.
SURROGATE_FIELDS = [
    {"cmd": "get", "path": "/w/\ud800"},
    {"cmd": "similar", "path": "/w/\udfff"},
    {"cmd": "similar", "code": "ISCC:\ud800"},
    {"cmd": "dupes", "root": "/w/\ud800x"},
    {"cmd": "rescan", "path": "/w/\udc7f"},
    {"cmd": "sync", "path": "/w/\ud800"},
    {"cmd": "subscribe", "roots": ["/w", "/w/\ud800"]},
    {"cmd": "subscribe", "types": ["file.added\ud800"]},
    {"cmd": "hello", "client": "tool\ud800"},
]


@pytest.mark.parametrize(
    "fields", SURROGATE_FIELDS, ids=lambda f: "-".join(k if k != "cmd" else v for k, v in f.items())
)
def test_lone_surrogates_are_invalid_arguments(fields: dict[str, Any]) -> None:
    line = json.dumps({"id": 1, **fields}).encode()  # escaped, so the line is valid UTF-8
    error = _error(line)
    assert (error.code, error.request_id) == (ErrorCode.INVALID_ARGUMENT, 1), error.message


def test_a_lone_surrogate_in_the_id_is_an_invalid_request() -> None:
    error = _error(b'{"id": "a\\ud800", "cmd": "status"}')
    assert (error.code, error.request_id) == (ErrorCode.INVALID_REQUEST, None)


def test_paths_may_carry_the_bytes_of_names_that_are_not_utf8() -> None:
    request = decode_request(b'{"id": 1, "cmd": "get", "path": "/w/caf\\udce9"}')
    assert isinstance(request, GetRequest)
    assert os.fsencode(request.path) == b"/w/caf\xe9"


def test_subscribe_roots_are_normalized() -> None:
    request = decode_request(b'{"id": 1, "cmd": "subscribe", "roots": ["/srv//media/./x/../"]}')
    assert isinstance(request, SubscribeRequest)
    assert request.filter.roots == frozenset({"/srv/media"})


def test_event_filters_pass_daemon_wide_events_and_select_by_type_and_root() -> None:
    def event(event_type: EventType, root: str) -> Event:
        return Event(1, event_type, 0.0, root, "")

    only = EventFilter(types=frozenset({EventType.DUP_EXACT}), roots=frozenset({"/a"}))
    assert only.matches(event(EventType.DUP_EXACT, "/a"))
    assert only.matches(event(EventType.DUP_EXACT, ""))  # daemon-wide
    assert not only.matches(event(EventType.DUP_EXACT, "/b"))
    assert not only.matches(event(EventType.FILE_ADDED, "/a"))
    assert EventFilter().matches(event(EventType.FILE_ADDED, "/b"))
