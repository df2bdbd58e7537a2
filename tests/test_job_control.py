"""Control of jobs under real concurrency: several PostgreSQL sessions at once.

* Pause: a paused queue's jobs stay pending however many workers claim, and resume releases
  them.
* Abort: queue.cancel of a running job reaches the worker's session (notification, then
  heartbeat), the job ends cancelled when the worker acknowledges, and the worker's late
  complete is fenced; a cancel and a complete racing end the job once. With the Python
  worker: an async handler is cancelled by the next heartbeat (or the LISTEN hint), a sync
  one sees ``job.abort_requested``, and the worker acknowledges (the job ends cancelled,
  never retried), also when it learns of the abort only from its refused completion.
* Wait: Client.wait returns a job's final state and result as soon as another session ends
  it (woken by NOTIFY andal_done), and times out on a job that stays live.
* History: with a short retention, old partitions are dropped whole and the table's size
  stays flat across a 200,000-job churn.
* Fairness: a worker serving two queues does not drain one queue's backlog before starting
  the other's jobs.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import psycopg
import pytest
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


# --- abort ------------------------------------------------------------------------------------


def test_cancel_of_a_running_job_reaches_its_worker(
    dsn: str, conn: psycopg.Connection, clean: None
) -> None:
    job = conn.execute("select queue.enqueue('{}', queue => 'long')").fetchone()[0]
    with psycopg.connect(dsn, autocommit=True) as worker:
        worker.execute("listen andal_abort")
        claimed = worker.execute(
            "select job_id, token from queue.claim(worker => 'w-abort', queues => '{long}')"
        ).fetchone()
        assert claimed is not None and claimed[0] == job
        token = claimed[1]
        # another session, the operator's
        conn.execute("select queue.cancel(job_id => %s)", (job,))
        notes = list(worker.notifies(timeout=10, stop_after=1))
        assert [json.loads(n.payload) for n in notes] == [{"job_id": job, "worker": "w-abort"}]
        beat = worker.execute(
            "select lease_expires_at, abort_requested from queue.heartbeat("
            "job_id => %s, token => %s, report_abort => true)",
            (job, token),
        ).fetchone()
        assert beat is not None and beat[1] is True
        assert worker.execute(
            "select queue.fail(job_id => %s, token => %s, error => 'aborted')", (job, token)
        ).fetchone() == ("cancelled",)
        try:
            worker.execute("select queue.complete(job_id => %s, token => %s)", (job, token))
            raise AssertionError("a late complete succeeded")
        except psycopg.Error as exc:
            assert exc.diag.sqlstate == "AN001"
    assert conn.execute(
        "select state, attempts from queue.job(job_id => %s)", (job,)
    ).fetchone() == (
        "cancelled",
        1,
    )
    assert conn.execute("select count(*) from queue.jobs").fetchone() == (0,), "never retried"


def test_abort_and_complete_racing_end_the_job_once(
    dsn: str, conn: psycopg.Connection, clean: None
) -> None:
    """A cancel whose transaction is open while the worker completes: the complete waits for
    it and, re-checking the row, gets AN001 (the abort won); the job ends cancelled once the
    worker acknowledges. The other way round, a complete not yet committed makes the cancel
    wait, and the cancel then finds the job gone (42704)."""
    job = conn.execute("select queue.enqueue('{}', queue => 'race')").fetchone()[0]
    token = conn.execute(
        "select token from queue.claim(worker => 'w', queues => '{race}')"
    ).fetchone()[0]
    outcome: list[str | None] = []
    with psycopg.connect(dsn) as operator, psycopg.connect(dsn, autocommit=True) as worker:
        operator.execute("select queue.cancel(job_id => %s)", (job,))  # open transaction

        def complete() -> None:
            try:
                worker.execute("select queue.complete(%s, %s)", (job, token))
                outcome.append(None)
            except psycopg.Error as exc:
                outcome.append(exc.diag.sqlstate)

        t = threading.Thread(target=complete)
        t.start()
        wait_for(
            lambda: (
                conn.execute(
                    "select count(*) from pg_stat_activity where datname = current_database()"
                    " and wait_event_type = 'Lock'"
                    " and query like 'select queue.complete%%'"
                ).fetchone()
                == (1,)
            ),
            what="the complete to wait for the cancel's row lock",
        )
        operator.commit()
        t.join(timeout=20)
        assert outcome == ["AN001"]
        assert worker.execute(
            "select queue.fail(%s, %s, error => 'aborted')", (job, token)
        ).fetchone() == ("cancelled",)

    job = conn.execute("select queue.enqueue('{}', queue => 'race')").fetchone()[0]
    token = conn.execute(
        "select token from queue.claim(worker => 'w', queues => '{race}')"
    ).fetchone()[0]
    with psycopg.connect(dsn) as worker, psycopg.connect(dsn, autocommit=True) as operator:
        worker.execute("select queue.complete(%s, %s)", (job, token))  # open transaction
        got: list[str | None] = []

        def cancel() -> None:
            try:
                operator.execute("select queue.cancel(job_id => %s)", (job,))
                got.append(None)
            except psycopg.Error as exc:
                got.append(exc.diag.sqlstate)

        t = threading.Thread(target=cancel)
        t.start()
        wait_for(
            lambda: (
                conn.execute(
                    "select count(*) from pg_stat_activity where datname = current_database()"
                    " and wait_event_type = 'Lock'"
                    " and query like 'select queue.cancel%%'"
                ).fetchone()
                == (1,)
            ),
            what="the cancel to wait for the complete's row lock",
        )
        worker.commit()
        t.join(timeout=20)
        assert got == ["42704"], "the job had completed"


def _cancel_when_running(conn: psycopg.Connection, job_id: int, started: threading.Event) -> None:
    assert started.wait(30), "the handler did not start"
    conn.execute("select queue.cancel(job_id => %s)", (job_id,))


def _ended_cancelled(conn: psycopg.Connection, job_id: int) -> None:
    """The job ended cancelled after one attempt, and nothing of it is left to run."""
    wait_for(
        lambda: (
            conn.execute("select state from queue.job(job_id => %s)", (job_id,)).fetchone()
            == ("cancelled",)
        ),
        timeout=30,
        what="the job to end cancelled",
    )
    assert conn.execute("select attempts from queue.job(job_id => %s)", (job_id,)).fetchone() == (
        1,
    )
    assert conn.execute("select count(*) from queue.jobs").fetchone() == (0,), "never retried"


@pytest.mark.parametrize("listen", [False, True], ids=["heartbeat", "listen"])
def test_abort_cancels_a_running_async_handler_within_a_heartbeat(
    dsn: str, conn: psycopg.Connection, clean: None, listen: bool
) -> None:
    """queue.cancel of a running job: the worker's next heartbeat (or, listening, the
    andal_abort hint) cancels its async handler; the worker acknowledges (the job ends
    cancelled at once, not when the lease runs out) and a late complete is fenced."""
    started, cancelled = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}
    calls: list[int] = []

    async def forever(job: andal.Job) -> None:
        calls.append(job.attempt)
        seen["token"] = job.token
        started.set()
        try:
            await asyncio.sleep(300)
        except asyncio.CancelledError:
            seen["reason"] = job.abort_reason
            cancelled.set()
            raise

    job_id = andal.enqueue(conn, {}, "abort_async")
    # listening, a 60 s lease: the hint cancels it, not a beat (every 20 s), and the job ends
    # cancelled well before the lease runs out (the worker acknowledges)
    lease = 60 if listen else 6
    worker = andal.Worker(dsn, {"abort_async": forever}, lease=lease, poll=0.2, listen=listen)
    with running(worker):
        _cancel_when_running(conn, job_id, started)
        beats = worker.counts["heartbeats"]
        assert cancelled.wait(60 if not listen else 10), "the async handler was not cancelled"
        # by the first heartbeat that read the request (one in flight may have missed it)
        assert worker.counts["heartbeats"] - beats <= 2
        _ended_cancelled(conn, job_id)
        wait_for(lambda: worker.counts["cancelled"] == 1, timeout=10, what="the count")
    assert seen["reason"] == "aborted" and calls == [1]
    assert worker.counts["lease_lost"] == 0 and worker.counts["retried"] == 0
    with pytest.raises(psycopg.Error) as late:
        conn.execute("select queue.complete(%s, %s)", (job_id, seen["token"]))
    assert late.value.diag.sqlstate == "AN001"


def test_abort_is_seen_by_a_sync_handler_and_its_late_result_is_refused(
    dsn: str, conn: psycopg.Connection, clean: None
) -> None:
    started = threading.Event()
    seen: dict[str, Any] = {}

    def polite(job: andal.Job) -> str:
        started.set()
        wait_for(lambda: job.abort_requested, timeout=60, what="the abort flag")
        seen["reason"] = job.abort_reason
        with psycopg.connect(dsn, autocommit=True) as c:
            try:
                c.execute("select queue.complete(%s, %s)", (job.id, job.token))
            except psycopg.Error as exc:
                seen["complete"] = exc.diag.sqlstate
        return "finished anyway"  # the abort wins: the worker acknowledges it instead

    job_id = andal.enqueue(conn, {}, "abort_sync")
    worker = andal.Worker(dsn, {"abort_sync": polite}, lease=3, poll=0.2, listen=False)
    with running(worker):
        _cancel_when_running(conn, job_id, started)
        _ended_cancelled(conn, job_id)
        wait_for(lambda: worker.counts["cancelled"] == 1, timeout=10, what="the count")
    assert seen == {"reason": "aborted", "complete": "AN001"}
    assert worker.counts["completed"] == 0 and worker.counts["lease_lost"] == 0


def test_abort_after_the_handler_returned_is_acknowledged(
    dsn: str, conn: psycopg.Connection, clean: None
) -> None:
    """The worker never heard of the abort (no heartbeat, no listener): its completion is
    refused (the abort wins), and it acknowledges at once instead of letting the lease run out."""
    started, go = threading.Event(), threading.Event()

    def handler(job: andal.Job) -> str:
        started.set()
        assert go.wait(30)
        return "done"

    job_id = andal.enqueue(conn, {}, "abort_late")
    worker = andal.Worker(
        dsn, {"abort_late": handler}, lease=120, poll=0.2, listen=False, heartbeat=False
    )
    with running(worker):
        _cancel_when_running(conn, job_id, started)
        go.set()
        _ended_cancelled(conn, job_id)
        wait_for(lambda: worker.counts["cancelled"] == 1, timeout=10, what="the count")
    assert worker.counts["completed"] == 0 and worker.counts["lease_lost"] == 0


# --- wait -------------------------------------------------------------------------------------


def test_client_wait_returns_the_final_state_and_result(
    dsn: str, conn: psycopg.Connection, clean: None
) -> None:
    conn.execute("select queue.set_history(queue => 'w', retention => '1 hour')")
    client = andal.Client(dsn)
    job = client.enqueue({}, "w")
    assert job is not None
    got: list[Any] = []
    waiter = threading.Thread(target=lambda: got.append(client.wait(job, timeout=60, poll=30)))
    waiter.start()
    # the waiter is listening once its session watches the job
    wait_for(
        lambda: (
            conn.execute("select count(*) from queue.watches where job_id = %s", (job,)).fetchone()
            == (1,)
        ),
        what="the waiter watches the job",
    )
    claimed = conn.execute("select job_id, token from queue.claim('w', queues => '{w}')").fetchone()
    assert claimed is not None
    conn.execute("select queue.complete(%s, %s, result => '{\"answer\": 42}')", claimed)
    waiter.join(timeout=20)  # poll is 30 s: only the notification can wake it this soon
    assert not waiter.is_alive(), "the waiter was not woken by the completion"
    info = got[0]
    assert (info.state, info.result, info.job_id) == ("completed", {"answer": 42}, job)

    live = client.enqueue({}, "w")
    assert live is not None
    with pytest.raises(TimeoutError):
        client.wait(live, timeout=0.2)
    assert client.wait(987654321, timeout=1) is None  # andal never had it


# --- history -----------------------------------------------------------------------------


def history_size(conn: psycopg.Connection) -> tuple[int, int, int]:
    """(bytes, rows, partitions) of queue.history, every partition and index included."""
    row = conn.execute(
        "select coalesce(sum(pg_total_relation_size(relid)), 0)::bigint,"
        " (select count(*) from queue.history), count(*) filter (where isleaf)"
        " from pg_partition_tree('queue.history')"
    ).fetchone()
    assert row is not None
    return row


def churn(conn: psycopg.Connection, queue: str, n: int, done: list[tuple[Any, int]]) -> None:
    """n jobs through enqueue, claim and complete_many, 1,000 at a time; housekeeping after
    each batch (as often as the test's one-second partitions need). Appends (database time,
    jobs completed so far) to ``done`` after each batch."""
    for _ in range(n // 1000):
        enqueue(conn, queue, 1000)
        conn.execute(
            "with c as (select array_agg(job_id) as ids, array_agg(token) as toks"
            " from queue.claim('churn', queues => array[%s], batch => 1000))"
            " select count(*) from c, queue.complete_many(c.ids, c.toks)",
            (queue,),
        )
        conn.execute("select queue.maintain()")
        at = conn.execute("select clock_timestamp()").fetchone()
        assert at is not None
        done.append((at[0], (done[-1][1] if done else 0) + 1000))


def test_history_retention_keeps_the_table_flat(
    dsn: str, conn: psycopg.Connection, clean: None
) -> None:
    """200,000 jobs in 10 rounds, with one second of history in one-second partitions. After
    each round the table holds only the jobs that finished within the retention window
    (retention + two partition widths, on the database clock), and its size follows them,
    not the jobs ever run: passed partitions were dropped whole. In the end, once the last
    rows expired, housekeeping leaves the table empty."""
    # a history without partitions (earlier tests' would take the first rows: a row goes to
    # the partition that covers its expiry, whatever width that partition has)
    for (name,) in conn.execute(
        "select relid::regclass::text from pg_partition_tree('queue.history')"
        " where isleaf and relid <> 'queue.history_default'::regclass"
    ).fetchall():
        conn.execute(f"drop table {name}")
    conn.execute("select queue.configure_history(partition_width => '1 second')")
    conn.execute("select queue.set_history(queue => 'churn', retention => '1 second')")
    done: list[tuple[Any, int]] = []
    rounds: list[tuple[int, int, int, int]] = []  # bytes, rows, partitions, rows allowed
    for _ in range(10):
        churn(conn, "churn", 20_000, done)
        size, rows, parts = history_size(conn)
        now = done[-1][0]
        window = timedelta(seconds=1 + 2 * 1 + 0.5)  # retention, two widths, the measuring
        before = max((n for t, n in done if t < now - window), default=0)
        rounds.append((size, rows, parts, done[-1][1] - before))
    assert done[-1][1] == 200_000
    per_row = rounds[0][0] / max(rounds[0][1], 1)
    for size, rows, parts, allowed in rounds:
        assert 0 < rows <= allowed, f"rows beyond the retention window were kept: {rounds}"
        assert size <= 2 * per_row * allowed + parts * 65536, f"history grew: {rounds}"
        assert parts <= 10, f"partitions piled up: {rounds}"
    # the last rows expire; housekeeping drops their partitions (retried: it gives up on a
    # partition another session holds, autovacuum for one)
    expired = conn.execute("select clock_timestamp() + interval '2.1 seconds'").fetchone()
    wait_for(
        lambda: conn.execute("select clock_timestamp() > %s", expired).fetchone() == (True,),
        what="the last rows to expire",
    )

    def emptied() -> bool:
        conn.execute("select queue.maintain()")
        return conn.execute("select count(*) from queue.history").fetchone() == (0,)

    wait_for(emptied, what="housekeeping to drop every expired partition")
    assert conn.execute("select count(*) from queue.history_default").fetchone() == (0,)


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
