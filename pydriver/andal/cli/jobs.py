"""``andal job``, ``andal cancel``, ``andal pause`` and ``andal resume``: one job, one queue.

Each reads or calls one SQL function (``queue.job``, ``queue.cancel``, ``queue.pause``,
``queue.resume``); the rules are the database's. ``andal.cli`` registers them with
``add_commands``, handing over its ``connect`` and its error type (so that ``python -m
andal.cli``, whose module is ``__main__``, catches what they raise).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from functools import partial
from typing import Any

import psycopg

from .. import statements as sql
from .base import plain
from .fmt import json_row

#: The columns of queue.job, in order.
JOB_COLUMNS = (
    "job_id", "state", "queue", "category", "priority", "attempts", "max_attempts",
    "enqueued_at", "available_at", "started_at", "finished_at", "worker", "lease_expires_at",
    "abort_requested_at", "result", "errors", "kept_until",
)  # fmt: skip


Connect = Callable[[str], AbstractContextManager[psycopg.Connection]]
#: Exit code of a request the database refused (as ``andal.cli``).
EXIT_SQL = 1


def cmd_job(args: argparse.Namespace, connect: Connect, error: type[Exception]) -> int:
    with connect(args.dsn) as conn:
        row = conn.execute(sql.JOB, {"job_id": args.id}).fetchone()
        links = _workflow(conn, args.id)
    if row is None:
        raise error(
            f"andal does not remember job {args.id}: it never existed, or it completed over an"
            " hour ago in a queue that keeps no history (andal history set)",
            EXIT_SQL,
        )
    job = dict(zip(JOB_COLUMNS, row, strict=True)) | links
    if args.json:
        print(json.dumps(json_row(job), default=str))
        return 0
    for key, value in job.items():
        if value is None or key == "errors":
            continue
        print(f"{key:<19} {plain(_text(value))}")
    for entry in job["errors"] or []:
        first = (str(entry.get("error", "")).strip().splitlines() or [""])[-1]
        attempt, at = plain(entry.get("attempt")), plain(entry.get("at"))
        print(f"{'error':<19} attempt {attempt} at {at}: {plain(first)}")
    return 0


def _workflow(conn: psycopg.Connection, job_id: int) -> dict[str, str]:
    """A workflow's job: its parents and children (``id:state`` each), when it has any."""
    links = {}
    for key, query in (("parents", sql.PARENT_RESULTS), ("children", sql.CHILD_JOBS)):
        rows = conn.execute(query, {"job_id": job_id}).fetchall()
        if rows:
            links[key] = " ".join(f"{r[0]}:{r[1] or 'forgotten'}" for r in rows)
    return links


def _text(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def cmd_cancel(args: argparse.Namespace, connect: Connect, error: type[Exception]) -> int:
    with connect(args.dsn) as conn:
        conn.execute(sql.CANCEL, {"job_id": args.id})
        row = conn.execute(sql.JOB, {"job_id": args.id}).fetchone()
    state = row[JOB_COLUMNS.index("state")] if row else "cancelled"
    if state == "running":
        print(f"job {args.id} is running: its worker was asked to stop")
    else:
        print(f"cancelled job {args.id}")
    return 0


def cmd_pause(args: argparse.Namespace, connect: Connect, error: type[Exception]) -> int:
    with connect(args.dsn) as conn:
        conn.execute(sql.PAUSE if args.command == "pause" else sql.RESUME, {"queue": args.queue})
    print(f"{'paused' if args.command == 'pause' else 'resumed'} queue {args.queue}")
    return 0


def add_commands(sub: Any, connect: Connect, error: type[Exception]) -> None:
    """The parsers of these commands, under ``andal``'s subcommands."""
    s = sub.add_parser("job", help="what andal knows of one job")
    s.add_argument("id", metavar="ID", type=int, help="the job's id")
    s.add_argument("--json", action="store_true", help="one JSON object, every field in full")
    s.set_defaults(func=partial(cmd_job, connect=connect, error=error))
    s = sub.add_parser("cancel", help="cancel a pending job, or ask a running one to stop")
    s.add_argument("id", metavar="ID", type=int, help="the job's id")
    s.set_defaults(func=partial(cmd_cancel, connect=connect, error=error))
    s = sub.add_parser("pause", help="stop claiming a queue's jobs (running ones finish)")
    s.add_argument("queue", metavar="QUEUE", help="the queue's name")
    s.set_defaults(func=partial(cmd_pause, connect=connect, error=error))
    s = sub.add_parser("resume", help="claim a paused queue's jobs again")
    s.add_argument("queue", metavar="QUEUE", help="the queue's name")
    s.set_defaults(func=partial(cmd_pause, connect=connect, error=error))
