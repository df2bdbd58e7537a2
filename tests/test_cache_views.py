"""Materialized views as a precomputed cache: refreshes are queue work run
by a real andal.Worker, readers are never blocked by a refresh, and tracking a source table
adds nothing to its writes (no trigger runs on them): row changes are counted by
PostgreSQL's statistics, which reach a view's count once the writer's transaction ended."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
from conftest import wait_for

from andal import Registry, Worker
from andal.cache import REFRESH_QUEUE, register_refresh


@pytest.fixture
def db(dsn: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(dsn, autocommit=True) as c:
        yield c


def make_view(db: psycopg.Connection, name: str, max_lag: str, max_changes: int) -> None:
    db.execute(f"create table {name}_src (id bigserial primary key, k int not null, v int)")
    db.execute(
        f"create materialized view {name} as"
        f" select k, count(*) as n, sum(v) as total from {name}_src group by k"
    )
    db.execute(f"create unique index on {name} (k)")
    db.execute(
        "select cache.register_view(view => %s::regclass, max_lag => %s::interval,"
        " max_changes => %s)",
        (name, max_lag, max_changes),
    )
    db.execute(
        "select cache.track(view => %s::regclass, source => %s::regclass)", (name, f"{name}_src")
    )


def changes(db: psycopg.Connection, view: str) -> int:
    """The view's change count (row changes from the statistics, plus TRUNCATEs)."""
    db.execute("select pg_stat_force_next_flush()")  # this session's counts, at its next idle
    return db.execute("select cache._view_changes(%s::regclass)", (view,)).fetchone()[0]


def wait_changes(db: psycopg.Connection, view: str, n: int) -> None:
    """Wait until the statistics have counted n changes (a writer's counts reach them once
    its transaction ended and it flushed them, within about a second)."""
    wait_for(lambda: changes(db, view) == n, timeout=30, what=f"{n} changes of {view}")


def test_refresh_is_queue_work_run_by_a_worker(dsn: str, db: psycopg.Connection) -> None:
    """Small updates do not refresh; a batch of changes (or the lag) does, through one
    deduplicated job on andal.refresh that a worker runs with REFRESH ... CONCURRENTLY."""
    make_view(db, "sales", "1 hour", 5)
    for i in range(4):
        db.execute("insert into sales_src (k, v) values (1, %s)", (i,))
    wait_changes(db, "sales", 4)
    assert db.execute("select * from cache.refresh_due()").fetchall() == []
    db.execute("insert into sales_src (k, v) values (2, 10)")
    wait_changes(db, "sales", 5)
    due = db.execute("select view::text, job_id, pending from cache.refresh_due()").fetchall()
    assert [(v, p) for v, _, p in due] == [("sales", 5)]
    job = db.execute(
        "select payload, category, dedup_key from queue.jobs where id = %s", (due[0][1],)
    ).fetchone()
    assert job == ({"view": "public.sales"}, "refresh:public.sales", "public.sales")
    assert db.execute("select * from cache.refresh_due()").fetchone()[1] == due[0][1], "dedup"

    registry = Registry()
    register_refresh(registry)
    worker = Worker(dsn, registry, concurrency=2, poll=0.2, name="refresher").start()
    try:
        wait_for(
            lambda: db.execute("select count(*) from sales").fetchone()[0] == 2,
            timeout=20,
            what="the worker to refresh the view",
        )
        wait_for(
            lambda: (
                db.execute(
                    "select count(*) from queue.jobs where queue = %s", (REFRESH_QUEUE,)
                ).fetchone()[0]
                == 0
            ),
            timeout=20,
        )
        assert db.execute("select n, total from sales where k = 1").fetchone() == (4, 6)
        assert db.execute("select refreshes from cache.views").fetchone()[0] == 1
        assert db.execute("select * from cache.refresh_due()").fetchall() == []

        # The lag rule: one change, and the view's data is older than max_lag.
        db.execute("insert into sales_src (k, v) values (3, 1)")
        wait_changes(db, "sales", 6)
        assert db.execute("select * from cache.refresh_due()").fetchall() == []
        db.execute("update cache.views set refreshed_at = now() - interval '2 hours'")
        assert len(db.execute("select * from cache.refresh_due()").fetchall()) == 1
        wait_for(
            lambda: db.execute("select count(*) from sales").fetchone()[0] == 3,
            timeout=20,
            what="the lagging view to be refreshed",
        )
        wait_for(
            lambda: (
                db.execute(
                    "select count(*) from queue.jobs where queue = %s", (REFRESH_QUEUE,)
                ).fetchone()[0]
                == 0
            ),
            timeout=20,
            what="the refresh job to complete",
        )
    finally:
        worker.stop()
        worker.join(30)


