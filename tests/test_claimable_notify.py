"""Every place that makes a job claimable sends the hint on channel ``andal_jobs`` (payload: the
queue), exactly one per statement: enqueue, enqueue_many, a failed attempt retried at once,
release, requeue of a dead letter, and the take-back of an expired lease. A real listener (its
own connection, LISTEN) sees each; a sentinel notification sent after the statement marks
where its hints end, so nothing waits on time."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest

Action = Callable[[psycopg.Connection, str], None]


@pytest.fixture
def listener(dsn: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("listen andal_jobs")
        yield conn


@pytest.fixture
def actor(dsn: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield conn


def hints_of(listener: psycopg.Connection, actor: psycopg.Connection, queue: str) -> list[str]:
    """The payloads of ``andal_jobs`` that arrived before a sentinel sent now, naming queue."""
    sentinel = f"sentinel-{uuid.uuid4().hex}"
    actor.execute("select pg_notify('andal_jobs', %s)", (sentinel,))
    seen: list[str] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for n in listener.notifies(timeout=1.0):
            if n.payload == sentinel:
                return [p for p in seen if p == queue]
            seen.append(n.payload)
    raise AssertionError(f"the sentinel never arrived (saw {seen})")


def claim(conn: psycopg.Connection, queue: str, batch: int = 1) -> list[tuple[int, str]]:
    rows = conn.execute(
        "select job_id, token::text from queue.claim(worker => 'w', queues => %s, batch => %s)",
        ([queue], batch),
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def enqueue(conn: psycopg.Connection, queue: str) -> None:
    conn.execute("select queue.enqueue(payload => '{}', queue => %s)", (queue,))


def enqueue_many(conn: psycopg.Connection, queue: str) -> None:
    conn.execute(
        "select queue.enqueue_many(payloads => array['{}', '{}', '{}']::jsonb[], queue => %s)",
        (queue,),
    )


def fail_due_now(conn: psycopg.Connection, queue: str) -> None:
    ((job, token),) = claim(conn, queue)
    conn.execute(
        "select queue.fail(job_id => %s, token => %s, error => 'boom', retry_in => '0')",
        (job, token),
    )


def release(conn: psycopg.Connection, queue: str) -> None:
    ((job, token),) = claim(conn, queue)
    conn.execute("select queue.release(job_id => %s, token => %s)", (job, token))


def requeue_dead(conn: psycopg.Connection, queue: str) -> None:
    ((job, token),) = claim(conn, queue)
    conn.execute(
        "select queue.fail(job_id => %s, token => %s, error => 'bad', retryable => false)",
        (job, token),
    )
    conn.execute("select queue.requeue_dead(job_id => %s)", (job,))


def take_back(conn: psycopg.Connection, queue: str) -> None:
    jobs = claim(conn, queue, batch=3)
    assert len(jobs) == 3
    conn.execute(
        "update queue.jobs set lease_expires_at = now() - interval '1 second' where queue = %s",
        (queue,),
    )
    (reaped,) = conn.execute("select queue.maintain()").fetchone() or (0,)
    assert reaped == 3


#: (action, jobs of the queue it needs before: enqueued then, without a hint counted)
ACTIONS: dict[str, tuple[Action, int]] = {
    "enqueue": (enqueue, 0),
    "enqueue_many": (enqueue_many, 0),
    "fail with a retry due now": (fail_due_now, 1),
    "release": (release, 1),
    "requeue of a dead letter": (requeue_dead, 1),
    "lease take-back": (take_back, 3),
}


@pytest.mark.parametrize("name", list(ACTIONS))
def test_a_listener_sees_one_hint_per_statement_that_makes_jobs_claimable(
    listener: psycopg.Connection, actor: psycopg.Connection, name: str
) -> None:
    action, before = ACTIONS[name]
    queue = f"n_{uuid.uuid4().hex[:8]}"
    for _ in range(before):
        enqueue(actor, queue)
    hints_of(listener, actor, queue)  # the setup's own hints are drained
    action(actor, queue)
    assert hints_of(listener, actor, queue) == [queue]


def test_a_retry_due_later_sends_no_hint(
    listener: psycopg.Connection, actor: psycopg.Connection
) -> None:
    queue = f"n_{uuid.uuid4().hex[:8]}"
    enqueue(actor, queue)
    ((job, token),) = claim(actor, queue)
    hints_of(listener, actor, queue)
    actor.execute(
        "select queue.fail(job_id => %s, token => %s, error => 'boom', retry_in => '1 hour')",
        (job, token),
    )
    assert hints_of(listener, actor, queue) == []


def full_category(conn: psycopg.Connection, queue: str) -> tuple[int, str]:
    """Two jobs of a category limited to 1 in queue: one claimed (the slot is taken), one
    ready and turned away by the gate."""
    category = f"c_{queue}"
    conn.execute("select queue.set_category_limit(category => %s, max_running => 1)", (category,))
    for _ in range(2):
        conn.execute(
            "select queue.enqueue(payload => '{}', queue => %s, category => %s)",
            (queue, category),
        )
    ((job, token),) = claim(conn, queue, batch=2)
    assert claim(conn, queue) == []  # the gate turns the second one away
    return job, token


@pytest.mark.parametrize("how", ["complete", "complete_many", "fail"])
def test_freeing_a_full_categorys_slot_hints_the_queue(
    listener: psycopg.Connection, actor: psycopg.Connection, how: str
) -> None:
    queue = f"n_{uuid.uuid4().hex[:8]}"
    job, token = full_category(actor, queue)
    hints_of(listener, actor, queue)
    if how == "complete":
        actor.execute("select queue.complete(job_id => %s, token => %s)", (job, token))
    elif how == "complete_many":
        actor.execute(
            "select * from queue.complete_many(job_ids => %s, tokens => %s::uuid[])",
            ([job], [token]),
        )
    else:  # dead-lettered: it makes no job claimable itself, but frees the slot
        actor.execute(
            "select queue.fail(job_id => %s, token => %s, error => 'x', retryable => false)",
            (job, token),
        )
    assert hints_of(listener, actor, queue) == [queue]
    assert len(claim(actor, queue)) == 1  # the hint was true: the second job is claimable


def test_freeing_a_slot_of_a_category_that_was_not_full_sends_no_hint(
    listener: psycopg.Connection, actor: psycopg.Connection
) -> None:
    queue = f"n_{uuid.uuid4().hex[:8]}"
    category = f"c_{queue}"
    actor.execute("select queue.set_category_limit(category => %s, max_running => 3)", (category,))
    for _ in range(2):
        actor.execute(
            "select queue.enqueue(payload => '{}', queue => %s, category => %s)", (queue, category)
        )
    ((job, token),) = claim(actor, queue)
    hints_of(listener, actor, queue)
    actor.execute("select queue.complete(job_id => %s, token => %s)", (job, token))
    assert hints_of(listener, actor, queue) == []
