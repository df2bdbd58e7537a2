"""What a worker logs at info: the transitions an operator acts on, not a line per job."""

from __future__ import annotations

import logging

import psycopg
from conftest import wait_for
from workers.inproc import running

import andal


def test_info_keeps_retries_and_dead_letters_and_drops_per_job_lines(
    dsn: str, conn, clean, caplog
) -> None:
    caplog.set_level(logging.INFO, logger="andal")
    reg = andal.Registry()

    @reg.handler("logs")
    def handler(job: andal.Job) -> None:
        kind = job.payload["kind"]
        if kind == "db":  # a psycopg error: its text carries CONTEXT lines after the cause
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("do $$ begin raise exception 'the real cause'; end $$")
        if kind == "fail":
            raise andal.Fail("hopeless")

    andal.enqueue_many(conn, [{"kind": "ok"}] * 20, "logs")
    db_job = andal.enqueue(conn, {"kind": "db"}, "logs")
    andal.enqueue(conn, {"kind": "fail"}, "logs")
    worker = andal.Worker(dsn, reg, concurrency=2, poll=0.2, metrics=False)
    with running(worker):
        wait_for(
            lambda: (
                worker.counts["completed"] == 20
                and worker.counts["retried"] == 1
                and worker.counts["dead"] == 1
            ),
            what="the outcomes",
        )
    names = [r.msg for r in caplog.records]
    assert "claimed" not in names and "completed" not in names
    assert "worker_started" in names and "worker_stopped" in names
    (retried,) = [r for r in caplog.records if r.msg == "retried"]
    assert retried.job_id == db_job
    assert retried.error == "psycopg.errors.RaiseException: the real cause"
    (dead,) = [r for r in caplog.records if r.msg == "dead"]
    assert dead.error == "hopeless" and dead.levelno == logging.WARNING
    # the stored error keeps the whole text, CONTEXT included
    stored = conn.execute(
        "select errors -> -1 ->> 'error' from queue.jobs where id = %s", (db_job,)
    ).fetchone()[0]
    assert "the real cause" in stored and "CONTEXT" in stored
