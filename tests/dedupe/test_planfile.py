"""The plan file: its published schema, what the command writes, and bad plans refused with a
clear message before anything is touched."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from isccd.dedupe.plan import Action, GroupKind, steps_of
from isccd.dedupe.planfile import load_plan, plan_document, plan_from_document
from isccd.errors import PlanFileError
from tests.dedupe.conftest import plan_of, write

DOCS_SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "schema" / "plan.schema.json"


def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DOCS_SCHEMA.read_text())
    return loaded


def test_the_published_schema_is_the_one_the_package_validates_with() -> None:
    shipped = Path(__file__).resolve().parents[2] / "isccd" / "dedupe" / "plan.schema.json"
    assert json.loads(shipped.read_text()) == schema()
    jsonschema.Draft202012Validator.check_schema(schema())


@pytest.fixture
def document(tmp_path: Path) -> dict[str, Any]:
    root = tmp_path / "root"
    a = write(root / "a.bin", b"same bytes", mtime=1_000_000)
    b = write(root / "sub" / "b.bin", b"same bytes", mtime=1_000_001)
    b2 = root / "sub" / "b2.bin"
    b2.hardlink_to(b)
    plan = plan_of(root, [[a, b, b2]])
    steps, left = steps_of(plan, Action.LINK)
    return plan_document(plan, action=Action.LINK, steps=steps, untouched=left, created=1.0)


def test_a_dry_run_document_is_valid_and_reads_back_as_the_same_plan(
    document: dict[str, Any],
) -> None:
    jsonschema.validate(document, schema())
    [group] = document["groups"]
    assert [(m["keep"], m["action"]) for m in group["members"]] == [(True, "keep"), (False, "link")]
    assert group["members"][1]["links"] == [group["members"][1]["path"].replace("b.", "b2.")]
    plan = plan_from_document(json.loads(json.dumps(document)))
    kept, victim = plan.groups[0].members
    assert plan.groups[0].kept == kept and victim.paths[1].endswith("b2.bin")
    assert plan_from_document(plan_document(plan)) == plan


def _broken(document: dict[str, Any], how: str) -> object:
    doc = copy.deepcopy(document)
    members = doc["groups"][0]["members"]
    if how == "version":
        doc["version"] = 2
    elif how == "two-kept":
        members[1]["keep"] = True
    elif how == "none-kept":
        members[0]["keep"] = False
    elif how == "no-digest":
        del members[1]["blake3"]
    elif how == "relative-path":
        members[1]["path"] = "sub/b.bin"
    elif how == "outside-root":
        members[1]["path"] = "/etc/passwd"
    elif how == "dot-dot":
        members[1]["path"] = members[1]["root"] + "/sub/../../x"
    elif how == "twice":
        members[1]["path"] = members[0]["path"]
    elif how == "negative-size":
        members[1]["size"] = -1
    elif how == "unknown-field":
        members[1]["owner"] = "me"
    elif how == "one-member":
        del members[1]
    elif how == "not-instance":
        del members[1]["blake3"]
        members[1]["instance"] = "ISCC:EAASKDNZNYGUUF5A"  # a Meta-Code
    return doc


BROKEN = [
    "version", "two-kept", "none-kept", "no-digest", "relative-path", "outside-root",
    "dot-dot", "twice", "negative-size", "unknown-field", "one-member", "not-instance",
]  # fmt: skip


@pytest.mark.parametrize("how", BROKEN)
def test_a_bad_plan_is_refused_with_where(document: dict[str, Any], how: str) -> None:
    with pytest.raises(PlanFileError) as caught:
        plan_from_document(_broken(document, how), "plan.json")
    assert "plan.json" in str(caught.value)
    if how in ("two-kept", "none-kept", "no-digest", "negative-size", "one-member"):
        assert "groups[0]" in str(caught.value) or "groups.0" in str(caught.value)


def test_unreadable_and_non_json_plans(tmp_path: Path) -> None:
    with pytest.raises(PlanFileError, match="cannot be read"):
        load_plan(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(PlanFileError, match="not JSON"):
        load_plan(tmp_path / "bad.json")


def test_an_instance_code_or_datahash_is_taken_for_the_digest(document: dict[str, Any]) -> None:
    doc = copy.deepcopy(document)
    kept, other = doc["groups"][0]["members"]
    digest = kept.pop("blake3")
    other.pop("blake3")
    other["datahash"] = "1e20" + digest + "0" * (64 - len(digest))
    kept["instance"] = "ISCC:IAA6VDYWHWZYNAUS"  # BLAKE3 of "hello", 64 bits
    jsonschema.validate(doc, schema())
    plan = plan_from_document(doc)
    assert plan.groups[0].members[0].blake3 == "ea8f163db3868292"
    assert plan.groups[0].members[1].blake3 is not None
    assert plan.groups[0].members[1].blake3.startswith(digest)


def test_a_near_plan_says_its_centre_codes_and_threshold_and_reads_them_back(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    a = write(root / "a.txt", b"one version", mtime=1_000_000)
    b = write(root / "b.txt", b"another version", mtime=1_000_001)
    plan = plan_of(root, [[b, a]], kind=GroupKind.NEAR)  # b the centre
    steps, left = steps_of(plan, Action.MOVE, near=True, move_to=str(tmp_path / "attic"))
    document = plan_document(plan, action=Action.MOVE, steps=steps, untouched=left)
    jsonschema.validate(document, schema())
    [group] = document["groups"]
    assert group["threshold"] == 8
    assert [(Path(m["path"]).name, m.get("centre", False)) for m in group["members"]] == [
        ("a.txt", False),
        ("b.txt", True),
    ]
    assert all(m["code"].startswith("ISCC:GAA") for m in group["members"])
    assert plan_from_document(json.loads(json.dumps(document))) == plan


def test_a_plan_another_user_could_have_written_is_not_acted_on(tmp_path: Path) -> None:
    root = tmp_path / "root"
    files = [write(root / f"{c}.bin", b"same bytes" * 100, mtime=1_000_000) for c in "ab"]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(plan_document(plan_of(root, [files]))))
    plan.chmod(0o644)
    assert load_plan(plan).groups  # the user's own, written by nobody else: read
    plan.chmod(0o666)
    with pytest.raises(PlanFileError, match=r"can be written by others \(mode 0666\)"):
        load_plan(plan)
    plan.chmod(0o620)
    with pytest.raises(PlanFileError, match="can be written by others"):
        load_plan(plan)


def test_a_plan_owned_by_another_user_is_not_acted_on(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file another owner needs root")
    root = tmp_path / "root"
    files = [write(root / f"{c}.bin", b"same bytes" * 100, mtime=1_000_000) for c in "ab"]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(plan_document(plan_of(root, [files]))))
    plan.chmod(0o644)
    os.chown(plan, 65534, 65534)
    with pytest.raises(PlanFileError, match="is owned by user 65534, not by you"):
        load_plan(plan)
