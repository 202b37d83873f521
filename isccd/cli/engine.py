"""Commands about ISCC codes themselves: ``selftest``, ``explain`` and ``compare``.

They need no store or daemon. Each prints readable text, to a terminal or a pipe alike, and
JSON only with ``--json`` (:mod:`isccd.cli.formats`; ``explain``: one array, or one object per
line with ``--jsonl``); ``selftest``'s text is its failures and a one-line summary. ``compare``
also takes files, coded as ``isccd code`` codes them, and reads the configuration's
near-duplicate thresholds (``[match]``) to say whether the two are duplicates.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from isccd.cli import EXIT_CONFIG, EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from isccd.cli.formats import output_format
from isccd.cli.output import print_json

if TYPE_CHECKING:
    from collections.abc import Callable

    from isccd.iscc.conformance import ConformanceReport
    from isccd.match import Thresholds
    from isccd.model import UnitType

    #: The threshold of a unit type for a number of compared bits (``None``: not compared).
    ThresholdOf = Callable[[UnitType, int], int | None]


#: The conformance vectors shipped with the package.
CONFORMANCE_DATA = "conformance-1.5.0.json"

_CODE_FORMS = (
    "CODE may be canonical (ISCC:...), bare base32, a URI (iscc:...) or multiformat (f, b, v, "
    "z, u), with or without hyphens."
)
_CODE_ERRORS = (
    "exit status: 0 success; 2 when a CODE cannot be read as an ISCC (the reason goes to "
    "stderr). " + _CODE_FORMS
)

_COMPARE_EPILOG = (
    "exit status: 0 success; 1 when a FILE cannot be coded; 2 when a CODE cannot be read as an "
    "ISCC or the two cannot be compared; 78 for an invalid configuration. A FILE is coded "
    "first, with the configuration's [code] options (--config FILE), and compared by its "
    "ISCC-CODE; two files with the same bytes are exact duplicates. Each pair of units of a "
    "type [match] compares is within its threshold or not (scaled to the bits compared, as the "
    "daemon does); the verdict is exact, near (some unit within its threshold) or different."
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``selftest``, ``explain`` and ``compare`` to the ``isccd`` parser."""
    selftest = subparsers.add_parser(
        "selftest",
        help="check this installation against the ISCC conformance vectors",
        description="Run the conformance vectors of iscc-core 1.5.0 (ISO 24138) through "
        "isccd's own algorithms and report the result.",
        epilog="exit status: 0 when every vector passes, 1 when any fails (each failure is "
        "listed).",
    )
    selftest.add_argument("--json", action="store_true", help="print the full report as JSON")
    selftest.set_defaults(handler=run_selftest)

    explain = subparsers.add_parser(
        "explain",
        help="decode ISCC codes and explain their units",
        description="Show the type, validity, canonical form and units of each CODE.",
        epilog=_CODE_ERRORS,
    )
    explain.add_argument("codes", nargs="+", metavar="CODE", help="an ISCC code")
    out = explain.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON array")
    out.add_argument("--jsonl", action="store_true", help="print one JSON object per line")
    explain.set_defaults(handler=run_explain)

    compare = subparsers.add_parser(
        "compare",
        help="compare two ISCC codes or files unit by unit",
        description="Hamming distance and similarity of the units the two codes (or files) "
        "share (units of unequal length are compared over their common prefix), and whether "
        "they are within the configured near-duplicate thresholds.",
        epilog=_COMPARE_EPILOG + " " + _CODE_FORMS,
    )
    compare.add_argument("a", metavar="CODE|FILE", help="the first ISCC code, or a file")
    compare.add_argument("b", metavar="CODE|FILE", help="the second ISCC code, or a file")
    compare.add_argument("--json", action="store_true", help="print JSON")
    compare.add_argument(
        "--config", type=Path, metavar="FILE",
        help="the daemon's TOML configuration, for [match] and [code] (default: the daemon's "
        "default file, when it exists)",
    )  # fmt: skip
    compare.set_defaults(handler=run_compare)


