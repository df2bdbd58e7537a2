"""Server-side limits as faults: what a DBA sets on the database, or a full server, met by a
running worker. Each time the worker logs what happened, keeps running and recovers; every
job completes, none is lost, and a transactional job's effect is kept once.

* ``statement_timeout``: a handler's statement cancelled by it (57014) fails that attempt,
  which is retried; the worker's own statements are unaffected.
* ``idle_in_transaction_session_timeout``: the worker's sessions turn it off (a transactional
  handler is idle in its claim's transaction while its Python code runs; killed there, the
  claim would roll back with the work and the job run again as often, no attempt counted):
  a handler idle past the database's timeout completes on its first attempt.
* ``max_connections`` reached: the worker's sessions terminated while the server is full
  reconnect when connections free up (``database_down``, then ``database_up``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
from conftest import wait_for

import andal
from andal.install import install
from reliability.soak import PrivateCluster


class Events(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.names: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.names.append(str(record.msg))


@pytest.fixture
def events() -> Iterator[Events]:
    logger, handler = logging.getLogger("andal"), Events()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def dbname(dsn: str) -> str:
    return dsn.rsplit("/", 1)[1]


def live(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as c:
        return int(c.execute("select count(*) from queue.jobs").fetchone()[0])


@pytest.fixture
def effects(dsn: str) -> Iterator[str]:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("create table if not exists effects (job_id bigint primary key)")
        c.execute("truncate effects, queue.jobs, queue.dead_letters")
        c.execute("select queue.configure_queue(queue => 'lim', backoff_base => '100ms',"
                  " lease => '2 seconds', max_attempts => 5)")  # fmt: skip
    yield dsn
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f'alter database "{dbname(dsn)}" reset all')


def registry(stall: str) -> andal.Registry:
    """A transactional handler of queue ``lim`` that, on a job's first attempt only, runs a
    long statement (``stall="statement"``) or sits idle in its transaction (``"idle"``)."""
    reg = andal.Registry()

    @reg.handler("lim", transactional=True)
    def work(job: andal.Job, conn: psycopg.Connection) -> None:
        if job.attempt == 1 and stall == "statement":
            conn.execute("select pg_sleep(1)")
        if job.attempt == 1 and stall == "idle":
            time.sleep(1.2)
        conn.execute("insert into effects (job_id) values (%s)", (job.id,))

    return reg


def drain(dsn: str, stall: str, n: int = 10) -> dict[str, int]:
    with psycopg.connect(dsn, autocommit=True) as c:
        ids = [andal.enqueue(c, {"n": i}, "lim") for i in range(n)]
    worker = andal.Worker(dsn, registry(stall), concurrency=4, poll=0.1, metrics=False)
    worker.start()
    try:
        wait_for(lambda: live(dsn) == 0, timeout=90, what="every job done")
        assert worker.join(0) is None, "the worker stopped"
    finally:
        worker.stop()
        assert worker.join(60) == 0
    with psycopg.connect(dsn, autocommit=True) as c:
        done = [r[0] for r in c.execute("select job_id from effects order by 1")]
        dead = c.execute("select count(*) from queue.dead_letters").fetchone()[0]
    assert done == sorted(ids) and dead == 0, "each job's effect once, none dead"
    return dict(worker.counts)


def test_a_statement_timeout_set_by_the_dba_fails_the_attempt_not_the_worker(
    effects: str, events: Events
) -> None:
    with psycopg.connect(effects, autocommit=True) as c:
        c.execute(f"alter database \"{dbname(effects)}\" set statement_timeout = '300ms'")
    counts = drain(effects, "statement")
    assert counts["retried"] >= 10, counts
    assert "database_down" not in events.names


def test_an_idle_in_transaction_timeout_does_not_end_a_transactional_handler(
    effects: str, events: Events
) -> None:
    setting = "idle_in_transaction_session_timeout = '400ms'"
    with psycopg.connect(effects, autocommit=True) as c:
        c.execute(f'alter database "{dbname(effects)}" set {setting}')
    counts = drain(effects, "idle")
    assert counts.get("retried", 0) == 0 and "database_down" not in events.names, counts


def test_max_connections_reached_the_worker_reconnects_when_they_free_up(
    events: Events,
) -> None:
    cluster = PrivateCluster("-c max_connections=20 -c superuser_reserved_connections=1")
    hogs: list[psycopg.Connection] = []
    try:
        cluster.init()
        dsn = cluster.start()
        install(dsn)
        with psycopg.connect(dsn, autocommit=True) as c:
            ids = [andal.enqueue(c, {}, "full") for _ in range(50)]
        seen: list[int] = []
        lock = threading.Lock()
        reg = andal.Registry()

        @reg.handler("full")
        def work(job: andal.Job) -> None:
            with lock:
                seen.append(job.id)

        worker = andal.Worker(dsn, reg, concurrency=2, poll=0.1, metrics=False, name="w-full")
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute("select queue.pause(queue => 'full')")
            worker.start()
            wait_for(lambda: admin.execute(
                "select count(*) from pg_stat_activity where application_name like 'andal w-full%'"
            ).fetchone()[0] >= 2, what="the worker's sessions")  # fmt: skip
            while True:  # take every connection left
                try:
                    hogs.append(psycopg.connect(dsn, autocommit=True, connect_timeout=3))
                except psycopg.OperationalError:
                    break
            admin.execute("select queue.resume(queue => 'full')")
            admin.execute(
                "select pg_terminate_backend(pid) from pg_stat_activity"
                " where application_name like 'andal w-full%'"
            )
        wait_for(lambda: "database_down" in events.names, timeout=30, what="database_down")
        for h in hogs:
            h.close()
        hogs.clear()
        wait_for(lambda: sorted(set(seen)) == sorted(ids), timeout=90, what="every job run")
        assert "database_up" in events.names
        worker.stop()
        assert worker.join(60) == 0
    finally:
        for h in hogs:
            h.close()
        cluster.destroy()
