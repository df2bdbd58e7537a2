"""Thin helpers for workflows (docs/workflows.md): jobs that wait for other jobs.

The rules are the database's (``queue.enqueue`` and ``queue.enqueue_many`` with ``after``);
these only spell the common shapes:

* ``chain(producer, [(payload, queue), ...])``: each job after the one before it;
* ``group(producer, payloads, queue, after=...)``: many jobs of one queue at once, all after
  the same parents (a fan-out); a job enqueued ``after=group(...)`` is a fan-in (a chord).

``producer`` is a ``psycopg.Connection`` (the jobs join its transaction) or a ``Client`` (a
short connection to the database of the first queue; a workflow lives in one database). A
chain is enqueued in one transaction: all of it or nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg

from .client import Client, enqueue, enqueue_many

Producer = psycopg.Connection | Client


@contextmanager
def _connection(producer: Producer, queue: str) -> Iterator[psycopg.Connection]:
    if isinstance(producer, Client):
        with psycopg.connect(producer.dsn_for(queue), autocommit=True) as own:
            yield own
    else:
        yield producer


def chain(
    producer: Producer, steps: Sequence[tuple[Any, str]], *,
    after: Sequence[int] | None = None, **options: Any,
) -> list[int]:  # fmt: skip
    """Enqueue ``steps`` (``(payload, queue)`` pairs), each job after the one before it (the
    first after ``after``, when given), in one transaction; returns their ids in order.
    ``options`` go to every ``enqueue`` (``on_parent_failure``, ``priority``, ...)."""
    if not steps:
        return []
    ids: list[int] = []
    with _connection(producer, steps[0][1]) as conn, conn.transaction():
        previous = None if after is None else list(after)
        for payload, queue in steps:
            job_id = enqueue(conn, payload, queue, after=previous, **options)
            assert job_id is not None  # a job with after is always inserted (no dedup key)
            ids.append(job_id)
            previous = [job_id]
    return ids


def group(
    producer: Producer, payloads: Sequence[Any], queue: str = "default", *,
    after: Sequence[int] | None = None, **options: Any,
) -> list[int]:  # fmt: skip
    """Enqueue ``payloads`` as jobs of ``queue`` in one statement, all after ``after`` when
    given; returns their ids in input order (``enqueue_many``)."""
    with _connection(producer, queue) as conn:
        got = enqueue_many(conn, payloads, queue, after=after, **options)
    return [job_id for job_id in got if job_id is not None]
