"""``isccd selftest``, ``isccd explain`` and ``isccd compare``, run as real processes."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import iscc_core as ic
import pytest

ISCC_CODE = "ISCC:KACYPXW445FTYNJ3CYSXHAFJMA2HUWULUNRFE3BLHRSCXYH2M5AEGQY"
SCRIPT = Path(sys.executable).with_name("isccd")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "isccd"]


def isccd(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``isccd`` with stdout and stderr piped (so not a terminal)."""
    return subprocess.run(
        [*COMMAND, *args], capture_output=True, text=True, timeout=60, check=False
    )


def isccd_on_a_terminal(*args: str) -> tuple[int, str]:
    """Run ``isccd`` with stdout on a pseudo-terminal; returns the exit status and the output."""
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [*COMMAND, *args], stdout=follower, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
    ) as proc:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        status = proc.wait(timeout=60)
    os.close(leader)
    return status, b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.slow
def test_selftest_passes_every_vector() -> None:
    result = isccd("selftest")
    assert result.stdout.splitlines()[-1] == (
        "isccd selftest: 58/58 conformance vectors pass (iscc-core 1.5.0 data)"
    ), result.stdout
    assert result.returncode == 0


@pytest.mark.slow
def test_selftest_json_report() -> None:
    result = isccd("selftest", "--json")
    report = json.loads(result.stdout)
    assert report["total"] == 58
    assert report["data"] == "iscc-core 1.5.0"
    assert len(report["failures"]) == 58 - report["passed"]
    assert result.returncode == (0 if report["ok"] else 1)


