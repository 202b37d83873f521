"""The import rules, kept true: :data:`ALLOWED` is where they are written, the modules are held
to them, and so is docs/architecture.md (its import table, row by row, and its package layout,
which names every layer).

Each module of the package may only import the isccd modules its layer allows. In particular the
ISCC algorithms import nothing but themselves, nothing imports the CLI, and only ``isccd run``
imports the daemon.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "isccd"
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"

#: layer -> the isccd layers it may import (besides itself).
ALLOWED: dict[str, set[str]] = {
    "__init__": set(),
    "__main__": {"cli"},
    "fspath": set(),
    "beneath": set(),
    "model": set(),
    "errors": set(),
    "iscc": set(),
    "extract": {"model", "errors", "beneath"},
    "hashing": {"extract", "iscc", "model", "errors", "forkserver", "dirs"},
    "store": {"model", "errors", "fspath"},
    # iscc: the compiled kernels' flat scan of a family's queries.
    "hamming": {"model", "errors", "iscc"},
    "walk": {"model", "errors", "fspath", "beneath"},
    "match": {"model", "errors", "iscc"},
    # The answers of the index and the daemon, defined once below the pipeline.
    "results": {"model", "submodules"},
    # walk: a reconcile walks the tree; iscc: recomposing the ISCC-CODE when only some units
    # were recomputed (profile change), and decoding a code asked about. Never the protocol:
    # the pipeline answers with results, which the protocol encodes.
    "pipeline": {
        "fspath",
        "model",
        "errors",
        "iscc",
        "hashing",
        "store",
        "hamming",
        "match",
        "walk",
        "results",
        "submodules",
    },
    "protocol": {"model", "errors", "results", "submodules"},
    "watch": {"model", "errors", "fspath", "beneath"},
    "server": {"protocol", "results", "model", "errors", "fspath", "submodules"},
    "client": {"protocol", "results", "model", "errors"},
    # iscc: the Instance-Code's BLAKE3, to verify content right before acting on it;
    # beneath: the files an index names, looked at beneath their roots.
    "dedupe": {"model", "errors", "fspath", "iscc", "beneath"},
    # results: the dupes answer it adapts (report.adapt); extract: safe opening, media types,
    # image decoding, text extraction and ffmpeg for the previews; beneath: each file looked
    # at beneath its root.
    "report": {"model", "errors", "fspath", "extract", "results", "beneath"},
    "sdnotify": set(),
    # The hashing workers' fork server, light enough to start before the rest is imported.
    "forkserver": set(),
    # The garbage collector's pace, for a scan and the daemon alike.
    "collector": set(),
    # The packages that import their submodules on first use.
    "submodules": set(),
    "dirs": set(),
    "logconf": set(),
    # The sections that one component's options cover are those options, and the others take
    # their defaults from the components (each default is written once).
    "settings": {"model", "errors", "dirs", "hashing", "match", "pipeline", "server", "watch"},
    # The settings mapped to every component's options, for the daemon and the commands alike.
    "config": {
        "model",
        "errors",
        "dirs",
        "fspath",
        "hashing",
        "logconf",
        "pipeline",
        "server",
        "settings",
        "store",
        "walk",
        "watch",
    },
    # store: its tuning options and URLs without their password, never the store itself.
    # extract: what to install for a missing tool (extract.missing).
    "daemon": {
        "extract",
        "fspath",
        "model",
        "errors",
        "hashing",
        "store",
        "walk",
        "watch",
        "pipeline",
        "protocol",
        "results",
        "server",
        "sdnotify",
        "settings",
        "config",
        "logconf",
    },
    # The daemon only through DAEMON_ENTRY; the settings only through config.
    "cli": {
        "fspath",
        "model",
        "errors",
        "iscc",
        "extract",
        "hashing",
        "walk",
        "pipeline",
        "protocol",
        "results",
        "client",
        # The duplicate policy's defaults, for `compare` of two codes without the settings.
        "match",
        "config",
        "logconf",
        "dirs",
        "dedupe",
        "report",
        "forkserver",
        "collector",
    },
}


#: The one import of the daemon outside it: ``isccd run`` starts it (imported when it runs).
DAEMON_ENTRY = ("isccd.cli.service", "isccd.daemon.run")


@functools.cache
def _tree(path: Path) -> ast.Module:
    """The module at ``path``, parsed once for every test here."""
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def _nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of the module at ``path``, walked once for every test here."""
    return tuple(ast.walk(_tree(path)))


