"""Threats from roles with fewer rights than andal's: what a role without grants, a worker or
an admin without rights on a relation must not be able to do (docs/reliability.md, threat
model). Each test is the regression test of a defect an audit found.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from conftest import ROLES, TEST_PREFIX
from psycopg.conninfo import make_conninfo

from andal.install import install

SUFFIX = uuid.uuid4().hex[:8]
STRANGER = f"{TEST_PREFIX}_t_stranger_{SUFFIX}"
WORKER = f"{TEST_PREFIX}_t_worker_{SUFFIX}"
PRODUCER = f"{TEST_PREFIX}_t_producer_{SUFFIX}"
ADMIN = f"{TEST_PREFIX}_t_admin_{SUFFIX}"


@pytest.fixture(scope="module")
def roles(dsn: str) -> Iterator[None]:
    """LOGIN roles: one without any grant, one member of each andal role (cluster-wide, so
    uniquely named and dropped afterwards)."""
    with psycopg.connect(dsn, autocommit=True) as c:
        for name, member_of in [
            (STRANGER, None),
            (WORKER, ROLES["worker"]),
            (PRODUCER, ROLES["producer"]),
            (ADMIN, ROLES["admin"]),
        ]:
            c.execute(f'create role "{name}" login')
            if member_of:
                c.execute(f'grant {member_of} to "{name}"')
    try:
        yield
    finally:
        with psycopg.connect(dsn, autocommit=True) as c:
            for name in [STRANGER, WORKER, PRODUCER, ADMIN]:
                c.execute(f'drop owned by "{name}"')
                c.execute(f'drop role if exists "{name}"')


def connect_as(dsn: str, role: str, autocommit: bool = True) -> psycopg.Connection:
    return psycopg.connect(make_conninfo(dsn, user=role), autocommit=autocommit)


def sqlstate_of(conn: psycopg.Connection, statement: str, *args: object) -> str | None:
    """The SQLSTATE `statement` raises, or None when it succeeds."""
    try:
        conn.execute(statement, args or None)
    except psycopg.Error as exc:
        return exc.diag.sqlstate
    return None


# --- the category gate ----------------------------------------------------------------------


def test_a_stranger_cannot_stall_a_gated_category(
    dsn: str, roles: None, clean: None, conn: psycopg.Connection
) -> None:
    """A role without any andal grant holds every advisory key the gate could have used (the
    old key of the category, and the whole range of andal's old prefix it can reach) and
    tries to lock the category's row: the claim still takes the job, and no try-lock of it
    failed."""
    conn.execute("select queue.set_category_limit(category => 'c', max_running => 1)")
    job = conn.execute(
        "select queue.enqueue(payload => '{}', queue => 'g', category => 'c')"
    ).fetchone()[0]
    cat_id = conn.execute("select id from queue.categories where category = 'c'").fetchone()[0]
    with connect_as(dsn, STRANGER, autocommit=False) as stranger:
        stranger.execute(
            "select pg_advisory_lock((x'616e64'::bigint << 40) | k)"
            " from generate_series(1, %s) as k",
            (cat_id + 10,),
        )
        stranger.execute("select pg_advisory_xact_lock(%s)", (cat_id,))
        assert (
            sqlstate_of(stranger, "select 1 from queue.categories where id = %s for update", cat_id)
            == "42501"
        )
        stranger.rollback()
        stranger.execute("select pg_advisory_lock((x'616e64'::bigint << 40) | %s)", (cat_id,))
        with connect_as(dsn, WORKER) as worker:
            pid = worker.execute("select pg_backend_pid()").fetchone()[0]
            rows = worker.execute(
                "select job_id from queue.claim(worker => 'w', queues => '{g}')"
            ).fetchall()
            failures = conn.execute(
                "select coalesce(sum(failures), 0) from queue.lock_stats where backend = %s",
                (pid,),
            ).fetchone()[0]
    assert rows == [(job,)], "the stranger's advisory locks stalled the category"
    assert failures == 0


# --- refresh jobs ---------------------------------------------------------------------------


def test_a_worker_puts_refresh_jobs_only_into_refresh_queues(
    dsn: str, roles: None, clean: None, conn: psycopg.Connection
) -> None:
    """A worker may not enqueue: cache.get and cache.get_many with a refresh_queue not listed
    in cache.config.refresh_queues are refused (42501) and enqueue nothing; a listed queue
    gets its refresh job; a producer's right to enqueue covers any queue."""
    conn.execute("update cache.config set refresh_queues = '{refill}'")
    try:
        with connect_as(dsn, WORKER) as worker:
            assert sqlstate_of(worker, "select cache.get('k', refresh_queue => 'mail')") == "42501"
            assert (
                sqlstate_of(
                    worker,
                    "select cache.get_many(array(select 'k' || g"
                    " from generate_series(1, 100) as g), refresh_queue => 'payments')",
                )
                == "42501"
            )
            assert sqlstate_of(worker, "select cache.get('k', refresh_queue => 'refill')") is None
        with connect_as(dsn, ADMIN) as admin:
            assert sqlstate_of(admin, "select cache.get('k2', refresh_queue => 'other')") is None
        queues = conn.execute(
            "select queue, count(*) from queue.jobs group by queue order by queue"
        ).fetchall()
    finally:
        conn.execute("update cache.config set refresh_queues = '{}'")
    assert queues == [("other", 1), ("refill", 1)]


# --- views and tracking act with the caller's rights ------------------------------------------


def test_an_admin_registers_and_tracks_only_what_it_may_touch(
    dsn: str, roles: None, clean: None, conn: psycopg.Connection
) -> None:
    """An admin without rights on a table and a materialized view (owned by another role)
    can neither register the view (refreshing it is its owner's right) nor track the table
    (a trigger needs the TRIGGER privilege): 42501, and no trigger appears. Granted the
    privilege, tracking works."""
    conn.execute("create schema if not exists foreign_app")
    conn.execute("create table foreign_app.t (id int primary key)")
    conn.execute("create materialized view foreign_app.mv as select id from foreign_app.t")
    conn.execute("create unique index on foreign_app.mv (id)")
    conn.execute("create materialized view foreign_app.mine as select 1 as id")
    conn.execute("create unique index on foreign_app.mine (id)")
    conn.execute(f'grant usage on schema foreign_app to "{ADMIN}"')
    conn.execute(f'alter materialized view foreign_app.mine owner to "{ADMIN}"')
    try:
        with connect_as(dsn, ADMIN) as admin:
            assert (
                sqlstate_of(admin, "select cache.register_view('foreign_app.mv', '1 minute', 10)")
                == "42501"
            )
            admin.execute("select cache.register_view('foreign_app.mine', '1 minute', 10)")
            assert (
                sqlstate_of(admin, "select cache.track('foreign_app.mine', 'foreign_app.t')")
                == "42501"
            )
            triggers = conn.execute(
                "select count(*) from pg_trigger where tgrelid = 'foreign_app.t'::regclass"
            ).fetchone()[0]
            assert triggers == 0
            conn.execute(f'grant trigger on foreign_app.t to "{ADMIN}"')
            admin.execute("select cache.track('foreign_app.mine', 'foreign_app.t')")
            admin.execute("select cache.unregister_view('foreign_app.mine')")
        assert conn.execute("select count(*) from cache.views").fetchone()[0] == 0
    finally:
        conn.execute("drop schema foreign_app cascade")


# --- many names -----------------------------------------------------------------------------


def test_stats_stay_linear_in_the_number_of_queues(conn: psycopg.Connection, clean: None) -> None:
    """One producer statement can make thousands of queues and categories. queue.stats() and
    queue.metrics() were quadratic in them (a subquery per queue over all rows: 20,000
    queues took minutes); linear, they take about a second here. The 60 s timeout is a
    guard with a wide margin, not a benchmark."""
    conn.execute(
        "select count(queue.enqueue(payload => '{}', queue => 'many' || g,"
        " category => case when g % 2 = 0 then 'many' || g end))"
        " from generate_series(1, 20000) as g"
    )
    conn.execute("set statement_timeout = '60s'")
    try:
        assert conn.execute("select count(*) from queue.stats()").fetchone()[0] == 30000
        assert "many19999" in conn.execute("select queue.metrics()").fetchone()[0]
    finally:
        conn.execute("reset statement_timeout")


# --- lock-down (last: it changes the database for every later session) ---------------------


def test_lock_down_shuts_strangers_out_and_names_out_of_notifications(
    dsn: str, roles: None, clean: None, conn: psycopg.Connection
) -> None:
    """Without lock-down a role without grants connects, LISTENs and learns queue names and
    dead-letter details. `install(lock_down=True)` revokes CONNECT and TEMPORARY from PUBLIC
    (members of andal's roles still connect) and notifications carry no names."""
    with connect_as(dsn, STRANGER) as stranger:
        stranger.execute("listen andal_jobs")
        conn.execute(
            "select queue.enqueue(payload => '{}', queue => 'payroll-eu', max_attempts => 1)"
        )
        names = [n.payload for n in stranger.notifies(timeout=5, stop_after=1)]
    assert names == ["payroll-eu"], "the hole this test closes"

    steps = install(dsn, lock_down=True)
    assert any("revoked connect" in s for s in steps)
    with pytest.raises(psycopg.OperationalError, match="permission denied"):
        connect_as(dsn, STRANGER).close()
    with connect_as(dsn, WORKER) as listener, connect_as(dsn, PRODUCER) as producer:
        listener.execute("listen andal_jobs")
        listener.execute("listen andal_ops")
        producer.execute(
            "select queue.enqueue(payload => '{}', queue => 'payroll-eu', max_attempts => 1)"
        )
        job, token = listener.execute(
            "select job_id, token from queue.claim(worker => 'w', queues => '{payroll-eu}')"
        ).fetchone()
        listener.execute("select queue.fail(%s, %s, 'boom')", (job, token))
        got = sorted((n.channel, n.payload) for n in listener.notifies(timeout=5, stop_after=2))
    assert got == [("andal_jobs", ""), ("andal_ops", '{"event":"dead"}')]
    assert install(dsn, lock_down=True), "idempotent: it reports its steps again"
