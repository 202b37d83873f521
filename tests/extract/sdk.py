"""The reference: iscc-sdk 0.9.7, run in a child process on the same files.

The SDK creates its data directory when imported and would download its own ffmpeg and fpcalc
builds; the child gets a private ``XDG_DATA_HOME`` in which the SDK's tool names point at the
tools on PATH, so both sides use the same binaries. Debian's fpcalc 1.5.1 exits with status 3
after a complete fingerprint, which the SDK (made for fpcalc 1.6.0) treats as a failure; the
wrapper passes such output on with status 0.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HAVE_SDK = importlib.util.find_spec("iscc_sdk") is not None
needs_sdk = pytest.mark.skipif(not HAVE_SDK, reason="iscc-sdk is not installed")

_CHILD = r"""
import json, sys
from loguru import logger
logger.remove()
import iscc_sdk as idk
from PIL import Image

def run(job):
    kind = job["kind"]
    if kind == "code":
        meta = idk.code_iscc(job["path"], create_thumb=False, **job.get("options", {}))
        return meta.dict()
    if kind == "pixels":
        return list(idk.image_normalize(Image.open(job["path"])))
    if kind == "mediatype":
        return idk.mediatype_guess(bytes.fromhex(job["head"]), file_name=job["name"])
    if kind == "sniff":
        return idk.mediatype_from_data(bytes.fromhex(job["head"]))
    if kind == "mediatype_sniffed":
        # The SDK's reconciliation of name and content, given another sniff of the content.
        module = sys.modules["iscc_sdk.mediatype"]
        original = module.mediatype_from_data
        module.mediatype_from_data = lambda data: job["sniffed"]
        try:
            return idk.mediatype_guess(bytes.fromhex(job["head"]), file_name=job["name"])
        finally:
            module.mediatype_from_data = original
    if kind == "mp7":
        with open(job["path"], "rb") as f:
            frames = idk.read_mp7_signature(f.read())
        return [[int(v) for v in frame.vector] for frame in frames]
    raise ValueError(kind)

results = []
for job in json.load(sys.stdin):
    try:
        results.append({"ok": run(job)})
    except Exception as exc:
        results.append({"error": f"{type(exc).__name__}: {exc}"})
json.dump(results, sys.stdout)
"""

_FPCALC_WRAPPER = """#!/bin/sh
out=$("{fpcalc}" "$@")
status=$?
if [ -n "$out" ]; then printf '%s\\n' "$out"; exit 0; fi
exit $status
"""


def run_sdk(jobs: list[dict[str, Any]], workdir: Path) -> list[dict[str, Any]]:
    """Run jobs through the SDK; each result is ``{"ok": value}`` or ``{"error": text}``."""
    data_home = workdir / "sdk-data"
    tools = data_home / "iscc-sdk"
    tools.mkdir(parents=True, exist_ok=True)
    for name, target in (("ffmpeg-8.1", "ffmpeg"), ("ffprobe-8.1", "ffprobe")):
        found = shutil.which(target)
        if found and not (tools / name).exists():
            (tools / name).symlink_to(found)
    fpcalc = shutil.which("fpcalc")
    wrapper = tools / "fpcalc-1.6.0"
    if fpcalc and not wrapper.exists():
        wrapper.write_text(_FPCALC_WRAPPER.format(fpcalc=fpcalc))
        wrapper.chmod(0o755)
    env = dict(os.environ, XDG_DATA_HOME=str(data_home), PYTHONWARNINGS="ignore")
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    results: list[dict[str, Any]] = json.loads(proc.stdout)
    return results


def sdk_codes(paths: list[Path], workdir: Path, **options: Any) -> dict[str, dict[str, Any]]:
    """``code_iscc`` of each file (thumbnails off), by file name."""
    jobs = [{"kind": "code", "path": str(p), "options": options} for p in paths]
    return {p.name: r for p, r in zip(paths, run_sdk(jobs, workdir), strict=True)}
