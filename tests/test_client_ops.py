"""Every day-two operation from Python: ``Client`` and ``AsyncClient`` methods (one per SQL
function, ``andal.operations``), their typed rows, against a real server."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

import andal
from andal import operations as ops

ROOT = Path(__file__).resolve().parent.parent


def kill(conn: psycopg.Connection, queue: str, n: int = 1) -> list[int]:
    """``n`` dead letters of ``queue`` (enqueued, then cancelled: reason ``cancelled``)."""
    ids = andal.enqueue_many(conn, [{"n": i} for i in range(n)], queue)
    for job_id in ids:
        conn.execute("select queue.cancel(job_id => %s)", (job_id,))
    return [i for i in ids if i is not None]


def test_jobs_cancel_and_dead_letters(dsn: str, conn: psycopg.Connection, clean: None) -> None:
    client = andal.Client(dsn)
    job_id = client.enqueue({"a": 1}, "ops_q", timeout=30)
    assert job_id is not None
    info = client.job(job_id)
    assert isinstance(info, andal.JobInfo) and info.state == "pending"
    assert [j.job_id for j in client.jobs_by("ops_q")] == [job_id]
    assert conn.execute("select timeout from queue.jobs where id = %s", (job_id,)).fetchone() == (
        timedelta(seconds=30),
    )
    client.cancel(job_id)
    dead = client.dead_letters("ops_q")
    assert [(d.job_id, d.reason) for d in dead] == [(job_id, "cancelled")]
    assert isinstance(dead[0], ops.DeadLetter) and isinstance(dead[0].died_at, datetime)
    assert client.requeue_dead(job_id) == job_id
    assert client.job(job_id).state == "pending"  # type: ignore[union-attr]
    with pytest.raises(andal.IllegalTransition):  # live again, not dead
        client.requeue_dead(job_id)
    more = kill(conn, "ops_q", 3)
    assert client.requeue_dead_matching("ops_q", reason="cancelled") == ops.Requeued(3, 0)
    kill(conn, "ops_dead", 2)
    assert client.purge_dead("ops_dead", older_than=0) == 2
    assert client.purge_dead_jobs(kill(conn, "ops_dead", 1)) == 1
    assert client.dead_letters("ops_dead") == [] and more


def test_queue_policy_pause_and_history(dsn: str, conn: psycopg.Connection, clean: None) -> None:
    client = andal.Client(dsn)
    fresh = client.queue_settings("ops_policy")
    assert isinstance(fresh, ops.QueueSettings) and not fresh.configured
    got = client.configure_queue(
        "ops_policy", timeout=60, max_attempts=7, results_retention=3600, dead_retention=86400
    )
    assert (got.configured, got.timeout, got.max_attempts) == (True, timedelta(minutes=1), 7)
    assert got.results_retention == timedelta(hours=1)
    assert client.configure_queue("ops_policy", timeout=0).timeout is None  # 0: no timeout
    assert client.queue_settings("ops_policy").max_attempts == 7  # left out: kept
    with pytest.raises(TypeError, match="unknown queue option"):
        client.configure_queue("ops_policy", timout=1)
    with pytest.raises(andal.InvalidArgument):
        client.configure_queue("ops_policy", backoff="sideways")
    client.pause("ops_policy")
    assert client.queue_settings("ops_policy").paused
    client.resume("ops_policy")
    client.set_history("ops_policy", 3600)
    assert client.queue_settings("ops_policy").history_retention == timedelta(hours=1)
    client.set_history("ops_policy", None)
    assert client.queue_settings("ops_policy").history_retention is None


def test_schedules_and_limits(dsn: str, conn: psycopg.Connection, clean: None) -> None:
    client = andal.Client(dsn)
    next_at = client.schedule("ops_nightly", "ops_sched", cron="0 3 * * *", payload={"k": 1})
    assert isinstance(next_at, datetime)
    client.schedule("ops_tick", "ops_sched", every=3600)
    mine = {s.name: s for s in client.schedules() if not s.builtin}
    assert mine["ops_nightly"].cron == "0 3 * * *" and mine["ops_nightly"].payload == {"k": 1}
    assert mine["ops_tick"].every == timedelta(hours=1)
    client.schedule("ops_tick", "ops_sched", every=7200, enabled=False)  # replaces it
    tick = {s.name: s for s in client.schedules()}["ops_tick"]
    assert (tick.every, tick.enabled) == (timedelta(hours=2), False)
    assert client.unschedule("ops_tick") and not client.unschedule("ops_tick")
    with pytest.raises(TypeError, match="unknown schedule option"):
        client.schedule("ops_x", "ops_sched", crontab="* * * * *")

    client.set_category_limit("ops_cat", 3)
    client.set_rate_limit("ops_cat", 10, 60)
    limits = {r.category: r for r in client.rate_limits()}
    assert (limits["ops_cat"].starts, limits["ops_cat"].per) == (10, timedelta(minutes=1))
    assert ops.CategoryLimit("ops_cat", 3) in client.category_limits()
    client.set_rate_limit("ops_cat", None, None)  # both None: no limit
    left = {r.category: r for r in client.rate_limits()}.get("ops_cat")
    assert left is None or left.starts is None


def test_reads(dsn: str, conn: psycopg.Connection, clean: None) -> None:
    client = andal.Client(dsn)
    client.enqueue({}, "ops_read")
    assert [s.ready for s in client.status() if s.queue == "ops_read"] == [1]
    rows = [s for s in client.stats() if s.queue == "ops_read" and s.category is None]
    assert len(rows) == 1 and isinstance(rows[0], ops.QueueStats) and rows[0].ready == 1
    assert isinstance(client.stats_by_minute(600), list)
    assert client.workers() == []
    assert isinstance(client.maintain(), int)
    assert client.version() == andal.__version__


def test_conn_joins_the_callers_transaction(dsn: str, conn: psycopg.Connection) -> None:
    client = andal.Client(dsn)
    with psycopg.connect(dsn) as mine:
        client.pause("ops_tx", conn=mine)
        mine.rollback()
    assert not client.queue_settings("ops_tx").paused


def test_async_client_has_the_same_methods(dsn: str, conn: psycopg.Connection, clean: None) -> None:
    async def go() -> tuple[Any, ...]:
        client = andal.AsyncClient(dsn)
        job_id = await client.enqueue({"a": 1}, "ops_async", timeout=5)
        assert job_id is not None
        listed = await client.jobs_by("ops_async")
        await client.cancel(job_id)
        dead = await client.dead_letters("ops_async")
        settings = await client.configure_queue("ops_async", max_attempts=2)
        await client.set_history("ops_async", 600)
        again = await client.enqueue({"a": 2}, "ops_async")
        assert again is not None
        row = conn.execute(
            "select job_id, token from queue.claim(worker => 'w', queues => '{ops_async}')"
        ).fetchone()
        assert row is not None and row[0] == again
        conn.execute("select queue.complete(job_id => %s, token => %s)", row)
        done = await client.wait(again, timeout=30)
        return listed, dead, settings, done, await client.stats()

    listed, dead, settings, done, stats = asyncio.run(go())
    assert len(listed) == 1 and dead[0].reason == "cancelled" and settings.max_attempts == 2
    assert done is not None and done.state == "completed"
    assert any(s.queue == "ops_async" for s in stats)


def sql_only() -> set[str]:
    """The functions docs/python.md lists as "SQL only" (the bullets of that section)."""
    text = (ROOT / "docs" / "python.md").read_text()
    section = text.split("### SQL only", 1)[1].split("\n#", 1)[0]
    return set(re.findall(r"`queue\.([a-z_]+)`", section))


def test_every_public_sql_function_has_a_method_or_is_listed_sql_only(
    conn: psycopg.Connection,
) -> None:
    names = {
        r[0]
        for r in conn.execute(
            "select distinct p.proname from pg_proc as p join pg_namespace as n"
            " on n.oid = p.pronamespace where n.nspname = 'queue' and p.proname !~ '^_'"
        )
    }
    covered = set(ops.SQL_FUNCTIONS)
    missing = names - covered - sql_only()
    assert not missing, f"no Python method and not listed under SQL only: {sorted(missing)}"
    assert not (covered & sql_only()), "listed as SQL only but has a method"
    for method in set(ops.SQL_FUNCTIONS.values()):
        assert callable(getattr(andal.Client, method, None)), method
        assert asyncio.iscoroutinefunction(getattr(andal.AsyncClient, method)), method
