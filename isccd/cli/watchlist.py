"""``isccd watchlist``: named sets of reference content that every new or changed file is
matched against (``watch.match`` events).

The references are written to the store the daemon uses (``--state DIR`` or the configuration
names it, as for ``isccd errors``), beside the daemon: it reloads the watchlists at its next
batch of changes, and so does every daemon of a fleet's shared database
(:mod:`isccd.pipeline.watchlists` says why that needs no request to the daemon).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from isccd.cli import EXIT_FAILURE, EXIT_OK
from isccd.cli.ask import bounded
from isccd.cli.connect import add_config_option, add_socket_option
from isccd.cli.escape import shown
from isccd.cli.output import print_json

if TYPE_CHECKING:
    from isccd.pipeline import NewRef, WatchlistEditor

_EPILOG = """\
A reference is one file (its units computed as `isccd code` computes them, with the
configuration's [code] options; the file need not be in a watched root) or one line of a codes
file: an ISCC-CODE or a single ISCC unit, or a JSON object as `isccd code --jsonl` or iscc-sdk
print it (its "iscc", and its "units" when given; labelled by "filename", "name" or "path").
Empty lines and lines starting with # are skipped. A line that cannot be read fails the whole
command with its line number, and nothing is added.

A file matches a reference by its Instance-Code (exact: the same bytes) or by a unit within
the watchlist's threshold: --threshold BITS (bits of 64, for every unit type), else each unit
type's [match] threshold (a type [match] turns off, as the Meta-Code by default, is matched
only with --threshold). The daemon announces each match as a watch.match event.