@pytest.mark.slow
def test_selftest_lists_failures_and_exits_1() -> None:
    # A real isccd process with one function replaced by a wrong one: the four decode_seq
    # vectors must be reported, the rest still pass.
    program = (
        "import isccd.iscc as ic; ic.decode_seq = lambda data: ['ISCC:WRONG'];"
        "from isccd.cli.main import main; raise SystemExit(main(['selftest']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 1
    fails = [line for line in result.stdout.splitlines() if line.startswith("FAIL ")]
    assert sum(line.startswith("FAIL decode_seq/") for line in fails) == 4
    summary = result.stdout.splitlines()[-1]
    assert summary.endswith("conformance vectors passed (iscc-core 1.5.0 data)")
    assert "/58 " in summary
    passed = int(summary.split(": ")[1].split("/")[0])
    assert passed == 58 - len(fails)


def test_explain_prints_json_when_asked() -> None:
    result = isccd("explain", ISCC_CODE, "iscc:eaaskdnznyguuf5a", "--json")
    assert result.returncode == 0, result.stderr
    first, second = json.loads(result.stdout)
    assert first["iscc"] == ISCC_CODE
    assert (first["valid"], first["canonical"]) == (True, True)
    assert first["type_id"] == ic.iscc_type_id(ISCC_CODE)
    assert first["explain"] == ic.iscc_explain(ISCC_CODE)
    assert [u["iscc"] for u in first["parts"]] == [
        "ISCC:" + u for u in ic.iscc_decompose(ISCC_CODE)
    ]
    assert [u["explain"] for u in first["parts"]] == [
        ic.iscc_explain(u) for u in ic.iscc_decompose(ISCC_CODE)
    ]
    assert second["iscc"] == "ISCC:EAASKDNZNYGUUF5A"
    assert second["canonical"] is False


def test_explain_is_readable_on_a_terminal() -> None:
    status, out = isccd_on_a_terminal("explain", ISCC_CODE, "MAIGC5KN3I6TCUBK")
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == f"{ISCC_CODE}  ISCC-TEXT-V0-MCDI  valid"
    assert lines[1] == "  ISCC:AAAYPXW445FTYNJ3  META-NONE-V0-64-87dedce74b3c353b"
    assert "ISCC:MAIGC5KN3I6TCUBK  ID-REALM_0-V1-64  valid" in lines
    assert "  ID-REALM_0-V1-64-2024-04-30T18:52:03.456789Z-HUB_42" in lines


def test_explain_of_bad_codes_exits_2_and_says_why() -> None:
    result = isccd("explain", "ISCC:EAASKDNZNYGUUF5A", "ISCC:EAAS=", "urn:x", "--json")
    assert result.returncode == 2
    assert "cannot read 'ISCC:EAAS=' as an ISCC: malformed base32" in result.stderr
    assert "cannot read 'urn:x' as an ISCC: invalid scheme" in result.stderr
    # The good code is still explained.
    assert [info["iscc"] for info in json.loads(result.stdout)] == ["ISCC:EAASKDNZNYGUUF5A"]


def test_explain_shows_units_that_make_no_iscc_code() -> None:
    # Two Content-Codes concatenated: decodable, but no ISCC-CODE (no Data and Instance).
    result = isccd("explain", "EAASKDNZNYGUUF5A-EEASKDNZNYGUUF5A", "--json")
    assert result.returncode == 0
    (info,) = json.loads(result.stdout)
    assert info["iscc"] is None
    assert info["valid"] is False
    assert [u["type_id"] for u in info["parts"]] == ["CONTENT-TEXT-V0-64", "CONTENT-IMAGE-V0-64"]


def test_compare_json_equals_the_reference() -> None:
    other = ic.gen_iscc_code_v0(ic.iscc_decompose(ISCC_CODE)[1:])["iscc"]
    result = isccd("compare", ISCC_CODE, other, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["compare"] == ic.iscc_compare(ISCC_CODE, other)
    assert [(u["type"], u["bits"], u["distance"]) for u in report["pairs"]] == [
        ("CONTENT-TEXT-V0", 64, 0),
        ("DATA-NONE-V0", 64, 0),
        ("INSTANCE-NONE-V0", 64, 0),
    ]
    assert {u["similarity"] for u in report["pairs"]} == {100}
    assert report["duplicate"] == "exact" and report["files"] == {"a": None, "b": None}


def test_compare_on_a_terminal() -> None:
    a = "ISCC:" + ic.encode_component(ic.MT.CONTENT, 0, 0, 64, bytes(8))
    b = "ISCC:" + ic.encode_component(ic.MT.CONTENT, 0, 0, 64, b"\xff" + bytes(7))
    status, out = isccd_on_a_terminal("compare", a, b)
    assert status == 0
    # 8 of 64 bits differ: similarity int(56 / 64 * 100) = 87 %, within the text threshold.
    assert out.splitlines()[-2:] == [
        "CONTENT-TEXT-V0   64 bits  distance   8  similarity  87%  within 15",
        "duplicates: near",
    ]


@pytest.mark.slow
def test_compare_iscc_ids() -> None:
    a = ic.gen_iscc_id_v1(1714503123456789, 42)["iscc"]
    b = ic.gen_iscc_id_v1(1714503123456790, 42)["iscc"]
    assert json.loads(isccd("compare", a, b, "--json").stdout)["compare"] == {"id_match": False}
    assert json.loads(isccd("compare", a, a, "--json").stdout)["compare"] == {"id_match": True}


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        ("ISCC:EAAS=", "ISCC:EAASKDNZNYGUUF5A", "cannot read 'ISCC:EAAS=' as an ISCC"),
        ("ISCC:EAASKDNZNYGUUF5A", "", "cannot read '' as an ISCC: empty"),
        ("ISCC:MAIGC5KN3I6TCUBK", "ISCC:EAASKDNZNYGUUF5A", "only be compared with another"),
    ],
)
def test_compare_errors_exit_2(a: str, b: str, message: str) -> None:
    result = isccd("compare", a, b)
    assert result.returncode == 2
    assert message in result.stderr
    assert result.stdout == ""


@pytest.mark.slow
def test_help_documents_the_exit_status() -> None:
    for command in ("selftest", "explain", "compare"):
        result = isccd(command, "--help")
        assert result.returncode == 0
        assert "exit status" in result.stdout
