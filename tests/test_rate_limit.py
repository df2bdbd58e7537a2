"""Rate limits for real: 4 worker processes (plain psycopg loops) drain 600 jobs of a
category limited to 20 starts per second. The start times, recorded by the handlers from
the database (each job's claim time), never show more than 20 in any one-second window,
and the drain takes about 30 s, not much longer. Refusals show in queue.stats()."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator

import psycopg
import pytest
from conftest import wait_for

#: One worker: claim, record the job's start (its claim time) and complete, in one
#: transaction per job.
WORKER = r"""
import sys, time, psycopg
dsn, name = sys.argv[1], sys.argv[2]
with psycopg.connect(dsn, autocommit=True) as c:
    while True:
        rows = c.execute(
            "select job_id, token from queue.claim(worker => %s, queues => '{rl}', batch => 5)",
            (name,)).fetchall()
        for job_id, token in rows:
            with c.transaction():
                c.execute("insert into starts (job_id, started_at)"
                          " select j.id, j.claimed_at from queue.jobs as j where j.id = %s",
                          (job_id,))
                c.execute("select queue.complete(%s, %s)", (job_id, token))
        if not rows:
            time.sleep(0.02)
"""


@pytest.fixture
def db(dsn: str, clean: None) -> Iterator[psycopg.Connection]:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("drop table if exists starts")
        c.execute("create table starts (job_id bigint primary key, started_at timestamptz)")
        yield c
        c.execute("drop table if exists starts")


def test_rate_limit_holds_across_workers(dsn: str, db: psycopg.Connection) -> None:
    c = db
    c.execute("select queue.set_category_limit('api', 100)")
    c.execute("select queue.set_rate_limit(category => 'api', starts => 20, per => '1 second')")
    c.execute(
        "select count(*) from queue.enqueue_many("
        " array(select '{}'::jsonb from generate_series(1, 600)), queue => 'rl', category => 'api')"
    )
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, dsn, f"w{i}"]) for i in range(4)]
    try:
        wait_for(
            lambda: c.execute("select count(*) from starts").fetchone()[0] == 600,
            timeout=120,
            what="600 jobs drained",
        )
    finally:
        for p in procs:
            p.send_signal(signal.SIGKILL)
        for p in procs:
            p.wait(timeout=30)
    worst = c.execute(
        "select max((select count(*) from starts as t where t.started_at >= s.started_at"
        " and t.started_at < s.started_at + interval '1 second')) from starts as s"
    ).fetchone()[0]
    assert worst <= 20, f"{worst} starts in one second"
    span = c.execute("select extract(epoch from max(started_at) - min(started_at)) from starts")
    seconds = float(span.fetchone()[0])
    # 600 starts at 20 per second: the last one at least 29 s after the first (how much later
    # depends on the machine's load, so no upper bound here: wait_for's deadline is the bound)
    assert seconds >= 29.0, f"the drain took {seconds:.1f} s"
    refusals = c.execute(
        "select rate_refusals from queue.stats() where queue = 'rl' and category = 'api'"
    ).fetchone()[0]
    assert refusals > 0, "claims held back by the limit are counted"
