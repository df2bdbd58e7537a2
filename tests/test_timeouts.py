"""Timeouts on the real clock: a handler that keeps heartbeating past its job's timeout is
fenced at the deadline (heartbeats stop extending the lease, a late complete gets AN001),
and the attempt fails with reason ``timeout`` in the job's error history.

With the Python worker: an ``async def`` handler that sleeps past its timeout is cancelled;
a plain one is told through its job (``abort_requested``, ``check()``) and whatever it writes
through andal after the deadline is refused; the worker sends nothing for the attempt (no
retry storm, one ``timed_out`` line at info) and the take-back records ``timeout``."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from datetime import timedelta

import psycopg
import pytest
from conftest import wait_for
from workers.inproc import running

import andal


def test_heartbeats_stop_at_the_deadline_and_a_late_complete_is_fenced(
    dsn: str, clean: None
) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select queue.configure_queue('slow', max_attempts => 2)")
        c.execute("select queue.enqueue('{}', queue => 'slow', timeout => '2 seconds')")
        job_id, token, deadline = c.execute(
            "select job_id, token, deadline from queue.claim(worker => 'w', queues => '{slow}',"
            " batch => 1, lease => '1 second', deadlines => true)"
        ).fetchone()
        assert deadline is not None
        expiries = []
        # the handler runs on past its timeout, heartbeating every 0.3 s as a driver would
        started = time.monotonic()
        with pytest.raises(psycopg.Error) as lost:
            while time.monotonic() - started < 10:
                expiries.append(
                    c.execute(
                        "select queue.heartbeat(%s, %s, extend => '1 second')", (job_id, token)
                    ).fetchone()[0]
                )
                time.sleep(0.3)
        assert lost.value.diag.sqlstate == "AN001", "a heartbeat after the deadline is fenced"
        assert expiries and max(expiries) <= deadline, "no heartbeat extends past the deadline"
        assert expiries[-1] == deadline
        with pytest.raises(psycopg.Error) as late:
            c.execute("select queue.complete(%s, %s)", (job_id, token))
        assert late.value.diag.sqlstate == "AN001"
        assert "timeout" in (late.value.diag.message_detail or "")
        c.execute("select queue.maintain()")
        errors = wait_for(
            lambda: c.execute(
                "select errors from queue.jobs where id = %s and status = 'pending'", (job_id,)
            ).fetchone(),
            timeout=10,
            what="the attempt taken back",
        )
        assert errors[0][-1]["reason"] == "timeout"


def _job_row(conn: psycopg.Connection, job_id: int) -> tuple | None:
    return conn.execute(
        "select state, attempts, errors from queue.job(job_id => %s)", (job_id,)
    ).fetchone()


def _timed_out_once(caplog: pytest.LogCaptureFixture, job_id: int) -> None:
    """One ``timed_out`` line at info for the job; no lease-lost warning, no failure sent."""
    lines = [r for r in caplog.records if getattr(r, "job_id", None) == job_id]
    assert [r.levelno for r in lines if r.msg == "timed_out"] == [logging.INFO]
    assert not [r for r in lines if r.msg in ("lease_lost", "retried", "dead", "fail_failed")]


def test_async_handler_is_cancelled_at_its_timeout(
    dsn: str, conn: psycopg.Connection, clean: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="andal")
    conn.execute("select queue.configure_queue('atimeout', max_attempts => 1)")
    seen: dict[str, object] = {}
    cancelled = threading.Event()

    async def slow(job: andal.Job) -> str:
        seen["deadline"], seen["token"] = job.deadline, job.token
        try:
            await asyncio.sleep(120)
        except asyncio.CancelledError:
            seen["reason"] = job.abort_reason
            cancelled.set()
            raise
        return "never"

    job_id = conn.execute(
        "select queue.enqueue('{}', queue => 'atimeout', timeout => '1 second')"
    ).fetchone()[0]
    worker = andal.Worker(dsn, {"atimeout": slow}, lease=30, poll=0.2)
    with running(worker):
        assert cancelled.wait(30), "the handler was not cancelled at its timeout"
        row = wait_for(
            lambda: (r := _job_row(conn, job_id)) and r[0] == "dead" and r,
            timeout=30,
            what="the take-back to end the attempt",
        )
    assert seen["reason"] == "timeout"
    assert seen["deadline"] is not None
    state, attempts, errors = row  # type: ignore[misc]
    assert attempts == 1 and errors[-1]["reason"] == "timeout"
    assert errors[-1]["error"].startswith("timeout:")
    assert len(errors) == 1, "the worker sent no failure of its own"
    assert worker.counts["timed_out"] == 1 and worker.counts["lease_lost"] == 0
    _timed_out_once(caplog, job_id)
    with pytest.raises(psycopg.Error) as late:
        conn.execute("select queue.complete(%s, %s)", (job_id, seen["token"]))
    assert late.value.diag.sqlstate == "AN001", "a late complete is fenced"


def test_sync_handler_is_told_and_fenced_at_its_timeout(
    dsn: str, conn: psycopg.Connection, clean: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="andal")
    conn.execute("select queue.configure_queue('stimeout', max_attempts => 2)")
    seen: dict[str, object] = {}
    done = threading.Event()

    def slow(job: andal.Job) -> str:
        if job.attempt > 1:  # the retry reads the first attempt's error history
            seen["errors"] = conn.execute(
                "select errors from queue.jobs where id = %s", (job.id,)
            ).fetchone()[0]
            return "second attempt"
        seen["deadline"] = job.deadline
        seen["before"] = job.abort_requested
        wait_for(lambda: job.abort_requested, timeout=60, what="the flag at the deadline")
        seen["reason"] = job.abort_reason
        try:
            job.check()
        except andal.JobInterrupted as exc:
            seen["check"] = exc.reason
        # writes through andal on behalf of the attempt are refused by the fence
        with psycopg.connect(dsn, autocommit=True) as c:
            for statement in (
                "select cache.put(key => 'k', value => '1', job_id => %s, token => %s)",
                "select queue.complete(job_id => %s, token => %s)",
            ):
                try:
                    c.execute(statement, (job.id, job.token))
                    seen.setdefault("refused", []).append(None)  # type: ignore[union-attr]
                except psycopg.Error as exc:
                    seen.setdefault("refused", []).append(exc.diag.sqlstate)  # type: ignore[union-attr]
        done.set()
        return "too late"  # the worker discards it: nothing is sent

    before = conn.execute("select now()").fetchone()[0]
    job_id = conn.execute(
        "select queue.enqueue('{}', queue => 'stimeout', timeout => '1 second')"
    ).fetchone()[0]
    worker = andal.Worker(dsn, {"stimeout": slow}, lease=30, poll=0.2)
    with running(worker):
        assert done.wait(60), "the handler was not told of its timeout"
        wait_for(lambda: worker.counts["completed"] == 1, timeout=60, what="the retry")
    assert seen["before"] is False and seen["reason"] == "timeout" and seen["check"] == "timeout"
    deadline = seen["deadline"]
    assert deadline is not None and timedelta(0) < deadline - before < timedelta(seconds=30)  # type: ignore[operator]
    assert seen["refused"] == ["AN001", "AN001"]
    errors = seen["errors"]
    assert [e["reason"] for e in errors] == ["timeout"], "one failure: the take-back's"  # type: ignore[attr-defined]
    assert worker.counts["timed_out"] == 1 and worker.counts["lease_lost"] == 0
    assert worker.counts["discarded"] == 1
    _timed_out_once(caplog, job_id)


def test_a_retry_claimed_while_the_timed_out_handler_still_runs_keeps_its_lease(
    dsn: str, conn: psycopg.Connection, clean: None
) -> None:
    """A plain handler that ignores its timeout holds its slot; the retry of its job, claimed
    by the same worker meanwhile, is the job held from then on: heartbeated for its whole run
    (longer than its lease) even after the first handler returns."""
    conn.execute(
        "select queue.configure_queue('ignores', timeout => '6 seconds', max_attempts => 2,"
        " backoff_base => '0.1 seconds')"
    )
    second_started, first_returned = threading.Event(), threading.Event()

    def handler(job: andal.Job) -> str:
        if job.attempt == 1:
            assert second_started.wait(60), "the retry did not start"
            first_returned.set()
            return "ignored the timeout"
        second_started.set()
        assert first_returned.wait(60)
        time.sleep(2.5)  # the work: past its 1 s lease, so the heartbeats must reach it
        return "done"

    job_id = conn.execute("select queue.enqueue('{}', queue => 'ignores')").fetchone()[0]
    worker = andal.Worker(dsn, {"ignores": handler}, lease=1, poll=0.2, concurrency=2)
    with running(worker):
        wait_for(lambda: worker.counts["completed"] == 1, timeout=60, what="the retry")
    assert worker.counts["timed_out"] == 1 and worker.counts["lease_lost"] == 0
    assert conn.execute("select count(*) from queue.jobs where id = %s", (job_id,)).fetchone() == (
        0,
    )
