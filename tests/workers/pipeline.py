"""Handlers of a 3-stage pipeline (``split`` → ``work`` × n → ``merge``), for the workflow
tests: every run is a row of ``runs`` (job, attempt, pid, queue), written when the run
starts; ``work`` sleeps ``sleep`` seconds (so a kill lands mid-stage) and hands on what it
read from its parent; ``merge`` reads every parent's result (``Job.parents()``).
The tables are ``recording.make_tables``'s.
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


def _conn() -> psycopg.Connection:
    conn = getattr(_local, "conn", None)
    if conn is None or conn.closed or conn.broken:
        conn = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
        _local.conn = conn
    return conn


def _record(job: andal.Job) -> None:
    _conn().execute(
        "insert into runs (job_id, attempt, pid, queue) values (%s, %s, %s, %s)",
        (job.id, job.attempt, os.getpid(), job.queue),
    )


@registry.handler("split")
def split(job: andal.Job) -> dict[str, Any]:
    _record(job)
    return {"items": job.payload["items"]}


@registry.handler("work")
def work(job: andal.Job) -> dict[str, Any]:
    _record(job)
    time.sleep(float(job.payload.get("sleep", 0)))
    (parent,) = job.parents()
    return {"i": job.payload["i"], "of": parent.result["items"]}


@registry.handler("merge")
def merge(job: andal.Job) -> dict[str, Any]:
    _record(job)
    parents = job.parents()
    return {
        "parents": len(parents),
        "completed": sum(p.state == "completed" for p in parents),
        "sum": sum(p.result["i"] for p in parents if p.result),
    }