def _layer_of(module: str) -> str:
    return module.split(".")[1] if "." in module else "__init__"


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        out.append((".".join(parts), path))
    return out


def _isccd_imports(module: str, path: Path) -> set[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in _nodes(path):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "isccd")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            if name.split(".")[0] == "isccd":
                found.add(name)
                if name == "isccd":  # `from isccd import store` imports a submodule
                    found.update(
                        f"isccd.{a.name}"
                        for a in node.names
                        if (PACKAGE / a.name).is_dir() or (PACKAGE / f"{a.name}.py").is_file()
                    )
    return found


MODULES = _modules()


def test_every_layer_is_known() -> None:
    unknown = {_layer_of(m) for m, _ in MODULES} - ALLOWED.keys()
    assert not unknown, f"add the new layers to ALLOWED and docs/architecture.md: {unknown}"


def _section(heading: str) -> str:
    """The text of one ``## heading`` section of docs/architecture.md."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    _, found, rest = text.partition(f"\n## {heading}\n")
    assert found, f"docs/architecture.md has no section '## {heading}'"
    return rest.split("\n## ", 1)[0]


def _documented_rules() -> list[tuple[list[str], set[str]]]:
    """The rows of the document's import table: ``(layers, the layers they may import)``, each
    name in backquotes (``nothing`` names none); the third column, why, is free text."""
    rows = []
    for line in _section("Import rules").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 2 or set(cells[0]) <= {"-"}:
            continue
        layers = re.findall(r"`([^`]+)`", cells[0])
        if layers:  # not the header
            rows.append((layers, set(re.findall(r"`([^`]+)`", cells[1]))))
    return rows


def rule_differences(
    rows: list[tuple[list[str], set[str]]], allowed: dict[str, set[str]]
) -> list[str]:
    """What differs between the document's rows and ``allowed``, one line per row or layer."""
    problems = []
    seen: dict[str, int] = {}
    for number, (layers, imports) in enumerate(rows, 1):
        where = f"row {number} ({', '.join(layers)})"
        for layer in layers:
            if layer in seen:
                problems.append(f"{where}: {layer} is also in row {seen[layer]}")
            seen.setdefault(layer, number)
            if layer not in allowed:
                problems.append(f"{where}: {layer} is no layer of ALLOWED")
                continue
            extra, missing = imports - allowed[layer], allowed[layer] - imports
            if extra:
                names = ", ".join(sorted(extra))
                problems.append(f"{where}: lists {names}, which ALLOWED[{layer!r}] does not")
            if missing:
                names = ", ".join(sorted(missing))
                problems.append(f"{where}: does not list {names}, which ALLOWED[{layer!r}] does")
    problems += [f"no row names {layer}" for layer in sorted(allowed.keys() - seen.keys())]
    return problems


def test_the_documented_import_rules_are_the_tested_ones() -> None:
    rows = _documented_rules()
    assert len(rows) > 10, "docs/architecture.md: the import table was not found"
    problems = rule_differences(rows, ALLOWED)
    assert not problems, "docs/architecture.md's import table differs from ALLOWED:\n" + (
        "\n".join(problems)
    )


def test_a_differing_row_is_named() -> None:
    rows = [(["pipeline"], {"model", "protocol"}), (["answers", "model"], set())]
    allowed = {"model": set(), "pipeline": {"model", "results"}, "results": {"model"}}
    assert rule_differences(rows, allowed) == [
        "row 1 (pipeline): lists protocol, which ALLOWED['pipeline'] does not",
        "row 1 (pipeline): does not list results, which ALLOWED['pipeline'] does",
        "row 2 (answers, model): answers is no layer of ALLOWED",
        "no row names results",
    ]


def test_the_package_layout_names_every_layer() -> None:
    # Each entry of the layout starts a line, indented two spaces: name.py or name/.
    layout = _section("Package layout")
    named = {m[0] for m in re.findall(r"^  (\w+)(\.py|/)(?= )", layout, re.MULTILINE)}
    layers = {_layer_of(m) for m, _ in MODULES} - {"__init__", "__main__"}
    assert not layers - named, f"docs/architecture.md's layout does not name {layers - named}"
    assert not named - layers, f"docs/architecture.md's layout names no layer {named - layers}"


