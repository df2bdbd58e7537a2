"""Worker identity by registration: a running worker registers itself in the database, is
listed once by ``queue.workers()`` whatever the length of its name, shows its slots, and is
gone when it stops; a session that merely calls itself ``andal <something>`` is no worker.
And a worker whose claim found only a delayed job sleeps until that job is due, not for its
whole poll interval.
"""

from __future__ import annotations

import threading
import time

import psycopg
from conftest import wait_for
from workers.inproc import running

import andal

#: the driver's default name on a host with a long name (cut at 40 characters): the listen
#: session's name, 'andal <name> listen', is 66 bytes, which PostgreSQL cuts to 63
LONG_NAME = "h" * 40 + ":4242:abcdef"


def workers(conn: psycopg.Connection) -> dict[str, tuple[int, int]]:
    rows = conn.execute("select worker, running, connections from queue.workers()").fetchall()
    return {w: (running, connections) for w, running, connections in rows}


def test_a_worker_with_a_long_name_is_listed_once_with_its_slots(
    dsn: str, conn: psycopg.Connection, clean: None
) -> None:
    gate = threading.Event()
    worker = andal.Worker(
        dsn, {"reg": lambda job: gate.wait(30)}, name=LONG_NAME, concurrency=3, poll=0.2
    )
    with psycopg.connect(dsn, application_name="andal impostor") as impostor:
        with running(worker):
            andal.enqueue(conn, {}, "reg")
            # its pool session and its listen session (the cut name) are its own
            wait_for(
                lambda: (
                    workers(conn).get(LONG_NAME, (0, 0))[0] == 1
                    and workers(conn)[LONG_NAME][1] >= 2
                ),
                timeout=30,
                what="the worker listed with its job and sessions",
            )
            listed = workers(conn)
            assert [w for w in listed if w.startswith("hhhh")] == [LONG_NAME], listed
            assert "impostor" not in listed, "a session named like a worker is no worker"
            row = conn.execute(
                "select slots, busy, queues, pid from queue.registered_workers() where worker = %s",
                (LONG_NAME,),
            ).fetchone()
            assert row is not None and row[:3] == (3, 1, ["reg"]) and row[3] > 0
            gate.set()
        assert impostor.info.backend_pid > 0
    assert LONG_NAME not in workers(conn), "a stopped worker unregisters"
    registered = conn.execute("select count(*) from queue.registered_workers()").fetchone()[0]
    assert registered == 0


def test_an_idle_worker_wakes_when_a_delayed_job_is_due(
    dsn: str, conn: psycopg.Connection, clean: None
) -> None:
    """A delayed job sends no notification: a worker deep in its idle pause (here it grows
    to the poll interval, 120 s, at its first empty claim) used to find it only at its next
    poll; it now sleeps no longer than queue.next_available says."""
    done = threading.Event()
    andal.enqueue(conn, {}, "later", delay=3)
    worker = andal.Worker(dsn, {"later": lambda job: done.set()}, poll=120, listen=False)
    worker.sources[0].leased_dry.step = 120.0  # as after minutes without work
    started = time.monotonic()
    with running(worker):
        assert done.wait(60), "the delayed job was not picked up within 60 s (poll: 120 s)"
    assert time.monotonic() - started >= 2.5, "not before it was due"
