"""Run the benchmark: ``python -m bench.run [--quick] [--only W1,W3] [--reps N]``.

The full run is W1–W7, the cost probes, and the many-producers and many-workers workloads
(PRODUCERS, WORKERS). The scale workload W8 (shards and databases, and a growth run to 1M
jobs) would take it past that; it runs when named:
``--only W8`` (``make bench-scale``: ``--only W8 --scale-jobs 10000000``, up to 10M jobs);
``--quick`` runs every workload, W8 included.

Writes ``bench/results/<timestamp>.json``, ``bench/results/latest.md`` (also printed) and PNG
plots into ``bench/results/`` (when matplotlib is installed).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
import traceback
from pathlib import Path

from .common import Config, log, machine, server_settings
from .env import Env

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DOCS = Path(__file__).resolve().parent.parent / "docs"

WORKLOADS = {
    "W1": "bench.w1_drain",
    "W2": "bench.w2_latency",
    "W3": "bench.w3_enqueue",
    "W4": "bench.w4_backlog",
    "W5": "bench.w5_xmin",
    "W6": "bench.w6_cache",
    "W7": "bench.w7_gating",
    "COST": "bench.cost",
    "PRODUCERS": "bench.many_producers",
    "WORKERS": "bench.many_workers",
    "W8": "bench.w8_scale",
}
#: Workloads a full run leaves out unless named in --only (a quick run has them all).
SEPARATE = {"W8"}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    p.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    p.add_argument(
        "--only",
        help="comma-separated workloads, e.g. W1,W3 (COST: cost probes; W8: the scale workload,"
        " left out of a full run)",
    )
    p.add_argument("--reps", type=int, help="repetitions per case (default 3; quick: 1)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--keep", action="store_true", help="keep the benchmark databases")
    p.add_argument(
        "--scale-jobs",
        type=int,
        metavar="N",
        help="W8: jobs processed by its growth run (default 1,000,000; quick: 5,000)",
    )
    p.add_argument(
        "--w1",
        metavar="SPEC",
        help="W1: run a subset, e.g. 'andal-py,procrastinate@1x1,4x1' (systems: raw-py,"
        " andal-py, andal-py-async, procrastinate, pgqueuer, sql for the pgbench pair; after @,"
        " the cases as WORKERSxBATCH; either part may be left out)",
    )
    p.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    p.add_argument(
        "--publish",
        action="store_true",
        help="copy the plots to docs/img/ and the tables into docs/performance.md",
    )
    return p.parse_args(argv)


def w1_subset(spec: str) -> tuple[set[str] | None, set[tuple[int, int]] | None]:
    """``--w1``'s SPEC: "SYSTEMS@CASES", each a comma list (CASES as WORKERSxBATCH)."""
    systems_part, _, cases_part = spec.partition("@")
    if "@" not in spec and "x" in spec and spec.replace("x", "").replace(",", "").isdigit():
        systems_part, cases_part = "", spec
    systems = {s.strip() for s in systems_part.split(",") if s.strip()} or None
    cases = set()
    for c in cases_part.split(","):
        if c.strip():
            workers, _, batch = c.strip().partition("x")
            cases.add((int(workers), int(batch)))
    return systems, cases or None


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    only = {w.strip().upper() for w in args.only.split(",")} if args.only else None
    if only and (unknown := only - set(WORKLOADS)):
        print(f"unknown workloads: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    cfg = Config(
        quick=args.quick,
        reps=args.reps or (1 if args.quick else 3),
        only=only,
        plots=not args.no_plots,
        scale_jobs=args.scale_jobs,
    )
    if args.w1:
        cfg.w1_systems, cfg.w1_cases = w1_subset(args.w1)
    started = time.time()
    meta = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "command": "python -m bench.run " + " ".join(argv if argv is not None else sys.argv[1:]),
        "quick": cfg.quick,
        "reps": cfg.reps,
        "machine": machine(),
        "server": server_settings(cfg.admin_dsn),
    }
    log(f"andal benchmark: {'quick' if cfg.quick else 'full'}, {cfg.reps} rep(s)")
    env = Env(cfg)
    env.create()
    failed: list[str] = []
    timings: dict[str, float] = {}
    try:
        for name, module in WORKLOADS.items():
            if only and name not in only:
                continue
            if not only and not cfg.quick and name in SEPARATE:
                continue
            t0 = time.time()
            log(f"== {name}")
            try:
                importlib.import_module(module).run(cfg, env)
            except Exception as exc:
                failed.append(name)
                cfg.results.note(f"{name} failed: {exc!r}")
                traceback.print_exc()
            timings[name] = round(time.time() - t0, 1)
            log(f"== {name} took {timings[name]} s")
    finally:
        if not args.keep:
            env.drop()
    meta["seconds"] = round(time.time() - started, 1)
    meta["workload_seconds"] = timings
    meta["failed"] = failed

    from . import report

    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(started))
    data = {"meta": meta, "notes": cfg.results.notes, "records": cfg.results.records}
    json_path = args.out / f"{stamp}.json"
    json_path.write_text(json.dumps(data, indent=1, default=str))
    plots: list[str] = []
    if cfg.plots:
        try:
            plots = report.plots(data, args.out)
        except Exception as exc:  # the numbers are saved; a plot must not lose them
            data["notes"].append(f"plots failed: {exc!r}")
        json_path.write_text(json.dumps(data, indent=1, default=str))
    md = report.markdown(data, plots)
    (args.out / "latest.md").write_text(md)
    print(md)
    if args.publish:
        report.publish(data, plots, DOCS)
        log(f"published into {os.path.relpath(DOCS / 'performance.md')}")
    log(f"wrote {os.path.relpath(json_path)} and {os.path.relpath(args.out / 'latest.md')}")
    # A smoke test fails only when a workload could not run at all.
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
