"""W1 SQL drain with the plain claim and the claim with deadlines, side by side (A/B).

``python -m bench.deadlines_ab [--jobs N] [--reps R]``: one database of its own; for batch 1
and 100 and one pgbench client, the andal drain script of W1 (claim transaction + complete
transaction) drains N preloaded jobs of the ``bench`` queue, alternately with
``queue.claim(worker, queues, batch)`` and with ``queue.claim(..., deadlines => true)`` (the
claim the Python worker sends), R times each. ``--timeout`` gives the jobs a timeout (so the
deadlines are not null). Prints jobs/s (median). Not part of ``make bench``.
"""

from __future__ import annotations

import argparse
import math
import statistics

import psycopg

from . import systems
from .common import ADMIN_DSN, RUN_ID, dsn_for, log, run_pgbench

DB = f"andal_bench_deadlines_{RUN_ID}"

CLAIM_PLAIN = "queue.claim(worker => 'pgbench', queues => '{{{q}}}', batch => {b})"
CLAIM_DEADLINES = (
    "queue.claim(worker => 'pgbench', queues => '{{{q}}}', batch => {b},"
    " lease => '60 seconds', deadlines => true)"
)


def script(batch: int, deadlines: bool) -> str:
    """The W1 drain script (see ``systems.pgbench_drain_script``) with one claim or the other."""
    base = systems.pgbench_drain_script("andal", batch)
    plain = CLAIM_PLAIN.format(q=systems.QUEUE, b="1" if batch == 1 else ":batch")
    assert plain in base, "the W1 drain script changed: update bench.deadlines_ab"
    if not deadlines:
        return base
    with_deadlines = CLAIM_DEADLINES.format(q=systems.QUEUE, b="1" if batch == 1 else ":batch")
    return base.replace(plain, with_deadlines)


def drain(dsn: str, n: int, batch: int, deadlines: bool, timeout: bool) -> float:
    """jobs/s of one drain of n jobs."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("truncate queue.jobs, queue.stat_minutes, queue.dead_letters")
        c.execute(
            "select from queue.configure_queue(queue => %s, timeout => %s::interval)",
            (systems.QUEUE, "1 hour" if timeout else "0"),
        )
    systems.load("andal", dsn, n)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("vacuum (analyze) queue.jobs")
    r = run_pgbench(dsn, script(batch, deadlines), clients=1,
                    transactions=math.ceil(n / batch), variables={"batch": batch})  # fmt: skip
    with psycopg.connect(dsn, autocommit=True) as c:
        row = c.execute("select count(*) from queue.jobs").fetchone()
    if row is None or row[0]:
        raise RuntimeError(f"drain incomplete: {row} left")
    return batch * r.tps


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.deadlines_ab")
    p.add_argument("--jobs", type=int, default=20_000)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--timeout", action="store_true", help="the jobs have a timeout")
    p.add_argument("--batch", type=int, action="append", help="batch sizes (default 1 and 100)")
    args = p.parse_args()
    with psycopg.connect(ADMIN_DSN, autocommit=True) as c:
        c.execute(f'drop database if exists "{DB}"')
        c.execute(f'create database "{DB}"')
    dsn = dsn_for(DB)
    try:
        systems.setup("andal", dsn)
        for batch in args.batch or [1, 100]:
            got: dict[bool, list[float]] = {False: [], True: []}
            for rep in range(args.reps):
                for deadlines in (False, True):
                    got[deadlines].append(drain(dsn, args.jobs, batch, deadlines, args.timeout))
                    log(f"batch {batch} deadlines {deadlines} rep {rep + 1}: "
                        f"{got[deadlines][-1]:,.0f} jobs/s")  # fmt: skip
            for deadlines in (False, True):
                rates = got[deadlines]
                name = "claim with deadlines" if deadlines else "plain claim"
                print(f"batch {batch:>3}  {name:<20}"
                      f"  median {statistics.median(rates):8,.0f} jobs/s"
                      f"  (runs {', '.join(f'{x:,.0f}' for x in rates)})", flush=True)  # fmt: skip
    finally:
        with psycopg.connect(ADMIN_DSN, autocommit=True) as c:
            c.execute(f'drop database if exists "{DB}" with (force)')


if __name__ == "__main__":
    main()
