"""How a command chooses its output format: by its flags, never by where stdout goes.

Text for people unless ``--json`` (one JSON document) or ``--jsonl`` (one JSON object per line)
is given, whether stdout is a terminal, a pipe or a file, as fclones and rmlint do: a script
asks for JSON, and a person piping into ``less`` or ``grep`` keeps the text. Only colour and
progress depend on the terminal (:class:`isccd.cli.output.Progress`).
"""

from __future__ import annotations

import argparse
from typing import Literal

Format = Literal["text", "json", "jsonl"]


def add_format_options(
    parser: argparse._ActionsContainer, *, json_help: str = "print JSON", jsonl: str | None = None
) -> None:
    """Add ``--json`` and, when ``jsonl`` (its help) is given, ``--jsonl``, as exclusive flags."""
    group = parser.add_mutually_exclusive_group() if jsonl else parser
    group.add_argument("--json", action="store_true", help=json_help)
    if jsonl:
        group.add_argument("--jsonl", action="store_true", help=jsonl)


def output_format(args: argparse.Namespace) -> Format:
    """The format the flags ask for: ``"jsonl"``, ``"json"``, else ``"text"``."""
    if getattr(args, "jsonl", False):
        return "jsonl"
    if getattr(args, "json", False):
        return "json"
    return "text"
