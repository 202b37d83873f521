"""``isccd code PATH...``: compute the ISCC of files, as iscc-sdk's ``create`` does.

Each file becomes one JSON object with the ISCC SDK's field names (``size`` where the SDK says
``filesize``: the name every other isccd answer uses); directories are walked.
Files are coded in the daemon's worker processes (``-j``, :mod:`isccd.hashing.lazy`) and printed
in a fixed order (the order of the arguments, and within a directory by name), whatever order
the workers finish in. A handful of files is coded in this process instead.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import stat
import sys
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, TextIO

from isccd.cli import EXIT_FAILURE, EXIT_OK, log_to_stderr
from isccd.cli.escape import shown
from isccd.cli.formats import output_format
from isccd.cli.output import Progress, dumps, format_size
from isccd.errors import HashingUnavailableError
from isccd.extract.missing import MissingTools
from isccd.extract.source import file_kind
from isccd.extract.tools import DEFAULT_TIMEOUT
from isccd.model import UNIT_BITS, FileIssue, FileRecord, IssueCode, IssueKind, sort_units

if TYPE_CHECKING:
    # The hashing layer (numpy, Pillow, the workers) is imported by the handler: building the
    # parser must stay cheap.
    from isccd.hashing import CodeOptions

_EPILOG = """\
output: readable text, to a terminal or a pipe alike (names escaped on one line, a missing tool
named once at the end, on stderr). With --json, one JSON document: an array with one object per
file, always (even for one file), written as each file is done; --jsonl prints one compact
object per line instead. Fields follow iscc-sdk: path, iscc, name, description, mediatype,
mode, filename, size (iscc-sdk's filesize), datahash, metahash, characters, width, height,
duration, units (with --units: unit type -> ISCC unit), issues and error
(docs/schema/code.schema.json).

Directories are walked recursively. Symbolic links inside them, FIFOs, sockets and devices are
listed as skipped, never opened; symbolic links named on the command line are followed.

exit status: 0 when every file was coded (skips, such as a media type without a Content-Code,
are not failures); 1 when any file failed or a PATH does not exist (each failure is in the
output with its reason); 2 for invalid arguments.
"""

#: A worker's start (imports, JIT kernels, document extractor) costs about a second, as much as
#: coding a few dozen typical files (bench/code.py): fewer files are coded in this process.
_FILES_PER_WORKER = 16


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``code`` to the ``isccd`` parser."""
    parser = subparsers.add_parser(
        "code",
        help="compute the ISCC-CODE of files and folders",
        description="Compute the ISCC-CODE (Meta, Content, Data and Instance units) of each "
        "file, the way the ISCC SDK 0.9.7 does.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="a file or a directory")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print JSON")
    out.add_argument("--jsonl", action="store_true", help="print one JSON object per line")
    parser.add_argument("--units", action="store_true", help="include the ISCC units")
    parser.add_argument(
        "-j",
        "--jobs",
        type=_positive_int,
        default=os.cpu_count() or 1,
        help="files coded in parallel (default: the number of CPUs)",
    )
    parser.add_argument(
        "--bits", type=int, choices=UNIT_BITS, default=64, help="bits per unit (default: 64)"
    )
    parser.add_argument(
        "--wide", action="store_true", help="WIDE ISCC-CODE for Data+Instance-only files"
    )
    parser.add_argument("--no-meta", action="store_true", help="compute no Meta-Code")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="time limit for each run of fpcalc or ffmpeg (default: %(default)g)",
    )
    parser.add_argument(
        "--file-timeout",
        type=_positive_float,
        metavar="SECONDS",
        help="time limit for each file coded in a worker process, after which the worker is "
        "replaced and the file reported failed (default: 1800, or room for three tool runs)",
    )
    parser.set_defaults(handler=run_code)


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


@dataclass(frozen=True, slots=True)
class _Task:
    """One entry of the output: a file to code, or a record decided without opening it."""

    shown: str
    path: str
    record: FileRecord | None = None


