"""The async producer API: ``await andal.enqueue(aconn, ...)`` and ``andal.AsyncClient``."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import psycopg
import pytest

import andal


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def jobs(conn: psycopg.Connection, queue: str) -> list[tuple]:
    return conn.execute(
        "select id, payload, priority from queue.jobs where queue = %s order by id", (queue,)
    ).fetchall()


def test_enqueue_on_an_async_connection_joins_its_transaction(dsn: str, conn, clean) -> None:
    async def go() -> tuple[int | None, list[int | None]]:
        async with await psycopg.AsyncConnection.connect(dsn) as aconn:
            await andal.enqueue(aconn, {"n": 0}, "ac_rolled")
            await aconn.rollback()  # the caller's transaction decides
            job_id = await andal.enqueue(aconn, {"n": 1}, "ac", priority=5)
            ids = await andal.enqueue_many(aconn, [{"n": 2}, {"n": 3}], "ac")
            await aconn.commit()
            return job_id, ids

    job_id, ids = run(go())
    assert jobs(conn, "ac_rolled") == []
    got = jobs(conn, "ac")
    assert [r[0] for r in got] == [job_id, *ids]
    assert [r[1] for r in got] == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert got[0][2] == 5


def test_async_and_sync_enqueue_send_the_same_rows(dsn: str, conn, clean) -> None:
    options = {"category": "c1", "priority": 3, "delay": 60, "max_attempts": 2}

    async def go() -> None:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as aconn:
            await andal.enqueue(aconn, {"k": 1}, "same_a", dedup_key="x", **options)

    run(go())
    andal.enqueue(conn, {"k": 1}, "same_s", dedup_key="x", **options)
    cols = "payload, category, priority, max_attempts, dedup_key, available_at > now()"
    rows = {
        q: conn.execute(f"select {cols} from queue.jobs where queue = %s", (q,)).fetchall()
        for q in ("same_a", "same_s")
    }
    assert rows["same_a"] == rows["same_s"] and len(rows["same_a"]) == 1


def test_errors_are_the_same_on_both(dsn: str, conn, clean) -> None:
    async def go() -> None:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as aconn:
            await andal.enqueue(aconn, {}, "")

    with pytest.raises(psycopg.errors.InvalidParameterValue):
        run(go())
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        andal.enqueue(conn, {}, "")


def test_async_client_routes_like_the_client(dsn: str, conn, clean) -> None:
    client = andal.AsyncClient(dsn)
    sync_client = andal.Client(dsn)

    async def go() -> tuple[int | None, list[int | None]]:
        one = await client.enqueue({"a": 1}, "acl_one")
        many = await client.enqueue_many(
            [{"b": 1}, {"b": 2}, {"b": 3}], ["acl_x", "acl_y", "acl_x"], dedup_keys=["p", None, "q"]
        )
        return one, many

    one, many = run(go())
    assert jobs(conn, "acl_one")[0][0] == one
    assert [r[0] for r in jobs(conn, "acl_x")] == [many[0], many[2]]
    assert [r[0] for r in jobs(conn, "acl_y")] == [many[1]]
    assert client.dsn_for("acl_x") == sync_client.dsn_for("acl_x")
    with pytest.raises(ValueError, match="one queue name per payload"):
        run(client.enqueue_many([{}, {}], ["only_one"]))


def test_async_client_joins_a_given_connection(dsn: str, conn, clean) -> None:
    client = andal.AsyncClient(dsn)

    async def go() -> None:
        async with await psycopg.AsyncConnection.connect(dsn) as aconn:
            await client.enqueue({}, "acl_tx", conn=aconn)
            await client.enqueue_many([{}, {}], ["acl_tx", "acl_tx2"], conn=aconn)
            await aconn.rollback()

    run(go())
    assert jobs(conn, "acl_tx") == [] and jobs(conn, "acl_tx2") == []


def test_queue_policy_on_an_async_connection(dsn: str, conn, clean) -> None:
    async def go() -> None:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as aconn:
            await andal.configure_queue(aconn, "acl_policy", max_attempts=7, lease=90)
            await andal.set_category_limit(aconn, "acl_cat", 3)

    run(go())
    assert conn.execute(
        "select max_attempts, lease from queue.queues where queue = 'acl_policy'"
    ).fetchone() == (7, timedelta(seconds=90))
    assert conn.execute(
        "select max_running from queue.categories where category = 'acl_cat'"
    ).fetchone() == (3,)
