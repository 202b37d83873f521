"""Crafted plan files (:mod:`tests.chaos.crafted`) are refused: exit 2, one line on stderr
naming the fault, no traceback, and nothing touched, neither under the roots nor outside.

The host watches two roots (its configuration says so; no daemon, no index of its own); the
crafted plans try to act outside them, to move into them, and to break the loader with NUL
bytes, deep nesting, huge numbers and wrong types. Most run in this process; a few run the real
command as a subprocess.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isccd.cli.main import main
from isccd.dedupe.planfile import check_roots, plan_from_document
from isccd.errors import PlanFileError
from tests.chaos.crafted import Crafted, Host

#: The crafted plans the command also runs as a real process.
IN_A_PROCESS = (
    "a private pair under its own root",
    "a NUL in the victim's path",
    "100,000 nested arrays",
    "an integer of 5,000 digits",
    "a move into another watched root",
    "a FIFO",
)


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Host:
    return Host(tmp_path_factory.mktemp("crafted"))


def _check(host: Host, status: int, err: str, before: dict[str, tuple[int, bytes]]) -> None:
    fault = host.fault(status, err, before)
    assert fault is None, f"{fault}: {err!r}"


@pytest.mark.slow
def test_the_valid_plan_applies(host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    # The control: the same plan, unchanged, acts (on a copy of the host, to keep it whole).
    other = Host(host.base.parent / (host.base.name + "-valid"))
    status = main(other.argv(Crafted("valid", json.dumps(other.valid).encode())))
    _, err = capsys.readouterr()
    assert status == 0, err
    assert not (other.root / "b.bin").exists() and (other.root / "a.bin").exists()


@pytest.mark.slow
def test_there_are_at_least_fifty_crafted_plans(host: Host) -> None:
    assert len(host.plans) >= 50


@pytest.mark.slow
def test_every_crafted_plan_is_refused(host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    refused = []
    for name, crafted in host.plans.items():
        before = host.files()
        status = main(host.argv(crafted))
        _, err = capsys.readouterr()
        try:
            _check(host, status, err, before)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None
        refused.append(name)
    assert len(refused) == len(host.plans) >= 50


@pytest.mark.slow
@pytest.mark.parametrize("name", IN_A_PROCESS)
def test_the_real_command_refuses_them_too(host: Host, name: str) -> None:
    crafted = host.plans[name]
    before = host.files()
    done = subprocess.run(
        [sys.executable, "-m", "isccd", *host.argv(crafted)],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    _check(host, done.returncode, done.stderr, before)
    assert done.stdout == ""


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)


@pytest.mark.slow
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_value_anywhere_is_a_plan_or_a_one_line_refusal(
    host: Host, data: st.DataObject
) -> None:
    document = copy.deepcopy(host.valid)
    # A place in the document: the top, a group or a member; a key there, known or not.
    places: list[dict[str, Any]] = [
        document,
        document["groups"][0],
        *document["groups"][0]["members"],
    ]
    place = data.draw(st.sampled_from(places))
    key = data.draw(st.sampled_from([*place, "links", "extra"]))
    place[key] = data.draw(_json)
    try:
        plan = plan_from_document(json.loads(json.dumps(document)))
        check_roots(plan, [str(host.root), str(host.other)])
    except PlanFileError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 600
        return
    # Accepted: every file it names is inside one of the host's roots.
    for group in plan.groups:
        for member in group.members:
            assert member.root in (str(host.root), str(host.other))
            assert all(p.startswith(member.root + "/") for p in member.paths)
