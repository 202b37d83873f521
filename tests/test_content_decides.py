"""The content decides: files whose Content-Codes of one type are far apart are not near
duplicates by their Data-Codes (their containers), however near those are."""

from __future__ import annotations

import itertools
import random
import zipfile
from pathlib import Path

import pytest

from isccd.hashing import compute_record
from isccd.match import Side, Thresholds, content_apart, near_unit, relate
from isccd.model import FileRecord, RelationKind, UnitType
from isccd.pipeline.relate import side_of
from tests.pipeline.harness import family_digest

_WORDS = (
    "river stone market letter winter garden engine harbour violin meadow lantern copper "
    "orchard signal ribbon thunder pocket silver candle forest basket mirror ladder planet "
    "velvet anchor bridge compass feather glacier hammer island jacket kettle lemon marble"
)
WORDS = _WORDS.split(" ")


def prose(seed: int, words: int = 220) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(words)) + "."


def _fixed_times(path: Path) -> None:
    """Give a ZIP's members one fixed time: the writers stamp each with the second it was
    written, and those stamps change the container's bytes (and so its Data-Code) from one
    run to the next."""
    with zipfile.ZipFile(path) as archive:
        members = [(info, archive.read(info)) for info in archive.infolist()]
    with zipfile.ZipFile(path, "w") as archive:
        for info, data in members:
            fixed = zipfile.ZipInfo(info.filename, date_time=(2020, 1, 1, 0, 0, 0))
            fixed.compress_type = info.compress_type
            fixed.external_attr = info.external_attr
            archive.writestr(fixed, data)


def template_corpus(folder: Path, n: int = 8) -> list[Path]:
    """``n`` unrelated letters from one Word template and ``n`` notes from one ODF template:
    the same header, title and styles, each its own text (the same bytes in every run)."""
    import docx
    from odf.opendocument import OpenDocumentText
    from odf.text import P

    files = []
    for i in range(n):
        letter = docx.Document()
        letter.core_properties.title = "Company letter"
        letter.sections[0].header.paragraphs[0].text = "ACME Ltd, 1 High Street, Springfield"
        letter.add_heading("Letter", level=1)
        letter.add_paragraph(prose(i))
        files.append(folder / f"letter{i}.docx")
        letter.save(str(files[-1]))
        note = OpenDocumentText()
        note.text.addElement(P(text="ACME Ltd, 1 High Street, Springfield"))
        note.text.addElement(P(text=prose(100 + i)))
        files.append(folder / f"note{i}.odt")
        note.save(str(files[-1]))
    for path in files:
        _fixed_times(path)
    return files


def sides(records: list[FileRecord]) -> list[Side]:
    return [side_of(i, r) for i, r in enumerate(records, start=1)]


@pytest.mark.slow
def test_unrelated_documents_from_one_template_are_not_near_duplicates(tmp_path: Path) -> None:
    records = [compute_record(str(p)) for p in template_corpus(tmp_path)]
    policy = Thresholds()
    pairs = list(itertools.combinations(zip(records, sides(records), strict=True), 2))
    by_data = [
        (x, y)
        for (_, x), (_, y) in pairs
        if near_unit(UnitType.DATA, x.digests[UnitType.DATA], y.digests[UnitType.DATA], policy)
    ]
    # The template makes many of them near by their Data-Codes (22 of the 120 pairs when
    # measured, in every run): that is the container, not the content.
    assert len(by_data) >= 10
    assert [(x.file_id, y.file_id) for (_, x), (_, y) in pairs if relate(x, y, policy)] == []


@pytest.mark.slow
def test_a_revision_of_a_document_stays_near_by_its_text(tmp_path: Path) -> None:
    import docx

    for name, text in (("v1.docx", prose(7)), ("v2.docx", prose(7) + " One more line.")):
        document = docx.Document()
        document.add_paragraph(text)
        document.save(str(tmp_path / name))
    a, b = sides([compute_record(str(tmp_path / n)) for n in ("v1.docx", "v2.docx")])
    assert UnitType.TEXT in {r.unit for r in relate(a, b, Thresholds())}


def side(file_id: int, **units: str) -> Side:
    digests = {UnitType(t): family_digest(v) for t, v in units.items()}
    return Side(file_id, None, None, 10, digests)


def test_a_near_data_code_needs_content_that_does_not_differ() -> None:
    policy = Thresholds()
    near_data = [(UnitType.DATA, 2)]

    def found(a: Side, b: Side) -> list[tuple[UnitType, int]]:
        return [(r.unit, r.distance) for r in relate(a, b, policy) if r.kind is RelationKind.NEAR]

    # Text far apart: the Data-Code does not make them near.
    assert found(side(1, data="A:0", text="X:0"), side(2, data="A:2", text="Y:0")) == []
    # Text near, or only one side has a Content-Code (a text file and its zipped copy), or
    # neither has (two binaries): the Data-Code is the signal.
    assert found(side(1, data="A:0", text="X:0"), side(2, data="A:2", text="X:1")) == [
        (UnitType.TEXT, 1),
        *near_data,
    ]
    assert found(side(1, data="A:0", text="X:0"), side(2, data="A:2")) == near_data
    assert found(side(1, data="A:0"), side(2, data="A:2")) == near_data
    # Content-Codes of different types say nothing of each other.
    assert found(side(1, data="A:0", text="X:0"), side(2, data="A:2", image="Y:0")) == near_data


def test_a_content_type_switched_off_still_decides_at_its_default_threshold() -> None:
    a, b = side(1, text="X:0"), side(2, text="X:20")  # 20 bits: beyond text's 15
    assert content_apart(a.digests, b.digests, Thresholds(text=None))
    assert not content_apart(a.digests, b.digests, Thresholds(text=30))
