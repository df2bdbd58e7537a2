"""W1 SQL drain of an earlier revision against the working tree, side by side (A/B).

``python -m bench.tree_ab REV [--jobs N] [--reps R] [--batch B ...] [--clients C ...]``:
three databases of their own: the raw baseline, andal as installed by revision REV (its SQL
and its installer, taken with ``git archive``, as the upgrade test does) and andal as the
working tree installs it. For each batch and client count, W1's pgbench drain scripts
(``systems.pgbench_drain_script``) drain N preloaded jobs from each, in rotating order, R
times. Prints jobs/s (median) and each andal's ratio to raw of the same round. Ratios taken
in one run on one machine are what tells a change from the machine: a published run from
another machine (or another load) is no baseline. Not part of ``make bench``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from . import systems
from .common import ADMIN_DSN, RUN_ID, dsn_for, log, run_pgbench

ROOT = Path(__file__).resolve().parents[1]
NAMES = {"raw": f"andal_bench_ab_raw_{RUN_ID}", "base": f"andal_bench_ab_base_{RUN_ID}",
         "tree": f"andal_bench_ab_tree_{RUN_ID}"}  # fmt: skip


def install_revision(rev: str, dsn: str, tmp: Path) -> None:
    """Install andal into dsn with the SQL and the installer of git revision rev."""
    archive = tmp / "rev.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), rev], check=True)
    with tarfile.open(archive) as t:
        t.extractall(tmp / "rev", filter="data")
    env = {**os.environ, "PYTHONPATH": str(tmp / "rev" / "pydriver")}
    subprocess.run([sys.executable, "-m", "andal.install", dsn], check=True, env=env,
                   stdout=subprocess.DEVNULL)  # fmt: skip


@contextmanager
def three_databases(rev: str, names: dict[str, str]) -> Iterator[dict[str, str]]:
    """Fresh databases ``names["raw"]``, ``["base"]`` (andal of revision ``rev``) and
    ``["tree"]`` (the working tree's andal), set up for the benchmark; yields their DSNs by
    key and drops them afterwards."""
    dsns = {k: dsn_for(v) for k, v in names.items()}
    with psycopg.connect(ADMIN_DSN, autocommit=True) as c:
        for db in names.values():
            c.execute(f'drop database if exists "{db}"')
            c.execute(f'create database "{db}"')
    try:
        with tempfile.TemporaryDirectory(prefix="andal-ab-") as tmp:
            install_revision(rev, dsns["base"], Path(tmp))
        systems.setup("andal", dsns["tree"])
        systems.setup("raw", dsns["raw"])
        yield dsns
    finally:
        with psycopg.connect(ADMIN_DSN, autocommit=True) as c:
            for db in names.values():
                c.execute(f'drop database if exists "{db}" with (force)')


def rotated(keys: list[str], turn: int) -> list[str]:
    """``keys`` in turn ``turn``'s order: each goes first in one turn of every len(keys)."""
    return keys[turn % len(keys) :] + keys[: turn % len(keys)]


def drain(name: str, dsn: str, n: int, batch: int, clients: int) -> float:
    """jobs/s of one drain of n jobs with W1's script of the system."""
    system = "raw" if name == "raw" else "andal"
    systems.reset(system, dsn)
    systems.load(system, dsn, n)
    systems.vacuum(system, dsn)
    per_client = math.ceil(n / (clients * batch))
    r = run_pgbench(dsn, systems.pgbench_drain_script(system, batch), clients=clients,
                    transactions=per_client, variables={"batch": batch})  # fmt: skip
    with psycopg.connect(dsn, autocommit=True) as c:
        left = systems.remaining(system, c)
    if left:
        raise RuntimeError(f"{name}: {left} jobs left after the drain")
    return batch * r.tps


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.tree_ab")
    p.add_argument("rev", help="the revision to compare the working tree with (e.g. a commit)")
    p.add_argument("--jobs", type=int, default=20_000)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--batch", type=int, action="append", help="batch sizes (default 1, 100)")
    p.add_argument("--clients", type=int, action="append", help="pgbench clients (default 1)")
    args = p.parse_args()
    with three_databases(args.rev, NAMES) as dsns:
        for batch in args.batch or [1, 100]:
            for clients in args.clients or [1]:
                got: dict[str, list[float]] = {k: [] for k in NAMES}
                for rep in range(args.reps):
                    order = rotated(list(NAMES), rep)
                    for name in order:
                        got[name].append(drain(name, dsns[name], args.jobs, batch, clients))
                    log(f"batch {batch} clients {clients} rep {rep + 1}: "
                        + ", ".join(f"{k} {got[k][-1]:,.0f}/s" for k in NAMES))  # fmt: skip
                med = {k: statistics.median(v) for k, v in got.items()}
                raw = got["raw"]
                ratio = {
                    k: statistics.median(a / r for a, r in zip(got[k], raw, strict=True))
                    for k in ("base", "tree")
                }
                print(
                    f"batch {batch:>3} clients {clients}: raw {med['raw']:,.0f}/s,"
                    f" {args.rev} {med['base']:,.0f}/s ({ratio['base']:.2f} of raw),"
                    f" tree {med['tree']:,.0f}/s ({ratio['tree']:.2f} of raw)",
                    flush=True,
                )


if __name__ == "__main__":
    main()