# -- selftest ---------------------------------------------------------------------------------


def _load_vectors() -> dict[str, Any]:

    text = resources.files("isccd.iscc").joinpath("data", CONFORMANCE_DATA).read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _summary(report: ConformanceReport) -> str:
    data = report.generator.removeprefix("iscc-core ")
    verb = "pass" if report.ok else "passed"
    return (
        f"isccd selftest: {report.passed}/{report.total} conformance vectors {verb} "
        f"(iscc-core {data} data)"
    )


def run_selftest(args: argparse.Namespace) -> int:
    """Run every conformance vector; exit 0 if all pass, 1 otherwise."""
    from isccd.iscc.conformance import run_conformance  # noqa: PLC0415 -- keeps --help fast

    report = run_conformance(_load_vectors())
    if args.json:
        print_json(
            {
                "ok": report.ok,
                "passed": report.passed,
                "total": report.total,
                "data": report.generator,
                "failures": [o.as_dict() for o in report.failures],
            }
        )
    else:
        for outcome in report.failures:
            detail = outcome.as_dict()
            reason = detail.get("error") or f"got {detail['got']!r}"
            print(f"FAIL {outcome.vector.name}: expected {detail['expected']!r}, {reason}")
        print(_summary(report))
    return EXIT_OK if report.ok else EXIT_FAILURE


# -- explain ----------------------------------------------------------------------------------


def _bad_code(command: str, code: str, error: Exception) -> None:
    print(f"isccd {command}: cannot read {code!r} as an ISCC: {error}", file=sys.stderr)


def explain_code(code: str) -> dict[str, Any]:
    """Everything ``isccd explain`` reports about one code.

    Raises:
        IsccError: the code cannot be decoded.
    """
    import isccd.iscc as ic  # noqa: PLC0415 -- keeps --help fast

    units = ["ISCC:" + unit for unit in ic.iscc_decompose(code)]
    info: dict[str, Any] = {"input": code}
    try:
        canonical = ic.iscc_normalize(code)
    except ic.IsccError as e:
        # Concatenated units that make no ISCC-CODE: still explain each unit.
        info.update(
            iscc=None, canonical=False, valid=False, type_id=None, explain=None, problem=str(e)
        )
    else:
        problem = None
        try:
            ic.iscc_validate(canonical)
        except ic.IsccError as e:
            problem = str(e)
        info.update(
            iscc=canonical,
            canonical=code == canonical,
            valid=problem is None,
            type_id=ic.iscc_type_id(canonical),
            explain=ic.iscc_explain(canonical),
            problem=problem,
        )
    # ``parts``, not ``units``: what was given may hold several units of one type (no ISCC-CODE),
    # so it is a list, not the map from unit type to code that ``units`` is everywhere else.
    info["parts"] = [
        {"iscc": unit, "type_id": ic.iscc_type_id(unit), "explain": ic.iscc_explain(unit)}
        for unit in units
    ]
    return info


def _print_explanation(info: dict[str, Any]) -> None:
    if info["iscc"] is None:
        print(f"{info['input']}  (not one ISCC: {info['problem']})")
    else:
        status = "valid" if info["valid"] else f"INVALID: {info['problem']}"
        print(f"{info['iscc']}  {info['type_id']}  {status}")
        if not info["canonical"]:
            print(f"  given as {info['input']}")
    single = len(info["parts"]) == 1 and info["parts"][0]["iscc"] == info["iscc"]
    if single:
        print(f"  {info['explain']}")
        return
    width = max(len(u["iscc"]) for u in info["parts"])
    for unit in info["parts"]:
        print(f"  {unit['iscc']:<{width}}  {unit['explain']}")