exit status: 0 done; 1 a reference could not be made or the change was refused (an unknown
watchlist or reference, another threshold); 74 the store cannot be opened or written.
"""

EXIT_STORE = 74


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``watchlist`` and its commands to the ``isccd`` parser."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--state", metavar="DIR", type=Path, default=None,
        help="the index in DIR (default: the daemon's)",
    )  # fmt: skip
    common.add_argument("--json", action="store_true", help="print JSON")
    add_config_option(common)
    add_socket_option(common)
    parser = subparsers.add_parser(
        "watchlist",
        help="alert when reference content appears: named sets of reference codes",
        description="Keep named watchlists of reference content in the index; every new or "
        "changed file is matched against them (watch.match events).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="watch_command", metavar="COMMAND", required=True)
    add = commands.add_parser(
        "add", parents=[common], help="add references to a watchlist (made when new)",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    add.add_argument("name", metavar="NAME")
    add.add_argument("files", nargs="*", metavar="FILE", help="a file to take the codes of")
    add.add_argument(
        "--codes", type=Path, metavar="FILE", action="append", default=[],
        help="a file of codes, one per line (repeatable; - for standard input)",
    )  # fmt: skip
    add.add_argument(
        "--threshold", type=bounded(64, 0), metavar="BITS", default=None,
        help="largest distance in bits of 64 for every unit type (default: [match]'s)",
    )  # fmt: skip
    add.set_defaults(handler=run_add)
    listing = commands.add_parser("list", parents=[common], help="list the watchlists")
    listing.set_defaults(handler=run_list)
    show = commands.add_parser("show", parents=[common], help="a watchlist's references")
    show.add_argument("name", metavar="NAME")
    show.set_defaults(handler=run_show)
    remove = commands.add_parser(
        "remove", parents=[common], help="remove a watchlist, or one of its references"
    )
    remove.add_argument("name", metavar="NAME")
    remove.add_argument("--ref", type=bounded(2**62), metavar="ID", help="only this reference")
    remove.set_defaults(handler=run_remove)


class _BadLine(Exception):
    """A line of a codes file that cannot be read."""


def _ref_of_line(line: str, label: str) -> NewRef:
    from isccd.errors import InvalidCodeError  # noqa: PLC0415
    from isccd.pipeline import NewRef, ref_of_code  # noqa: PLC0415

    try:
        if not line.startswith("{"):
            return ref_of_code(line.split(maxsplit=1)[0], label)
        obj = json.loads(line)
        if not isinstance(obj, dict) or not isinstance(obj.get("iscc"), str):
            raise _BadLine('a JSON line needs an "iscc" string')
        named = next((obj[k] for k in ("filename", "name", "path") if obj.get(k)), None)
        label = str(named) if named is not None else label
        ref = ref_of_code(obj["iscc"], label)
        units = obj.get("units")
        if isinstance(units, dict) and units:  # isccd code --units: the whole units
            parts = [ref_of_code(str(code), label).units for code in units.values()]
            ref = NewRef(label, ref.iscc, [u for some in parts for u in some])
    except json.JSONDecodeError as exc:
        raise _BadLine(f"not JSON: {exc.msg}") from None
    except InvalidCodeError as exc:
        raise _BadLine(str(exc)) from None
    return ref


def _refs_of_codes(path: Path) -> list[NewRef]:
    """The references of a codes file.

    Raises:
        Failed: A line cannot be read (its number and why), or the file cannot.
    """
    from isccd.cli.ask import Failed  # noqa: PLC0415

    name = "-" if str(path) == "-" else str(path)
    try:
        text = sys.stdin.read() if name == "-" else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise Failed(f"cannot read {shown(name)}: {exc}") from None
    refs = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            refs.append(_ref_of_line(line, f"{Path(name).name}:{number}"))
        except _BadLine as exc:
            raise Failed(f"{shown(name)}, line {number}: {exc}") from None
    return refs


def _refs_of_files(paths: list[str], args: argparse.Namespace) -> list[NewRef]:
    from isccd.cli.ask import Failed, index_config  # noqa: PLC0415
    from isccd.hashing import compute_record  # noqa: PLC0415
    from isccd.model import IssueKind  # noqa: PLC0415
    from isccd.pipeline import ref_of_record  # noqa: PLC0415

    options = index_config(args).code
    refs = []
    for path in paths:
        record = compute_record(str(Path(path).absolute()), options)
        errors = [i.reason for i in record.issues if i.kind is IssueKind.ERROR]
        ref = ref_of_record(record, Path(path).name) if not errors else None
        if ref is None:
            why = "; ".join(errors) or "no unit a watchlist matches"
            raise Failed(f"{shown(path)}: {why}")
        refs.append(ref)
    return refs


def _editor(args: argparse.Namespace) -> tuple[WatchlistEditor, str]:
    from isccd.cli.ask import index_config  # noqa: PLC0415
    from isccd.pipeline import WatchlistEditor  # noqa: PLC0415

    config = index_config(args)
    return WatchlistEditor(config.store_url, host=config.store_host), config.store_name


def _run(args: argparse.Namespace, act: Callable[[], int]) -> int:
    from isccd.cli.ask import Failed  # noqa: PLC0415
    from isccd.errors import StoreError  # noqa: PLC0415
    from isccd.pipeline import WatchlistRefused  # noqa: PLC0415

    try:
        status: int = act()
    except Failed as exc:
        print(f"isccd: {exc}", file=sys.stderr)
        return exc.status
    except WatchlistRefused as exc:
        print(f"isccd: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except StoreError as exc:
        print(f"isccd: {exc}", file=sys.stderr)
        return EXIT_STORE
    return status


def run_add(args: argparse.Namespace) -> int:
    """``isccd watchlist add``."""

    def act() -> int:
        from isccd.cli.ask import Failed  # noqa: PLC0415

        if not args.files and not args.codes:
            raise Failed("name a FILE to take the codes of, or --codes FILE", 2)
        refs = [r for path in args.codes for r in _refs_of_codes(path)]
        refs += _refs_of_files(args.files, args) if args.files else []
        if not refs:
            raise Failed("no reference to add: the codes files hold no code")
        editor, store = _editor(args)
        with editor:
            added = editor.add(args.name, args.threshold, refs)
        if args.json:
            print_json({"watchlist": args.name, "id": added.watchlist, "refs": list(added.refs)})
        else:
            print(f"{args.name}: {len(added.refs)} references added (in {shown(store)})")
        return EXIT_OK

    return _run(args, act)


def run_list(args: argparse.Namespace) -> int:
    """``isccd watchlist list``."""

    def act() -> int:
        editor, _ = _editor(args)
        with editor:
            lists = editor.lists()
        if args.json:
            print_json({"watchlists": [_list_json(w) for w in lists]})
        for w in lists if not args.json else ():
            threshold = "[match]" if w.threshold is None else str(w.threshold)
            print(f"{shown(w.name)}\t{w.refs} references\tthreshold {threshold}")
        return EXIT_OK

    return _run(args, act)


def _list_json(w: Any) -> dict[str, Any]:
    return {"name": w.name, "id": w.id, "threshold": w.threshold, "created": w.created,
            "refs": w.refs}  # fmt: skip


def run_show(args: argparse.Namespace) -> int:
    """``isccd watchlist show NAME``."""

    def act() -> int:
        from isccd.cli.ask import Failed  # noqa: PLC0415

        editor, _ = _editor(args)
        with editor:
            found = [w for w in editor.lists() if w.name == args.name]
            units = editor.units(args.name)
        if not found:
            raise Failed(f"there is no watchlist {args.name!r}")
        refs: dict[int, dict[str, Any]] = {}
        for u in units:
            ref = refs.setdefault(u.ref, {"id": u.ref, "label": u.label, "units": {}})
            ref["units"][u.type.value] = u.iscc
        if args.json:
            print_json({**_list_json(found[0]), "references": list(refs.values())})
            return EXIT_OK
        print(f"{shown(args.name)}: {len(refs)} references")
        for ref in refs.values():
            codes = " ".join(f"{t}:{c}" for t, c in ref["units"].items())
            print(f"{ref['id']}\t{shown(ref['label'])}\t{codes}")
        return EXIT_OK

    return _run(args, act)


def run_remove(args: argparse.Namespace) -> int:
    """``isccd watchlist remove NAME [--ref ID]``."""

    def act() -> int:
        editor, _ = _editor(args)
        with editor:
            removed = editor.remove(args.name, args.ref)
        if args.json:
            print_json({"watchlist": args.name, "removed": removed})
        else:
            what = f"reference {args.ref}" if args.ref is not None else "watchlist"
            print(f"{args.name}: {what} removed ({removed} references)")
        return EXIT_OK

    return _run(args, act)