def test_readers_and_writers_are_not_blocked_by_a_refresh(dsn: str, db: psycopg.Connection) -> None:
    """While a refresh job holds its transaction open (its locks are held until
    commit), readers of the view and writers of its source go on; a second refresh of the
    same view is held back by the category gate. A plain REFRESH would block the readers:
    checked too, so the test is not vacuous."""
    make_view(db, "stock", "1 hour", 1)
    db.execute("insert into stock_src (k, v) select g % 10, g from generate_series(1, 1000) g")
    wait_changes(db, "stock", 1000)
    job_id = db.execute("select job_id from cache.refresh_due()").fetchone()[0]
    with psycopg.connect(dsn) as refresher, psycopg.connect(dsn, autocommit=True) as other:
        claimed = refresher.execute(
            "select job_id, payload from queue.claim(worker => 'r1', queues => %s)",
            ([REFRESH_QUEUE],),
        ).fetchone()
        assert claimed[0] == job_id
        refresher.execute("select cache.refresh_view(view => %s::regclass)", (claimed[1]["view"],))
        # The refresh is done but not committed: its locks are held.
        other.execute("set lock_timeout = '1s'")
        t0 = time.monotonic()
        assert other.execute("select count(*) from stock").fetchone()[0] == 0  # old data
        other.execute("insert into stock_src (k, v) values (1, 1)")
        assert time.monotonic() - t0 < 1.0
        db.execute(
            'select queue.enqueue(payload => \'{"view": "public.stock"}\', queue => %s,'
            " category => 'refresh:public.stock')",
            (REFRESH_QUEUE,),
        )
        second = other.execute(
            "select payload from queue.claim(worker => 'r2', queues => %s)", ([REFRESH_QUEUE],)
        ).fetchall()
        assert second == [], "one refresh of a view at a time"
        refresher.commit()
        assert other.execute("select count(*) from stock").fetchone()[0] == 10

        # Control: a non-concurrent refresh would have blocked the reader.
        refresher.execute("refresh materialized view stock")
        with pytest.raises(psycopg.errors.LockNotAvailable):
            other.execute("select count(*) from stock")
        refresher.rollback()


WRITERS = 8


def _write_concurrently(dsn: str, table: str, rows_each: int) -> None:
    """WRITERS concurrent sessions, each inserting ``rows_each`` single-row autocommit rows."""
    conns = [psycopg.connect(dsn, autocommit=True) for _ in range(WRITERS)]
    start = threading.Barrier(WRITERS)
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            start.wait()
            for _ in range(rows_each):
                conns[i].execute(f"insert into {table} (k, v) values (%s, 1)", (i,))
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in conns:
        c.close()
    assert not errors, errors


def test_tracking_adds_nothing_to_eight_writers(dsn: str, db: psycopg.Connection) -> None:
    """Nothing of andal's runs on a tracked table's INSERT, UPDATE or DELETE (only a
    statement-level trigger on TRUNCATE, which the statistics do not count), so its writers
    pay nothing; 8 concurrent writers' rows are all counted all the same. The throughput
    figure is a benchmark's (docs/cache.md), not a test's."""
    make_view(db, "tracked", "1 hour", 1_000_000)
    triggers = db.execute(
        "select tgname, (tgtype & 1) <> 0 as per_row, (tgtype & 32) <> 0 as on_truncate"
        " from pg_trigger where tgrelid = 'tracked_src'::regclass and not tgisinternal"
    ).fetchall()
    assert triggers and all(not per_row and on_truncate for _, per_row, on_truncate in triggers)
    _write_concurrently(dsn, "tracked_src", 200)
    written = db.execute("select count(*) from tracked_src").fetchone()[0]
    assert written == WRITERS * 200
    wait_changes(db, "tracked", written)


def test_partitioned_source_and_truncate_are_counted(dsn: str, db: psycopg.Connection) -> None:
    """Rows written through a partitioned table are counted in its partitions; a TRUNCATE
    (which the statistics do not count) is counted by the tracking trigger."""
    db.execute("create table events (id int not null, k int) partition by range (id)")
    db.execute("create table events_a partition of events for values from (0) to (100)")
    db.execute("create table events_b partition of events for values from (100) to (200)")
    db.execute(
        "create materialized view events_by_k as select k, count(*) as n from events group by k"
    )
    db.execute("create unique index on events_by_k (k)")
    db.execute("select cache.register_view('events_by_k', '1 hour', 1000)")
    db.execute("select cache.track('events_by_k', 'events')")
    db.execute("insert into events select g, g % 3 from generate_series(1, 150) g")
    db.execute("update events set k = 7 where id = 5")
    wait_changes(db, "events_by_k", 151)
    db.execute("truncate events")
    assert changes(db, "events_by_k") == 152