def run_explain(args: argparse.Namespace) -> int:
    """Explain each code; exit 2 if any cannot be decoded (the others are still explained)."""
    from isccd.iscc import IsccError  # noqa: PLC0415 -- keeps --help fast

    results: list[dict[str, Any]] = []
    status = EXIT_OK
    for code in args.codes:
        try:
            results.append(explain_code(code))
        except IsccError as e:
            _bad_code("explain", code, e)
            status = EXIT_USAGE
    mode = output_format(args)
    if mode == "jsonl":
        for info in results:
            print_json(info)
    elif mode == "json":
        print_json(results)
    else:
        for info in results:
            _print_explanation(info)
    return status


# -- compare ----------------------------------------------------------------------------------


def compare_codes(a: str, b: str, threshold_of: ThresholdOf | None = None) -> dict[str, Any]:
    """Everything ``isccd compare`` reports about two codes.

    Args:
        a: The first code.
        b: The second code.
        threshold_of: The near-duplicate policy the verdict follows (the configured
            ``Thresholds.scaled``); ``None``: no unit type but the Instance-Code is judged.

    Returns:
        ``{"a", "b", "compare", "pairs", "duplicate"}``: the inputs, the :func:`iscc_compare`
        result, one entry per pair of units of the same type with its bits, distance,
        similarity, and ``within`` its ``threshold`` (``null`` for a type the policy does not
        compare), and the verdict: ``"exact"`` (equal Instance-Codes over the bits compared),
        ``"near"`` (some pair within its threshold) or ``null``.

    Raises:
        IsccError: a code cannot be decoded, or the codes cannot be compared.
    """
    import isccd.iscc as ic  # noqa: PLC0415 -- keeps --help fast

    summary = ic.iscc_compare(a, b)
    pairs: list[dict[str, Any]] = []
    if "id_match" not in summary:
        units_b = ic.iscc_decompose(b)
        for unit_a in ic.iscc_decompose(a):
            type_a = ic.iscc_type_id(unit_a).rsplit("-", 1)[0]
            for unit_b in units_b:
                if ic.iscc_type_id(unit_b).rsplit("-", 1)[0] != type_a:
                    continue
                body_a, body_b = ic.iscc_decode(unit_a)[4], ic.iscc_decode(unit_b)[4]
                bits = min(len(body_a), len(body_b)) * 8
                distance = ic.iscc_distance(unit_a, unit_b)
                threshold = _threshold(type_a, bits, threshold_of)
                pairs.append(
                    {
                        "type": type_a,
                        "a": "ISCC:" + unit_a,
                        "b": "ISCC:" + unit_b,
                        "bits": bits,
                        "distance": distance,
                        "similarity": ic.iscc_similarity(unit_a, unit_b),
                        "threshold": threshold,
                        "within": None if threshold is None else distance <= threshold,
                    }
                )
    exact = any(p["type"].startswith("INSTANCE") and p["distance"] == 0 for p in pairs)
    near = any(p["within"] for p in pairs if not p["type"].startswith("INSTANCE"))
    verdict = "exact" if exact else "near" if near else None
    return {"a": a, "b": b, "compare": summary, "pairs": pairs, "duplicate": verdict}


def _threshold(type_id: str, bits: int, threshold_of: ThresholdOf | None) -> int | None:
    """The threshold of a unit type (``CONTENT-TEXT-V0``) for ``bits`` compared bits, as the
    daemon applies it; 0 for the Instance-Code (the same bytes); ``None`` for a type the
    policy does not compare."""
    from isccd.model import UnitType  # noqa: PLC0415

    main, sub = type_id.split("-")[:2]
    if main == "INSTANCE":
        return 0
    if threshold_of is None:
        return None
    try:
        unit_type = UnitType(sub.lower() if main == "CONTENT" else main.lower())
    except ValueError:
        return None
    return threshold_of(unit_type, bits)


