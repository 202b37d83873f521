"""The lazy package :mod:`isccd.iscc`: decoding codes does not import numpy (its map is kept by
tests/test_lazy_packages.py)."""

from __future__ import annotations

import subprocess
import sys


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
