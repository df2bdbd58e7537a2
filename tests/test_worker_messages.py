"""What a worker writes into a job's error: names a reader can look up, no internal module
path (a cancelled job's error does not name ``andal.handlers``, where it is defined)."""

from __future__ import annotations

import threading

import psycopg
from conftest import wait_for
from workers.inproc import running

import andal


def test_a_cancelled_running_job_says_it_was_cancelled(
    dsn: str, conn: psycopg.Connection, clean: None
) -> None:
    started = threading.Event()

    def busy(job: andal.Job) -> None:
        started.set()
        wait_for(lambda: job.abort_requested, timeout=60, what="the abort request")
        job.check()  # raises andal.JobInterrupted: the handler stops the usual way

    job_id = andal.enqueue(conn, {}, "msg-cancel")
    worker = andal.Worker(dsn, {"msg-cancel": busy}, poll=0.2)
    with running(worker):
        assert started.wait(60)
        conn.execute("select queue.cancel(job_id => %s)", (job_id,))
        wait_for(
            lambda: conn.execute(
                "select 1 from queue.dead_letters where job_id = %s", (job_id,)
            ).fetchone(),
            timeout=60,
            what="the cancelled job's dead letter",
        )
    reason, error = conn.execute(
        "select reason, last_error from queue.dead_letters where job_id = %s", (job_id,)
    ).fetchone()
    assert reason == "cancelled"
    assert error == "aborted: queue.cancel asked the running job to stop", error
    assert "andal.worker" not in error and "andal.handlers" not in error


def test_job_interrupted_has_its_public_name() -> None:
    import traceback

    exc = andal.JobInterrupted(7, "timeout")
    line = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    assert line == "andal.JobInterrupted: job 7: its timeout passed"


def test_log_lines_pretty_on_a_terminal_json_otherwise() -> None:
    import io
    import json
    import logging

    from andal import logs

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    driver = logging.getLogger("psycopg")
    saved = logs.log.handlers[:], logs.log.level, logs.log.propagate
    saved_driver = driver.handlers[:], driver.level, driver.propagate
    try:
        for stream, fmt in ((Tty(), None), (io.StringIO(), "pretty")):
            logs.setup(logging.INFO, stream=stream, fmt=fmt)
            logs.event("dead", logging.WARNING, job_id=7, queue="mail\x1b[2J", error="no luck")
            line = stream.getvalue().strip()
            assert line.endswith('warning dead job_id=7 queue=mail?[2J error="no luck"'), line
        plain = io.StringIO()
        logs.setup(logging.INFO, stream=plain, fmt=None)  # not a terminal: JSON
        logs.event("dead", logging.WARNING, job_id=7)
        assert json.loads(plain.getvalue())["job_id"] == 7
    finally:
        logs.log.handlers[:], logs.log.level, logs.log.propagate = saved
        driver.handlers[:], driver.level, driver.propagate = saved_driver
