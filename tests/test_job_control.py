"""Control of jobs under real concurrency: several PostgreSQL sessions at once.

* Pause: a paused queue's jobs stay pending however many workers claim, and resume releases
  them.
* Fairness: a worker serving two queues does not drain one queue's backlog before starting
  the other's jobs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
from conftest import wait_for
from workers.inproc import running

import andal


def run_sessions(n: int, target: Callable[[int], Any]) -> list[Any]:
    """Run target(i) for i in range(n) in n threads; re-raise the first failure."""
    with ThreadPoolExecutor(max_workers=n) as pool:
        futures = [pool.submit(target, i) for i in range(n)]
        return [f.result() for f in futures]


def enqueue(conn: psycopg.Connection, queue: str, n: int) -> list[int]:
    rows = conn.execute(
        "select * from queue.enqueue_many(array(select jsonb_build_object('n', g)"
        " from generate_series(1, %(n)s::int) as g), queue => %(queue)s)",
        {"n": n, "queue": queue},
    ).fetchall()
    return [r[0] for r in rows]


# --- pause -----------------------------------------------------------------------------------


def test_paused_queue_stays_pending_across_concurrent_claims(
    dsn: str, conn: psycopg.Connection, clean: None
) -> None:
    paused = set(enqueue(conn, "paused", 200))
    other = set(enqueue(conn, "served", 40))
    conn.execute("select queue.pause(queue => 'paused')")
    start = threading.Barrier(4)

    def worker(i: int) -> list[tuple[int, str]]:
        got: list[tuple[int, str]] = []
        with psycopg.connect(dsn, autocommit=True) as c:
            start.wait()
            for n in range(10):
                # half the claims name both queues, half claim every queue
                queues = ["paused", "served"] if (i + n) % 2 else None
                got += c.execute(
                    "select job_id, queue from queue.claim(worker => %s, queues => %s::text[],"
                    " batch => 5)",
                    (f"w{i}", queues),
                ).fetchall()
        return got

    claimed = [row for rows in run_sessions(4, worker) for row in rows]
    assert {job for job, _ in claimed} <= other, "a job of the paused queue was claimed"
    assert len(claimed) == len(other), "the other queue was served while the first was paused"
    assert conn.execute(
        "select count(*) from queue.jobs where queue = 'paused' and status = 'pending'"
    ).fetchone() == (len(paused),)

    conn.execute("select queue.resume(queue => 'paused')")
    taken: set[int] = set()
    for _ in range(10):
        taken |= {
            r[0]
            for r in conn.execute(
                "select job_id from queue.claim(worker => 'w', queues => '{paused}', batch => 100)"
            ).fetchall()
        }
    assert taken == paused, "resume releases every paused job"


# --- fairness ----------------------------------------------------------------------------


def test_one_worker_shares_its_slots_between_two_queues(
    dsn: str, conn: psycopg.Connection, clean: None
) -> None:
    """3,000 jobs of A, then 500 of B; one worker of 8 slots serving both. B's first job is
    in the worker's first claim, and B drains alongside A: by the time B's last job starts,
    A has had about as many starts as B (round-robin), not its whole backlog."""
    enqueue(conn, "A", 3000)
    enqueue(conn, "B", 500)
    started: list[tuple[str, Any]] = []
    lock = threading.Lock()

    def handle(job: andal.Job) -> None:
        with lock:
            started.append((job.queue, job.lease_expires_at))

    worker = andal.Worker(
        dsn, {"A": handle, "B": handle}, concurrency=8, lease=60, name="fair", maintain_every=0
    )
    with running(worker):
        wait_for(lambda: len(started) >= 3500, timeout=120, what="every job started")
    # one claim's jobs share its lease expiry (the same now() plus the same lease)
    first_claim = min(expiry for _, expiry in started)
    assert "B" in {q for q, expiry in started if expiry == first_claim}
    last_b = max(i for i, (q, _) in enumerate(started) if q == "B")
    a_before = sum(1 for q, _ in started[:last_b] if q == "A")
    assert 250 <= a_before <= 1000, f"A started {a_before} jobs while B drained its 500"
