"""Leases: the heartbeat keeps a long job; a worker that lost its lease is fenced."""

from __future__ import annotations

import logging
import threading

import psycopg
from conftest import wait_for
from workers.inproc import running

import andal


def test_heartbeat_keeps_a_job_longer_than_its_lease(
    dsn: str, conn: psycopg.Connection, clean: None
) -> None:
    runs: list[int] = []

    def slow(job: andal.Job) -> str:
        runs.append(job.attempt)
        # outlive the 1 s lease three times over, checking the lease is really extended
        deadline = job.lease_expires_at
        wait_for(
            lambda: conn.execute(
                "select lease_expires_at > %s + interval '2 s' from queue.jobs where id = %s",
                (deadline, job.id),
            ).fetchone()[0],
            timeout=10,
            what="the lease to be extended",
        )
        return "done"

    job_id = andal.enqueue(conn, {}, "hb")
    with running(andal.Worker(dsn, {"hb": slow}, lease=1, poll=0.2)) as worker:
        wait_for(lambda: worker.counts["completed"] == 1, timeout=20, what="the completion")
    assert runs == [1]
    assert worker.counts["lease_lost"] == 0 and worker.counts["heartbeats"] >= 3
    assert (
        conn.execute("select count(*) from queue.jobs where id = %s", (job_id,)).fetchone()[0] == 0
    )


def test_stale_lease_is_fenced_and_the_job_runs_elsewhere(
    dsn: str, conn: psycopg.Connection, clean: None, caplog
) -> None:
    caplog.set_level(logging.INFO, logger="andal")
    andal.configure_queue(conn, "stale", keep_results=True, max_attempts=5)
    runs: list[tuple[str, int]] = []
    b_ran = threading.Event()

    def handler_a(job: andal.Job) -> dict:
        runs.append(("A", job.attempt))
        assert b_ran.wait(30)  # outlive the lease until B has run the job
        return {"by": "A"}

    def handler_b(job: andal.Job) -> dict:
        runs.append(("B", job.attempt))
        b_ran.set()
        return {"by": "B"}

    job_id = andal.enqueue(conn, {}, "stale")
    # A: 1 s lease and no heartbeat, so its lease runs out while the handler still works
    # (one slot: A cannot claim the job again while its handler still holds it)
    a = andal.Worker(
        dsn, {"stale": handler_a}, lease=1, poll=0.2, heartbeat=False, name="A", concurrency=1
    )
    b = andal.Worker(dsn, {"stale": handler_b}, lease=30, poll=0.2, name="B")
    with running(a):
        wait_for(lambda: runs, timeout=20, what="A to start the job")
        with running(b):
            wait_for(lambda: b.counts["completed"] == 1, timeout=20, what="B to complete")
            wait_for(lambda: a.counts["lease_lost"] == 1, timeout=20, what="A to be fenced")
    assert runs == [("A", 1), ("B", 2)]
    assert a.counts["completed"] == 0 and b.counts["completed"] == 1
    result = conn.execute("select result from queue.results where job_id = %s", (job_id,))
    assert result.fetchall() == [({"by": "B"},)]
    assert conn.execute("select count(*) from queue.jobs").fetchone()[0] == 0
    assert conn.execute("select count(*) from queue.dead_letters").fetchone()[0] == 0
    lost = [r for r in caplog.records if r.msg == "lease_lost"]
    assert len(lost) == 1 and lost[0].job_id == job_id and lost[0].worker == "A"
    assert lost[0].detected_by == "complete"
    # why, in queue.refusals' word: B holds the job (A's handler returns once B's started) or
    # has completed it already
    assert lost[0].refused in ("claimed_again", "gone")


def test_heartbeat_notices_a_lost_lease(dsn: str, conn: psycopg.Connection, clean: None) -> None:
    """A lease taken away under a running handler is seen by the next heartbeat; the
    handler's outcome is then dropped without touching the job."""
    release = threading.Event()

    def handler(job: andal.Job) -> str:
        assert release.wait(30)
        return "late"

    job_id = andal.enqueue(conn, {}, "hl")
    with running(andal.Worker(dsn, {"hl": handler}, lease=1, poll=0.2)) as worker:
        wait_for(
            lambda: conn.execute(
                "select status = 'running' from queue.jobs where id = %s", (job_id,)
            ).fetchone()[0],
            timeout=10,
            what="the claim",
        )
        # an operator (or another worker's reap) takes the job back: a new token
        conn.execute("update queue.jobs set token = gen_random_uuid() where id = %s", (job_id,))
        wait_for(lambda: worker.counts["lease_lost"] == 1, timeout=10, what="the heartbeat")
        release.set()
        wait_for(lambda: worker.counts["discarded"] == 1, timeout=10, what="the discard")
    assert worker.counts["completed"] == 0
    assert conn.execute("select status from queue.jobs where id = %s", (job_id,)).fetchone() == (
        "running",
    )


def test_worker_runs_maintenance(dsn: str, conn: psycopg.Connection, clean: None, caplog) -> None:
    """``queue.maintain()`` runs every ``maintain_every`` seconds; expired leases are taken
    back (by it, or by a claim, which does the same), even of queues nobody serves."""
    caplog.set_level(logging.DEBUG, logger="andal")
    job_id = andal.enqueue(conn, {}, "elsewhere")
    conn.execute(
        "select * from queue.claim(worker => 'gone', queues => array['elsewhere'],"
        " lease => interval '50 milliseconds')"
    )
    worker = andal.Worker(dsn, {"mine": lambda job: None}, poll=5, maintain_every=0.2)
    with running(worker):
        wait_for(
            lambda: conn.execute(
                "select status = 'pending' from queue.jobs where id = %s", (job_id,)
            ).fetchone()[0],
            timeout=10,
            what="maintenance to take the lease back",
        )
        wait_for(
            lambda: sum(r.msg == "maintained" for r in caplog.records) >= 3,
            timeout=10,
            what="three maintenance rounds",
        )
    errors = conn.execute("select errors from queue.jobs where id = %s", (job_id,)).fetchone()[0]
    assert errors[-1]["worker"] == "gone"
