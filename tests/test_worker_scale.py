"""Four worker processes drain 20,000 jobs (half leased, half transactional): each job is
completed exactly once.

``ANDAL_SCALE_JOBS`` changes the number of jobs (default 20,000).
"""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
from conftest import wait_for
from workers.procs import spawn_worker, stop_worker
from workers.recording import make_tables

import andal

JOBS = int(os.environ.get("ANDAL_SCALE_JOBS", "20000"))
HALF = JOBS // 2


def test_four_processes_each_job_exactly_once(
    dsn: str, conn: psycopg.Connection, clean: None, tmp_path: Path
) -> None:
    make_tables(conn)
    for start in range(0, HALF, 5000):
        payloads = [{"n": i} for i in range(start, min(start + 5000, HALF))]
        andal.enqueue_many(conn, payloads, "leased")
        andal.enqueue_many(conn, payloads, "tx")
    procs = [
        spawn_worker(dsn, tmp_path / f"w{i}.log", "--concurrency", "4", "--log-level", "warning")
        for i in range(4)
    ]
    try:
        wait_for(
            lambda: conn.execute("select count(*) = 0 from queue.jobs").fetchone()[0],
            timeout=180,
            interval=0.2,
            what="the queue to drain",
        )
    finally:
        codes = [stop_worker(p) for p in procs]
    assert codes == [0, 0, 0, 0], [(tmp_path / f"w{i}.log").read_text()[-2000:] for i in range(4)]
    runs, distinct, pids = conn.execute(
        "select count(*), count(distinct job_id), count(distinct pid) from runs"
    ).fetchone()
    assert (runs, distinct) == (HALF, HALF)
    assert pids == 4  # every process took part
    done, tx_pids = conn.execute("select count(*), count(distinct pid) from done").fetchone()
    assert done == HALF
    assert tx_pids == 4
    assert conn.execute("select count(*) from queue.dead_letters").fetchone()[0] == 0