@pytest.mark.parametrize(("module", "path"), MODULES, ids=[m for m, _ in MODULES])
def test_imports_follow_the_layering(module: str, path: Path) -> None:
    layer = _layer_of(module)
    bad = set()
    for imported in _isccd_imports(module, path):
        if imported == "isccd":
            continue
        target = _layer_of(imported)
        if (module, imported) == DAEMON_ENTRY:
            continue
        if target != layer and target not in ALLOWED.get(layer, set()) and target != "__init__":
            bad.add(imported)
    assert not bad, f"{module} ({layer}) may not import {sorted(bad)}"


def test_the_algorithms_do_no_io() -> None:
    forbidden = {
        "os",
        "pathlib",
        "subprocess",
        "socket",
        "logging",
        "structlog",
        "threading",
        "multiprocessing",
        "asyncio",
        "time",
        "shutil",
        "tempfile",
        "sqlite3",
    }
    # Flake-Codes and ISCC-IDs are made from the current time and a random counter by
    # definition; those two modules may read the clock and os.urandom, nothing else. The Flake
    # counter is process-wide state, guarded by a threading.Lock (no thread is started).
    # The kernels are loaded once per process, by one thread while the others wait: a
    # threading.Lock guards that cache (no thread is started, nothing is read).
    clock_readers = {
        "isccd.iscc.flake": {"os", "time", "threading"},
        "isccd.iscc.iscc_id": {"time"},
        "isccd.iscc.kernels": {"threading"},
    }
    offenders = []
    for module, path in MODULES:
        if _layer_of(module) != "iscc":
            continue
        allowed_here = clock_readers.get(module, set())
        for node in _nodes(path):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            offenders += [
                f"{module}: {n}" for n in names if n.split(".")[0] in forbidden - allowed_here
            ]
    assert not offenders, offenders


def _store_methods() -> set[str]:
    """The methods of the store's interface (:class:`isccd.store.base.Store`)."""
    tree = _tree(PACKAGE / "store" / "base.py")
    [store] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Store"]
    return {n.name for n in store.body if isinstance(n, ast.FunctionDef)}


def test_the_pipeline_is_a_closed_facade() -> None:
    # Outside the pipeline and the store, nothing reaches the store behind the pipeline's index
    # (``something.store.file_at(...)``), and nothing imports the pipeline's modules but its
    # face (``isccd.pipeline``): callers ask the Pipeline or the IndexReader.
    methods = _store_methods()
    assert {"file_at", "live_by_root", "first_seq"} <= methods
    offenders = []
    for module, path in MODULES:
        if _layer_of(module) in {"pipeline", "store"}:
            continue
        for node in _nodes(path):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "store"
                and node.attr in methods
                # The settings' [store] section is no store.
                and not (
                    isinstance(node.value.value, ast.Name) and node.value.value.id == "settings"
                )
            ):
                offenders.append(f"{module}:{node.lineno}: .store.{node.attr}")
        offenders += [
            f"{module}: imports {name}"
            for name in _isccd_imports(module, path)
            if name.startswith("isccd.pipeline.")
        ]
    assert not offenders, offenders


#: Private helpers of the codec shared by two modules of the algorithm core, which keeps the
#: reference's module layout.
PRIVATE_IMPORTS = {("isccd.iscc.seq", "_mt_name"), ("isccd.iscc.iscc_id", "_require_int")}


@pytest.mark.parametrize(("module", "path"), MODULES, ids=[m for m, _ in MODULES])
def test_no_module_imports_another_modules_private_names(module: str, path: Path) -> None:
    bad = set()
    for node in _nodes(path):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("isccd"):
            for alias in node.names:
                name = alias.name
                private = name.startswith("_") and not name.startswith("__")
                if private and (PACKAGE / (node.module or "").replace(".", "/")[6:]).is_dir():
                    continue  # a private module of a package (isccd.iscc._jit), not a name
                if private and (module, name) not in PRIVATE_IMPORTS:
                    bad.add(f"{node.module}.{name}")
    assert not bad, f"{module} imports private names: {sorted(bad)}; make them public"


