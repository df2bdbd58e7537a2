"""Looking a job up, and waiting for it to finish: ``job(conn, id)`` and ``wait(dsn, id, …)``.

Both read ``queue.job`` (docs/sql-api.md); ``wait`` also asks ``queue.watch`` for a NOTIFY on
``andal_done`` when the job ends, and re-reads the job on each notification, and at least
every ``poll`` seconds (a notification is a hint: a lost one only delays the answer).
``Client.job`` and ``Client.wait`` are the same on a client's database.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from . import statements as sql
from .errors import translated

#: The job states, in a job's order of life: the vocabulary of ``queue.states()`` (its
#: ``state`` column, tested equal to it), the one of ``queue.status``, ``queue.stats``,
#: the metrics and ``andal status``.
STATES = ("waiting", "scheduled", "ready", "running", "failed", "completed", "dead",
          "cancelled")  # fmt: skip
#: The names ``queue.job`` and ``queue.jobs_by`` (so ``JobInfo.state``) give the states that
#: they name otherwise (``queue.states()``'s ``job_state``): kept for compatibility.
JOB_STATE = {"ready": "pending"}
#: The states in which a job is finished.
FINAL = frozenset({"completed", "dead", "cancelled"})


@dataclass(frozen=True)
class JobInfo:
    """One row of ``queue.job``: a job as andal remembers it."""

    job_id: int
    state: str
    queue: str
    category: str | None
    priority: int | None
    attempts: int | None
    max_attempts: int | None
    enqueued_at: datetime | None
    available_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    worker: str | None
    lease_expires_at: datetime | None
    abort_requested_at: datetime | None
    result: Any
    errors: list[Any] | None
    kept_until: datetime | None

    @property
    def finished(self) -> bool:
        return self.state in FINAL


@dataclass(frozen=True)
class Parent:
    """One row of ``queue.parent_results``: a parent of a job (``after``), its state as
    ``queue.job`` tells it (None when andal no longer remembers it) and its result (kept for
    its children while one of them is live)."""

    job_id: int
    state: str | None
    result: Any


@dataclass(frozen=True)
class JobOrigin:
    """The row of ``queue.job_origin``: the schedule and tick that enqueued a job, and the
    cache key it refills (each None when it has none)."""

    schedule: str | None
    tick: datetime | None
    cache_key: str | None


@dataclass(frozen=True)
class Child:
    """One row of ``queue.child_jobs``: a child of a job, its state, and whether it still
    waits for this job (``waiting_for``)."""

    job_id: int
    state: str | None
    waiting_for: bool


def parents(conn: psycopg.Connection, job_id: int) -> list[Parent]:
    """The parents of a job, in id order (``queue.parent_results``); empty when it has none."""
    with translated():
        rows = conn.execute(sql.PARENT_RESULTS, {"job_id": job_id}).fetchall()
    return [Parent(*r) for r in rows]


def children(conn: psycopg.Connection, job_id: int) -> list[Child]:
    """The children of a job, in id order (``queue.child_jobs``); empty when it has none."""
    with translated():
        rows = conn.execute(sql.CHILD_JOBS, {"job_id": job_id}).fetchall()
    return [Child(*r) for r in rows]


def job(conn: psycopg.Connection, job_id: int) -> JobInfo | None:
    """The job as andal remembers it; None when it does not (it never existed, or it
    completed over an hour ago in a queue that keeps no history, or its history expired)."""
    with translated():
        row = conn.execute(sql.JOB, {"job_id": job_id}).fetchone()
    return None if row is None else JobInfo(*row)


def wait(dsn: str, job_id: int, timeout: float, *, poll: float = 1.0) -> JobInfo | None:
    """Wait up to ``timeout`` seconds for the job to finish; returns it finished (``state``
    completed, dead or cancelled, with its ``result`` when kept), or None when andal does not
    remember it (see ``job``: with no history, a job that completed is forgotten at once).
    Raises TimeoutError when the job is still live at the deadline. One connection of its own
    (LISTEN needs a session: not through a transaction-mode pooler)."""
    if timeout < 0 or poll <= 0:
        raise ValueError("timeout must not be negative and poll must be positive")
    deadline = time.monotonic() + timeout
    with psycopg.connect(dsn, autocommit=True) as conn, translated():
        conn.execute(sql.LISTEN_DONE)
        conn.execute(sql.WATCH, {"job_id": job_id})
        while True:
            info = job(conn, job_id)
            if info is None or info.finished:
                return info
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"job {job_id} is still {info.state} after {timeout:g}s")
            for note in conn.notifies(timeout=min(left, poll)):
                # a locked-down database sends no ids: any notification may be ours
                if note.payload in (str(job_id), ""):
                    break


async def await_job(dsn: str, job_id: int, timeout: float, *, poll: float = 1.0) -> JobInfo | None:
    """``wait`` on an ``AsyncConnection`` of its own, for asyncio code (``AsyncClient.wait``)."""
    if timeout < 0 or poll <= 0:
        raise ValueError("timeout must not be negative and poll must be positive")
    deadline = time.monotonic() + timeout
    conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    async with conn:
        with translated():
            await conn.execute(sql.LISTEN_DONE)
            await conn.execute(sql.WATCH, {"job_id": job_id})
            while True:
                row = await (await conn.execute(sql.JOB, {"job_id": job_id})).fetchone()
                info = None if row is None else JobInfo(*row)
                if info is None or info.finished:
                    return info
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"job {job_id} is still {info.state} after {timeout:g}s")
                async for note in conn.notifies(timeout=min(left, poll)):
                    if note.payload in (str(job_id), ""):
                        break