def run_code(args: argparse.Namespace) -> int:
    """Code every file named or found under the arguments and print the results."""
    from isccd.hashing import CodeOptions  # noqa: PLC0415

    options = CodeOptions(
        bits=args.bits,
        # Below 128 bits an ISCC-CODE cannot be WIDE: --wide changes nothing there.
        wide=args.wide and args.bits >= 128,
        meta=not args.no_meta,
        tool_timeout=args.timeout,
    )
    tasks = list(walk(args.paths))
    mode = output_format(args)
    failed = coded = 0
    out = _Output(mode, sys.stdout)
    missing = MissingTools()
    with Progress("coding", total=len(tasks)) as progress:
        coding = _records(tasks, options, args.jobs, args.file_timeout)
        try:
            for task, record in zip(tasks, coding, strict=True):
                failed += record.failed
                coded += record.iscc is not None and not record.failed
                missing.add(record.issues)
                progress.clear()
                out.write(record_json(record, task.shown, units=args.units))
                progress.advance(note=PurePath(task.shown).name)
        except HashingUnavailableError as exc:
            print(f"isccd: {exc}", file=sys.stderr)
            return EXIT_FAILURE
        finally:
            # The workers are ended now whatever happened: left to the garbage collector, an
            # error's traceback would keep them until the exit handlers wait for them, forever.
            coding.close()
            # The array is closed whatever happened, so that what was printed still parses.
            out.close()
    for line in missing.lines():
        print(f"isccd: {line}", file=sys.stderr)
    if mode == "text":
        print(f"{len(tasks)} files: {coded} coded, {failed} failed", file=sys.stderr)
    return EXIT_FAILURE if failed else EXIT_OK


def walk(paths: Iterable[str]) -> Iterator[_Task]:
    """The files to code, in a fixed order: each argument, then directories sorted by name.

    Symbolic links given as arguments are followed; inside directories they are not, and
    neither are non-regular files opened. A directory reached twice (a bind-mount loop) is
    walked once.
    """
    seen: set[tuple[int, int]] = set()
    for arg in paths:
        given = Path(arg)
        try:
            st = given.stat()
        except OSError as exc:
            yield _Task(arg, arg, _failed(arg, _os_issue(exc)))
            continue
        if stat.S_ISDIR(st.st_mode):
            yield from _walk_dir(arg, seen, st)
        else:
            # An explicit argument is coded whatever it is, so a FIFO or device is reported as
            # an error by compute_record (which never opens it).
            yield _Task(arg, str(given.resolve()) if given.is_symlink() else arg)


def _walk_dir(
    top: str, seen: set[tuple[int, int]], st: os.stat_result | None = None
) -> Iterator[_Task]:
    """Depth first, each directory's entries in name order (subdirectories where they sort).
    ``st`` is the directory's stat when the caller has it."""
    try:
        st = st or Path(top).stat()
        if (st.st_dev, st.st_ino) in seen:
            return
        seen.add((st.st_dev, st.st_ino))
        with os.scandir(top) as scan:
            entries = sorted(scan, key=lambda e: e.name)
    except OSError as exc:
        yield _Task(top, top, _failed(top, _os_issue(exc)))
        return
    for entry in entries:
        try:
            entry_st = entry.stat(follow_symlinks=False)
        except OSError as exc:
            yield _Task(entry.path, entry.path, _failed(entry.path, _os_issue(exc)))
            continue
        mode = entry_st.st_mode
        if stat.S_ISDIR(mode):
            yield from _walk_dir(entry.path, seen, entry_st)
        elif stat.S_ISREG(mode):
            yield _Task(entry.path, entry.path)
        else:
            reason = f"{file_kind(mode)}: not followed or opened"
            issue = FileIssue("read", IssueKind.SKIPPED, reason, IssueCode.NOT_REGULAR)
            yield _Task(entry.path, entry.path, FileRecord(entry.path, None, issues=(issue,)))


def _failed(path: str, issue: FileIssue) -> FileRecord:
    return FileRecord(path, None, issues=(issue,))


def _os_issue(exc: OSError) -> FileIssue:
    if isinstance(exc, FileNotFoundError):
        return FileIssue("read", IssueKind.ERROR, "no such file or directory", IssueCode.VANISHED)
    reason = exc.strerror or str(exc)
    return FileIssue("read", IssueKind.ERROR, reason, IssueCode.ACCESS)


