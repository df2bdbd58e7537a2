"""Timeouts on the real clock: a handler that keeps heartbeating past its job's timeout is
fenced at the deadline (heartbeats stop extending the lease, a late complete gets AN001),
and the attempt fails with reason ``timeout`` in the job's error history."""

from __future__ import annotations

import time

import psycopg
import pytest
from conftest import wait_for


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
