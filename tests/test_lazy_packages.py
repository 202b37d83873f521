"""The packages that import their submodules on first use (PEP 562): every public name is where
the package's map says, and the typed imports, the map and ``__all__`` name the same."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import ModuleType

import pytest

LAZY = ("isccd.iscc", "isccd.server", "isccd.results", "isccd.protocol", "isccd.pipeline")


def _typed_imports(package: ModuleType) -> dict[str, tuple[str, ...]]:
    """The ``if TYPE_CHECKING:`` imports of ``package``, by submodule."""
    source = Path(str(package.__file__)).read_text(encoding="utf-8")
    block = next(
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    return {
        node.module.removeprefix(f"{package.__name__}."): tuple(a.name for a in node.names)
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
    }


@pytest.fixture(params=LAZY)
def package(request: pytest.FixtureRequest) -> ModuleType:
    return importlib.import_module(request.param)


def test_the_map_the_typed_imports_and_all_agree(package: ModuleType) -> None:
    submodules = package._SUBMODULES
    assert _typed_imports(package) == submodules
    assert sorted(package.__all__) == sorted(n for names in submodules.values() for n in names)


def test_every_name_is_its_submodules_object(package: ModuleType) -> None:
    for module, names in package._SUBMODULES.items():
        sub = importlib.import_module(f"{package.__name__}.{module}")
        for name in names:
            assert getattr(package, name) is getattr(sub, name), name


def test_an_unknown_name_is_an_attribute_error(package: ModuleType) -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        package.no_such_name  # noqa: B018
