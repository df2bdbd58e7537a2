"""``async def`` handlers: awaited on the worker's event loop, beside plain handlers in threads."""

from __future__ import annotations

import asyncio
import threading
import time

import psycopg
import pytest
from conftest import wait_for
from workers.inproc import running

import andal


def remaining(conn: psycopg.Connection, queue: str) -> int:
    return conn.execute("select count(*) from queue.jobs where queue = %s", (queue,)).fetchone()[0]


def dead_count(conn: psycopg.Connection, queue: str) -> int:
    return conn.execute(
        "select count(*) from queue.dead_letters where queue = %s", (queue,)
    ).fetchone()[0]


def test_registry_tells_async_from_plain() -> None:
    reg = andal.Registry()

    @reg.handler("plain")
    def plain(job: andal.Job) -> None: ...

    @reg.handler("coro", limit=3)
    async def coro(job: andal.Job) -> None: ...

    class Callable_:
        async def __call__(self, job: andal.Job) -> None: ...

    reg.add("obj", Callable_())
    assert not reg["plain"].is_async
    assert reg["coro"].is_async and reg["coro"].limit == 3
    assert reg["obj"].is_async
    with pytest.raises(ValueError, match="positive integer"):
        reg.add("bad", plain, limit=0)


def test_async_and_sync_handlers_each_complete_10000_jobs(dsn: str, conn, clean) -> None:
    n = 10_000
    seen = {"sync": 0, "async": 0}
    lock = threading.Lock()
    reg = andal.Registry()

    @reg.handler("mix_sync")
    def sync_handler(job: andal.Job) -> dict:
        with lock:
            seen["sync"] += 1
        return {"n": job.payload["n"]}

    @reg.handler("mix_async")
    async def async_handler(job: andal.Job) -> dict:
        await asyncio.sleep(0)
        seen["async"] += 1  # the loop's thread only
        return {"n": job.payload["n"]}

    andal.enqueue_many(conn, [{"n": i} for i in range(n)], "mix_sync")
    andal.enqueue_many(conn, [{"n": i} for i in range(n)], "mix_async")
    worker = andal.Worker(dsn, reg, concurrency=8, batch=100, poll=0.2, metrics=False)
    with running(worker):
        wait_for(
            lambda: remaining(conn, "mix_sync") + remaining(conn, "mix_async") == 0,
            timeout=280,
            what="20,000 jobs",
        )
    assert seen == {"sync": n, "async": n}
    assert worker.counts["completed"] == 2 * n
    assert worker.counts["retried"] == 0 and worker.counts["dead"] == 0
    assert dead_count(conn, "mix_sync") == dead_count(conn, "mix_async") == 0


def test_200_sleeping_async_handlers_run_at_once_without_a_thread_each(
    dsn: str, conn, clean
) -> None:
    n = 200
    state = {"in_flight": 0, "most": 0, "threads": 0}
    before = threading.active_count()
    reg = andal.Registry()

    @reg.handler("sleepy")
    async def sleepy(job: andal.Job) -> None:
        state["in_flight"] += 1
        state["most"] = max(state["most"], state["in_flight"])
        state["threads"] = max(state["threads"], threading.active_count())
        await asyncio.sleep(1.0)
        state["in_flight"] -= 1

    andal.enqueue_many(conn, [{} for _ in range(n)], "sleepy")
    worker = andal.Worker(dsn, reg, concurrency=n, batch=n, poll=0.2, metrics=False)
    with running(worker):
        started = time.monotonic()
        wait_for(lambda: remaining(conn, "sleepy") == 0, timeout=120, what="200 sleepers")
        took = time.monotonic() - started
    assert worker.counts["completed"] == n
    # They ran together: far from 200 one-second sleeps in a row, and all 200 were in flight
    # at one time (none waits for another: the bound holds on a loaded machine too).
    assert state["most"] == n
    assert took < n * 1.0 / 4
    # No thread per job: the worker's own threads (claim loop, completer, heartbeat,
    # listener, event loop, connection pools) and not one more per handler.
    assert state["threads"] - before < 25


def test_async_transactional_handler_commits_with_the_job(dsn: str, conn, clean) -> None:
    conn.execute("create table if not exists async_ledger (job_id bigint primary key)")
    conn.execute("truncate async_ledger")
    reg = andal.Registry()

    @reg.handler("atx", transactional=True)
    async def post(job: andal.Job, aconn: psycopg.AsyncConnection) -> dict:
        assert isinstance(aconn, psycopg.AsyncConnection)
        await aconn.execute("insert into async_ledger values (%s)", (job.id,))
        if job.payload.get("boom"):
            raise RuntimeError("boom after the insert")
        return {"posted": job.id}

    ok = andal.enqueue(conn, {"boom": False}, "atx")
    bad = andal.enqueue(conn, {"boom": True}, "atx", max_attempts=1)
    worker = andal.Worker(dsn, reg, concurrency=4, poll=0.2, metrics=False)
    with running(worker):
        wait_for(lambda: remaining(conn, "atx") == 0, what="both jobs")
    rows = [r[0] for r in conn.execute("select job_id from async_ledger").fetchall()]
    assert rows == [ok]  # the failing handler's insert rolled back with its savepoint
    reason, error = conn.execute(
        "select reason, last_error from queue.dead_letters where job_id = %s", (bad,)
    ).fetchone()
    assert reason == "exhausted" and "boom after the insert" in error
    assert worker.counts["completed"] == 1 and worker.counts["dead"] == 1


