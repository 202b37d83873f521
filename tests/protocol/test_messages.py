"""Replies and events on the wire (docs/protocol.md): events with their data at the top level,
results, error replies, and garbage from a server refused."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from isccd.errors import ProtocolError
from isccd.model import Event, EventType
from isccd.protocol import (
    ErrorCode,
    Reply,
    UnknownEvent,
    decode_message,
    encode_error,
    encode_event,
    encode_result,
    lagged_event,
)
from tests.protocol.strategies import ids, json_values, paths

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
