"""Handler module of the reliability worker processes: ``andal worker reliability.handlers``
(with ``tests/`` on PYTHONPATH and DATABASE_URL set).

Each handler is wrapped so that every attempt leaves its history in ``andal_check``:

* ``rel`` (leased): a start row before the work (with the job's claimed_at and available_at
  as the claim left them), an end row after it, and the result ``{"token", "worker"}`` that
  ``keep_results`` stores in the completing transaction;
* ``rel_tx`` (transactional): start row, effect row and end row on the job's own connection,
  so they commit (or roll back) with the completion.

The driver's outcome events (``completed``, ``retried``, ``dead``, ``released``,
``lease_lost``, ...) are turned into outcome rows by a filter on the ``andal`` logger, so
run the worker with ``--log-level debug`` (``completed`` is a debug line).

Payload knobs: ``ms`` (work time in milliseconds), ``fail`` (always raise), ``fail_first``
(raise on attempt 1), ``hold`` (seconds: a long job, kept alive by heartbeats).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

import psycopg

import andal

try:
    from reliability.history import ProcessLog
except ImportError:  # loaded by file path
    from history import ProcessLog  # type: ignore[no-redef]

registry = andal.Registry()
LOG = ProcessLog()
WORKER = {"name": f"pid{os.getpid()}"}
_tokens: dict[tuple[int, int], Any] = {}
_tokens_lock = threading.Lock()

#: driver event -> outcome row; accepted outcomes are completed, retried, dead, released.
_OUTCOMES = {
    "completed": "completed",
    "retried": "retried",
    "dead": "dead",
    "released": "released",
    "lease_lost": "lease_lost",
    "outcome_discarded": "discarded",
    "rolled_back": "rolled_back",
}


class OutcomeBridge(logging.Filter):
    """Turns the driver's structured events into outcome rows (never filters anything out)."""

    def filter(self, record: logging.LogRecord) -> bool:
        name = record.msg
        if name == "worker_started":
            WORKER["name"] = getattr(record, "worker", WORKER["name"])
            return True
        outcome = _OUTCOMES.get(name)  # type: ignore[arg-type]
        if outcome is None:
            return True
        job_id, attempt = getattr(record, "job_id", None), getattr(record, "attempt", None)
        with _tokens_lock:
            if outcome in ("lease_lost",):
                token = _tokens.get((job_id, attempt))
            else:
                token = _tokens.pop((job_id, attempt), None)
        if token is None:
            return True  # a run released before its handler started: no attempt on record
        detail = getattr(record, "detected_by", None) or getattr(record, "reason", None)
        extra = getattr(record, "outcome", None)
        if extra:
            detail = f"{detail}: {extra}"
        LOG.outcome(job_id, attempt, token, WORKER["name"], outcome, str(detail or ""))
        return True


logging.getLogger("andal").addFilter(OutcomeBridge())


def _behave(job: andal.Job) -> None:
    payload: dict[str, Any] = job.payload if isinstance(job.payload, dict) else {}
    if payload.get("ms"):
        time.sleep(float(payload["ms"]) / 1000)
    if payload.get("hold"):
        time.sleep(float(payload["hold"]))
    if payload.get("fail"):
        raise RuntimeError(f"always fails: job {job.id} attempt {job.attempt}")
    if payload.get("fail_first") and job.attempt == 1:
        raise RuntimeError(f"first attempt fails: job {job.id}")


@registry.handler("rel")
def rel(job: andal.Job) -> dict[str, str]:
    worker = WORKER["name"]
    with _tokens_lock:
        _tokens[(job.id, job.attempt)] = job.token
    LOG.start(job, worker)
    try:
        _behave(job)
    except Exception as exc:
        LOG.end(job, worker, "error", str(exc)[:200])
        raise
    LOG.end(job, worker, "ok")
    return {"token": str(job.token), "worker": worker}


@registry.handler("rel_tx", transactional=True)
def rel_tx(job: andal.Job, conn: psycopg.Connection) -> dict[str, str]:
    worker = WORKER["name"]
    with _tokens_lock:
        _tokens[(job.id, job.attempt)] = job.token
    row = (job.id, job.attempt, job.token, worker)
    conn.execute(
        "insert into andal_check.attempt_log (job_id, attempt, token, worker, queue, category,"
        " event, claimed_at, available_at, lease_expires_at)"
        " select %s, %s, %s, %s, j.queue, j.category, 'start', j.claimed_at, j.available_at,"
        " j.lease_expires_at from queue.jobs as j where j.id = %s",
        (*row, job.id),
    )
    _behave(job)
    conn.execute(
        "insert into andal_check.effects (job_id, token, worker) values (%s, %s, %s)",
        (job.id, job.token, worker),
    )
    conn.execute(
        "insert into andal_check.attempt_log (job_id, attempt, token, worker, event, outcome)"
        " values (%s, %s, %s, %s, 'end', 'ok')",
        row,
    )
    return {"token": str(job.token), "worker": worker}
