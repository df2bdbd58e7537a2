"""Reads from a hot standby: a primary and its streaming standby on this machine
(``replication.Pair``), andal installed on the primary and replayed on the standby.

On the standby every read-only function answers what the primary committed (job, jobs_by,
stats, status, metrics, schedules, dead letters, ...); the shared cache's functions refuse
with andal's AN002 (``andal.PrimaryOnly``, raised from plain psycopg too) and the fix,
because its entries are UNLOGGED and so exist on the primary only; ``cache.stats()``
answers with its entry figures null; ``queue.metrics()`` leaves the cache's out and says
so; a writer refuses with PostgreSQL's read-only error and writes nothing; ``andal status``
runs against the standby.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import psycopg
import pytest

import andal
from andal.install import install
from reliability.replication import Pair


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    pair = Pair()
    try:
        pair.start()
        with psycopg.connect(pair.primary.dsn, autocommit=True) as c:
            c.execute("create database t")
        install(pair.primary_dsn("t"))
        with psycopg.connect(pair.primary_dsn("t"), autocommit=True) as c:
            c.execute("select queue.configure_queue(queue => 'r', max_attempts => 1)")
            ids = [andal.enqueue(c, {"n": n}, "r") for n in range(3)]
            row = c.execute(
                "select job_id, token from queue.claim(worker => 'w', queues => '{r}', batch => 1)"
            ).fetchone()
            c.execute(
                "select queue.fail(job_id => %s, token => %s, error => 'boom')", (row[0], row[1])
            )
            c.execute("select cache.put(key => 'k', value => '1')")
            c.execute("select queue.schedule(name => 'tick', queue => 'r', every => '1 minute')")
            assert len(ids) == 3
        pair.wait_replayed()
        yield pair
    finally:
        pair.destroy()


@pytest.fixture
def standby(pair: Pair) -> Iterator[psycopg.Connection]:
    with psycopg.connect(pair.standby_dsn("t"), autocommit=True) as c:
        assert c.execute("select pg_is_in_recovery()").fetchone()[0]
        yield c


READS = [
    "select * from queue.job(job_id => 1)",
    "select * from queue.job_payload(job_id => 1)",
    "select * from queue.job_origin(job_id => 1)",
    "select * from queue.refusals(job_ids => '{1}', tokens => array[gen_random_uuid()])",
    "select * from queue.vacuum_due(every => '1 hour')",
    "select * from queue.jobs_by(queue => 'r')",
    "select * from queue.stats()",
    "select * from queue.status()",
    "select * from queue.stats_by_minute(span => '1 hour')",
    "select * from queue.category_limits()",
    "select * from queue.rate_limits()",
    "select * from queue.list_dead(queue => null, lim => 10)",
    "select * from queue.dead_letters_by()",
    "select * from queue.next_available(queues => '{r}')",
    "select * from queue.parent_results(job_id => 1)",
    "select * from queue.child_jobs(job_id => 1)",
    "select * from queue.queue_settings(queue => 'r')",
    "select * from queue.roles()",
    "select * from queue.registered_workers()",
    "select * from queue.workers()",
    "select * from queue.unserved_queues()",
    "select * from queue.schedules()",
    "select * from queue.shards()",
    "select * from queue.shard_of(queue => 'r')",
    "select * from queue.trace_contexts(job_ids => '{1}')",
    "select * from queue.version()",
    "select * from queue.metrics()",
    "select * from cache.stats()",
]


@pytest.mark.parametrize("statement", READS)
def test_a_read_only_function_answers_on_the_standby(
    standby: psycopg.Connection, statement: str
) -> None:
    standby.execute(statement).fetchall()


def test_the_standby_serves_what_the_primary_committed(standby: psycopg.Connection) -> None:
    by_status = dict(
        standby.execute(
            "select state, count(*) from queue.jobs_by(queue => 'r') group by 1"
        ).fetchall()
    )
    assert by_status == {"pending": 2, "dead": 1}
    assert standby.execute("select count(*) from queue.list_dead(queue => 'r')").fetchone()[0] == 1
    names = [r[0] for r in standby.execute("select name from queue.schedules()")]
    assert "tick" in names


CACHE_CALLS = [
    ("cache.get", "select * from cache.get(key => 'k')"),
    ("cache.get_many", "select * from cache.get_many(keys => '{k}')"),
    ("cache.ttl_for", "select cache.ttl_for(key => 'k')"),
    ("cache.put", "select cache.put(key => 'k', value => '2')"),
    ("cache.invalidate", "select cache.invalidate(key => 'k')"),
    ("cache.validate", "select * from cache.validate(keys => '{k}', versions => '{1}')"),
    ("cache.changes_since", "select * from cache.changes_since(watermark => 0)"),
    ("cache.refresh_due", "select * from cache.refresh_due()"),
]


@pytest.mark.parametrize(("name", "statement"), CACHE_CALLS)
def test_the_shared_cache_refuses_on_the_standby_with_an002(
    standby: psycopg.Connection, name: str, statement: str
) -> None:
    with pytest.raises(andal.PrimaryOnly) as got:
        standby.execute(statement)
    exc = got.value
    assert exc.sqlstate == "AN002"
    assert exc.diag.message_primary.startswith(f"{name} cannot run on a standby")
    assert "on the primary" in (exc.diag.message_hint or "")


def test_the_cache_answers_on_the_primary(pair: Pair) -> None:
    with psycopg.connect(pair.dsn("t"), autocommit=True) as c:
        assert c.execute("select value from cache.get(key => 'k')").fetchone()[0] == 1


def test_cache_stats_on_the_standby_has_no_entry_figures(standby: psycopg.Connection) -> None:
    rows = dict(standby.execute("select metric, value from cache.stats()").fetchall())
    for metric in ("entries", "bytes", "value_bytes", "stale_overdue"):
        assert rows[metric] is None, metric
    assert rows["max_total_bytes"] > 0


def test_metrics_on_the_standby_leave_the_cache_out(standby: psycopg.Connection) -> None:
    text = standby.execute("select queue.metrics()").fetchone()[0]
    assert 'andal_jobs{queue="r",state="ready"} 2' in text
    assert "andal_cache_entries" not in text
    assert "# andal_cache_*: not served by a standby" in text


def test_a_writer_refuses_on_the_standby(standby: psycopg.Connection) -> None:
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        standby.execute("select queue.enqueue(queue => 'r', payload => '{}')")
    with pytest.raises(andal.errors.ReadOnly), andal.errors.translated():
        standby.execute("select * from queue.claim(worker => 'w', queues => '{r}', batch => 1)")


def test_andal_status_runs_on_the_standby(pair: Pair) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "andal.cli", "--dsn", pair.standby_dsn("t"), "status", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert '"r"' in out.stdout


def test_the_dashboard_on_the_standby_marks_it_a_replica(pair: Pair) -> None:
    from webapp import andal_web, get

    with andal_web(pair.standby_dsn("t")) as server:
        status, html = get(server.base + "/")
    assert status == 200
    assert "replica, lag" in html
    assert ">r<" in html or "/queues/r" in html, "the primary's queues are shown"
    with andal_web(pair.primary_dsn("t")) as server:
        status, html = get(server.base + "/")
    assert status == 200 and "replica, lag" not in html
