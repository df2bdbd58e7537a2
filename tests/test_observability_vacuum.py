"""Vacuum when the server's autovacuum is off: andal's changed tables are vacuumed by one
worker at a time, at most every maintain_every seconds; a role that may not vacuum gets one
warning, never an error."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from conftest import ROLES, test_name, wait_for
from workers.inproc import running

import andal
from andal.worker import VACUUM_LOCK_KEY, vacuum_tables


@pytest.fixture(scope="module", autouse=True)
def autovacuum_off(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        if c.execute("show autovacuum").fetchone()[0] != "off":
            pytest.skip("this server runs autovacuum: nothing for the workers to do")


def churn(dsn: str, n: int = 200) -> None:
    """Leave dead tuples in queue.jobs, on a connection closed at once (a session reports its
    table statistics when it ends)."""
    with psycopg.connect(dsn, autocommit=True) as c:
        ids = andal.enqueue_many(c, [{}] * n, "churn")
        c.execute("select queue.cancel(job_id => j) from unnest(%s::bigint[]) as j", (ids,))


#: The table itself, or its shards when it is partitioned (a sharded queue.jobs).
LEAVES = (
    "select s.* from pg_stat_user_tables as s"
    " where s.relid = %(t)s::regclass and not exists"
    " (select from pg_inherits as i where i.inhparent = %(t)s::regclass)"
    " or s.relid in (select i.inhrelid from pg_inherits as i where i.inhparent = %(t)s::regclass)"
)


def last_vacuum(conn: psycopg.Connection, table: str) -> object:
    """When the table (every shard of it) was last vacuumed."""
    return conn.execute(f"select min(last_vacuum) from ({LEAVES}) as l", {"t": table}).fetchone()[0]


def dead_tuples(conn: psycopg.Connection, table: str) -> int:
    return conn.execute(
        f"select coalesce(sum(n_dead_tup), 0) from ({LEAVES}) as l", {"t": table}
    ).fetchone()[0]


@pytest.fixture
def weak_role(dsn: str) -> Iterator[str]:
    """A DSN for a login role that may run a worker (andal_worker) but owns nothing."""
    role = test_name("weak")
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f"create role {role} login in role {ROLES['worker']}")
    parts = urlsplit(dsn)
    netloc = parts.netloc.replace(parts.username or "", role, 1)
    try:
        yield urlunsplit(parts._replace(netloc=netloc))
    finally:
        with psycopg.connect(dsn, autocommit=True) as c:
            dbname = parts.path.lstrip("/")
            c.execute(
                "select pg_terminate_backend(pid) from pg_stat_activity"
                " where usename = %s and datname = %s",
                (role, dbname),
            )
            c.execute(f"drop owned by {role}")
            c.execute(f"drop role {role}")


def test_vacuum_tables(dsn: str, conn: psycopg.Connection, clean: None) -> None:
    churn(dsn)
    wait_for(lambda: dead_tuples(conn, "queue.jobs") > 0, timeout=15, what="dead tuples")
    with psycopg.connect(dsn) as c, pytest.raises(ValueError, match="autocommit"):
        vacuum_tables(c, 0)

    # another session holds the lock: nothing is done
    with (
        psycopg.connect(dsn, autocommit=True) as other,
        psycopg.connect(dsn, autocommit=True) as mine,
    ):
        assert other.execute("select pg_try_advisory_lock(%s)", (VACUUM_LOCK_KEY,)).fetchone()[0]
        assert vacuum_tables(mine, 0).reason == "locked"
        other.execute("select pg_advisory_unlock(%s)", (VACUUM_LOCK_KEY,))

        report = vacuum_tables(mine, 0)
        assert report.reason == "vacuumed"
        assert "queue.jobs" in report.vacuumed and not report.denied
        assert report.dead_tuples["queue.jobs"] > 0
        assert last_vacuum(conn, "queue.jobs") is not None
        # the lock is released: another session can take it
        assert other.execute("select pg_try_advisory_lock(%s)", (VACUUM_LOCK_KEY,)).fetchone()[0]
        other.execute("select pg_advisory_unlock(%s)", (VACUUM_LOCK_KEY,))

        # vacuumed a moment ago: not due again within `every`
        churn(dsn, 20)
        wait_for(lambda: dead_tuples(conn, "queue.jobs") > 0, timeout=15, what="dead tuples")
        again = vacuum_tables(mine, 3600)
        assert "queue.jobs" not in again.vacuumed


def test_vacuum_denied(dsn: str, conn: psycopg.Connection, clean: None, weak_role: str) -> None:
    churn(dsn)
    wait_for(lambda: dead_tuples(conn, "queue.jobs") > 0, timeout=15, what="dead tuples")
    with psycopg.connect(weak_role, autocommit=True) as c:
        report = vacuum_tables(c, 0)
    assert report.reason == "denied" and not report.vacuumed
    assert "queue.jobs" in report.denied
    assert report.role == urlsplit(weak_role).username


def test_worker_vacuums(dsn: str, conn: psycopg.Connection, clean: None, caplog) -> None:
    caplog.set_level(logging.INFO, logger="andal")
    churn(dsn)
    wait_for(lambda: dead_tuples(conn, "queue.jobs") > 0, timeout=15, what="dead tuples")
    before = last_vacuum(conn, "queue.jobs")
    worker = andal.Worker(
        dsn, {"churn": lambda job: None}, poll=0.2, maintain_every=0.3, metrics=True,
        tracing=False,
    )  # fmt: skip

    def vacuumed() -> list:
        return [r for r in caplog.records if r.msg == "vacuumed" and "queue.jobs" in r.tables]

    with running(worker):
        wait_for(vacuumed, timeout=20, what="a vacuum of queue.jobs")
        assert worker.metrics is not None
        assert 'andal_worker_vacuums_total{table="queue.jobs"}' in worker.metrics.text()
    record = vacuumed()[0]
    assert record.levelno == logging.INFO and record.worker == worker.name
    assert record.dead_tuples["queue.jobs"] > 0
    assert last_vacuum(conn, "queue.jobs") != before


def test_worker_warns_once_when_denied(
    dsn: str, conn: psycopg.Connection, clean: None, weak_role: str, caplog
) -> None:
    caplog.set_level(logging.DEBUG, logger="andal")
    churn(dsn)
    wait_for(lambda: dead_tuples(conn, "queue.jobs") > 0, timeout=15, what="dead tuples")
    worker = andal.Worker(
        weak_role, {"churn": lambda job: None}, poll=0.2, maintain_every=0.2, tracing=False
    )

    def skipped() -> int:
        return sum(1 for r in caplog.records if r.msg == "vacuum_skipped" and r.reason == "denied")

    with running(worker):
        wait_for(lambda: skipped() >= 3, timeout=20, what="three denied vacuum rounds")
    warnings = [r for r in caplog.records if r.msg == "vacuum_denied"]
    assert len(warnings) == 1
    assert warnings[0].levelno == logging.WARNING
    assert "queue.jobs" in warnings[0].tables
    assert not [r for r in caplog.records if r.msg in ("vacuum_failed", "internal_error")]


def test_vacuum_due_is_the_rule_in_sql(
    dsn: str, conn: psycopg.Connection, clean: None, weak_role: str
) -> None:
    """queue.vacuum_due lists a changed table once (its shards counted as the table), says
    whether the caller may vacuum it, and leaves out one vacuumed within `every`."""
    churn(dsn)
    wait_for(lambda: dead_tuples(conn, "queue.jobs") > 0, timeout=15, what="dead tuples")
    due = "select table_name, dead, allowed from queue.vacuum_due(every => %s::interval)"
    rows = {r[0]: r[1:] for r in conn.execute(due, ("0",)).fetchall()}
    assert rows["jobs"][0] >= dead_tuples(conn, "queue.jobs") > 0 and rows["jobs"][1]
    assert not [t for t in rows if t.startswith("jobs_p")], "a shard counts as its table"
    with psycopg.connect(weak_role, autocommit=True) as c:
        weak = {r[0]: r[2] for r in c.execute(due, ("0",)).fetchall()}
    assert weak["jobs"] is False, "a role that owns nothing may not vacuum it"
    conn.execute("vacuum queue.jobs")
    wait_for(lambda: last_vacuum(conn, "queue.jobs") is not None, timeout=15, what="the stats")
    assert "jobs" not in {r[0] for r in conn.execute(due, ("1 hour",)).fetchall()}
