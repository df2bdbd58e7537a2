"""The wake-up hint goes to sleeping listeners only (``queue.idle`` / ``queue.busy``): a real
LISTEN session that sleeps on a queue is hinted by every place that makes a job claimable,
the same session busy is hinted by none of them, and a worker's listener sleeps while the
worker waits and wakes for a job. A sentinel notification marks where a statement's hints
end, so nothing waits on time."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from conftest import wait_for
from test_claimable_notify import ACTIONS, claim, enqueue, full_category, hints_of
from workers.inproc import running

import andal


@pytest.fixture
def sleeper(dsn: str) -> Iterator[psycopg.Connection]:
    """A LISTEN session that calls queue.idle and queue.busy, as a worker's listener does."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("listen andal_jobs")
        yield conn


@pytest.fixture
def actor(dsn: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield conn


def idle(conn: psycopg.Connection, queue: str) -> None:
    conn.execute("select queue.idle(queues => %s)", ([queue],))


def busy(conn: psycopg.Connection) -> None:
    conn.execute("select queue.busy()")


def schedule_tick(conn: psycopg.Connection, queue: str) -> None:
    name = f"s_{queue}"
    conn.execute("select queue.schedule(name => %s, queue => %s, every => '1 hour')", (name, queue))
    conn.execute(
        "update queue.schedules set anchor = now() - interval '90 minutes',"
        " next_at = now() - interval '30 minutes' where name = %s",
        (name,),
    )
    conn.execute("select queue.maintain()")


#: every place that makes a job claimable, with the jobs of the queue it needs before (a
#: freed slot of a full category: below)
PLACES = {**ACTIONS, "schedule tick": (schedule_tick, 0)}


@pytest.mark.parametrize("name", list(PLACES))
def test_a_sleeping_listener_is_hinted_and_a_busy_one_is_not(
    sleeper: psycopg.Connection, actor: psycopg.Connection, name: str
) -> None:
    action, before = PLACES[name]
    queue = f"h_{uuid.uuid4().hex[:8]}"
    for _ in range(before * 2):
        enqueue(actor, queue)
    idle(sleeper, queue)
    hints_of(sleeper, actor, queue)  # the setup's own hints are drained
    action(actor, queue)
    assert hints_of(sleeper, actor, queue) == [queue], "a sleeper is hinted"
    busy(sleeper)
    action(actor, queue)
    assert hints_of(sleeper, actor, queue) == [], "a busy user of the queue is not"


def test_a_freed_slot_of_a_full_category_hints_a_sleeper_and_not_a_busy_one(
    sleeper: psycopg.Connection, actor: psycopg.Connection
) -> None:
    for asleep in (True, False):
        queue = f"h_{uuid.uuid4().hex[:8]}"
        job, token = full_category(actor, queue)
        idle(sleeper, queue)
        if not asleep:
            busy(sleeper)
        hints_of(sleeper, actor, queue)
        actor.execute("select queue.complete(job_id => %s, token => %s)", (job, token))
        assert hints_of(sleeper, actor, queue) == ([queue] if asleep else [])
        assert len(claim(actor, queue)) == 1


def test_a_listener_that_never_calls_idle_is_hinted_on_a_queue_without_idle_users(
    sleeper: psycopg.Connection, actor: psycopg.Connection
) -> None:
    queue, other = f"h_{uuid.uuid4().hex[:8]}", f"h_{uuid.uuid4().hex[:8]}"
    idle(sleeper, other)
    busy(sleeper)  # a user of `other` only
    with psycopg.connect(actor.info.dsn, autocommit=True) as plain:
        plain.execute("listen andal_jobs")
        hints_of(plain, actor, queue)
        enqueue(actor, queue)
        enqueue(actor, queue)
        assert hints_of(plain, actor, queue) == [queue, queue]


def test_a_job_of_a_transaction_open_across_the_idle_is_claimed_by_the_next_claim(
    sleeper: psycopg.Connection, actor: psycopg.Connection
) -> None:
    """The race of the last worker going to sleep: the job sends no hint (its producer read
    the worker busy) and the re-check claim cannot see it yet; the poll's claim finds it."""
    queue = f"h_{uuid.uuid4().hex[:8]}"
    idle(sleeper, queue)
    busy(sleeper)
    assert claim(sleeper, queue) == []
    with actor.transaction():
        enqueue(actor, queue)
        idle(sleeper, queue)
        assert claim(sleeper, queue) == []  # the re-check: not committed yet
    assert hints_of(sleeper, actor, queue) == []
    assert len(claim(sleeper, queue)) == 1  # the poll's claim


def sleeping(conn: psycopg.Connection, worker: str) -> bool | None:
    """Whether the listener session of ``worker`` sleeps (None: it has no row)."""
    row = conn.execute(
        "select bool_or(s.sleeping) from queue.sleepers as s"
        " join pg_stat_activity as a on a.pid = s.pid"
        " where a.application_name = %s",
        (f"andal {worker} listen",),
    ).fetchone()
    return None if row is None else row[0]


def test_a_workers_listener_sleeps_while_it_waits_and_a_busy_worker_sends_no_hints(
    dsn: str, actor: psycopg.Connection, clean: None
) -> None:
    queue, name = f"h_{uuid.uuid4().hex[:8]}", f"w_{uuid.uuid4().hex[:6]}"
    started, release = threading.Event(), threading.Event()
    done: list[int] = []

    def handler(job: andal.Job) -> None:
        if job.payload.get("hold"):
            started.set()
            release.wait(30)
        done.append(job.id)

    worker = andal.Worker(dsn, {queue: handler}, poll=30, name=name, concurrency=1)
    with running(worker), psycopg.connect(dsn, autocommit=True) as watch:
        watch.execute("listen andal_jobs")
        wait_for(lambda: sleeping(actor, name), what="the listener to sleep")
        hints_of(watch, actor, queue)
        andal.enqueue(actor, {}, queue)  # a sleeping worker: the producer hints
        assert hints_of(watch, actor, queue) == [queue]
        wait_for(lambda: len(done) == 1, timeout=20, what="the job to run")
        wait_for(lambda: sleeping(actor, name), what="the listener to sleep again")
        andal.enqueue(actor, {"hold": True}, queue)
        assert started.wait(20)
        wait_for(lambda: sleeping(actor, name) is False, what="the listener to be busy")
        hints_of(watch, actor, queue)
        for _ in range(3):  # a burst while the only worker is busy: no NOTIFY
            andal.enqueue(actor, {}, queue)
        assert hints_of(watch, actor, queue) == []
        release.set()
        wait_for(lambda: len(done) == 5, timeout=20, what="the burst to run")