def test_async_handler_failures_take_the_usual_paths(dsn: str, conn, clean) -> None:
    reg = andal.Registry()

    @reg.handler("afail")
    async def handler(job: andal.Job) -> None:
        kind = job.payload["kind"]
        if kind == "retry":
            raise andal.Retry("later", delay=60)
        if kind == "fail":
            raise andal.Fail("hopeless")
        raise KeyError("missing thing")

    retry = andal.enqueue(conn, {"kind": "retry"}, "afail")
    fail = andal.enqueue(conn, {"kind": "fail"}, "afail")
    boom = andal.enqueue(conn, {"kind": "boom"}, "afail")
    worker = andal.Worker(dsn, reg, concurrency=2, poll=0.2, metrics=False)
    with running(worker):
        wait_for(
            lambda: worker.counts["retried"] == 2 and worker.counts["dead"] == 1,
            what="three outcomes",
        )
    errors = dict(
        conn.execute(
            "select id, errors -> -1 ->> 'error' from queue.jobs where id in (%s, %s)",
            (retry, boom),
        ).fetchall()
    )
    assert errors[retry] == "later" and "KeyError: 'missing thing'" in errors[boom]
    assert conn.execute(
        "select reason from queue.dead_letters where job_id = %s", (fail,)
    ).fetchone() == ("non_retryable",)


@pytest.mark.parametrize("transactional", [False, True])
def test_a_queue_limit_bounds_its_running_jobs(dsn: str, conn, clean, transactional) -> None:
    limit, n = 3, 24
    state = {"in_flight": 0, "most": 0}
    lock = threading.Lock()
    reg = andal.Registry()
    queue = f"limited_{int(transactional)}"

    def enter() -> None:
        with lock:
            state["in_flight"] += 1
            state["most"] = max(state["most"], state["in_flight"])

    def leave() -> None:
        with lock:
            state["in_flight"] -= 1

    if transactional:

        @reg.handler(queue, transactional=True, limit=limit)
        def tx_handler(job: andal.Job, c: psycopg.Connection) -> None:
            enter()
            time.sleep(0.05)
            leave()

    else:

        @reg.handler(queue, limit=limit)
        async def handler(job: andal.Job) -> None:
            enter()
            await asyncio.sleep(0.05)
            leave()

    @reg.handler("free")
    async def free(job: andal.Job) -> None:
        await asyncio.sleep(0.05)

    andal.enqueue_many(conn, [{} for _ in range(n)], queue)
    andal.enqueue_many(conn, [{} for _ in range(n)], "free")
    worker = andal.Worker(dsn, reg, concurrency=12, batch=10, poll=0.1, metrics=False)
    with running(worker):
        wait_for(lambda: remaining(conn, queue) + remaining(conn, "free") == 0, what="every job")
    assert worker.counts["completed"] == 2 * n
    assert state["most"] == limit  # reached, never passed


def test_one_slot_worker_runs_async_handlers(dsn: str, conn, clean) -> None:
    reg = andal.Registry()
    ran: list[int] = []

    @reg.handler("one")
    async def one(job: andal.Job) -> None:
        ran.append(job.id)

    ids = andal.enqueue_many(conn, [{} for _ in range(50)], "one")
    worker = andal.Worker(dsn, reg, concurrency=1, batch=1, poll=0.1, metrics=False)
    with running(worker):
        wait_for(lambda: remaining(conn, "one") == 0, what="50 jobs, one at a time")
    assert sorted(ran) == sorted(ids)


def test_async_handler_past_the_grace_period_is_released(dsn: str, conn, clean) -> None:
    reg = andal.Registry()
    started = threading.Event()

    @reg.handler("stuck")
    async def stuck(job: andal.Job) -> None:
        started.set()
        await asyncio.sleep(60)

    job_id = andal.enqueue(conn, {}, "stuck")
    worker = andal.Worker(dsn, reg, concurrency=2, grace=0.5, poll=0.1, metrics=False)
    worker.start()
    assert started.wait(20)
    worker.stop()
    assert worker.join(20) == 1  # the handler outlived the grace period
    status, attempt = conn.execute(
        "select status, attempt from queue.jobs where id = %s", (job_id,)
    ).fetchone()
    assert status == "pending" and attempt == 0  # released, its attempt unspent