#: The store's methods that change files, near links and events: only the pipeline's
#: ``changes`` module calls them (the store's own properties, root devices and the policy
#: record are settings of the store, written where they are decided).
STORE_WRITES = {
    "add_file",
    "add_files",
    "update_file",
    "move_file",
    "remove_file",
    "purge_tombstones",
    "purge_events",
    "add_near",
    "remove_near",
    "append_event",
    "append_events",
}
#: The one module that applies changes to the store.
WRITER = "isccd.pipeline.changes"


def _store_calls(path: Path) -> list[tuple[int, str]]:
    """Calls ``<...>.store.<method>(...)`` or ``store.<method>(...)`` of a module."""
    found = []
    for node in _nodes(path):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        named = (isinstance(owner, ast.Name) and owner.id == "store") or (
            isinstance(owner, ast.Attribute) and owner.attr == "store"
        )
        if named:
            found.append((node.lineno, node.func.attr))
    return found


def test_only_the_changes_module_writes_files_near_links_and_events() -> None:
    assert _store_methods() >= STORE_WRITES
    offenders = [
        f"{module}:{line}: .store.{name}"
        for module, path in MODULES
        if module != WRITER and _layer_of(module) != "store"
        for line, name in _store_calls(path)
        if name in STORE_WRITES
    ]
    assert not offenders, offenders
    assert {name for _, name in _store_calls(PACKAGE / "pipeline" / "changes.py")} & STORE_WRITES


def test_announcing_is_pure() -> None:
    # From the relations before and after to the near links and events: no store, no Index,
    # no I/O; the store's rows come in as values (isccd.store.base's data classes).
    path = PACKAGE / "pipeline" / "announce.py"
    imported = _isccd_imports("isccd.pipeline.announce", path)
    assert imported <= {
        "isccd.match",
        "isccd.model",
        "isccd.pipeline",
        "isccd.pipeline.events",
        "isccd.store.base",
    }, imported
    from_store = {
        a.name
        for node in _nodes(path)
        if isinstance(node, ast.ImportFrom) and node.module == "isccd.store.base"
        for a in node.names
    }
    assert from_store <= {"NearPair", "StoredFile"}, from_store
    plain: set[str] = set()
    for n in _nodes(path):
        if isinstance(n, ast.Import):
            plain.update(a.name.split(".")[0] for a in n.names)
        elif isinstance(n, ast.ImportFrom) and not n.level:
            plain.add((n.module or "").split(".")[0])
    assert not plain & {"os", "logging", "time", "sqlite3", "threading", "pathlib"}, plain
    assert not _store_calls(path)


def test_bounding_is_pure() -> None:
    # The near links a job keeps: the store's relations come in through a reader it is
    # handed, what to write goes back as values; it writes nothing itself.
    path = PACKAGE / "pipeline" / "bounds.py"
    imported = _isccd_imports("isccd.pipeline.bounds", path)
    assert imported <= {"isccd.model", "isccd.store.base"}, imported
    called = {
        n.func.attr
        for n in _nodes(path)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
    }
    assert called & {"near_counts", "farthest_near", "near_of_many"}
    assert not called & STORE_WRITES, called & STORE_WRITES


#: The modules that answer questions: they never change the store, nor announce.
READ_SIDE = ("queries", "groups", "reader", "centres")


@pytest.mark.parametrize("name", READ_SIDE)
def test_the_read_side_never_reaches_the_write_side(name: str) -> None:
    path = PACKAGE / "pipeline" / f"{name}.py"
    imported = _isccd_imports(f"isccd.pipeline.{name}", path)
    assert not imported & {WRITER, "isccd.pipeline.announce"}, imported


def test_the_pipeline_has_no_import_cycle() -> None:
    # Counting imports made only for type checking: a cycle there is a cycle of concepts.
    graph = {
        module: {m for m in _isccd_imports(module, path) if m.startswith("isccd.pipeline.")}
        for module, path in MODULES
        if module.startswith("isccd.pipeline.")
    }
    state: dict[str, int] = {}

    def visit(module: str, trail: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                pytest.fail("import cycle: " + " -> ".join([*trail, module, target]))
            if target not in state:
                visit(target, [*trail, module])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
