"""Diagnostic: do concurrent claims come back short while ready jobs are left?

``python -m bench.short_claims [--batch 100] [--clients 4] [--trials 30]``: each trial loads
exactly clients x batch ready jobs, then the clients claim ``batch`` each at the same moment.
Every job is claimable by someone, so each claim should return ``batch`` rows; a short claim
means a claimer skipped rows it could have taken. Raw SKIP LOCKED and ``queue.claim`` side by
side, in their own fresh databases (dropped at the end).
"""

from __future__ import annotations

import argparse
import threading

import psycopg

from . import systems
from .common import RUN_ID, drop_db, fresh_db

ANDAL_CLAIM = (
    "select c.job_id from queue.claim(worker => 'x', queues => %(queues)s::text[],"
    " batch => %(batch)s::int) as c"
)


def trial_counts(system: str, dsn: str, batch: int, clients: int, trials: int) -> list[list[int]]:
    short = []
    for _ in range(trials):
        systems.reset(system, dsn)
        systems.load(system, dsn, batch * clients)
        barrier = threading.Barrier(clients)
        got: list[int] = []

        def claim(barrier: threading.Barrier = barrier, got: list[int] = got) -> None:
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("select 1")
                barrier.wait()
                if system == "raw":
                    rows = c.execute(
                        systems.RAW_CLAIM_PY, {"batch": batch, "worker": "x"}
                    ).fetchall()
                else:
                    rows = c.execute(
                        ANDAL_CLAIM, {"queues": [systems.QUEUE], "batch": batch}
                    ).fetchall()
                got.append(len(rows))

        threads = [threading.Thread(target=claim) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if sum(got) != batch * clients:
            short.append(sorted(got))
    return short


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.short_claims", description=__doc__)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--trials", type=int, default=30)
    a = p.parse_args(argv)
    found = 0
    for system in ("raw", "andal"):
        name = f"andal_bench_short_{system}_{RUN_ID}"
        dsn = fresh_db(name)
        try:
            systems.setup(system, dsn)
            short = trial_counts(system, dsn, a.batch, a.clients, a.trials)
        finally:
            drop_db(name)
        found += len(short) if system == "andal" else 0
        print(
            f"{system}: {len(short)}/{a.trials} trials with a short claim"
            + (f", e.g. {short[:5]}" if short else "")
        )
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
