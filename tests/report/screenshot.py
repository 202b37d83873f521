"""The screenshot of the report page in the docs (docs/report.png), made again with

    python -m tests.report.screenshot docs/report.png

It reports the test library (tests/report/conftest.py), shows its near duplicates, marks the
file the first group keeps, and saves what headless Chromium shows.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from isccd.cli.main import main as isccd
from tests.report.browser import Browser
from tests.report.conftest import make_library


def screenshot(out: Path) -> None:
    """Write the screenshot to ``out``."""
    with tempfile.TemporaryDirectory(prefix="isccd-shot-") as temp:
        base = Path(temp)
        (base / "etc").mkdir()
        os.environ["CONFIGURATION_DIRECTORY"] = str(base / "etc")
        os.environ["CACHE_DIRECTORY"] = str(base / "cache")
        library, state, page = base / "library", base / "state", base / "report.html"
        make_library(library)
        if isccd(["scan", "--state", str(state), str(library)]) not in (0, 1):
            raise SystemExit("the scan failed")
        if isccd(["report", "--state", str(state), "-o", str(page)]) != 0:
            raise SystemExit("the report failed")
        with Browser(base / "chromium", width=1280, height=860) as browser:
            tab = browser.open(page.as_uri())
            tab.wait_for("document.documentElement.dataset.firstRender")
            tab.evaluate(
                "(() => { const k = document.getElementById('kind'); k.value = 'near';"
                " k.dispatchEvent(new Event('input')); })()"
            )
            tab.press("j")
            tab.press("l")
            tab.press(" ", "Space", " ")
            tab.screenshot(out)


if __name__ == "__main__":
    screenshot(Path(sys.argv[1]))
