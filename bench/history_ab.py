"""W1 SQL drain with the job history off and on, side by side (a targeted A/B run).

``python -m bench.history_ab [--jobs N] [--reps R]``: one database of its own; for batch 1
and 100 and one pgbench client, the andal drain script of W1 (claim transaction + complete
transaction) drains N preloaded jobs of the ``bench`` queue, alternately without history and
with ``queue.set_history('bench', '1 day')``, R times each. Prints jobs/s (median) and WAL
bytes per job. ``--off-only`` runs history off alone, for comparing two sources of the SQL
(``ANDAL_SQL_DIR=…/sql``, for instance the SQL of an install that has no history).
``--driver`` drains with one Python worker process (``andal.Worker``, W1's andal-py, with
``batch`` slots) instead of pgbench. Not part of ``make bench``.
"""

from __future__ import annotations

import argparse
import math
import statistics
from typing import Any

import psycopg

from . import procs, systems
from .common import ADMIN_DSN, RUN_ID, dsn_for, log, run_pgbench

DB = f"andal_bench_history_{RUN_ID}"


def one(c: psycopg.Connection, query: str, params: tuple[Any, ...] = ()) -> Any:
    """The first column of the one row ``query`` returns."""
    row = c.execute(query, params).fetchone()
    assert row is not None
    return row[0]


def drain(dsn: str, n: int, batch: int, history: bool, driver: bool) -> tuple[float, float]:
    """(jobs/s, WAL bytes per job) of one drain of n jobs (``driver``: by a Python worker)."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("truncate queue.jobs, queue.stat_minutes, queue.dead_letters")
        if one(c, "select to_regclass('queue.history') is not null"):
            c.execute("truncate queue.history")
            c.execute(
                "select queue.set_history(queue => %s, retention => %s::interval)",
                (systems.QUEUE, "1 day" if history else None),
            )
    systems.load("andal", dsn, n)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("vacuum (analyze) queue.jobs")
        lsn0 = one(c, "select pg_current_wal_lsn()")
    if driver:
        rate = procs.drain("andal-py", dsn, n, 1, {"batch": batch}, timeout=60 + n / 50)[
            "jobs_per_s"
        ]
    else:
        per_client = math.ceil(n / batch)
        r = run_pgbench(dsn, systems.pgbench_drain_script("andal", batch), clients=1,
                        transactions=per_client, variables={"batch": batch})  # fmt: skip
        rate = batch * r.tps
    with psycopg.connect(dsn, autocommit=True) as c:
        wal = one(c, "select pg_current_wal_lsn() - %s::pg_lsn", (lsn0,))
        left = one(c, "select count(*) from queue.jobs")
        has_history = one(c, "select to_regclass('queue.history') is not null")
        kept = one(c, "select count(*) from queue.history") if has_history else 0
    if left or kept != (n if history else 0):
        raise RuntimeError(f"drain incomplete: {left} left, {kept} in history")
    return rate, float(wal) / n


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.history_ab")
    p.add_argument("--jobs", type=int, default=20_000)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--off-only", action="store_true", help="history off only")
    p.add_argument("--batch", type=int, action="append", help="batch sizes (default 1 and 100)")
    p.add_argument("--driver", action="store_true", help="drain with the Python worker")
    args = p.parse_args()
    modes = (False,) if args.off_only else (False, True)
    with psycopg.connect(ADMIN_DSN, autocommit=True) as c:
        c.execute(f'drop database if exists "{DB}"')
        c.execute(f'create database "{DB}"')
    dsn = dsn_for(DB)
    try:
        systems.setup("andal", dsn)
        for batch in args.batch or [1, 100]:
            got: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
            for rep in range(args.reps):
                for history in modes:
                    got[history].append(drain(dsn, args.jobs, batch, history, args.driver))
                    log(f"batch {batch} history {'on' if history else 'off'} rep {rep + 1}: "
                        f"{got[history][-1][0]:,.0f} jobs/s")  # fmt: skip
            for history in modes:
                rates = [g[0] for g in got[history]]
                wal = statistics.median(g[1] for g in got[history])
                print(f"batch {batch:>3}  history {'on ' if history else 'off'}  "
                      f"median {statistics.median(rates):8,.0f} jobs/s  "
                      f"(runs {', '.join(f'{x:,.0f}' for x in rates)})  "
                      f"WAL {wal:,.0f} B/job", flush=True)  # fmt: skip
    finally:
        with psycopg.connect(ADMIN_DSN, autocommit=True) as c:
            c.execute(f'drop database if exists "{DB}" with (force)')


if __name__ == "__main__":
    main()