def _records(
    tasks: list[_Task], options: CodeOptions, jobs: int, file_timeout: float | None
) -> Generator[FileRecord, None, None]:
    """Each task's record, in task order, computed in worker processes when it helps.

    In this process nothing logs (only the workers' pool does): logging is configured, and
    the pool imported, only when the workers are used.
    """
    from isccd.hashing import compute_record  # noqa: PLC0415

    todo = [t for t in tasks if t.record is None]
    if jobs <= 1 or len(todo) < _FILES_PER_WORKER * 2:
        for task in tasks:
            yield task.record or compute_record(task.path, options)
        return
    log_to_stderr()
    from isccd.hashing.lazy import records  # noqa: PLC0415
    from isccd.hashing.pool import WorkerOptions  # noqa: PLC0415

    # The workers' default limit, unless three tool runs (ffprobe, fpcalc or ffmpeg), each with
    # its own limit, need more.
    default = max(WorkerOptions().file_timeout, 3 * options.tools.timeout + 60)
    pool = WorkerOptions(
        workers=max(2, min(jobs, len(todo) // _FILES_PER_WORKER)),
        file_timeout=file_timeout or default,
        code=options,
    )
    paths = (None if t.record else t.path for t in tasks)
    # A bounded look-ahead keeps every worker busy without queueing the whole tree.
    for task, record in zip(tasks, records(paths, pool, ahead=4 * jobs), strict=True):
        found = task.record or record
        assert found is not None  # a task without a record was hashed
        yield found


def record_json(record: FileRecord, shown: str, *, units: bool = False) -> dict[str, Any]:
    """The JSON object for one file, with the ISCC SDK's field names; absent values left out."""
    out: dict[str, Any] = {
        "path": shown,
        "iscc": record.iscc,
        "name": record.name,
        "description": record.description,
        "mediatype": record.mediatype,
        "mode": record.mode.value if record.mode else None,
        "filename": PurePath(shown).name,
        "size": record.filesize,
        "datahash": record.datahash,
        "metahash": record.metahash,
        "characters": record.characters,
        "width": record.width,
        "height": record.height,
        "duration": round(record.duration, 3) if record.duration is not None else None,
    }
    if units:
        out["units"] = {unit.type.value: unit.iscc for unit in sort_units(record.units)}
    out = {key: value for key, value in out.items() if value is not None}
    if record.issues:
        out["issues"] = [dataclasses.asdict(i) for i in record.issues]
    errors = [i.reason for i in record.issues if i.kind is IssueKind.ERROR]
    if errors:
        out["error"] = "; ".join(errors)
    return out


class _Output:
    """Writes each file's object as it is done: a readable block (``text``), a line
    (``jsonl``), or an element of one JSON array (``json``), opened at the first file and
    closed by :meth:`close`."""

    def __init__(self, mode: str, stream: TextIO) -> None:
        self._mode = mode
        self._stream = stream
        self._written = 0

    def write(self, obj: dict[str, Any]) -> None:
        """Write one file's object."""
        if self._mode == "text":
            text = _summary(obj)
        elif self._mode == "jsonl":
            text = dumps(obj)
        else:
            element = "  " + dumps(obj, indent=2).replace("\n", "\n  ")
            text = ("[\n" if not self._written else ",\n") + element
        self._stream.write(text if self._mode == "json" else text + "\n")
        self._stream.flush()
        self._written += 1

    def close(self) -> None:
        """End the JSON array (an empty one when no file was written)."""
        if self._mode == "json":
            self._stream.write("\n]\n" if self._written else "[]\n")
            self._stream.flush()


def _summary(obj: dict[str, Any]) -> str:
    """A readable block for one file: code and path, then what it is, then its issues."""
    head = f"{obj.get('iscc') or 'no ISCC':<60} {shown(obj['path'])}"
    facts = [obj.get("mediatype"), _size(obj.get("size"))]
    if "width" in obj:
        facts.append(f"{obj['width']}x{obj['height']}")
    if "duration" in obj:
        facts.append(f"{obj['duration']:g} s")
    if "characters" in obj:
        facts.append(f"{obj['characters']} characters")
    if "name" in obj:
        facts.append(f"name '{shown(obj['name'])}'")
    lines = [head, "    " + ", ".join(str(f) for f in facts if f)]
    # A missing tool is told once for the whole run, after the files (MissingTools).
    issues = [i for i in obj.get("issues", []) if i["code"] != IssueCode.TOOL_MISSING]
    lines += [f"    {i['kind']} ({i['stage']}): {shown(i['reason'])}" for i in issues]
    lines += [f"    {kind}: {unit}" for kind, unit in obj.get("units", {}).items()]
    return "\n".join(line for line in lines if line.strip())


def _size(n: int | None) -> str | None:
    return None if n is None else format_size(n)