def _print_comparison(result: dict[str, Any]) -> None:
    for side in ("a", "b"):
        path = result["files"][side]
        print(f"{side.upper()}  {result[side]}" + (f"  {path}" if path else ""))
    if "id_match" in result["compare"]:
        print("ISCC-ID    " + ("identical" if result["compare"]["id_match"] else "different"))
        return
    if not result["pairs"]:
        print("no units of the same type to compare")
        return
    width = max(len(p["type"]) for p in result["pairs"])
    for pair in result["pairs"]:
        if pair["type"].startswith("INSTANCE"):
            verdict = "identical" if pair["distance"] == 0 else "different"
        else:
            verdict = f"distance {pair['distance']:>3}  similarity {pair['similarity']:>3}%"
            if pair["within"] is not None:
                verdict += f"  {'within' if pair['within'] else 'beyond'} {pair['threshold']}"
        print(f"{pair['type']:<{width}}  {pair['bits']:>3} bits  {verdict}")
    duplicate = result["duplicate"]
    print(f"duplicates: {duplicate}" if duplicate else "not duplicates")


def _default_thresholds(config: Path | None) -> Thresholds | None:
    """The default duplicate policy when nothing configures ``[match]`` (no such table in the
    configuration file, no ``ISCCD_MATCH__*`` variable), found without loading the settings
    (pydantic, about 0.1 s); ``None`` when the settings must be loaded to know it.

    Raises:
        ConfigError: The configuration file cannot be read or is not TOML.
    """
    import os  # noqa: PLC0415

    from isccd.cli.connect import config_tables  # noqa: PLC0415
    from isccd.match import Thresholds  # noqa: PLC0415

    if any(name.upper().startswith("ISCCD_MATCH__") for name in os.environ):
        return None
    if "match" in config_tables(config):
        return None
    return Thresholds()


def run_compare(args: argparse.Namespace) -> int:
    """Compare two codes or files; exit 2 if a code cannot be decoded or the two cannot be
    compared, 1 if a file cannot be coded, 78 for an invalid configuration."""
    from isccd.errors import ConfigError  # noqa: PLC0415
    from isccd.iscc import IsccError, iscc_decompose  # noqa: PLC0415

    given_files = [given for given in (args.a, args.b) if Path(given).is_file()]
    try:
        thresholds = None if given_files else _default_thresholds(args.config)
        if thresholds is None:
            from isccd.config import load_index_config  # noqa: PLC0415 -- keeps --help fast

            config = load_index_config(args.config)
            thresholds = config.reading().thresholds
    except ConfigError as exc:
        print(f"isccd compare: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    codes: dict[str, str] = {}
    files: dict[str, str | None] = {}
    datahashes: dict[str, str | None] = {}
    for side, given in (("a", args.a), ("b", args.b)):
        files[side] = datahashes[side] = None
        if given in given_files:
            from isccd.hashing import compute_record  # noqa: PLC0415

            record = compute_record(str(Path(given).absolute()), config.code)
            if record.iscc is None:
                reason = "; ".join(i.reason for i in record.issues) or "nothing was computed"
                print(f"isccd compare: cannot code {given!r}: {reason}", file=sys.stderr)
                return EXIT_FAILURE
            codes[side], files[side], datahashes[side] = record.iscc, given, record.datahash
            continue
        try:
            iscc_decompose(given)
        except IsccError as e:
            _bad_code("compare", given, e)
            return EXIT_USAGE
        codes[side] = given
    try:
        result = compare_codes(codes["a"], codes["b"], thresholds.scaled)
    except IsccError as e:
        print(f"isccd compare: cannot compare {args.a!r} with {args.b!r}: {e}", file=sys.stderr)
        return EXIT_USAGE
    if files["a"] and files["b"]:
        # Two files are exact duplicates by their whole content, not a 64-bit prefix of it.
        same = datahashes["a"] is not None and datahashes["a"] == datahashes["b"]
        if result["duplicate"] == "exact" and not same:
            near = any(p["within"] for p in result["pairs"] if not p["type"].startswith("INSTANCE"))
            result["duplicate"] = "near" if near else None
        elif same:
            result["duplicate"] = "exact"
    result["files"] = files
    if output_format(args) != "text":
        print_json(result)
    else:
        _print_comparison(result)
    return EXIT_OK
