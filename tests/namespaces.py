"""Running a command in a user namespace, where the test may set kernel limits of its own."""

from __future__ import annotations

import shutil
import subprocess

import pytest


def unshare_tool() -> str:
    """``unshare`` from util-linux, once it is known to create user namespaces here; the test
    is skipped with the reason otherwise."""
    tool = shutil.which("unshare")
    if tool is None:
        pytest.skip("unshare (util-linux) is not installed")
    probe = subprocess.run(
        [tool, "--user", "--map-root-user", "true"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        pytest.skip(f"user namespaces are not available: {probe.stderr.decode().strip()}")
    return tool
