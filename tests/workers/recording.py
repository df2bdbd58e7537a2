"""Handlers that leave a trace: every leased run is a row of ``runs`` (with the job's error
history at that moment), every transactional
completion a row of ``done`` (unique: a second commit of one job would fail).

The tables are made by ``make_tables``. Payload knobs: ``sleep`` (seconds), ``fail_first``
(raise on attempt 1), ``dead`` (raise ``andal.Fail``).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import psycopg

import andal

registry = andal.Registry()
_local = threading.local()

TABLES = """
create table if not exists runs (
    job_id bigint not null,
    attempt int not null,
    pid int not null,
    queue text not null,
    started_at timestamptz not null default clock_timestamp(),
    errors jsonb  -- the job's error history when this run started (expired leases included)
);
create table if not exists done (
    job_id bigint primary key,
    pid int not null,
    done_at timestamptz not null default clock_timestamp()
);
"""


def make_tables(conn: psycopg.Connection) -> None:
    conn.execute(TABLES)
    conn.execute("truncate runs, done")


def _conn() -> psycopg.Connection:
    conn = getattr(_local, "conn", None)
    if conn is None or conn.closed or conn.broken:
        conn = psycopg.connect(
            os.environ["DATABASE_URL"], autocommit=True, application_name="andal-test-handler"
        )
        _local.conn = conn
    return conn


def _behave(job: andal.Job) -> None:
    payload: dict[str, Any] = job.payload or {}
    if payload.get("sleep"):
        time.sleep(float(payload["sleep"]))
    if payload.get("fail_first") and job.attempt == 1:
        raise RuntimeError("first attempt fails")
    if payload.get("dead"):
        raise andal.Fail("told to die")


@registry.handler("leased")
def leased(job: andal.Job) -> dict[str, int]:
    # the job's error history tells which worker lost a lease and when it was taken back
    _conn().execute(
        "insert into runs (job_id, attempt, pid, queue, errors)"
        " select %(id)s, %(attempt)s, %(pid)s, %(queue)s,"
        " (select j.errors from queue.jobs as j where j.id = %(id)s)",
        {"id": job.id, "attempt": job.attempt, "pid": os.getpid(), "queue": job.queue},
    )
    _behave(job)
    return {"pid": os.getpid()}


@registry.handler("tx", transactional=True)
def tx(job: andal.Job, conn: psycopg.Connection) -> None:
    _behave(job)
    conn.execute("insert into done (job_id, pid) values (%s, %s)", (job.id, os.getpid()))
