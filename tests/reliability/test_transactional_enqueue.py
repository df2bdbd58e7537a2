"""1. Transactional enqueue: 2,000 enqueues by 4 producer sessions, each in a transaction
with the application's own write; half of them roll back. Two worker processes (the driver's
CLI) run the queue meanwhile. Exactly the committed jobs run, once each; a rolled-back enqueue
is never seen by a worker, and its application row does not exist either.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path

import psycopg
from conftest import wait_for

from reliability import history, procs

JOBS = 2000
PRODUCERS = 4


def test_transactional_enqueue_runs_exactly_the_committed_jobs(
    rel_dsn: str, rconn: psycopg.Connection, tmp_path: Path, figures: dict
) -> None:
    for queue in ("rel", "rel_tx"):
        rconn.execute("select queue.configure_queue(%s, keep_results => true)", (queue,))
    rconn.execute("create table if not exists public.rel_orders (n int primary key, job_id bigint)")
    rconn.execute("truncate public.rel_orders")
    keep = [True] * (JOBS // 2) + [False] * (JOBS // 2)
    random.Random(1).shuffle(keep)
    committed: dict[int, int] = {}  # n -> job id
    rolled_back: dict[int, int] = {}
    lock = threading.Lock()
    errors: list[BaseException] = []

    def produce(k: int) -> None:
        rng = random.Random(k)
        try:
            with psycopg.connect(rel_dsn, autocommit=True) as c:
                for n in range(k, JOBS, PRODUCERS):
                    queue = "rel" if n % 2 else "rel_tx"
                    with c.transaction():
                        job_id = history.enqueue(c, {"n": n, "ms": 1}, queue)
                        c.execute(
                            "insert into public.rel_orders (n, job_id) values (%s, %s)",
                            (n, job_id),
                        )
                        if rng.random() < 0.2:  # keep some transactions open a while
                            c.execute("select pg_sleep(0.01)")
                        if not keep[n]:
                            raise psycopg.Rollback()  # ends the block, rolled back
                    with lock:
                        (committed if keep[n] else rolled_back)[n] = job_id
        except BaseException as exc:
            errors.append(exc)

    pool = procs.Pool(rel_dsn, tmp_path, 2, "--concurrency", "4", "--poll", "0.2")
    try:
        producers = [threading.Thread(target=produce, args=(k,)) for k in range(PRODUCERS)]
        for t in producers:
            t.start()
        for t in producers:
            t.join(120)
        assert not errors, errors
        wait_for(
            lambda: rconn.execute("select count(*) = 0 from queue.jobs").fetchone()[0],
            timeout=120,
            interval=0.2,
            what="the committed jobs to drain",
        )
    finally:
        codes = pool.stop()
    assert codes == [0, 0], pool.logs()

    assert len(committed) == len(rolled_back) == JOBS // 2
    good, bad = set(committed.values()), set(rolled_back.values())
    recorded = {r[0] for r in rconn.execute("select job_id from andal_check.enqueued")}
    ran = rconn.execute(
        "select job_id, count(*) from andal_check.attempts group by job_id"
    ).fetchall()
    orders = {r[0] for r in rconn.execute("select job_id from public.rel_orders")}
    assert recorded == good == orders
    assert {j for j, _ in ran} == good, "exactly the committed jobs ran"
    assert all(n == 1 for _, n in ran), "each once"
    touched = rconn.execute(
        "select count(*) from (select job_id from andal_check.attempt_log"
        " union all select job_id from queue.results"
        " union all select job_id from andal_check.effects"
        " union all select job_id from queue.dead_letters union all select id from queue.jobs) as t"
        " where t.job_id = any(%s)",
        (list(bad),),
    ).fetchone()[0]
    assert touched == 0, "a rolled-back enqueue left a trace"
    counts = history.assert_clean(rconn)
    figures.update(committed=len(good), rolled_back=len(bad), ran=len(ran), checker=str(counts))
