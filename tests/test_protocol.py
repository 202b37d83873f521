"""The wire format of docs/protocol.md: framing, requests, replies, events and results."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.errors import ProtocolError
from isccd.model import Event, EventType, FileIssue, IssueCode, IssueKind, Mode, UnitType
from isccd.protocol import (
    MAX_LINE_BYTES,
    DaemonStatus,
    DupesQuery,
    DupesRequest,
    DupesResult,
    DupGroup,
    DupKind,
    DupMember,
    DupPair,
    ErrorCode,
    EventFilter,
    FileInfo,
    GetRequest,
    HelloRequest,
    HelloResult,
    LineSplitter,
    OversizedLine,
    Relation,
    Reply,
    RescanRequest,
    RootStatus,
    ScanProgress,
    ServiceStatistics,
    SimilarMatch,
    SimilarQuery,
    SimilarRequest,
    SimilarResult,
    StatusRequest,
    SubscribeRequest,
    SubscribeResult,
    SyncRequest,
    UnitInfo,
    UnknownEvent,
    UnsubscribeRequest,
    decode_message,
    decode_request,
    encode_error,
    encode_event,
    encode_request,
    encode_result,
    from_wire,
    lagged_event,
    to_wire,
)
from isccd.protocol.requests import RequestError

# -- framing ----------------------------------------------------------------------------------

lines_st = st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=20)


def _feed_all(splitter: LineSplitter, data: bytes, cuts: list[int]) -> list[bytes | OversizedLine]:
    out: list[bytes | OversizedLine] = []
    start = 0
    for cut in sorted(c % (len(data) + 1) for c in cuts):
        out += splitter.feed(data[start:cut]) if cut > start else []
        start = max(start, cut)
    out += splitter.feed(data[start:])
    return out + splitter.eof()


@given(lines=lines_st, cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=8))
def test_any_split_of_the_stream_gives_the_same_lines(lines: list[bytes], cuts: list[int]) -> None:
    data = b"".join(line + b"\n" for line in lines)
    got = _feed_all(LineSplitter(max_line=24), data, cuts)
    expected = [
        OversizedLine(24) if len(line.removesuffix(b"\r")) > 24 else line.removesuffix(b"\r")
        for line in lines
        if line.removesuffix(b"\r").strip() or len(line.removesuffix(b"\r")) > 24
    ]
    assert got == expected


def test_an_oversized_line_is_discarded_up_to_its_newline_and_reading_goes_on() -> None:
    splitter = LineSplitter()
    big = b"x" * (MAX_LINE_BYTES + 2)
    out = splitter.feed(b'{"a":1}\n' + big[: MAX_LINE_BYTES // 2])
    out += splitter.feed(big[MAX_LINE_BYTES // 2 :])  # passes the limit: reported at once
    assert out == [b'{"a":1}', OversizedLine(MAX_LINE_BYTES)]
    assert splitter.buffered == 0
    assert splitter.feed(b"more of the long line") == []
    assert splitter.feed(b'\n{"b":2}\n') == [b'{"b":2}']


def test_a_line_of_exactly_the_limit_passes() -> None:
    line = b"y" * MAX_LINE_BYTES
    assert LineSplitter().feed(line + b"\r\n") == [line]


def test_a_crlf_line_of_exactly_the_limit_passes_however_it_is_split() -> None:
    line = b"z" * 24
    for cut in range(len(line) + 3):
        data = line + b"\r\n"
        splitter = LineSplitter(max_line=24)
        assert splitter.feed(data[:cut]) + splitter.feed(data[cut:]) == [line]


def test_an_unterminated_last_line_counts_at_eof() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b'{"id":1}') == []
    assert splitter.eof() == [b'{"id":1}']


# -- requests ---------------------------------------------------------------------------------

ids = st.one_of(st.integers(min_value=-(2**53), max_value=2**53), st.text(min_size=0, max_size=20))
abs_paths = st.lists(
    st.text(st.characters(blacklist_characters="/\0", blacklist_categories=["Cs"]), min_size=1),
    min_size=1,
    max_size=4,
).map(lambda parts: "/" + "/".join(parts))
# Names that are not UTF-8 arrive as lone surrogates (os.fsdecode); they must round-trip too.
raw_paths = st.binary(min_size=1, max_size=30).map(
    lambda b: "/" + os.fsdecode(b.replace(b"\0", b"_").replace(b"/", b"_"))
)
paths = st.one_of(abs_paths, raw_paths)
normal_paths = st.lists(st.from_regex(r"[a-z]{1,5}", fullmatch=True), min_size=1, max_size=3).map(
    lambda p: "/" + "/".join(p)
)
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


# -- replies and events -----------------------------------------------------------------------

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.text(max_size=10)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
events = st.builds(
    Event,
    seq=st.integers(min_value=0, max_value=2**62),
    type=st.sampled_from(EventType),
    time=st.floats(min_value=0, max_value=4e9),
    root=st.one_of(st.just(""), paths),
    path=st.one_of(st.just(""), paths),
    data=st.dictionaries(
        st.text(max_size=8).filter(lambda k: k not in {"event", "seq", "time", "root", "path"}),
        json_values,
        max_size=4,
    ),
)


@given(events)
def test_events_round_trip_with_their_data_at_the_top_level(event: Event) -> None:
    line = encode_event(event)
    assert line.isascii()
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    obj = json.loads(line)
    assert obj["event"] == event.type.value
    assert obj["seq"] == event.seq
    assert decode_message(line[:-1]) == event


@given(st.binary(min_size=1, max_size=40))
def test_non_utf8_path_bytes_survive_the_wire(name: bytes) -> None:
    path = os.fsdecode(b"/r/" + name.replace(b"\0", b"_"))
    decoded = decode_message(encode_event(Event(1, EventType.FILE_ADDED, 0.0, "/r", path))[:-1])
    assert isinstance(decoded, Event)
    assert os.fsencode(decoded.path) == b"/r/" + name.replace(b"\0", b"_")


def test_event_data_never_shadows_the_envelope() -> None:
    event = Event(1, EventType.SCAN_DONE, 2.0, "/r", "", {"root": "/elsewhere", "seen": 3})
    obj = json.loads(encode_event(event))
    assert obj == {"event": "scan.done", "seq": 1, "time": 2.0, "root": "/r", "path": "", "seen": 3}


def test_events_of_unknown_types_are_recognized_with_their_seq() -> None:
    line = b'{"event": "file.teleported", "seq": 3, "time": 1, "root": "/r", "path": "/r/a"}'
    assert decode_message(line) == UnknownEvent("file.teleported", 3)


def test_the_lagged_notice_carries_the_resume_point() -> None:
    obj = json.loads(encode_event(lagged_event(41, 1.5, 100)))
    assert obj["event"] == "subscriber.lagged"
    assert obj["seq"] == 41
    assert obj["resume"] == 41
    assert {"time", "root", "path"} <= obj.keys()


@given(ids, st.dictionaries(st.text(max_size=5), json_values, max_size=4))
def test_results_round_trip(request_id: Any, result: dict[str, Any]) -> None:
    reply = decode_message(encode_result(request_id, result)[:-1])
    assert isinstance(reply, Reply)
    assert reply.ok
    assert reply.id == request_id
    assert reply.unwrap() == result


def test_error_replies_raise_their_code() -> None:
    reply = decode_message(encode_error(None, ErrorCode.LINE_TOO_LONG, "too long")[:-1])
    assert isinstance(reply, Reply)
    assert not reply.ok
    assert reply.id is None
    with pytest.raises(ProtocolError) as info:
        reply.unwrap()
    assert info.value.code == "line_too_long"


@pytest.mark.parametrize(
    "line",
    [b"not json", b"[]", b'{"id": 1}', b'{"id": 1, "ok": false}', b'{"event": 1, "seq": 2}'],
)
def test_garbage_from_the_server_is_an_invalid_reply(line: bytes) -> None:
    with pytest.raises(ProtocolError) as info:
        decode_message(line)
    assert info.value.code == ErrorCode.INVALID_REPLY


# -- typed results ----------------------------------------------------------------------------

texts = st.text(max_size=12)
opt_int = st.none() | st.integers(min_value=0, max_value=2**62)
opt_float = st.none() | st.floats(min_value=0, max_value=4e9)
matches = st.lists(
    st.builds(
        SimilarMatch,
        paths,
        paths,
        st.sampled_from(UnitType),
        st.integers(0, 256),
        st.integers(0, 256),
        texts,
        st.sampled_from(Relation),
    ),
    max_size=3,
).map(tuple)
results = st.one_of(
    st.builds(
        HelloResult,
        st.integers(1, 9),
        texts,
        st.tuples(texts),
        st.tuples(texts, texts),
        st.integers(1, 2**30),
        st.integers(1, 2**30),
        st.none() | st.uuids().map(str),
    ),
    st.builds(
        DaemonStatus,
        version=texts,
        pid=st.integers(1, 2**22),
        state=texts,
        started=st.floats(0, 4e9),
        roots=st.lists(
            st.builds(
                RootStatus,
                paths,
                texts,
                st.integers(0, 2**40),
                st.none()
                | st.builds(ScanProgress, texts, texts, *[st.integers(0, 9)] * 4, st.floats(0, 1)),
                st.none() | texts,
            ),
            max_size=3,
        ).map(tuple),
        queue_depth=st.integers(0, 2**30),
        files_indexed=st.integers(0, 2**40),
        last_seq=st.integers(0, 2**62),
        server=st.none() | st.builds(ServiceStatistics, *[st.integers(0, 2**30)] * 4),
    ),
    st.builds(
        SubscribeResult,
        *[st.integers(0, 2**62)] * 3,
        st.booleans(),
        st.none() | st.uuids().map(str),
    ),
    st.builds(
        FileInfo,
        path=paths,
        root=paths,
        size=opt_int,
        mtime=opt_float,
        mediatype=st.none() | texts,
        mode=st.none() | st.sampled_from(Mode),
        iscc=st.none() | texts,
        datahash=st.none() | texts,
        name=st.none() | texts,
        units=st.lists(
            st.builds(UnitInfo, st.sampled_from(UnitType), texts, st.integers(0, 256), texts),
            max_size=4,
        ).map(tuple),
        issues=st.lists(
            st.builds(
                FileIssue,
                texts,
                st.sampled_from(IssueKind),
                texts,
                st.none() | st.sampled_from(IssueCode),
            ),
            max_size=2,
        ).map(tuple),
        indexed=opt_float,
        removed=opt_float,
        links=st.lists(paths, max_size=2).map(tuple),
        duplicates=matches,
    ),
    st.builds(SimilarResult, matches, st.booleans()),
    st.builds(
        DupesResult,
        st.lists(
            st.builds(
                DupGroup,
                st.sampled_from(DupKind),
                st.sampled_from(UnitType),
                st.integers(0, 64),
                st.integers(0, 2**50),
                st.lists(
                    st.builds(
                        DupMember,
                        paths,
                        paths,
                        opt_int,
                        st.none() | texts,
                        st.none() | st.integers(0, 64),
                        st.lists(paths, max_size=2).map(tuple),
                    ),
                    max_size=3,
                ).map(tuple),
                st.lists(
                    st.builds(
                        DupPair,
                        st.integers(0, 9),
                        st.integers(0, 9),
                        st.sampled_from(UnitType),
                        st.integers(0, 64),
                        st.integers(0, 64),
                    ),
                    max_size=2,
                ).map(tuple),
            ),
            max_size=3,
        ).map(tuple),
        st.booleans(),
    ),
)


@given(results)
def test_typed_results_round_trip_through_json(result: Any) -> None:
    obj = json.loads(json.dumps(to_wire(result)))
    assert from_wire(type(result), obj) == result


def test_readers_ignore_members_they_do_not_know_and_default_missing_optional_ones() -> None:
    obj = {"path": "/r/a", "root": "/r", "colour": "blue"}
    assert from_wire(FileInfo, obj) == FileInfo("/r/a", "/r")


@pytest.mark.parametrize(
    "obj",
    [
        {"root": "/r"},
        {"path": 3, "root": "/r"},
        {"path": "/r/a", "root": "/r", "size": True},
        {"path": "/r/a", "root": "/r", "mode": "smell"},
        {"path": "/r/a", "root": "/r", "units": {}},
    ],
)
def test_readers_reject_members_of_the_wrong_type(obj: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"FileInfo\."):
        from_wire(FileInfo, obj)
