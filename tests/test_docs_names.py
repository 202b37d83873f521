"""The files and the ``Class.attribute`` names that CONTRIBUTING.md and docs/architecture.md point
a contributor at exist: a document that names a module or a method since renamed sends the next
change to the wrong place."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ("CONTRIBUTING.md", "docs/architecture.md")
#: The folders whose files the documents name, as the repository spells them.
_PATH = re.compile(r"`((?:isccd|tests|docs|config|bench|systemd)/[\w./-]*)`")
#: ``Class.attribute``, as the documents name a method or a field.
_MEMBER = re.compile(r"`([A-Z]\w*)\.(\w+)`")


def members(cls: str) -> set[str]:
    """The names the body of each class ``cls`` of the package defines (none: no such class)."""
    names: set[str] = set()
    for path in (ROOT / "isccd").rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        if f"class {cls}" not in source:  # parsed only where it may be
            continue
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef) and node.name == cls:
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                        names.add(item.name)
                    elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        names.add(item.target.id)
                    elif isinstance(item, ast.Assign):
                        names.update(t.id for t in item.targets if isinstance(t, ast.Name))
    return names


def missing_names(text: str, members: Callable[[str], set[str]], root: Path) -> list[str]:
    """The paths and ``Class.attribute`` names in ``text`` that do not exist under ``root``."""
    missing = [
        f"`{path}`"
        for path in _PATH.findall(text)
        if "<" not in path and "*" not in path and not (root / path).exists()
    ]
    for cls, attribute in _MEMBER.findall(text):
        if (root / f"{cls}.{attribute}").exists():  # a file: `CHANGELOG.md`
            continue
        if attribute not in members(cls):
            missing.append(f"`{cls}.{attribute}`")
    return missing


@pytest.mark.parametrize("document", DOCUMENTS)
def test_the_named_files_and_members_exist(document: str) -> None:
    text = (ROOT / document).read_text(encoding="utf-8")
    missing = missing_names(text, members, ROOT)
    assert not missing, f"{document} names what does not exist: {', '.join(missing)}"


def test_a_renamed_module_and_method_are_found() -> None:
    text = "see `isccd/index.py` and `Indexer.emit`; `Index.emit` and `isccd/hamming.py` exist"
    classes = {"Index": {"emit"}}
    assert missing_names(text, lambda cls: classes.get(cls, set()), ROOT) == [
        "`isccd/index.py`",
        "`Indexer.emit`",
    ]
