"""Stopping a worker process, and living without the LISTEN connection."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import psycopg
from conftest import wait_for
from workers.inproc import running
from workers.procs import spawn_worker, stop_worker
from workers.recording import make_tables

import andal


def count(conn: psycopg.Connection, query: str) -> int:
    return conn.execute(query).fetchone()[0]


def running_jobs(conn: psycopg.Connection) -> int:
    return count(conn, "select count(*) from queue.jobs where status = 'running'")


def test_graceful_stop_finishes_running_jobs(
    dsn: str, conn: psycopg.Connection, clean: None, tmp_path: Path
) -> None:
    make_tables(conn)
    andal.enqueue_many(conn, [{"sleep": 1.0}] * 12, "leased")
    log = tmp_path / "w.log"
    proc = spawn_worker(dsn, log, "--concurrency", "4", "--poll", "0.2")
    wait_for(lambda: count(conn, "select count(*) from runs") >= 4, timeout=20, what="4 runs")
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0, log.read_text()[-3000:]
    assert time.monotonic() - started < 5
    assert running_jobs(conn) == 0
    ran = {r[0] for r in conn.execute("select job_id from runs")}
    still = conn.execute("select id, attempt from queue.jobs").fetchall()
    # what ran was completed; what did not run is pending with its attempt unspent
    assert ran.isdisjoint(r[0] for r in still)
    assert len(ran) + len(still) == 12 and all(attempt == 0 for _, attempt in still)
    text = log.read_text()
    assert '"event": "worker_stopped"' in text and '"exit_code": 0' in text


def test_grace_period_over_releases_the_jobs(
    dsn: str, conn: psycopg.Connection, clean: None, tmp_path: Path
) -> None:
    make_tables(conn)
    andal.enqueue_many(conn, [{"sleep": 60}] * 3, "leased")
    log = tmp_path / "w.log"
    proc = spawn_worker(dsn, log, "--concurrency", "2", "--grace", "1", "--poll", "0.2")
    wait_for(lambda: count(conn, "select count(*) from runs") == 2, timeout=20, what="2 runs")
    proc.send_signal(signal.SIGINT)
    assert proc.wait(10) == 1
    assert running_jobs(conn) == 0
    attempts = [r[0] for r in conn.execute("select attempt from queue.jobs")]
    assert attempts == [0, 0, 0]
    assert log.read_text().count('"event": "released"') == 2


def test_second_signal_exits_at_once(
    dsn: str, conn: psycopg.Connection, clean: None, tmp_path: Path
) -> None:
    make_tables(conn)
    andal.enqueue(conn, {"sleep": 60}, "leased")
    log = tmp_path / "w.log"
    proc = spawn_worker(dsn, log, "--concurrency", "1", "--grace", "60", "--poll", "0.2")
    wait_for(lambda: count(conn, "select count(*) from runs") == 1, timeout=20, what="the run")
    proc.send_signal(signal.SIGTERM)
    wait_for(lambda: "worker_stopping" in log.read_text(), timeout=10, what="the stop")
    assert proc.poll() is None  # still waiting for the handler
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(3) == 128 + signal.SIGTERM


def test_killed_listener_still_lets_jobs_through(
    dsn: str, conn: psycopg.Connection, clean: None, tmp_path: Path
) -> None:
    make_tables(conn)
    log = tmp_path / "w.log"
    # a long poll interval: only the NOTIFY hint (or the listener's reconnect) is fast
    proc = spawn_worker(dsn, log, "--concurrency", "2", "--poll", "30")
    try:
        for round_ in range(3):
            wait_for(
                lambda: count(
                    conn,
                    "select count(*) from pg_stat_activity where application_name like '% listen'"
                    " and query = 'listen andal_jobs' and datname = current_database()",
                ),
                timeout=10,
                what="the listener",
            )
            killed = count(
                conn,
                "select count(pg_terminate_backend(pid)) from pg_stat_activity"
                " where application_name like 'andal % listen' and datname = current_database()",
            )
            assert killed == 1
            job_id = andal.enqueue(conn, {"round": round_}, "leased")
            wait_for(
                lambda job_id=job_id: count(
                    conn, f"select count(*) from runs where job_id = {job_id}"
                ),
                timeout=5,
                what="the job to run",
            )
    finally:
        assert stop_worker(proc) == 0
    assert log.read_text().count('"event": "listener_lost"') == 3


def test_polling_alone_runs_jobs(dsn: str, conn: psycopg.Connection, clean: None) -> None:
    """Without any LISTEN connection, jobs still run within the poll interval."""
    done: list[int] = []
    worker = andal.Worker(dsn, {"plain": lambda job: done.append(job.id)}, poll=0.3, listen=False)
    with running(worker):
        ids = andal.enqueue_many(conn, [{}] * 5, "plain")
        wait_for(lambda: sorted(done) == sorted(ids), timeout=5, what="the jobs")
    assert worker.counts["listener_lost"] == 0
