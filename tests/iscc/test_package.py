"""The lazy package :mod:`isccd.iscc`: every public name is where the map says, the typed
imports and ``__all__`` name the same, and decoding codes does not import numpy."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import isccd.iscc as ic

SOURCE = Path(ic.__file__).read_text(encoding="utf-8")


def _typed_imports() -> dict[str, tuple[str, ...]]:
    """The ``if TYPE_CHECKING:`` imports of the package, by submodule."""
    block = next(
        node
        for node in ast.parse(SOURCE).body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    return {
        node.module.removeprefix("isccd.iscc."): tuple(alias.name for alias in node.names)
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
    }


def test_the_map_the_typed_imports_and_all_agree() -> None:
    assert _typed_imports() == ic._SUBMODULES
    assert sorted(ic.__all__) == sorted(name for names in ic._SUBMODULES.values() for name in names)


def test_every_name_is_its_submodules_object() -> None:
    for module, names in ic._SUBMODULES.items():
        sub = __import__(f"isccd.iscc.{module}", fromlist=["_"])
        for name in names:
            assert getattr(ic, name) is getattr(sub, name), name


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_function"):
        ic.no_such_function  # noqa: B018


def test_decoding_and_comparing_codes_import_no_numpy() -> None:
    code = "ISCC:GAAWQ46YX3C6AJGR"
    script = (
        "import sys, isccd.iscc as ic\n"
        f"ic.iscc_compare({code!r}, {code!r}); ic.iscc_explain({code!r})\n"
        "print('numpy' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=True
    )
    assert out.stdout.strip() == "False"
