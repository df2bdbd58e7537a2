"""The driver's work per job: one ``andal.Worker`` in this process drains preloaded no-op jobs
(W1's queue and payloads); prints jobs/s, the process's CPU per job (``getrusage``) and the
CPU per job of the worker's server backends (``/proc/<pid>/stat``, so the server must run on
this machine). Work per job moves much less than throughput on a shared machine: compare two
trees by alternating runs, each with ``PYTHONPATH=<tree>/pydriver``.

    python -m bench.driver_cpu DSN [--jobs 2000] [--batch 1] [--async] [--install]

DSN: a database of its own (its andal jobs are deleted first); ``--install`` installs andal
there first. Concurrency is the batch, as in W1.
"""

from __future__ import annotations

import argparse
import os
import resource
import threading
import time
from typing import Any

import psycopg

from . import systems

_HZ = os.sysconf("SC_CLK_TCK")


def _backend_ticks(dsn: str) -> int:
    """CPU ticks so far of the worker's backends (application_name ``andal ...``)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        pids = [
            r[0]
            for r in conn.execute(
                "select pid from pg_stat_activity where datname = current_database()"
                " and application_name like 'andal %'"
            )
        ]
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total


def drain(dsn: str, n: int, batch: int, use_async: bool) -> dict[str, float]:
    import andal

    systems.reset("andal", dsn)
    systems.load("andal", dsn, n)
    done, all_done = [0], threading.Event()

    def noop(job: Any) -> None:
        done[0] += 1
        if done[0] >= n:
            all_done.set()

    async def anoop(job: Any) -> None:
        noop(job)

    worker = andal.Worker(
        dsn, {systems.QUEUE: anoop if use_async else noop}, concurrency=batch, batch=batch
    )
    worker.start()
    while done[0] == 0:
        time.sleep(0.001)
    first, server0 = done[0], _backend_ticks(dsn)
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    all_done.wait(600)
    r1, wall = resource.getrusage(resource.RUSAGE_SELF), time.monotonic() - t0
    server = (_backend_ticks(dsn) - server0) / _HZ
    worker.stop()
    worker.join(30)
    jobs = n - first
    client = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {
        "jobs_per_s": jobs / wall,
        "client_us_per_job": client * 1e6 / jobs,
        "server_us_per_job": server * 1e6 / jobs,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.driver_cpu", description=__doc__)
    p.add_argument("dsn")
    p.add_argument("--jobs", type=int, default=2000)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--async", dest="use_async", action="store_true", help="async def handler")
    p.add_argument("--install", action="store_true", help="install andal in DSN first")
    args = p.parse_args(argv)
    if args.install:
        systems.setup("andal", args.dsn)
    out = drain(args.dsn, args.jobs, args.batch, args.use_async)
    print(
        f"batch={args.batch} async={args.use_async} jobs/s={out['jobs_per_s']:,.0f}"
        f" client_us/job={out['client_us_per_job']:.0f}"
        f" server_us/job={out['server_us_per_job']:.0f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
