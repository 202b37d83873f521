"""Commands about ISCC codes themselves: ``selftest``, ``explain`` and ``compare``.

They need no configuration, store or daemon. ``explain`` and ``compare`` print readable text on
a terminal and JSON with ``--json`` or when stdout is not a terminal; ``selftest`` prints a
one-line summary unless ``--json`` is given.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from isccd.cli import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from isccd.cli.output import print_json, wants_json

if TYPE_CHECKING:
    from isccd.iscc.conformance import ConformanceReport


#: The conformance vectors shipped with the package.
CONFORMANCE_DATA = "conformance-1.5.0.json"

_CODE_ERRORS = (
    "exit status: 0 success; 2 when a CODE cannot be read as an ISCC (the reason goes to "
    "stderr). CODE may be canonical (ISCC:...), bare base32, a URI (iscc:...) or multiformat "
    "(f, b, v, z, u), with or without hyphens."
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
    explain.add_argument("--json", action="store_true", help="print JSON (default when piped)")
    explain.set_defaults(handler=run_explain)

    compare = subparsers.add_parser(
        "compare",
        help="compare two ISCC codes unit by unit",
        description="Hamming distance and similarity of the units the two codes share "
        "(units of unequal length are compared over their common prefix).",
        epilog=_CODE_ERRORS,
    )
    compare.add_argument("a", metavar="CODE", help="the first ISCC code")
    compare.add_argument("b", metavar="CODE", help="the second ISCC code")
    compare.add_argument("--json", action="store_true", help="print JSON (default when piped)")
    compare.set_defaults(handler=run_compare)


# -- selftest ---------------------------------------------------------------------------------


def _load_vectors() -> dict[str, Any]:
    from importlib import resources  # noqa: PLC0415 -- keeps --help fast

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
    info["units"] = [
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
    single = len(info["units"]) == 1 and info["units"][0]["iscc"] == info["iscc"]
    if single:
        print(f"  {info['explain']}")
        return
    width = max(len(u["iscc"]) for u in info["units"])
    for unit in info["units"]:
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
    if wants_json(args.json):
        print_json(results)
    else:
        for info in results:
            _print_explanation(info)
    return status


# -- compare ----------------------------------------------------------------------------------


def compare_codes(a: str, b: str) -> dict[str, Any]:
    """Everything ``isccd compare`` reports about two codes.

    Returns:
        ``{"a", "b", "compare", "units"}``: the inputs, the :func:`iscc_compare` result, and one
        entry per pair of units of the same type with its bits, distance and similarity.

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
                pairs.append(
                    {
                        "type": type_a,
                        "a": "ISCC:" + unit_a,
                        "b": "ISCC:" + unit_b,
                        "bits": min(len(body_a), len(body_b)) * 8,
                        "distance": ic.iscc_distance(unit_a, unit_b),
                        "similarity": ic.iscc_similarity(unit_a, unit_b),
                    }
                )
    return {"a": a, "b": b, "compare": summary, "units": pairs}


def _print_comparison(result: dict[str, Any]) -> None:
    print(f"A  {result['a']}")
    print(f"B  {result['b']}")
    if "id_match" in result["compare"]:
        print("ISCC-ID    " + ("identical" if result["compare"]["id_match"] else "different"))
        return
    if not result["units"]:
        print("no units of the same type to compare")
        return
    width = max(len(p["type"]) for p in result["units"])
    for pair in result["units"]:
        if pair["type"].startswith("INSTANCE"):
            verdict = "identical" if pair["distance"] == 0 else "different"
        else:
            verdict = f"distance {pair['distance']:>3}  similarity {pair['similarity']:>3}%"
        print(f"{pair['type']:<{width}}  {pair['bits']:>3} bits  {verdict}")


def run_compare(args: argparse.Namespace) -> int:
    """Compare two codes; exit 2 if either cannot be decoded or they cannot be compared."""
    from isccd.iscc import IsccError, iscc_decompose  # noqa: PLC0415 -- keeps --help fast

    for code in (args.a, args.b):
        try:
            iscc_decompose(code)
        except IsccError as e:
            _bad_code("compare", code, e)
            return EXIT_USAGE
    try:
        result = compare_codes(args.a, args.b)
    except IsccError as e:
        print(f"isccd compare: cannot compare {args.a!r} with {args.b!r}: {e}", file=sys.stderr)
        return EXIT_USAGE
    if wants_json(args.json):
        print_json(result)
    else:
        _print_comparison(result)
    return EXIT_OK
