"""The figures of ``isccd report``: making the page, and the page in a browser.

1. A tree of ``--groups`` near-duplicate image groups of three files each (a 640x480 JPEG of
   random blocks and shapes, the same at 480x360, and the same re-encoded at a low quality),
   indexed with ``isccd scan --state``.
2. **Cold**: ``isccd report --state`` with an empty preview cache (every picture decoded and
   encoded), and **warm**: again with the cache that run filled. Each is a fresh ``isccd``
   process, timed from start to exit; medians of ``--runs``. Anchor: ``isccd dupes --near
   --json`` on the same store (the groups alone, the part of the report that is not previews).
3. **In the browser** (headless Chromium over the DevTools protocol, the page from
   ``file://``): the time to first render (``performance.now()`` when the first frame after the
   first batch of groups is painted, from the start of navigation), and the time to apply a
   filter (a search typed into the box, then the frame after the groups are redrawn); medians.

    python bench/report.py [--groups N] [--runs N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.report.browser import CHROMIUM, Browser
from tests.report.conftest import picture

PY = sys.executable


def make_tree(root: Path, groups: int) -> None:
    """``groups`` folders of three near-duplicate JPEGs."""
    for g in range(groups):
        folder = root / f"g{g:05d}"
        folder.mkdir(parents=True)
        img = picture(g)
        img.save(folder / "original.jpg", quality=90)
        img.resize((480, 360)).save(folder / "smaller.jpg", quality=85)
        img.save(folder / "recompressed.jpg", quality=40)


def isccd(*args: str, env: dict[str, str]) -> tuple[float, str]:
    """Run ``isccd ARGS`` in a new process; its wall time and standard output."""
    start = time.perf_counter()
    done = subprocess.run(
        [PY, "-m", "isccd", *args], env=env, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"isccd {' '.join(args)} failed:\n{done.stderr}")
    return seconds, done.stdout


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs"


FILTER = """
new Promise((resolve) => {
  const box = document.getElementById("search");
  const start = performance.now();
  box.value = %s;
  box.dispatchEvent(new Event("input"));
  requestAnimationFrame(() => setTimeout(() => resolve([
    performance.now() - start, Number(document.documentElement.dataset.matched)]), 0));
})
"""


def browser_figures(page: Path, base: Path, runs: int) -> tuple[list[float], list[float], int]:
    """First-render times of ``runs`` loads, filter times, and the groups the page shows."""
    renders, filters = [], []
    with Browser(base / "chromium") as browser:
        for _ in range(runs):
            tab = browser.open(page.as_uri(), timeout=60)
            tab.wait_for("document.documentElement.dataset.firstRender", timeout=60)
            renders.append(float(tab.evaluate("document.documentElement.dataset.firstRender")))
            groups = int(tab.evaluate("document.documentElement.dataset.matched"))
            for query in ("g00", "g001", "original", "", "smaller g0099", ""):
                ms, matched = tab.evaluate(FILTER % json.dumps(query))
                filters.append(float(ms))
                if query == "" and matched != groups:
                    raise SystemExit(f"clearing the search shows {matched} of {groups} groups")
            if tab.errors:
                raise SystemExit(f"the page logged errors: {tab.errors}")
            tab.close()
    return renders, filters, groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="build the tree here and keep it")
    args = parser.parse_args()

    base = args.keep or Path(tempfile.mkdtemp(prefix="isccd-bench-report-"))
    base.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, CONFIGURATION_DIRECTORY=str(base / "etc"))
    (base / "etc").mkdir(exist_ok=True)
    tree, state = base / "tree", base / "state"
    print(f"before: {load()}")
    try:
        if not tree.exists():
            start = time.perf_counter()
            make_tree(tree, args.groups)
            print(f"tree: {3 * args.groups} JPEGs written in {time.perf_counter() - start:.1f} s")
        if not state.exists():
            seconds, _ = isccd("scan", "--state", str(state), str(tree), env=env)
            print(f"indexed with isccd scan in {seconds:.1f} s")
        limit = str(max(1000, 2 * args.groups))
        dupes = [
            isccd("dupes", "--near", "--json", "--limit", limit, "--state", str(state), env=env)
            for _ in range(args.runs)
        ]
        groups = json.loads(dupes[0][1])["groups"]
        files = sum(len(g["members"]) for g in groups)
        print(f"the index holds {len(groups)} duplicate groups of {files} files")
        anchor = statistics.median(s for s, _ in dupes)

        page = base / "report.html"
        report = ["report", "--state", str(state), "--limit", limit, "-o", str(page)]
        cold = []
        for run in range(args.runs):
            cache = base / f"cache-{run}"
            shutil.rmtree(cache, ignore_errors=True)
            cold.append(isccd(*report, env=dict(env, CACHE_DIRECTORY=str(cache)))[0])
        warm_env = dict(env, CACHE_DIRECTORY=str(base / f"cache-{args.runs - 1}"))
        warm = [isccd(*report, env=warm_env)[0] for _ in range(max(args.runs, 3))]
        size = page.stat().st_size

        print()
        print("| measurement | median | runs | anchor: `dupes --near --json` | ratio | target |")
        print("|---|---|---|---|---|---|")
        for name, values, target in (("cold", cold, "< 60 s"), ("warm", warm, "< 5 s")):
            median = statistics.median(values)
            print(
                f"| report, {name} cache | {median:.2f} s | {', '.join(f'{v:.2f}' for v in values)}"
                f" | {anchor:.2f} s | {median / anchor:.1f}x | {target} |"
            )
        print(f"\npage: {size / 1e6:.1f} MB for {len(groups)} groups")

        if CHROMIUM is None:
            print("chromium is not installed: no browser figures")
        else:
            renders, filters, shown = browser_figures(page, base, max(args.runs, 5))
            print(
                f"browser ({shown} groups): first render {statistics.median(renders):.0f} ms "
                f"(median of {len(renders)} loads, max {max(renders):.0f}); filter "
                f"{statistics.median(filters):.1f} ms (median of {len(filters)}, "
                f"max {max(filters):.1f})"
            )
    finally:
        print(f"after: {load()}")
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
