"""Re-render a run's tables and plots from its JSON: ``python -m bench.render [FILE] [--publish]``.

Without FILE the newest ``bench/results/*.json`` is used. Writes ``latest.md`` and the plots
next to the JSON; ``--publish`` also refreshes ``docs/performance.md`` and ``docs/img/``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from . import report
from .run import DOCS, RESULTS_DIR


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.render", description=__doc__)
    p.add_argument("file", nargs="?", type=Path)
    p.add_argument("--publish", action="store_true")
    a = p.parse_args(argv)
    path = a.file or max(RESULTS_DIR.glob("*.json"), key=lambda f: f.stat().st_mtime)
    data = json.loads(path.read_text())
    plots = report.plots(data, path.parent)
    md = report.markdown(data, plots)
    (path.parent / "latest.md").write_text(md)
    print(md)
    if a.publish:
        report.publish(data, plots, DOCS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
